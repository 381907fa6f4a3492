"""The plain BO policies: qLogNEI (default), UCB, LogEI, qLogNEHVI, qParEGO, and Sobol.

Outcome layout (see :mod:`dsbo.problems.base`): the model has ``m`` objective outputs
followed by ``c`` constraint-slack outputs, a constraint holding when its slack is ``>= 0``.
BoTorch's MC constraint callables are feasible when ``<= 0``, so slack ``s`` becomes ``-s``.

Every policy maximizes its acquisition function with ``botorch.optim.optimize_acqf`` over the
problem's box, then clamps to the bounds and rounds integer dimensions.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import (
    LogConstrainedExpectedImprovement,
    LogExpectedImprovement,
    PosteriorMean,
    UpperConfidenceBound,
)
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.monte_carlo import qUpperConfidenceBound
from botorch.acquisition.multi_objective.logei import (
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.acquisition.multi_objective.objective import IdentityMCMultiOutputObjective
from botorch.acquisition.multi_objective.parego import qLogNParEGO
from botorch.acquisition.objective import GenericMCObjective, ScalarizedPosteriorTransform
from botorch.models import ModelList, ModelListGP
from botorch.models.model import Model
from botorch.sampling import ListSampler, MCSampler, SobolQMCNormalSampler
from torch import Tensor

from dsbo.acquisition.base import (
    History,
    OptimizerSettings,
    PostProcessor,
    Proposal,
    register_policy,
)
from dsbo.acquisition.branches import category_combinations
from dsbo.acquisition.discrete_search import (
    free_categoricals,
    maximize_discrete,
    untried_design,
)
from dsbo.acquisition.exploration import exploration_due, explore
from dsbo.acquisition.mixed_optimizer import maximize_over_combinations
from dsbo.acquisition.reference_point import stable_reference_point
from dsbo.acquisition.repeats import replace_repeats
from dsbo.acquisition.sparsity import DUPLICATE_TOLERANCE
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem


def slack_constraints(problem: Problem) -> list:
    """BoTorch MC constraint callables (feasible when ``<= 0``) for the problem's slacks."""
    m = problem.num_objectives
    return [lambda Z, j=m + i: -Z[..., j] for i in range(problem.num_constraints)]


def best_feasible_value(history: History, problem: Problem) -> float:
    """Best observed objective among feasible points (the worst point if none is feasible)."""
    feasible = problem.is_feasible(history.Y)
    values = history.Y[:, 0]
    return float(values[feasible].max() if feasible.any() else values.min())


def objective_transform(model: Model) -> ScalarizedPosteriorTransform | None:
    """Select the objective (output 0) of a multi-output model, else ``None``."""
    if model.num_outputs == 1:
        return None
    weights = torch.zeros(model.num_outputs, dtype=torch.double)
    weights[0] = 1.0
    return ScalarizedPosteriorTransform(weights)


def incumbents(history: History, k: int = 3) -> Tensor:
    """The ``k`` best evaluated points by the first objective (``k x d``), extra starts of the
    acquisition optimization: an improvement is often found next to them."""
    if history.X.shape[0] == 0:
        return history.X
    order = torch.argsort(history.Y[:, 0], descending=True)
    return history.X[order[:k]]


