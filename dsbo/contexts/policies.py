r"""Context policies: which contexts each iteration optimizes, observes or ignores.

Martinelli et al., *Learning relevant contextual variables within Bayesian optimization*
(UAI 2024). Every policy sees the environment's draw ``z_{t+1} ~ p(z)`` (the contexts as they
are now), decides a role per context and proposes the full point ``[x, z]``:

- ``optimized``: ``z_j`` is chosen with ``x`` by the acquisition; its cost ``lambda_j`` is paid;
- ``observed``: ``z_j`` stays at the environment's value and enters the surrogate;
- ``ignored``: ``z_j`` stays at the environment's value and is left out of the surrogate.

An iteration costs ``lambda_x + sum_{optimized} lambda_j`` (Algorithm 1, line 16, whose minus
sign the extracted text lost). Registered policies (the paper's table 1):

==========  ===============================================================================
``sadcbo``  feature-collapsing relevance on the top-value set plus ``Q`` q-UCB points; keep
            contexts up to a cumulative share ``eta``; observe them until the regret-bound
            switch fires, then optimize them (scores per unit cost). Algorithm 1.
``cubo``    context-unaware: the surrogate and the acquisition see ``x`` only.
``vbo``     vanilla BO over ``[x, z]``: every context optimized, every iteration.
``cbo``     contextual BO (Krause & Ong 2011): every context observed, ``x`` chosen at ``z``.
``cabo``    cost-aware BO (Lee et al. 2020) over ``[x, z]``: LogEI minus ``alpha log c(v)``
            with the smoothed cost ``c``; ``alpha`` cools from 1 to 0 over the cost budget.
``dropout`` a random half of the contexts optimized, the rest observed (Li et al. 2017).
``mmdbo``   HSIC relevance (Spagnol et al. 2019); contexts kept up to ``eta`` are optimized,
            the others ignored.
==========  ===============================================================================

Every policy chooses with UCB ``mu + sqrt(beta_t) sigma`` (sec. 5, "Implementation details")
on any registered surrogate. The paper leaves ``beta_t`` to Srinivas et al. (2012): the
default ``"srinivas"`` is their finite-domain schedule ``beta_t = 2 log(D t^2 pi^2 / (6
delta))`` with the input dimension ``D`` in place of the domain size and ``delta = 0.05``;
``beta: 0.2`` is the authors' code. Contexts a user marks observe-only are never optimized;
contexts marked fixed are optimized (and paid for) every iteration.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction, qUpperConfidenceBound
from botorch.acquisition.analytic import LogExpectedImprovement, UpperConfidenceBound
from botorch.models.model import Model
from botorch.sampling import SobolQMCNormalSampler
from torch import Tensor

from dsbo.acquisition.settings import OptimizerSettings
from dsbo.contexts.catalogue import (  # noqa: F401  (available_context_policies: re-exported)
    CONTEXT_POLICIES,
    available_context_policies,
    register_context_policy,
)
from dsbo.contexts.relevance import (
    DISTANCES,
    NORMALIZE,
    collapse_divergences,
    eta_cut,
    hsic_scores,
    normalized_scores,
    top_value_mask,
)
from dsbo.contexts.switching import SWITCH_RULES, regret_bound_check
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.surrogates import SurrogateSpec, fit_surrogate

#: ``|z_j - z~_j|`` (unit-cube fraction) beyond which CaBO has moved (and pays for) a context.
MOVED = 1e-3


@dataclass
class ContextState:
    """What a context policy knows when it proposes (built by the campaign).

    Attributes:
        problem: The problem (its ``contexts`` carry costs and controllability).
        X: ``n x D`` completed points; Y: ``n`` their objective values.
        z: The environment's values of every context now (``contexts`` order).
        t: The BO iteration (1 for the first proposal after the initial design).
        seed: This proposal's seed.
        surrogate: The surrogate spec every model is fitted with.
        optimizer: Acquisition optimizer settings.
        affordable: Cost available for optimizing contexts this iteration
            (``inf`` without a cost budget).
        fixed: Indices of contexts always optimized; observe_only: never optimized.
        phase: SADCBO's phase before this iteration.
        checks: Earlier switch checks (dicts) in order.
        cost_cooling: CaBO's ``alpha`` (1 without a cost budget).
    """

    problem: Problem
    X: Tensor
    Y: Tensor
    z: Tensor
    t: int
    seed: int
    surrogate: SurrogateSpec
    optimizer: OptimizerSettings
    affordable: float = math.inf
    fixed: frozenset[int] = frozenset()
    observe_only: frozenset[int] = frozenset()
    phase: str = "observational"
    checks: list[dict[str, Any]] = field(default_factory=list)
    cost_cooling: float = 1.0

    def controllable(self, k: int) -> bool:
        return self.problem.contexts[k].controllable and k not in self.observe_only

    def cost(self, k: int) -> float:
        return float(self.problem.contexts[k].cost)


@dataclass
class ContextProposal:
    """The point to evaluate, each context's role, the cost paid and what to record."""

    x: Tensor
    roles: dict[str, str]
    cost: float
    metadata: dict[str, Any]


