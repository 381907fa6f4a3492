"""cost-branin (Paria thesis sec. 4.6) and Problem.cost_function."""

from __future__ import annotations

import math

import pytest
import torch

from dsbo.errors import CostError
from dsbo.problems import get_problem
from dsbo.problems.scalarization import branin


def test_cost_branin_value_cost_and_optimum():
    problem = get_problem("cost-branin")
    X = torch.tensor([[0.0, 5.0, 0.0], [-math.pi, 12.275, math.log(100)], [2.0, 3.0, 1.5]])
    Y = problem.evaluate_true(X)[:, 0]
    assert torch.allclose(Y, -(branin(X[:, 0], X[:, 1]) - X[:, 2]))  # maximize -B
    assert torch.allclose(problem.evaluation_cost(X), torch.exp(X[:, 2]))
    assert problem.optimal_value == pytest.approx(math.log(100) - 0.397887, abs=1e-5)
    assert float(Y[1]) == pytest.approx(problem.optimal_value, abs=1e-5)  # reached only at cost 100
    assert problem.design_cost == 1.0


def test_bad_costs_are_named():
    problem = get_problem("cost-branin")
    X = torch.zeros(3, 3)
    for bad, match in (
        (lambda X: torch.tensor([1.0, 0.0, 2.0]), "returned 0.0 for row 1"),
        (lambda X: torch.tensor([1.0, 1.0, float("nan")]), "nan"),
        (lambda X: torch.ones(2), "one cost per row"),
        (lambda X: 1 / 0, "ZeroDivisionError"),
    ):
        problem.cost_function = bad
        with pytest.raises(CostError, match=match):
            problem.evaluation_cost(X)