class OptimizedPolicy(ABC):
    """Base of the policies that maximize a BoTorch acquisition function."""

    #: ``propose`` optimizes under the problem's linear parameter constraints.
    takes_parameter_constraints = True

    name = "optimized"
    needs_model = True
    supports_batch = True
    #: Whether the acquisition function returns log values (for post-processors).
    log_scale = True
    #: The problems it optimizes: ``"single"`` objective, ``"multi"`` (>= 2) or ``"any"``.
    objectives = "single"
    #: Optional :class:`~dsbo.acquisition.base.PostProcessor` (e.g. BONSAI pruning).
    postprocessor: PostProcessor | None = None

    def __init__(self, optimizer: OptimizerSettings | None = None) -> None:
        self.optimizer = optimizer or OptimizerSettings()
        #: Optional :class:`~dsbo.acquisition.base.PostProcessor` (e.g. BONSAI pruning).
        self.postprocessor: PostProcessor | None = None

    @abstractmethod
    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        """The acquisition function to maximize for this step."""

    def sampler(self, history: History, model: Model | None = None) -> MCSampler:
        """Sobol QMC normal base samples, seeded per proposal; for a ``ModelList`` of non-GP
        models (e.g. zoo ensembles) one sampler per member model (BoTorch's ``ListSampler``)."""
        shape = torch.Size([self.optimizer.mc_samples])
        if isinstance(model, ModelList) and not isinstance(model, ModelListGP):
            return ListSampler(
                *(
                    SobolQMCNormalSampler(shape, seed=history.seed + i)
                    for i in range(len(model.models))
                )
            )
        return SobolQMCNormalSampler(shape, seed=history.seed)

    def for_dry_run(self) -> OptimizedPolicy:
        """A cheap copy for a campaign's dry iteration (same options, cheap optimizer)."""
        cheap = copy.copy(self)
        cheap.optimizer = self.optimizer.for_dry_run()
        return cheap

    def check(self, problem: Problem, q: int) -> None:
        """Raise a ConfigError if this policy cannot serve ``problem`` with batches of ``q``."""
        if q > 1 and not self.supports_batch:
            raise ConfigError(
                f"acquisition {self.name!r} proposes one point at a time and q={q}; "
                "set q: 1 or use qlognei / qlognehvi for batches"
            )
        m = problem.num_objectives
        if self.objectives == "single" and m > 1:
            raise ConfigError(
                f"acquisition {self.name!r} optimizes one objective and {problem.name} has {m}; "
                "use qlognehvi (or sebo)"
            )
        if self.objectives == "multi" and m < 2:
            raise ConfigError(
                f"acquisition {self.name!r} needs >= 2 objectives and {problem.name} has {m}; "
                "use qlognei"
            )

    def explores(self, history: History, problem: Problem) -> bool:
        """Whether a stalled search may explore (:mod:`dsbo.acquisition.exploration`): one
        objective, no post-processor, no linear parameter constraints, no cost budget, and a
        column other than a category free. Exploration pulls a search off a plateau whose
        continuous inputs it keeps polishing; where only categories are free, every proposal
        is already a new configuration (:mod:`~dsbo.acquisition.discrete_search`), and the
        Thompson draw's Sobol set, snapped to a few configurations, would repeat tried ones."""
        return (
            problem.num_objectives == 1
            and self.postprocessor is None
            and history.cost_left is None
            and not problem.space.inequality_constraints()
            and free_categoricals(problem, self.optimizer) is None
        )

    def branches(self, problem: Problem) -> list[dict[int, float]] | None:
        """The combinations of categories a stalled search's exploration draws among
        (:mod:`dsbo.acquisition.branches`): with ``branches="thompson"`` and more than one
        enumerable combination, else ``None``."""
        opt = self.optimizer
        if opt.branches != "thompson" or opt.method != "lbfgsb":
            return None
        combinations = category_combinations(problem, opt)
        return combinations if combinations is not None and len(combinations) > 1 else None

    def linear_constraints(self, problem: Problem) -> list[tuple[Tensor, Tensor, float]]:
        """Linear constraints the dense candidate must satisfy: those given to the
        post-processor (BONSAI's ``inequality_constraints``), so that pruning starts from a
        feasible ``x*``. BoTorch's format: ``sum_i coefficients_i x[indices_i] >= rhs``."""
        constraints = [
            (torch.tensor(idx, dtype=torch.long), torch.tensor(coef, dtype=torch.double), rhs)
            for idx, coef, rhs in problem.space.inequality_constraints()
        ]
        constraints += getattr(self.postprocessor, "inequality_constraints", None) or []
        if constraints and self.optimizer.method != "lbfgsb":
            raise ConfigError(
                f"linear constraints need acquisition.method='lbfgsb' (SLSQP), got "
                f"{self.optimizer.method!r}"
            )
        dtype = problem.bounds.dtype
        return [(idx, coef.to(dtype), float(rhs)) for idx, coef, rhs in constraints]

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        self.check(problem, q)
        opt = self.optimizer
        if self.explores(history, problem) and exploration_due(history, opt.stall_patience):
            return explore(model, history, problem, q, opt, self.branches(problem))
        acqf = self.build(model, history, problem, q)
        kwargs: dict[str, Any] = {"sequential": opt.sequential and q > 1}
        constraints = self.linear_constraints(problem)
        if constraints:
            kwargs["inequality_constraints"] = constraints
        combinations = None
        discrete: list[dict[str, Any]] = [{} for _ in range(q)]
        groups = free_categoricals(problem, opt)
        if opt.categorical == "enumerate" and opt.method == "lbfgsb" and groups is None:
            combinations = category_combinations(problem, opt)
        if groups is not None:  # nothing continuous left: enumeration or a local search
            found = maximize_discrete(
                acqf,
                problem,
                opt,
                q,
                history.seed,
                groups,
                avoid=history.seen(),
                starts=incumbents(history),
            )
            X, values, discrete = found.X, found.values, found.metadata
        elif combinations and not constraints and opt.initial == "raw_samples":
            X, values = maximize_over_combinations(
                acqf,
                problem.bounds,
                q,
                combinations,
                num_restarts=opt.num_restarts,
                raw_samples=opt.raw_samples,
                maxiter=opt.maxiter,
                seed=history.seed,
                fixed_features=opt.fixed_features,
                starts=incumbents(history),
                avoid=history.seen(),
                min_distance=opt.min_distance,
                snap=problem.round_to_domain,
            )
        else:
            if combinations:
                kwargs["fixed_features_list"] = combinations
            X, values = opt.maximize(acqf, problem.bounds, q, history.seed, **kwargs)
        X = problem.round_to_domain(X.detach())
        values = values.detach().reshape(-1)
        metadata: list[dict[str, Any]] = []
        for i in range(q):
            value = values[i] if values.numel() == q else values[0]
            metadata.append({"acquisition": self.name, "acq_value": float(value), **discrete[i]})
        if self.postprocessor is not None:
            processed = self.postprocessor(acqf, X, history, problem, opt, self.log_scale)
            for meta, extra in zip(metadata, processed.metadata, strict=True):
                meta.update(extra)
            X = problem.round_to_domain(processed.X)
        # a pruned candidate (BONSAI) sits on the default in most coordinates: being near
        # another one is what sparsity means, so only exact repeats are replaced then
        tol = opt.min_distance if self.postprocessor is None else DUPLICATE_TOLERANCE
        X, replaced, exhausted = replace_repeats(acqf, X, history, problem, opt, tol)
        for meta, was, none_left in zip(metadata, replaced, exhausted, strict=True):
            if was:
                meta["repeat_replaced"] = True
            if none_left:
                meta["space_exhausted"] = True
        if q == 1 and history.cost_left is not None and problem.cost_function is not None:
            from dsbo.acquisition.affordable import make_affordable  # only under a cost budget

            X, extra = make_affordable(acqf, X, problem, opt, history.seed, history.cost_left)
            metadata[0].update(extra)
        return Proposal(X=X, metadata=metadata)


