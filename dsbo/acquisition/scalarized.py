r"""Multi-objective BO with random scalarizations (MOBO-RS): the ``mobo-rs`` policy.

Paria, Kandasamy & Poczos, *A flexible framework for multi-objective Bayesian optimization
using random scalarizations* (UAI 2019; Paria thesis ch. 2, Algorithm 2.1). Each objective
keeps its own surrogate. Every iteration draws one weight vector :math:`\lambda \sim p(\lambda)`
and proposes the maximizer of a scalarized acquisition (thesis table 2.1):

* UCB: :math:`s_\lambda(\mu_t(x) + \sqrt{\beta_t}\,\sigma_t(x))`, with the thesis'
  :math:`\beta_t = 0.125 \log(2t + 1)` (section 2.7) by default;
* TS: :math:`s_\lambda(f'(x))` with :math:`f'_k` one draw from the posterior of objective
  :math:`k`: a pathwise (Matheron) sample path for exact GPs, optimized like any acquisition
  function; for other surrogates (MAP-SAAS mixtures, zoo ensembles, SMB networks) one joint
  posterior draw on a scrambled Sobol set, one ensemble member per draw.

Scalarizations of objectives :math:`y` normalized to :math:`[0, 1]` (the thesis maps every
objective linearly to [0, 1]; dsbo uses the problem's ``objective_bounds`` when known, else
the observed range), with reference point :math:`z` (default 0, the worst value):

* linear (eq. 2.8): :math:`s_\lambda(y) = \sum_k \lambda_k y_k`;
* Chebyshev (eq. 2.8): :math:`s_\lambda(y) = \min_k \lambda_k (y_k - z_k)
  + \alpha \sum_k \lambda_k (y_k - z_k)`, augmentation :math:`\alpha = 0` as in the thesis
  (BoTorch's ParEGO uses 0.05);
* hypervolume (Golovin & Zhang 2020, not in the thesis):
  :math:`s_\lambda(y) = \min_k \max(0, (y_k - z_k) / \lambda_k)^K` with :math:`\lambda` on the
  positive unit sphere; its mean over :math:`\lambda` is proportional to the dominated
  hypervolume.

Weight priors :math:`p(\lambda)`: ``flat`` (Dirichlet(1, ..., 1) on the simplex; for the
hypervolume scalarization :math:`|g| / \|g\|_2`, :math:`g \sim N(0, I)`), a bounding box
``[[a_1, b_1], ...]`` of the objective space in the problem's units (maximization sense), or a
mixture of boxes. A box becomes weights by the thesis' heuristic: draw :math:`u_k \sim
U(a_k, b_k)` (normalized) and set :math:`\lambda = u / \|u\|_1` (linear); Chebyshev reuses it as
:math:`\lambda' \propto 1 / \lambda` (section 2.4); the hypervolume scalarization uses
:math:`u / \|u\|_2` (its optimum has :math:`y - z \propto \lambda`).

The Bayes regret (eq. 2.3) :math:`R_B(X) = E_\lambda[\max_{x} s_\lambda(f(x)) - \max_{x \in X}
s_\lambda(f(x))]` is estimated by Monte Carlo over the same prior (:func:`bayes_regret`).

What lives where: the scalarizations and the normalization of the objectives in
:mod:`dsbo.acquisition.scalarizations`, the weight priors in
:mod:`dsbo.acquisition.weight_priors`, the Bayes regret in :mod:`dsbo.acquisition.bayes_regret`;
this module holds the policy and its acquisition functions, and re-exports those names.

Example:
    >>> campaign = Campaign(get_problem("branin4-currin4"), surrogate="gp", acquisition={
    ...     "name": "mobo-rs", "scalarization": "chebyshev", "strategy": "ts",
    ...     "prior": {"box": [[-110, -95], [23, 27]]}})
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import gpytorch
import torch
from botorch.acquisition import AcquisitionFunction
from botorch.models import ModelListGP, SingleTaskGP
from botorch.models.model import Model
from botorch.sampling.pathwise import draw_matheron_paths
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from dsbo.acquisition.base import (
    History,
    OptimizerSettings,
    Proposal,
    posterior_moments,
    register_policy,
)
from dsbo.acquisition.bayes_regret import bayes_regret, bayes_utility
from dsbo.acquisition.scalarizations import (
    SCALARIZATIONS,
    ObjectiveScale,
    Scalarization,
    chebyshev_scalarization,
    hypervolume_scalarization,
    linear_scalarization,
)
from dsbo.acquisition.thompson import (
    MAX_CHOLESKY_SIZE,
    default_n_candidates,
    one_member_per_draw,
)
from dsbo.acquisition.weight_priors import MIN_DIRECTION, Region, WeightPrior
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

STRATEGIES = ("ts", "ucb")


# ---------------------------------------------------------------------- acquisitions
def ucb_beta(t: int) -> float:
    r"""The thesis' :math:`\beta_t = 0.125 \log(2t + 1)` (section 2.7, after Kandasamy et al.)."""
    return 0.125 * math.log(2 * t + 1)


