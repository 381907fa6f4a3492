r"""Thompson sampling over a discrete candidate set: the ``thompson`` policy.

GP-Thompson sampling (Russo and Van Roy 2014; Chowdhury and Gopalan 2017) draws one function
:math:`\tilde f \sim p(f \mid \mathcal D_t)` from the surrogate's posterior and proposes its
maximizer. It is the acquisition of the Paria thesis (ch. 3) in the infinite-width limit:
PosteriorSMB proposes the maximizer of one network trained from a random initialization,
which is a draw from the NTK-GP posterior (Proposition 3.2), so ``thompson`` on the
``ntk-gp`` surrogate is the thesis' algorithm with infinitely wide networks.

The maximizer is taken over ``N`` scrambled Sobol points of the box (BoTorch's
``MaxPosteriorSampling``): a joint posterior sample at ``N`` points needs the ``N x N``
posterior covariance, so the policy works with any BoTorch model but costs
:math:`O(N^2)` kernel evaluations and an :math:`O(N^3)` Cholesky factorization. For ``q > 1``
the policy draws ``q`` independent functions; draw ``i`` contributes its best candidate not
already taken by draws ``1..i-1`` (so the ``q`` points are distinct).

* Fixed features are set on every candidate and integer dimensions rounded before the
  posterior is evaluated, so every candidate is a valid point.
* Outcome constraints (slacks ``>= 0``) are sampled jointly with the objective: a draw ranks
  the candidates feasible in that draw by their sampled objective, above all infeasible ones,
  which are ranked by their total sampled violation (constrained TS, Eriksson and Poloczek
  2021).
* Ensemble and fully Bayesian models (a batch of posteriors) are sampled as a mixture: each
  of the ``q`` draws first picks a member uniformly at random.
* Draws are exact: the ``N x N`` posterior covariance is factorized by Cholesky (GPyTorch's
  default switches to an approximate Lanczos root above 800 points).
* Pending points are not conditioned on (no fantasies): batch diversity comes from the
  independent draws. Candidates that repeat an evaluated or pending point (within
  ``max(min_distance, DUPLICATE_TOLERANCE)``) are passed over while ``q`` new ones remain; in
  a small discrete space that is all tried (fewer than ``q`` new candidates), the draw's best is proposed again with
  ``space_exhausted: True`` in its metadata.
* Randomness: the Sobol set and the draws are seeded with the proposal seed; the global torch
  RNG is left untouched.

Example:
    >>> campaign = Campaign(problem, surrogate="ntk-gp", acquisition="thompson")
    >>> campaign = Campaign(problem, acquisition={"name": "thompson", "n_candidates": 1000})

References:
    D. Russo and B. Van Roy. Learning to optimize via posterior sampling. Mathematics of
    Operations Research, 2014.
    S. R. Chowdhury and A. Gopalan. On kernelized multi-armed bandits. ICML 2017 (GP-TS).
    D. Eriksson and M. Poloczek. Scalable constrained Bayesian optimization. AISTATS 2021.
    S. Paria. On greedy algorithms for blackbox optimization using neural networks (thesis,
    ch. 3, Proposition 3.2).
"""

from __future__ import annotations

from typing import Any

import gpytorch
import torch
from botorch.acquisition.objective import GenericMCObjective
from botorch.generation.sampling import MaxPosteriorSampling
from botorch.models.model import Model
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from dsbo.acquisition.base import History, OptimizerSettings, Proposal, register_policy
from dsbo.acquisition.discrete_search import repeat_tolerance
from dsbo.acquisition.sparsity import is_duplicate
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

#: Bounds of the default candidate-set size ``min(MAX, max(MIN, PER_DIM * d))``.
DEFAULT_MIN_CANDIDATES = 500
DEFAULT_MAX_CANDIDATES = 5000
DEFAULT_CANDIDATES_PER_DIM = 200
#: Exact (Cholesky) posterior sampling up to at least this many candidates.
MAX_CHOLESKY_SIZE = 10_000


def default_n_candidates(dim: int) -> int:
    """``min(5000, max(500, 200 d))`` Sobol candidates for a ``d``-dimensional box."""
    return min(
        DEFAULT_MAX_CANDIDATES, max(DEFAULT_MIN_CANDIDATES, DEFAULT_CANDIDATES_PER_DIM * dim)
    )


def thompson_objective(samples: Tensor, num_objectives: int, num_constraints: int) -> Tensor:
    r"""Scores of sampled outcomes ``samples`` (``... x N x (m + c)``), shape ``... x N``.

    The objective is output 0. With constraints, a candidate feasible in the draw (all sampled
    slacks ``>= 0``) scores its sampled objective; an infeasible one scores
    ``min(objective over the draw) - 1 - violation``, below every feasible candidate, with
    ``violation = sum(max(0, -slack))``.
    """
    objective = samples[..., 0]
    if num_constraints == 0:
        return objective
    slacks = samples[..., num_objectives : num_objectives + num_constraints]
    violation = (-slacks).clamp_min(0).sum(-1)
    floor = objective.min(dim=-1, keepdim=True).values - 1.0
    return torch.where(violation > 0, floor - violation, objective)


