"""The dsbo error hierarchy.

Every error a user can trigger derives from :class:`DsboError`, and its message names the
field or value at fault and, where possible, what to do about it.
"""

from __future__ import annotations


class DsboError(Exception):
    """Base class of every error dsbo raises on purpose."""


class ConfigError(DsboError, ValueError):
    """A configuration value is missing, of the wrong type or out of range."""


class ProblemError(DsboError, ValueError):
    """A point does not fit a problem (wrong dimension, out of bounds, not finite)."""


class DataError(DsboError, ValueError):
    """Training or observation data are malformed (shapes, NaNs, too few points)."""


class StoreError(DsboError):
    """The campaign store is unusable (wrong schema, other problem, corrupt rows)."""


class EvaluationError(DsboError):
    """An evaluation produced no usable value; recorded as a failed trial, never fitted."""


class CostError(EvaluationError, ValueError):
    """The cost of an evaluation is unusable (the cost function failed, or gave a value that is
    not a finite number > 0): recorded as a failed trial, like a failed evaluation."""


class StaleSegmentError(StoreError):
    """A tell or report of a freeze-thaw segment that has ended: the trial was paused and thawed
    into a later segment since this evaluation began (its value was recorded at the pause)."""


class StoreLockedError(StoreError):
    """Another process holds the store's writer lock (one writer per store at a time)."""


class BudgetExhaustedError(DsboError):
    """A proposal or a late result would exceed the campaign's budget."""


class OutcomeError(EvaluationError, ValueError):
    """Reported outcomes are malformed (wrong keys, length or type). ``Campaign.tell`` refuses
    them and leaves the trial untouched; from an evaluator they are a failed trial."""


class EvaluationTimeout(EvaluationError):
    """An evaluation ran past the campaign's ``eval_timeout``; recorded as a failed trial."""


class WorkerDiedError(EvaluationError):
    """The worker process running an evaluation died (killed, out of memory, crashed)."""


class StoreConnectionError(StoreError):
    """A database store cannot be reached, or refuses the login (host, port, user, password,
    database name)."""


class StoreMismatchError(StoreError, ConfigError):
    """The store belongs to another campaign: a different problem, search space or outcomes."""


class TooManyFailuresError(EvaluationError):
    """A run stopped after ``max_consecutive_failures`` failed evaluations in a row. Nothing is
    lost: :attr:`result` holds every evaluation so far (a :class:`~dsbo.campaign.CampaignResult`,
    or a :class:`~dsbo.runtime.tuner.TunerResult` from ``dsbo.minimize``/``maximize``/``Tuner``)."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        #: Every completed and failed evaluation of the run, as its result.
        self.result = result


class ReportError(EvaluationError, ValueError):
    """An intermediate value a trial reported is unusable: not a finite number, a step that is
    not an integer >= 0 or that does not come after the trial's last one. From inside an
    evaluation it is a failed trial, with this message."""


class TrialStoppedError(DsboError):
    """A value was reported for a trial that was already stopped (early stopping): a stopped
    trial takes no more values. Raised inside an evaluation it ends the trial as stopped."""


class AllEvaluationsFailedWarning(UserWarning):
    """A run ended with evaluations but none completed: there is no best value."""
