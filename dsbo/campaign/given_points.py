"""Trials whose points the user gives rather than the policy: observations made outside the
campaign (:meth:`GivenPoints.attach`, charged like a proposal), trials brought in from another
study (:meth:`GivenPoints.import_trials`, prior data charged nothing), points to evaluate
before any proposal (:meth:`GivenPoints.enqueue`, Optuna's ``enqueue_trial``), and parameters
held fixed in one ask (``Campaign.ask(fixed=...)``). A part of
:class:`~dsbo.campaign.Campaign`, kept in a module of its own; each given point is validated
against the problem first."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from dsbo.campaign.outcome_warping import warp_outcomes
from dsbo.campaign.validation import with_fixed_features
from dsbo.errors import BudgetExhaustedError, ConfigError, DsboError
from dsbo.space.outcomes import to_number
from dsbo.storage import IMPORTED

if TYPE_CHECKING:
    from dsbo.storage import Trial

logger = logging.getLogger(__name__)

#: The store metadata key of the related tasks' trials (:meth:`GivenPoints.add_related_task`).
RELATED_KEY = "related_tasks"

#: What an imported trial may be: finished (``completed``, ``failed``, ``stopped``: pruned
#: early, with its last value) or still running elsewhere (``pending``: tell it later).
IMPORT_STATUSES = ("completed", "failed", "stopped", "pending")


@dataclass(frozen=True)
class ImportedTrial:
    """A trial run outside this campaign (another tool's study, a CSV row), in the user's terms.

    ``params`` names every searched parameter (``{name: value}``); ``values`` are the
    outcomes as the objective function returns them (needed when ``completed``; a ``stopped``
    trial's last value, if known); ``error`` the failure of a ``failed`` trial; ``curve`` the
    intermediate values ``[(step, value), ...]`` in the objective's direction; ``source`` where
    it came from (kept in the trial's metadata, e.g. ``"optuna:my-study#12"``).
    """

    params: Mapping[str, Any]
    values: Any = None
    status: str = "completed"
    error: str | None = None
    curve: Sequence[tuple[int, float]] = ()
    source: str | None = None


@dataclass
class ImportResult:
    """What :meth:`GivenPoints.import_trials` took: the stored trials (in the order of the
    accepted rows) and the refused rows as ``(row index, reason)``."""

    trials: list[Trial] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)


class GivenPoints:
    """The :class:`~dsbo.campaign.Campaign` methods for points the user gives."""

    def attach(
        self,
        x: Tensor | Sequence[float] | Mapping[str, Any],
        values: Any,
        generator: str = "manual",
    ) -> Trial:
        """Add an observation made outside the campaign (e.g. the default configuration) at the
        model point ``x`` or the named user values ``{name: value}``, charged like a proposal
        (:meth:`~dsbo.campaign.ledger.Ledger.charge`; 0 where its cost is unusable).

        Raises:
            ProblemError: if ``x`` has the wrong dimension or lies outside the bounds.
            EvaluationError: if ``values`` is not a finite outcome vector.
        """
        X = self._point(x, "parameters")
        y = self.problem.parse_outcomes(values)
        self.problem.outcomes.finite_or_error(y)
        trial_id = self._add_given(X, generator, {"attached": True})
        self.store.complete(trial_id, y)
        return self.store.get(trial_id)

    def import_trials(
        self, rows: Iterable[ImportedTrial | Mapping[str, Any]], strict: bool = False
    ) -> ImportResult:
        """Bring in trials run elsewhere as prior data: fitted like the campaign's own, never
        charged to the budget (generator ``"imported"``, cost 0), and each completed one takes
        the place of an initial-design point (with at least ``n_init`` of them the first
        proposal comes from the model). A ``pending`` row is a trial running elsewhere: the
        proposals avoid it, and :meth:`tell` records its outcome later.

        Each row (an :class:`ImportedTrial` or a mapping of its fields) is checked against the
        space and the outcomes before anything is written; a row that does not fit is refused
        with the reason (``strict=True``: a :class:`~dsbo.errors.ConfigError` naming the first
        one, and nothing is imported).
        """
        accepted: list[
            tuple[Tensor, ImportedTrial, list[float] | None, list[tuple[int, float]]]
        ] = []
        refused: list[tuple[int, str]] = []
        for index, row in enumerate(rows):
            try:
                accepted.append(self._imported_row(row))
            except DsboError as exc:
                if strict:
                    raise ConfigError(f"imported row {index}: {exc}") from None
                refused.append((index, str(exc)))
        if refused:
            logger.warning(
                "%d imported row(s) refused; the first, at position %d of the rows given: %s",
                len(refused),
                *refused[0],
            )
        result = ImportResult(refused=refused)
        if not accepted:
            return result
        metadata = [
            {"imported": True, **({"source": r.source} if r.source else {})}
            for _, r, _, _ in accepted
        ]
        ids = self.store.add_trials(
            torch.cat([x for x, _, _, _ in accepted]), IMPORTED, metadata=metadata, cost=0.0
        )
        for trial_id, (_, row, y, curve) in zip(ids, accepted, strict=True):
            for step, value in curve:
                self.store.report(trial_id, step, value)
            if row.status == "completed":
                self.store.complete(trial_id, y)
            elif row.status == "failed":
                self.store.fail(trial_id, row.error or "failed in the imported study")
            elif row.status == "stopped":
                last = (
                    y
                    if y is not None
                    else (
                        [curve[-1][1]] if curve and len(self.problem.outcome_names) == 1 else None
                    )
                )
                self.store.stop(trial_id, last, reason=row.error or "stopped in the imported study")
        result.trials = [self.store.get(i) for i in ids]
        return result

    def _imported_row(
        self, row: ImportedTrial | Mapping[str, Any]
    ) -> tuple[Tensor, ImportedTrial, list[float] | None, list[tuple[int, float]]]:
        """One row checked: its model point, stored outcomes and stored curve."""
        if isinstance(row, Mapping):
            unknown = set(row) - set(ImportedTrial.__dataclass_fields__)
            if unknown:
                raise ConfigError(
                    f"unknown field(s) {sorted(unknown)}; an imported trial has {list(ImportedTrial.__dataclass_fields__)}"
                )
            row = ImportedTrial(**row)
        if row.status not in IMPORT_STATUSES:
            raise ConfigError(
                f"status {row.status!r} cannot be imported; use one of {', '.join(IMPORT_STATUSES)}"
            )
        if not isinstance(row.params, Mapping):
            raise ConfigError(f"params must be a mapping {{name: value}}, got {row.params!r}")
        x = self._point(row.params, "imported parameters")
        y = None
        if row.values is not None and row.status in ("completed", "stopped"):
            parsed = self.problem.parse_outcomes(row.values)
            self.problem.outcomes.finite_or_error(parsed)
            y = parsed
        elif row.status == "completed":
            raise ConfigError("a completed trial needs its values")
        objective = self.problem.outcomes.objectives[0]
        curve, last = [], -1
        for step, value in row.curve:
            if isinstance(step, bool) or not isinstance(step, int) or step <= last:
                raise ConfigError(
                    f"curve steps must be increasing integers, got {step!r} after {last}"
                )
            number = to_number(value, f"{objective.name} at step {step}")
            if not math.isfinite(number):
                raise ConfigError(
                    f"curve value at step {step} is {number}: intermediate values must be finite"
                )
            curve.append((step, objective.sign * number + 0.0))
            last = step
        return x, row, y, curve

    def add_related_task(
        self, name: str, rows: Iterable[ImportedTrial | Mapping[str, Any]], strict: bool = False
    ) -> ImportResult:
        """Warm-start from a related task: the completed trials of an earlier campaign on other
        data, or of another version of the system, over the same space and outcomes (rows as
        for :meth:`import_trials`). While any are stored the surrogate is a multi-task GP over
        this campaign's trials (task 0) and each related task's, read as this task
        (:mod:`dsbo.surrogates.multi_task`: the tasks' correlation is learned, so a task that
        does not predict this one is discounted by the data). Related trials are not trials of
        this campaign: never charged, never its best, not in its history; they are kept in the
        store's metadata (a resumed campaign has them) under ``name``, added to what the name
        holds. Only completed rows are used; any other is refused with the reason.

        Raises:
            ConfigError: for an empty name, a contextual campaign or the fidelity model of early
                stopping (which fit models of their own), or with ``strict`` a refused row.
        """
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"a related task needs a name, got {name!r}")
        if getattr(self, "context_step", None) is not None or (
            self.early_stopping is not None and self.early_stopping.model == "fidelity"
        ):
            raise ConfigError(
                "related tasks warm-start the campaign's own surrogate; a contextual campaign or the "
                "fidelity model of early stopping fits a model of its own"
            )
        result = ImportResult()
        X, Y = [], []
        for index, row in enumerate(rows):
            try:
                x, checked, y, _ = self._imported_row(row)
                if checked.status != "completed":
                    raise ConfigError(
                        f"status {checked.status!r}: only completed trials of a related task are used"
                    )
            except DsboError as exc:
                if strict:
                    raise ConfigError(f"related task {name!r}, row {index}: {exc}") from None
                result.refused.append((index, str(exc)))
                continue
            X.append(x.reshape(-1).tolist())
            Y.append(y)
        related = dict(self.store.get_meta(RELATED_KEY) or {})
        held = related.get(name, {"x": [], "y": []})
        related[name] = {"x": held["x"] + X, "y": held["y"] + Y}
        if X:
            self.store.set_meta(RELATED_KEY, related)
        return result

    def _related_model(self, X: Tensor, Y: Tensor) -> Any:
        """The multi-task GP over this campaign's ``(X, Y)`` and the related tasks' trials
        (their outcomes warped as this campaign's, each task on its own); ``None`` without
        related tasks or with fewer than two trials of this campaign."""
        related = self.store.get_meta(RELATED_KEY) or {}
        if not related or X.shape[0] < 2:
            return None
        from dsbo.surrogates.multi_task import fit_multi_task_gp

        Xs, Ys = [X], [Y]
        for name in sorted(related):
            Xs.append(torch.tensor(related[name]["x"], dtype=torch.double))
            Ys.append(
                warp_outcomes(
                    torch.tensor(related[name]["y"], dtype=torch.double),
                    self.problem.num_objectives,
                    self.outcome_warping,
                )
            )
        return fit_multi_task_gp(Xs, Ys, self.problem.bounds)

    def design_size(self) -> int:
        """Initial-design points still to propose in all: ``n_init`` (+ the default point), less
        one for each imported trial the surrogate is fitted on (completed ones; stopped ones too
        when the early-stopping model fits stopped trials: ``"last"``, ``"bohb"``,
        ``"fidelity"``, e.g. an Optuna study's pruned trials)."""
        n_design = self.n_init + self.include_default
        if n_design == 0:
            return 0
        fitted = ["completed"]
        if self.early_stopping is not None and self.early_stopping.model != "final":
            fitted.append("stopped")
        imported = sum(t.generator == IMPORTED for t in self.store.trials(fitted))
        return max(0, n_design - imported)

    def add_design_point(self, index: int) -> Trial:
        """The ``index``-th point of the campaign's initial design (:meth:`design_sequence`,
        fixed features applied, rounded to the domain) as a pending trial of generator
        ``"sobol-init"``, charged like a proposal: for a driver that numbers the trials itself,
        so that trial ``k`` takes design point ``k`` and workers sharing its numbering never
        repeat a point (Optuna's sampler, :mod:`dsbo.integrations.optuna`).

        Raises:
            ConfigError: for an index that is not an integer >= 0.
            BudgetExhaustedError: if the budget has no room left.
        """
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ConfigError(f"a design point's index must be an integer >= 0, got {index!r}")
        X = self.problem.round_to_domain(
            self.optimizer.apply_fixed_features(self.design_sequence(index + 1)[index:])
        )
        X = self.problem.validate(X, what="x")
        costs, errors = self.ledger.charge(self.problem, X, [{}], self.store)
        [trial_id] = self.store.add_trials(
            X,
            "sobol-init",
            metadata=[{"design_index": index}],
            budget=self.budget,
            worker=self.worker,
            cost=[0.0 if errors[0] else costs[0]],
            budget_cost=self.budget_cost,
        )
        return self.store.get(trial_id)

    def enqueue(self, x: Tensor | Sequence[float] | Mapping[str, Any]) -> Trial:
        """A point to evaluate before any proposal (Optuna's ``enqueue_trial``), given as for
        :meth:`attach`: committed as a pending trial (generator ``"enqueued"``), charged and
        counted like a proposal (the initial design takes that many fewer Sobol points);
        ``run()`` evaluates it first.

        Raises:
            ProblemError / ConfigError: if ``x`` is not a point of the problem.
            BudgetExhaustedError: if the budget has no room left.
        """
        X = self._point(x, "enqueued parameters")
        if self.remaining < 1:
            raise BudgetExhaustedError(
                f"the budget of {self.budget} evaluations is spent: nothing more can be enqueued"
            )
        return self.store.get(self._add_given(X, "enqueued", {"enqueued": True}))

    def _point(self, x: Tensor | Sequence[float] | Mapping[str, Any], what: str) -> Tensor:
        if isinstance(x, Mapping):  # named user values
            x = self.problem.point(dict(x), what=what)
        return self.problem.validate(
            torch.as_tensor(x, dtype=torch.double).reshape(1, -1), what="x"
        )

    def _add_given(self, X: Tensor, generator: str, meta: dict[str, Any]) -> int:
        """A trial at a point the user gave, charged like a proposal (0 where its cost is unusable)."""
        costs, errors = self.ledger.charge(self.problem, X, [meta], self.store)
        [trial_id] = self.store.add_trials(
            X,
            generator,
            metadata=[meta],
            budget=self.budget,
            worker=self.worker,
            cost=[0.0 if e else c for c, e in zip(costs, errors, strict=True)],
            budget_cost=self.budget_cost,
        )
        return trial_id

    @contextlib.contextmanager
    def _fixed_for_ask(self, fixed: Mapping[str, Any] | None) -> Iterator[None]:
        """The campaign's and its policy's optimizer settings with ``fixed`` added, for one ask."""
        if fixed is None:
            yield
            return
        saved = self.optimizer, getattr(self.policy, "optimizer", None)
        self.optimizer = with_fixed_features(self.optimizer, fixed, self.problem)
        if saved[1] is not None:
            self.policy.optimizer = self.optimizer  # type: ignore[attr-defined]
        try:
            yield
        finally:
            self.optimizer = saved[0]
            if saved[1] is not None:
                self.policy.optimizer = saved[1]  # type: ignore[attr-defined]