class ContextPolicy(ABC):
    """Base class: decide the roles, then choose ``x`` (and optimized contexts) by UCB."""

    name = "context-policy"

    def __init__(
        self,
        beta: float | str = "srinivas",
        delta: float = 0.05,
        optimizer: OptimizerSettings | None = None,
    ) -> None:
        if (
            isinstance(beta, str)
            and beta != "srinivas"
            or not isinstance(beta, str)
            and not (isinstance(beta, int | float) and not isinstance(beta, bool) and beta > 0)
        ):
            raise ConfigError(f"contexts.options.beta={beta!r}: use a number > 0 or 'srinivas'")
        if not (isinstance(delta, int | float) and 0 < delta < 1):
            raise ConfigError(f"contexts.options.delta={delta!r} must be in (0, 1)")
        self.beta, self.delta = beta, float(delta)
        self.optimizer = optimizer or OptimizerSettings()

    # ------------------------------------------------------------------ interface
    @abstractmethod
    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        """``(model contexts, optimized contexts, metadata)``: indices into ``contexts``."""

    def propose(self, state: ContextState) -> ContextProposal:
        modeled, optimized, metadata = self.decide(state)
        optimized = self.affordable(
            state, [k for k in [*state.fixed, *optimized] if state.controllable(k)]
        )
        modeled = sorted(set(modeled) | set(optimized))
        x, value = self.maximize_ucb(state, modeled, optimized)
        metadata["acq_value"] = value
        return self.proposal(state, x, modeled, optimized, metadata)

    # ------------------------------------------------------------------ shared steps
    def beta_at(self, t: int, dim: int) -> float:
        if self.beta == "srinivas":
            return 2 * math.log(dim * t**2 * math.pi**2 / (6 * self.delta))
        return float(self.beta)

    @staticmethod
    def affordable(state: ContextState, ranked: list[int]) -> list[int]:
        """The contexts of ``ranked`` (most wanted first; fixed contexts first of all, duplicates
        dropped) taken greedily while their summed cost fits ``state.affordable``: a context
        that does not fit is skipped and cheaper ones after it may still be taken."""
        ranked = list(dict.fromkeys(ranked))
        order = [k for k in ranked if k in state.fixed] + [
            k for k in ranked if k not in state.fixed
        ]
        chosen, spent = [], 0.0
        for k in order:
            if spent + state.cost(k) <= state.affordable + 1e-9:
                chosen.append(k)
                spent += state.cost(k)
        return chosen

    @staticmethod
    def columns(state: ContextState, modeled: list[int]) -> list[int]:
        dims = set(state.problem.design_dims) | {state.problem.contexts[k].dim for k in modeled}
        return sorted(dims)

    def fit(self, state: ContextState, columns: list[int]) -> Model:
        bounds = state.problem.bounds[:, columns]
        return fit_surrogate(
            state.surrogate, state.X[:, columns], state.Y.unsqueeze(-1), bounds=bounds
        )

    def maximize_ucb(
        self, state: ContextState, modeled: list[int], optimized: list[int]
    ) -> tuple[Tensor, float]:
        """Fit the surrogate on ``x`` + ``modeled`` contexts and maximize UCB over ``x`` and the
        ``optimized`` contexts, the other modeled contexts held at the environment's values;
        returns the full point (unmodeled contexts at the environment's values)."""
        problem = state.problem
        columns = self.columns(state, modeled)
        model = self.fit(state, columns)
        fixed = {
            columns.index(problem.contexts[k].dim): float(state.z[k])
            for k in modeled
            if k not in optimized
        }
        acqf = UpperConfidenceBound(model, beta=self.beta_at(state.t, len(columns)))
        settings = OptimizerSettings(**{**vars(self.optimizer), "fixed_features": fixed or None})
        X, value = settings.maximize(acqf, problem.bounds[:, columns], q=1, seed=state.seed)
        return self.assemble(state, columns, X.detach().reshape(-1)), float(value)

    @staticmethod
    def assemble(state: ContextState, columns: list[int], values: Tensor) -> Tensor:
        x = torch.empty(state.problem.dim, dtype=torch.double)
        for k, context in enumerate(state.problem.contexts):
            x[context.dim] = state.z[k]
        x[columns] = values.to(x)
        return state.problem.round_to_domain(x)

    @staticmethod
    def proposal(
        state: ContextState,
        x: Tensor,
        modeled: list[int],
        optimized: list[int],
        metadata: dict[str, Any],
    ) -> ContextProposal:
        names = state.problem.context_names
        roles = {
            name: "optimized" if k in optimized else "observed" if k in modeled else "ignored"
            for k, name in enumerate(names)
        }
        cost = state.problem.design_cost + sum(state.cost(k) for k in optimized)
        return ContextProposal(x=x, roles=roles, cost=cost, metadata=metadata)


