r"""Outcomes as users declare and report them, and their one map to dsbo's maximized store.

dsbo maximizes (BoTorch's convention): the store, the surrogates and the acquisitions see
every objective in the maximization sense and every outcome constraint as a slack that is
feasible when ``>= 0``. Users think in their own terms: a loss to minimize, an accuracy to
maximize, ``"latency <= 10"``. :class:`Outcomes` is the one place that maps between the two:

- :meth:`Outcomes.to_stored` turns whatever an evaluator returned (:func:`to_number`: Python,
  NumPy and torch scalars of any dtype, 0-d and one-element arrays or tensors, one-element
  lists; a mapping of them by outcome name; a flat sequence or array in declaration order)
  into the stored vector ``[objective_1 .. objective_m, slack_1 .. slack_c]``, where a
  minimized objective ``f`` is stored as ``-f`` (named ``-<name>``) and a constraint
  ``sum_i a_i g_i >= b`` as the slack ``a g - b`` (``"memory <= 8"``: ``8 - memory``);
- :meth:`Outcomes.to_user` maps a stored vector back to ``{metric: value}`` in the user's
  sense, which every view (history, result, summary, report, W&B, ``blackbox status``) shows.

A problem that declares nothing (the benchmark problems) has :meth:`Outcomes.maximized`: each
stored outcome is its own metric, objectives maximized and constraint names bare slacks, so
its views are the stored values themselves.

Example:
    >>> spec = Outcomes.declare({"loss": "min", "latency": ("min", 50.0)}, ["memory <= 8"])
    >>> spec.metrics
    ('loss', 'latency', 'memory')
    >>> spec.stored_names
    ('-loss', '-latency', 'memory <= 8')
    >>> spec.to_stored({"loss": np.float32(0.25), "latency": 12, "memory": torch.tensor(6.0)})
    [-0.25, -12.0, 2.0]
    >>> spec.to_user([-0.25, -12.0, 2.0])
    {'loss': 0.25, 'latency': 12.0, 'memory': 6.0}
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from dsbo.errors import ConfigError, OutcomeError
from dsbo.space.constraints import LinearConstraint, parse_constraint

#: How a direction may be written (Optuna's and Ax's spellings): ``min``/``minimize``, ``max``/``maximize``.
DIRECTIONS = {"min": "minimize", "minimize": "minimize", "max": "maximize", "maximize": "maximize"}
OUTCOME_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def to_number(value: Any, name: str) -> float:
    """``value`` as a float when it is one real number: a Python ``int``/``float`` (or any
    :class:`numbers.Real`), a NumPy scalar of any integer or floating dtype, a 0-d or
    one-element NumPy array or torch tensor (any real dtype, any device, with or without
    grad), or a one-element list or tuple of those. NaN and infinities pass through (the
    caller records them as a failure).

    Raises:
        OutcomeError: naming ``name`` for a bool, a string, a complex number, an array of
            several values or of a non-numeric dtype, or anything else.
    """
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b":
        raise OutcomeError(f"outcome {name!r} must be a number, got {value!r}")
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise OutcomeError(f"outcome {name!r} must be one number, got {len(value)} values")
        return to_number(value[0], name)
    if hasattr(value, "dtype") and hasattr(value, "reshape"):  # a NumPy array/scalar or a tensor
        size = value.numel() if hasattr(value, "numel") else getattr(value, "size", 1)
        if size != 1:
            raise OutcomeError(
                f"outcome {name!r} must be one number, got an array of {size} values"
            )
        if hasattr(
            value, "is_floating_point"
        ):  # torch: any real dtype (bfloat16 has no NumPy twin)
            if value.is_complex() or str(value.dtype) == "torch.bool":
                raise OutcomeError(
                    f"outcome {name!r} must be a real number, got a tensor of {value.dtype}"
                )
            return float(value.detach().reshape(-1)[0].item())
        kind = getattr(value.dtype, "kind", None)
        if kind not in ("i", "u", "f"):
            raise OutcomeError(
                f"outcome {name!r} must be a real number, got a value of dtype {value.dtype}"
            )
        return float(value.reshape(-1)[0])
    if isinstance(value, Real):
        return float(value)
    raise OutcomeError(f"outcome {name!r} must be a number, got {value!r}")


def parse_outcomes(values: Any, names: Sequence[str]) -> list[float]:
    """One float per outcome name from what an evaluator (or a user) reported.

    Accepts, for one outcome, anything :func:`to_number` reads; for any number of outcomes, a
    mapping with exactly the outcome names as keys (each value as :func:`to_number` reads it),
    or a flat list, tuple, array or tensor with one number per outcome, in order. Non-finite
    values are returned as they are (the caller records them as a failure); nothing is ever
    converted from a string or a boolean.

    Raises:
        OutcomeError: naming the missing or unknown outcome, the wrong length or the value
            that is not a number.
    """
    m = len(names)
    if isinstance(values, Mapping):
        missing = [n for n in names if n not in values]
        unknown = [k for k in values if k not in names]
        if missing or unknown:
            raise OutcomeError(
                "outcomes must be exactly "
                + ", ".join(names)
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {unknown}" if unknown else "")
            )
        return [to_number(values[n], n) for n in names]
    if m == 1 and not _is_sequence_of_several(values):
        return [to_number(values, names[0])]
    if hasattr(values, "dtype") and hasattr(values, "reshape"):  # several numbers in an array
        kind = "b" if str(values.dtype) == "torch.bool" else getattr(values.dtype, "kind", "f")
        if kind not in ("i", "u", "f") or (hasattr(values, "is_complex") and values.is_complex()):
            raise OutcomeError(f"outcomes must be numbers, got an array of {values.dtype}")
        flat = values.detach().reshape(-1) if hasattr(values, "detach") else values.reshape(-1)
        items: list[Any] = [flat[i] for i in range(flat.shape[0])]
    elif isinstance(values, list | tuple):
        items = list(values)
    else:
        items = [values]
    numbers = [
        to_number(v, n) if not isinstance(v, list | tuple) else _not_a_number(n, v)
        for n, v in zip(names, items, strict=False)
    ]
    if len(items) != m:
        raise OutcomeError(
            f"outcomes must be {m} number(s) ({', '.join(names)}), got {len(items)} value(s)"
        )
    return numbers


def _not_a_number(name: str, value: Any) -> float:
    raise OutcomeError(f"outcome {name!r} must be a number, got {value!r}")


def _is_sequence_of_several(values: Any) -> bool:
    if isinstance(values, list | tuple):
        return len(values) != 1
    if hasattr(values, "dtype") and hasattr(values, "reshape"):
        size = values.numel() if hasattr(values, "numel") else getattr(values, "size", 1)
        return size != 1
    return False


def outcome_vector(values: Any, names: Sequence[str]) -> list[float]:
    """:func:`parse_outcomes`, and every value finite.

    Raises:
        OutcomeError: if the values are malformed.
        EvaluationError: naming the outcomes that are NaN or infinite.
    """
    from dsbo.errors import EvaluationError

    flat = parse_outcomes(values, names)
    bad = [n for n, v in zip(names, flat, strict=True) if not math.isfinite(v)]
    if bad:
        raise EvaluationError(f"evaluation returned a non-finite value for {bad}")
    return flat


@dataclass(frozen=True)
class Objective:
    """An objective as the user declared it: its name, ``"minimize"`` or ``"maximize"``, and
    optionally the threshold (Ax's objective threshold, the hypervolume's reference in this
    coordinate): the worst value still worth having."""

    name: str
    direction: str = "maximize"
    threshold: float | None = None

    @property
    def sign(self) -> float:
        """``+1`` maximized, ``-1`` minimized: stored value = sign * user value."""
        return 1.0 if self.direction == "maximize" else -1.0

    @property
    def stored_name(self) -> str:
        return self.name if self.direction == "maximize" else f"-{self.name}"


@dataclass(frozen=True)
class OutcomeConstraint:
    """``coefficient * metric >= rhs`` (``"memory <= 8"`` is ``-memory >= -8``); a bare
    outcome name (``"purity_margin"``) is a slack the user computed, feasible when ``>= 0``."""

    metric: str
    coefficient: float = 1.0
    rhs: float = 0.0
    #: What the user wrote (the stored slack's name).
    text: str = ""

    @property
    def stored_name(self) -> str:
        return self.text or self.metric

    def slack(self, value: float) -> float:
        return self.coefficient * value - self.rhs

    def value(self, slack: float) -> float:
        """The metric's value from its stored slack."""
        return (slack + self.rhs) / self.coefficient


