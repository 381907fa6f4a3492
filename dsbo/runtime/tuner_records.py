"""What a :class:`~dsbo.runtime.tuner.Tuner` hands out and gives back: a :class:`Suggestion`
(a trial to evaluate, with its running handle and freeze-thaw segment), and a
:class:`TunerResult` (the best trial or the front, the history, the counted warnings) with its
:class:`BestTrial` rows. Values are always in the user's direction and names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsbo.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from dsbo.campaign import Campaign
    from dsbo.campaign.running_trial import RunningTrial


@dataclass
class Suggestion:
    """A proposed trial: its id in the store and its named values (give it back to
    :meth:`Tuner.tell`). While it is evaluated it can :meth:`report` intermediate values and
    ask whether it :meth:`should_stop` (early stopping, :mod:`dsbo.campaign.early_stopping`)."""

    trial_id: int
    params: dict[str, Any]
    running: RunningTrial | None = field(default=None, repr=False, compare=False)
    #: The freeze-thaw segment it was handed out for (0 until a thaw): :meth:`Tuner.tell`
    #: applies to that segment only, so a late tell never completes a thawed trial.
    segment: int = 0

    def report(self, step: int, value: Any) -> None:
        """Record the objective's ``value`` at ``step`` (the user's direction; committed at once)."""
        self._running().report(step, value)

    def should_stop(self) -> bool:
        """Whether the search's stopping rule says this trial should stop now (then tell it
        anything, or nothing: it is recorded as stopped)."""
        return self._running().should_stop()

    @property
    def last_step(self) -> int | None:
        """The last step this trial reported before (a thawed or retried trial resumes after it)."""
        return self._running().last_step

    @property
    def paused(self) -> bool:
        """Whether a freeze-thaw search paused it (``should_stop`` was ``True``; a later
        :meth:`Tuner.ask` may hand it out again to train further)."""
        return self._running().paused

    def _running(self) -> RunningTrial:
        if self.running is None:
            raise ConfigError("this suggestion was not handed out by Tuner.ask: it cannot report")
        return self.running


@dataclass
class BestTrial:
    """A trial on the observed front (Optuna's ``study.best_trials``): its id, named values
    and outcomes as the function returned them."""

    trial_id: int
    params: dict[str, Any]
    values: dict[str, float]


@dataclass
class TunerResult:
    """What a search found, in the user's direction (lower is better when minimizing)."""

    #: The best completed, feasible trial's named values (``None`` before any, and with
    #: several objectives: see :attr:`pareto_front`).
    best_params: dict[str, Any] | None
    #: Its objective value (``None`` as above).
    best_value: float | None
    #: One row per trial: named parameters, the outcomes as returned, status, timings, and
    #: ``best_so_far`` (the best objective so far; the hypervolume with several objectives).
    history: pd.DataFrame
    num_completed: int
    num_failed: int
    #: The parameters the best trial changes from the default (BONSAI / the problem default).
    changes_best: list[dict[str, Any]] | None
    #: The campaign behind the search (store, model settings, raw history).
    campaign: Campaign
    #: The feasible trials no other one beats in every objective (one objective: the best).
    best_trials: list[BestTrial] = field(default_factory=list)
    #: The same as a table: ``trial``, the named parameters and the outcomes.
    pareto_front: pd.DataFrame | None = None
    #: Several objectives: the hypervolume of the feasible points (maximization sense, the
    #: thresholds as reference, open ones at the worst observed value).
    hypervolume: float | None = None
    #: The model stack's warnings during the search (GP fits' jitter, optimizer retries),
    #: counted by message instead of printed (:mod:`dsbo.campaign.model_warnings`).
    warnings: dict[str, int] = field(default_factory=dict)


__all__ = ["BestTrial", "Suggestion", "TunerResult"]