def make_context_policy(
    name: str, options: Mapping[str, Any] | None = None, optimizer: OptimizerSettings | None = None
) -> ContextPolicy:
    """Instantiate the context policy ``name`` with its options."""
    factory = CONTEXT_POLICIES.get(name)
    options = dict(options or {})
    CONTEXT_POLICIES.check_options(name, options, reserved=("optimizer",))
    return factory(**options, optimizer=optimizer)


@register_context_policy("cubo", "context-unaware BO: the surrogate sees the design only")
class CUBO(ContextPolicy):
    name = "cubo"

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        return [], sorted(state.fixed), {}


@register_context_policy("cbo", "contextual BO (Krause & Ong): every context observed")
class CBO(ContextPolicy):
    name = "cbo"

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        return list(range(len(state.z))), sorted(state.fixed), {}


@register_context_policy("vbo", "vanilla BO over [x, z]: every context optimized")
class VBO(ContextPolicy):
    name = "vbo"

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        every = list(range(len(state.z)))
        return every, every, {}


@register_context_policy("dropout", "a random half of the contexts optimized (Li et al. 2017)")
class Dropout(ContextPolicy):
    name = "dropout"

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        controllable = [k for k in range(len(state.z)) if state.controllable(k)]
        generator = torch.Generator().manual_seed(state.seed)
        chosen = torch.randperm(len(controllable), generator=generator)[
            : math.ceil(len(controllable) / 2)
        ]
        return list(range(len(state.z))), [controllable[i] for i in chosen.tolist()], {}


