"""Classic single-objective problems: optima, negation, dimensions, bounds."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.synthetic import Ackley, Branin, Hartmann
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError, ProblemError
from dsbo.problems import get_problem
from dsbo.problems.classic import Schwefel

SCALABLE = ["ackley", "levy", "rastrigin", "griewank", "schwefel"]
CLASSIC = ["branin", "hartmann6", *SCALABLE]


def test_branin_at_its_three_minimizers() -> None:
    problem = get_problem("branin")
    X = torch.tensor([[-torch.pi, 12.275], [torch.pi, 2.275], [9.42478, 2.475]], dtype=torch.double)
    Y = problem.evaluate_true(X)
    assert Y.shape == (3, 1)
    assert problem.optimal_value == pytest.approx(-0.397887)
    assert torch.allclose(Y, torch.full_like(Y, problem.optimal_value), atol=1e-4)


def test_hartmann6_at_its_minimizer() -> None:
    problem = get_problem("hartmann6")
    x = torch.tensor(
        [[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]], dtype=torch.double
    )
    assert problem.optimal_value == pytest.approx(3.32237)
    assert problem.evaluate_true(x).item() == pytest.approx(problem.optimal_value, abs=1e-4)


@pytest.mark.parametrize("name", SCALABLE)
@pytest.mark.parametrize("dim", [1, 2, 7])
def test_scalable_functions_at_their_minimizer(name: str, dim: int) -> None:
    problem = get_problem(f"{name}-{dim}d")
    assert problem.dim == dim and problem.name == f"{name}-{dim}d"
    assert problem.optimal_value == 0.0
    x = problem.test_problem.optimizers  # 1 x d
    tol = 1e-4 * dim if name == "schwefel" else 1e-10  # Schwefel's constant is rounded
    assert problem.evaluate_true(x).item() == pytest.approx(0.0, abs=tol)


def test_ackley_at_zero_and_default_dimension_from_botorch() -> None:
    problem = get_problem("ackley")
    assert problem.dim == Ackley().dim
    assert problem.name == "ackley"
    assert problem.evaluate_true(torch.zeros(1, problem.dim)).item() == pytest.approx(0, abs=1e-12)
    assert get_problem("ackley", dim=4).name == "ackley-4d"


def test_schwefel_formula() -> None:
    x = torch.tensor([[100.0, -250.0, 3.0]], dtype=torch.double)
    expected = 418.9829 * 3 - sum(v * torch.sin(v.abs().sqrt()) for v in x[0])
    assert Schwefel(dim=3)(x).item() == pytest.approx(expected.item(), rel=1e-12)
    assert Schwefel(dim=3, negate=True)(x).item() == pytest.approx(-expected.item(), rel=1e-12)
    assert torch.equal(Schwefel(dim=3).bounds, torch.tensor([[-500.0] * 3, [500.0] * 3]).double())


@pytest.mark.parametrize(
    ("name", "botorch_problem"),
    [("branin", Branin()), ("hartmann6", Hartmann(dim=6)), ("ackley-3d", Ackley(dim=3))],
)
def test_negated_exactly_once(name: str, botorch_problem) -> None:
    problem = get_problem(name)
    X = problem.bounds[0] + (problem.bounds[1] - problem.bounds[0]) * torch.rand(
        5, problem.dim, generator=torch.Generator().manual_seed(0), dtype=torch.double
    )
    assert torch.allclose(problem.evaluate(X)[:, 0], -botorch_problem(X))


@pytest.mark.parametrize("name", CLASSIC)
def test_metadata(name: str) -> None:
    problem = get_problem(name)
    assert problem.bounds.dtype == torch.double
    assert problem.relevant_dims == tuple(range(problem.dim))
    assert torch.equal(problem.default_point, problem.bounds.mean(dim=0))
    assert problem.num_objectives == 1 and problem.num_constraints == 0
    assert problem.description


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(CLASSIC), u=st.lists(st.floats(0, 1), min_size=6, max_size=6))
def test_no_point_beats_the_optimum(name: str, u: list[float]) -> None:
    problem = get_problem(name)
    lb, ub = problem.bounds
    x = lb + (ub - lb) * torch.tensor(u[: problem.dim], dtype=torch.double)
    assert problem.evaluate_true(x.unsqueeze(0)).item() <= problem.optimal_value + 1e-4


def test_points_a_rounding_error_past_a_bound_evaluate_at_the_bound() -> None:
    problem = get_problem("branin")
    ub = problem.bounds[1].unsqueeze(0)
    assert torch.equal(problem.evaluate_true(ub + 1e-12), problem.evaluate_true(ub))


def test_out_of_bounds_or_wrong_dimension_raise_problem_error() -> None:
    problem = get_problem("branin")
    with pytest.raises(ProblemError, match=r"outside the bounds \[-5, 10\] of dimension 0"):
        problem.evaluate(torch.tensor([[11.0, 1.0]], dtype=torch.double))
    with pytest.raises(ProblemError, match="n x 2"):
        problem.evaluate(torch.zeros(1, 3, dtype=torch.double))


def test_bad_dimension_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="ackley-0d'.*between 1 and 10000, got 0"):
        get_problem("ackley-0d")
    with pytest.raises(ConfigError, match="between 1 and 10000, got 99999999999"):
        get_problem("branin-99999999999d")
    with pytest.raises(ConfigError, match="dim='5'"):
        get_problem("ackley", dim="5")