class Outcomes:
    """The outcomes of a problem: objectives with their directions and thresholds, outcome
    constraints, and the map between the user's values and the stored, maximized ones (the
    module docstring).

    Args:
        objectives: The objectives, in order.
        constraints: The outcome constraints, in order.

    Raises:
        ConfigError: for a bad or repeated name, or a metric named like a stored name of
            another outcome.
    """

    def __init__(
        self, objectives: Sequence[Objective], constraints: Sequence[OutcomeConstraint] = ()
    ) -> None:
        if not objectives:
            raise ConfigError("objectives: name at least one objective")
        self.objectives = tuple(objectives)
        self.constraints = tuple(constraints)
        names = [o.name for o in self.objectives]
        if len(set(names)) != len(names):
            raise ConfigError(f"objectives: each objective is named once, got {names}")
        metrics = list(names)
        for c in self.constraints:
            if c.metric not in metrics:
                metrics.append(c.metric)
        #: The names the evaluator reports, in order: the objectives, then the other
        #: constrained outcomes.
        self.metrics: tuple[str, ...] = tuple(metrics)
        stored = [o.stored_name for o in self.objectives] + [
            c.stored_name for c in self.constraints
        ]
        if len(set(stored)) != len(stored):
            raise ConfigError(
                f"outcome names must be unique (objectives, then constraints), got {stored}"
            )
        #: The store's outcome names: objectives (``-<name>`` when minimized), then the slacks.
        self.stored_names: tuple[str, ...] = tuple(stored)

    # ------------------------------------------------------------------ construction
    @classmethod
    def maximized(
        cls, objective_names: Sequence[str], constraint_names: Sequence[str] = ()
    ) -> Outcomes:
        """Stored outcomes shown as they are: maximized objectives, slacks by their names."""
        return cls(
            [Objective(n) for n in objective_names],
            [OutcomeConstraint(n) for n in constraint_names],
        )

    @classmethod
    def declare(
        cls,
        objectives: str | Sequence[str] | Mapping[str, Any],
        constraints: str | Sequence[str] = (),
        direction: str = "maximize",
        field: str = "objectives",
    ) -> Outcomes:
        """Outcomes from what a user writes.

        Args:
            objectives: A name, a list of names (each in ``direction``), or
                ``{name: direction}`` / ``{name: (direction, threshold)}`` /
                ``{name: {direction: ..., threshold: ...}}`` with a direction ``"min"``,
                ``"minimize"``, ``"max"`` or ``"maximize"``.
            constraints: Outcome constraints as strings, one outcome each: ``"memory <= 8"``,
                ``"accuracy >= 0.9"``, ``"2 * latency <= 30"``, or a bare name (a slack the
                evaluator computes, feasible when ``>= 0``). A single string is one constraint.
            direction: The direction of objectives given by name only.
            field: The option's name in error messages.
        """
        direction = _direction(direction, "direction")
        if isinstance(objectives, str):
            objectives = [objectives]
        if isinstance(objectives, Mapping):
            items = [
                (name, _objective_spec(name, spec, field)) for name, spec in objectives.items()
            ]
            declared = [Objective(_name(name, field), d, t) for name, (d, t) in items]
        elif isinstance(objectives, Sequence) and all(isinstance(n, str) for n in objectives):
            declared = [Objective(_name(n, field), direction) for n in objectives]
        else:
            raise ConfigError(
                f"{field}: give a name, a list of names or a mapping {{name: 'min' | 'max' | ['min', threshold]}}, "
                f"got {objectives!r}"
            )
        if isinstance(constraints, str):
            constraints = [constraints]
        if not isinstance(constraints, Sequence) or not all(
            isinstance(c, str) for c in constraints
        ):
            raise ConfigError(
                f"constraints: give outcome constraints as strings such as 'memory <= 8', got {constraints!r}"
            )
        return cls(declared, [parse_outcome_constraint(c) for c in constraints])

    # ------------------------------------------------------------------ facts
    @property
    def signs(self) -> tuple[float, ...]:
        return tuple(o.sign for o in self.objectives)

    @property
    def objective_names(self) -> tuple[str, ...]:
        """The objectives' names as the user wrote them."""
        return tuple(o.name for o in self.objectives)

    @property
    def declares_directions(self) -> bool:
        """Whether anything differs from the stored view (a minimized objective or a
        constraint written as a comparison)."""
        return any(o.direction == "minimize" for o in self.objectives) or any(
            c.text for c in self.constraints
        )

    def finite_or_error(self, y: Sequence[float]) -> None:
        """Raise :class:`~dsbo.errors.EvaluationError` naming the outcomes (as the user named
        them) whose stored value is NaN or infinite."""
        from dsbo.errors import EvaluationError

        sources = [o.name for o in self.objectives] + [c.metric for c in self.constraints]
        bad = list(
            dict.fromkeys(n for n, v in zip(sources, y, strict=True) if not math.isfinite(v))
        )
        if bad:
            raise EvaluationError(f"evaluation returned a non-finite value for {bad}")

    def ref_point(self) -> list[float] | None:
        """The objective thresholds in the stored sense (NaN where none is given: inferred
        from the data), or ``None`` when no objective has one."""
        if all(o.threshold is None for o in self.objectives):
            return None
        return [math.nan if o.threshold is None else o.sign * o.threshold for o in self.objectives]

    def label(self, i: int) -> str:
        """``"loss (lower is better)"``: the i-th objective's name and sense, for plots."""
        o = self.objectives[i]
        return f"{o.name} ({'lower' if o.direction == 'minimize' else 'higher'} is better)"

    # ------------------------------------------------------------------ the map
    def to_stored(self, values: Any) -> list[float]:
        """The stored vector (objectives signed, constraints as slacks) from what the
        evaluator returned (the module docstring); non-finite values pass through.

        Raises:
            OutcomeError: naming the outcome at fault.
        """
        user = dict(zip(self.metrics, parse_outcomes(values, self.metrics), strict=True))
        return [o.sign * user[o.name] + 0.0 for o in self.objectives] + [
            c.slack(user[c.metric]) if c.text else user[c.metric] for c in self.constraints
        ]

    def to_user(self, y: Sequence[float]) -> dict[str, float]:
        """``{metric: value}`` in the user's sense from a stored vector."""
        m = len(self.objectives)
        user: dict[str, float] = {}
        for o, v in zip(self.objectives, y[:m], strict=True):
            user[o.name] = o.sign * float(v) + 0.0
        for c, v in zip(self.constraints, y[m:], strict=True):
            user.setdefault(c.metric, c.value(float(v)) if c.text else float(v))
        return user

    def user_objective(self, stored: float | None, i: int = 0) -> float | None:
        """The i-th objective's stored value in the user's sense (``None`` stays ``None``)."""
        return None if stored is None else self.objectives[i].sign * stored + 0.0

    def to_config(self) -> dict[str, Any]:
        """The declaration, as the config and the store's identity record it."""
        return {
            "objectives": {
                o.name: o.direction if o.threshold is None else [o.direction, o.threshold]
                for o in self.objectives
            },
            "constraints": [c.stored_name for c in self.constraints],
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outcomes) and (self.objectives, self.constraints) == (
            other.objectives,
            other.constraints,
        )

    def __repr__(self) -> str:
        return f"Outcomes({self.to_config()})"


