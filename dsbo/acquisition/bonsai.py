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

Tolerance rules (``rule``, issue 33; the definitions, the guarantees they change and the
measurements are in :mod:`dsbo.acquisition.acquisition_values`): ``"outcome-floor"`` (the
default) ``tau_t = max(rho_t alpha~(x*), outcome_floor std(y))``, the paper's rule with a floor
in outcome units that keeps proposals sparse once the optimum is found; ``"incremental"``, the
paper's ``rho_t alpha~(x*)``; ``"dense-scale"``, ``rho_t alpha_t(x*)``.

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
  non-duplicate active set. Either way ``duplicate_fallback`` is recorded. With the paper's
  rule, ``q = 1`` and ``rho < 1`` an *evaluated* point can never be chosen by the gap rule
  (``alpha(x_s) <= b_t`` makes its gap ``>= alpha~(x*) > tau``); pending and in-batch points
  can. With ``"dense-scale"`` or ``"outcome-floor"`` this no longer holds: an evaluated point whose
  ``alpha(x_s) >= alpha(x*) - tau`` passes the gap rule, and only the duplicate check (within
  ``1e-6``) keeps it from being re-proposed.
- Near-repeats (``repeat_tol``, issue 33): a reset that lands on a point within
  lengthscale-scaled distance ``repeat_tol`` (:mod:`dsbo.surrogates.relevance`) of an evaluated
  or pending point is not taken, as a reset that breaks a linear constraint: for the surrogate
  that point was tried (it differs only in coordinates the model considers irrelevant), e.g.
  after a relevant input was reset. Pruning goes on with the other coordinates. Points that
  ``x*`` itself is a near-repeat of do not count (pruning may stay near the point the
  acquisition chose); models without lengthscales have no near-repeats.

This module holds the post-processor :class:`Bonsai`; the pruning searches (:func:`greedy_prune`,
:func:`exact_prune`) are :mod:`dsbo.acquisition.pruning`, the incremental value
(:func:`incremental_value`, :func:`evaluate_acquisition`)
:mod:`dsbo.acquisition.acquisition_values`, and the checks of the options
:mod:`dsbo.acquisition.bonsai_options`; their names are importable from here too.

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
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from botorch.exceptions.errors import UnsupportedError
from torch import Tensor

from dsbo.acquisition.acquisition_values import (
    RULES,
    IncrementalValue,
    acquisition_score_fn,
    evaluate_acquisition,
    incremental_value,
    tolerance,
)
from dsbo.acquisition.acquisition_values import outcome_scale as _outcome_scale
from dsbo.acquisition.base import History, OptimizerSettings, Proposal, register_postprocessor
from dsbo.acquisition.bonsai_options import (
    LINEAR_TOL,
    MAX_EXACT_LIMIT,
    OPTION,
    check_constraints,
    check_default,
    check_max_exact,
    check_number,
    default_point,
    linear_feasibility,
    parse_rho,
    rho_at,
)
from dsbo.acquisition.pruning import (
    EVAL_BATCH,
    MaskFn,
    PruneInfo,
    ScoreFn,
    duplicate_fn,
    exact_prune,
    greedy_prune,
    without_near_repeats,
)
from dsbo.acquisition.sparsity import DEFAULT_TOLERANCE, changed_mask
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.space import SearchSpace


