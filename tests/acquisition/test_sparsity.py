"""Sparsity measures: exact L0 with tolerance, smooth L0 (SEBO), L1, group lasso."""

from __future__ import annotations

import doctest

import pytest
import torch
from botorch.acquisition.penalized import L0Approximation
from botorch.optim.homotopy import Homotopy, HomotopyParameter, LogLinearHomotopySchedule

import dsbo.acquisition.sparsity as sparsity
from dsbo.acquisition.sparsity import (
    SparsityMeasure,
    group_lasso_distance,
    l1_distance,
    num_changed,
    smooth_l0,
)
from dsbo.errors import ConfigError

BOUNDS = torch.tensor([[0.0, -1.0, 0.0, 10.0], [1.0, 1.0, 10.0, 20.0]])
TARGET = torch.tensor([0.0, 0.0, 5.0, 10.0])


def random_points(n: int = 50, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    U = torch.rand(n, 4, generator=g)
    # Put some coordinates exactly on the target, some very near it.
    U[: n // 2, 1] = 0.5
    U[n // 4 : n // 2, 2] = 0.5 + 1e-5
    return BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * U


def test_smooth_l0_is_the_paper_and_botorch_form_in_unit_cube_coordinates():
    X = random_points()
    a = 0.2
    Z = (X - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])
    Zs = (TARGET - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])
    expected = (1 - torch.exp(-((Z - Zs) ** 2) / (2 * a**2))).sum(-1)
    torch.testing.assert_close(smooth_l0(X, TARGET, BOUNDS, a), expected)
    botorch_form = L0Approximation(target_point=Zs, a=a)(Z).squeeze(-1)
    torch.testing.assert_close(smooth_l0(X, TARGET, BOUNDS, a), botorch_form)


def test_smooth_l0_tends_to_the_exact_count():
    X = random_points()
    # Exact count at a tolerance far below the coordinates' distances (1e-5 counts as changed).
    exact = num_changed(X, TARGET, BOUNDS, tol=1e-7).to(X)
    gaps = [(smooth_l0(X, TARGET, BOUNDS, a) - exact).abs().max() for a in (1e-1, 1e-2, 1e-4, 1e-7)]
    assert all(g2 <= g1 for g1, g2 in zip(gaps, gaps[1:], strict=False))
    assert gaps[-1] < 1e-6
    assert (smooth_l0(X, TARGET, BOUNDS, 0.3) <= exact + 1e-12).all()  # a lower bound


def test_l1_and_group_lasso_in_unit_cube_coordinates():
    X = torch.tensor([[0.5, 1.0, 5.0, 15.0]])
    # unit-cube differences from the target: 0.5, 0.5, 0, 0.5
    assert l1_distance(X, TARGET, BOUNDS).item() == pytest.approx(1.5)
    groups = [[0, 1], [2, 3]]
    expected = 2**0.5 * (0.5**2 + 0.5**2) ** 0.5 + 2**0.5 * 0.5
    assert group_lasso_distance(X, TARGET, BOUNDS, groups).item() == pytest.approx(expected)
    measure = SparsityMeasure(TARGET, BOUNDS, penalty="group", groups=groups)
    assert measure(X.unsqueeze(0)).shape == (1, 1)


def test_measure_exact_switch_and_homotopy_drive_a():
    X = random_points().unsqueeze(-2)  # n x 1 x d
    measure = SparsityMeasure(TARGET, BOUNDS, penalty="l0", a=0.3)
    schedule = LogLinearHomotopySchedule(start=0.3, end=1e-3, num_steps=5)
    homotopy = Homotopy([HomotopyParameter(parameter=measure.a, schedule=schedule)])
    values = []
    while not homotopy.should_stop:
        values.append(float(measure.a))
        torch.testing.assert_close(measure(X), smooth_l0(X, TARGET, BOUNDS, float(measure.a)))
        homotopy.step()
    assert values[0] == pytest.approx(0.3) and values[-1] == pytest.approx(1e-3)
    measure.exact = True
    torch.testing.assert_close(measure(X), num_changed(X, TARGET, BOUNDS).to(X))
    torch.testing.assert_close(measure.exact_value(X), num_changed(X, TARGET, BOUNDS).to(X))


def test_measure_is_differentiable():
    X = random_points(5).requires_grad_(True)
    SparsityMeasure(TARGET, BOUNDS, penalty="l0", a=0.3)(X).sum().backward()
    assert torch.isfinite(X.grad).all() and X.grad.abs().sum() > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"penalty": "l2"}, "penalty"),
        ({"penalty": "group"}, "groups"),
        ({"penalty": "group", "groups": [[0, 4]]}, "index 4"),
        ({"penalty": "group", "groups": [[0, 1], [1]]}, "more than one group"),
        ({"penalty": "l0", "groups": [[0]]}, "only used"),
    ],
)
def test_measure_errors_name_the_option(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SparsityMeasure(TARGET, BOUNDS, **kwargs)


def test_docstring_examples():
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(sparsity, globs={**vars(sparsity), "torch": torch}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
