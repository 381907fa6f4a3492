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

Example:
    >>> campaign = Campaign(get_problem("branin4-currin4"), surrogate="gp", acquisition={
    ...     "name": "mobo-rs", "scalarization": "chebyshev", "strategy": "ts",
    ...     "prior": {"box": [[-110, -95], [23, 27]]}})
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from dsbo.acquisition.thompson import MAX_CHOLESKY_SIZE, _one_member_per_draw, default_n_candidates
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

SCALARIZATIONS = ("linear", "chebyshev", "hypervolume")
STRATEGIES = ("ts", "ucb")
#: Smallest normalized box coordinate: weights stay strictly positive.
MIN_DIRECTION = 1e-6


# ---------------------------------------------------------------------- scalarizations
def linear_scalarization(Y: Tensor, weights: Tensor) -> Tensor:
    r""":math:`\sum_k \lambda_k y_k` over the last dimension (thesis eq. 2.8)."""
    return (Y * weights).sum(-1)


def chebyshev_scalarization(
    Y: Tensor, weights: Tensor, reference: Tensor | float = 0.0, augmentation: float = 0.0
) -> Tensor:
    r""":math:`\min_k \lambda_k (y_k - z_k) + \alpha \sum_k \lambda_k (y_k - z_k)` (thesis
    eq. 2.8 at :math:`\alpha = 0`)."""
    D = weights * (Y - reference)
    return D.min(-1).values + augmentation * D.sum(-1)


def hypervolume_scalarization(Y: Tensor, weights: Tensor, reference: Tensor | float = 0.0) -> Tensor:
    r""":math:`\min_k \max(0, (y_k - z_k) / \lambda_k)^K` (Golovin & Zhang 2020)."""
    K = Y.shape[-1]
    return ((Y - reference) / weights).clamp_min(0.0).min(-1).values ** K


@dataclass
class Scalarization:
    """A scalarization family ``s_lambda`` over normalized objectives.

    Args:
        name: ``linear``, ``chebyshev`` or ``hypervolume``.
        reference: ``z`` in normalized units (Chebyshev, hypervolume); default 0.
        augmentation: Chebyshev's ``alpha``.
    """

    name: str = "chebyshev"
    reference: Tensor | float = 0.0
    augmentation: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in SCALARIZATIONS:
            raise ConfigError(f"scalarization={self.name!r}: choose one of {', '.join(SCALARIZATIONS)}")
        a = self.augmentation
        if isinstance(a, bool) or not isinstance(a, int | float) or not (math.isfinite(a) and a >= 0):
            raise ConfigError(f"augmentation must be a finite number >= 0, got {a!r}")

    def __call__(self, Y: Tensor, weights: Tensor) -> Tensor:
        if self.name == "linear":
            return linear_scalarization(Y, weights)
        if self.name == "chebyshev":
            return chebyshev_scalarization(Y, weights, self.reference, self.augmentation)
        return hypervolume_scalarization(Y, weights, self.reference)

    def weights_from_direction(self, u: Tensor) -> Tensor:
        """Weights whose optimum lies in the direction ``u > 0`` of normalized objective space
        (thesis section 2.4's bounding-box heuristic)."""
        if self.name == "linear":
            return u / u.sum(-1, keepdim=True)
        if self.name == "chebyshev":
            inverse = 1.0 / u
            return inverse / inverse.sum(-1, keepdim=True)
        return u / u.norm(dim=-1, keepdim=True)

    def flat_weights(self, n: int, m: int, generator: torch.Generator) -> Tensor:
        """``n x m`` draws of the flat prior: Dirichlet(1) on the simplex (linear, Chebyshev),
        ``|g| / ||g||_2`` on the positive unit sphere (hypervolume)."""
        if self.name == "hypervolume":
            g = torch.randn(n, m, generator=generator, dtype=torch.double).abs()
            return g / g.norm(dim=-1, keepdim=True)
        e = -torch.log(torch.rand(n, m, generator=generator, dtype=torch.double).clamp_min(1e-300))
        return e / e.sum(-1, keepdim=True)  # normalized exponentials are Dirichlet(1, ..., 1)


