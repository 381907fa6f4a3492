"""The search spaces of :class:`~dsbo.integrations.optuna.DsboSampler`, as Optuna and dsbo see them.

- :class:`OptunaSpace`: an Optuna search space (the study's intersection search space) as
  dsbo parameters; a categorical is searched by the index of its choice.
- :class:`DsboSpace`: a dsbo search space given to the sampler (``space=``), conditions
  included, as Optuna distributions (:func:`to_distributions`); names and categorical values
  are dsbo's own, and a point is the values of its *active* parameters.

Both map points both ways with the same interface (``distributions``, ``names``,
``parameters``, ``to_dsbo``, ``to_optuna``, ``complete``, ``proposed``) so the sampler holds
either.

Example:
    >>> from dsbo.space import Choice, Float
    >>> space = DsboSpace(
    ...     {"opt": Choice(["adam", "sgd"]), "m": Float(0.0, 0.9, when={"opt": "sgd"})}
    ... )
    >>> space.to_dsbo({"opt": "adam", "m": 0.5})  # m is inactive with adam
    {'opt': 'adam'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from dsbo.errors import ConfigError
from dsbo.integrations.optuna_internals import contains
from dsbo.space import Choice, Fixed, Float, Int, Parameter, SearchSpace
from dsbo.space.parameters import PARAMETER_NAME, is_number


class OptunaSpace:
    """An Optuna search space as dsbo parameters: names (an Optuna name that is not a valid
    dsbo name gets one) and values both ways (a categorical is searched by the index of its
    choice, so any choice object comes back as itself)."""

    def __init__(self, distributions: Mapping[str, BaseDistribution]) -> None:
        self.distributions = dict(sorted(distributions.items()))
        self.names: dict[str, str] = {}
        self.parameters: dict[str, Parameter] = {}
        for i, (name, dist) in enumerate(self.distributions.items()):
            dsbo_name = (
                name
                if PARAMETER_NAME.match(name)
                else f"p{i}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            )
            while dsbo_name in self.parameters:
                dsbo_name = f"_{dsbo_name}"
            self.names[name] = dsbo_name
            self.parameters[dsbo_name] = _parameter(name, dist)
        self.optuna_names = {v: k for k, v in self.names.items()}

    def to_dsbo(self, params: Mapping[str, Any], partial: bool = False) -> dict[str, Any] | None:
        """``{dsbo name: value}`` of Optuna's ``params`` (``None`` if one of the space's is
        missing, unless ``partial``: then the ones given)."""
        out = {}
        for name, dist in self.distributions.items():
            if name not in params:
                if partial:
                    continue
                return None
            value = params[name]
            if partial and not contains(dist, value):  # an enqueued value off the distribution
                continue
            out[self.names[name]] = (
                int(dist.to_internal_repr(value))
                if isinstance(dist, CategoricalDistribution)
                else value
            )
        return out

    def to_optuna(self, params: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for dsbo_name, value in params.items():
            name = self.optuna_names[dsbo_name]
            dist = self.distributions[name]
            if isinstance(dist, CategoricalDistribution):
                out[name] = dist.choices[int(value)]
            elif isinstance(dist, IntDistribution):
                out[name] = int(value)
            else:
                out[name] = float(value)
        return out

    def complete(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` (dsbo names) give every searched parameter."""
        return len(params) == len(self.parameters)

    def proposed(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A proposal's parameters as :meth:`to_dsbo` reads them back from the trial."""
        return dict(params)


class DsboSpace:
    """A dsbo search space given to the sampler: its searched parameters as Optuna
    distributions under the same names, values the same objects both ways (a choice is
    the value itself), and a point is the values of its active parameters.

    Raises:
        ConfigError: for a bad space, or a parameter Optuna has no distribution for (a float
            with both ``log`` and ``step``, an integer with both ``log`` and ``step > 1``).
    """

    def __init__(self, space: Mapping[str, Any] | SearchSpace) -> None:
        if not isinstance(space, Mapping | SearchSpace):
            raise ConfigError(
                "DsboSampler: space must be a mapping {name: dsbo parameter} or a SearchSpace, "
                f"got {space!r}"
            )
        self.parameters = space if isinstance(space, SearchSpace) else SearchSpace(space)
        self.distributions = to_distributions(self.parameters)
        self.names = {name: name for name in self.distributions}
        self.optuna_names = self.names
        self._fixed = {
            n: p.value for n, p in self.parameters.parameters.items() if isinstance(p, Fixed)
        }

    def check(self, name: str, dist: BaseDistribution, number: int) -> None:
        """A ConfigError if the objective suggests ``name`` from another distribution than the
        space's."""
        expected = self.distributions.get(name)
        if expected is not None and dist != expected:
            raise ConfigError(
                f"DsboSampler: trial {number} suggests {name!r} from {dist}, but space= has "
                f"{name!r} as {expected}; suggest it from the same distribution (bounds, log, "
                "step and choices) or change space="
            )

    def to_dsbo(self, params: Mapping[str, Any], partial: bool = False) -> dict[str, Any]:
        """The values of ``params`` (Optuna's, the same names) of the space's parameters that are
        active there; ``partial``: values off their distribution are left out too, and a
        parameter whose parents are not given is kept."""
        values = {
            name: params[name]
            for name, dist in self.distributions.items()
            if name in params and (not partial or contains(dist, params[name]))
        }
        known = {**self._fixed, **values}
        memo: dict[str, bool] = {}

        def active(name: str) -> bool:
            if name not in memo:  # the conditions are acyclic (SearchSpace checks them)
                memo[name] = all(
                    (partial and parent not in known)
                    or (parent in known and active(parent) and _matches(known[parent], allowed))
                    for parent, allowed in self.parameters.parameters[name].conditions.items()
                )
            return memo[name]

        return {name: value for name, value in values.items() if active(name)}

    def to_optuna(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A dsbo point as Optuna's params: the searched parameters (the fixed ones left out)."""
        out: dict[str, Any] = {}
        for name, value in params.items():
            dist = self.distributions.get(name)
            if isinstance(dist, IntDistribution):
                out[name] = int(value)
            elif isinstance(dist, FloatDistribution):
                out[name] = float(value)
            elif dist is not None:
                out[name] = value
        return out

    def complete(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` are a whole point: every active parameter, each in its range."""
        try:
            self.parameters.encode(params)
        except ConfigError:
            return False
        return True

    def proposed(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {name: value for name, value in params.items() if name in self.distributions}


def to_distributions(space: SearchSpace) -> dict[str, BaseDistribution]:
    """Optuna distributions of a dsbo space's searched parameters (fixed ones left out), by name."""
    out: dict[str, BaseDistribution] = {}
    for name, p in space.parameters.items():
        try:
            if isinstance(p, Float):
                out[name] = FloatDistribution(p.low, p.high, log=p.log, step=p.step)
            elif isinstance(p, Int):
                out[name] = IntDistribution(p.low, p.high, log=p.log, step=p.step)
            elif isinstance(p, Choice):
                out[name] = CategoricalDistribution(p.values)
        except ValueError as exc:
            raise ConfigError(
                f"DsboSampler: space= parameter {name!r} has no Optuna distribution: {exc}"
            ) from None
    return out


def _parameter(name: str, dist: BaseDistribution) -> Parameter:
    if isinstance(dist, FloatDistribution):
        return Float(dist.low, dist.high, log=dist.log, step=dist.step)
    if isinstance(dist, IntDistribution):
        return Int(dist.low, dist.high, log=dist.log, step=dist.step)
    if isinstance(dist, CategoricalDistribution):
        return Choice(list(range(len(dist.choices))))
    raise ConfigError(f"parameter {name!r}: DsboSampler cannot search a {type(dist).__name__}")


def _matches(value: Any, allowed: tuple[Any, ...]) -> bool:
    """Whether a parent's value is one a condition allows, as dsbo compares choices (equal
    numbers match, a boolean or a string only its own type)."""
    return any(
        (type(value) is type(a) and value == a)
        or (is_number(value) and is_number(a) and value == a)
        for a in allowed
    )


def searchable(dist: BaseDistribution) -> bool:
    """An Optuna distribution the intersection search space searches (not a single value)."""
    return (
        isinstance(dist, FloatDistribution | IntDistribution | CategoricalDistribution)
        and not dist.single()
    )


__all__ = ["DsboSpace", "OptunaSpace", "searchable", "to_distributions"]