def parse_outcome_constraint(text: str) -> OutcomeConstraint:
    """``"memory <= 8"`` (any one outcome, ``<=`` or ``>=``, a number on the other side; the
    syntax of parameter constraints) or a bare outcome name (a slack, feasible when ``>= 0``).

    Raises:
        ConfigError: for anything else, naming the constraint.
    """
    if not isinstance(text, str):
        raise ConfigError(
            f"constraints: each outcome constraint is a string such as 'memory <= 8', got {text!r}"
        )
    if OUTCOME_NAME.match(text.strip()):
        return OutcomeConstraint(text.strip())
    parsed: LinearConstraint = parse_constraint(text, field="constraints")
    if len(parsed.coefficients) != 1:
        raise ConfigError(
            f"constraints: {text!r}: an outcome constraint bounds one outcome, e.g. 'memory <= 8'; "
            "report a combination as an outcome of its own"
        )
    [(metric, coefficient)] = parsed.coefficients.items()
    return OutcomeConstraint(metric, coefficient, parsed.rhs, " ".join(text.split()))


def _direction(value: Any, field: str) -> str:
    if not isinstance(value, str) or value.lower() not in DIRECTIONS:
        raise ConfigError(f"{field}={value!r}: choose minimize or maximize")
    return DIRECTIONS[value.lower()]


