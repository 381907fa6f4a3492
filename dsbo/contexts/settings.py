"""The ``contexts:`` settings of a campaign, checked against the problem, and the environment
that supplies observed context values.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from dsbo.acquisition.base import OptimizerSettings
from dsbo.contexts.policies import ContextPolicy, make_context_policy
from dsbo.errors import ConfigError
from dsbo.problems.base import Context, Problem

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

    def resolve(self, problem: Problem, optimizer: OptimizerSettings) -> tuple[Problem, ContextPolicy, frozenset[int],
                                                                               frozenset[int]]:  # fmt: skip
        """Check every name and value against ``problem``; returns the problem with the cost
        overrides applied, the policy, and the fixed and observe-only context indices.

        Raises:
            ConfigError: naming the field (``contexts.costs.<name>``, ``contexts.fixed``, ...).
        """
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


class Environment:
    """Where the values of the contexts that are not optimized come from, per trial.

    Args:
        problem: The contextual problem.
        seed: The campaign seed (simulated draws are reproducible per trial index).
        source: A callable returning the contexts as they are now (``{name: value}`` or
            values in context order), e.g. a sensor reading. Without one, a simulated problem
            draws from its ``p(z)`` (uniform); an external black box has no simulation, so its
            values must come from ``source`` or be passed to ``Campaign.ask(contexts=...)``:
            dsbo never invents them.
    """

    def __init__(
        self, problem: Problem, seed: int, source: Callable[[], ContextValues] | None = None
    ) -> None:
        self.problem, self.seed, self.source = problem, seed, source

    @property
    def simulated(self) -> bool:
        from dsbo.problems.black_box import ExternalBlackBox

        return self.source is None and not isinstance(self.problem.test_problem, ExternalBlackBox)

    def values(self, trial_index: int, given: ContextValues | None = None) -> Tensor:
        """The ``c`` context values for the trial with this index."""
        if given is None and self.source is not None:
            given = self.source()
        if given is not None:
            return self.parse(given)
        if not self.simulated:
            raise ConfigError(
                f"the contexts {list(self.problem.context_names)} of {self.problem.name} come from the "
                "environment: pass their current values (Campaign.ask(contexts={...}), "
                "`python -m dsbo.blackbox ask --contexts '{...}'`) or give the campaign an environment callable"
            )
        generator = torch.Generator().manual_seed(
            (self.seed * 1_000_003 + trial_index) % (2**63 - 1)
        )
        low, high = self.problem.context_distribution()
        u = torch.rand(len(self.problem.contexts), generator=generator, dtype=torch.double)
        return low + (high - low) * u

    def parse(self, given: ContextValues) -> Tensor:
        """Context values from a mapping (every context by name) or a sequence, checked."""
        names = list(self.problem.context_names)
        if isinstance(given, Mapping):
            missing = [n for n in names if n not in given]
            extra = sorted(set(given) - set(names))
            if missing or extra:
                raise ConfigError(
                    f"contexts: missing {missing}, unknown {extra}; the contexts are {names}"
                )
            raw = [given[n] for n in names]
        else:
            raw = list(given)
            if len(raw) != len(names):
                raise ConfigError(
                    f"contexts: {len(raw)} values for the {len(names)} contexts {names}"
                )
        values = []
        lb, ub = self.problem.bounds
        for name, context, value in zip(names, self.problem.contexts, raw, strict=True):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise ConfigError(f"contexts.{name}={value!r} must be a finite number")
            if not lb[context.dim] <= value <= ub[context.dim]:
                raise ConfigError(
                    f"contexts.{name}={value} is outside its bounds [{lb[context.dim]:g}, {ub[context.dim]:g}]"
                )
            values.append(float(value))
        return torch.tensor(values, dtype=torch.double)
