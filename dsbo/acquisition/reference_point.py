r"""The hypervolume reference point of objectives without thresholds: inferred from the observed
front, and never moved outward.

BoTorch's ``infer_reference_point`` puts the reference point below the nadir of the observed
Pareto front by 10% of the front's range (maximization). Recomputed at every proposal, it
*drifts outward*: on DTLZ2 (``experiments/multi_objective_api.py``, 2 objectives, 6
parameters) the proposals that extend the front's ends (``f1 > 1.5, f2 = 0`` in minimization)
widen its range and push the point from (1.19-1.68, 1.31-1.47) after the 12 Sobol points to
(1.66-2.2, 1.85-1.96) by evaluation 20, so qLogNEHVI keeps rewarding those ends, which add
nothing to the hypervolume a user measures with a point near the front, and three of ten seeds
stalled at a third of the others' hypervolume.

The rule here: the reference point after ``n`` observations is the coordinate-wise *best*
(largest, in maximization) of the inferred points of the prefixes ``Y[:t]``,
``n_design <= t <= n`` (every prefix, or ``MAX_PREFIXES`` of them evenly spaced):

.. math::

    r_n = \max_{n_0 \le t \le n} \operatorname{infer}(\mathcal P(Y_{1:t})),

a point that starts at the initial design's inferred reference point and afterwards only moves
inward, toward the front, as the front improves; a proposal that widens the front's range
cannot move it out again. Objectives with thresholds keep them (``ref_point`` entries that
are not NaN).

References:
    S. Daulton, M. Balandat and E. Bakshy. Differentiable expected hypervolume improvement for
    parallel multi-objective Bayesian optimization. NeurIPS 2020 (the reference point and its
    inference in BoTorch).
"""

from __future__ import annotations

import torch
from botorch.utils.multi_objective.hypervolume import infer_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

#: Prefixes whose inferred points are compared (evenly spaced above this many observations).
MAX_PREFIXES = 64


def inferred_point(Y: Tensor) -> Tensor:
    """BoTorch's inferred reference point of the Pareto front of ``Y`` (``n x m``, maximized)."""
    return infer_reference_point(Y[is_non_dominated(Y)]).to(torch.double)


def stable_reference_point(Y: Tensor, feasible: Tensor, n_design: int) -> Tensor:
    """The reference point of the module doc for the observations ``Y`` (``n x m``, maximized,
    in the order they were made) and their feasibility mask: each prefix uses its feasible
    rows, or all of its rows while none is feasible."""
    n = Y.shape[0]
    first = min(max(n_design, 1), n)
    lengths = range(first, n + 1)
    if len(lengths) > MAX_PREFIXES:
        grid = torch.linspace(first, n, MAX_PREFIXES).round().long().unique()
        lengths = [int(t) for t in grid]
    points = []
    for t in lengths:
        rows = Y[:t][feasible[:t]] if bool(feasible[:t].any()) else Y[:t]
        points.append(inferred_point(rows))
    return torch.stack(points).max(dim=0).values


__all__ = ["MAX_PREFIXES", "inferred_point", "stable_reference_point"]