@register_policy("qlognei", "q-Log Noisy Expected Improvement (default; constraints, batches)")
class QLogNEI(OptimizedPolicy):
    """qLogNEI (Ament et al., 2023): MC, handles noise, outcome constraints and ``q > 1``."""

    name = "qlognei"

    def __init__(self, prune_baseline: bool = True, optimizer: OptimizerSettings | None = None):
        super().__init__(optimizer)
        self.prune_baseline = prune_baseline

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        objective = None
        if model.num_outputs > 1:
            objective = GenericMCObjective(lambda Z, X=None: Z[..., 0])
        return qLogNoisyExpectedImprovement(
            model=model,
            X_baseline=history.X,
            sampler=self.sampler(history, model),
            objective=objective,
            X_pending=history.X_pending,
            constraints=slack_constraints(problem) or None,
            prune_baseline=self.prune_baseline,
        )


@register_policy("ucb", "Upper Confidence Bound mu + sqrt(beta) sigma (qUCB for q > 1)")
class UCB(OptimizedPolicy):
    """UCB(x) = mu(x) + sqrt(beta) * sigma(x); q > 1 uses BoTorch's MC ``qUpperConfidenceBound``.

    ``beta`` is a positive number or the schedule ``"log(t+2)"`` (``beta_t = log(t + 2)`` with
    ``t`` the number of observations; BONSAI-UCB's setting in BoTorch's convention).
    """

    name = "ucb"
    log_scale = False
    SCHEDULES = ("log(t+2)",)

    def __init__(self, beta: float | str = 2.0, optimizer: OptimizerSettings | None = None):
        super().__init__(optimizer)
        if isinstance(beta, str):
            if beta.replace(" ", "") not in self.SCHEDULES:
                raise ConfigError(
                    f"acquisition.options.beta={beta!r}: use a number > 0 or one of {self.SCHEDULES}"
                )
            beta = beta.replace(" ", "")
        elif not beta > 0:
            raise ConfigError(f"acquisition.options.beta must be > 0, got {beta!r}")
        self.beta = beta

    def beta_at(self, t: int) -> float:
        """The exploration weight at iteration ``t``."""
        return math.log(t + 2) if isinstance(self.beta, str) else float(self.beta)

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        if problem.num_constraints:
            raise ConfigError(
                f"acquisition 'ucb' ignores outcome constraints and {problem.name} has "
                f"{problem.num_constraints}; use qlognei or logei"
            )
        beta = self.beta_at(history.t)
        transform = objective_transform(model)
        if q == 1 and history.X_pending is None:
            return UpperConfidenceBound(model, beta=beta, posterior_transform=transform)
        return qUpperConfidenceBound(
            model,
            beta=beta,
            sampler=self.sampler(history, model),
            posterior_transform=transform,
            X_pending=history.X_pending,
        )


