r"""BONSAI: default-aware pruning of the candidates of any acquisition function.

BONSAI (Daulton et al., "BONSAI: Bayesian Optimization with Natural Simplicity and
Interpretability", section 5 and appendix B) post-processes the dense maximizer ``x*`` of an
acquisition function ``alpha_t``: it resets coordinates of ``x*`` to a default configuration
``x^def`` for as long as the loss in acquisition value stays within a fraction ``rho_t`` of
the *incremental* acquisition value of ``x*``::

    b_t         = max_{s < t} alpha_t(x_s)        today's alpha at the evaluated points
    alpha~(x*)  = alpha_t(x*) - b_t               incremental value of the dense candidate
    tau_t       = rho_t * alpha~(x*)              the tolerance, computed once per candidate
    Delta_t(x)  = alpha_t(x*) - alpha_t(x)        the gap, always against the dense x*
    A(x)        = {j : x_j != x^def_j}                    active (changed) coordinates, after
                  every x_j with |x_j - x^def_j| < tol (ub_j - lb_j) was reset to x^def_j
    P_S(x)      = x with the coordinates outside S reset to x^def

*Exact* pruning returns ``P_S*(x*)`` with
``S* = argmin_{S subset of A(x*)} {|S| : Delta_t(P_S(x*)) <= tau_t}`` (ties: the smallest gap).
*Greedy* pruning (the paper's Algorithm 1) resets, one at a time, the active coordinate whose
reset has the smallest gap, while that gap is ``<= tau_t``; it needs at most
``|A|(|A| + 1) / 2`` acquisition evaluations. Both satisfy the gap rule
``Delta_t(x) <= tau_t`` by construction. The paper uses ``rho = 0.2`` with EI-type acquisitions
and ``rho_t = 1 / t`` with UCB (Corollary A.2).

Choices made here (see also :class:`Bonsai`):

- Log acquisitions (qLogNEI, LogEI, qLogNEHVI) are exponentiated before ``b_t`` and the rule
  are formed (appendix B). The rule is invariant to a positive rescaling of ``alpha``, so the
  values are exponentiated *relative to* ``alpha(x*)`` (``exp(log alpha - log alpha(x*))``):
  no underflow even when ``log alpha(x*)`` is ``-800``. For qLogNEHVI the exponentiated value
  is the expected hypervolume improvement, and ``b_t`` is its largest value at an evaluated
  point.
- Pruning is skipped (the dense candidate is returned, and the reason recorded) when
  ``alpha~(x*) <= 0``, when an acquisition value is not finite, or without evaluated points.
- Batches (``q > 1``) are pruned point by point, each conditioned on the already pruned points
  as pending points (section 6.3), on a deep copy of the acquisition function: BoTorch's
  qLogNEHVI caches pending points in its box decompositions and ``set_X_pending`` cannot take
  them out again, so conditioning in place could not be undone.
- Duplicates: a pruned candidate within ``1e-6`` (unit-cube coordinates, every coordinate) of
  an evaluated, pending or earlier-in-batch point is replaced by the last non-duplicate point
  on the greedy path (or the dense candidate); exact pruning takes the smallest feasible
  non-duplicate active set. Either way ``duplicate_fallback`` is recorded. With ``q = 1`` and
  ``rho < 1`` an *evaluated* point can never be chosen (``alpha(x_s) <= b_t`` makes its gap
  ``>= alpha~(x*) > tau``); pending and in-batch points can.

Example:
    >>> import torch
    >>> score = lambda X: X[:, :2].sum(-1) + 1e-3 * X[:, 2:].sum(-1)  # 2 relevant dims
    >>> x_star, default = torch.ones(5), torch.zeros(5)
    >>> x, info = greedy_prune(score, x_star, default, tau=0.1, active=range(5))
    >>> sorted(info.pruned), x.tolist()
    ([2, 3, 4], [1.0, 1.0, 0.0, 0.0, 0.0])
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from dsbo.acquisition.base import History, OptimizerSettings, Proposal, register_postprocessor
from dsbo.acquisition.sparsity import DEFAULT_TOLERANCE, DUPLICATE_TOLERANCE, changed_mask
from dsbo.acquisition.sparsity import is_duplicate as near_seen_point
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

#: ``score_fn(X: b x d) -> b`` acquisition values (already exponentiated for log acquisitions).
ScoreFn = Callable[[Tensor], Tensor]
#: ``mask_fn(X: b x d) -> b`` booleans (feasibility under linear constraints, or duplicates).
MaskFn = Callable[[Tensor], Tensor]

#: Two points are duplicates when every coordinate differs by less than this (unit cube).
#: Points per acquisition call when many points are scored (evaluated points, exact subsets).
EVAL_BATCH = 256
#: Slack allowed on a linear constraint ``sum coef * x[idx] >= rhs`` (times ``max(1, |rhs|)``).
LINEAR_TOL = 1e-8
#: Largest ``max_exact``: exact pruning scores up to ``2^max_exact`` subsets.
MAX_EXACT_LIMIT = 20
OPTION = "postprocess.bonsai"


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
    evaluations = 0
    if alpha_star is None:
        alpha_star = float(score_fn(x_star.unsqueeze(0)).reshape(-1)[0])
        evaluations = 1
    x = x_star.clone()
    pruned: list[int] = []
    gaps: list[float] = []
    if prefix and len(remaining) > 1:
        idx = torch.tensor(remaining)
        singles = x.repeat(len(remaining), 1)
        singles[torch.arange(len(remaining)), idx] = default[idx].to(x)
        single_gap, n = _gaps(score_fn, singles, alpha_star, feasible_fn)
        evaluations += n
        order = torch.argsort(single_gap, stable=True)
        order = order[torch.isfinite(single_gap[order])]
        if order.numel():
            prefixes = x.repeat(order.numel(), 1)
            for k, j in enumerate(idx[order].tolist()):
                prefixes[k:, j] = default[j].to(x)
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
        candidates = x.repeat(len(remaining), 1)
        candidates[torch.arange(len(remaining)), idx] = default[idx].to(x)
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
    path = x_star.repeat(len(pruned) + 1, 1)
    for step, j in enumerate(pruned, start=1):
        path[step:, j] = default[j].to(x)
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
) -> tuple[Tensor, PruneInfo]:
    r"""Exact pruning: the smallest active set ``S subset of A`` with ``Delta(P_S(x*)) <= tau``.

    Subsets are enumerated by size, smallest first (so a sparse answer is found after few
    evaluations); among the feasible sets of the smallest size the one with the smallest gap
    wins. With ``is_duplicate``, sets whose point is a duplicate are passed over (the search
    goes on to larger sets; ``x_star`` if nothing else is left). Costs up to ``2^|A| - 1``
    evaluations, in calls of at most ``batch_size`` points (memory stays ``O(batch_size d)``).

    Args: as :func:`greedy_prune`, plus ``batch_size`` (points per ``score_fn`` call).

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
            candidates = x_star.repeat(len(chunk), 1)
            candidates[:, act] = torch.where(kept, x_star[act], default[act].to(x_star))
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


