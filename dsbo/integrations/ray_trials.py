"""The trials of :class:`~dsbo.integrations.ray.DsboSearch`: Ray Tune's trials kept as the dsbo
Tuner's, their results reported to the curves, and each one's end recorded as Ray tells it.

Example (the calls Ray's controller makes, through the searcher):
    >>> trials = RayTrials(tuner, metric="loss", time_attr="training_iteration", max_t=27)
    >>> trials.add("a1b2", tuner.campaign.ask(q=1)[0].id)  # Ray trial a1b2 runs it
    >>> trials.report("a1b2", {"loss": 0.9, "training_iteration": 1})
    >>> trials.complete("a1b2", {"loss": 0.7, "training_iteration": 3})  # ASHA stopped it at 3

**Trials.** Ray's running trials are dsbo's pending ones: every new proposal is conditioned
on them (so ``ConcurrencyLimiter(DsboSearch(), max_concurrent=4)`` runs four distinct
configurations at once). Each intermediate result with the metric and ``time_attr``
(``training_iteration``) is reported to the trial's curve
(:meth:`~dsbo.campaign.early_stopping.RunningTrial.report`); the final result is told: the
metric's value, or a failed trial when Ray reports an error, or the result has no finite
value of the metric. ``mode="min"``/``"max"`` is the objective's direction, the metric its
name (rewritten where it is not a dsbo name: :func:`~dsbo.integrations.ray_space.dsbo_name`).
The Ray trial id is kept in each dsbo trial's metadata (``ray_trial_id``).

**Trials Ray stops early.** Ray does not tell a searcher why a trial ended, but it tells it
when: a result on which Ray stops the trial (a scheduler such as ``ASHAScheduler`` says
``STOP``, or a ``stop=`` criterion is met) never comes to the searcher's ``on_trial_result``,
only to its ``on_trial_complete``, while a trainable that returns on its own ends with its last
result repeated (``TuneController._process_trial_result`` in
``ray/tune/execution/tune_controller.py``). So a trial whose final result holds a step it had
not reported was stopped by Ray: it is recorded as ``stopped``, with its curve and its last
value, unless that step is at least ``max_t`` (the scheduler's ``max_t``, given to the
searcher too: ``ASHAScheduler`` stops a trial that reaches it, fully trained, the same way),
which makes it completed. A trial whose trainable returned is completed at its last value. A
trial Ray removes without a result (a paused trial a scheduler drops, ``HyperBandScheduler``)
is stopped with the curve it reported, or failed when it reported nothing (it has no value to
fit). Ray's ``OptunaSearch`` records every one of them as complete at its last value
(``PRUNED`` only for a trial that ended before any result): a partially trained value then
stands as a final one.

**What the proposals learn from them.** The searcher's campaign fits its surrogate on the
completed trials and on each stopped one at the last value it reported (the early-stopping
model ``"last"``, :func:`stopped_trials_model`, with no stopping rule of dsbo's: Ray's
scheduler decides; :func:`dsbo.campaign.early_stopping.training_data`), a pessimistic
stand-in for the value it would have reached (the scheduler stopped it because it was behind),
so the proposals move away from the regions the scheduler cut. A stopped trial takes its place
in the initial design like any other (the design counts the trials proposed), and the best
trial stays a completed one (:meth:`~dsbo.runtime.tuner.Tuner.result`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dsbo.campaign.early_stopping import EarlyStopping
from dsbo.errors import DsboError, OutcomeError
from dsbo.integrations.ray_space import dsbo_name

if TYPE_CHECKING:
    from dsbo.campaign.early_stopping import RunningTrial
    from dsbo.runtime.tuner import Tuner

logger = logging.getLogger(__name__)


def stopped_trials_model() -> EarlyStopping:
    """The early-stopping settings of the searcher's Tuner: no rule (Ray's scheduler decides),
    and the surrogate fitted on the completed trials and on each stopped one at its last
    reported value (model ``"last"``). A fresh object for each Tuner: it caches the curves of
    the trials that ended."""
    return EarlyStopping(rule=None, max_steps=None, model="last")


def finite(value: Any) -> tuple[float, bool]:
    """``value`` as a float (NaN if it is not a number) and whether it is finite."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan, False
    return number, math.isfinite(number)


