r"""The W&B sweep parameter syntax, read into :mod:`dsbo.space`'s parameter types.

A W&B sweep file describes each parameter as ``{value: ...}``, ``{values: [...]}`` or
``{distribution: ..., min: ..., max: ...}`` (W&B's sweep configuration reference);
:func:`parse_parameter` validates one entry against W&B's documented constraints into a
:class:`Parameter`, which a grid enumerates and a random search samples. :func:`search_space`
turns the parameters of a ``method: bayes`` sweep into a :class:`dsbo.space.SearchSpace`, in
the sweep file's order, each parameter a type of :mod:`dsbo.space.parameters`:

================================  ==========================================================
W&B distribution                  :mod:`dsbo.space` parameter
================================  ==========================================================
``constant`` (``value``)          ``Fixed(value)``
``categorical`` (``values``)      ``Choice(values)``: unordered, one-hot (one value: ``Fixed``)
``int_uniform``                   ``Int(min, max)``
``uniform``                       ``Float(min, max)``
``q_uniform``                     ``Float(a, b, step=q)``; ``Int(a, b, step=q)`` for a whole q
``log_uniform`` (natural logs)    ``Float(exp(min), exp(max), log=True)``
``log_uniform_values``            ``Float(min, max, log=True)``
``inv_log_uniform_values``        ``Float(min, max, log=True)`` (``1 / X`` log-uniform: so is X)
``q_log_uniform_values``          ``Float(a, b, log=True, step=q)``; for a whole q, ints:
                                  ``Int(a, b, log=True, step=q)``
================================  ==========================================================

For the ``q_`` distributions, ``a`` and ``b`` are the first and last multiples of ``q`` in
``[min, max]``: W&B passes ``round(X / q) * q``, a multiple of ``q`` (an int when ``q`` is
whole, as :meth:`Parameter.sample` does), and so does the search, never outside ``[min, max]``.
Log-uniform parameters are searched in the natural log of the value (the surrogate sees
decades evenly) and a decoded value is clipped to ``[min, max]``; a categorical is one-hot,
so the surrogate reads no order into the list. ``normal``, ``beta`` and
``categorical_w_probabilities`` are priors, not ranges: a bayes sweep refuses them. The
sweep runner (:mod:`dsbo.runtime.sweep`) and the training-run problem
(:mod:`dsbo.problems.train_run`) both read parameters through this module.

Example:
    >>> space = search_space([parse_parameter("lr", {"distribution": "log_uniform_values", "min": 1e-4, "max": 0.1}),
    ...                       parse_parameter("act", {"values": ["relu", "tanh"]})])
    >>> space.column_names
    ['lr', 'act=relu', 'act=tanh']
    >>> space.decode(space.encode({"lr": 0.001, "act": "tanh"}))
    {'lr': 0.001, 'act': 'tanh'}
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsbo.errors import ConfigError
from dsbo.space.parameters import Choice, Fixed, Float, Int
from dsbo.space.parameters import Parameter as SpaceParameter
from dsbo.space.search_space import SearchSpace

PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
#: Each distribution W&B documents and the keys its parameter spec may hold.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "categorical": ("values",),
    "categorical_w_probabilities": ("values", "probabilities"),
    "int_uniform": ("min", "max"),
    "uniform": ("min", "max"),
    "q_uniform": ("min", "max", "q"),
    "log_uniform": ("min", "max"),
    "log_uniform_values": ("min", "max"),
    "q_log_uniform": ("min", "max", "q"),
    "q_log_uniform_values": ("min", "max", "q"),
    "inv_log_uniform": ("min", "max"),
    "inv_log_uniform_values": ("min", "max"),
    "normal": ("mu", "sigma"),
    "q_normal": ("mu", "sigma", "q"),
    "log_normal": ("mu", "sigma"),
    "q_log_normal": ("mu", "sigma", "q"),
    "beta": ("a", "b"),
    "q_beta": ("a", "b", "q"),
}
#: Distributions a grid can enumerate.
GRID_DISTRIBUTIONS = (
    "constant",
    "categorical",
    "categorical_w_probabilities",
    "int_uniform",
    "q_uniform",
)


@dataclass
class Parameter:
    """One swept parameter: its name, W&B distribution and that distribution's settings."""

    name: str
    distribution: str
    spec: dict[str, Any]

    def grid_values(self) -> list[Any]:
        """The values a grid search takes (ConfigError for a continuous distribution)."""
        d, s = self.distribution, self.spec
        if d == "constant":
            return [s["value"]]
        if d.startswith("categorical"):
            return list(s["values"])
        if d == "int_uniform":
            return list(range(s["min"], s["max"] + 1))
        if d == "q_uniform":
            q = s.get("q", 1.0)
            steps = math.floor((s["max"] - s["min"]) / q + 1e-9)
            return [_quantized(s["min"] + k * q, q) for k in range(steps + 1)]
        raise ConfigError(
            f"parameters.{self.name}: method: grid cannot enumerate distribution {d!r}; "
            f"use one of {GRID_DISTRIBUTIONS} or method: random"
        )

    def sample(self, rng: np.random.Generator) -> Any:
        """One draw from the parameter's distribution."""
        d, s = self.distribution, self.spec
        if d == "constant":
            return s["value"]
        if d == "categorical":
            return s["values"][int(rng.integers(len(s["values"])))]
        if d == "categorical_w_probabilities":
            p = np.asarray(s["probabilities"], dtype=float)
            return s["values"][int(rng.choice(len(p), p=p / p.sum()))]
        if d == "int_uniform":
            return int(rng.integers(s["min"], s["max"] + 1))
        q = s.get("q")
        if d in ("uniform", "q_uniform"):
            x = rng.uniform(s["min"], s["max"])
        elif d in ("log_uniform", "q_log_uniform"):
            x = math.exp(rng.uniform(s["min"], s["max"]))
        elif d in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values"):
            # inv_log_uniform_values: log(1/X) uniform on [log(1/max), log(1/min)], i.e. X log-uniform.
            x = math.exp(rng.uniform(math.log(s["min"]), math.log(s["max"])))
        elif d == "inv_log_uniform":
            x = math.exp(-rng.uniform(s["min"], s["max"]))
        elif d in ("normal", "q_normal"):
            x = rng.normal(s.get("mu", 0.0), s.get("sigma", 1.0))
        elif d in ("log_normal", "q_log_normal"):
            x = math.exp(rng.normal(s.get("mu", 0.0), s.get("sigma", 1.0)))
        else:  # beta, q_beta
            x = rng.beta(s.get("a", 1.0), s.get("b", 1.0))
        return _quantized(float(x), q) if d.startswith("q_") else float(x)


