r"""Categories and conditional branches as arms: a balanced initial design, and a Thompson draw
among the branches when the search stalls.

**The failure this addresses.** On a space whose best category has its own conditional
parameters (``experiments/mixed_spaces.py``'s ``cond-synthetic``: a four-way ``family`` whose
value ``c`` is best only with its own ``shape`` near 0.7), an expected-improvement search that
sees the first few ``c`` points drawn at poor ``shape`` values fits a posterior in which ``c``
is worse by a margin, and spends every later proposal on the second-best category: on 8 of 10
seeds the previous default ended at ``family = a`` (0.50), on 2 it found ``c`` (0.002, 0.046).
Expected improvement compares a branch's *expected* gain; it does not ask how likely the branch
is to hold the optimum.

**A balanced design.** The initial design's unordered categoricals are stratified: row ``i``
of the Sobol design takes value ``perm_b[i mod k]`` of a ``k``-way categorical, ``perm_b`` a
seeded permutation drawn for each block ``b = i // k`` of ``k`` rows (independently per
categorical). Any prefix of ``n`` rows then holds each value ``floor(n / k)`` or ``ceil(n / k)``
times, where raw Sobol points (the largest of ``k`` uniform one-hot columns) can leave a value
with none, and each branch's conditional parameters keep the Sobol sequence's values of the
rows assigned to it. Each design is a prefix of the next, like the Sobol sequence.

**Thompson sampling over branches, when the search stalls.** A *branch* is a combination of
the free categories' values (:func:`category_combinations`). When a single-objective search
stalls (:mod:`dsbo.acquisition.exploration`: ``stall_patience`` proposals in a row without an
improvement), its exploration first draws one joint posterior sample
:math:`\tilde f \sim p(f \mid \mathcal D)` over *copies of the incumbent moved into every
branch*: ``BRANCH_VARIANTS`` copies per branch, the parameters every branch shares at the
incumbent's values and the branch's own conditional parameters from a Sobol sequence (what is
unknown about a branch is mostly its own parameters; a branch without any is the incumbent with
its categories changed). When the draw's best copy lies in another branch, that copy is the
proposal; otherwise the exploration is the full-space Thompson draw of the stall rule, as
before. A branch is chosen with the posterior probability that it holds the best copy (Russo
and Van Roy, 2014): one whose first samples looked bad but whose own parameters are still
uncertain keeps being tried, in proportion to that chance, until the model is confident it is
worse, and each such trial varies only what the branch does not share. This is the bandit over
categories of CoCaBO (Ru et al., 2020: EXP3 over categories, a GP inside) with the posterior's
own probability in place of EXP3's weights, applied only when the search stalls; TPE's
per-branch densities and SMAC3's interleaved random configurations are the peers' answers to
the same problem.

A first version drew the branch of *every* proposal (over 1024 Sobol points, the acquisition
then maximized inside the drawn branch): on ``ackley-cond`` (whose branches do not share a
good learning rate) seeds 0-2 ended at 3.17, 3.96 and 1.71 against 2.09, 0.90 and 0.49 without
it, so the draw is kept for stalls only.

It applies where the stall rule does (one objective, no post-processor, no linear parameter
constraints, no cost budget, something other than categories free), to single proposals
(``q = 1``), with more than one enumerable combination of categories
(``OptimizerSettings.branches = "thompson"``, the default, which also balances the design;
``"acquisition"``: raw Sobol design, and the stall rule's full-space draw only, as before).

References:
    D. Russo and B. Van Roy. Learning to optimize via posterior sampling. Mathematics of
    Operations Research, 2014.
    B. Ru, A. S. Alvi, V. Nguyen, M. A. Osborne and S. J. Roberts. Bayesian optimisation over
    multiple continuous and categorical inputs (CoCaBO). ICML 2020.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from dsbo.acquisition.discrete_search import repeat_tolerance
from dsbo.acquisition.sparsity import is_duplicate

if TYPE_CHECKING:
    from botorch.models.model import Model

    from dsbo.acquisition.base import History
    from dsbo.acquisition.settings import OptimizerSettings
    from dsbo.problems.base import Problem

#: Copies of the incumbent moved into each branch, among the draw's candidates.
BRANCH_VARIANTS = 64


def free_category_groups(problem: Problem, optimizer: OptimizerSettings) -> list[list[int]]:
    """The one-hot columns of each unordered categorical the optimizer's fixed features leave
    free."""
    space = problem.space
    if space is None:
        return []
    pinned = set(optimizer.fixed_features or {})
    groups = [list(range(space.dim))[space.slices[name]] for name in space.categorical]
    return [g for g in groups if g and not pinned.intersection(g)]


def category_combinations(
    problem: Problem, optimizer: OptimizerSettings
) -> list[dict[int, float]] | None:
    """Every combination of the unordered categoricals' values as one-hot fixed features
    (``{column: 0 or 1}``), leaving out categoricals the optimizer's fixed features pin;
    ``None`` without such categoricals or with more than ``optimizer.max_enumerate``
    combinations."""
    groups = free_category_groups(problem, optimizer)
    if not groups or math.prod(len(g) for g in groups) > optimizer.max_enumerate:
        return None
    combinations = []
    for hot in itertools.product(*groups):
        combinations.append({j: float(j in hot) for g in groups for j in g})
    return combinations


def balanced_categories(
    problem: Problem, X: Tensor, seed: int, optimizer: OptimizerSettings
) -> Tensor:
    """``X`` (design rows) with each free unordered categorical's values assigned in blocks of
    ``k`` rows, a seeded permutation of the ``k`` values per block (the module doc); rows are
    not rounded here (the caller snaps inactive conditional parameters). Unchanged with
    ``optimizer.branches="acquisition"`` (raw Sobol points, as before the rule) and on spaces
    with linear parameter constraints (a row's feasibility was checked on its own values)."""
    groups = free_category_groups(problem, optimizer)
    if optimizer.branches != "thompson" or not groups or X.shape[0] == 0:
        return X
    if problem.space.constraints:
        return X
    X = X.clone()
    rows = torch.arange(X.shape[0])
    for g, columns in enumerate(groups):
        k = len(columns)
        generator = torch.Generator().manual_seed((seed * 1_000_003 + 7919 * (g + 1)) % 2**62)
        blocks = math.ceil(X.shape[0] / k)
        values = torch.cat([torch.randperm(k, generator=generator) for _ in range(blocks)])
        hot = torch.tensor(columns)[values[: X.shape[0]]]
        X[:, columns] = 0.0
        X[rows, hot] = 1.0
    return X


def matching(combinations: list[dict[int, float]], X: Tensor) -> list[dict[int, float]]:
    """The combinations that some row of ``X`` (snapped points) belongs to, in their order."""
    return [
        combination
        for combination in combinations
        if any(all(float(x[j]) == v for j, v in combination.items()) for x in X)
    ]


def incumbent(history: History, problem: Problem) -> Tensor:
    """The best evaluated point by the first objective among feasible ones (the best of all
    when none is feasible)."""
    feasible = problem.is_feasible(history.Y)
    values = history.Y[:, 0].masked_fill(~feasible, float("-inf")) if feasible.any() else None
    values = history.Y[:, 0] if values is None else values
    return history.X[int(torch.argmax(torch.nan_to_num(values, nan=float("-inf"))))]


def incumbent_copies(
    problem: Problem,
    history: History,
    optimizer: OptimizerSettings,
    combinations: list[dict[int, float]],
    seed: int,
) -> Tensor:
    """``BRANCH_VARIANTS`` copies of the incumbent moved into each branch, their conditional
    parameters drawn from a scrambled Sobol sequence (``seed``), every other column the
    incumbent's (the module doc); fixed features set, snapped to the search space,
    deduplicated."""
    from botorch.utils.sampling import draw_sobol_samples

    space = problem.space
    own = [j for name in space.conditional for j in list(range(space.dim))[space.slices[name]]]
    best = incumbent(history, problem)
    fresh = draw_sobol_samples(problem.bounds, n=BRANCH_VARIANTS, q=1, seed=seed).squeeze(1)
    copies = []
    for combination in combinations:
        rows = best.repeat(BRANCH_VARIANTS, 1)
        rows[:, own] = fresh[:, own].to(rows)
        for column, value in combination.items():
            rows[:, column] = value
        copies.append(rows)
    moved = problem.round_to_domain(optimizer.apply_fixed_features(torch.cat(copies)))
    return torch.unique(moved, dim=0)


def draw_scores(model: Model, X: Tensor, problem: Problem, seed: int) -> Tensor:
    """The scores (``N``) of one joint posterior draw over ``X`` (exact: Cholesky of the
    ``N x N`` covariance), outcome constraints sampled with the objective
    (:func:`~dsbo.acquisition.thompson.thompson_objective`)."""
    import gpytorch

    from dsbo.acquisition.thompson import (
        MAX_CHOLESKY_SIZE,
        one_member_per_draw,
        thompson_objective,
    )

    cholesky = gpytorch.settings.max_cholesky_size(max(MAX_CHOLESKY_SIZE, X.shape[0]))
    with torch.random.fork_rng(devices=[]), torch.no_grad(), cholesky:
        torch.manual_seed(seed)
        samples = model.posterior(X).rsample(torch.Size([1]))
    samples = one_member_per_draw(samples, torch.Generator().manual_seed(seed))
    return thompson_objective(samples, problem.num_objectives, problem.num_constraints)[0]


def draw_branch(
    model: Model,
    history: History,
    problem: Problem,
    optimizer: OptimizerSettings,
    combinations: list[dict[int, float]],
) -> tuple[Tensor, dict[str, Any]] | None:
    """One posterior draw over the incumbent's copies in every branch (the module doc), those
    that repeat an evaluated or pending point left out: the draw's best copy (``1 x d``) and
    its categories' user values when that copy lies outside the incumbent's branch, else
    ``None`` (the draw keeps the incumbent's branch, or every copy was tried)."""
    seed = (history.seed + 104_729) % (2**31 - 1)  # not the stall rule's own draw
    X = incumbent_copies(problem, history, optimizer, combinations, seed)
    seen = history.seen().to(X)
    X = X[~is_duplicate(X, seen, problem.bounds.to(X), repeat_tolerance(optimizer))]
    if X.shape[0] == 0:
        return None
    x = X[int(draw_scores(model, X, problem, seed).argmax())].reshape(1, -1)
    home = matching(combinations, incumbent(history, problem).reshape(1, -1))
    if matching(combinations, x) == home:
        return None
    values = problem.params(x[0])
    return x, {name: values[name] for name in problem.space.categorical if name in values}


__all__ = [
    "BRANCH_VARIANTS",
    "draw_branch",
    "draw_scores",
    "incumbent",
    "incumbent_copies",
    "balanced_categories",
    "category_combinations",
    "free_category_groups",
    "matching",
]