class RayTrials:
    """Ray's trials as the Tuner's (module docstring): the Ray id of each dsbo trial and back,
    the running handle of each trial that reported, and the record of how each one ended.

    Args:
        tuner: The Tuner whose trials Ray runs.
        metric: The result key of the objective.
        time_attr: The result key that counts a curve's steps.
        max_t: The ``time_attr`` of a fully trained trial (``None``: every trial Ray stops at
            a result is stopped).
        ray_to_dsbo: The id map of a restored searcher (Ray trial id -> dsbo trial id).
    """

    def __init__(
        self,
        tuner: Tuner,
        metric: str,
        time_attr: str,
        max_t: int | None,
        ray_to_dsbo: Mapping[str, int] | None = None,
    ) -> None:
        self.tuner, self.metric, self.objective = tuner, metric, dsbo_name(metric)
        self.time_attr, self.max_t = time_attr, max_t
        #: Ray trial id -> dsbo trial id, and back.
        self.ray_to_dsbo: dict[str, int] = dict(ray_to_dsbo or {})
        self.dsbo_to_ray: dict[int, str] = {v: k for k, v in self.ray_to_dsbo.items()}
        self._running: dict[int, RunningTrial] = {}

    def add(self, ray_id: str, trial: int) -> None:
        """Ray's trial ``ray_id`` runs dsbo trial ``trial`` (kept in its metadata too)."""
        self.ray_to_dsbo[ray_id], self.dsbo_to_ray[trial] = trial, ray_id
        self.tuner.campaign.store.update_metadata(trial, ray_trial_id=ray_id)

    def report(self, ray_id: str, result: Mapping[str, Any]) -> None:
        """Report the metric at ``result[time_attr]`` to the trial's curve (a result without
        them, or with a value that is not finite, or a step already reported, is skipped)."""
        trial = self.ray_to_dsbo.get(ray_id)
        if trial is None or self.metric not in result:
            return
        step, value = result.get(self.time_attr), result[self.metric]
        if isinstance(step, bool) or not isinstance(step, int | float) or int(step) != step:
            return
        number, ok = finite(value)
        if not ok:
            return
        running = self._running.get(trial)
        if running is None:
            if self.tuner.campaign.store.get(trial).status != "pending":
                return
            running = self._running[trial] = self.tuner.campaign.running(trial)
        if running.last_step is not None and step <= running.last_step:
            return  # the final result repeats the last one
        try:
            running.report(int(step), number)
        except DsboError as exc:
            logger.warning(
                "Ray trial %s: its result at %s=%s was not recorded: %s",
                ray_id,
                self.time_attr,
                step,
                exc,
            )

    def complete(self, ray_id: str, result: Mapping[str, Any] | None, error: bool) -> None:
        """Record the end of Ray's trial ``ray_id`` (module docstring): stopped with its curve
        when Ray stopped it early (at a result it had not reported, below ``max_t``; or
        without a result, after reporting); else completed at the metric of its last result;
        or failed (Ray's error, no result and no curve, a missing or non-finite metric)."""
        tuner, trial = self.tuner, self.ray_to_dsbo.get(ray_id)
        if trial is None:
            return
        before = self.last_step(trial)
        if result and not error:  # the result Ray stopped it at never came to on_trial_result
            self.report(ray_id, result)
        after = self.last_step(trial)
        self._running.pop(trial, None)
        if tuner.campaign.store.get(trial).status != "pending":
            logger.warning(
                "Ray trial %s (dsbo trial %d) was already told; this completion is ignored",
                ray_id,
                trial,
            )
            return
        if error:
            tuner.tell(trial, error=f"Ray trial {ray_id} raised an error")
        elif not result and after is not None:
            where = f"{self.time_attr}={after}"
            self.stop(trial, f"Ray removed trial {ray_id} at {where} without a final result")
        elif not result:
            tuner.tell(trial, error=f"Ray ended trial {ray_id} before it reported a result")
        elif after is not None and after != before and (self.max_t is None or after < self.max_t):
            where = f"{self.time_attr}={after}"
            self.stop(trial, f"Ray stopped trial {ray_id} at {where} (a scheduler or stop=)")
        else:
            self._tell(ray_id, trial, result)

    def _tell(self, ray_id: str, trial: int, result: Mapping[str, Any]) -> None:
        """Tell a trial that ran to its end the outcomes of its last ``result`` (the metric
        and the outcomes the constraints bound), or why they are unusable."""
        tuner = self.tuner
        keys = {
            name: self.metric if name == self.objective else name for name in tuner.outcomes.metrics
        }
        missing = [key for key in keys.values() if key not in result]
        if missing:
            listed = ", ".join(map(repr, missing))
            tuner.tell(trial, error=f"the result of Ray trial {ray_id} has no {listed}")
            return
        values = {name: result[key] for name, key in keys.items()}
        try:
            tuner.tell(trial, values[self.objective] if len(values) == 1 else values)
        except OutcomeError as exc:  # not a number: nothing was recorded
            tuner.tell(trial, error=f"the result of Ray trial {ray_id} is not usable: {exc}")

    def last_step(self, trial: int) -> int | None:
        """The last step of the trial's curve (reported through :meth:`report`, before a
        restore too), ``None`` before any."""
        running = self._running.get(trial)
        if running is not None:
            return running.last_step
        curve = self.tuner.campaign.store.curves([trial]).get(trial, [])
        return curve[-1][0] if curve else None

    def stop(self, trial: int, reason: str) -> None:
        """Record a trial Ray stopped early as ``stopped``: its last reported value (in the
        store's direction) its value, with one outcome; ``reason`` kept as its error."""
        campaign = self.tuner.campaign
        curve = campaign.store.curves([trial]).get(trial, [])
        last = [curve[-1][1]] if curve and len(campaign.problem.outcome_names) == 1 else None
        campaign.store.stop(trial, last, budget=campaign.budget, reason=reason)


__all__ = ["RayTrials", "finite", "stopped_trials_model"]