def evaluate_acquisition(acqf: Callable[[Tensor], Tensor], X: Tensor) -> Tensor:
    """``acqf`` at every row of ``X`` (``n x d``) as its own ``q = 1`` batch: an ``n``-vector.

    One call per ``EVAL_BATCH`` rows, each shaped ``b x 1 x d``. BoTorch's MC acquisitions
    collapse the t-batch dimension of their base samples, so a seeded sampler reuses the same
    base samples for every ``b`` (the value of a point does not depend on what it is batched
    with, up to floating-point rounding).
    """
    if X.shape[0] == 0:
        return X.new_zeros(0)
    with torch.no_grad():
        return torch.cat(
            [acqf(chunk.unsqueeze(-2)).reshape(-1).to(X) for chunk in X.split(EVAL_BATCH)]
        )


@dataclass
class IncrementalValue:
    """``alpha~(x*) = alpha(x*) - b`` with ``b = max_s alpha(x_s)``, in scoring units.

    For log acquisitions the scoring units are ``exp(log alpha - log_shift)`` with
    ``log_shift = log alpha(x*)`` (so ``alpha_star == 1``); multiply by :attr:`unit` to get
    acquisition units (which may underflow to 0).
    """

    alpha_star: float
    baseline: float
    log_shift: float | None
    evaluations: int

    @property
    def value(self) -> float:
        return self.alpha_star - self.baseline

    @property
    def unit(self) -> float:
        if self.log_shift is None:
            return 1.0
        return math.exp(self.log_shift) if self.log_shift < 709.0 else math.inf


