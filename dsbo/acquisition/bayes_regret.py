r"""The Bayes regret of a set of observed objectives under a weight prior.

Paria, Kandasamy & Poczos, *A flexible framework for multi-objective Bayesian optimization
using random scalarizations* (UAI 2019; Paria thesis ch. 2, eq. 2.3) measure a
multi-objective campaign by its Bayes regret

.. math::

    R_B(X) = E_\lambda\Big[\max_{x} s_\lambda(f(x)) - \max_{x \in X} s_\lambda(f(x))\Big],

the expected loss, over the weight prior :math:`p(\lambda)`
(:mod:`dsbo.acquisition.weight_priors`), of the best point found for a random scalarization
(:mod:`dsbo.acquisition.scalarizations`). :func:`bayes_regret` estimates it by Monte Carlo over
the same prior, with the true maximum taken over a sample of the Pareto front;
:func:`~dsbo.acquisition.scalarized.campaign_bayes_regret` applies it to a campaign.
"""

from __future__ import annotations

import torch
from torch import Tensor

from dsbo.acquisition.scalarizations import ObjectiveScale, Scalarization
from dsbo.acquisition.weight_priors import WeightPrior


def bayes_utility(
    Y: Tensor, weights: Tensor, scalarization: Scalarization, scale: ObjectiveScale
) -> Tensor:
    r""":math:`\max_{y \in Y} s_\lambda(\mathrm{norm}(y))` for each row of ``weights``."""
    return scalarization(scale(Y).unsqueeze(0), weights.unsqueeze(1)).max(-1).values


def bayes_regret(
    Y: Tensor,
    prior: WeightPrior,
    scalarization: Scalarization,
    scale: ObjectiveScale,
    front: Tensor | None = None,
    num_weights: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    r"""Monte Carlo estimate of the Bayes regret (thesis eq. 2.3) of the observed objectives ``Y``.

    Returns ``utility`` :math:`= E_\lambda \max_{y \in Y} s_\lambda(y)` (what the thesis
    plots, negated) and, when a sample of the true Pareto front ``front`` is given,
    ``regret`` :math:`= E_\lambda[\max_{y \in front \cup Y} s_\lambda(y) - \max_{y \in Y}
    s_\lambda(y)] \ge 0`. Objectives are normalized by ``scale``; the same ``num_weights``
    draws are used for every ``Y`` with the same seed.
    """
    generator = torch.Generator().manual_seed(seed)
    weights, _ = prior.sample(num_weights, scalarization, scale, generator)
    observed = bayes_utility(Y, weights, scalarization, scale)
    result = {"utility": float(observed.mean()), "num_weights": num_weights}
    if front is not None:
        best = bayes_utility(torch.cat([front, Y]), weights, scalarization, scale)
        result["regret"] = float((best - observed).mean())
    return result