class ScalarizedUCB(AcquisitionFunction):
    r""":math:`s_\lambda(\mathrm{norm}(\mu(x) + \sqrt{\beta}\sigma(x)))` for ``batch x 1 x d``."""

    def __init__(
        self,
        model: Model,
        weights: Tensor,
        scalarization: Scalarization,
        scale: ObjectiveScale,
        beta: float,
        num_objectives: int,
    ) -> None:
        super().__init__(model)
        self.weights, self.scalarization, self.scale = weights, scalarization, scale
        self.beta, self.m = beta, num_objectives

    def forward(self, X: Tensor) -> Tensor:
        mean, var = posterior_moments(self.model, X.squeeze(-2))
        ucb = mean[..., : self.m] + math.sqrt(self.beta) * var[..., : self.m].sqrt()
        return self.scalarization(self.scale(ucb), self.weights)


class ScalarizedSamplePath(AcquisitionFunction):
    r""":math:`s_\lambda(\mathrm{norm}(f'(x)))` for one pathwise posterior sample ``f'``."""

    def __init__(
        self,
        model: Model,
        weights: Tensor,
        scalarization: Scalarization,
        scale: ObjectiveScale,
        num_objectives: int,
        seed: int,
    ) -> None:
        super().__init__(model)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.paths = draw_matheron_paths(model, torch.Size([1]))
        self.weights, self.scalarization, self.scale = weights, scalarization, scale
        self.m = num_objectives

    def sample(self, X: Tensor) -> Tensor:
        """The sampled objectives at ``X`` (``batch x d``), ``batch x m``."""
        out = self.paths(X)
        if isinstance(out, Tensor):  # a single GP: 1 x batch (one output)
            return out.reshape(*X.shape[:-1], 1)
        return torch.stack([o.reshape(X.shape[:-1]) for o in out], dim=-1)[..., : self.m]

    def forward(self, X: Tensor) -> Tensor:
        return self.scalarization(self.scale(self.sample(X.squeeze(-2))), self.weights)


def has_sample_paths(model: Model) -> bool:
    """Exact, unbatched GPs, for which BoTorch draws Matheron sample paths."""
    models = model.models if isinstance(model, ModelListGP) else [model]
    return all(type(m) is SingleTaskGP and len(m.batch_shape) == 0 for m in models)


