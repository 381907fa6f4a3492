"""Multi-objective problems: negation, reference points, Pareto front."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.multi_objective import DTLZ2, BraninCurrin
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.problems import get_problem


def test_reference_points_are_in_the_maximization_sense() -> None:
    bc = get_problem("branin-currin")
    assert bc.ref_point.tolist() == [-18.0, -6.0]  # BoTorch negated [18, 6] once
    assert BraninCurrin(negate=False).ref_point.tolist() == [18.0, 6.0]
    assert get_problem("dtlz2").ref_point.tolist() == pytest.approx([-1.1, -1.1])
    assert bc.metadata["max_hv"] == pytest.approx(59.36011874867746)


@pytest.mark.parametrize(
    ("name", "botorch_problem"),
    [("branin-currin", BraninCurrin()), ("dtlz2", DTLZ2(dim=6, num_objectives=2))],
)
def test_objectives_are_negated_once(name: str, botorch_problem) -> None:
    problem = get_problem(name)
    X = torch.rand(5, problem.dim, generator=torch.Generator().manual_seed(0), dtype=torch.double)
    Y = problem.evaluate(X)
    assert Y.shape == (5, 2) and problem.num_objectives == 2
    assert torch.allclose(Y, -botorch_problem(X))
    assert problem.optimal_value is None


def test_names() -> None:
    assert get_problem("branin-currin").objective_names == ("branin", "currin")
    assert get_problem("dtlz2").objective_names == ("f1", "f2")
    assert get_problem("dtlz2").dim == 6


@settings(max_examples=30, deadline=None)
@given(u=st.lists(st.floats(0, 1), min_size=6, max_size=6), x0=st.floats(0, 1))
def test_dtlz2_lies_outside_the_unit_sphere_and_on_it_when_pareto_optimal(
    u: list[float], x0: float
) -> None:
    problem = get_problem("dtlz2")
    Y = problem.evaluate_true(torch.tensor([u], dtype=torch.double))
    assert Y.norm().item() >= 1 - 1e-12
    pareto = torch.tensor([[x0] + [0.5] * 5], dtype=torch.double)
    assert problem.evaluate_true(pareto).norm().item() == pytest.approx(1.0)