class RelevancePolicy(ContextPolicy):
    """Shared by SADCBO and MMDBO: ``eta`` and ``gamma`` and the cumulative cut."""

    def __init__(self, eta: float = 0.8, gamma: float = 0.8, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(eta, bool) or not isinstance(eta, int | float) or not 0 < eta <= 1:
            raise ConfigError(f"contexts.options.eta={eta!r} must be in (0, 1]")
        if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not 0 <= gamma <= 1:
            raise ConfigError(f"contexts.options.gamma={gamma!r} must be in [0, 1]")
        self.eta, self.gamma = float(eta), float(gamma)

    def per_unit_cost(self, state: ContextState, scores: Tensor) -> Tensor:
        """Eq. (9): scores of controllable contexts divided by their cost, renormalized."""
        costs = torch.tensor(
            [state.cost(k) if state.controllable(k) else 1.0 for k in range(len(scores))],
            dtype=scores.dtype,
        ).clamp_min(1e-9)
        scaled = scores / costs
        return scaled / scaled.sum() if scaled.sum() > 0 else scaled

    @staticmethod
    def named(state: ContextState, values: Tensor) -> dict[str, float]:
        return {
            name: round(float(v), 6)
            for name, v in zip(state.problem.context_names, values, strict=True)
        }


@register_context_policy(
    "mmdbo", "HSIC-relevant contexts optimized, the rest ignored (Spagnol et al.)"
)
class MMDBO(RelevancePolicy):
    name = "mmdbo"

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        problem = state.problem
        dims = list(problem.context_dims)
        lb, ub = problem.bounds[:, dims]
        scores = hsic_scores((state.X[:, dims] - lb) / (ub - lb), state.Y, self.gamma)
        scores = self.per_unit_cost(
            state, scores / scores.sum() if scores.sum() > 0 else scores + 1.0
        )
        kept = eta_cut(scores, self.eta)
        return (
            kept,
            kept,
            {"scores": self.named(state, scores), "kept": [problem.context_names[k] for k in kept]},
        )


@register_context_policy("sadcbo", "SADCBO (Martinelli et al. 2024, Algorithm 1)")
class SADCBO(RelevancePolicy):
    r"""Sensitivity-analysis-driven contextual BO (Algorithm 1).

    Each iteration fits the full surrogate on ``[x, z]``, scores the contexts by feature
    collapsing (eqs. 4-5) on ``D^BO = D^gamma + D^Q`` (the top-value set, eq. 6, and ``Q``
    q-UCB points at the environment's context, eq. 7), keeps the smallest set of contexts
    whose scores reach ``eta`` (line 7) and fits the reduced surrogate on ``x`` and the kept
    contexts (line 8). In the observational phase the kept contexts are observed; after the
    switch (:mod:`dsbo.contexts.switching`) they are optimized and scored per unit cost
    (eq. 9). Defaults ``eta = 0.8``, ``Q = 10``, ``gamma = 0.8`` (sec. 5, "Implementation
    details").

    Args:
        eta: Cumulative score share kept, in ``(0, 1]``.
        gamma: Top-value threshold of eq. (6).
        q_points: ``Q``, the q-UCB batch added to ``D^BO`` (0: none).
        switch: ``regret-bound`` (eq. 12, the paper) or ``median`` (the authors' code).
        top_set: ``ratio`` (eq. 6) or ``rank`` (the code: the best ``(1 - gamma)`` share).
        noise: KL between predictive distributions of ``y`` (the paper's ``y*``), or of the
            latent ``f`` (``False``, the code).
        distance: ``kl`` (eq. 4) or ``sqrt-kl`` (the code).
        normalize: ``per-sample`` (eq. 5) or ``average-first`` (the code).
        switch_after: Force the switch at this BO iteration instead (an ablation; ``None``).
        beta, delta: UCB's exploration weight and the bound's confidence.
    """

    name = "sadcbo"

    def __init__(
        self,
        eta: float = 0.8,
        gamma: float = 0.8,
        q_points: int = 10,
        switch: str = "regret-bound",
        top_set: str = "ratio",
        noise: bool = True,
        distance: str = "kl",
        normalize: str = "per-sample",
        switch_after: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(eta=eta, gamma=gamma, **kwargs)
        if switch not in SWITCH_RULES:
            raise ConfigError(f"contexts.options.switch={switch!r}; choose one of {SWITCH_RULES}")
        if top_set not in ("ratio", "rank"):
            raise ConfigError(f"contexts.options.top_set={top_set!r}; choose 'ratio' or 'rank'")
        if distance not in DISTANCES or normalize not in NORMALIZE:
            raise ConfigError(
                f"contexts.options: distance in {DISTANCES}, normalize in {NORMALIZE}"
            )
        if isinstance(q_points, bool) or not isinstance(q_points, int) or q_points < 0:
            raise ConfigError(f"contexts.options.q_points={q_points!r} must be an integer >= 0")
        if switch_after is not None and (
            isinstance(switch_after, bool) or not isinstance(switch_after, int) or switch_after < 1
        ):
            raise ConfigError(
                f"contexts.options.switch_after={switch_after!r} must be an integer >= 1 or null"
            )
        self.q_points, self.switch, self.top_set = q_points, switch, top_set
        self.noise, self.distance, self.normalize = bool(noise), distance, normalize
        self.switch_after = switch_after
        #: ``(n, model)``: the full surrogate of the last iteration, reused by the next switch check.
        self.previous_full: tuple[int, Model] | None = None

    def full_model(self, state: ContextState, n: int) -> Model:
        """The full surrogate on the first ``n`` points (the last one is kept for the switch)."""
        if self.previous_full is not None and self.previous_full[0] == n:
            return self.previous_full[1]
        problem = state.problem
        return fit_surrogate(
            state.surrogate, state.X[:n], state.Y[:n].unsqueeze(-1), bounds=problem.bounds
        )

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        problem, n = state.problem, state.X.shape[0]
        full = self.full_model(state, n)
        metadata: dict[str, Any] = {}
        phase = state.phase
        if phase == "observational":
            if self.switch_after is not None:
                if state.t >= self.switch_after:
                    phase = "optimization"
            elif (
                state.t > 1 and n >= 3 and (self.previous_full is None or self.previous_full[0] < n)
            ):
                # (no new observation since the last check, e.g. a failed trial: nothing to test)
                previous = self.full_model(state, n - 1)
                check = regret_bound_check(
                    full,
                    previous,
                    state.X,
                    state.Y,
                    problem.bounds,
                    self.beta_at(state.t, problem.dim),
                    self.delta,
                    self.optimizer,
                    state.seed,
                    rule=self.switch,
                    history=[c["delta_r"] for c in state.checks],
                )
                metadata["switch_check"] = check.as_dict()
                if check.fired:
                    phase = "optimization"
        self.previous_full = (n, full)
        points = state.X[top_value_mask(state.Y, self.gamma, self.top_set)]
        if self.q_points:
            points = torch.cat([points, self.q_ucb_points(state, full)])
        r = collapse_divergences(
            full, points, problem.context_dims, problem.bounds, self.noise, self.distance
        )
        scores = normalized_scores(r, self.normalize)
        if phase == "optimization":
            scores = self.per_unit_cost(state, scores)
        kept = eta_cut(scores, self.eta)
        optimized = kept if phase == "optimization" else sorted(state.fixed)
        metadata.update(
            {
                "phase": phase,
                "scores": self.named(state, scores),
                "kept": [problem.context_names[k] for k in kept],
                "num_scored": int(points.shape[0]),
            }
        )
        return kept, optimized, metadata

    def q_ucb_points(self, state: ContextState, model: Model) -> Tensor:
        """``D^Q`` (eq. 7): ``Q`` points jointly maximizing qUCB over ``x`` at the environment's
        contexts."""
        problem = state.problem
        sampler = SobolQMCNormalSampler(torch.Size([self.optimizer.mc_samples]), seed=state.seed)
        acqf = qUpperConfidenceBound(
            model, beta=self.beta_at(state.t, problem.dim), sampler=sampler
        )
        fixed = {c.dim: float(state.z[k]) for k, c in enumerate(problem.contexts)}
        settings = OptimizerSettings(**{**vars(self.optimizer), "fixed_features": fixed})
        X, _ = settings.maximize(acqf, problem.bounds, q=self.q_points, seed=state.seed)
        return X.detach().reshape(self.q_points, -1)


class CostCooledLogEI(AcquisitionFunction):
    r"""CaBO's acquisition: ``log EI(v) - alpha log c(v)`` with the smoothed cost
    ``c(v) = lambda_x + sum_j lambda_j (1 - exp(-(z_j - z~_j)^2 / (2 l^2)))`` (``l`` in unit-cube
    units, ``z~`` the environment's contexts) and CArBO's cost cooling ``alpha``."""

    def __init__(
        self,
        model: Model,
        best_f: float,
        state: ContextState,
        dims: list[int],
        costs: Tensor,
        lengthscale: float,
    ) -> None:
        super().__init__(model)
        self.logei = LogExpectedImprovement(model, best_f=best_f)
        self.state, self.dims, self.costs, self.lengthscale = state, dims, costs, lengthscale
        lb, ub = state.problem.bounds[:, dims]
        self.span = ub - lb

    def cost(self, X: Tensor) -> Tensor:
        moved = (X[..., self.dims] - self.state.z) / self.span
        smooth = 1 - torch.exp(-(moved**2) / (2 * self.lengthscale**2))
        return self.state.problem.design_cost + (smooth * self.costs).sum(-1)

    def forward(self, X: Tensor) -> Tensor:
        return self.logei(X) - self.state.cost_cooling * torch.log(self.cost(X).squeeze(-1))


@register_context_policy("cabo", "cost-aware BO over [x, z] with a smoothed cost (Lee et al. 2020)")
class CaBO(ContextPolicy):
    name = "cabo"

    def __init__(self, lengthscale: float = 0.1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if (
            isinstance(lengthscale, bool)
            or not isinstance(lengthscale, int | float)
            or lengthscale <= 0
        ):
            raise ConfigError(f"contexts.options.lengthscale={lengthscale!r} must be > 0")
        self.lengthscale = float(lengthscale)

    def decide(self, state: ContextState) -> tuple[list[int], list[int], dict[str, Any]]:
        """Every context is modeled; the controllable ones may be moved (and then paid for):
        which are is up to the cost-weighted acquisition in :meth:`propose`."""
        every = list(range(len(state.z)))
        return every, [k for k in every if state.controllable(k)], {}

    def propose(self, state: ContextState) -> ContextProposal:
        problem = state.problem
        every, movable, metadata = self.decide(state)
        columns = list(range(problem.dim))
        model = self.fit(state, columns)
        dims = list(problem.context_dims)
        costs = torch.tensor([state.cost(k) for k in every], dtype=torch.double)
        acqf = CostCooledLogEI(model, float(state.Y.max()), state, dims, costs, self.lengthscale)
        fixed = {problem.contexts[k].dim: float(state.z[k]) for k in every if k not in movable}
        settings = OptimizerSettings(**{**vars(self.optimizer), "fixed_features": fixed or None})
        X, value = settings.maximize(acqf, problem.bounds, q=1, seed=state.seed)
        x = X.detach().reshape(-1).clone()
        lb, ub = problem.bounds[:, dims]
        moved = ((x[dims] - state.z) / (ub - lb)).abs() > MOVED
        ranked = sorted(
            (k for k in movable if moved[k] or k in state.fixed),
            key=lambda k: -float(((x[dims[k]] - state.z[k]) / (ub[k] - lb[k])).abs()),
        )
        optimized = self.affordable(state, ranked)
        for k in every:
            if k not in optimized:
                x[dims[k]] = state.z[k]
        metadata.update(acq_value=float(value), cost_cooling=state.cost_cooling)
        return self.proposal(state, problem.round_to_domain(x), every, optimized, metadata)
