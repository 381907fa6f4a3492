r"""The parameter types users write: :class:`Float`, :class:`Int`, :class:`Choice`, :class:`Fixed`.

Each parameter maps the value a user sees (``1e-3``, ``64``, ``"adam"``) to the columns of the
model's continuous box and back, in the spirit of Optuna's distributions and Ax's
range/choice parameters:

==========================  =================================  ==============================
parameter                   model columns                      back to the user value
==========================  =================================  ==============================
``Float(a, b)``             one, ``[a, b]``                    the value (on the ``step`` grid)
``Float(a, b, log=True)``   one, ``[ln a, ln b]``              ``exp(u)``, clipped to ``[a, b]``
``Int(a, b, step=s)``       one, ``[a, b]``                    ``a + s round((u - a) / s)``
``Int(a, b, log=True)``     one, ``[ln a, ln b]``              ``round(exp(u))``, in ``[a, b]``
``Choice(v, ordered=True)`` one, ``[0, k - 1]`` (the index)    ``v[round(u)]``
``Choice(v)``               ``k`` one-hot columns in ``[0, 1]`` ``v[argmax(u)]``
``Fixed(v)``                none                               ``v``
==========================  =================================  ==============================

A log scale lets a surrogate see decades evenly: with ``lr`` in ``[1e-4, 1e-1]`` on a linear
scale, 90% of a uniform design lies above ``1e-2``. An unordered choice is one-hot encoded,
so no order between its values is implied (an index column would tell the kernel that
``"adam"`` lies between ``"sgd"`` and ``"rmsprop"``); the acquisition is maximized over the
relaxed columns and the maximizer projected to its largest column (why, measured, is in the
docs' search-space guide).

``when={"optimizer": "sgd"}`` makes a parameter *conditional*: it exists only while every named
parameter takes one of the given values (a value or a list); otherwise it is left out of the
values the evaluator receives and its columns sit at a fixed value.

Example:
    >>> Float(1e-4, 1e-1, log=True).decode([Float(1e-4, 1e-1, log=True).encode(1e-3)[0]])
    0.001
    >>> Choice(["adam", "sgd"]).encode("sgd")
    [0.0, 1.0]
"""

from __future__ import annotations

import math
import numbers
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsbo.errors import ConfigError

PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
#: The kinds of value a :class:`Choice` may hold (JSON scalars: they survive a store and a CSV).
CHOICE_TYPES = (str, bool, int, float, type(None))


def is_number(value: Any) -> bool:
    """A finite real number that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _conditions(when: Any) -> dict[str, tuple[Any, ...]]:
    """``when`` as ``{parent: (allowed values, ...)}`` (a single value becomes a 1-tuple)."""
    if when is None:
        return {}
    if not isinstance(when, Mapping) or not when:
        raise ConfigError(f"when must be a mapping {{parameter: value or [values]}}, got {when!r}")
    out = {}
    for parent, values in when.items():
        values = tuple(values) if isinstance(values, list | tuple) else (values,)
        if not values:
            raise ConfigError(f"when.{parent} lists no values")
        out[str(parent)] = values
    return out


@dataclass(frozen=True)
class Parameter(ABC):
    """Base of the parameter types: the condition and the column interface."""

    #: ``{parent: allowed values}``: the parameter exists only while each parent takes one
    #: of its values (see the module docstring).
    when: Mapping[str, Any] | None = field(default=None, kw_only=True)

    @property
    def conditions(self) -> dict[str, tuple[Any, ...]]:
        return _conditions(self.when)

    #: Number of model columns.
    width: int = field(default=1, init=False, repr=False, compare=False)

    @abstractmethod
    def bounds(self) -> list[tuple[float, float]]:
        """``(low, high)`` of each model column."""

    @abstractmethod
    def encode(self, value: Any, where: str = "value") -> list[float]:
        """The model columns of the user value ``value`` (ConfigError if it is not one)."""

    @abstractmethod
    def decode(self, u: Sequence[float]) -> Any:
        """The user value of the model columns ``u`` (any point of the box maps to one)."""

    def inactive(self) -> list[float]:
        """The columns' fixed value while the parameter is inactive (its lower corner)."""
        return [low for low, _ in self.bounds()]

    def center(self) -> Any:
        """The value in the middle of the model columns (a default default)."""
        return self.decode([(low + high) / 2 for low, high in self.bounds()])

    def allows(self, value: Any) -> bool:
        """Whether ``value`` is a value of this parameter."""
        try:
            self.encode(value)
        except ConfigError:
            return False
        return True

    @property
    def kind(self) -> str:
        return type(self).__name__.lower()

    @abstractmethod
    def to_config(self) -> dict[str, Any]:
        """The config mapping that :func:`dsbo.space.parameter_from_config` reads back."""

    def _with_when(self, spec: dict[str, Any]) -> dict[str, Any]:
        if self.when:
            spec["when"] = {k: list(v) if len(v) > 1 else v[0] for k, v in self.conditions.items()}
        return spec


