"""The constrained pressure-vessel problem."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.synthetic import PressureVessel

from dsbo.problems import get_problem


def test_best_known_design_is_feasible_and_near_the_optimal_value() -> None:
    problem = get_problem("pressure-vessel")
    assert problem.optimal_value == pytest.approx(-6059.946341)
    # The best design known in the literature (R, L rounded to stay feasible): cost 6059.72,
    # slightly below the value BoTorch quotes from Coello Coello (2002).
    x = torch.tensor([[0.8125, 0.4375, 42.0984, 176.6372]], dtype=torch.double)
    Y = problem.evaluate_true(x)
    assert Y.shape == (1, 5)
    assert problem.is_feasible(Y).item()
    assert Y[0, 0].item() == pytest.approx(problem.optimal_value, abs=0.5)


def test_objective_negated_once_and_slacks_as_botorch() -> None:
    problem = get_problem("pressure-vessel")
    lb, ub = problem.bounds
    X = lb + (ub - lb) * torch.rand(20, 4, generator=torch.Generator().manual_seed(0), dtype=torch.double)
    f = PressureVessel()
    Y = problem.evaluate_true(X)
    assert torch.allclose(Y[:, 0], -f(X, noise=False))
    assert torch.allclose(Y[:, 1:], f.evaluate_slack(X, noise=False))
    assert torch.equal(problem.is_feasible(Y), f.is_feasible(X, noise=False))


def test_names_and_metadata() -> None:
    problem = get_problem("pressure-vessel")
    assert problem.objective_names == ("cost",)
    assert problem.constraint_names == ("shell_thickness", "head_thickness", "volume", "length")
    assert problem.outcome_names == ("cost", *problem.constraint_names)
    assert problem.metadata["worst_feasible_value"] == pytest.approx(-240526.7248)
