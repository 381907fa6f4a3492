r"""Default-aware pruning searches of BONSAI: reset coordinates of a candidate to a default.

BONSAI (Daulton et al., "BONSAI: Bayesian Optimization with Natural Simplicity and
Interpretability", section 5 and appendix B) takes the dense maximizer ``x*`` of an acquisition
function ``alpha`` and a default configuration ``x^def``, and resets coordinates of ``x*`` to
``x^def`` while the loss in acquisition value stays within a tolerance ``tau``::

    Delta(x)  = alpha(x*) - alpha(x)        the gap, always against the dense x*
    A(x*)     = {j : x*_j != x^def_j}       the active (changed) coordinates
    P_S(x*)   = x* with the coordinates outside S reset to x^def

*Exact* pruning (:func:`exact_prune`) returns ``P_S*(x*)`` with
``S* = argmin_{S subset of A(x*)} {|S| : Delta(P_S(x*)) <= tau}`` (ties: the smallest gap).
*Greedy* pruning (:func:`greedy_prune`, the paper's Algorithm 1) resets, one at a time, the
active coordinate whose reset has the smallest gap, while that gap is ``<= tau``; it needs at
most ``|A|(|A| + 1) / 2`` acquisition evaluations. Both satisfy the gap rule
``Delta(x) <= tau`` by construction.

A *unit* of pruning is a coordinate by default; with ``groups`` (a list of column lists, e.g.
the one-hot columns of a categorical parameter, :attr:`dsbo.space.SearchSpace.groups`) unit
``k`` is the group ``groups[k]``: it is active when any of its columns differs from the
default, and a reset sets all of them, so a categorical is changed or reset as a whole and
``|S|`` counts parameters.

The searches only see a score function ``X (b x d) -> b`` and optional masks (linear
feasibility, duplicates: :func:`duplicate_fn`); how ``tau`` and the scores come from an
acquisition function is :mod:`dsbo.acquisition.acquisition_values`, and the post-processor that
puts them together is :class:`dsbo.acquisition.bonsai.Bonsai`.

Example:
    >>> import torch
    >>> score = lambda X: X[:, :2].sum(-1) + 1e-3 * X[:, 2:].sum(-1)  # 2 relevant dims
    >>> x_star, default = torch.ones(5), torch.zeros(5)
    >>> x, info = greedy_prune(score, x_star, default, tau=0.1, active=range(5))
    >>> sorted(info.pruned), x.tolist()
    ([2, 3, 4], [1.0, 1.0, 0.0, 0.0, 0.0])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from botorch.models.model import Model
from torch import Tensor

from dsbo.acquisition.sparsity import DUPLICATE_TOLERANCE
from dsbo.acquisition.sparsity import is_duplicate as near_seen_point
from dsbo.surrogates.relevance import near_repeats, scaled_distance

#: ``score_fn(X: b x d) -> b`` acquisition values (already exponentiated for log acquisitions).
ScoreFn = Callable[[Tensor], Tensor]
#: ``mask_fn(X: b x d) -> b`` booleans (feasibility under linear constraints, or duplicates).
MaskFn = Callable[[Tensor], Tensor]

#: Points per acquisition call when many points are scored (evaluated points, exact subsets).
EVAL_BATCH = 256


@dataclass
class PruneInfo:
    """What a pruning search did.

    Attributes:
        pruned: Coordinates reset to the default (greedy: in the order they were reset;
            exact: ascending).
        gap: ``alpha(x*) - alpha(x)`` of the returned point (``0`` when nothing was pruned).
        evaluations: Acquisition values computed by the search.
        duplicate_fallback: Whether a duplicate made the search return a less pruned point.
        path_gaps: Greedy: the gap after each reset of the path (before any fallback).
    """

    pruned: list[int]
    gap: float
    evaluations: int
    duplicate_fallback: bool = False
    path_gaps: list[float] = field(default_factory=list)


def _gaps(
    score_fn: ScoreFn, candidates: Tensor, alpha_star: float, feasible_fn: MaskFn | None
) -> tuple[Tensor, int]:
    """Gaps ``alpha* - alpha(c)`` of the rows of ``candidates`` (``inf`` where infeasible under
    the linear constraints, which are not scored, or where the score is NaN)."""
    gap = torch.full((candidates.shape[0],), math.inf, dtype=candidates.dtype)
    ok = (
        torch.ones_like(gap, dtype=torch.bool)
        if feasible_fn is None
        else feasible_fn(candidates).reshape(-1)
    )
    if ok.any():
        gap[ok] = alpha_star - score_fn(candidates[ok]).reshape(-1).to(gap)
    return torch.nan_to_num(gap, nan=math.inf), int(ok.sum())


def unit_masks(d: int, groups: Sequence[Sequence[int]] | None = None) -> Tensor:
    """``units x d`` booleans: the columns of each pruning unit (a coordinate each, or the
    ``groups``)."""
    if groups is None:
        return torch.eye(d, dtype=torch.bool)
    masks = torch.zeros(len(groups), d, dtype=torch.bool)
    for k, columns in enumerate(groups):
        masks[k, list(columns)] = True
    return masks


def greedy_prune(
    score_fn: ScoreFn,
    x_star: Tensor,
    default: Tensor,
    tau: float,
    active: Iterable[int],
    *,
    alpha_star: float | None = None,
    feasible_fn: MaskFn | None = None,
    is_duplicate: MaskFn | None = None,
    prefix: bool = False,
    groups: Sequence[Sequence[int]] | None = None,
) -> tuple[Tensor, PruneInfo]:
    r"""Sequential greedy pruning of ``x_star`` toward ``default`` (BONSAI, Algorithm 1).

    With ``prefix`` (a speed-up, not in the paper) the first round's single-reset gaps also
    order the coordinates: every cumulative prefix of that order is scored in one more call,
    the longest prefix whose gap is ``<= tau`` is taken at once, and ordinary greedy rounds
    continue from there. For an additive acquisition (a reset costs the same whatever else was
    reset) this is exactly the greedy result; in general it is a different point that obeys
    the same gap rule, found with two calls instead of one per reset.

    Each round scores every single reset of the still-changed coordinates in one call
    (``|remaining| x d``) and takes the one with the smallest gap
    ``alpha* - alpha(x')`` if it is ``<= tau``; it stops when none fits. Gaps are always
    measured against ``alpha*``, the value of the original dense candidate. At most
    ``|A| (|A| + 1) / 2`` evaluations (plus one when ``alpha_star`` is not given).

    Args:
        score_fn: ``X (b x d) -> b`` acquisition values (exponentiated if log).
        x_star: The dense candidate, a ``d``-vector.
        default: The default point, a ``d``-vector.
        tau: Largest allowed gap (``rho * alpha~(x*)``).
        active: Coordinates that may be reset (changed, not fixed).
        alpha_star: ``alpha(x*)`` the gaps are measured against (computed if ``None``).
        feasible_fn: ``X -> b`` booleans; resets it rejects (linear constraints) are not
            scored and not taken.
        is_duplicate: ``X -> b`` booleans; if the final point is a duplicate, return the last
            non-duplicate point of the greedy path (else ``x_star``).
        groups: The pruning units' columns (module docstring); ``active`` and the returned
            ``pruned`` are then unit indices.

    Returns:
        The pruned point (a new tensor) and a :class:`PruneInfo`.

    Example:
        >>> score = lambda X: -((X[:, 0] - 0.25) ** 2)  # only x_0 matters
        >>> x_star = torch.tensor([0.25, 0.75])
        >>> x, info = greedy_prune(score, x_star, torch.zeros(2), tau=0.01, active=[0, 1])
        >>> info.pruned, x.tolist()
        ([1], [0.25, 0.0])
    """
    remaining = sorted({int(j) for j in active})
    masks = unit_masks(x_star.numel(), groups)
    default = default.to(x_star)
    evaluations = 0
    if alpha_star is None:
        alpha_star = float(score_fn(x_star.unsqueeze(0)).reshape(-1)[0])
        evaluations = 1
    x = x_star.clone()
    pruned: list[int] = []
    gaps: list[float] = []
    if prefix and len(remaining) > 1:
        idx = torch.tensor(remaining)
        singles = torch.where(masks[idx], default, x)
        single_gap, n = _gaps(score_fn, singles, alpha_star, feasible_fn)
        evaluations += n
        order = torch.argsort(single_gap, stable=True)
        order = order[torch.isfinite(single_gap[order])]
        if order.numel():
            reset = masks[idx[order]].cumsum(dim=0) > 0
            prefixes = torch.where(reset, default, x)
            prefix_gap, n = _gaps(score_fn, prefixes, alpha_star, feasible_fn)
            evaluations += n
            within = torch.nonzero(prefix_gap <= tau).reshape(-1)
            if within.numel():
                k = int(within[-1]) + 1
                x = prefixes[k - 1].clone()
                taken = idx[order[:k]].tolist()
                pruned += taken
                gaps += prefix_gap[:k].tolist()
                remaining = sorted(set(remaining) - set(taken))
    while remaining:
        idx = torch.tensor(remaining)
        candidates = torch.where(masks[idx], default, x)
        gap, n = _gaps(score_fn, candidates, alpha_star, feasible_fn)
        evaluations += n
        best = int(torch.argmin(gap))
        if not gap[best] <= tau:
            break
        x = candidates[best].clone()
        pruned.append(remaining.pop(best))
        gaps.append(float(gap[best]))
    info = PruneInfo(pruned, gaps[-1] if gaps else 0.0, evaluations, path_gaps=gaps)
    if is_duplicate is None or not pruned:
        return x, info
    steps = torch.cat([torch.zeros(1, x.numel(), dtype=torch.bool), masks[torch.tensor(pruned)]])
    path = torch.where(steps.cumsum(dim=0) > 0, default, x_star)
    duplicate = is_duplicate(path).reshape(-1)
    if not duplicate[-1]:
        return x, info
    # a prefix step can pass through points above tau: fall back only to points within it
    within = torch.tensor([True] + [g <= tau for g in gaps[:-1]])
    keep = torch.nonzero(~duplicate[:-1] & within).reshape(-1)
    k = int(keep[-1]) if keep.numel() else 0
    info.pruned, info.gap, info.duplicate_fallback = pruned[:k], (gaps[k - 1] if k else 0.0), True
    return path[k].clone(), info


def exact_prune(
    score_fn: ScoreFn,
    x_star: Tensor,
    default: Tensor,
    tau: float,
    active: Iterable[int],
    *,
    alpha_star: float | None = None,
    feasible_fn: MaskFn | None = None,
    is_duplicate: MaskFn | None = None,
    batch_size: int = EVAL_BATCH,
    groups: Sequence[Sequence[int]] | None = None,
) -> tuple[Tensor, PruneInfo]:
    r"""Exact pruning: the smallest active set ``S subset of A`` with ``Delta(P_S(x*)) <= tau``.

    Subsets are enumerated by size, smallest first (so a sparse answer is found after few
    evaluations); among the feasible sets of the smallest size the one with the smallest gap
    wins. With ``is_duplicate``, sets whose point is a duplicate are passed over (the search
    goes on to larger sets; ``x_star`` if nothing else is left). Costs up to ``2^|A| - 1``
    evaluations, in calls of at most ``batch_size`` points (memory stays ``O(batch_size d)``).

    Args: as :func:`greedy_prune` (``groups`` included), plus ``batch_size`` (points per
    ``score_fn`` call).

    Returns:
        The pruned point (a new tensor) and a :class:`PruneInfo` (``pruned`` ascending).

    Example:
        >>> score = lambda X: -((X[:, 0] - X[:, 1]) ** 2)  # resets that only pay off jointly
        >>> x, info = exact_prune(score, torch.ones(2), torch.zeros(2), 0.5, [0, 1])
        >>> info.pruned, x.tolist()  # greedy_prune resets nothing: each single reset costs 1
        ([0, 1], [0.0, 0.0])
    """
    act = torch.tensor(sorted({int(j) for j in active}), dtype=torch.long)
    m = act.numel()
    masks = unit_masks(x_star.numel(), groups)[act].to(x_star.dtype)  # m x d
    default = default.to(x_star)
    evaluations = 0
    if alpha_star is None:
        alpha_star = float(score_fn(x_star.unsqueeze(0)).reshape(-1)[0])
        evaluations = 1
    first_best_was_duplicate: bool | None = None
    for keep in range(m):  # number of active coordinates kept; keep = m is x_star itself
        combos = itertools.combinations(range(m), keep)
        best: tuple[float, Tensor, Tensor] | None = None  # feasible, not a duplicate
        best_any: tuple[float, bool] | None = None  # feasible: (gap, is it a duplicate)
        while chunk := list(itertools.islice(combos, batch_size)):
            kept = torch.zeros(len(chunk), m, dtype=torch.bool)
            kept.scatter_(1, torch.tensor(chunk, dtype=torch.long).reshape(len(chunk), keep), True)
            reset = ((~kept).to(masks.dtype) @ masks) > 0
            candidates = torch.where(reset, default, x_star)
            gap, n = _gaps(score_fn, candidates, alpha_star, feasible_fn)
            evaluations += n
            feasible = gap <= tau
            if not feasible.any():
                continue
            duplicate = torch.zeros_like(feasible)
            if is_duplicate is not None:
                duplicate = is_duplicate(candidates).reshape(-1) & feasible
            i = int(torch.where(feasible, gap, math.inf).argmin())
            if best_any is None or gap[i] < best_any[0]:  # strict: the first of equal gaps wins
                best_any = (float(gap[i]), bool(duplicate[i]))
            good = feasible & ~duplicate
            if good.any():
                i = int(torch.where(good, gap, math.inf).argmin())
                if best is None or gap[i] < best[0]:
                    best = (float(gap[i]), candidates[i].clone(), ~kept[i])
        if best_any is not None and first_best_was_duplicate is None:
            first_best_was_duplicate = best_any[1]
        if best is not None:
            gap_best, x, reset = best
            info = PruneInfo(
                act[reset].tolist(), gap_best, evaluations, bool(first_best_was_duplicate)
            )
            return x, info
    return x_star.clone(), PruneInfo([], 0.0, evaluations, bool(first_best_was_duplicate))


def duplicate_fn(seen: Tensor, bounds: Tensor, tol: float = DUPLICATE_TOLERANCE) -> MaskFn:
    """``X -> b`` booleans: the row is within ``tol`` (unit cube, every coordinate) of a row of
    ``seen`` (:func:`dsbo.acquisition.sparsity.is_duplicate`)."""
    return lambda X: near_seen_point(X, seen, bounds, tol)


def without_near_repeats(
    feasible_fn: MaskFn | None,
    seen: Tensor,
    model: Model | None,
    repeat_tol: float,
    x_star: Tensor,
    snap: Callable[[Tensor], Tensor] | None = None,
) -> MaskFn | None:
    """``feasible_fn`` that also rejects near-repeats: points (after ``snap``) within scaled
    distance ``repeat_tol`` of a row of ``seen`` for ``model``
    (:func:`dsbo.surrogates.relevance.near_repeats`). A reset that lands on one is then not
    taken and pruning goes on with the other coordinates. Rows of ``seen`` that the dense
    candidate ``x_star`` is itself a near-repeat of are left out (pruning may stay near the
    point the acquisition chose). ``feasible_fn`` unchanged with ``repeat_tol <= 0``, without a
    model, or when no row is left."""
    if repeat_tol <= 0 or model is None or seen.shape[0] == 0:
        return feasible_fn
    distance = scaled_distance(model, x_star.reshape(1, -1), seen)
    if distance is None:
        return feasible_fn
    others = seen[distance[0] >= repeat_tol]
    if others.shape[0] == 0:
        return feasible_fn

    def feasible(X: Tensor) -> Tensor:
        ok = ~near_repeats(model, X if snap is None else snap(X), others, repeat_tol)
        return ok if feasible_fn is None else ok & feasible_fn(X)

    return feasible


__all__ = [
    "EVAL_BATCH",
    "MaskFn",
    "PruneInfo",
    "ScoreFn",
    "duplicate_fn",
    "exact_prune",
    "greedy_prune",
    "without_near_repeats",
    "unit_masks",
]
