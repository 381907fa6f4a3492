"""A trial while it is evaluated: what an evaluation reports to and asks whether to stop
(:class:`RunningTrial`, made by :meth:`Campaign.running <dsbo.campaign.Campaign.running>`), and
how an evaluator that takes the trial is called (:class:`TrialEvaluator`, :func:`takes_trial`).

Every report is committed to the store at once, for the segment the evaluation runs (a
freeze-thaw trial thawed since refuses it, :mod:`dsbo.storage.segments`); every decision is the
campaign's early-stopping settings' (:mod:`dsbo.campaign.early_stopping`), read from the stored
curves. Under a budget in steps a trial never trains past its reservation: :meth:`RunningTrial.should_stop`
says stop once the next report (the last one plus the trial's reporting interval) would pass it.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dsbo.errors import ReportError, TrialStoppedError
from dsbo.space.outcomes import to_number
from dsbo.stopping import Decision
from dsbo.storage.curves import as_step
from dsbo.storage.segments import segment_of

if TYPE_CHECKING:
    from dsbo.campaign.campaign import Campaign
    from dsbo.storage import Trial


class RunningTrial:
    """A trial while it is evaluated: what an evaluation reports to, and asks whether to stop
    (module docstring). Made by :meth:`Campaign.running <dsbo.campaign.Campaign.running>`.

    Attributes:
        id: The trial's id in the store.
        params: Its named parameter values.
        stopped: Whether it was stopped (then ``reason`` says why).
    """

    def __init__(self, campaign: Campaign, trial: Trial) -> None:
        self.id = trial.id
        self.params = campaign.problem.params(trial.x)
        self._campaign = campaign
        self._started = time.perf_counter()
        curve = campaign.store.curves([trial.id]).get(trial.id, [])
        #: The last step stored before this evaluation began (a retry's replays up to it are ignored).
        self.resumed_from: int | None = curve[-1][0] if curve else None
        self._last: tuple[int, float] | None = curve[-1] if curve else None
        #: The step of the report before the last one (0 before two reports): the interval.
        self._previous: int = curve[-2][0] if len(curve) > 1 else 0
        #: The freeze-thaw segment this evaluation runs (the trial's ``thaws`` when handed out).
        self.segment = segment_of(trial.metadata)
        self.stopped = trial.status in ("stopped", "paused")
        #: Whether it was paused (freeze-thaw: thawed later, it is evaluated again).
        self.paused = trial.status == "paused"
        self.reason: str | None = trial.error if self.stopped else None
        #: The last decision :meth:`should_stop` took (``None`` before any).
        self.decision: Decision | None = None
        self._max_steps = (
            None if campaign.early_stopping is None else campaign.early_stopping.max_steps
        )

    @property
    def user_attrs(self) -> dict[str, Any]:
        """What the evaluation kept with the trial (:meth:`set_user_attr`), read from the store."""
        return dict(self._campaign.store.get(self.id).metadata.get("user_attrs", {}))

    def set_user_attr(self, key: str, value: Any) -> None:
        """Keep a JSON value with the trial (metadata ``user_attrs``, Optuna's name; committed at
        once), e.g. where its checkpoints are, so that a thaw or a retry resumes from them.

        Raises:
            ReportError: for a key that is not a string or a value JSON cannot write.
        """
        import json

        if not isinstance(key, str) or not key:
            raise ReportError(
                f"trial {self.id}: a user attribute's key must be a non-empty string, got {key!r}"
            )
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ReportError(
                f"trial {self.id}: user attribute {key!r} must be JSON ({exc})"
            ) from None
        self._campaign.store.update_metadata(self.id, user_attrs={**self.user_attrs, key: value})

    @property
    def last_step(self) -> int | None:
        """The last step reported (in this evaluation or before a retry), ``None`` before any."""
        return None if self._last is None else self._last[0]

    @property
    def reserved_steps(self) -> int | None:
        """The steps this trial may train in all under a budget in steps (its reservation,
        read from the store; ``None`` without such a budget). A trial never trains past it:
        :meth:`should_stop` says stop when the next report would (:meth:`report_interval`)."""
        reserved = self._campaign.ledger.reserved_steps(self._campaign.store.get(self.id))
        return None if reserved is None else int(math.floor(reserved + 1e-9))

    def report_interval(self) -> int:
        """Steps between this trial's last two reports (its first report counted from step 0):
        where the next report is expected, for a function that validates every ``k`` epochs
        or a Trainer that reports its ``global_step``."""
        return 0 if self._last is None else self._last[0] - self._previous

    def report(self, step: int, value: Any) -> None:
        """Record the objective's ``value`` (the user's direction) at ``step``; committed at once.

        Raises:
            TrialStoppedError: if the trial was stopped.
            ReportError: for a step that does not come after the last one, or a value that is
                not a finite number (inside an evaluation: a failed trial, with the message).
            OutcomeError: for a value that is not a number.
        """
        if self.stopped:
            raise TrialStoppedError(
                f"trial {self.id} was stopped ({self.reason}); it takes no more values"
            )
        step = as_step(step, self.id)
        objective = self._campaign.problem.outcomes.objectives[0]
        number = to_number(value, objective.name)
        if self.resumed_from is not None and step <= self.resumed_from:
            return  # a replay after a retry: the stored value stays
        if self._max_steps is not None and step > self._max_steps:
            raise ReportError(
                f"trial {self.id}: step {step} is past max_steps={self._max_steps}, a full trial"
            )
        stored = objective.sign * number + 0.0 if math.isfinite(number) else number
        self._campaign.store.report(self.id, step, stored, segment=self.segment)
        self._previous = self._last[0] if self._last is not None else 0
        self._last = (step, stored)

    def should_stop(self) -> bool:
        """Whether the trial should stop now: the rule's decision from the stored curves, or a
        budget in steps that this trial's reservation ends. A ``True`` is recorded at once
        (status ``stopped``) and stays ``True``."""
        if self.stopped:
            return True
        campaign = self._campaign
        settings = campaign.early_stopping
        if settings is None or self._last is None:
            return False
        if settings.max_steps is not None and self._last[0] >= settings.max_steps:
            self.decision = Decision(False, f"fully trained: step {self._last[0]} is max_steps")
            return False
        trial = campaign.store.get(self.id)
        reserved, planned = (
            campaign.ledger.reserved_steps(trial),
            trial.metadata.get("planned_steps"),
        )
        full, until = settings.max_steps, trial.metadata.get("until_step")
        if (
            settings.freeze_thaw is not None
        ):  # a segment ends where it was given steps to (its reservation)
            if until is None or self._last[0] < until:
                self.decision = Decision(False, f"freeze-thaw: given steps to {until}")
                return False
            self.decision = Decision(
                True, f"freeze-thaw: paused at step {self._last[0]} (it was given steps to {until})"
            )
            self._stop(self.decision.reason, paused=True)
            return True
        if planned is not None and full is not None and self._last[0] >= planned and planned < full:
            decision = Decision(
                True, f"multi-fidelity: the proposal planned {planned} of {full} steps"
            )
        elif (spent := self._budget_spent(reserved, full)) is not None:
            decision = spent
        else:
            decision = settings.decide(
                campaign.store, self.id, campaign.problem.outcomes.objectives[0].sign
            )
        self.decision = decision
        if decision.stop:
            self._stop(decision.reason)
        return decision.stop

    def _budget_spent(self, reserved: float | None, full: int | None) -> Decision | None:
        """A stop when this trial's reservation, short of a full trial, ends before its next
        report (the last step plus :meth:`report_interval`); ``None`` otherwise."""
        if reserved is None or full is None or reserved >= full or self._last is None:
            return None
        if self._last[0] + self.report_interval() <= reserved:
            return None
        return Decision(
            True, f"the step budget is spent: this trial had {reserved:g} of its {full} steps"
        )

    def stop_if_budget_spent(self) -> bool:
        """Record the trial as stopped if its step budget ended short of a full trial (its
        evaluation returned there: e.g. a Lightning fit that the callback ended at its
        reservation); whether it did. A trial that used its reservation is not a full training."""
        settings = self._campaign.early_stopping
        if self.stopped or settings is None:
            return self.stopped
        reserved = self._campaign.ledger.reserved_steps(self._campaign.store.get(self.id))
        decision = self._budget_spent(reserved, settings.max_steps)
        if decision is None:
            return False
        self.decision = decision
        self._stop(decision.reason)
        return True

    def _stop(self, reason: str, paused: bool = False) -> None:
        campaign = self._campaign
        single = (
            not campaign.problem.is_multi_objective and not campaign.problem.outcomes.constraints
        )
        y = [self._last[1]] if single and self._last is not None else None
        seconds, cost = (
            time.perf_counter() - self._started,
            campaign.ledger.settle(None, steps=self.last_step or 0),
        )
        if paused:
            campaign.store.pause(
                self.id, y, eval_time=seconds, cost=cost, reason=reason, segment=self.segment
            )
        else:
            campaign.store.stop(
                self.id,
                y,
                eval_time=seconds,
                budget=campaign.budget,
                cost=cost,
                reason=reason,
                segment=self.segment,
            )
        self.stopped, self.paused, self.reason = True, paused, reason

    def pause_at_last_report(self) -> None:
        """Pause the trial at its last report: a freeze-thaw evaluation that returned before
        ``max_steps`` ended its segment (:meth:`Campaign.tell <dsbo.campaign.Campaign.tell>`)."""
        self._stop(
            f"freeze-thaw: paused at step {self.last_step} (the evaluation returned)", paused=True
        )


def takes_trial(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is called with the running trial as its second argument
    (``f(params, trial)`` / ``f(x, trial)``): it says so (``takes_trial = True``), or it has a
    second positional parameter without a default."""
    flag = getattr(function, "takes_trial", None)
    if isinstance(flag, bool):
        return flag
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].default is inspect.Parameter.empty


class TrialEvaluator:
    """``x -> outcomes`` for one trial: the campaign's evaluator called as ``evaluator(x,
    running_trial)``. A stopped trial's evaluation that raises :class:`TrialStoppedError`
    returns ``None`` instead (its outcome was recorded when it was stopped)."""

    def __init__(self, evaluator: Callable[[Any, RunningTrial], Any], trial: RunningTrial) -> None:
        self.evaluator, self.trial = evaluator, trial

    def __call__(self, x: Any) -> Any:
        try:
            return self.evaluator(x, self.trial)
        except TrialStoppedError:
            if self.trial.stopped:
                return None
            raise


__all__ = ["RunningTrial", "TrialEvaluator", "takes_trial"]
