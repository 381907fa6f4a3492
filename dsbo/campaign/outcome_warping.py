r"""Outcome warping: the objective values a surrogate is fitted on, made robust to outliers.

Hyperparameter objectives are often heavy-tailed: most configurations of a classifier reach
an error between 2% and 4%, a few diverge to 90%. A GP fitted to the raw (standardized) values
spends its variance on the outliers and sees the good region as flat, and an
improvement-based acquisition then repeats near-identical points. The *Gaussian copula*
warping of Salinas, Shen and Perrone ("A quantile-based approach for hyperparameter transfer
learning", ICML 2020) fits the surrogate to normal scores of the ranks instead::

    psi(y_i) = Phi^{-1}((r_i - 1/2) / n)

with ``r_i`` the rank of ``y_i`` among the ``n`` completed values (ties share their mean rank)
and ``Phi`` the standard normal CDF (Hazen's plotting positions, so the scores stay finite).
``psi`` is monotone, so the best point, the order of all points and the argmax of the
posterior mean are those of the raw objective; the outliers are pulled in to about
``+- Phi^{-1}(1 - 1/(2n))``. Only objectives are warped: constraint slacks keep their sign
(feasible when ``>= 0``), and multi-objective problems are left alone (their reference point
and hypervolume live on the raw scale).

``"winsorize"`` keeps the values and clips only the bad tail, as a Tukey box plot marks
outliers (the rule Ax applies to an objective by default): in the maximization sense the
surrogate sees

    w(y_i) = max(y_i, Q_1 - 1.5 (Q_3 - Q_1))

with ``Q_1`` / ``Q_3`` the lower / upper quartiles of the completed values (the order
statistics at or below / at or above the 25th / 75th percentile). Every value at or above the
cutoff, and so the good region and its differences, is unchanged; ``w`` is monotone, so the
best point is the raw objective's.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: Warpings a campaign accepts (``None``: fit the raw values).
WARPINGS = ("copula", "winsorize")


def copula_scores(y: Tensor) -> Tensor:
    """``Phi^{-1}((rank - 1/2) / n)`` of each entry of the vector ``y`` (ties: mean ranks)."""
    n = y.numel()
    order = torch.argsort(y, stable=True)
    ranks = torch.empty(n, dtype=torch.double)
    ranks[order] = torch.arange(1, n + 1, dtype=torch.double)
    # ties share the mean of their ranks
    values, inverse = torch.unique(y, return_inverse=True)
    if values.numel() < n:
        sums = torch.zeros(values.numel(), dtype=torch.double).index_add_(0, inverse, ranks)
        counts = torch.zeros(values.numel(), dtype=torch.double).index_add_(
            0, inverse, torch.ones(n, dtype=torch.double)
        )
        ranks = (sums / counts)[inverse]
    u = (ranks - 0.5) / n
    return (torch.special.ndtri(u)).to(y.dtype)


def winsorized(y: Tensor) -> Tensor:
    """``max(y, Q_1 - 1.5 IQR)``: the low (bad, in the maximization sense) tail of the vector
    ``y`` clipped at the Tukey fence; ``Q_1`` the largest value at or below the 25th
    percentile, ``Q_3`` the smallest at or above the 75th."""
    values = y.sort().values
    n = values.numel()
    q1 = values[int(math.floor(0.25 * (n - 1)))]
    q3 = values[int(math.ceil(0.75 * (n - 1)))]
    return y.clamp_min(q1 - 1.5 * (q3 - q1))


def warp_outcomes(Y: Tensor, num_objectives: int, warping: str | None) -> Tensor:
    """``Y`` (``n x (m + c)``, maximization sense) with the objective column warped (single
    objective only): ``"copula"`` normal scores of the ranks, ``"winsorize"`` the Tukey clip."""
    if warping is None or num_objectives != 1 or Y.shape[0] < 2:
        return Y
    Y = Y.clone()
    Y[:, 0] = copula_scores(Y[:, 0]) if warping == "copula" else winsorized(Y[:, 0])
    return Y


__all__ = ["WARPINGS", "copula_scores", "warp_outcomes", "winsorized"]