# ---------------------------------------------------------------------- objective scale
@dataclass
class ObjectiveScale:
    """The affine map of each objective to [0, 1]: ``(y - lower) / (upper - lower)``."""

    lower: Tensor
    upper: Tensor

    @classmethod
    def for_problem(cls, problem: Problem, Y: Tensor | None = None) -> ObjectiveScale:
        """The problem's ``metadata["objective_bounds"]`` (``2 x m``, maximization sense) when
        known, else the range of the observed objectives ``Y``."""
        m = problem.num_objectives
        bounds = problem.metadata.get("objective_bounds")
        if bounds is not None:
            bounds = torch.as_tensor(bounds, dtype=torch.double)
            return cls(bounds[0], bounds[1])
        if Y is None or Y.shape[0] == 0:
            raise ConfigError(
                f"{problem.name} has no objective_bounds in its metadata and there are no "
                "observations to normalize the objectives with"
            )
        Y = Y[:, :m]
        lower, upper = Y.min(0).values, Y.max(0).values
        upper = torch.where(upper > lower, upper, lower + 1.0)
        return cls(lower, upper)

    def __call__(self, Y: Tensor) -> Tensor:
        return (Y - self.lower) / (self.upper - self.lower)

    def scale_only(self, S: Tensor) -> Tensor:
        """Standard deviations (or any difference) in normalized units."""
        return S / (self.upper - self.lower)


# ---------------------------------------------------------------------- weight priors
@dataclass
class Region:
    """A bounding box ``[lower_k, upper_k]`` of the objective space (problem units,
    maximization sense) and its mixture weight."""

    lower: Tensor
    upper: Tensor
    weight: float = 1.0


class WeightPrior:
    """``p(lambda)``: flat, one bounding box, or a mixture of boxes (see the module doc).

    Args:
        num_objectives: ``m``.
        regions: The boxes; ``None`` or empty: the flat prior.
    """

    def __init__(self, num_objectives: int, regions: Sequence[Region] | None = None) -> None:
        self.num_objectives = num_objectives
        self.regions = list(regions or [])
        total = sum(r.weight for r in self.regions)
        self.probabilities = torch.tensor([r.weight / total for r in self.regions], dtype=torch.double) if self.regions else None

    @property
    def is_flat(self) -> bool:
        return not self.regions

    @classmethod
    def parse(cls, spec: Any, num_objectives: int, field: str = "acquisition.options.prior") -> WeightPrior:
        """``"flat"``, ``{"box": [[a_1, b_1], ..., [a_m, b_m]]}`` or
        ``{"mixture": [{"box": ..., "weight": w}, ...]}``."""
        if spec is None or spec == "flat":
            return cls(num_objectives)
        if not isinstance(spec, Mapping) or set(spec) not in ({"box"}, {"mixture"}):
            raise ConfigError(
                f"{field} must be 'flat', {{box: [[a, b], ...]}} or {{mixture: [{{box: ..., weight: w}}, ...]}}, "
                f"got {spec!r}"
            )
        if "box" in spec:
            return cls(num_objectives, [_parse_box(spec["box"], num_objectives, f"{field}.box")])
        items = spec["mixture"]
        if not isinstance(items, Sequence) or isinstance(items, str) or not items:
            raise ConfigError(f"{field}.mixture must be a non-empty list of boxes, got {items!r}")
        regions = []
        for i, item in enumerate(items):
            where = f"{field}.mixture[{i}]"
            if not isinstance(item, Mapping) or "box" not in item or set(item) - {"box", "weight"}:
                raise ConfigError(f"{where} must be {{box: [[a, b], ...], weight: w}}, got {item!r}")
            weight = item.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not (math.isfinite(weight) and weight > 0):
                raise ConfigError(f"{where}.weight must be a finite number > 0, got {weight!r}")
            region = _parse_box(item["box"], num_objectives, f"{where}.box")
            region.weight = float(weight)
            regions.append(region)
        return cls(num_objectives, regions)

    def sample(
        self, n: int, scalarization: Scalarization, scale: ObjectiveScale, generator: torch.Generator
    ) -> tuple[Tensor, Tensor]:
        """``n x m`` weights and the ``n`` region indices they came from (-1: flat)."""
        m = self.num_objectives
        if self.is_flat:
            return scalarization.flat_weights(n, m, generator), torch.full((n,), -1, dtype=torch.long)
        which = torch.multinomial(self.probabilities, n, replacement=True, generator=generator)
        lower = torch.stack([scale(self.regions[i].lower) for i in which.tolist()])
        upper = torch.stack([scale(self.regions[i].upper) for i in which.tolist()])
        u = lower + (upper - lower) * torch.rand(n, m, generator=generator, dtype=torch.double)
        u = u.clamp(min=MIN_DIRECTION)
        return scalarization.weights_from_direction(u), which


