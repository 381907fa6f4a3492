"""Proposal policies: the interface every acquisition strategy implements, and its registry.

A policy turns a fitted model and the campaign history into ``q`` candidates::

    policy.propose(model, history, problem, q) -> Proposal(X=q x d, metadata=[...])

``model`` is ``None`` for model-free policies (Sobol). Policies register by name, so a YAML
config (``acquisition.name``) or a Python caller can pick them; later issues add SEBO, BONSAI
and contextual policies through the same registry.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from botorch.models.model import Model
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.registry import Registry


@dataclass
class OptimizerSettings:
    """How acquisition functions are maximized (``botorch.optim.optimize_acqf``).

    Args:
        num_restarts: L-BFGS-B restarts.
        raw_samples: Quasi-random points scored to pick the restarts.
        maxiter: Iterations per L-BFGS-B run.
        batch_limit: Restarts optimized jointly in one batch.
        sequential: For ``q > 1``, optimize the candidates one at a time (greedy).
        mc_samples: Quasi-MC samples for MC acquisition functions.
        fixed_features: ``{dimension index: value}`` held fixed during optimization.
    """

    num_restarts: int = 10
    raw_samples: int = 512
    maxiter: int = 200
    batch_limit: int = 5
    sequential: bool = False
    mc_samples: int = 128
    fixed_features: dict[int, float] | None = None

    def apply_fixed_features(self, X: Tensor) -> Tensor:
        """``X`` with the fixed features set (a copy; ``X`` itself is not changed)."""
        if not self.fixed_features:
            return X
        X = X.clone()
        for j, value in self.fixed_features.items():
            X[..., int(j)] = float(value)
        return X

    def for_dry_run(self) -> OptimizerSettings:
        """Cheap settings for a campaign's dry iteration (:mod:`dsbo.validation`): one restart,
        three iterations, 16 MC samples; ``raw_samples`` and fixed features unchanged."""
        return dataclasses.replace(
            self,
            num_restarts=1,
            maxiter=min(self.maxiter, 3),
            batch_limit=1,
            mc_samples=min(self.mc_samples, 16),
        )

    def validate(self, prefix: str = "acquisition") -> None:
        for name in ("num_restarts", "raw_samples", "maxiter", "batch_limit", "mc_samples"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{prefix}.{name} must be a positive integer, got {value!r}")


@dataclass
class History:
    """What the campaign knows when it asks for candidates.

    Attributes:
        X: ``n x d`` completed points (raw coordinates).
        Y: ``n x (m + c)`` their outcomes (objectives, then constraint slacks).
        X_pending: ``k x d`` points proposed but not yet evaluated (or ``None``).
        seed: The seed of this proposal, for policies that draw random numbers.
        t: The BO iteration index used by schedules (``rho_t``, ``beta_t``): the number of
            completed observations, so ``t >= 1`` whenever a model is fitted.
    """

    X: Tensor
    Y: Tensor
    X_pending: Tensor | None = None
    seed: int = 0
    t: int = 0


@dataclass
class Proposal:
    """Candidates and one metadata dict per candidate (stored with each trial)."""

    X: Tensor
    metadata: list[dict[str, Any]] = field(default_factory=list)


class Policy(Protocol):
    name: str
    needs_model: bool

    def propose(
        self, model: Model | None, history: History, problem: Problem, q: int
    ) -> Proposal: ...


class PostProcessor(Protocol):
    """Turns the dense maximizers of an acquisition function into final candidates.

    Called by every optimizing policy right after ``optimize_acqf`` with the acquisition
    function itself, so it can score alternatives (e.g. BONSAI's pruning toward the default).

    Args (of ``__call__``):
        acqf: The acquisition function that was maximized (deterministic: fixed base samples).
        X: ``q x d`` dense candidates (raw coordinates).
        history: The campaign history (evaluated points, pending points, ``t``).
        problem: The problem (bounds, default point, integer dimensions).
        optimizer: The optimizer settings (fixed features are never changed).
        log_scale: Whether ``acqf`` returns log-acquisition values (qLogNEI, LogEI, ...).

    Returns:
        A :class:`Proposal` with the final candidates and one metadata dict per candidate.
    """

    name: str

    def __call__(
        self,
        acqf: Any,
        X: Tensor,
        history: History,
        problem: Problem,
        optimizer: OptimizerSettings,
        log_scale: bool,
    ) -> Proposal: ...


PolicyFactory = Callable[..., Policy]
POLICIES: Registry[PolicyFactory] = Registry("acquisition")


def register_policy(name: str, description: str = "") -> Callable[[PolicyFactory], PolicyFactory]:
    """Decorator registering a policy class (or factory) under ``name``."""
    return POLICIES.register(name, description)


def available_policies() -> dict[str, str]:
    return POLICIES.available()


PostProcessorFactory = Callable[..., PostProcessor]
POSTPROCESSORS: Registry[PostProcessorFactory] = Registry("postprocess")


def register_postprocessor(
    name: str, description: str = ""
) -> Callable[[PostProcessorFactory], PostProcessorFactory]:
    """Decorator registering a post-processor class (or factory) under ``name``."""
    return POSTPROCESSORS.register(name, description)


def make_postprocessor(name: str, options: Mapping[str, Any] | None = None) -> PostProcessor:
    """Instantiate the post-processor ``name`` (e.g. ``"bonsai"``) with its options."""
    factory = POSTPROCESSORS.get(name)
    options = dict(options or {})
    POSTPROCESSORS.check_options(name, options)
    try:
        return factory(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"postprocess {name!r}: {exc}") from exc


def make_policy(
    name: str, options: Mapping[str, Any] | None = None, optimizer: OptimizerSettings | None = None
) -> Policy:
    """Instantiate the policy ``name`` with its ``options`` and optimizer settings."""
    factory = POLICIES.get(name)
    options = dict(options or {})
    POLICIES.check_options(name, options, reserved=("optimizer",))
    optimizer = optimizer or OptimizerSettings()
    optimizer.validate()
    if "optimizer" in inspect.signature(factory).parameters:
        options["optimizer"] = optimizer
    try:
        return factory(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"acquisition {name!r}: {exc}") from exc
