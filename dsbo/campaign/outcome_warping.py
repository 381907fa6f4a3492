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
"""

from __future__ import annotations

import torch
from torch import Tensor

#: Warpings a campaign accepts (``None``: fit the raw values).
WARPINGS = ("copula",)


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
        counts = torch.zeros(values.numel(), dtype=torch.double).index_add_(0, inverse, torch.ones(n, dtype=torch.double))
        ranks = (sums / counts)[inverse]
    u = (ranks - 0.5) / n
    return (torch.special.ndtri(u)).to(y.dtype)


def warp_outcomes(Y: Tensor, num_objectives: int, warping: str | None) -> Tensor:
    """``Y`` (``n x (m + c)``) with the objective columns warped (single objective only)."""
    if warping is None or num_objectives != 1 or Y.shape[0] < 2:
        return Y
    Y = Y.clone()
    Y[:, 0] = copula_scores(Y[:, 0])
    return Y


__all__ = ["WARPINGS", "copula_scores", "warp_outcomes"]
