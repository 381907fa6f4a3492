r"""The policy machinery shared by SEBO, IR and ER: a sparsity measure optimized by homotopy.

Sparsity-exploring BO (Liu et al., AISTATS 2023) measures the distance ``xi(x)`` of a candidate
from a target ``x^s`` (:mod:`dsbo.acquisition.sparsity`: L0, L1 or group lasso, in unit-cube
coordinates). :class:`SparsityPolicy` holds what every policy built on such a measure needs;
its subclasses (:class:`~dsbo.acquisition.sebo.SEBO`, the EHVI of ``(f, -xi)``, and IR / ER of
:mod:`dsbo.acquisition.regularized`, EI regularized by ``xi``) only say which acquisition
function to build for the current state of the measure.

**L0 by homotopy continuation** (section 5, appendix E.1). The exact L0 is piecewise
constant, so the acquisition is optimized with the smooth ``xi_a`` for a log-spaced sequence
of ``a`` from ``a_start = 10^-0.5`` to ``a_end = 10^-3`` (30 values; BoTorch's ``Homotopy``
and ``LogLinearHomotopySchedule`` drive the ``a`` buffer of ``L0Approximation``). The first
value is optimized by L-BFGS-B from ``optimizer.num_restarts`` restarts (half sparse Sobol
points, half perturbed Pareto-front points, as Ax); every later value re-optimizes from each
previous optimum (restarts within ``1e-4`` of a better one are pruned). The acquisition is
rebuilt at every ``a`` because the observed points' sparsity ``xi_a`` changes with it.
Intermediate values are cheap: at most ``homotopy_maxiter = 20`` L-BFGS-B iterations, and a
restart whose largest move (unit cube) at one value is below ``freeze_tol = 1e-3`` is frozen
(not re-optimized) until the final ``a``, where every surviving restart is polished with the
full optimizer settings; once every restart is frozen the schedule jumps to the final ``a``.
Then every traced candidate is *snapped*: coordinates within ``snap_tol = 0.01`` (unit cube)
of the target are set to the target (fixed features are left alone); the candidates are
scored by the acquisition with the **exact** L0 count, and the best one that is not a repeat
of an evaluated or pending point is proposed. Two guards: exact duplicates (within
``dedup_tol`` on every coordinate) and near-repeats for the surrogate (lengthscale-scaled
distance below ``repeat_tol = 0.01``, :mod:`dsbo.surrogates.relevance`: e.g. the evaluated
target corner again, differing only in coordinates the model considers irrelevant). If every
traced candidate is a repeat, the best non-repeat of ``raw_samples`` Sobol points is taken.
L1 and group lasso need no homotopy: one multi-start optimization.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from botorch.optim.homotopy import Homotopy, HomotopyParameter, LogLinearHomotopySchedule
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.sampling import draw_sobol_samples, manual_seed
from torch import Tensor

from dsbo.acquisition.base import History, OptimizerSettings, Proposal
from dsbo.acquisition.plain import OptimizedPolicy
from dsbo.acquisition.sparsity import PENALTIES, SparsityMeasure, is_duplicate, to_unit_cube
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.problems.options import resolve_target
from dsbo.surrogates.relevance import near_repeats

#: Where the homotopy's restarts start (see :class:`SparsityPolicy`).
STARTS = ("sparse", "sobol")
#: Restarts closer than this (unit cube, Euclidean) to a better one are dropped between steps.
PRUNE_TOL = 1e-4


def resolve_sparsity_target(
    target: str | Sequence[float] | Mapping[str, Any] | None, problem: Problem
) -> Tensor:
    """The target ``x^s``: the problem's default point (``None``), ``"zero"`` (lower corner),
    ``"center"``, ``d`` floats in raw coordinates, or ``{name: value}`` in user values
    (parameters it leaves out at the middle of their range)."""
    if target is None:
        return problem.default_point.to(torch.double)
    if isinstance(target, Mapping):
        return torch.tensor(
            problem.space.default(target, where="acquisition.target"), dtype=torch.double
        )
    return resolve_target(target, problem.bounds, problem.name)


def snap_to_target(
    X: Tensor, target: Tensor, bounds: Tensor, tol: float, fixed: Sequence[int] = ()
) -> tuple[Tensor, Tensor]:
    """Set the coordinates of ``X`` within ``tol`` (unit cube) of ``target`` to the target.

    Returns:
        The snapped ``n x d`` points and the number of coordinates snapped per point.
    """
    mask = (to_unit_cube(X, bounds) - to_unit_cube(target, bounds)).abs() < tol
    mask = mask & (X != target)
    if fixed:
        mask[..., list(fixed)] = False
    return torch.where(mask, target.to(X).expand_as(X), X), mask.sum(dim=-1)


def prune_restarts(X: Tensor, values: Tensor, tol: float = PRUNE_TOL) -> Tensor:
    """Indices of the restarts kept: best first, dropping those within ``tol`` of a kept one."""
    kept: list[int] = []
    for i in torch.argsort(values, descending=True).tolist():
        if not kept or torch.cdist(X[i : i + 1], X[kept]).min() > tol:
            kept.append(i)
    return torch.tensor(sorted(kept), dtype=torch.long)


@dataclass
class TraceResult:
    """The final point of every traced restart and what produced it."""

    X: Tensor  # R x d
    restart_ids: Tensor  # R, index of each survivor among the first restarts
    a_values: list[float] = field(default_factory=list)


class SparsityPolicy(OptimizedPolicy):
    """Base of SEBO, IR and ER: a sparsity measure, its homotopy, snapping and the guard.

    Subclasses implement :meth:`acquisition` (the acquisition for the current state of
    ``measure``, e.g. the current ``a``) and may override :meth:`prepare`.

    Args:
        penalty: ``"l0"`` (smooth L0 with homotopy, exact L0 for the final choice), ``"l1"``
            or ``"group"``.
        target: ``None`` (the problem's default point), ``"zero"``, ``"center"`` or ``d``
            floats (raw coordinates).
        groups: Groups of dimension indices (``penalty="group"``).
        a_start, a_end, num_steps: The log-linear homotopy schedule of ``a`` (L0 only).
        num_restarts_homotopy: Restarts traced through the homotopy (L0); default
            ``optimizer.num_restarts``, so both arms of a comparison get the same setting
            (a different value is used, with a warning naming both).
        homotopy_maxiter: L-BFGS-B iterations at each intermediate ``a`` (the first and the
            final ``a`` get ``optimizer.maxiter``); ``None``: ``optimizer.maxiter``.
        freeze_tol: A restart moving less than this (largest coordinate, unit cube) at an
            intermediate ``a`` is not re-optimized until the final ``a``; ``0`` traces every
            restart at every ``a``.
        snap_tol: Coordinates within this distance (unit cube) of the target are snapped onto
            it; ``0`` disables snapping.
        dedup_tol: Candidates within this distance (max-norm, unit cube) of an evaluated or
            pending point are not proposed; ``0`` disables the guard.
        repeat_tol: Candidates within this lengthscale-scaled distance of an evaluated or
            pending point are near-repeats and not proposed (models with lengthscales only);
            ``0`` disables the guard.
        starts: Where the homotopy's restarts start (L0): ``"sparse"`` (default,
            :meth:`homotopy_starts`: Sobol points and perturbed Pareto-front points, each with
            a random subset of coordinates at the target, as Ax does) or ``"sobol"``
            (BoTorch's starts chosen from ``raw_samples`` scored Sobol points).
        optimizer: Optimizer settings (``raw_samples``, ``maxiter``, ``batch_limit``,
            ``mc_samples``, ``fixed_features``).
    """

    #: The homotopy optimizes without the problem's linear parameter constraints.
    takes_parameter_constraints = False

    name = "sparsity"

    def __init__(
        self,
        penalty: str = "l0",
        target: str | Sequence[float] | None = None,
        groups: Sequence[Sequence[int]] | None = None,
        a_start: float = 10**-0.5,
        a_end: float = 1e-3,
        num_steps: int = 30,
        num_restarts_homotopy: int | None = None,
        homotopy_maxiter: int | None = 20,
        freeze_tol: float = 1e-3,
        snap_tol: float = 0.01,
        dedup_tol: float = 1e-6,
        repeat_tol: float = 0.01,
        optimizer: OptimizerSettings | None = None,
        starts: str = "sparse",
    ) -> None:
        super().__init__(optimizer)
        if starts not in STARTS:
            raise ConfigError(
                f"acquisition.options.starts={starts!r}; choose one of {list(STARTS)}"
            )
        self.starts = starts
        if penalty not in PENALTIES:
            raise ConfigError(
                f"acquisition.options.penalty={penalty!r} is unknown; choose one of {list(PENALTIES)}"
            )
        if not (0 < a_end <= a_start):
            raise ConfigError(
                f"acquisition.options: need 0 < a_end <= a_start, got a_start={a_start}, a_end={a_end}"
            )
        for option, value in (
            ("num_steps", num_steps),
            ("num_restarts_homotopy", num_restarts_homotopy),
            ("homotopy_maxiter", homotopy_maxiter),
        ):
            if value is None and option != "num_steps":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"acquisition.options.{option}={value!r} must be an integer >= 1")
        for option, value in (
            ("snap_tol", snap_tol),
            ("dedup_tol", dedup_tol),
            ("freeze_tol", freeze_tol),
            ("repeat_tol", repeat_tol),
        ):
            if isinstance(value, bool) or not (isinstance(value, int | float) and 0 <= value < 1):
                raise ConfigError(f"acquisition.options.{option}={value!r} must be in [0, 1)")
        if (
            penalty == "l0"
            and num_restarts_homotopy is not None
            and num_restarts_homotopy != self.optimizer.num_restarts
        ):
            warnings.warn(
                f"{self.name}: the homotopy traces num_restarts_homotopy={num_restarts_homotopy} "
                f"restarts, not the optimizer's num_restarts={self.optimizer.num_restarts}",
                stacklevel=2,
            )
        if (penalty == "group") != (groups is not None):
            raise ConfigError(
                "acquisition.options.groups is needed with penalty='group' (e.g. groups: "
                f"[[0, 1], [2, 3]]) and only then; got penalty={penalty!r}, groups={groups!r}"
            )
        self.penalty = penalty
        self.target = target
        self.groups = groups
        self.a_start, self.a_end, self.num_steps = float(a_start), float(a_end), num_steps
        self.num_restarts_homotopy = (
            self.optimizer.num_restarts if num_restarts_homotopy is None else num_restarts_homotopy
        )
        self.homotopy_maxiter = homotopy_maxiter
        self.freeze_tol = float(freeze_tol)
        self.snap_tol = float(snap_tol)
        self.dedup_tol = float(dedup_tol)
        self.repeat_tol = float(repeat_tol)

    def check(self, problem: Problem, q: int) -> None:
        super().check(problem, q)
        if problem.space.categorical:
            raise ConfigError(
                f"acquisition {self.name!r}: its sparsity penalty relaxes each parameter continuously, "
                f"which a categorical ({', '.join(problem.space.categorical)}) cannot be; use "
                "qlognei with postprocess: {bonsai: ...} for sparse changes over categoricals"
            )

    def sparsity_target(self, problem: Problem) -> Tensor:
        """The point sparsity is measured from (raw coordinates): the campaign counts each
        proposal's changed parameters from it too."""
        return resolve_sparsity_target(self.target, problem)

    def for_dry_run(self) -> SparsityPolicy:
        """A cheap copy: two homotopy steps from two restarts, and a cheap optimizer."""
        cheap = super().for_dry_run()
        cheap.num_steps = min(self.num_steps, 2)
        cheap.num_restarts_homotopy = min(self.num_restarts_homotopy, 2)
        return cheap

    # ------------------------------------------------------------------ pieces
    def make_measure(self, problem: Problem) -> SparsityMeasure:
        target = resolve_sparsity_target(self.target, problem)
        return SparsityMeasure(
            target, problem.bounds, penalty=self.penalty, a=self.a_start, groups=self.groups
        )

    def homotopy(self, measure: SparsityMeasure) -> Homotopy | None:
        """The homotopy over ``a`` (L0 only), or ``None``."""
        if self.penalty != "l0":
            return None
        schedule = LogLinearHomotopySchedule(self.a_start, self.a_end, self.num_steps)
        return Homotopy([HomotopyParameter(parameter=measure.a, schedule=schedule)])

    def prepare(
        self, model: Model, history: History, problem: Problem, q: int, measure: SparsityMeasure
    ) -> dict[str, Any]:
        """Per-proposal settings shared by every acquisition of the homotopy."""
        return {}

    @abstractmethod
    def acquisition(
        self,
        model: Model,
        history: History,
        problem: Problem,
        measure: SparsityMeasure,
        X_pending: Tensor | None,
        context: dict[str, Any],
    ) -> AcquisitionFunction:
        """The acquisition function for the current state of ``measure``."""

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        """The acquisition under the exact sparsity measure (what candidates are scored by)."""
        measure = self.make_measure(problem)
        measure.exact = True
        context = self.prepare(model, history, problem, q, measure)
        return self.acquisition(model, history, problem, measure, history.X_pending, context)

    # ------------------------------------------------------------------ optimization
    def homotopy_starts(
        self, history: History, problem: Problem, measure: SparsityMeasure, seed: int
    ) -> Tensor:
        """``num_restarts_homotopy x 1 x d`` starting points of the homotopy (as Ax's SEBO):
        half are Sobol points with a random subset of coordinates (a random fraction per point)
        set to the target, half are perturbations (Gaussian, 5% of the range, plus a random
        subset reset to the target) of points on the observed Pareto front of ``(f, -xi)``;
        without observations all are Sobol-based. Fixed features are applied."""
        n = self.num_restarts_homotopy
        lb, ub = problem.bounds
        target = measure.target.to(lb)
        generator = torch.Generator().manual_seed(seed)

        def reset_some(X: Tensor) -> Tensor:
            fraction = torch.rand(X.shape[0], 1, generator=generator, dtype=X.dtype)
            mask = torch.rand(X.shape, generator=generator, dtype=X.dtype) < fraction
            return torch.where(mask, target, X)

        feasible = (
            problem.is_feasible(history.Y)
            if history.X.shape[0]
            else history.X.new_zeros(0, dtype=torch.bool)
        )
        n_front = n // 2 if bool(feasible.any()) else 0
        sobol = draw_sobol_samples(problem.bounds, n=n - n_front, q=1, seed=seed).squeeze(1)
        starts = [reset_some(sobol)]
        if n_front:
            X, Y = history.X[feasible], history.Y[feasible]
            m = problem.num_objectives
            front = X[
                is_non_dominated(
                    torch.cat([Y[:, :m], -measure.exact_value(X).unsqueeze(-1)], dim=-1)
                )
            ]
            picks = front[torch.randint(front.shape[0], (n_front,), generator=generator)]
            noise = (
                0.05 * (ub - lb) * torch.randn(picks.shape, generator=generator, dtype=picks.dtype)
            )
            starts.append(reset_some(torch.minimum(torch.maximum(picks + noise, lb), ub)))
        return self.optimizer.apply_fixed_features(torch.cat(starts)).unsqueeze(-2)

    def trace(
        self,
        make_acqf: Callable[[], AcquisitionFunction],
        measure: SparsityMeasure,
        problem: Problem,
        seed: int,
        starts: Tensor | None = None,
    ) -> TraceResult:
        """Multi-start optimization (L-BFGS-B by default), continued through the homotopy of
        ``a`` for L0, from ``starts`` (``R x 1 x d``) when given.

        At each intermediate ``a`` only the restarts still moving are re-optimized, with at
        most ``homotopy_maxiter`` iterations; the final ``a`` polishes every survivor with the
        full settings (see the module docstring)."""
        opt = self.optimizer
        homotopy = self.homotopy(measure)
        num_restarts = opt.num_restarts if homotopy is None else self.num_restarts_homotopy
        # The traced restarts form one batch: BoTorch's batched L-BFGS-B keeps a separate
        # state and convergence test per restart, and 30 steps x ceil(20 / batch_limit)
        # scipy calls of Python overhead dominated the homotopy (2.3x slower with batches of 4).
        batch_limit = opt.batch_limit if homotopy is None else max(opt.batch_limit, num_restarts)
        opt = dataclasses.replace(opt, batch_limit=batch_limit)
        common = dict(return_best_only=False, retry_on_optimization_warning=False)
        a_values: list[float] = []
        if homotopy is not None:
            homotopy.restart()
            a_values.append(float(measure.a))
        first = common if starts is None else {**common, "batch_initial_conditions": starts}
        if starts is not None:
            num_restarts = starts.shape[0]
        X, values = opt.maximize(
            make_acqf(), problem.bounds, 1, seed, num_restarts=num_restarts, **first
        )
        X, values = X.detach().squeeze(-2), values.detach().reshape(-1)
        ids = torch.arange(X.shape[0])
        if homotopy is None:
            return TraceResult(X=X, restart_ids=ids, a_values=a_values)
        maxiter = (
            opt.maxiter
            if self.homotopy_maxiter is None
            else min(opt.maxiter, self.homotopy_maxiter)
        )
        cheap = dataclasses.replace(opt, maxiter=maxiter)
        frozen = torch.zeros(X.shape[0], dtype=torch.bool)
        for step in range(1, self.num_steps):
            homotopy.step()
            final = step == self.num_steps - 1
            if not final and bool(frozen.all()):
                continue  # nothing moves any more: jump to the final a
            a_values.append(float(measure.a))
            acqf = make_acqf()
            if bool(frozen.any()):  # the frozen restarts' values under the current a
                with torch.no_grad():
                    values[frozen] = acqf(X[frozen].unsqueeze(-2)).reshape(-1)
            keep = prune_restarts(to_unit_cube(X, problem.bounds), values)
            X, values, ids, frozen = X[keep], values[keep], ids[keep], frozen[keep]
            active = torch.ones_like(frozen) if final else ~frozen
            if not bool(active.any()):
                continue  # pruning left only frozen restarts: jump to the final a
            X_new, v_new = (opt if final else cheap).maximize(
                acqf,
                problem.bounds,
                1,
                seed,
                num_restarts=int(active.sum()),
                batch_initial_conditions=X[active].unsqueeze(-2),
                **common,
            )
            X_new, v_new = X_new.detach().squeeze(-2), v_new.detach().reshape(-1)
            move = (
                to_unit_cube(X_new, problem.bounds) - to_unit_cube(X[active], problem.bounds)
            ).abs()
            frozen[active] = move.amax(dim=-1) < self.freeze_tol
            X, values = X.clone(), values.clone()
            X[active], values[active] = X_new, v_new
        return TraceResult(X=X, restart_ids=ids, a_values=a_values)

    def select(
        self,
        acqf: AcquisitionFunction,
        traced: TraceResult,
        seen: Tensor | None,
        problem: Problem,
        measure: SparsityMeasure,
        seed: int,
        model: Model | None = None,
    ) -> tuple[Tensor, dict[str, Any]]:
        """Snap, drop repeats of ``seen`` (:meth:`repeats`) and pick the best candidate under
        ``acqf``."""
        fixed = list((self.optimizer.fixed_features or {}).keys())
        X, snapped = snap_to_target(
            traced.X, measure.target, problem.bounds, self.snap_tol, [int(j) for j in fixed]
        )
        X = problem.round_to_domain(X)
        duplicate, near = self.repeats(X, seen, problem, model)
        num_duplicates, num_near = int(duplicate.sum()), int((near & ~duplicate).sum())
        fallback = bool((duplicate | near).all())
        if fallback:  # every traced restart re-proposes a seen point: score Sobol points
            sobol = draw_sobol_samples(problem.bounds, n=self.optimizer.raw_samples, q=1, seed=seed)
            X = problem.round_to_domain(self.optimizer.apply_fixed_features(sobol.squeeze(1)))
            snapped = torch.zeros(X.shape[0], dtype=torch.long)
            ids = torch.full((X.shape[0],), -1, dtype=torch.long)
            duplicate, near = self.repeats(X, seen, problem, model)
        else:
            ids = traced.restart_ids
        with torch.no_grad():
            values = acqf(X.unsqueeze(-2)).reshape(-1)
        values = values.masked_fill(duplicate | near, -math.inf)
        best = int(torch.argmax(values))
        x = X[best]
        metadata = {
            "acq_value": float(values[best]),
            "penalty": self.penalty,
            "xi": float(measure.exact_value(x)),
            "restart": int(ids[best]),
            "num_traced": int(traced.X.shape[0]),
            "snapped": int(snapped[best]),
            "duplicates_skipped": num_duplicates,
            "near_repeats_skipped": num_near,
            "fallback": "sobol" if fallback else None,
        }
        if traced.a_values:
            metadata["a_values"] = [float(a) for a in traced.a_values]
        return x, metadata

    def repeats(
        self, X: Tensor, seen: Tensor | None, problem: Problem, model: Model | None
    ) -> tuple[Tensor, Tensor]:
        """Two ``n`` masks over the rows of ``X``: exact duplicates of a ``seen`` row (within
        ``dedup_tol`` on every unit-cube coordinate) and near-repeats for ``model``
        (lengthscale-scaled distance below ``repeat_tol``; all false without lengthscales)."""
        duplicate = is_duplicate(X, seen, problem.bounds, self.dedup_tol)
        near = torch.zeros_like(duplicate)
        if model is not None and seen is not None and self.repeat_tol > 0:
            near = near_repeats(model, X, seen, self.repeat_tol)
        return duplicate, near

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        self.check(problem, q)
        # Baseline pruning and initial conditions draw from torch's RNG: seed it per proposal.
        with manual_seed(history.seed):
            return self._propose(model, history, problem, q)

    def _propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        measure = self.make_measure(problem)
        context = self.prepare(model, history, problem, q, measure)
        chosen: list[Tensor] = []
        metadata: list[dict[str, Any]] = []
        for i in range(q):
            pending = _stack(history.X_pending, chosen)

            def make_acqf(pending: Tensor | None = pending) -> AcquisitionFunction:
                return self.acquisition(model, history, problem, measure, pending, context)

            starts = None
            if self.penalty == "l0" and self.starts == "sparse":  # the homotopy's restarts
                starts = self.homotopy_starts(history, problem, measure, history.seed + i)
            traced = self.trace(make_acqf, measure, problem, seed=history.seed + i, starts=starts)
            measure.exact = True
            seen = _stack(history.X, [] if pending is None else [pending])
            x, meta = self.select(
                make_acqf(), traced, seen, problem, measure, history.seed + i, model
            )
            measure.exact = False
            chosen.append(x.unsqueeze(0))
            metadata.append({"acquisition": self.name, **context.get("metadata", {}), **meta})
        X = torch.cat(chosen, dim=0)
        if self.postprocessor is None:
            return Proposal(X=X, metadata=metadata)
        measure.exact = True
        acqf = self.acquisition(model, history, problem, measure, history.X_pending, context)
        processed = self.postprocessor(acqf, X, history, problem, self.optimizer, self.log_scale)
        for meta, extra in zip(metadata, processed.metadata, strict=True):
            meta.update(extra)
        return Proposal(X=problem.round_to_domain(processed.X), metadata=metadata)


def _stack(base: Tensor | None, rows: list[Tensor]) -> Tensor | None:
    parts = ([] if base is None else [base]) + list(rows)
    return torch.cat(parts, dim=0) if parts else None


__all__ = [
    "PRUNE_TOL",
    "STARTS",
    "SparsityPolicy",
    "TraceResult",
    "prune_restarts",
    "resolve_sparsity_target",
    "snap_to_target",
]
