"""The problem registry: names, dimension patterns, option checks and their errors."""

from __future__ import annotations

import pytest
from botorch.test_functions.synthetic import Branin

from dsbo.errors import ConfigError
from dsbo.problems import Problem, available_problems, get_problem, register_problem, registry
from dsbo.problems.options import from_test_problem


def test_available_problems_lists_every_family_with_a_description() -> None:
    problems = available_problems()
    for name in [
        "branin",
        "hartmann6",
        "ackley",
        "ackley-{D}d",
        "levy",
        "rastrigin",
        "griewank",
        "schwefel",
        "branin-currin",
        "dtlz2",
        "pressure-vessel",
        "branin-{D}d",
        "hartmann6-{D}d",
        "dtlz2-{D}d",
        "pressure-vessel-{D}d",
        "branin-currin-{D}d",
        "sourcing",
    ]:
        assert name in problems
        assert problems[name]


@pytest.mark.parametrize(
    ("name", "dim"),
    [
        ("branin-15d", 15),
        ("branin-50d", 50),
        ("hartmann6-15d", 15),
        ("hartmann6-50d", 50),
        ("ackley-5d", 5),
        ("branin-currin-3d", 3),
    ],
)
def test_dimension_suffix(name: str, dim: int) -> None:
    problem = get_problem(name)
    assert isinstance(problem, Problem)
    assert problem.name == name and problem.dim == dim


def test_names_are_case_insensitive() -> None:
    assert get_problem(" Branin-15D ").name == "branin-15d"


@pytest.mark.parametrize("name", ["brannin", "branin-d", "foo-50d", "ackley-5", "branin-{D}d"])
def test_unknown_name_is_named_and_choices_listed(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_problem(name)
    message = str(info.value)
    assert repr(name.strip().lower()) in message
    assert "branin" in message and "hartmann6-{D}d" in message


def test_non_string_name() -> None:
    with pytest.raises(ConfigError, match="must be a string"):
        get_problem(3)


def test_unknown_option_is_named_and_options_listed() -> None:
    with pytest.raises(
        ConfigError, match=r"no option\(s\) \['noise'\]; its options are: noise_std, target"
    ):
        get_problem("branin", noise=0.1)
    with pytest.raises(ConfigError, match=r"\['embedding_seed'\]"):
        get_problem("hartmann6", embedding_seed=1)
    with pytest.raises(ConfigError, match=r"'branin-\{D\}d' has no option\(s\) \['dim'\]"):
        get_problem("branin-50d", dim=20)  # the dimension comes from the name


def test_register_a_new_problem_and_refuse_a_clash() -> None:
    def make(noise_std=None, target="center"):
        """Branin under another name."""
        return from_test_problem("test-branin", Branin(negate=True), target=target)

    try:
        register_problem("test-branin")(make)
        assert available_problems()["test-branin"] == "Branin under another name."
        assert get_problem("test-branin").dim == 2
        with pytest.raises(ConfigError, match="already registered"):
            register_problem("test-branin")(lambda: None)
    finally:
        registry.PROBLEMS.unregister("test-branin")


def test_dimension_pattern_must_end_the_name() -> None:
    with pytest.raises(ConfigError, match="may only end a name"):
        register_problem("{D}d-branin")
