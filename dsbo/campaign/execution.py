"""How a campaign's trials are evaluated: the settings the runtime reads.

A :class:`~dsbo.campaign.campaign.Campaign` is given these settings and keeps them, validated,
for whoever drives it (:mod:`dsbo.runtime.driver`, :mod:`dsbo.runtime.parallel`); the campaign
itself only asks and tells.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from dsbo.errors import ConfigError

#: The largest campaign seed.
MAX_SEED = 2**32 - 1
#: What resuming does with trials a crash left pending.
ON_PENDING = ("retry", "abandon")


def positive_int(name: str, value: Any) -> int:
    """``value`` if it is an integer >= 1 (booleans are not), else a ConfigError naming ``name``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return value


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


@dataclass
class Execution:
    """Evaluation settings of a campaign (the arguments of the same names of
    :class:`~dsbo.campaign.campaign.Campaign`, which documents them).

    Raises:
        ConfigError: naming the first setting that is out of range.
    """

    #: ``x (d-tensor) -> outcomes``.
    evaluator: Callable[[Any], Any]
    #: Any ``concurrent.futures.Executor``; ``None`` evaluates in this process.
    executor: Executor | None = None
    #: Seconds an evaluation may run; ``None``: no limit.
    eval_timeout: float | None = None
    #: Times a trial whose executor worker died is evaluated again before it counts as failed.
    worker_retries: int = 1
    #: Trials evaluated at once by ``run()``.
    parallel: int = 1
    #: Seconds a pending trial stays its worker's without a heartbeat (shared stores).
    lease: float = 60.0
    #: Failed evaluations in a row that stop a run.
    max_consecutive_failures: int = 10
    #: ``"retry"`` or ``"abandon"`` the trials a crash left pending.
    on_pending: str = "retry"
    #: Called as ``callback(campaign, trials)`` after every finished batch.
    callbacks: list[Callable[..., Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.on_pending not in ON_PENDING:
            raise ConfigError(f"on_pending={self.on_pending!r}; choose one of {ON_PENDING}")
        positive_int("max_consecutive_failures", self.max_consecutive_failures)
        if self.eval_timeout is not None:
            self.eval_timeout = _seconds("eval_timeout", self.eval_timeout)
        retries = self.worker_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"worker_retries must be an integer >= 0, got {retries!r}")
        positive_int("parallel", self.parallel)
        if self.parallel > 1 and self.executor is None:
            raise ConfigError(
                f"parallel={self.parallel} trials at once need an executor to run them"
            )
        self.lease = _seconds("lease", self.lease)
        if not isinstance(self.callbacks, Sequence) or not all(callable(c) for c in self.callbacks):
            raise ConfigError(f"callbacks must be a list of callables, got {self.callbacks!r}")
        self.callbacks = list(self.callbacks)
