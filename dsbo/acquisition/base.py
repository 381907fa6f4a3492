"""Proposal policies: the interface every acquisition strategy implements, and its registry.

A policy turns a fitted model and the campaign history into ``q`` candidates::

    policy.propose(model, history, problem, q) -> Proposal(X=q x d, metadata=[...])

``model`` is ``None`` for model-free policies (Sobol). Policies register by name, so a YAML
config (``acquisition.name``) or a Python caller can pick them; later issues add SEBO, BONSAI
and contextual policies through the same registry.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from botorch.generation.gen import gen_candidates_torch
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.posteriors.fully_bayesian import GaussianMixturePosterior
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.registry import Registry


@dataclass
class OptimizerSettings:
    """How acquisition functions are maximized (``botorch.optim.optimize_acqf``).

    The default is BoTorch's: L-BFGS-B from ``num_restarts`` starts picked among
    ``raw_samples`` scored quasi-random points. ``method: sgd`` (or ``adam``) runs a
    ``torch.optim`` optimizer for exactly ``maxiter`` steps at learning rate ``lr`` instead
    (BoTorch's ``gen_candidates_torch``), and ``initial: uniform`` starts from
    ``num_restarts`` uniform random points. The neural-greedy thesis' acquisition optimizer
    (Paria, section 3.7.1: 10 uniform starts x 500 gradient-descent steps at lr 0.01) is
    :meth:`thesis`.

    Args:
        num_restarts: Optimization restarts (starting points).
        raw_samples: Quasi-random points scored to pick the restarts (``initial: raw_samples``).
        maxiter: Iterations per L-BFGS-B run, or the number of steps of ``sgd`` / ``adam``.
        batch_limit: Restarts optimized jointly in one batch.
        sequential: For ``q > 1``, optimize the candidates one at a time (greedy).
        mc_samples: Quasi-MC samples for MC acquisition functions.
        fixed_features: ``{dimension index: value}`` held fixed during optimization.
        method: ``lbfgsb`` (default), ``sgd`` (plain gradient ascent) or ``adam``.
        lr: Learning rate of ``sgd`` / ``adam``.
        initial: ``raw_samples`` (BoTorch's scored starts) or ``uniform`` random starts.
    """

    METHODS = ("lbfgsb", "sgd", "adam")
    INITIAL = ("raw_samples", "uniform")

    num_restarts: int = 10
    raw_samples: int = 512
    maxiter: int = 200
    batch_limit: int = 5
    sequential: bool = False
    mc_samples: int = 128
    fixed_features: dict[int, float] | None = None
    method: str = "lbfgsb"
    lr: float = 0.01
    initial: str = "raw_samples"

    @classmethod
    def thesis(cls, **overrides: Any) -> OptimizerSettings:
        """Paria's neural-greedy optimizer: 10 uniform random starts x 500 gradient steps, lr 0.01."""
        return cls(**{"num_restarts": 10, "maxiter": 500, "method": "sgd", "lr": 0.01,
                      "initial": "uniform", "batch_limit": 10, **overrides})

    def maximize(self, acqf: Any, bounds: Tensor, q: int, seed: int, **kwargs: Any) -> tuple[Tensor, Tensor]:
        """``optimize_acqf`` with these settings over ``bounds``; returns ``(X, values)``.

        ``kwargs`` go to ``optimize_acqf`` (e.g. ``return_best_only``); with
        ``initial: uniform`` the starts are ``num_restarts`` uniform points drawn with ``seed``.
        """
        options: dict[str, Any] = {"batch_limit": self.batch_limit, "seed": seed}
        fixed_features = self.fixed_features
        if self.method == "lbfgsb":
            options["maxiter"] = self.maxiter
        else:
            # gen_candidates_torch does not drop fixed columns from the bounds: pin them there
            if fixed_features:
                bounds = bounds.clone()
                for j, value in fixed_features.items():
                    bounds[:, int(j)] = float(value)
                fixed_features = None
            optimizer = torch.optim.SGD if self.method == "sgd" else torch.optim.Adam
            kwargs["gen_candidates"] = functools.partial(gen_candidates_torch, optimizer=optimizer)
            # exactly maxiter steps: the relative-improvement stop never fires
            options["optimizer_options"] = {"lr": self.lr}
            options["stopping_criterion_options"] = {"maxiter": self.maxiter, "rel_tol": -math.inf}
        if self.initial == "uniform" and "batch_initial_conditions" not in kwargs:
            generator = torch.Generator().manual_seed(seed)
            lower, upper = bounds[0], bounds[1]
            u = torch.rand(self.num_restarts, q, bounds.shape[-1], generator=generator, dtype=bounds.dtype)
            kwargs["batch_initial_conditions"] = self.apply_fixed_features(lower + (upper - lower) * u)
        if "batch_initial_conditions" not in kwargs:
            kwargs.setdefault("raw_samples", self.raw_samples)
        return optimize_acqf(
            acqf,
            bounds=bounds,
            q=q,
            num_restarts=kwargs.pop("num_restarts", self.num_restarts),
            options=options,
            fixed_features=fixed_features,
            **kwargs,
        )

    def apply_fixed_features(self, X: Tensor) -> Tensor:
        """``X`` with the fixed features set (a copy; ``X`` itself is not changed)."""
        if not self.fixed_features:
            return X
        X = X.clone()
        for j, value in self.fixed_features.items():
            X[..., int(j)] = float(value)
        return X

    def for_dry_run(self) -> OptimizerSettings:
        """Cheap settings for a campaign's dry iteration (:mod:`dsbo.campaign.validation`): one restart,
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
        if self.method not in self.METHODS:
            raise ConfigError(f"{prefix}.method={self.method!r}: choose one of {', '.join(self.METHODS)}")
        if self.initial not in self.INITIAL:
            raise ConfigError(f"{prefix}.initial={self.initial!r}: choose one of {', '.join(self.INITIAL)}")
        lr = self.lr
        if isinstance(lr, bool) or not isinstance(lr, int | float) or not (math.isfinite(lr) and lr > 0):
            raise ConfigError(f"{prefix}.lr must be a finite number > 0, got {lr!r}")


def posterior_moments(model: Model, X: Tensor, observation_noise: bool = False) -> tuple[Tensor, Tensor]:
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
    """

    X: Tensor
    Y: Tensor
    X_pending: Tensor | None = None
    seed: int = 0
    t: int = 0
    eval_times: Tensor | None = None


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


def accepts_postprocessor(name: str) -> bool:
    """Whether the registered policy ``name`` optimizes an acquisition function whose
    candidates a post-processor (BONSAI) can prune (``auto`` does)."""
    if name == "auto":
        return True
    return name in POLICIES and hasattr(POLICIES.get(name), "postprocessor")


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
