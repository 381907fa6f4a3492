"""The space of :class:`~dsbo.integrations.ray.DsboSearch`: Ray Tune's ``param_space`` as dsbo
parameters, and a Ray configuration as a dsbo point and back.

Example:
    >>> from ray import tune
    >>> space, paths = convert_search_space(
    ...     {"model": {"lr": tune.loguniform(1e-4, 1e-1)}, "act": tune.choice(["relu", "gelu"])}
    ... )
    >>> space  # {'model.lr': Float(0.0001, 0.1, log=True), 'act': Choice(['relu', 'gelu'])}
    >>> config_of({"model.lr": 0.01, "act": "relu"}, paths)
    {'model': {'lr': 0.01}, 'act': 'relu'}

**The space.** Either dsbo parameters given to the searcher (``DsboSearch({"lr":
dsbo.Float(1e-4, 1e-1, log=True), ...})``, the configuration's keys are their names) or Ray's
``param_space``, converted by :func:`convert_search_space`: ``uniform``/``loguniform`` to
``Float``, ``quniform``/``qloguniform`` to ``Float`` on the multiples of ``q`` between the
bounds (as Ray samples them), ``randint``/``lograndint`` to ``Int`` with the upper bound
excluded, ``qrandint``/``qlograndint`` to ``Int`` on the multiples of ``q`` (upper bound
included, except for ``q=1``), ``choice`` to ``Choice``. Nested dicts are flattened: the
parameter ``{"model": {"lr": ...}}`` is named ``model.lr`` in dsbo (a key that is not a dsbo
name is rewritten, ``val/lr`` to ``val_lr``: :func:`dsbo_name`) and the configuration handed
to Ray is nested again (:func:`config_of`); constants stay Ray's (it merges them into every
configuration). ``grid_search``, ``sample_from``, ``randn``/``qrandn`` (unbounded) and domains
inside lists raise :class:`~dsbo.errors.ConfigError` naming the parameter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ray.tune.search.sample import Categorical, Domain, Integer, LogUniform, Quantized, Uniform
from ray.tune.search.sample import Float as RayFloat

from dsbo.errors import ConfigError
from dsbo.space import Choice, Float, Int, Parameter

_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.]")


def dsbo_name(key: str) -> str:
    """``key`` as a dsbo parameter or outcome name: each character a name cannot hold becomes
    ``_``, and a name that does not start with a letter or ``_`` gets one in front."""
    name = _NOT_A_NAME.sub("_", str(key))
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


def domain_to_parameter(domain: Domain, name: str) -> Parameter:
    """The dsbo parameter of one Ray domain (the module docstring's table).

    Raises:
        ConfigError: naming ``name`` for a domain DsboSearch cannot search.
    """
    if isinstance(domain, Categorical):
        if domain.is_grid():
            raise ConfigError(
                f"param_space {name!r}: grid_search cannot be searched by DsboSearch; "
                "give it as tune.choice"
            )
        return Choice(list(domain.categories))
    if not isinstance(domain, RayFloat | Integer):
        raise ConfigError(
            f"param_space {name!r}: {type(domain).__name__} domains (tune.sample_from) cannot be "
            "searched by DsboSearch; use uniform, loguniform, quniform, randint, lograndint, "
            "qrandint or choice"
        )
    sampler, q = domain.get_sampler(), None
    if isinstance(sampler, Quantized):
        sampler, q = sampler.get_sampler(), sampler.q
    if not isinstance(sampler, Uniform | LogUniform):
        kind = type(sampler).__name__.lstrip("_")
        raise ConfigError(
            f"param_space {name!r}: {kind} sampling (tune.randn, tune.qrandn) is unbounded; "
            "DsboSearch needs bounds (uniform, loguniform, randint, ...)"
        )
    log, low, high = isinstance(sampler, LogUniform), domain.lower, domain.upper
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ConfigError(f"param_space {name!r}: the bounds ({low}, {high}) must be finite")
    if isinstance(domain, Integer):
        if q is not None and (isinstance(q, bool) or int(q) != q or q < 1):
            raise ConfigError(
                f"param_space {name!r}: an integer domain's q must be an integer >= 1, got {q!r}"
            )
        step = 1 if q is None else int(q)
        # Ray: the upper bound is excluded, except for qrandint/qlograndint with q > 1
        top = high - 1 if step == 1 else high
        low, high = math.ceil(low / step) * step, math.floor(top / step) * step
        return _checked(name, lambda: Int(int(low), int(high), log=log, step=step))
    if q is not None:  # Ray samples the multiples of q between the bounds
        low = round(math.ceil(low / q - 1e-9) * q, 12)
        high = round(math.floor(high / q + 1e-9) * q, 12)
    step_q = None if q is None else float(q)
    return _checked(name, lambda: Float(float(low), float(high), log=log, step=step_q))


def _checked(name: str, make: Callable[[], Parameter]) -> Parameter:
    """``make()``, its ConfigError naming the param_space key ``name``."""
    try:
        return make()
    except ConfigError as exc:
        raise ConfigError(f"param_space {name!r}: {exc}") from None


def leaves(
    spec: Mapping[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """``(path, value)`` of every leaf of a nested param_space (a grid_search dict is a leaf)."""
    for key, value in spec.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and value and set(value) != {"grid_search"}:
            yield from leaves(value, path)
        else:
            yield path, value


def is_searched(value: Any) -> bool:
    """Whether a param_space leaf is something to search (a domain or a grid), not a constant."""
    if isinstance(value, Domain) or (isinstance(value, Mapping) and set(value) == {"grid_search"}):
        return True
    if isinstance(value, list | tuple):
        return any(
            is_searched(v) or (isinstance(v, Mapping) and any(is_searched(x) for _, x in leaves(v)))
            for v in value
        )
    return False


def has_domains(spec: Mapping[str, Any]) -> bool:
    """Whether a (nested) param_space holds anything to search."""
    return any(is_searched(value) for _, value in leaves(spec))


def convert_search_space(
    spec: Mapping[str, Any],
) -> tuple[dict[str, Parameter], dict[str, tuple[str, ...]]]:
    """A Ray Tune ``param_space`` as dsbo parameters ``{name: parameter}`` and each one's path
    in the nested configuration ``{name: keys}``; constants are left out.

    Raises:
        ConfigError: naming the first parameter DsboSearch cannot search.
    """
    space: dict[str, Parameter] = {}
    paths: dict[str, tuple[str, ...]] = {}
    for path, value in leaves(spec):
        where = "/".join(map(str, path))
        if isinstance(value, Mapping) and set(value) == {"grid_search"}:
            raise ConfigError(
                f"param_space {where!r}: grid_search cannot be searched by DsboSearch; "
                "give it as tune.choice"
            )
        if isinstance(value, list | tuple) and is_searched(value):
            raise ConfigError(
                f"param_space {where!r}: a list holding search domains cannot be searched by "
                "DsboSearch; give each domain its own key"
            )
        if not isinstance(value, Domain):
            continue
        name = base = dsbo_name(".".join(map(str, path)))
        k = 2
        while name in space:
            name, k = f"{base}_{k}", k + 1
        space[name], paths[name] = domain_to_parameter(value, where), tuple(path)
    return space, paths


def params_of(
    config: Mapping[str, Any], paths: Mapping[str, tuple[str, ...]], what: str
) -> dict[str, Any]:
    """dsbo's ``{name: value}`` of a configuration as Ray hands it to the trainable, each
    parameter read at its ``paths`` entry.

    Raises:
        ConfigError: naming ``what`` (where the configuration came from) and the first key the
            configuration has no value for.
    """
    params = {}
    for name, path in paths.items():
        node: Any = config
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                raise ConfigError(f"{what}: {dict(config)!r} has no value for {'/'.join(path)!r}")
            node = node[key]
        params[name] = node
    return params


def config_of(params: Mapping[str, Any], paths: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The configuration Ray hands the trainable: dsbo's ``params`` nested as the param_space
    was (``paths``; a name without a path is a key of its own)."""
    config: dict[str, Any] = {}
    for name, value in params.items():
        path = paths.get(name, (name,))
        node = config
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return config


__all__ = [
    "config_of",
    "convert_search_space",
    "domain_to_parameter",
    "dsbo_name",
    "has_domains",
    "is_searched",
    "leaves",
    "params_of",
]
