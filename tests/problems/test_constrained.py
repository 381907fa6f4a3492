"""The constrained pressure-vessel problem."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.synthetic import PressureVessel

from dsbo.errors import ConfigError
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
    """With ``cost-only`` rounding the outcomes are BoTorch's; the default rounds the
    thicknesses in the slacks too (BoTorch's slacks at the rounded point)."""
    problem = get_problem("pressure-vessel", thickness_rounding="cost-only")
    lb, ub = problem.bounds
    X = lb + (ub - lb) * torch.rand(
        20, 4, generator=torch.Generator().manual_seed(0), dtype=torch.double
    )
    f = PressureVessel()
    Y = problem.evaluate_true(X)
    assert torch.allclose(Y[:, 0], -f(X, noise=False))
    assert torch.allclose(Y[:, 1:], f.evaluate_slack(X, noise=False))
    assert torch.equal(problem.is_feasible(Y), f.is_feasible(X, noise=False))
    consistent = get_problem("pressure-vessel").evaluate_true(X)
    rounded = X.clone()
    rounded[:, :2] = (rounded[:, :2] / 0.0625).round() * 0.0625
    assert torch.allclose(consistent[:, 0], Y[:, 0])
    assert torch.allclose(consistent[:, 1:], f.evaluate_slack(rounded, noise=False))


def test_names_and_metadata() -> None:
    problem = get_problem("pressure-vessel")
    assert problem.objective_names == ("cost",)
    assert problem.constraint_names == ("shell_thickness", "head_thickness", "volume", "length")
    assert problem.outcome_names == ("cost", *problem.constraint_names)
    assert problem.metadata["worst_feasible_value"] == pytest.approx(-240526.7248)


def test_thicknesses_are_rounded_in_the_constraints_as_in_the_cost():
    """BoTorch rounds T_s, T_h only in the cost: (0.78, 0.39, 40.4, 199) passed as feasible
    at cost 5646 < the literature optimum. dsbo rounds both (thickness_rounding: consistent)."""
    X = torch.tensor([[0.78, 0.39, 40.4, 199.0]], dtype=torch.double)
    consistent = get_problem("pressure-vessel")
    botorch_like = get_problem("pressure-vessel", thickness_rounding="cost-only")
    assert not consistent.is_feasible(consistent.evaluate(X)).any()
    assert botorch_like.is_feasible(botorch_like.evaluate(X)).all()
    best = torch.tensor([[0.8125, 0.4375, 42.0984, 176.6372]], dtype=torch.double)
    Y = consistent.evaluate(best)
    assert consistent.is_feasible(Y).all() and -Y[0, 0] == pytest.approx(6059.7, abs=0.1)
    # no feasible design of 20000 Sobol points (plus their roundings) beats the literature cost
    from botorch.utils.sampling import draw_sobol_samples

    Z = draw_sobol_samples(consistent.bounds, n=20000, q=1, seed=0).squeeze(1)
    Y = consistent.evaluate(Z)
    feasible = consistent.is_feasible(Y)
    assert feasible.any() and (-Y[feasible, 0]).min() > 6059.7
    with pytest.raises(ConfigError, match="thickness_rounding"):
        get_problem("pressure-vessel", thickness_rounding="floor")
