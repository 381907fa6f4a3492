"""The interface of early-stopping rules: a trial's learning curve, a decision, the rule.

A :class:`StoppingRule` is a pure decision rule over learning curves: given the curve of a
running trial that has just reported (:class:`TrialCurve`) and the curves of every other trial
of the campaign, it says whether to stop the trial (:class:`Decision`). It holds no state
between calls, so a resumed campaign decides exactly as an uninterrupted one.

Values are in the maximization sense (higher is better), as the store keeps them.

The option checks shared by the rules (:func:`check_int`, :func:`check_real`) raise a
:class:`~dsbo.errors.ConfigError` naming the field (``stopping.<option>``) and never coerce a
value (``True`` is not an int, ``"3"`` is not a number).
"""

from __future__ import annotations

import abc
import bisect
import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

from dsbo.errors import ConfigError, DataError

#: The statuses a trial can have (those of the store).
STATUSES = ("pending", "completed", "stopped", "paused", "failed", "abandoned")


@dataclass(frozen=True)
class TrialCurve:
    """One trial's learning curve: the (step, value) pairs it reported, in step order.

    Args:
        trial_id: The trial's id in the campaign.
        status: ``"pending"`` (still running), ``"completed"``, ``"stopped"``, ``"paused"``
            (freeze-thaw), ``"failed"`` or ``"abandoned"``.
        steps: Strictly increasing integers >= 0 (epochs, iterations, ...).
        values: One finite value per step, higher is better.

    Sequences are stored as tuples, integral steps as ``int`` and real values as ``float``;
    anything else (a bool, a string, NaN, unsorted steps) raises a
    :class:`~dsbo.errors.DataError`.

    Example:
        >>> curve = TrialCurve(3, "pending", (1, 3, 9), (0.2, 0.5, 0.4))
        >>> curve.last_step, curve.value_at(3), curve.value_at(4), curve.best(upto_step=3)
        (9, 0.5, None, 0.5)
    """

    trial_id: int
    status: str
    steps: tuple[int, ...] = ()
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        where = f"trial {self.trial_id!r}"
        if not isinstance(self.trial_id, Integral) or isinstance(self.trial_id, bool):
            raise DataError(f"{where}: trial_id must be an int, got {type(self.trial_id).__name__}")
        if self.status not in STATUSES:
            raise DataError(
                f"{where}: status must be one of {', '.join(STATUSES)}; got {self.status!r}"
            )
        steps, values = tuple(self.steps), tuple(self.values)
        if len(steps) != len(values):
            raise DataError(f"{where}: {len(steps)} steps but {len(values)} values")
        for step in steps:
            if not isinstance(step, Integral) or isinstance(step, bool) or step < 0:
                raise DataError(f"{where}: steps must be ints >= 0, got {step!r}")
        for value in values:
            if not isinstance(value, Real) or isinstance(value, bool) or not math.isfinite(value):
                raise DataError(f"{where}: values must be finite numbers, got {value!r}")
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            raise DataError(f"{where}: steps must be strictly increasing, got {list(steps)}")
        object.__setattr__(self, "trial_id", int(self.trial_id))
        object.__setattr__(self, "steps", tuple(int(s) for s in steps))
        object.__setattr__(self, "values", tuple(float(v) for v in values))

    @classmethod
    def checked(
        cls, trial_id: int, status: str, steps: tuple[int, ...], values: tuple[float, ...]
    ) -> TrialCurve:
        """A curve from points that were checked when they were stored (ints, finite floats,
        increasing steps): built without checking each point again (a decision reads every
        trial's curve; checking 8,100 points took about 30 ms)."""
        curve = object.__new__(cls)
        for name, value in (
            ("trial_id", trial_id),
            ("status", status),
            ("steps", steps),
            ("values", values),
        ):
            object.__setattr__(curve, name, value)
        return curve

    @property
    def last_step(self) -> int | None:
        """The step of the latest report (``None`` before the first)."""
        return self.steps[-1] if self.steps else None

    @property
    def last_value(self) -> float | None:
        """The value of the latest report (``None`` before the first)."""
        return self.values[-1] if self.values else None

    @property
    def previous_step(self) -> int | None:
        """The step of the report before the latest (``None`` with fewer than two)."""
        return self.steps[-2] if len(self.steps) > 1 else None

    def value_at(self, step: int) -> float | None:
        """The value reported at exactly ``step``; ``None`` if that step was not reported."""
        i = bisect.bisect_left(self.steps, step)
        return self.values[i] if i < len(self.steps) and self.steps[i] == step else None

    def value_reaching(self, step: int) -> float | None:
        """The value of the first report at a step ``>= step``: the report with which the trial
        reached ``step`` (a rung); ``None`` if it has not reached it."""
        i = bisect.bisect_left(self.steps, step)
        return self.values[i] if i < len(self.steps) else None

    def best(self, upto_step: int | None = None) -> float | None:
        """The largest value over the steps ``<= upto_step`` (all steps by default); ``None``
        if there are none."""
        n = len(self.steps) if upto_step is None else bisect.bisect_right(self.steps, upto_step)
        return max(self.values[:n]) if n else None


