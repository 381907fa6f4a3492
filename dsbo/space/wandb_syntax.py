"""The W&B sweep parameter syntax, read into a search box.

A W&B sweep file describes each parameter as ``{value: ...}``, ``{values: [...]}`` or
``{distribution: ..., min: ..., max: ...}`` (W&B's sweep configuration reference);
:func:`parse_parameter` validates one entry against W&B's documented constraints into a
:class:`Parameter`, which a grid enumerates and a random search samples. :func:`search_space`
turns the parameters of a ``method: bayes`` sweep into a bounded box of :class:`Dimension` s
(log-uniform parameters are searched in the log of the value, categoricals by index) with the
map back to the values the program receives. The sweep runner
(:mod:`dsbo.runtime.sweep`) and the training-run problem
(:mod:`dsbo.problems.train_run`) both read parameters through this module.
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
GRID_DISTRIBUTIONS = ("constant", "categorical", "categorical_w_probabilities", "int_uniform", "q_uniform")


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


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


#: The keys of a W&B sweep parameter (W&B's sweep configuration reference).
PARAMETER_KEYS = frozenset(
    {"value", "values", "probabilities", "distribution", "min", "max", "mu", "sigma", "q", "parameters"}
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
        hint = "; ".join(f"did you mean {h[0]!r} for {k!r}?" for k, h in zip(unknown, hints, strict=True) if h)
        raise ConfigError(
            f"{where}: unknown key(s) {unknown}" + (f" ({hint})" if hint else "")
            + f"; a parameter takes {', '.join(sorted(PARAMETER_KEYS))}"
        )
    distribution = spec.get("distribution")
    if distribution is None:  # W&B's inference rules
        if "values" in spec:
            distribution = "categorical_w_probabilities" if "probabilities" in spec else "categorical"
        elif "value" in spec:
            distribution = "constant"
        elif "min" in spec and "max" in spec:
            both_int = all(isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("min", "max"))
            distribution = "int_uniform" if both_int else "uniform"
        else:
            raise ConfigError(f"{where}: give value, values, or min and max (with an optional distribution)")
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(f"{where}: distribution={distribution!r} is not one of {sorted(DISTRIBUTIONS)}")
    allowed = set(DISTRIBUTIONS[distribution]) | {"distribution"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(f"{where}: keys {unknown} do not belong to distribution {distribution!r} (allowed: {sorted(allowed)})")
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
        if not isinstance(p, list) or len(p) != len(s["values"]) or not all(_is_number(v) and v >= 0 for v in p) or sum(p) <= 0:
            raise ConfigError(f"{where}.probabilities must be {len(s['values'])} numbers >= 0 with a positive sum")
    for key in ("min", "max", "q", "mu", "sigma", "a", "b"):
        if key in s and not _is_number(s[key]):
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


#: Distributions a bayes sweep turns into a bounded dimension.
BAYES_DISTRIBUTIONS = (
    "constant", "categorical", "uniform", "q_uniform", "int_uniform", "log_uniform",
    "log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values",
)  # fmt: skip


@dataclass
class Dimension:
    """One searched parameter as a box dimension ``[low, high]`` and the map back to the
    value the program receives: ``linear`` (``uniform``, ``q_uniform``: the value itself,
    rounded to the ``q`` grid), ``log`` (``log_uniform*``: the natural log of the value, so the
    surrogate sees decades evenly), ``int`` (``int_uniform``), ``index`` (``categorical``: the
    position in ``values``, an integer dimension; a surrogate reads the order of the list)."""

    name: str
    kind: str
    low: float
    high: float
    q: float | None = None
    values: list[Any] | None = None
    #: The values' ``[min, max]`` as the sweep file gives them (``*_values`` distributions):
    #: a decoded value is clipped to them, as ``exp(log(max))`` may round above ``max``.
    limits: tuple[float, float] | None = None

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "index")

    def decode(self, u: float) -> Any:
        if self.kind == "index":
            return self.values[int(round(u))]
        if self.kind == "int":
            return int(round(u))
        value = math.exp(u) if self.kind == "log" else float(u)
        if self.limits is not None:
            value = min(max(value, self.limits[0]), self.limits[1])
        return _quantized(value, self.q) if self.q is not None else value

    def encode(self, value: Any, where: str) -> float:
        if self.kind == "index":
            if value not in self.values:
                raise ConfigError(f"{where}={value!r} is not one of parameters.{self.name}.values {self.values}")
            return float(self.values.index(value))
        if not _is_number(value):
            raise ConfigError(f"{where}={value!r} must be a number")
        u = math.log(value) if self.kind == "log" and value > 0 else float(value)
        if self.kind == "log" and value <= 0 or not self.low - 1e-12 <= u <= self.high + 1e-12:
            raise ConfigError(f"{where}={value!r} lies outside parameters.{self.name}")
        return u


@dataclass
class SearchSpace:
    """The sweep's parameters as a dsbo search box: the searched :class:`Dimension` s, the
    fixed ``value`` s, and the parameter order of the sweep file."""

    dimensions: list[Dimension]
    fixed: dict[str, Any]
    order: list[str]

    def params(self, x: Sequence[float]) -> dict[str, Any]:
        """The run's parameters (sweep order) for the point ``x``."""
        values = {d.name: d.decode(u) for d, u in zip(self.dimensions, x, strict=True)}
        return {name: values[name] if name in values else self.fixed[name] for name in self.order}

    def point(self, params: dict[str, Any], where: str) -> list[float]:
        """The point of ``params`` (``{name: value}`` for every searched parameter)."""
        missing = [d.name for d in self.dimensions if d.name not in params]
        unknown = sorted(set(params) - {d.name for d in self.dimensions})
        if missing or unknown:
            raise ConfigError(f"{where} needs a value for each searched parameter {[d.name for d in self.dimensions]}; "
                              f"missing {missing}, unknown {unknown}")
        return [d.encode(params[d.name], f"{where}.{d.name}") for d in self.dimensions]


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def search_space(parameters: Sequence[Parameter], source: str = "sweep") -> SearchSpace:
    """The dsbo search space of a bayes sweep's parameters (see :class:`Dimension`).

    Raises:
        ConfigError: naming the parameter whose constraint cannot be a bounded dimension (a
            ``normal``/``beta`` prior, ``probabilities``, ``values`` of mixed types, an empty
            range), or when nothing is searched.
    """
    dims, fixed = [], {}
    for p in parameters:
        where, d, s = f"{source}: parameters.{p.name}", p.distribution, p.spec
        if d not in BAYES_DISTRIBUTIONS:
            hint = " (drop probabilities: they are a prior for method: random)" if d == "categorical_w_probabilities" else ""
            raise ConfigError(f"{where}: method: bayes searches a bounded box; distribution {d!r} cannot be one{hint}. "
                              f"Use one of {list(BAYES_DISTRIBUTIONS)}")
        if d == "constant":
            fixed[p.name] = s["value"]
            continue
        if d == "categorical":
            values = list(s["values"])
            types = sorted({_value_type(v) for v in values})
            if len(types) > 1:
                raise ConfigError(f"{where}.values {values} mix types {types}: a bayes dimension orders one kind of value")
            if any(isinstance(v, dict | list) for v in values):
                raise ConfigError(f"{where}.values must be numbers, strings or booleans, got {values}")
            if len({json.dumps(v) for v in values}) != len(values):
                raise ConfigError(f"{where}.values {values} repeat a value")
            if len(values) == 1:
                fixed[p.name] = values[0]
                continue
            dims.append(Dimension(p.name, "index", 0.0, float(len(values) - 1), values=values))
            continue
        low, high = float(s["min"]), float(s["max"])
        if d == "int_uniform":
            dim = Dimension(p.name, "int", low, high)
        elif d == "log_uniform":  # min and max are already natural logs
            dim = Dimension(p.name, "log", low, high)
        elif d in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values"):
            dim = Dimension(p.name, "log", math.log(low), math.log(high), q=s.get("q"), limits=(low, high))
        else:  # uniform, q_uniform
            dim = Dimension(p.name, "linear", low, high, q=s.get("q") if d == "q_uniform" else None)
        if not dim.low < dim.high:
            raise ConfigError(f"{where}: min={s['min']} and max={s['max']} leave nothing to search; use value: for a fixed parameter")
        dims.append(dim)
    if not dims:
        raise ConfigError(f"{source}: method: bayes needs at least one searched parameter; every parameter is fixed")
    return SearchSpace(dims, fixed, [p.name for p in parameters])