def _json_float(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


@register_postprocessor(
    "bonsai",
    "BONSAI: reset coordinates to the default within rho of the incremental value "
    "(with a floor in outcome units by default)",
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
            ``default_point``), ``"first"`` (the first evaluated point, ``history.X[0]``), a
            list of ``d`` floats (model coordinates), or ``{name: value}`` in user values
            (``{lr: 1e-3, optimizer: adam}``; parameters it leaves out at the middle of their
            range). A categorical counts as changed when its value differs from the default
            and is reset to the default as a whole.
        inequality_constraints: Linear constraints in BoTorch's format, a list of
            ``(indices, coefficients, rhs)`` meaning ``sum_i coefficients[i] *
            x[indices[i]] >= rhs``. Resets that break one are not taken.
        max_exact: Exact pruning runs for active sets of at most this size (``<= 20``); a larger
            active set falls back to greedy pruning (recorded as ``exact_fallback``).
        tol: Coordinates within ``tol`` of the default (unit-cube coordinates) are not active
            (BONSAI appendix C: ``1e-3``).
        rule: How ``tau`` is formed (module docstring): ``"outcome-floor"`` (the default,
            ``max(rho alpha~(x*), outcome_floor * std(y))``: the paper's rule until the
            expected improvement left is negligible in outcome units), ``"incremental"`` (the
            paper's, ``rho alpha~(x*)``) or ``"dense-scale"`` (``rho alpha(x*)``).
        outcome_floor: ``epsilon`` of ``rule="outcome-floor"``: the floor of ``tau`` in
            standard deviations of the observed objective, a number in ``[0, 1]``.
        repeat_tol: Resets that land within this lengthscale-scaled distance of an evaluated
            or pending point are not taken (``0``: off). The defaults of both go together:
            the floor alone repeats one sparse point (``sparse_protocol/repeat_guard``).

    The fixed features of the optimizer are never pruned. Metadata per candidate
    (JSON-serializable): ``pruned_dims`` (coordinates reset), ``num_active`` (``|A(x*)|``),
    ``acq_evaluations`` (acquisition values computed, the baseline ``b_t`` included),
    ``incremental_value``, ``tau`` and ``gap`` (in acquisition units: exponentiated for log
    acquisitions), ``relative_gap`` (``gap / alpha~``, at most ``rho`` under the paper's rule;
    ``None`` when ``alpha~ <= 0``), ``scale_gap`` (``gap / alpha(x*)``), ``rule``, ``rho``,
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
        rule: str = "outcome-floor",
        outcome_floor: float = 1e-2,
        repeat_tol: float = 0.01,
    ) -> None:
        #: ``rho`` as given; :meth:`rho_at` gives ``rho_t``.
        self.rho = rho
        self._rho_c, self._rho_schedule = parse_rho(rho)
        if rule not in RULES:
            raise ConfigError(f"{OPTION}.rule={rule!r}; choose one of {RULES}")
        self.rule = rule
        self.outcome_floor = check_number("outcome_floor", outcome_floor, 0, 1, high_open=False)
        self.repeat_tol = check_number("repeat_tol", repeat_tol, 0, math.inf, high_open=True)
        if mode not in self.MODES:
            raise ConfigError(f"{OPTION}.mode={mode!r}; choose one of {self.MODES}")
        self.mode = mode
        self.default = check_default(default)
        self.inequality_constraints = check_constraints(inequality_constraints)
        self.max_exact = check_max_exact(max_exact)
        self.tol = check_number("tol", tol, 0, 1, high_open=True)

    # ------------------------------------------------------------------ options at a call
    def tolerance(
        self, rho: float, alpha_star: float, incremental: float, outcome_std: float = 0.0
    ) -> float:
        """``tau`` under :attr:`rule` (:func:`~dsbo.acquisition.acquisition_values.tolerance`)."""
        return tolerance(self.rule, rho, alpha_star, incremental, outcome_std, self.outcome_floor)

    def outcome_scale(self, history: History, problem: Problem) -> float:
        """``std(y)`` for ``"outcome-floor"``, else 0
        (:func:`~dsbo.acquisition.acquisition_values.outcome_scale`)."""
        if self.rule != "outcome-floor":
            return 0.0
        return _outcome_scale(history.Y, problem.num_objectives)

    def rho_at(self, t: int) -> float:
        """``rho_t``: the constant ``rho``, or ``min(1, c / t)`` for the schedule (``t >= 1``)."""
        return rho_at(self._rho_c, self._rho_schedule, t)

    def default_point(self, history: History, problem: Problem) -> Tensor:
        """The default point ``x^def`` (a ``d``-vector) for this call
        (:func:`~dsbo.acquisition.bonsai_options.default_point`)."""
        return default_point(self.default, history, problem)

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
        feasible_fn = linear_feasibility(self.inequality_constraints, d)
        rho = self.rho_at(history.t)
        outcome_scale = self.outcome_scale(history, problem)
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
                    space=problem.space,
                    snap=problem.round_to_domain,
                    outcome_scale=outcome_scale,
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
        space: SearchSpace | None = None,
        snap: Callable[[Tensor], Tensor] | None = None,
        outcome_scale: float = 0.0,
    ) -> tuple[Tensor, dict[str, Any]]:
        """Prune one dense candidate ``x_star``; returns the pruned point and its metadata.

        The tolerance is formed once, from ``alpha~(x*)`` (against ``baseline_raw``, the
        previous batch point's value, when the acquisition is conditioned on it), and the
        search (:attr:`mode`) never takes a reset that breaks ``feasible_fn``, lands near a
        point of ``seen`` (``repeat_tol``) or duplicates one; pruning is skipped, with the
        reason recorded, when the rule gives it nothing to go on (module docstring).
        """
        start = time.perf_counter()
        # coordinates within tol of the default are reset to it exactly (it costs nothing), so
        # the active set is exactly the coordinates that differ from the default
        near = ~changed_mask(x_star, default, bounds, self.tol) & ~frozen & (x_star != default)
        x_star = torch.where(near, default.to(x_star), x_star)
        # a unit is a parameter: a categorical's one-hot columns are changed and reset together
        groups = space.groups if space is not None else [[j] for j in range(x_star.numel())]
        names = space.searched if space is not None else [str(j) for j in range(x_star.numel())]
        changed = (x_star != default) & ~frozen
        active = [
            k for k, cols in enumerate(groups) if changed[cols].any() and not frozen[cols].any()
        ]
        meta: dict[str, Any] = {
            "postprocess": "bonsai",
            "prune_mode": self.mode,
            "exact_fallback": False,
            "rule": self.rule,
            "rho": rho,
            "outcome_scale": outcome_scale if self.rule == "outcome-floor" else None,
            "num_active": len(active),
            "snapped_dims": [int(j) for j in torch.nonzero(near).reshape(-1)],
            "pruned_dims": [],
            "pruned_parameters": [],
            "incremental_value": None,
            "tau": None,
            "gap": 0.0,
            "relative_gap": 0.0,
            "scale_gap": 0.0,
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
        elif self.rule == "dense-scale" and not inc.alpha_star > 0:
            reason = (
                "rule 'dense-scale': alpha(x*) <= 0 gives no dense scale (the rule needs a "
                "non-negative acquisition; use rule='incremental' with UCB)"
            )
        elif self.rule == "dense-scale" or (
            self.rule == "outcome-floor" and self.outcome_floor * outcome_scale > 0
        ):
            pass  # these prune even when x* does not beat the evaluated points
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

        # the floor in scoring units (exp(log alpha - log alpha(x*)) for log acquisitions)
        if outcome_scale <= 0 or not math.isfinite(inc.unit):
            outcome_std = 0.0
        else:  # exp(-800) underflows to 0: any floor dwarfs such a value
            outcome_std = outcome_scale / inc.unit if inc.unit > 0 else math.inf
        tau = self.tolerance(rho, inc.alpha_star, inc.value, outcome_std)
        mode = self.mode
        if mode == "exact" and len(active) > self.max_exact:
            mode = "greedy"
            meta["exact_fallback"] = True
        prune = (
            exact_prune
            if mode == "exact"
            else functools.partial(greedy_prune, prefix=mode == "prefix")
        )
        x, info = prune(
            acquisition_score_fn(acqf, log_scale, inc.log_shift),
            x_star,
            default,
            tau,
            active,
            alpha_star=inc.alpha_star,
            feasible_fn=without_near_repeats(
                feasible_fn, seen, getattr(acqf, "model", None), self.repeat_tol, x_star, snap
            ),
            # a pruned point is compared after snapping: resetting a parent categorical makes
            # its conditional children inactive, which can land on a configuration already tried
            is_duplicate=_snapped(duplicate_fn(seen, bounds), snap),
            groups=groups,
        )
        meta.update(
            prune_mode=mode,
            tau=_json_float(tau * inc.unit),
            gap=_json_float(info.gap * inc.unit),
            relative_gap=_json_float(info.gap / inc.value) if inc.value > 0 else None,
            scale_gap=_json_float(info.gap / inc.alpha_star),
            pruned_dims=[int(j) for k in info.pruned for j in groups[k]],
            pruned_parameters=[names[k] for k in info.pruned],
            acq_evaluations=inc.evaluations + info.evaluations,
            duplicate_fallback=info.duplicate_fallback,
            prune_time=time.perf_counter() - start,
        )
        return x, meta


def _snapped(mask_fn: MaskFn, snap: Callable[[Tensor], Tensor] | None) -> MaskFn:
    """``mask_fn`` applied to the snapped rows (the points that would be evaluated)."""
    if snap is None:
        return mask_fn
    return lambda X: mask_fn(snap(X))


__all__ = [
    "EVAL_BATCH",
    "LINEAR_TOL",
    "MAX_EXACT_LIMIT",
    "RULES",
    "ScoreFn",
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