@dataclass(frozen=True)
class Decision:
    """What a rule decided for the trial that just reported.

    Args:
        stop: Whether to stop the trial now.
        reason: One readable sentence saying why, e.g. ``"asha: at rung 1 (step 3) 0.52 is
            outside the top 2 of 7 trials (cutoff 0.61)"``.
        rung: For rung-based rules, the rung judged (``None`` when none was).
    """

    stop: bool
    reason: str
    rung: int | None = None


class StoppingRule(abc.ABC):
    """An early-stopping rule: a deterministic, pure function of the learning curves.

    Subclasses set :attr:`name` and implement :meth:`decide`, :meth:`rungs` and
    :meth:`options`; they validate every option in their constructor.
    """

    #: The rule's name in configs (``make_rule``).
    name: ClassVar[str]

    @abc.abstractmethod
    def decide(self, trial: TrialCurve, others: Sequence[TrialCurve]) -> Decision:
        """Whether to stop ``trial``, a running trial that just reported, given ``others``,
        every other trial of the campaign (any status). An entry of ``others`` with the
        trial's own ``trial_id`` is ignored, so a caller may pass all the trials. The
        decision does not depend on the order of ``others``."""

    @abc.abstractmethod
    def rungs(self, max_steps: int | None = None) -> list[int]:
        """The steps at which the rule judges trials, up to ``max_steps``."""

    @abc.abstractmethod
    def options(self) -> dict[str, Any]:
        """The rule's settings (JSON-able): ``make_rule({"name": rule.name, **rule.options()})``
        makes an equal rule."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoppingRule):
            return NotImplemented
        return type(self) is type(other) and self.options() == other.options()

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(self.options().items()))))


def others_of(trial: TrialCurve, others: Sequence[TrialCurve]) -> list[TrialCurve]:
    """``others`` without any entry carrying ``trial``'s own id."""
    return [o for o in others if o.trial_id != trial.trial_id]


#: The sign that turns a stored value (maximized) into the user's (``-1`` for a minimized
#: objective) in reason sentences; set for one decision by :func:`user_direction`.
DISPLAY_SIGN: contextvars.ContextVar[float] = contextvars.ContextVar("DISPLAY_SIGN", default=1.0)


@contextlib.contextmanager
def user_direction(sign: float) -> Iterator[None]:
    """Write the values of the reasons decided in this block as the user sees them
    (``sign * value``: a minimized loss as a loss, not its negation)."""
    token = DISPLAY_SIGN.set(float(sign))
    try:
        yield
    finally:
        DISPLAY_SIGN.reset(token)


def fmt(value: float) -> str:
    """A value for a reason sentence (4 significant digits, in the user's direction inside
    :func:`user_direction`)."""
    return f"{DISPLAY_SIGN.get() * value + 0.0:.4g}"


# ---------------------------------------------------------------------- option checks
def check_int(field: str, value: object, minimum: int) -> int:
    """``value`` if it is an int ``>= minimum`` (not a bool, not a float, not a string)."""
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise ConfigError(
            f"stopping.{field} must be an int >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    if value < minimum:
        raise ConfigError(f"stopping.{field} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_real(field: str, value: object, low: float, high: float) -> float:
    """``value`` as a float if it is a real number in ``[low, high]`` (not a bool, not a
    string, not NaN)."""
    if not isinstance(value, Real) or isinstance(value, bool):
        raise ConfigError(
            f"stopping.{field} must be a number in [{low:g}, {high:g}], got {value!r} ({type(value).__name__})"
        )
    if not low <= value <= high:  # NaN fails too
        raise ConfigError(
            f"stopping.{field} must be a number in [{low:g}, {high:g}], got {value!r}"
        )
    return float(value)
