"""Options common to every problem: ``target`` and ``noise_std``."""

from __future__ import annotations

import pytest
import torch

from dsbo.errors import ConfigError
from dsbo.problems import get_problem


def test_target_center_zero_and_explicit() -> None:
    assert torch.equal(get_problem("branin").default_point, torch.tensor([2.5, 7.5]).double())
    assert torch.equal(
        get_problem("branin", target="zero").default_point, torch.tensor([-5.0, 0.0]).double()
    )
    explicit = get_problem("branin", target=[1.0, 2.0]).default_point
    assert explicit.dtype == torch.double and explicit.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    ("target", "match"),
    [
        ([1.0, 2.0, 3.0], "target has 3 entries, the problem has 2 dimensions"),
        ([1.0], "target has 1 entries"),
        ([20.0, 1.0], r"target\[0\] = 20 is outside the bounds \[-5, 10\]"),
        ([1.0, float("nan")], r"target\[1\] = nan"),
        ("middle", r"target='middle' is not valid; use one of \['center', 'zero'\]"),
        ({"a": 1}, "is not valid"),
    ],
)
def test_bad_target_raises_config_error(target, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        get_problem("branin", target=target)


@pytest.mark.parametrize("noise_std", [-0.1, float("inf"), "0.1", True])
def test_bad_noise_std_raises_config_error(noise_std) -> None:
    with pytest.raises(ConfigError, match="noise_std="):
        get_problem("branin", noise_std=noise_std)


@pytest.mark.parametrize("name", ["hartmann6", "ackley-3d", "branin-currin", "pressure-vessel"])
def test_noise_only_when_asked(name: str) -> None:
    problem = get_problem(name, noise_std=0.5)
    assert problem.noise_std == 0.5
    X = problem.default_point.expand(2000, -1)
    torch.manual_seed(0)
    noisy = problem.evaluate(X)
    clean = problem.evaluate(X, noise=False)
    assert torch.equal(clean, problem.evaluate_true(X))
    m = problem.num_objectives
    residual = noisy[:, :m] - clean[:, :m]
    assert residual.std().item() == pytest.approx(0.5, rel=0.1)
    assert torch.equal(noisy[:, m:], clean[:, m:])  # constraint slacks stay noiseless


def test_no_noise_by_default() -> None:
    problem = get_problem("branin")
    assert problem.noise_std is None
    X = problem.default_point.expand(5, -1)
    assert torch.equal(problem.evaluate(X), problem.evaluate(X, noise=False))