def _parse_box(box: Any, m: int, field: str) -> Region:
    try:
        B = torch.as_tensor(box, dtype=torch.double)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field} must be {m} pairs [lower, upper] of numbers, got {box!r}") from exc
    if B.shape != (m, 2):
        raise ConfigError(
            f"{field} must give one [lower, upper] pair per objective ({m}), got shape {tuple(B.shape)}"
        )
    if not torch.isfinite(B).all():
        raise ConfigError(f"{field} must be finite numbers, got {box!r}")
    bad = torch.nonzero(B[:, 0] > B[:, 1]).reshape(-1)
    if bad.numel():
        k = int(bad[0])
        raise ConfigError(f"{field}[{k}]: lower {B[k, 0].item():g} > upper {B[k, 1].item():g}")
    return Region(lower=B[:, 0], upper=B[:, 1])


# ---------------------------------------------------------------------- acquisitions
def ucb_beta(t: int) -> float:
    r"""The thesis' :math:`\beta_t = 0.125 \log(2t + 1)` (section 2.7, after Kandasamy et al.)."""
    return 0.125 * math.log(2 * t + 1)


class ScalarizedUCB(AcquisitionFunction):
    r""":math:`s_\lambda(\mathrm{norm}(\mu(x) + \sqrt{\beta}\sigma(x)))` for ``batch x 1 x d``."""

    def __init__(self, model: Model, weights: Tensor, scalarization: Scalarization,
                 scale: ObjectiveScale, beta: float, num_objectives: int) -> None:  # fmt: skip
        super().__init__(model)
        self.weights, self.scalarization, self.scale = weights, scalarization, scale
        self.beta, self.m = beta, num_objectives

    def forward(self, X: Tensor) -> Tensor:
        mean, var = posterior_moments(self.model, X.squeeze(-2))
        ucb = mean[..., : self.m] + math.sqrt(self.beta) * var[..., : self.m].sqrt()
        return self.scalarization(self.scale(ucb), self.weights)


class ScalarizedSamplePath(AcquisitionFunction):
    r""":math:`s_\lambda(\mathrm{norm}(f'(x)))` for one pathwise posterior sample ``f'``."""

    def __init__(self, model: Model, weights: Tensor, scalarization: Scalarization,
                 scale: ObjectiveScale, num_objectives: int, seed: int) -> None:  # fmt: skip
        super().__init__(model)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.paths = draw_matheron_paths(model, torch.Size([1]))
        self.weights, self.scalarization, self.scale, self.m = weights, scalarization, scale, num_objectives

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


