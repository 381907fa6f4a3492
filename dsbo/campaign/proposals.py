"""The campaign's two plain ask paths, as parts that :class:`~dsbo.campaign.Campaign` composes:
the initial design (:class:`InitialDesign`) and the model's proposal with its random fallback
(:class:`ModelProposal`). The other two paths live beside them with the same shape: contexts
(:class:`~dsbo.campaign.contextual.ContextStep`) and freeze-thaw
(:class:`~dsbo.campaign.freeze_thaw.FreezeThawStep`).

A path returns :class:`Proposed` points (or ``None`` when nothing affordable is left) and the
campaign commits them (:meth:`Campaign.commit <dsbo.campaign.Campaign.commit>`): validated,
changes from the default counted, costs charged, stored as pending, all under the proposal lock.

**Stopped and paused trials inform every proposal.** A trial an early-stopping rule stopped (or
freeze-thaw paused, or an Optuna pruner pruned) has no final outcome. Whatever the
early-stopping model fits (``"final"`` fits the completed trials only), each stopped or paused
point the surrogate was not fitted on is handed to the acquisition as a *pending* point: its
final value is unknown, which is exactly what a pending point is, so the acquisition integrates
over it (qLogNEI's fantasies, Ament et al. 2023) and a new point next to it gains little. Then
:func:`away_from_ended` replaces any candidate still within the repeat tolerance (the optimizer's
``min_distance`` in the unit cube's max-norm) of a stopped or paused trial by the nearest point
of a scrambled Sobol set that is not: a thaw is the only way back to a stopped or paused
configuration. Without it, the README's recipe (ASHA, 27 epochs, 270-epoch budget, curves that
never cross) repeated an earlier trial in 96 of 100 BO proposals (issue 57).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gpytorch
import torch
from torch import Tensor

from dsbo.acquisition import History, make_policy
from dsbo.acquisition.exploration import explored
from dsbo.acquisition.sparsity import DUPLICATE_TOLERANCE, is_duplicate
from dsbo.campaign.early_stopping import plan_steps, training_data
from dsbo.campaign.ledger import completed_eval_times
from dsbo.campaign.outcome_warping import warp_outcomes
from dsbo.surrogates import warm_start

if TYPE_CHECKING:
    from dsbo.acquisition import OptimizerSettings
    from dsbo.campaign.campaign import Campaign
    from dsbo.problems.base import Problem
    from dsbo.storage import Store

#: GPyTorch switches from Cholesky to conjugate gradients above 800 points by default; a
#: campaign keeps its exact GPs exact (and their timings honest) up to this size.
EXACT_CHOLESKY_SIZE = 100_000
#: Trial statuses whose configurations are never proposed again as new trials.
ENDED_EARLY = ("stopped", "paused")


@dataclass
class Proposed:
    """Points an ask path proposes, before the campaign commits them.

    Attributes:
        X: ``q x d`` points (raw coordinates, in the domain).
        generator: What proposed them (``"sobol-init"``, ``"qlognei"``, ...), stored per trial.
        metadata: One dict per point, stored with its trial.
        fit_time, acq_time: Seconds the surrogate fit and the acquisition took.
        fit_states: The surrogate's fit states, kept for the next fit's warm start.
    """

    X: Tensor
    generator: str
    metadata: list[dict[str, Any]]
    fit_time: float = 0.0
    acq_time: float = 0.0
    fit_states: list[Any] = field(default_factory=list)


class InitialDesign:
    """The initial design's next points: the default point first (``include_default``, a batch
    of its own), then scrambled Sobol points, skipping those a cost budget cannot pay for
    (:meth:`~dsbo.campaign.ledger.Ledger.design_points`)."""

    def applies(self, campaign: Campaign) -> bool:
        """Whether the design still has points to give (imported trials take their place)."""
        return campaign.store.budget_used() < campaign.design_size()

    def propose(self, campaign: Campaign, q: int) -> Proposed | None:
        """Up to ``q`` design points; ``None`` when none left is affordable."""
        store, ledger = campaign.store, campaign.ledger
        n_left = campaign.design_size() - store.budget_used()
        first = campaign.include_default and ledger.cursor(store) == 0
        indices = ledger.design_points(store, 1 if first else min(q, n_left))
        if not indices:
            return None
        points = campaign.optimizer.apply_fixed_features(ledger.points(indices))
        X = campaign.problem.round_to_domain(points)
        generator = "default" if first and indices[0] == 0 else "sobol-init"
        segment = campaign.freeze_thaw.first_segment() if campaign.freeze_thaw else {}
        metadata = [{"design_index": i, **segment} for i in indices]
        return Proposed(X, generator, metadata)


class ModelProposal:
    """The policy's proposal on the fitted surrogate, conditioned on every pending trial and on
    the stopped and paused ones the surrogate was not fitted on (module docstring); scrambled
    Sobol points while fewer than two trials can be fitted (generator ``"sobol-fallback"``) or
    for a policy without a model (``"sobol"``)."""

    def propose(self, campaign: Campaign, q: int, seed: int) -> Proposed:
        """``q`` points from the policy (or the fallback), away from stopped and paused trials."""
        store, problem, policy = campaign.store, campaign.problem, campaign.policy
        X_done, Y_done = training_data(store, campaign.early_stopping, problem.dim)
        Y_done = warp_outcomes(Y_done, problem.num_objectives, campaign.outcome_warping)
        ended = unfitted_ended(store, X_done)
        pending = _points([t.x for t in store.trials("pending")], ended)
        if not policy.needs_model or X_done.shape[0] < 2:
            fallback = make_policy("sobol", {}, campaign.optimizer)
            history = History(X_done, Y_done, X_pending=pending, seed=seed)
            proposal = fallback.propose(None, history, problem, q)
            generator = "sobol" if not policy.needs_model else "sobol-fallback"
            X, metadata = away_from_ended(proposal.X, proposal.metadata, store, campaign, seed)
            return Proposed(X, generator, metadata)
        torch.manual_seed(seed)
        t0, c0 = time.perf_counter(), time.process_time()
        model = campaign.fit_model(X_done, Y_done)
        fit_time, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
        fit_states = getattr(model, "fit_states", [])
        history = History(
            X=X_done,
            Y=Y_done,
            X_pending=pending,
            seed=seed,
            t=X_done.shape[0],
            n_design=min(campaign.design_size(), X_done.shape[0]),
            eval_times=completed_eval_times(store),
            cost_left=None if campaign.budget_cost is None else campaign.ledger.left(store),
        )
        t0, c0 = time.perf_counter(), time.process_time()
        with gpytorch.settings.max_cholesky_size(EXACT_CHOLESKY_SIZE):
            proposal = policy.propose(model, history, problem, q)
        acq_time = time.perf_counter() - t0
        X, metadata = away_from_ended(proposal.X, proposal.metadata, store, campaign, seed)
        metadata = plan_steps(metadata, campaign.early_stopping)
        extra: dict[str, Any] = {
            "fit_cpu_time": fit_cpu,
            "acq_cpu_time": time.process_time() - c0,
        }
        if warm_start.states_to_json(fit_states):
            extra["fit_start"] = [None if f is None else f.start for f in fit_states]
        rows = getattr(model, "training_rows", None)
        if rows is not None:  # the trials the surrogate was fitted on (subset selection)
            ids = [t.id for t in store.trials("completed")]
            extra["fitted_trials"] = [ids[i] for i in rows]
        metadata = [dict(m, **extra) for m in metadata]
        generator = getattr(policy, "name", type(policy).__name__) + explored(metadata)
        return Proposed(X, generator, metadata, fit_time, acq_time, fit_states)


def unfitted_ended(store: Store, X_fitted: Tensor) -> Tensor | None:
    """The stopped and paused trials' points (``k x d``) that are not rows of ``X_fitted``
    (the surrogate's training inputs), ``None`` if there are none."""
    ended = [t.x for t in store.trials(ENDED_EARLY)]
    if not ended:
        return None
    points = torch.tensor(ended, dtype=torch.double)
    if X_fitted.numel():
        fitted = X_fitted.reshape(-1, points.shape[1]).to(points)
        points = points[~(torch.cdist(points, fitted, p=float("inf")) == 0).any(dim=-1)]
    return points if points.shape[0] else None


def _points(rows: list[list[float]], extra: Tensor | None) -> Tensor | None:
    """``rows`` (pending points) stacked with ``extra`` (``None`` when both are empty)."""
    parts = [torch.tensor(rows, dtype=torch.double)] if rows else []
    parts += [extra] if extra is not None else []
    return torch.cat(parts) if parts else None


def repeat_tolerance(optimizer: OptimizerSettings) -> float:
    """The distance (unit cube, max-norm) within which a candidate repeats a trial: the
    optimizer's ``min_distance``, at least :data:`~dsbo.acquisition.sparsity.DUPLICATE_TOLERANCE`."""
    return max(optimizer.min_distance, DUPLICATE_TOLERANCE)


def away_from_ended(
    X: Tensor, metadata: list[dict[str, Any]], store: Store, campaign: Campaign, seed: int
) -> tuple[Tensor, list[dict[str, Any]]]:
    """``X`` with every row within :func:`repeat_tolerance` of a stopped or paused trial (or of
    an earlier row it replaced) swapped for the nearest point (unit-cube max-norm) of a scrambled
    Sobol set of the optimizer's ``raw_samples`` points (snapped, fixed features applied) that
    is not; metadata ``ended_repeat_replaced``. A row is kept when no such point is left (a
    small discrete space whose every configuration has ended)."""
    ended = [t.x for t in store.trials(ENDED_EARLY)]
    if not ended or X.shape[0] == 0:
        return X, metadata
    problem, optimizer = campaign.problem, campaign.optimizer
    avoid = torch.tensor(ended, dtype=X.dtype)
    tol = repeat_tolerance(optimizer)
    near = is_duplicate(X, avoid, problem.bounds, tol)
    if not near.any():
        return X, metadata
    rows, metadata = list(X), [dict(m) for m in metadata]
    candidates = _design(problem, optimizer, seed).to(X)
    for i in torch.nonzero(near).reshape(-1).tolist():
        free = candidates[~is_duplicate(candidates, avoid, problem.bounds, tol)]
        if free.shape[0] == 0:
            continue
        distance = _unit_distance(free, rows[i].unsqueeze(0), problem.bounds)
        rows[i] = free[int(torch.argmin(distance))]
        metadata[i]["ended_repeat_replaced"] = True
        avoid = torch.cat([avoid, rows[i].unsqueeze(0)])
    return torch.stack(rows), metadata


def _design(problem: Problem, optimizer: OptimizerSettings, seed: int) -> Tensor:
    """The replacement candidates of :func:`away_from_ended`."""
    return problem.sobol_design(optimizer.raw_samples, seed, optimizer.apply_fixed_features)


def _unit_distance(A: Tensor, b: Tensor, bounds: Tensor) -> Tensor:
    """Max-norm distances of the rows of ``A`` to the row ``b`` in the unit cube."""
    width = (bounds[1] - bounds[0]).to(A).clamp_min(1e-12)
    return ((A - b) / width).abs().amax(dim=-1)


__all__ = [
    "ENDED_EARLY",
    "EXACT_CHOLESKY_SIZE",
    "InitialDesign",
    "ModelProposal",
    "Proposed",
    "away_from_ended",
    "repeat_tolerance",
    "unfitted_ended",
]
