"""The ``contexts:`` settings of a campaign, checked against the problem.

This module imports no torch (what :meth:`ContextSettings.resolve` needs it imports when it
runs), so configuration code starts without it. The environment that supplies observed context
values is :mod:`dsbo.contexts.environment` (:class:`~dsbo.contexts.environment.Environment`,
also importable from here).

Example (a campaign config)::

    contexts:
      policy: sadcbo            # or cubo, vbo, cbo, cabo, dropout, mmdbo
      options: {eta: 0.8}
      costs: {z1: 2.0}          # override the problem's lambda_j
      observed: [n1]            # observe-only: never optimized
      fixed: [z3]               # optimized (and paid for) every iteration
    budget_cost: 120            # stop when the next evaluation would not be affordable
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsbo.errors import ConfigError
from dsbo.registry import lazy_exports

if TYPE_CHECKING:
    from dsbo.acquisition.settings import OptimizerSettings
    from dsbo.contexts.policies import ContextPolicy
    from dsbo.problems.base import Problem

#: What an environment callable returns: ``{context name: value}`` or values in context order.
ContextValues = Mapping[str, float] | Sequence[float]


@dataclass
class ContextSettings:
    """How a campaign treats the problem's context variables.

    Args:
        policy: A registered context policy (``sadcbo``, ``cubo``, ``vbo``, ``cbo``, ``cabo``,
            ``dropout``, ``mmdbo``).
        options: The policy's options (e.g. ``eta``, ``q_points``, ``switch``, ``beta``).
        costs: ``{context: lambda_j}`` overriding the problem's costs.
        observed: Contexts that can only be observed (never optimized).
        fixed: Contexts optimized, and paid for, in every iteration.
    """

    policy: str = "sadcbo"
    options: dict[str, Any] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)
    observed: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)

    @classmethod
    def coerce(
        cls, value: ContextSettings | str | Mapping[str, Any] | None
    ) -> ContextSettings | None:
        if value is None or isinstance(value, ContextSettings):
            return value
        if isinstance(value, str):
            return cls(policy=value)
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
            if unknown:
                raise ConfigError(
                    f"contexts has no field(s) {unknown}; fields: policy, options, costs, observed, fixed"
                )
            return cls(**value)
        raise ConfigError(f"contexts must be a policy name or a mapping, got {value!r}")

    def resolve(
        self, problem: Problem, optimizer: OptimizerSettings
    ) -> tuple[Problem, ContextPolicy, frozenset[int], frozenset[int]]:
        """Check every name and value against ``problem``; returns the problem with the cost
        overrides applied, the policy, and the fixed and observe-only context indices.

        Raises:
            ConfigError: naming the field (``contexts.costs.<name>``, ``contexts.fixed``, ...).
        """
        from dsbo.contexts.policies import make_context_policy
        from dsbo.problems.base import Context

        if not problem.is_contextual:
            raise ConfigError(
                f"contexts: {problem.name} has no context variables; use a contextual problem "
                "(contextual-hartmann4, ...) or declare them (black-box option contexts)"
            )
        names = list(problem.context_names)
        index = {name: k for k, name in enumerate(names)}

        def lookup(field_name: str, items: Sequence[str]) -> frozenset[int]:
            if isinstance(items, str) or not isinstance(items, Sequence):
                raise ConfigError(
                    f"contexts.{field_name} must be a list of context names, got {items!r}"
                )
            unknown = [n for n in items if n not in index]
            if unknown:
                raise ConfigError(
                    f"contexts.{field_name}: {unknown} are not contexts of {problem.name}; contexts: {names}"
                )
            return frozenset(index[n] for n in items)

        fixed, observed = lookup("fixed", self.fixed), lookup("observed", self.observed)
        both = sorted(names[k] for k in fixed & observed)
        if both:
            raise ConfigError(
                f"contexts: {both} cannot be both fixed (optimized) and observed (observe-only)"
            )
        uncontrollable = sorted(names[k] for k in fixed if not problem.contexts[k].controllable)
        if uncontrollable:
            raise ConfigError(
                f"contexts.fixed: {uncontrollable} can only be observed (the problem says so)"
            )
        if not isinstance(self.costs, Mapping):
            raise ConfigError(
                f"contexts.costs must be a mapping {{context: cost}}, got {self.costs!r}"
            )
        lookup("costs", list(self.costs))
        contexts = []
        for k, context in enumerate(problem.contexts):
            cost = self.costs.get(names[k], context.cost)
            if (
                isinstance(cost, bool)
                or not isinstance(cost, int | float)
                or not math.isfinite(cost)
                or cost < 0
            ):
                raise ConfigError(
                    f"contexts.costs.{names[k]} must be a finite number >= 0, got {cost!r}"
                )
            contexts.append(
                Context(context.dim, float(cost), context.controllable, context.low, context.high)
            )
        if not isinstance(self.options, Mapping):
            raise ConfigError(f"contexts.options must be a mapping, got {self.options!r}")
        policy = make_context_policy(self.policy, self.options, optimizer)
        return dataclasses.replace(problem, contexts=tuple(contexts)), policy, fixed, observed


__getattr__, __dir__ = lazy_exports(__name__, {"Environment": "dsbo.contexts.environment"})

__all__ = ["ContextSettings", "ContextValues"]  # and Environment, imported on first use
