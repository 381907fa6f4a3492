"""The environment: where the values of the contexts a campaign does not optimize come from,
per trial (a sensor, the caller, or the simulated problem's ``p(z)``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch
from torch import Tensor

from dsbo.contexts.settings import ContextValues
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem


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
