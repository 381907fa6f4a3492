"""Recording what evaluations return: :meth:`TrialOutcomes.tell` (completed, failed, or ended
short: paused by freeze-thaw, stopped at the step budget), and the running-trial handles that
evaluations report to (:meth:`TrialOutcomes.running`). A part of
:class:`~dsbo.campaign.Campaign` (a base class of it, kept in its own module).

A tell applies to the segment it names only (freeze-thaw, :mod:`dsbo.storage.segments`): a
late tell of a segment that has ended changes nothing. A value told for a trial whose step
budget ended short of ``max_steps`` (its reservation is used up) records the trial as
``stopped`` at its last report, as :meth:`RunningTrial.should_stop
<dsbo.campaign.running_trial.RunningTrial.should_stop>` would have, rather than as a full
training (a Lightning fit the callback ended at its reservation returns normally).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsbo.campaign.ledger import STEPS, Ledger
from dsbo.campaign.running_trial import RunningTrial, TrialEvaluator, takes_trial
from dsbo.errors import EvaluationError, StaleSegmentError
from dsbo.problems.base import Problem
from dsbo.storage import Store, Trial
from dsbo.storage.segments import segment_of

if TYPE_CHECKING:
    from dsbo.campaign.early_stopping import EarlyStopping
    from dsbo.campaign.execution import Execution
    from dsbo.campaign.freeze_thaw import FreezeThawStep


class TrialOutcomes:
    """Telling outcomes and handing out running trials (module docstring)."""

    store: Store
    problem: Problem
    ledger: Ledger
    budget: int
    execution: Execution
    early_stopping: EarlyStopping | None
    freeze_thaw: FreezeThawStep | None

    def tell(
        self,
        trial_id: int,
        values: Any = None,
        error: str | BaseException | None = None,
        eval_time: float | None = None,
        segment: int | None = None,
    ) -> Trial:
        """Record the outcome of a pending trial: ``values`` on success, ``error`` on failure.

        ``values`` are in the user's terms (the problem's :class:`~dsbo.space.Outcomes`: a
        minimized objective as it is, ``memory`` for ``"memory <= 8"``) and parsed strictly
        (:meth:`~dsbo.space.Outcomes.to_stored`): malformed
        values are refused and the trial is left untouched, so the right values can still be
        told. Values that are NaN or infinite are recorded as a failure with the reason (the
        evaluation itself failed); the trial is then left out of model fitting. A trial that
        was abandoned is recorded, and counted, while the budget has room. A trial charged
        in measured seconds is settled to ``eval_time`` (:mod:`dsbo.campaign.ledger`).

        ``segment``: the freeze-thaw segment this evaluation ran (the trial's ``thaws`` when
        it was handed out; ``Suggestion.segment``). A late tell of a segment that has ended
        (the trial was paused and thawed since) changes nothing: its value was recorded at the
        pause, and the segment running now is left alone (checked in the store's write
        transaction). In a freeze-thaw campaign a value told before ``max_steps`` pauses the
        trial at its last reported step rather than completing it.

        Raises:
            OutcomeError: if ``values`` are malformed (missing/unknown outcome, wrong length,
                not numbers); nothing is recorded.
            BudgetExhaustedError: for a late result of an abandoned trial once the budget is
                spent; nothing is recorded.
            StoreError: if the trial does not exist or was already told.
        """
        current = self.store.get(trial_id)
        if segment is not None and segment_of(current.metadata) != segment:
            return current  # a late tell of an ended segment
        if current.status in ("stopped", "paused"):  # its value was recorded when it ended early
            return current
        try:
            return self._record_outcome(current, values, error, eval_time, segment)
        except StaleSegmentError:  # thawed between the read above and the write
            return self.store.get(trial_id)

    def _record_outcome(
        self,
        trial: Trial,
        values: Any,
        error: str | BaseException | None,
        eval_time: float | None,
        segment: int | None,
    ) -> Trial:
        """:meth:`tell`'s write: completed, paused (a freeze-thaw segment that ended short of
        ``max_steps``) or failed."""
        if error is None:
            y = self.problem.parse_outcomes(values)
            try:
                self.problem.outcomes.finite_or_error(y)
            except EvaluationError as exc:
                error = exc
            else:
                steps = self._steps_used(trial.id, None)
                if self.freeze_thaw is not None and self.freeze_thaw.ends_short(steps):
                    self.running(trial).pause_at_last_report()
                    return self.store.get(trial.id)
                if steps is not None and self.running(trial).stop_if_budget_spent():
                    return self.store.get(trial.id)
                cost = self.ledger.settle(eval_time, steps)
                self.store.complete(
                    trial.id, y, eval_time=eval_time, budget=self.budget, cost=cost, segment=segment
                )
                return self.store.get(trial.id)
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        cost = self.ledger.settle(eval_time, self._steps_used(trial.id, 0))
        self.store.fail(
            trial.id, message, eval_time=eval_time, budget=self.budget, cost=cost, segment=segment
        )
        return self.store.get(trial.id)

    def _steps_used(self, trial_id: int, without_reports: int | None) -> int | None:
        """The last step ``trial_id`` reported (``without_reports`` if it reported none)."""
        if self.ledger.source != STEPS:
            return None
        curve = self.store.curves([trial_id]).get(trial_id)
        return curve[-1][0] if curve else without_reports

    # ------------------------------------------------------------------ early stopping
    def running(self, trial: Trial | int) -> RunningTrial:
        """The handle an evaluation of ``trial`` (a pending trial or its id) reports to:
        ``report(step, value)`` and ``should_stop()`` (:mod:`dsbo.campaign.early_stopping`)."""
        return RunningTrial(self, trial if isinstance(trial, Trial) else self.store.get(trial))

    def evaluator_for(self, trial: Trial) -> Callable[[Any], Any]:
        """``x -> outcomes`` for ``trial``: the evaluator, given the running trial when it
        takes one (``f(x, trial)``; a problem that can report, the train-run one, only with early stopping)."""
        evaluator, wanted = (
            self.execution.evaluator,
            self.early_stopping is not None or not isinstance(self.execution.evaluator, Problem),
        )
        return (
            TrialEvaluator(evaluator, self.running(trial))
            if wanted and takes_trial(evaluator)
            else evaluator
        )


__all__ = ["TrialOutcomes"]