def incremental_value(
    acqf: Callable[[Tensor], Tensor],
    x_star: Tensor,
    X_evaluated: Tensor,
    log_scale: bool,
    baseline_raw: float | None = None,
) -> IncrementalValue:
    r"""Today's ``alpha`` at ``x*`` and at the evaluated points, in one batched call.

    With ``baseline_raw`` (a batch point after the first, paper section 6.3) the baseline is
    that acquisition value instead of ``max_s alpha(x_s)``: ``alpha(x_{i-1})`` given the
    points before it, i.e. the value of the batch so far, so ``alpha~`` is the improvement
    ``x_i`` adds to it.

    Returns the :class:`IncrementalValue`; its ``value`` is NaN when ``alpha(x*)`` or an
    ``alpha(x_s)`` is not finite (or ``-inf`` without evaluated points), which the caller
    treats as "skip pruning".
    """
    if baseline_raw is not None:
        raw = evaluate_acquisition(acqf, x_star.unsqueeze(0))
        raw = torch.cat([raw, raw.new_tensor([baseline_raw])])
        return _incremental(raw, log_scale, evaluations=1)
    raw = evaluate_acquisition(acqf, torch.cat([x_star.unsqueeze(0), X_evaluated.to(x_star)]))
    return _incremental(raw, log_scale, evaluations=raw.numel())


def _incremental(raw: Tensor, log_scale: bool, evaluations: int) -> IncrementalValue:
    """``raw[0]`` is ``alpha(x*)``; the baseline is the largest of ``raw[1:]``."""
    log_shift = float(raw[0]) if log_scale else None
    values = torch.exp(raw - raw[0]) if log_scale else raw
    if not torch.isfinite(values).all():
        values = torch.full_like(values, math.nan)
    baseline = float(values[1:].max()) if values.numel() > 1 else math.inf
    return IncrementalValue(float(values[0]), baseline, log_shift, evaluations)


def acquisition_score_fn(
    acqf: Callable[[Tensor], Tensor], log_scale: bool, log_shift: float | None = None
) -> ScoreFn:
    """``X (b x d) -> b``: ``acqf`` per point, ``exp(value - log_shift)`` if ``log_scale``."""

    def score(X: Tensor) -> Tensor:
        values = evaluate_acquisition(acqf, X)
        return torch.exp(values - (log_shift or 0.0)) if log_scale else values

    return score


def duplicate_fn(seen: Tensor, bounds: Tensor, tol: float = DUPLICATE_TOLERANCE) -> MaskFn:
    """``X -> b`` booleans: the row is within ``tol`` (unit cube, every coordinate) of a row of
    ``seen`` (:func:`dsbo.acquisition.sparsity.is_duplicate`)."""
    return lambda X: near_seen_point(X, seen, bounds, tol)


