"""The optional extras: `ntk` and `saas` pin JAX to disjoint versions (documented conflict)."""

import tomllib
from importlib.metadata import requires
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def extra_requirements(extra: str) -> list[Requirement]:
    data = tomllib.loads(PYPROJECT.read_text())
    return [Requirement(r) for r in data["project"]["optional-dependencies"][extra]]


def botorch_fully_bayesian_jax() -> Requirement:
    for text in requires("botorch") or []:
        req = Requirement(text)
        if req.name == "jax" and req.marker and "fully" in str(req.marker):
            return req
    raise AssertionError("botorch declares no jax requirement for its fully-bayesian extra")


def test_ntk_and_saas_extras_cannot_share_an_environment():
    ntk_jax = next(r for r in extra_requirements("ntk") if r.name == "jax")
    pinned = next(iter(ntk_jax.specifier)).version
    saas_jax = botorch_fully_bayesian_jax()
    assert pinned == "0.4.30"
    assert not saas_jax.specifier.contains(pinned), (
        "the saas extra now admits the ntk pin: the extras can be installed together, "
        "update the README and pyproject comments"
    )
    assert any(
        r.name == "botorch" and "fully-bayesian" in r.extras for r in extra_requirements("saas")
    )
