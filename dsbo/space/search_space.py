r"""A search space: named parameters, their conditions and linear constraints, and the map
between the values users see and the model's box.

The model sees a point ``u`` of a box ``prod_j [l_j, h_j]`` of *columns* (each parameter owns
``width`` consecutive columns, :mod:`dsbo.space.parameters`); the evaluator, the history, the
summary and the command lines see ``{name: value}`` in the parameters' own types.

- :meth:`SearchSpace.decode` maps any point of the box to the values of the *active*
  parameters (a conditional parameter whose parents do not take its values is left out).
- :meth:`SearchSpace.encode` maps values back (strictly: a value of the wrong type, an unknown
  or an inactive parameter is a :class:`~dsbo.errors.ConfigError` naming it).
- :meth:`SearchSpace.snap` is ``encode . decode`` on rows: integers rounded, one-hot groups set
  to their largest column, inactive parameters' columns at their fixed value, so that the
  points a campaign records are exactly the points it evaluates.
- :meth:`SearchSpace.inequality_constraints` gives the linear constraints
  (:mod:`dsbo.space.constraints`) in BoTorch's ``(indices, coefficients, rhs)`` form.

Example:
    >>> space = SearchSpace({"lr": Float(1e-4, 1e-1, log=True), "optimizer": Choice(["adam", "sgd"]),
    ...                      "momentum": Float(0.0, 0.99, when={"optimizer": "sgd"})})
    >>> space.column_names
    ['lr', 'optimizer=adam', 'optimizer=sgd', 'momentum']
    >>> space.decode(space.encode({"lr": 0.001, "optimizer": "adam"}))
    {'lr': 0.001, 'optimizer': 'adam'}
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dsbo.errors import ConfigError
from dsbo.space.constraints import LinearConstraint, log_ratio_form, parse_constraint
from dsbo.space.parameters import (
    PARAMETER_NAME,
    Choice,
    Fixed,
    Float,
    Int,
    Parameter,
    is_number,
    parameter_from_config,
)

#: Largest number of floor/ceil roundings tried to keep an integer point inside the constraints.
MAX_REPAIRS = 256


def _matches(value: Any, allowed: Sequence[Any]) -> bool:
    """Whether ``value`` is one of ``allowed``, as :class:`Choice` compares values: equal
    numbers match (``1`` and ``1.0``), a boolean or a string only its own type."""
    return any(
        (type(value) is type(a) and value == a)
        or (is_number(value) and is_number(a) and value == a)
        for a in allowed
    )


class SearchSpace:
    """Named parameters (in order), conditions and linear parameter constraints.

    Args:
        parameters: ``{name: parameter}``; a parameter is a :class:`~dsbo.space.Float`,
            :class:`~dsbo.space.Int`, :class:`~dsbo.space.Choice` or :class:`~dsbo.space.Fixed`,
            or its config mapping (``{type: float, low: ..., high: ..., log: true}``).
        constraints: Linear constraints as strings (``"x + y <= 1"``).

    Raises:
        ConfigError: naming the parameter or constraint at fault: a bad name, a condition on
            an unknown parameter or value (or a circle of conditions), a constraint on an
            unknown, categorical, conditional or log-scale parameter, or constraints that no
            point satisfies.
    """

    def __init__(
        self,
        parameters: Mapping[str, Parameter | Mapping[str, Any] | Sequence[float]],
        constraints: Iterable[str | LinearConstraint] = (),
    ) -> None:
        if isinstance(parameters, SearchSpace):
            parameters, constraints = parameters.parameters, [*parameters.constraints, *constraints]
        if not isinstance(parameters, Mapping) or not parameters:
            raise ConfigError("parameters must be a non-empty mapping {name: parameter}")
        self.parameters: dict[str, Parameter] = {}
        for name, spec in parameters.items():
            if not isinstance(name, str) or not PARAMETER_NAME.match(name):
                raise ConfigError(
                    f"parameters.{name}: a parameter name must match {PARAMETER_NAME.pattern}"
                )
            self.parameters[name] = parameter_from_config(name, spec)
        self._order = self._check_conditions()
        self.slices: dict[str, slice] = {}
        self.column_names: list[str] = []
        self.bounds: list[tuple[float, float]] = []
        start = 0
        for name, p in self.parameters.items():
            self.slices[name] = slice(start, start + p.width)
            start += p.width
            if isinstance(p, Choice) and not p.ordered:
                self.column_names += [f"{name}={v}" for v in p.values]
            else:
                self.column_names += [name] * p.width
            self.bounds += p.bounds()
        if not self.bounds:
            raise ConfigError("parameters: every parameter is fixed; at least one must be searched")
        if isinstance(constraints, str):
            constraints = [constraints]
        self.constraints: list[LinearConstraint] = [
            c if isinstance(c, LinearConstraint) else parse_constraint(c) for c in constraints
        ]
        self._model_constraints = [self._to_columns(c) for c in self.constraints]
        if self._model_constraints:
            self._check_feasible()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_box(
        cls,
        names: Sequence[str],
        bounds: Sequence[tuple[float, float]],
        integer: Iterable[int] = (),
    ) -> SearchSpace:
        """The space of a plain box: a :class:`Float` per dimension, an :class:`Int` for the
        ``integer`` ones (the model columns are the box itself)."""
        integer = set(integer)
        parameters: dict[str, Parameter] = {}
        for j, (name, (low, high)) in enumerate(zip(names, bounds, strict=True)):
            if j in integer:
                parameters[name] = Int(math.ceil(low - 1e-9), math.floor(high + 1e-9))
            else:
                parameters[name] = Float(float(low), float(high))
        return cls(parameters)

    def _check_conditions(self) -> list[str]:
        """Validate every ``when``; the parameters in an order where parents come first."""
        for name, p in self.parameters.items():
            for parent, allowed in p.conditions.items():
                where = f"parameters.{name}.when.{parent}"
                if parent == name:
                    raise ConfigError(f"{where}: a parameter cannot depend on itself")
                if parent not in self.parameters:
                    raise ConfigError(
                        f"{where}: there is no parameter {parent!r}; parameters: {list(self.parameters)}"
                    )
                q = self.parameters[parent]
                if isinstance(q, Float):
                    raise ConfigError(
                        f"{where}: a condition needs a choice, int or fixed parameter; {parent} is a float"
                    )
                bad = [v for v in allowed if not q.allows(v)]
                if bad:
                    values = list(q.values) if isinstance(q, Choice) else q.to_config()
                    raise ConfigError(f"{where}: {bad[0]!r} is not a value of {parent} ({values})")
        order: list[str] = []
        visiting: set[str] = set()

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in order:
                return
            if name in visiting:
                raise ConfigError(
                    f"parameters: the conditions form a circle: {' -> '.join((*path, name))}"
                )
            visiting.add(name)
            for parent in self.parameters[name].conditions:
                visit(parent, (*path, name))
            visiting.discard(name)
            order.append(name)

        for name in self.parameters:
            visit(name, ())
        return order

    def _to_columns(self, c: LinearConstraint) -> tuple[list[int], list[float], float]:
        where = f"parameter_constraints: {c.text!r}"
        for name in c.coefficients:
            if name not in self.parameters:
                raise ConfigError(
                    f"{where}: there is no parameter {name!r}; parameters: {list(self.parameters)}"
                )
            p = self.parameters[name]
            if not isinstance(p, Float | Int):
                raise ConfigError(
                    f"{where}: {name} is a {p.kind}; constraints take float and int parameters"
                )
            if p.conditions:
                raise ConfigError(
                    f"{where}: {name} is conditional; a constraint cannot bind a parameter that may not exist"
                )
        logs = [n for n in c.coefficients if self.parameters[n].log]
        if not logs:
            return (
                [self.slices[n].start for n in c.coefficients],
                list(c.coefficients.values()),
                c.rhs,
            )
        ratio = log_ratio_form(c)
        if len(logs) == len(c.coefficients) and ratio is not None:
            p, r, log_c = ratio
            return [self.slices[p].start, self.slices[r].start], [1.0, -1.0], log_c
        raise ConfigError(
            f"{where}: {logs[0]} is on a log scale; a constraint on log-scale parameters must read "
            "'a >= c * b' (linear in their logs), others take parameters on a linear scale"
        )

    def _check_feasible(self) -> None:
        from scipy.optimize import linprog  # only spaces with constraints pay for scipy

        A = [[0.0] * self.dim for _ in self._model_constraints]
        b = []
        for row, (cols, coefs, rhs) in zip(A, self._model_constraints, strict=True):
            for j, a in zip(cols, coefs, strict=True):
                row[j] -= a  # sum a x >= rhs  <=>  -sum a x <= -rhs
            b.append(-rhs)
        result = linprog([0.0] * self.dim, A_ub=A, b_ub=b, bounds=self.bounds, method="highs")
        if result.status != 0:
            texts = "; ".join(repr(c.text) for c in self.constraints)
            raise ConfigError(
                f"parameter_constraints: no point of the parameters' ranges satisfies {texts}"
            )

    # ------------------------------------------------------------------ facts
    @property
    def dim(self) -> int:
        """Number of model columns."""
        return len(self.bounds)

    @property
    def names(self) -> list[str]:
        return list(self.parameters)

    @property
    def searched(self) -> list[str]:
        """The parameters that own columns (all but the fixed ones)."""
        return [n for n, p in self.parameters.items() if p.width]

    @property
    def groups(self) -> list[list[int]]:
        """The columns of each searched parameter: what counts as one changed parameter."""
        return [list(range(self.dim))[self.slices[n]] for n in self.searched]

    @property
    def integer_columns(self) -> list[int]:
        """Columns that hold integers (integers with step 1, ordered choices' indices)."""
        return [
            self.slices[n].start
            for n, p in self.parameters.items()
            if (isinstance(p, Int) and p.is_integer_column) or (isinstance(p, Choice) and p.ordered)
        ]

    @property
    def categorical(self) -> list[str]:
        """The unordered choices (one-hot groups)."""
        return [n for n, p in self.parameters.items() if isinstance(p, Choice) and not p.ordered]

    @property
    def one_hot_groups(self) -> list[list[int]]:
        """The columns of each unordered choice's one-hot block (what a categorical kernel reads)."""
        return [
            list(range(self.dim))[self.slices[n]]
            for n in self.categorical
            if self.parameters[n].width
        ]

    @property
    def conditional(self) -> list[str]:
        return [n for n, p in self.parameters.items() if p.conditions]

    @property
    def is_box(self) -> bool:
        """Whether every column is a parameter's own value (linear floats and step-1 integers,
        no conditions, no constraints): a plain box, as the benchmark problems are."""
        if self.constraints or self.conditional:
            return False
        return all(
            (isinstance(p, Float) and not p.log and p.step is None)
            or (isinstance(p, Int) and p.is_integer_column)
            for p in self.parameters.values()
        )

    # ------------------------------------------------------------------ maps
    def _active(self, name: str, values: Mapping[str, Any], active: Mapping[str, bool]) -> bool:
        return all(
            active.get(parent, False) and parent in values and _matches(values[parent], allowed)
            for parent, allowed in self.parameters[name].conditions.items()
        )

    def decode(self, u: Sequence[float]) -> dict[str, Any]:
        """The values of the active parameters at the model point ``u`` (declaration order)."""
        u = [float(v) for v in u]
        if len(u) != self.dim:
            raise ConfigError(f"a point of this space has {self.dim} columns, got {len(u)}")
        values: dict[str, Any] = {}
        active: dict[str, bool] = {}
        for name in self._order:
            active[name] = self._active(name, values, active)
            if active[name]:
                values[name] = self.parameters[name].decode(u[self.slices[name]])
        return {n: values[n] for n in self.parameters if n in values}

    def encode(
        self, values: Mapping[str, Any], where: str = "parameters", partial: bool = False
    ) -> list[float]:
        """The model point of ``values`` (``{name: value}`` for every active searched parameter;
        fixed ones may be given if equal to their value).

        Args:
            partial: Fill missing parameters with the middle of their range (a default that
                names only some parameters).

        Raises:
            ConfigError: naming the parameter: an unknown name, a missing value, a value of
                the wrong type or outside the range, a value for an inactive parameter.
        """
        if not isinstance(values, Mapping):
            raise ConfigError(f"{where} must be a mapping {{name: value}}, got {values!r}")
        unknown = [k for k in values if k not in self.parameters]
        if unknown:
            raise ConfigError(
                f"{where}.{unknown[0]}: there is no such parameter; parameters: {list(self.parameters)}"
            )
        u = [0.0] * self.dim
        full: dict[str, Any] = {}
        active: dict[str, bool] = {}
        for name in self._order:
            p = self.parameters[name]
            active[name] = self._active(name, full, active)
            if not active[name]:
                if name in values and p.width:
                    parents = {k: full.get(k) for k in p.conditions}
                    raise ConfigError(
                        f"{where}.{name}: {name} is inactive when {parents}; leave it out"
                    )
                u[self.slices[name]] = p.inactive()
                continue
            if name in values:
                value = values[name]
            elif isinstance(p, Fixed):
                value = p.value
            elif partial:
                value = p.center()
            else:
                raise ConfigError(f"{where}: no value for {name}")
            u[self.slices[name]] = p.encode(value, f"{where}.{name}")
            full[name] = value
        return u

    def snap(self, u: Sequence[float]) -> list[float]:
        """``encode(decode(u))``: the canonical model point of the values at ``u``, moved to
        the nearest rounding that satisfies the constraints when rounding broke one."""
        values = self.decode(u)
        snapped = self.encode(values)
        if self._model_constraints and not self.feasible(snapped):
            snapped = self._repair(u, values, snapped)
        return snapped

    def _repair(
        self, u: Sequence[float], values: dict[str, Any], snapped: list[float]
    ) -> list[float]:
        """The rounding (floor or ceiling of each integer or stepped float in a constraint)
        closest to ``u`` that satisfies the constraints; ``snapped`` if none does."""
        bound = {
            n
            for c in self.constraints
            for n in c.coefficients
            if isinstance(self.parameters[n], Int)
            or getattr(self.parameters[n], "step", None) is not None
        }
        options = []
        for n in sorted(bound):
            p = self.parameters[n]
            raw = math.exp(u[self.slices[n].start]) if p.log else u[self.slices[n].start]
            k = (raw - p.low) / p.step
            if isinstance(p, Int):
                top = (p.high - p.low) // p.step
                grid = {
                    int(p.low + p.step * min(max(0, f(k)), top)) for f in (math.floor, math.ceil)
                }
            else:  # a stepped float: its grid points as decode gives them
                points = (p.low + p.step * f(k) for f in (math.floor, math.ceil))
                grid = {p.decode([math.log(v) if p.log else v]) for v in points}
            options.append((n, sorted(grid)))
        best, best_distance = snapped, math.inf
        for combo in itertools.islice(itertools.product(*(o for _, o in options)), MAX_REPAIRS):
            trial = self.encode(
                {**values, **dict(zip([n for n, _ in options], combo, strict=True))}
            )
            if self.feasible(trial):
                distance = sum((a - b) ** 2 for a, b in zip(trial, u, strict=True))
                if distance < best_distance:
                    best, best_distance = trial, distance
        return best

    def feasible(self, u: Sequence[float], tol: float = 1e-9) -> bool:
        """Whether the model point ``u`` satisfies every linear constraint."""
        return all(
            sum(a * u[j] for j, a in zip(cols, coefs, strict=True))
            >= rhs - tol * max(1.0, abs(rhs))
            for cols, coefs, rhs in self._model_constraints
        )

    def inequality_constraints(self) -> list[tuple[list[int], list[float], float]]:
        """The linear constraints over model columns: ``sum_i coefficients_i u[indices_i] >= rhs``
        (BoTorch's ``inequality_constraints``, as plain lists)."""
        return [(list(c), list(a), float(r)) for c, a, r in self._model_constraints]

    def default(
        self, values: Mapping[str, Any] | None = None, where: str = "default"
    ) -> list[float]:
        """The model point of a default configuration that may name only some parameters (the
        others at the middle of their range)."""
        return self.encode(values or {}, where=where, partial=True)

    # ------------------------------------------------------------------ config
    def to_config(self) -> dict[str, Any]:
        """``{"parameters": {...}, "parameter_constraints": [...]}``: what :meth:`from_config`
        reads back (and what a store records as the space it was written for)."""
        out: dict[str, Any] = {"parameters": {n: p.to_config() for n, p in self.parameters.items()}}
        if self.constraints:
            out["parameter_constraints"] = [c.text for c in self.constraints]
        return out

    @classmethod
    def from_config(cls, parameters: Any, constraints: Any = ()) -> SearchSpace:
        """The space of a config's ``parameters`` mapping and ``parameter_constraints`` list."""
        if not isinstance(parameters, Mapping) or not parameters:
            raise ConfigError(
                "parameters must be a mapping such as {lr: {type: float, low: 1e-4, high: 0.1, log: true}}"
            )
        if constraints is None:
            constraints = ()
        if isinstance(constraints, str) or not isinstance(constraints, Sequence):
            raise ConfigError(
                "parameter_constraints must be a list of strings such as ['x + y <= 1']"
            )
        return cls(parameters, constraints)

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={p!r}" for n, p in self.parameters.items())
        extra = f", constraints={[c.text for c in self.constraints]}" if self.constraints else ""
        return f"SearchSpace({body}{extra})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SearchSpace) and self.to_config() == other.to_config()

    __hash__ = None  # type: ignore[assignment]


__all__ = ["SearchSpace"]