def _check_range(low: Any, high: Any, log: Any, name: str, integer: bool) -> None:
    check = is_integer if integer else is_number
    kind = "integers" if integer else "finite numbers"
    if not check(low) or not check(high):
        raise ConfigError(f"{name}: low and high must be {kind}, got low={low!r}, high={high!r}")
    if not low < high:
        raise ConfigError(f"{name}: low={low} must be < high={high}")
    if not isinstance(log, bool):
        raise ConfigError(f"{name}: log must be true or false, got {log!r}")
    if log and low <= 0:
        raise ConfigError(f"{name}: a log scale needs low > 0, got low={low}")


@dataclass(frozen=True)
class Float(Parameter):
    """A real parameter in ``[low, high]``, searched on a log scale with ``log=True`` and on
    the grid ``low + k step`` with ``step`` (the largest grid point is ``<= high``)."""

    low: float
    high: float
    log: bool = False
    step: float | None = None

    def __post_init__(self) -> None:
        _check_range(self.low, self.high, self.log, "Float", integer=False)
        if self.step is not None and not (is_number(self.step) and self.step > 0):
            raise ConfigError(f"Float: step must be a number > 0, got {self.step!r}")
        _conditions(self.when)

    def bounds(self) -> list[tuple[float, float]]:
        if self.log:
            return [(math.log(self.low), math.log(self.high))]
        return [(float(self.low), float(self.high))]

    def _clip(self, value: float) -> float:
        value = min(max(value, float(self.low)), float(self.high))
        if self.step is not None:
            k = round((value - self.low) / self.step)
            k = min(k, math.floor((self.high - self.low) / self.step + 1e-9))
            value = float(self.low + k * self.step)
            # round off float noise (0.30000000000000004) at 12 significant digits of the range,
            # never by more than a millionth of a step (a fixed 12 decimals rounded a grid of
            # step 1e-13 to 0)
            scale = max(abs(self.low), abs(self.high))
            rounded = float(round(value, 12 - math.floor(math.log10(scale))))
            value = rounded if abs(rounded - value) <= 1e-6 * self.step else value
            value = min(value, float(self.high))  # a grid point that k's float slack put past high
        return value

    def encode(self, value: Any, where: str = "value") -> list[float]:
        if not is_number(value):
            raise ConfigError(f"{where}={value!r} must be a number")
        if not self.low - 1e-12 * abs(self.low) <= value <= self.high + 1e-12 * abs(self.high):
            raise ConfigError(f"{where}={value!r} is outside [{self.low}, {self.high}]")
        value = min(max(float(value), float(self.low)), float(self.high))
        return [math.log(value) if self.log else value]

    def decode(self, u: Sequence[float]) -> float:
        # 12 significant digits: exp(ln(1e-3)) is 0.0010000000000000002, the user wrote 0.001
        return self._clip(float(f"{math.exp(u[0]):.12g}") if self.log else float(u[0]))

    def to_config(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": "float", "low": self.low, "high": self.high}
        if self.log:
            spec["log"] = True
        if self.step is not None:
            spec["step"] = self.step
        return self._with_when(spec)


@dataclass(frozen=True)
class Int(Parameter):
    """An integer parameter in ``[low, high]`` on the grid ``low + k step`` (the largest grid
    point is ``<= high``), searched on a log scale with ``log=True`` (the value is rounded onto
    the grid, so with ``step > 1`` the grid points are not evenly spaced in the log)."""

    low: int
    high: int
    log: bool = False
    step: int = 1

    def __post_init__(self) -> None:
        _check_range(self.low, self.high, self.log, "Int", integer=True)
        if not is_integer(self.step) or self.step < 1:
            raise ConfigError(f"Int: step must be an integer >= 1, got {self.step!r}")
        _conditions(self.when)

    @property
    def is_integer_column(self) -> bool:
        """Whether the model column holds the integer itself (a BoTorch integer dimension)."""
        return not self.log and self.step == 1

    def bounds(self) -> list[tuple[float, float]]:
        if self.log:
            return [(math.log(self.low), math.log(self.high))]
        return [(float(self.low), float(self.high))]

    def encode(self, value: Any, where: str = "value") -> list[float]:
        if not is_integer(value):
            raise ConfigError(f"{where}={value!r} must be an integer")
        if not self.low <= value <= self.high or (value - self.low) % self.step:
            grid = "" if self.step == 1 else f" on the grid {self.low} + k * {self.step}"
            raise ConfigError(f"{where}={value!r} is not in [{self.low}, {self.high}]{grid}")
        return [math.log(value) if self.log else float(value)]

    def decode(self, u: Sequence[float]) -> int:
        value = math.exp(u[0]) if self.log else float(u[0])
        k = round((value - self.low) / self.step)
        k = min(max(k, 0), (self.high - self.low) // self.step)
        return int(self.low + k * self.step)

    def to_config(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": "int", "low": self.low, "high": self.high}
        if self.log:
            spec["log"] = True
        if self.step != 1:
            spec["step"] = self.step
        return self._with_when(spec)


def _same(a: Any, b: Any) -> bool:
    """The same choice: equal values of the same type, or equal numbers (``1`` and ``1.0`` are
    one value, ``True`` is another: a boolean is never a number here)."""
    if _number(a) and _number(b):
        return a == b
    return type(a) is type(b) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Choice(Parameter):
    """One of ``values`` (strings, numbers, booleans or ``None``; at least two, no repeats).
    Unordered (the default) it is one-hot encoded; ``ordered=True`` searches the index of the
    value in the list, so neighbours in the list are neighbours to the surrogate."""

    values: tuple[Any, ...]
    ordered: bool = False

    def __post_init__(self) -> None:
        values = self.values
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            raise ConfigError(f"Choice: values must be a list, got {values!r}")
        values = tuple(values)
        object.__setattr__(self, "values", values)
        if len(values) < 2:
            raise ConfigError(
                f"Choice: values must list at least two values, got {list(values)}"
                + ("; use Fixed for one" if values else "")
            )
        bad = [
            v
            for v in values
            if not isinstance(v, CHOICE_TYPES) or (isinstance(v, float) and not math.isfinite(v))
        ]
        if bad:
            raise ConfigError(
                f"Choice: values must be strings, numbers, booleans or null, got {bad[0]!r}"
            )
        for i, v in enumerate(values):
            twins = [w for w in values[:i] if _same(v, w)]
            if twins:
                same = (
                    f"values repeat {v!r}"
                    if repr(twins[0]) == repr(v)
                    else f"{twins[0]!r} and {v!r} are the same number"
                )
                raise ConfigError(f"Choice: {same}; list each value once")
        if not isinstance(self.ordered, bool):
            raise ConfigError(f"Choice: ordered must be true or false, got {self.ordered!r}")
        object.__setattr__(self, "width", 1 if self.ordered else len(values))
        _conditions(self.when)

    def index(self, value: Any, where: str = "value") -> int:
        for i, v in enumerate(self.values):
            if _same(v, value):
                return i
        raise ConfigError(f"{where}={value!r} is not one of {list(self.values)}")

    def bounds(self) -> list[tuple[float, float]]:
        if self.ordered:
            return [(0.0, float(len(self.values) - 1))]
        return [(0.0, 1.0)] * len(self.values)

    def encode(self, value: Any, where: str = "value") -> list[float]:
        i = self.index(value, where)
        if self.ordered:
            return [float(i)]
        return [1.0 if j == i else 0.0 for j in range(len(self.values))]

    def decode(self, u: Sequence[float]) -> Any:
        if self.ordered:
            i = min(max(round(u[0]), 0), len(self.values) - 1)
        else:
            i = max(range(len(self.values)), key=lambda j: (u[j], -j))
        return self.values[i]

    def inactive(self) -> list[float]:
        return [0.0] * self.width

    def to_config(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"type": "choice", "values": list(self.values)}
        if self.ordered:
            spec["ordered"] = True
        return self._with_when(spec)


@dataclass(frozen=True)
class Fixed(Parameter):
    """A parameter held at ``value``: passed to the evaluator, never searched (no columns)."""

    value: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "width", 0)
        _conditions(self.when)

    def bounds(self) -> list[tuple[float, float]]:
        return []

    def encode(self, value: Any, where: str = "value") -> list[float]:
        if not (
            _same(value, self.value)
            or (is_number(value) and is_number(self.value) and value == self.value)
        ):
            raise ConfigError(f"{where}={value!r} differs from its fixed value {self.value!r}")
        return []

    def decode(self, u: Sequence[float]) -> Any:
        return self.value

    def to_config(self) -> dict[str, Any]:
        return self._with_when({"type": "fixed", "value": self.value})


#: The config ``type`` of each parameter class.
TYPES: dict[str, type[Parameter]] = {"float": Float, "int": Int, "choice": Choice, "fixed": Fixed}
#: The keys each config ``type`` takes (besides ``type`` and ``when``).
CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "float": ("low", "high", "log", "step"),
    "int": ("low", "high", "log", "step"),
    "choice": ("values", "ordered"),
    "fixed": ("value",),
}


def parameter_from_config(name: str, spec: Any) -> Parameter:
    """One ``parameters`` entry of a config: ``{type: float, low: 1e-4, high: 0.1, log: true}``,
    ``{type: int, ...}``, ``{type: choice, values: [adam, sgd]}``, ``{type: fixed, value: 3}``
    (each may add ``when: {parent: value}``), or the short form ``[low, high]`` of a float.

    Raises:
        ConfigError: naming ``parameters.<name>`` and what is wrong.
    """
    where = f"parameters.{name}"
    if isinstance(spec, Parameter):
        return spec
    if isinstance(spec, list | tuple):
        if len(spec) == 2 and all(is_number(v) for v in spec):
            spec = {"type": "float", "low": spec[0], "high": spec[1]}
        else:
            raise ConfigError(
                f"{where}={list(spec)!r}: write [low, high] for a float, or a mapping such as "
                "{type: choice, values: [...]}"
            )
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"{where} must be a mapping such as {{type: float, low: 0, high: 1}}, got {spec!r}"
        )
    spec = dict(spec)
    kind = spec.pop("type", None)
    if kind is None:
        kind = "choice" if "values" in spec else "fixed" if "value" in spec else "float"
    if kind not in TYPES:
        raise ConfigError(f"{where}.type={kind!r}: choose one of {', '.join(TYPES)}")
    allowed = set(CONFIG_KEYS[kind]) | {"when"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(f"{where}: {kind} takes {', '.join(sorted(allowed))}; unknown {unknown}")
    required = {
        "float": ("low", "high"),
        "int": ("low", "high"),
        "choice": ("values",),
        "fixed": ("value",),
    }[kind]
    missing = [k for k in required if k not in spec]
    if missing:
        raise ConfigError(f"{where}: a {kind} needs {', '.join(missing)}")
    try:
        return TYPES[kind](**spec)
    except ConfigError as exc:
        message = re.sub(r"^(Float|Int|Choice|Fixed): ", "", str(exc))  # the type's own prefix only
        raise ConfigError(f"{where}: {message}") from None
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


__all__ = [
    "CHOICE_TYPES",
    "PARAMETER_NAME",
    "Choice",
    "Fixed",
    "Float",
    "Int",
    "Parameter",
    "is_integer",
    "is_number",
    "parameter_from_config",
]
