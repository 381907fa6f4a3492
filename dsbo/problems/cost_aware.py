r"""A problem whose evaluation cost varies over the domain (Paria thesis ch. 4, section 4.6).

``cost-branin`` simulates tuning a model whose validation error falls with training: two
hyperparameters :math:`(x_1, x_2)` and the log number of training iterations :math:`l`,

.. math::

    B(x_1, x_2, l) = b(x_1, x_2) - l, \qquad \lambda(x_1, x_2, l) = e^{l}, \qquad
    l \in [0, \log 100],

with :math:`b` Branin on :math:`[-5, 10] \times [0, 15]`. The thesis minimizes :math:`B`;
dsbo maximizes :math:`-B`, whose optimum is :math:`\log 100 - 0.397887 = 4.2073`, reached
only at the most expensive setting :math:`l = \log 100` (cost 100). The cheapest evaluation
costs 1 (``design_cost``, what a cost budget checks before each proposal).
"""

from __future__ import annotations

import math

import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from dsbo.problems.base import Problem
from dsbo.problems.options import check_noise_std, from_test_problem
from dsbo.problems.registry import register_problem
from dsbo.problems.scalarization import branin

BRANIN_MINIMUM = 0.397887357729738
MAX_LOG_ITERATIONS = math.log(100.0)


class CostBranin(SyntheticTestFunction):
    """``b(x1, x2) - l`` on ``[-5, 10] x [0, 15] x [0, log 100]`` (minimized)."""

    dim = 3
    continuous_inds = [0, 1, 2]
    _bounds = [(-5.0, 10.0), (0.0, 15.0), (0.0, MAX_LOG_ITERATIONS)]
    _optimal_value = BRANIN_MINIMUM - MAX_LOG_ITERATIONS
    _optimizers = [(-math.pi, 12.275, MAX_LOG_ITERATIONS)]

    def _evaluate_true(self, X: Tensor) -> Tensor:
        return branin(X[..., 0], X[..., 1]) - X[..., 2]


def training_cost(X: Tensor) -> Tensor:
    """``lambda(x) = exp(l)``: the cost of ``e^l`` training iterations (differentiable)."""
    return torch.exp(X[..., 2])


@register_problem("cost-branin")
def make_cost_branin(noise_std: float | None = None, target: str = "zero") -> Problem:
    r"""Branin minus log-iterations l, evaluation cost exp(l), l in [0, log 100] (Paria thesis sec. 4.6)."""
    f = CostBranin(noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double)
    return from_test_problem(
        "cost-branin",
        f,
        target=target,
        parameter_names=("x1", "x2", "log_iterations"),
        description=make_cost_branin.__doc__.strip().split("\n")[0],
        cost_function=training_cost,
        design_cost=1.0,
    )


__all__ = ["CostBranin", "make_cost_branin", "training_cost"]