@register_policy("thompson", "Thompson sampling: maximizers of posterior draws on a Sobol set")
class ThompsonSampling:
    """Thompson sampling over ``n_candidates`` scrambled Sobol points (see the module doc).

    Args:
        n_candidates: Size ``N`` of the candidate set (default ``min(5000, max(500, 200 d))``).
        optimizer: Optimizer settings; only ``fixed_features`` is used.
    """

    name = "thompson"
    needs_model = True

    def __init__(
        self, n_candidates: int | None = None, optimizer: OptimizerSettings | None = None
    ) -> None:
        if n_candidates is not None and (
            isinstance(n_candidates, bool) or not isinstance(n_candidates, int) or n_candidates < 1
        ):
            raise ConfigError(
                f"acquisition.options.n_candidates must be a positive integer, got {n_candidates!r}"
            )
        self.n_candidates = n_candidates
        self.optimizer = optimizer or OptimizerSettings()

    def candidates(self, problem: Problem, seed: int) -> Tensor:
        """``N x d`` scrambled Sobol points in the box, fixed features set, rounded (and, when
        rounding integer dimensions creates duplicates, deduplicated)."""
        n = self.n_candidates or default_n_candidates(problem.dim)
        X = draw_sobol_samples(bounds=problem.bounds, n=n, q=1, seed=seed).squeeze(1)
        X = problem.round_to_domain(self.optimizer.apply_fixed_features(X))
        return torch.unique(X, dim=0) if problem.integer_dims else X

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        if problem.num_objectives > 1:
            raise ConfigError(
                f"acquisition 'thompson' is single-objective and {problem.name} has "
                f"{problem.num_objectives} objectives; use qlognehvi"
            )
        X = self.candidates(problem, history.seed)
        if X.shape[0] < q:
            raise ConfigError(
                f"acquisition.options.n_candidates={X.shape[0]} is smaller than q={q}"
            )
        m, c = problem.num_objectives, problem.num_constraints
        generator = torch.Generator().manual_seed(history.seed)
        # Exact joint draws: Cholesky of the N x N posterior covariance (GPyTorch would switch
        # to an approximate Lanczos root above 800 points).
        cholesky = gpytorch.settings.max_cholesky_size(max(MAX_CHOLESKY_SIZE, X.shape[0]))
        with torch.random.fork_rng(devices=[]), torch.no_grad(), cholesky:
            torch.manual_seed(history.seed)
            samples = model.posterior(X).rsample(torch.Size([q]))  # q x batch x N x outputs
        samples = one_member_per_draw(samples, generator)  # q x N x outputs
        scores = thompson_objective(samples, m, c)  # q x N
        # Draw i contributes the best candidate of its own draw not taken by draws < i, nor
        # evaluated or pending (unless fewer than q candidates are new: a small space, all tried).
        seen = is_duplicate(
            X, history.seen().to(X), problem.bounds.to(X), repeat_tolerance(self.optimizer)
        )
        taken = seen if int((~seen).sum()) >= q else torch.zeros(X.shape[0], dtype=torch.bool)
        index: list[int] = []

        def masked(Z: Tensor, X: Tensor | None = None) -> Tensor:
            return thompson_objective(Z, m, c).masked_fill(taken, float("-inf"))

        sampler = MaxPosteriorSampling(model, objective=GenericMCObjective(masked))
        for i in range(q):
            x = sampler.maximize_samples(X, samples[i : i + 1], num_samples=1)[0]
            j = int(((X == x).all(-1) & ~taken).nonzero()[0])
            taken[j] = True
            index.append(j)
        chosen = X[index]
        exhausted = {"space_exhausted": True} if int((~seen).sum()) < q else {}
        metadata: list[dict[str, Any]] = [
            {
                **exhausted,
                "acquisition": self.name,
                "n_candidates": int(X.shape[0]),
                "sample_value": float(samples[i, index[i], 0]),
                "sample_score": float(scores[i, index[i]]),
            }
            for i in range(q)
        ]
        return Proposal(X=chosen.clone(), metadata=metadata)


def one_member_per_draw(samples: Tensor, generator: torch.Generator) -> Tensor:
    """Reduce ``q x batch... x N x m`` draws of a batched (ensemble) posterior to ``q x N x m``
    by picking, for each draw, one member uniformly at random (sampling the mixture)."""
    q, N, m = samples.shape[0], samples.shape[-2], samples.shape[-1]
    members = samples.reshape(q, -1, N, m)
    if members.shape[1] == 1:
        return members[:, 0]
    pick = torch.randint(members.shape[1], (q,), generator=generator)
    return members[torch.arange(q), pick]


__all__ = [
    "ThompsonSampling",
    "default_n_candidates",
    "one_member_per_draw",
    "thompson_objective",
]