def _json_float(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


@register_postprocessor(
    "bonsai", "BONSAI: reset coordinates to the default within rho of the incremental value"
)
class Bonsai:
    r"""BONSAI pruning (Daulton et al.) as a post-processor of any optimized acquisition.

    For each dense candidate ``x*`` (see the module docstring for the math): compute
    ``alpha~(x*) = alpha(x*) - max_s alpha(x_s)`` over the evaluated points, then reset
    coordinates of ``x*`` to the default while ``alpha(x*) - alpha(x) <= rho_t alpha~(x*)``.
    Works with any acquisition that maps ``b x 1 x d`` to ``b`` values (qLogNEI, LogEI, UCB,
    qLogNEHVI; GPs, MAP-SAAS ensembles): with seeded quasi-MC samplers the values are
    deterministic during pruning.

    Args:
        rho: The relative threshold: a number in ``[0, 1]`` (the paper's BONSAI-EI uses
            ``0.2``), or the schedule ``"1/t"`` (BONSAI-UCB, ``rho_t = 1 / t`` with
            ``t = history.t``, the number of completed observations; ``"c/t"`` for another
            ``c > 0``, capped at 1).
        mode: ``"prefix"`` (the default: greedy that takes the longest within-tau prefix of
            the first round's order in one step, then continues greedily:
            :func:`greedy_prune` with ``prefix=True``; not in the paper, but on the sparse
            protocol it was sparser, closer to the optimum and cheaper than Algorithm 1,
            ``experiments/results/sparse_protocol``), ``"greedy"`` (Algorithm 1,
            ``O(|A|^2)`` evaluations) or ``"exact"`` (enumerate subsets of the active set,
            smallest first).
        default: The default point: ``None`` or ``"problem"`` (the problem's
            ``default_point``), ``"first"`` (the first evaluated point, ``history.X[0]``) or a
            list of ``d`` floats.
        inequality_constraints: Linear constraints in BoTorch's format, a list of
            ``(indices, coefficients, rhs)`` meaning ``sum_i coefficients[i] *
            x[indices[i]] >= rhs``. Resets that break one are not taken.
        max_exact: Exact pruning runs for active sets of at most this size (``<= 20``); a larger
            active set falls back to greedy pruning (recorded as ``exact_fallback``).
        tol: Coordinates within ``tol`` of the default (unit-cube coordinates) are not active
            (BONSAI appendix C: ``1e-3``).

    The fixed features of the optimizer are never pruned. Metadata per candidate
    (JSON-serializable): ``pruned_dims`` (coordinates reset), ``num_active`` (``|A(x*)|``),
    ``acq_evaluations`` (acquisition values computed, the baseline ``b_t`` included),
    ``incremental_value``, ``tau`` and ``gap`` (in acquisition units: exponentiated for log
    acquisitions), ``relative_gap`` (``gap / alpha~``, at most ``rho``), ``rho``,
    ``prune_mode`` (the mode used), ``exact_fallback``, ``prune_time`` (seconds),
    ``prune_skipped`` and ``skip_reason``, ``duplicate_fallback``, and ``batch_conditioning``
    (whether the acquisition was conditioned on earlier pruned points of the batch).

    Example:
        >>> from dsbo.campaign import Campaign
        >>> from dsbo.problems import get_problem
        >>> campaign = Campaign(get_problem("branin-15d"), surrogate="gp", acquisition="qlognei",
        ...                     postprocess={"bonsai": {"rho": 0.2}}, budget=20, n_init=10)
        >>> result = campaign.run()
        >>> pruned = campaign.store.trials()[-1].metadata["pruned_dims"]  # coordinates reset
    """

    name = "bonsai"
    MODES = ("greedy", "exact", "prefix")

    def __init__(
        self,
        rho: float | str = 0.2,
        mode: str = "prefix",
        default: list[float] | str | None = None,
        inequality_constraints: Sequence[tuple[Any, Any, float]] | None = None,
        max_exact: int = 15,
        tol: float = DEFAULT_TOLERANCE,
    ) -> None:
        #: ``rho`` as given; :meth:`rho_at` gives ``rho_t``.
        self.rho = rho
        self._rho_c, self._rho_schedule = self._check_rho(rho)
        if mode not in self.MODES:
            raise ConfigError(f"{OPTION}.mode={mode!r}; choose one of {self.MODES}")
        self.mode = mode
        self.default = self._check_default(default)
        self.inequality_constraints = self._check_constraints(inequality_constraints)
        if (
            not isinstance(max_exact, int)
            or isinstance(max_exact, bool)
            or not 1 <= max_exact <= MAX_EXACT_LIMIT
        ):
            raise ConfigError(
                f"{OPTION}.max_exact must be an integer in [1, {MAX_EXACT_LIMIT}] (exact pruning "
                f"scores up to 2^max_exact subsets), got {max_exact!r}"
            )
        self.max_exact = max_exact
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 <= tol < 1:
            raise ConfigError(f"{OPTION}.tol must be a number in [0, 1), got {tol!r}")
        self.tol = float(tol)

    # ------------------------------------------------------------------ options
    @staticmethod
    def _check_rho(rho: float | str) -> tuple[float, bool]:
        if isinstance(rho, str):
            match = re.fullmatch(r"\s*([0-9.eE+-]*)\s*/\s*t\s*", rho)
            try:
                c = float(match.group(1) or 1.0) if match else math.nan
            except ValueError:
                c = math.nan
            if not c > 0 or not math.isfinite(c):
                raise ConfigError(
                    f"{OPTION}.rho={rho!r}: use a number in [0, 1] or the schedule '1/t' ('c/t')"
                )
            return c, True
        if isinstance(rho, bool) or not isinstance(rho, int | float) or not 0 <= rho <= 1:
            raise ConfigError(f"{OPTION}.rho must be a number in [0, 1] or '1/t', got {rho!r}")
        return float(rho), False

    @staticmethod
    def _check_default(default: Any) -> str | Tensor | None:
        if default is None:
            return None
        if isinstance(default, str):
            if default == "problem":
                return None
            if default != "first":
                raise ConfigError(
                    f"{OPTION}.default={default!r}: use null (the problem's default point), "
                    "'first' (the first evaluated point) or a list of d numbers"
                )
            return default
        try:
            value = torch.as_tensor(default, dtype=torch.double)
        except (TypeError, ValueError, RuntimeError):
            value = None
        if (
            value is None
            or value.ndim != 1
            or value.numel() == 0
            or not torch.isfinite(value).all()
        ):
            raise ConfigError(f"{OPTION}.default must be a list of finite numbers, got {default!r}")
        return value

    @staticmethod
    def _check_constraints(constraints: Any) -> list[tuple[Tensor, Tensor, float]]:
        if constraints is None:
            return []
        if isinstance(constraints, str | bytes) or not isinstance(constraints, Sequence):
            raise ConfigError(
                f"{OPTION}.inequality_constraints must be a list of (indices, coefficients, "
                f"rhs), got {constraints!r}"
            )
        checked = []
        for k, item in enumerate(constraints):
            where = f"{OPTION}.inequality_constraints[{k}]"
            try:
                indices, coefficients, rhs = item
                idx = torch.as_tensor(indices)
                coef = torch.as_tensor(coefficients, dtype=torch.double)
                rhs = float(rhs)
            except (TypeError, ValueError, RuntimeError):
                raise ConfigError(
                    f"{where} must be (indices, coefficients, rhs), got {item!r}"
                ) from None
            if idx.ndim != 1 or idx.is_floating_point() or idx.dtype == torch.bool:
                raise ConfigError(
                    f"{where}: indices must be a list of integers (intra-point constraints "
                    f"only), got {indices!r}"
                )
            if coef.shape != idx.shape or not torch.isfinite(coef).all() or not math.isfinite(rhs):
                raise ConfigError(
                    f"{where}: needs one finite coefficient per index and a finite rhs, got {item!r}"
                )
            if idx.numel() == 0 or (idx < 0).any():
                raise ConfigError(f"{where}: indices must be non-negative, got {indices!r}")
            checked.append((idx.long(), coef, rhs))
        return checked

    def rho_at(self, t: int) -> float:
        """``rho_t``: the constant ``rho``, or ``min(1, c / t)`` for the schedule (``t >= 1``)."""
        return min(1.0, self._rho_c / max(int(t), 1)) if self._rho_schedule else self._rho_c

    def default_point(self, history: History, problem: Problem) -> Tensor:
        """The default point ``x^def`` (a ``d``-vector) for this call."""
        d = problem.dim
        if self.default is None:
            return problem.default_point.to(torch.double)
        if isinstance(self.default, str):  # "first"
            if history.X.numel() == 0:
                raise ConfigError(f"{OPTION}.default='first' needs an evaluated point")
            return history.X[0].to(torch.double)
        if self.default.numel() != d:
            raise ConfigError(
                f"{OPTION}.default has {self.default.numel()} entries, {problem.name} has {d} "
                "dimensions"
            )
        lb, ub = problem.bounds
        if ((self.default < lb) | (self.default > ub)).any():
            raise ConfigError(f"{OPTION}.default lies outside the bounds of {problem.name}")
        integer = list(problem.integer_dims)
        if integer and not torch.equal(self.default[integer], self.default[integer].round()):
            raise ConfigError(
                f"{OPTION}.default must be integer-valued on the integer dimensions {integer}"
            )
        return self.default

    def _feasible_fn(self, d: int) -> MaskFn | None:
        if not self.inequality_constraints:
            return None
        for k, (idx, _, _) in enumerate(self.inequality_constraints):
            if int(idx.max()) >= d:
                raise ConfigError(
                    f"{OPTION}.inequality_constraints[{k}]: index {int(idx.max())} >= d = {d}"
                )

        def feasible(X: Tensor) -> Tensor:
            ok = torch.ones(X.shape[0], dtype=torch.bool)
            for idx, coef, rhs in self.inequality_constraints:
                ok &= X[:, idx] @ coef.to(X) >= rhs - LINEAR_TOL * max(1.0, abs(rhs))
            return ok

        return feasible

    # ------------------------------------------------------------------ pruning
    def __call__(
        self,
        acqf: Any,
        X: Tensor,
        history: History,
        problem: Problem,
        optimizer: OptimizerSettings,
        log_scale: bool,
    ) -> Proposal:
        """Prune the ``q x d`` dense candidates ``X``; one metadata dict per candidate."""
        X = torch.as_tensor(X).detach()
        X = X.unsqueeze(0) if X.ndim == 1 else X
        q, d = X.shape
        default = self.default_point(history, problem).to(X)
        bounds = problem.bounds.to(X)
        feasible_fn = self._feasible_fn(d)
        rho = self.rho_at(history.t)
        frozen = torch.zeros(d, dtype=torch.bool)
        for j in optimizer.fixed_features or {}:
            frozen[int(j)] = True
        evaluated = history.X.to(X) if history.X.numel() else X.new_zeros(0, d)
        pending = history.X_pending.to(X) if history.X_pending is not None else X.new_zeros(0, d)

        # Batches: condition a copy of the acquisition on the points pruned so far (pending).
        work, in_place, touched = acqf, False, False
        conditioning = q > 1 and callable(getattr(acqf, "set_X_pending", None))
        if conditioning:
            try:
                work = copy.deepcopy(acqf)
            except (RuntimeError, TypeError):  # e.g. non-leaf tensors: condition, then restore
                in_place = True
        chosen: list[Tensor] = []
        metadata: list[dict[str, Any]] = []
        previous: float | None = None  # alpha(x_{i-1}) given the points before it
        try:
            for i in range(q):
                done = torch.stack(chosen) if chosen else X.new_zeros(0, d)
                conditioned = False
                if i > 0 and conditioning:
                    try:
                        work.set_X_pending(torch.cat([pending, done]))
                        conditioned = touched = True
                    except UnsupportedError:  # analytic acquisitions take no pending points
                        conditioning = False
                x, meta = self._prune_one(
                    work,
                    X[i],
                    evaluated,
                    torch.cat([evaluated, pending, done]),
                    default,
                    bounds,
                    rho,
                    frozen,
                    feasible_fn,
                    log_scale,
                    baseline_raw=previous if conditioned else None,
                )
                meta["batch_conditioning"] = conditioned
                meta["baseline"] = "previous batch point" if conditioned else "evaluated points"
                if conditioning and i + 1 < q:
                    previous = float(evaluate_acquisition(work, x.unsqueeze(0))[0])
                    meta["acq_evaluations"] += 1
                chosen.append(x)
                metadata.append(meta)
        finally:
            if in_place and touched:
                acqf.set_X_pending(history.X_pending)
        return Proposal(X=torch.stack(chosen), metadata=metadata)

    def _prune_one(
        self,
        acqf: Any,
        x_star: Tensor,
        evaluated: Tensor,
        seen: Tensor,
        default: Tensor,
        bounds: Tensor,
        rho: float,
        frozen: Tensor,
        feasible_fn: MaskFn | None,
        log_scale: bool,
        baseline_raw: float | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        start = time.perf_counter()
        # coordinates within tol of the default are reset to it exactly (it costs nothing), so
        # the active set is exactly the coordinates that differ from the default
        near = ~changed_mask(x_star, default, bounds, self.tol) & ~frozen & (x_star != default)
        x_star = torch.where(near, default.to(x_star), x_star)
        active = torch.nonzero((x_star != default) & ~frozen).reshape(-1).tolist()
        meta: dict[str, Any] = {
            "postprocess": "bonsai",
            "prune_mode": self.mode,
            "exact_fallback": False,
            "rho": rho,
            "num_active": len(active),
            "snapped_dims": [int(j) for j in torch.nonzero(near).reshape(-1)],
            "pruned_dims": [],
            "incremental_value": None,
            "tau": None,
            "gap": 0.0,
            "relative_gap": 0.0,
            "acq_evaluations": 0,
            "prune_skipped": False,
            "skip_reason": None,
            "duplicate_fallback": False,
        }
        inc = incremental_value(acqf, x_star, evaluated, log_scale, baseline_raw)
        meta["acq_evaluations"] = inc.evaluations
        reason = None
        if evaluated.shape[0] == 0:
            reason = "no evaluated points to form the baseline max_s alpha(x_s)"
        elif not math.isfinite(inc.value):
            reason = "an acquisition value (at x* or at an evaluated point) is not finite"
        elif inc.value <= 0 and baseline_raw is not None:
            reason = (
                "incremental value alpha(x*) - alpha(x_{i-1}) <= 0: the dense candidate adds "
                "nothing to the batch before it under today's acquisition"
            )
        elif inc.value <= 0:
            reason = (
                "incremental value alpha(x*) - max_s alpha(x_s) <= 0: the dense candidate does "
                "not beat the evaluated points under today's acquisition"
            )
        if math.isfinite(inc.value):
            meta["incremental_value"] = _json_float(inc.value * inc.unit)
        if reason is not None:
            meta.update(prune_skipped=True, skip_reason=reason)
            meta["prune_time"] = time.perf_counter() - start
            return x_star.clone(), meta

        tau = rho * inc.value
        mode = self.mode
        if mode == "exact" and len(active) > self.max_exact:
            mode = "greedy"
            meta["exact_fallback"] = True
        prune = exact_prune if mode == "exact" else functools.partial(greedy_prune, prefix=mode == "prefix")
        x, info = prune(
            acquisition_score_fn(acqf, log_scale, inc.log_shift),
            x_star,
            default,
            tau,
            active,
            alpha_star=inc.alpha_star,
            feasible_fn=feasible_fn,
            is_duplicate=duplicate_fn(seen, bounds),
        )
        meta.update(
            prune_mode=mode,
            tau=_json_float(tau * inc.unit),
            gap=_json_float(info.gap * inc.unit),
            relative_gap=_json_float(info.gap / inc.value),
            pruned_dims=[int(j) for j in info.pruned],
            acq_evaluations=inc.evaluations + info.evaluations,
            duplicate_fallback=info.duplicate_fallback,
            prune_time=time.perf_counter() - start,
        )
        return x, meta


__all__ = [
    "Bonsai",
    "IncrementalValue",
    "PruneInfo",
    "acquisition_score_fn",
    "duplicate_fn",
    "evaluate_acquisition",
    "exact_prune",
    "greedy_prune",
    "incremental_value",
]