@register_policy("logei", "analytic Log Expected Improvement (q = 1; constrained version built in)")
class LogEI(OptimizedPolicy):
    """Analytic LogEI over the best feasible observation; LogCEI when there are constraints."""

    name = "logei"
    supports_batch = False

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        best_f = best_feasible_value(history, problem)
        m = problem.num_objectives
        if problem.num_constraints:
            bounds = {m + i: (0.0, None) for i in range(problem.num_constraints)}
            return LogConstrainedExpectedImprovement(
                model, best_f=best_f, objective_index=0, constraints=bounds
            )
        return LogExpectedImprovement(
            model, best_f=best_f, posterior_transform=objective_transform(model)
        )


def neural_greedy_exploration(dim: int, budget: int) -> int:
    """The random exploration phase of neural greedy: ``T_e = clip(5 d, 0.025 T, 0.075 T)``.

    Paria thesis section 3.7.1 (at least one point); use it as the campaign's ``n_init``.
    """
    if dim < 1 or budget < 1:
        raise ConfigError(f"need dim >= 1 and budget >= 1, got dim={dim}, budget={budget}")
    return max(1, round(min(max(5 * dim, 0.025 * budget), 0.075 * budget)))


@register_policy("greedy", "maximize the surrogate itself (neural greedy, Paria thesis Alg. 3.1)")
class Greedy(OptimizedPolicy):
    r"""Propose :math:`\arg\max_x \tilde f_t(x)`: the surrogate is the acquisition.

    Paria's neural greedy algorithm (thesis ch. 3, Algorithm 3.1 line 8; the thesis minimizes,
    dsbo maximizes). With a SimpleSMB/PosteriorSMB surrogate of one sample the surrogate is
    one trained network, i.e. a Thompson sample in the infinite-width limit (Propositions
    3.1/3.2); with ``s`` samples or any other model this is BoTorch's ``PosteriorMean``
    (pure exploitation). The thesis restarts gradient descent 10 times: set
    ``optimizer.num_restarts: 10``. One point per step (``q = 1``).
    """

    name = "greedy"
    supports_batch = False
    log_scale = False

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        if problem.num_constraints:
            raise ConfigError(
                f"acquisition 'greedy' ignores outcome constraints and {problem.name} has "
                f"{problem.num_constraints}; use qlognei or logei"
            )
        return PosteriorMean(model, posterior_transform=objective_transform(model))