@register_policy("mobo-rs", "random scalarizations: TS or UCB on s_lambda, lambda ~ p(lambda) (Paria thesis ch. 2)")
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
            raise ConfigError(f"acquisition.options.strategy={strategy!r}: choose one of {', '.join(STRATEGIES)}")
        self.strategy = strategy
        self.prior_spec = prior
        if beta != "thesis" and (isinstance(beta, bool) or not isinstance(beta, int | float) or not (math.isfinite(beta) and beta > 0)):
            raise ConfigError(f"acquisition.options.beta must be 'thesis' or a number > 0, got {beta!r}")
        self.beta = beta
        self.reference = reference
        if n_candidates is not None and (isinstance(n_candidates, bool) or not isinstance(n_candidates, int) or n_candidates < 1):
            raise ConfigError(f"acquisition.options.n_candidates must be a positive integer, got {n_candidates!r}")
        self.n_candidates = n_candidates
        self.optimizer = optimizer or OptimizerSettings()

    def prior(self, problem: Problem) -> WeightPrior:
        """The weight prior with its boxes in the stored, maximization sense (a minimized
        objective's box ``[a, b]`` is ``[-b, -a]``)."""
        prior = WeightPrior.parse(self.prior_spec, problem.num_objectives)
        signs = torch.tensor(problem.outcomes.signs, dtype=torch.double)
        if bool((signs > 0).all()) or prior.is_flat:
            return prior
        regions = [Region(torch.minimum(signs * r.lower, signs * r.upper), torch.maximum(signs * r.lower, signs * r.upper), r.weight)
                   for r in prior.regions]  # fmt: skip
        return WeightPrior(prior.num_objectives, regions)

    def stored_reference(self, problem: Problem) -> Tensor | None:
        """``reference`` in the stored, maximization sense."""
        if self.reference is None:
            return None
        return torch.as_tensor(self.reference, dtype=torch.double) * torch.tensor(problem.outcomes.signs, dtype=torch.double)

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
            raise ConfigError(f"acquisition 'mobo-rs' needs >= 2 objectives and {problem.name} has {m}; use qlognei")
        if problem.num_constraints:
            raise ConfigError(f"acquisition 'mobo-rs' ignores outcome constraints and {problem.name} has {problem.num_constraints}")
        self.prior(problem)
        if self.reference is not None and len(self.reference) != m:
            raise ConfigError(f"acquisition.options.reference needs {m} values (one per objective), got {self.reference!r}")

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
                x, value = self.optimizer.maximize(acqf, problem.bounds, 1, seed, retry_on_optimization_warning=False)
                how = "optimized"
            elif has_sample_paths(model):
                acqf = ScalarizedSamplePath(model, weights[i], scalarization, scale, m, seed)
                x, value = self.optimizer.maximize(acqf, problem.bounds, 1, seed, retry_on_optimization_warning=False)
                how = "sample path"
            else:
                x, value = self._discrete_thompson(model, problem, weights[i], scalarization, scale, seed)
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

    def _discrete_thompson(self, model: Model, problem: Problem, weights: Tensor,
                           scalarization: Scalarization, scale: ObjectiveScale, seed: int) -> tuple[Tensor, Tensor]:  # fmt: skip
        """One joint posterior draw on a scrambled Sobol set (one member of an ensemble or
        mixture), scalarized; its best candidate."""
        n = self.n_candidates or default_n_candidates(problem.dim)
        X = draw_sobol_samples(bounds=problem.bounds, n=n, q=1, seed=seed).squeeze(1)
        X = problem.round_to_domain(self.optimizer.apply_fixed_features(X))
        cholesky = gpytorch.settings.max_cholesky_size(max(MAX_CHOLESKY_SIZE, n))
        with torch.random.fork_rng(devices=[]), torch.no_grad(), cholesky:
            torch.manual_seed(seed)
            draw = model.posterior(X).rsample(torch.Size([1]))
        draw = _one_member_per_draw(draw, torch.Generator().manual_seed(seed))[0]  # N x outputs
        values = scalarization(scale(draw[:, : problem.num_objectives]), weights)
        j = int(values.argmax())
        return X[j], values[j]


# ---------------------------------------------------------------------- Bayes regret
def bayes_utility(Y: Tensor, weights: Tensor, scalarization: Scalarization, scale: ObjectiveScale) -> Tensor:
    r""":math:`\max_{y \in Y} s_\lambda(\mathrm{norm}(y))` for each row of ``weights``."""
    return scalarization(scale(Y).unsqueeze(0), weights.unsqueeze(1)).max(-1).values


def bayes_regret(
    Y: Tensor,
    prior: WeightPrior,
    scalarization: Scalarization,
    scale: ObjectiveScale,
    front: Tensor | None = None,
    num_weights: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    r"""Monte Carlo estimate of the Bayes regret (thesis eq. 2.3) of the observed objectives ``Y``.

    Returns ``utility`` :math:`= E_\lambda \max_{y \in Y} s_\lambda(y)` (what the thesis
    plots, negated) and, when a sample of the true Pareto front ``front`` is given,
    ``regret`` :math:`= E_\lambda[\max_{y \in front \cup Y} s_\lambda(y) - \max_{y \in Y}
    s_\lambda(y)] \ge 0`. Objectives are normalized by ``scale``; the same ``num_weights``
    draws are used for every ``Y`` with the same seed.
    """
    generator = torch.Generator().manual_seed(seed)
    weights, _ = prior.sample(num_weights, scalarization, scale, generator)
    observed = bayes_utility(Y, weights, scalarization, scale)
    result = {"utility": float(observed.mean()), "num_weights": num_weights}
    if front is not None:
        best = bayes_utility(torch.cat([front, Y]), weights, scalarization, scale)
        result["regret"] = float((best - observed).mean())
    return result


def campaign_bayes_regret(problem: Problem, policy: Any, Y: Tensor, seed: int = 0) -> dict[str, Any] | None:
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
    result = bayes_regret(Y[:, :m], prior, scalarization, scale,
                          front=None if front is None else torch.as_tensor(front, dtype=torch.double), seed=seed)  # fmt: skip
    return {**result, "prior": spec, "scalarization": scalarization.name}


__all__ = [
    "ObjectiveScale",
    "RandomScalarization",
    "Region",
    "Scalarization",
    "WeightPrior",
    "bayes_regret",
    "bayes_utility",
    "campaign_bayes_regret",
    "chebyshev_scalarization",
    "hypervolume_scalarization",
    "linear_scalarization",
    "ucb_beta",
]