@register_policy(
    "mobo-rs",
    "random scalarizations: TS or UCB on s_lambda, lambda ~ p(lambda) (Paria thesis ch. 2)",
)
class RandomScalarization:
    """MOBO-RS (see the module doc).

    Args:
        scalarization: ``chebyshev`` (default), ``linear`` or ``hypervolume``.
        strategy: ``ts`` (Thompson sampling, default) or ``ucb``.
        prior: ``flat`` (default), ``{box: [[a, b], ...]}`` or ``{mixture: [...]}``, boxes in
            the objectives' own units and directions (as the function returns them: a
            minimized loss's ``[0.1, 0.3]`` is its values 0.1 to 0.3).
        augmentation: Chebyshev's ``alpha`` (0; BoTorch's ParEGO uses 0.05).
        beta: UCB's ``beta_t``: ``"thesis"`` (``0.125 log(2t + 1)``) or a number > 0.
        reference: ``z`` in the objectives' own units and directions; default the worst end
            of the normalization (normalized 0).
        n_candidates: Sobol candidates for TS on surrogates without sample paths.
        optimizer: Acquisition optimizer settings.
    """

    name = "mobo-rs"
    needs_model = True

    def __init__(
        self,
        scalarization: str = "chebyshev",
        strategy: str = "ts",
        prior: Any = "flat",
        augmentation: float = 0.0,
        beta: float | str = "thesis",
        reference: Sequence[float] | None = None,
        n_candidates: int | None = None,
        optimizer: OptimizerSettings | None = None,
    ) -> None:
        self.scalarization = Scalarization(scalarization, augmentation=augmentation)
        if strategy not in STRATEGIES:
            raise ConfigError(
                f"acquisition.options.strategy={strategy!r}: choose one of {', '.join(STRATEGIES)}"
            )
        self.strategy = strategy
        self.prior_spec = prior
        if beta != "thesis" and (
            isinstance(beta, bool)
            or not isinstance(beta, int | float)
            or not (math.isfinite(beta) and beta > 0)
        ):
            raise ConfigError(
                f"acquisition.options.beta must be 'thesis' or a number > 0, got {beta!r}"
            )
        self.beta = beta
        self.reference = reference
        if n_candidates is not None and (
            isinstance(n_candidates, bool) or not isinstance(n_candidates, int) or n_candidates < 1
        ):
            raise ConfigError(
                f"acquisition.options.n_candidates must be a positive integer, got {n_candidates!r}"
            )
        self.n_candidates = n_candidates
        self.optimizer = optimizer or OptimizerSettings()

    def prior(self, problem: Problem) -> WeightPrior:
        """The weight prior with its boxes in the stored, maximization sense (a minimized
        objective's box ``[a, b]`` is ``[-b, -a]``)."""
        prior = WeightPrior.parse(self.prior_spec, problem.num_objectives)
        signs = torch.tensor(problem.outcomes.signs, dtype=torch.double)
        if bool((signs > 0).all()) or prior.is_flat:
            return prior
        regions = []
        for r in prior.regions:
            lower, upper = signs * r.lower, signs * r.upper
            regions.append(
                Region(torch.minimum(lower, upper), torch.maximum(lower, upper), r.weight)
            )
        return WeightPrior(prior.num_objectives, regions)

    def stored_reference(self, problem: Problem) -> Tensor | None:
        """``reference`` in the stored, maximization sense."""
        if self.reference is None:
            return None
        return torch.as_tensor(self.reference, dtype=torch.double) * torch.tensor(
            problem.outcomes.signs, dtype=torch.double
        )

    def for_dry_run(self) -> RandomScalarization:
        """A cheap copy for the campaign's dry iteration."""
        cheap = copy.copy(self)
        cheap.optimizer = self.optimizer.for_dry_run()
        cheap.n_candidates = 64
        return cheap

    def check(self, problem: Problem, q: int = 1) -> None:
        """Raise a ConfigError unless the problem has >= 2 objectives and no constraints, and
        the prior and reference match its objectives."""
        m = problem.num_objectives
        if m < 2:
            raise ConfigError(
                f"acquisition 'mobo-rs' needs >= 2 objectives and {problem.name} has {m}; use qlognei"
            )
        if problem.num_constraints:
            raise ConfigError(
                f"acquisition 'mobo-rs' ignores outcome constraints and {problem.name} has {problem.num_constraints}"
            )
        self.prior(problem)
        if self.reference is not None and len(self.reference) != m:
            raise ConfigError(
                f"acquisition.options.reference needs {m} values (one per objective), got {self.reference!r}"
            )

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        self.check(problem)
        m = problem.num_objectives
        scale = ObjectiveScale.for_problem(problem, history.Y)
        scalarization = Scalarization(
            self.scalarization.name,
            reference=0.0 if self.reference is None else scale(self.stored_reference(problem)),
            augmentation=self.scalarization.augmentation,
        )
        generator = torch.Generator().manual_seed(history.seed)
        weights, regions = self.prior(problem).sample(q, scalarization, scale, generator)
        beta = ucb_beta(history.t) if self.beta == "thesis" else float(self.beta)
        points, metadata = [], []
        for i in range(q):
            seed = history.seed + 7919 * i
            if self.strategy == "ucb":
                acqf = ScalarizedUCB(model, weights[i], scalarization, scale, beta, m)
                x, value = self.optimizer.maximize(
                    acqf, problem.bounds, 1, seed, retry_on_optimization_warning=False
                )
                how = "optimized"
            elif has_sample_paths(model):
                acqf = ScalarizedSamplePath(model, weights[i], scalarization, scale, m, seed)
                x, value = self.optimizer.maximize(
                    acqf, problem.bounds, 1, seed, retry_on_optimization_warning=False
                )
                how = "sample path"
            else:
                x, value = self._discrete_thompson(
                    model, problem, weights[i], scalarization, scale, seed
                )
                how = "sobol set"
            points.append(problem.round_to_domain(x.detach().reshape(1, -1)))
            meta: dict[str, Any] = {
                "acquisition": self.name,
                "scalarization": scalarization.name,
                "strategy": self.strategy,
                "weights": weights[i].tolist(),
                "region": int(regions[i]),
                "acq_value": float(value.detach().reshape(-1)[0]),
                "maximized_on": how,
            }
            if self.strategy == "ucb":
                meta["beta"] = beta
            metadata.append(meta)
        return Proposal(X=torch.cat(points), metadata=metadata)

    def _discrete_thompson(
        self,
        model: Model,
        problem: Problem,
        weights: Tensor,
        scalarization: Scalarization,
        scale: ObjectiveScale,
        seed: int,
    ) -> tuple[Tensor, Tensor]:
        """One joint posterior draw on a scrambled Sobol set (one member of an ensemble or
        mixture), scalarized; its best candidate."""
        n = self.n_candidates or default_n_candidates(problem.dim)
        X = draw_sobol_samples(bounds=problem.bounds, n=n, q=1, seed=seed).squeeze(1)
        X = problem.round_to_domain(self.optimizer.apply_fixed_features(X))
        cholesky = gpytorch.settings.max_cholesky_size(max(MAX_CHOLESKY_SIZE, n))
        with torch.random.fork_rng(devices=[]), torch.no_grad(), cholesky:
            torch.manual_seed(seed)
            draw = model.posterior(X).rsample(torch.Size([1]))
        draw = one_member_per_draw(draw, torch.Generator().manual_seed(seed))[0]  # N x outputs
        values = scalarization(scale(draw[:, : problem.num_objectives]), weights)
        j = int(values.argmax())
        return X[j], values[j]


