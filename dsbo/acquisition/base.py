"""Proposal policies: the interface every acquisition strategy implements, and its registry.

A policy turns a fitted model and the campaign history into ``q`` candidates::

    policy.propose(model, history, problem, q) -> Proposal(X=q x d, metadata=[...])

``model`` is ``None`` for model-free policies (Sobol). Policies register by name, so a YAML
config (``acquisition.name``) or a Python caller can pick them: the registries and the
catalogue of the modules that register each name are :mod:`dsbo.acquisition.catalogue`, and the
optimizer settings :mod:`dsbo.acquisition.settings` (both torch-free, re-exported here).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from botorch.models.model import Model
from botorch.posteriors.fully_bayesian import GaussianMixturePosterior
from torch import Tensor

from dsbo.acquisition.catalogue import (
    POLICIES,
    POSTPROCESSORS,
    PolicyFactory,
    PostProcessorFactory,
    available_policies,
    register_policy,
    register_postprocessor,
)
from dsbo.acquisition.settings import OptimizerSettings
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem


def posterior_moments(
    model: Model, X: Tensor, observation_noise: bool = False
) -> tuple[Tensor, Tensor]:
    """Mean and variance of the model's Gaussian predictive at ``X`` (``batch x d``), each
    ``batch x m``, differentiable in ``X``.

    A fully Bayesian or MAP-SAAS model (a mixture over hyperparameter samples) is moment
    matched to one Gaussian (mixture mean and variance); an ensemble's posterior already
    carries its moment-matched mean and variance. ``observation_noise`` adds the noise where
    the model has one.
    """
    posterior = model.posterior(X.unsqueeze(-2), observation_noise=observation_noise)
    if isinstance(posterior, GaussianMixturePosterior):  # members in the batch dimension 0
        mean, var = posterior.mixture_mean, posterior.mixture_variance
    else:
        mean, var = posterior.mean, posterior.variance
    m = mean.shape[-1]
    shape = (*X.shape[:-1], m)
    return mean.reshape(shape), var.reshape(shape).clamp_min(1e-12)


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
        eval_times: ``n`` measured evaluation seconds of the completed points (NaN where
            unknown), for cost models learned from recorded times; ``None`` if not recorded.
        n_design: How many of the first observations are the initial design (imported
            trials included): stall rules (:mod:`dsbo.acquisition.exploration`) count only
            the observations after them.
        cost_left: What the campaign's cost budget has left (``None``: no cost budget).
            Cost-aware policies propose only points whose (predicted) cost it covers, and
            optimized policies re-optimize an unaffordable candidate under that constraint
            (:mod:`dsbo.acquisition.affordable`).
    """

    X: Tensor
    Y: Tensor
    X_pending: Tensor | None = None
    seed: int = 0
    t: int = 0
    eval_times: Tensor | None = None
    cost_left: float | None = None
    n_design: int = 0

    def seen(self) -> Tensor:
        """The evaluated and pending points (``n x d``): what a proposal should not repeat."""
        if self.X_pending is None or not self.X_pending.numel():
            return self.X
        return torch.cat([self.X, self.X_pending.to(self.X)])


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


def accepts_postprocessor(name: str) -> bool:
    """Whether the registered policy ``name`` optimizes an acquisition function whose
    candidates a post-processor (BONSAI) can prune (``auto`` does)."""
    if name == "auto":
        return True
    return name in POLICIES and hasattr(POLICIES.get(name), "postprocessor")


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


__all__ = [
    "POLICIES",
    "POSTPROCESSORS",
    "History",
    "OptimizerSettings",
    "Policy",
    "PolicyFactory",
    "PostProcessor",
    "PostProcessorFactory",
    "Proposal",
    "accepts_postprocessor",
    "available_policies",
    "make_policy",
    "make_postprocessor",
    "posterior_moments",
    "register_policy",
    "register_postprocessor",
]