def _quantized(x: float, q: float | None) -> float | int:
    q = 1.0 if q is None else q
    value = round(x / q) * q
    return int(round(value)) if float(q).is_integer() else float(value)


def is_number(x: Any) -> bool:
    """A finite int or float, not a bool: what W&B's sweep schema accepts as a number (and a
    run summary's value that can be a metric)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


#: The keys of a W&B sweep parameter (W&B's sweep configuration reference).
PARAMETER_KEYS = frozenset(
    {
        "value",
        "values",
        "probabilities",
        "distribution",
        "min",
        "max",
        "mu",
        "sigma",
        "q",
        "parameters",
    }
)


def parse_parameter(name: str, spec: Any) -> Parameter:
    """Validate one ``parameters`` entry against W&B's documented search constraints."""
    where = f"parameters.{name}"
    if not PARAMETER_NAME.match(str(name)):
        raise ConfigError(f"{where}: a parameter name must match {PARAMETER_NAME.pattern}")
    if not isinstance(spec, dict) or not spec:
        raise ConfigError(f"{where} must be a mapping such as {{values: [...]}}, got {spec!r}")
    if "parameters" in spec:
        raise ConfigError(
            f"{where}: nested parameters pass a dict to the program; name the leaves with dots "
            f"instead (e.g. {name}.gamma), which dsbo.train reads as --{name}.gamma"
        )
    unknown = sorted(set(spec) - PARAMETER_KEYS)
    if unknown:
        hints = [difflib.get_close_matches(str(k), sorted(PARAMETER_KEYS), n=1) for k in unknown]
        hint = "; ".join(
            f"did you mean {h[0]!r} for {k!r}?" for k, h in zip(unknown, hints, strict=True) if h
        )
        raise ConfigError(
            f"{where}: unknown key(s) {unknown}"
            + (f" ({hint})" if hint else "")
            + f"; a parameter takes {', '.join(sorted(PARAMETER_KEYS))}"
        )
    distribution = spec.get("distribution")
    if distribution is None:  # W&B's inference rules
        if "values" in spec:
            distribution = (
                "categorical_w_probabilities" if "probabilities" in spec else "categorical"
            )
        elif "value" in spec:
            distribution = "constant"
        elif "min" in spec and "max" in spec:
            both_int = all(
                isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("min", "max")
            )
            distribution = "int_uniform" if both_int else "uniform"
        else:
            raise ConfigError(
                f"{where}: give value, values, or min and max (with an optional distribution)"
            )
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(
            f"{where}: distribution={distribution!r} is not one of {sorted(DISTRIBUTIONS)}"
        )
    allowed = set(DISTRIBUTIONS[distribution]) | {"distribution"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(
            f"{where}: keys {unknown} do not belong to distribution {distribution!r} (allowed: {sorted(allowed)})"
        )
    required = {
        "constant": ("value",),
        "categorical": ("values",),
        "categorical_w_probabilities": ("values", "probabilities"),
    }.get(distribution, tuple(k for k in ("min", "max") if k in DISTRIBUTIONS[distribution]))
    missing = [k for k in required if k not in spec]
    if missing:
        raise ConfigError(f"{where}: distribution {distribution!r} needs {missing}")
    s = dict(spec)
    s.pop("distribution", None)
    if "values" in s and (not isinstance(s["values"], list) or not s["values"]):
        raise ConfigError(f"{where}.values must be a non-empty list")
    if "probabilities" in s:
        p = s["probabilities"]
        if (
            not isinstance(p, list)
            or len(p) != len(s["values"])
            or not all(is_number(v) and v >= 0 for v in p)
            or sum(p) <= 0
        ):
            raise ConfigError(
                f"{where}.probabilities must be {len(s['values'])} numbers >= 0 with a positive sum"
            )
    for key in ("min", "max", "q", "mu", "sigma", "a", "b"):
        if key in s and not is_number(s[key]):
            raise ConfigError(f"{where}.{key}={s[key]!r} must be a finite number")
    if "min" in s and s["min"] > s["max"]:
        raise ConfigError(f"{where}: min={s['min']} must be <= max={s['max']}")
    if distribution == "int_uniform" and not all(isinstance(s[k], int) for k in ("min", "max")):
        raise ConfigError(f"{where}: int_uniform needs integer min and max")
    if distribution.endswith("_values") and s["min"] <= 0:
        raise ConfigError(f"{where}: {distribution} needs min > 0, got {s['min']}")
    for key in ("q", "sigma", "a", "b"):
        if key in s and s[key] <= 0:
            raise ConfigError(f"{where}.{key}={s[key]} must be > 0")
    return Parameter(str(name), distribution, s)


#: Distributions a bayes sweep can search (each is a bounded parameter of :mod:`dsbo.space`).
BAYES_DISTRIBUTIONS = (
    "constant",
    "categorical",
    "uniform",
    "q_uniform",
    "int_uniform",
    "log_uniform",
    "log_uniform_values",
    "q_log_uniform_values",
    "inv_log_uniform_values",
)


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _integral(q: float) -> bool:
    """Whether the step ``q`` is a whole number: its values are ints (as :func:`_quantized`)."""
    return float(q).is_integer()


def _q_grid(where: str, s: dict[str, Any]) -> tuple[float | int, float | int]:
    """The first and last multiple of ``q`` in ``[min, max]``: W&B gives ``round(X / q) * q``,
    a multiple of ``q``; those in the range are the values searched."""
    q = s["q"]
    first = max(math.ceil(s["min"] / q - 1e-9), 1 if s["min"] > 0 else -math.inf)
    last = math.floor(s["max"] / q + 1e-9)
    if last <= first:
        raise ConfigError(
            f"{where}: the multiples of q={q} in [min={s['min']}, max={s['max']}] are "
            f"{'only one value' if last == first else 'no value'}; nothing to search (use value: for a fixed parameter)"
        )

    def value(k: int) -> float | int:
        return int(k * int(q)) if _integral(q) else float(f"{k * q:.12g}")

    return value(first), value(last)


def _bayes_parameter(p: Parameter, where: str) -> SpaceParameter:
    """The :mod:`dsbo.space` parameter of one sweep parameter (see the module docstring)."""
    d, s = p.distribution, p.spec
    if d not in BAYES_DISTRIBUTIONS:
        hint = (
            " (drop probabilities: they are a prior for method: random)"
            if d == "categorical_w_probabilities"
            else ""
        )
        raise ConfigError(
            f"{where}: method: bayes searches a bounded box; distribution {d!r} cannot be one{hint}. "
            f"Use one of {list(BAYES_DISTRIBUTIONS)}"
        )
    if d == "constant":
        return Fixed(s["value"])
    if d == "categorical":
        values = list(s["values"])
        types = sorted({_value_type(v) for v in values})
        if len(types) > 1:
            raise ConfigError(
                f"{where}.values {values} mix types {types}: a bayes sweep searches values of one kind"
            )
        if any(isinstance(v, dict | list) for v in values):
            raise ConfigError(f"{where}.values must be numbers, strings or booleans, got {values}")
        if len({json.dumps(v) for v in values}) != len(values):
            raise ConfigError(f"{where}.values {values} repeat a value")
        return Fixed(values[0]) if len(values) == 1 else Choice(values)
    if s["min"] == s["max"]:
        raise ConfigError(
            f"{where}: min={s['min']} and max={s['max']} leave nothing to search; use value: for a fixed parameter"
        )
    if d == "int_uniform":
        return Int(s["min"], s["max"])
    if d == "uniform":
        return Float(float(s["min"]), float(s["max"]))
    if d == "q_uniform":
        low, high = _q_grid(where, s)
        return (
            Int(low, high, step=int(s["q"])) if _integral(s["q"]) else Float(low, high, step=s["q"])
        )
    if d == "log_uniform":  # min and max are natural logs
        try:
            return Float(math.exp(s["min"]), math.exp(s["max"]), log=True)
        except OverflowError:
            raise ConfigError(
                f"{where}: log_uniform takes the natural logs of the values; exp(max={s['max']}) overflows"
            ) from None
    if d == "q_log_uniform_values":
        low, high = _q_grid(where, s)
        if not _integral(s["q"]):
            return Float(low, high, log=True, step=s["q"])
        return Int(int(low), int(high), log=True, step=int(s["q"]))
    # log_uniform_values, inv_log_uniform_values (log(1 / X) uniform: X is log-uniform too)
    return Float(float(s["min"]), float(s["max"]), log=True)


def search_space(parameters: Sequence[Parameter], source: str = "sweep") -> SearchSpace:
    """The :class:`dsbo.space.SearchSpace` of a bayes sweep's parameters, in the sweep file's
    order (the module docstring has the map from each distribution).

    Raises:
        ConfigError: naming the parameter whose constraint cannot be a bounded parameter (a
            ``normal``/``beta`` prior, ``probabilities``, ``values`` of mixed types, an empty
            range), or when nothing is searched.
    """
    space: dict[str, SpaceParameter] = {}
    for p in parameters:
        where = f"{source}: parameters.{p.name}"
        try:
            space[p.name] = _bayes_parameter(p, where)
        except ConfigError as exc:  # a parameter type's own check: name the sweep parameter
            if str(exc).startswith(where):
                raise
            raise ConfigError(
                f"{where}: {re.sub(r'^(Float|Int|Choice|Fixed): ', '', str(exc))}"
            ) from None
    if all(isinstance(v, Fixed) for v in space.values()):
        raise ConfigError(
            f"{source}: method: bayes needs at least one searched parameter; every parameter is fixed"
        )
    return SearchSpace(space)