@register_policy("qlognehvi", "q-Log Noisy Expected Hypervolume Improvement (multi-objective)")
class QLogNEHVI(OptimizedPolicy):
    """qLogNEHVI (Daulton et al., 2021; Ament et al., 2023) for ``m >= 2`` objectives.

    The reference point is the problem's (the objective thresholds), or, where it has none,
    inferred from the observed Pareto fronts with BoTorch's ``infer_reference_point`` (nadir
    minus 10% of the range), the best of the points inferred since the initial design: it
    never moves outward (:mod:`dsbo.acquisition.reference_point`).
    """

    name = "qlognehvi"
    objectives = "multi"

    def __init__(self, prune_baseline: bool = True, optimizer: OptimizerSettings | None = None):
        super().__init__(optimizer)
        self.prune_baseline = prune_baseline

    def reference_point(self, history: History, problem: Problem) -> Tensor:
        """The problem's reference point; coordinates it leaves open (NaN: an objective
        without a threshold), or all of them when it has none, inferred from the observed
        fronts and never moved outward (:mod:`dsbo.acquisition.reference_point`)."""
        given = (
            None
            if problem.ref_point is None
            else torch.as_tensor(problem.ref_point, dtype=torch.double)
        )
        if given is not None and not torch.isnan(given).any():
            return given
        m = problem.num_objectives
        Y = history.Y[:, :m]
        inferred = stable_reference_point(Y, problem.is_feasible(history.Y), history.n_design)
        return inferred if given is None else torch.where(torch.isnan(given), inferred, given)

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        m = problem.num_objectives
        return qLogNoisyExpectedHypervolumeImprovement(
            model=model,
            ref_point=self.reference_point(history, problem).tolist(),
            X_baseline=history.X,
            sampler=self.sampler(history, model),
            objective=IdentityMCMultiOutputObjective(outcomes=list(range(m))),
            constraints=slack_constraints(problem) or None,
            X_pending=history.X_pending,
            prune_baseline=self.prune_baseline,
        )


@register_policy(
    "qparego", "q-Log Noisy ParEGO: qLogNEI on a random Chebyshev scalarization (multi-objective)"
)
class QParEGO(OptimizedPolicy):
    """qLogNParEGO (Knowles 2006; Daulton et al. 2020; Ament et al. 2023): each proposal draws
    Chebyshev weights uniformly from the simplex (seeded per proposal) and maximizes qLogNEI
    of the scalarized, normalized objectives, with BoTorch's augmentation 0.05. The weights
    are recorded in the trial's metadata. For ``q > 1`` the batch shares one weight vector."""

    name = "qparego"
    objectives = "multi"

    def __init__(self, prune_baseline: bool = True, optimizer: OptimizerSettings | None = None):
        super().__init__(optimizer)
        self.prune_baseline = prune_baseline

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        m = problem.num_objectives
        generator = torch.Generator().manual_seed(history.seed)
        e = -torch.log(torch.rand(m, generator=generator, dtype=torch.double))
        self.last_weights = e / e.sum()  # Dirichlet(1, ..., 1): uniform on the simplex
        return qLogNParEGO(
            model=model,
            X_baseline=history.X,
            scalarization_weights=self.last_weights,
            sampler=self.sampler(history, model),
            objective=IdentityMCMultiOutputObjective(outcomes=list(range(m))),
            constraints=slack_constraints(problem) or None,
            X_pending=history.X_pending,
            prune_baseline=self.prune_baseline,
        )

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        proposal = super().propose(model, history, problem, q)
        for meta in proposal.metadata:
            meta["weights"] = self.last_weights.tolist()
        return proposal


@register_policy("sobol", "scrambled Sobol points (the random baseline; no model)")
class SobolPolicy:
    """Quasi-random search: scrambled Sobol points over the box, seeded per proposal. Where only
    categories are free, the untried configurations of the Sobol sequence
    (:func:`~dsbo.acquisition.discrete_search.untried_design`): the campaign's fallback before
    a model can be fitted would otherwise repeat a configuration of a small space."""

    name = "sobol"
    needs_model = False

    def __init__(self, optimizer: OptimizerSettings | None = None) -> None:
        self.optimizer = optimizer or OptimizerSettings()

    def propose(self, model: Model | None, history: History, problem: Problem, q: int) -> Proposal:
        groups = free_categoricals(problem, self.optimizer)
        if groups is not None:  # a finite set: the untried configurations first
            X, metadata = untried_design(
                problem, self.optimizer, q, history.seed, groups, history.seen()
            )
            return Proposal(X=X, metadata=metadata)
        X = problem.sobol_design(q, history.seed, self.optimizer.apply_fixed_features)
        return Proposal(X=X, metadata=[{"acquisition": "sobol"} for _ in range(q)])