# ---------------------------------------------------------------------- Bayes regret
def campaign_bayes_regret(
    problem: Problem, policy: Any, Y: Tensor, seed: int = 0
) -> dict[str, Any] | None:
    """The Bayes regret of a multi-objective campaign's completed objectives ``Y``.

    The prior and scalarization are the policy's when it is MOBO-RS, else the flat prior
    with the Chebyshev scalarization; the regret itself needs the problem's
    ``metadata["pareto_front"]`` (a function or tensor), the utility is always reported.
    ``None`` for single-objective problems or before the first completed trial.
    """
    m = problem.num_objectives
    if m < 2 or Y.shape[0] == 0:
        return None
    if isinstance(policy, RandomScalarization):
        prior, scalarization, spec = policy.prior(problem), policy.scalarization, policy.prior_spec
    else:
        prior, scalarization, spec = WeightPrior(m), Scalarization("chebyshev"), "flat"
    front = problem.metadata.get("pareto_front")
    if callable(front):
        front = front()
    scale = ObjectiveScale.for_problem(problem, Y)
    if front is not None:
        front = torch.as_tensor(front, dtype=torch.double)
    result = bayes_regret(Y[:, :m], prior, scalarization, scale, front=front, seed=seed)
    return {**result, "prior": spec, "scalarization": scalarization.name}


__all__ = [
    "MIN_DIRECTION",
    "SCALARIZATIONS",
    "STRATEGIES",
    "ObjectiveScale",
    "RandomScalarization",
    "Region",
    "Scalarization",
    "ScalarizedSamplePath",
    "ScalarizedUCB",
    "WeightPrior",
    "bayes_regret",
    "bayes_utility",
    "campaign_bayes_regret",
    "chebyshev_scalarization",
    "has_sample_paths",
    "hypervolume_scalarization",
    "linear_scalarization",
    "ucb_beta",
]