def _name(name: Any, field: str) -> str:
    if not isinstance(name, str) or not OUTCOME_NAME.match(name):
        raise ConfigError(
            f"{field}: an outcome name must match {OUTCOME_NAME.pattern}, got {name!r}"
        )
    return name


def _objective_spec(name: str, spec: Any, field: str) -> tuple[str, float | None]:
    """``(direction, threshold)`` from ``"min"``, ``("min", 50)`` or ``{direction: min, threshold: 50}``."""
    where = f"{field}.{name}"
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"direction", "threshold"})
        if unknown:
            raise ConfigError(f"{where}: no field(s) {unknown}; use direction, threshold")
        direction, threshold = spec.get("direction"), spec.get("threshold")
    elif isinstance(spec, str):
        direction, threshold = spec, None
    elif isinstance(spec, Sequence) and len(spec) == 2:
        direction, threshold = spec
    else:
        raise ConfigError(f"{where}: give 'min', 'max' or ['min', threshold], got {spec!r}")
    direction = _direction(direction, f"{where}.direction")
    if threshold is not None:
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, Real)
            or not math.isfinite(float(threshold))
        ):
            raise ConfigError(f"{where}: the threshold must be a finite number, got {threshold!r}")
        threshold = float(threshold)
    return direction, threshold


__all__ = [
    "DIRECTIONS",
    "Objective",
    "OutcomeConstraint",
    "Outcomes",
    "outcome_vector",
    "parse_outcome_constraint",
    "parse_outcomes",
    "to_number",
]
