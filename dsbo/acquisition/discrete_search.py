r"""Proposals where no continuous column is left: enumeration or a local search over categories.

A search space of only unordered categoricals has no continuous column: each categorical is a
one-hot block whose corners are its values, and BoTorch's optimizers (L-BFGS-B over the box,
``optimize_acqf_mixed`` over the continuous columns of each combination) have nothing to move.
The same happens whenever every column that is not a category is *settled*: held by the
optimizer's ``fixed_features`` (a ``Tuner.ask(fixed=...)``, a context, an Optuna
``fixed_params``), or belonging to a conditional parameter that is inactive at every point those
fixed columns allow (its parents fixed to values outside its ``when``). The candidates are then
a finite set :math:`\mathcal C` of configurations, and the acquisition is maximized over it
directly:

* **Enumeration** when the product of the free categoricals' sizes is at most
  :func:`enumeration_limit` (``max(max_enumerate, raw_samples)``, 512 by default): every
  configuration is built, mapped onto the search space (``Problem.round_to_domain``: an inactive
  conditional categorical collapses, so equal configurations are scored once), and scored in
  one batched acquisition call of ``n x 1 x d``, the same number of acquisition values a
  continuous search spends on scoring its raw samples. The proposal is
  :math:`\arg\max_{x \in \mathcal C \setminus S} \alpha(x)`, with :math:`S` the evaluated and
  pending points (``History.seen``, within the repeat tolerance ``max(min_distance,
  DUPLICATE_TOLERANCE)`` of :func:`dsbo.acquisition.repeats.replace_repeats`). This is exact.
* **Local search** above that size: a first-improvement-free steepest ascent over one-category
  moves (change one categorical's value), the neighbourhood of CoCaBO's and of BoTorch's
  ``optimize_acqf_mixed_alternating`` discrete step, from the ``num_restarts`` best points of a
  start set (the incumbents and ``raw_samples`` scrambled Sobol configurations); every step
  scores all neighbours of all climbers in one batched call, for at most ``maxiter`` steps. The
  proposal is the best configuration scored on the way that is not in :math:`S`.

The acquisition's value decides; nothing is drawn at random beyond the seeded Sobol start set.
When every configuration of :math:`\mathcal C` is in :math:`S` (a small space, all tried), the
proposal is the best one again, its metadata says ``space_exhausted: True`` and a
:class:`SpaceExhaustedWarning` is issued: a repeat is proposed only then. ``q > 1`` is built greedily, each chosen point pending
(``acqf.set_X_pending``) and avoided for the next.

References:
    B. Ru, A. Alvi, V. Nguyen, M. A. Osborne and S. Roberts. Bayesian optimisation over multiple
    continuous and categorical inputs (CoCaBO). ICML 2020.
    M. Balandat et al. BoTorch: a framework for efficient Monte-Carlo Bayesian optimization.
    NeurIPS 2020 (``optimize_acqf_discrete``, ``optimize_acqf_mixed_alternating``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from dsbo.acquisition.sparsity import DUPLICATE_TOLERANCE, is_duplicate
from dsbo.problems.base import Problem

if TYPE_CHECKING:  # settings imports this module where it scores fixed points
    from dsbo.acquisition.settings import OptimizerSettings

#: Rows per batched acquisition call (as ``settings.RAW_BATCH``, the raw points' batch).
RAW_BATCH = 512

#: Configurations the exhaustion check builds at most, in blocks of ``RAW_BATCH``, when a local
#: search found nothing new (a large space whose every scored configuration was tried).
MAX_SWEEP = 1 << 16


@dataclass
class DiscreteProposal:
    """``q`` configurations, their acquisition values and one metadata dict each."""

    X: Tensor
    values: Tensor
    metadata: list[dict[str, Any]] = field(default_factory=list)


def enumeration_limit(optimizer: OptimizerSettings) -> int:
    """The largest product of category counts that is enumerated: ``max(max_enumerate,
    raw_samples)``, so that scoring every configuration costs no more acquisition values than
    scoring the raw samples of a continuous search."""
    return max(optimizer.max_enumerate, optimizer.raw_samples)


def repeat_tolerance(optimizer: OptimizerSettings) -> float:
    """Unit-cube max-norm distance within which a configuration repeats a seen one."""
    return max(float(optimizer.min_distance), DUPLICATE_TOLERANCE)


def settled_columns(problem: Problem, fixed: dict[int, float]) -> set[int]:
    """The columns that take one value at every point the ``fixed`` columns allow: the fixed
    ones, and those of each conditional parameter that is inactive there (every ancestor in its
    conditions fully fixed, and the decoded values outside its ``when``)."""
    space = problem.space
    settled = set(fixed)
    columns = {n: set(range(space.dim)[space.slices[n]]) for n in space.parameters}
    known = {n for n, cols in columns.items() if cols <= settled}  # Fixed parameters included

    def determined(name: str) -> bool:
        return all(p in known and determined(p) for p in space.parameters[name].conditions)

    template = [fixed.get(j, low) for j, (low, _) in enumerate(space.bounds)]
    active = space.decode(template)
    for name, parameter in space.parameters.items():
        if parameter.conditions and name not in active and determined(name):
            settled |= columns[name]
    return settled


def free_categoricals(problem: Problem, optimizer: OptimizerSettings) -> list[list[int]] | None:
    """The one-hot column groups still free when every column that is not settled
    (:func:`settled_columns`) belongs to an unordered categorical; ``None`` while a continuous,
    integer or ordered column is free (a continuous optimizer has work then). An empty list:
    every column is settled, a single configuration is left."""
    space = getattr(problem, "space", None)
    if space is None:
        return None
    fixed = {int(j): float(v) for j, v in (optimizer.fixed_features or {}).items()}
    settled = settled_columns(problem, fixed)
    groups = [g for g in space.one_hot_groups if not settled.intersection(g)]
    grouped = {j for g in groups for j in g}
    if any(j not in settled and j not in grouped for j in range(space.dim)):
        return None
    return groups


def score(acqf: Any, X: Tensor) -> Tensor:
    """``acqf`` at each row of ``X`` (``n x d`` -> ``n``), ``RAW_BATCH`` rows per batched call;
    NaN scores as ``-inf``."""
    if X.shape[0] == 0:
        return X.new_zeros(0)
    with torch.no_grad():
        values = torch.cat([acqf(chunk.unsqueeze(-2)).reshape(-1) for chunk in X.split(RAW_BATCH)])
    return torch.nan_to_num(values.to(X), nan=-math.inf)


def template(problem: Problem, optimizer: OptimizerSettings) -> Tensor:
    """A ``d``-vector with the fixed features set and every other column at its lower bound."""
    return optimizer.apply_fixed_features(problem.bounds[0].clone())


def configurations(
    problem: Problem, base: Tensor, groups: list[list[int]], picks: Tensor
) -> Tensor:
    """The points of ``base`` with group ``i`` set to its ``picks[:, i]``-th value (``n x k``
    indices), mapped onto the search space, distinct and feasible."""
    X = base.expand(picks.shape[0], -1).clone()
    for i, g in enumerate(groups):
        cols = torch.tensor(g, dtype=torch.long)
        X[:, cols] = 0.0
        X[torch.arange(X.shape[0]), cols[picks[:, i]]] = 1.0
    return snap(problem, X)


def snap(problem: Problem, X: Tensor) -> Tensor:
    """``X`` on the search space (conditions applied), repeated rows dropped (first kept) and
    rows outside the linear parameter constraints left out."""
    if X.shape[0] == 0:
        return X
    X = problem.round_to_domain(X)
    _, inverse = torch.unique(X, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), X.shape[0], dtype=torch.long)
    first = first.scatter_reduce(0, inverse, torch.arange(X.shape[0]), reduce="amin")
    X = X[first.sort().values]
    if problem.space.constraints:
        ok = torch.tensor([problem.space.feasible(u) for u in X.tolist()], dtype=torch.bool)
        X = X[ok]
    return X


def neighbours(problem: Problem, X: Tensor, groups: list[list[int]]) -> Tensor:
    """Every point one category move away from a row of ``X`` (one group set to another
    value), on the search space and distinct."""
    moves = [(g, j) for g in groups for j in g]
    out = X.unsqueeze(1).repeat(1, len(moves), 1)
    for m, (g, j) in enumerate(moves):
        out[:, m, g] = 0.0
        out[:, m, j] = 1.0
    return snap(problem, out.reshape(-1, X.shape[-1]))


def _product(groups: list[list[int]]) -> int:
    return math.prod(len(g) for g in groups)


def _all_picks(groups: list[list[int]], start: int = 0, stop: int | None = None) -> Tensor:
    """Rows ``start:stop`` of the product of the groups' value indices (``n x k``, the last
    group varying fastest, as ``itertools.product``)."""
    stop = _product(groups) if stop is None else stop
    index = torch.arange(start, stop, dtype=torch.long)
    picks = torch.zeros(index.shape[0], len(groups), dtype=torch.long)
    for i in reversed(range(len(groups))):
        picks[:, i] = index % len(groups[i])
        index = index // len(groups[i])
    return picks


def local_search(
    acqf: Any,
    problem: Problem,
    optimizer: OptimizerSettings,
    groups: list[list[int]],
    seed: int,
    starts: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Steepest ascent of ``acqf`` over one-category moves from the ``num_restarts`` best
    points of the start set (``starts`` and ``raw_samples`` Sobol configurations, fixed features
    applied), at most ``maxiter`` steps, each scoring the neighbours of every climber in one
    batched call; returns every configuration scored (distinct) and its value."""
    sobol = problem.sobol_design(optimizer.raw_samples, seed, optimizer.apply_fixed_features)
    if starts is not None and starts.numel():
        sobol = torch.cat([starts.reshape(-1, sobol.shape[-1]).to(sobol), sobol])
    archive = snap(problem, optimizer.apply_fixed_features(sobol))
    values = score(acqf, archive)
    top = torch.topk(values, min(optimizer.num_restarts, archive.shape[0]))
    climbers, heights = archive[top.indices], top.values
    for _ in range(optimizer.maxiter):
        near = [neighbours(problem, c.unsqueeze(0), groups) for c in climbers]
        owner = torch.cat([torch.full((n.shape[0],), i) for i, n in enumerate(near)])
        step = torch.cat(near)
        step_values = score(acqf, step)
        archive, values = torch.cat([archive, step]), torch.cat([values, step_values])
        moved = []
        for i in range(climbers.shape[0]):
            own = step_values.masked_fill(owner != i, -math.inf)
            best = int(torch.argmax(own))
            if own[best] > heights[i]:
                climbers[i], heights[i] = step[best], own[best]
                moved.append(i)
        if not moved:
            break
        keep = torch.tensor(moved, dtype=torch.long)  # climbers at a local maximum stay there
        climbers, heights = climbers[keep], heights[keep]
    archive, inverse = torch.unique(archive, dim=0, return_inverse=True)
    best = torch.full((archive.shape[0],), -math.inf, dtype=values.dtype)
    return archive, best.scatter_reduce(0, inverse, values, reduce="amax")


def _sweep_for_new(
    acqf: Any,
    problem: Problem,
    base: Tensor,
    groups: list[list[int]],
    avoid: Tensor | None,
    tol: float,
) -> tuple[Tensor, Tensor] | None:
    """The best configuration not in ``avoid`` of the first block of the product (in
    ``RAW_BATCH`` blocks, up to ``MAX_SWEEP`` configurations) that holds one; ``None`` if none
    does."""
    total = min(_product(groups), MAX_SWEEP)
    for start in range(0, total, RAW_BATCH):
        block = configurations(
            problem, base, groups, _all_picks(groups, start, min(start + RAW_BATCH, total))
        )
        block = block[~is_duplicate(block, avoid, problem.bounds, tol)]
        if block.shape[0]:
            values = score(acqf, block)
            best = int(torch.argmax(values))
            return block[best], values[best]
    return None


def maximize_discrete(
    acqf: Any,
    problem: Problem,
    optimizer: OptimizerSettings,
    q: int,
    seed: int,
    groups: list[list[int]],
    *,
    avoid: Tensor | None = None,
    starts: Tensor | None = None,
    warn: bool = True,
) -> DiscreteProposal:
    """``q`` configurations maximizing ``acqf`` over the free categoricals ``groups``
    (:func:`free_categoricals`) with every other column settled (module docstring): enumerated
    up to :func:`enumeration_limit` configurations, a local search above it; each not within
    the repeat tolerance of ``avoid`` (evaluated and pending points) or of an earlier pick,
    unless every configuration is (``space_exhausted`` in its metadata, and a
    :class:`SpaceExhaustedWarning` when ``warn``)."""
    base = template(problem, optimizer)
    tol = repeat_tolerance(optimizer)
    bounds = problem.bounds
    enumerate_all = _product(groups) <= enumeration_limit(optimizer)
    metadata: list[dict[str, Any]] = []
    with GreedyBatch(acqf, q) as batch:
        for step in range(q):
            seen = [
                t.reshape(-1, base.shape[-1]).to(base)
                for t in (avoid, *batch.chosen)
                if t is not None
            ]
            pool = torch.cat(seen) if seen else None
            if enumerate_all:
                X = configurations(problem, base, groups, _all_picks(groups))
                v = score(acqf, X)
                meta: dict[str, Any] = {
                    "discrete_search": "enumerate",
                    "configurations": X.shape[0],
                }
            else:
                X, v = local_search(acqf, problem, optimizer, groups, seed + step, starts)
                meta = {"discrete_search": "local", "scored": X.shape[0]}
            new = ~is_duplicate(X, pool, bounds, tol)
            if new.any():
                i = int(torch.argmax(v.masked_fill(~new, -math.inf)))
                x, value = X[i], v[i]
            else:
                swept = (
                    None
                    if enumerate_all
                    else _sweep_for_new(acqf, problem, base, groups, pool, tol)
                )
                if swept is not None:
                    x, value = swept
                else:
                    i = int(torch.argmax(v))
                    x, value = X[i], v[i]
                    meta["space_exhausted"] = True
                    if warn:
                        warn_exhausted(X.shape[0], enumerate_all)
            batch.add(x.unsqueeze(0), value)
            metadata.append(meta)
    return DiscreteProposal(*batch.result(), metadata)


def untried_design(
    problem: Problem,
    optimizer: OptimizerSettings,
    q: int,
    seed: int,
    groups: list[list[int]],
    avoid: Tensor | None = None,
) -> tuple[Tensor, list[dict[str, Any]]]:
    """``q`` model-free points (the Sobol policy and the campaign's fallback before a model can
    be fitted) where only the categories ``groups`` are free: the configurations of a scrambled
    Sobol sequence (``seed``, ``raw_samples`` points at least) not in ``avoid``, in the
    sequence's order, then those of the product (in blocks, up to ``MAX_SWEEP``) that the
    Sobol points missed; a repeat only once every configuration is in ``avoid``
    (``space_exhausted`` in its metadata). Without this, two Sobol points of a six-configuration
    space land on the same configuration as often as not."""
    base = template(problem, optimizer)
    tol = repeat_tolerance(optimizer)
    sobol = problem.sobol_design(
        max(q, optimizer.raw_samples), seed, optimizer.apply_fixed_features
    )
    candidates = snap(problem, sobol)
    pool = (
        None if avoid is None or not avoid.numel() else avoid.reshape(-1, base.shape[-1]).to(base)
    )
    chosen: list[Tensor] = []
    metadata: list[dict[str, Any]] = []
    start, total = 0, min(_product(groups), MAX_SWEEP)
    while len(chosen) < q:
        new = candidates[~is_duplicate(candidates, pool, problem.bounds, tol)]
        if new.shape[0] == 0 and start < total:  # the Sobol points missed the untried ones
            stop = min(start + RAW_BATCH, total)
            candidates, start = (
                configurations(problem, base, groups, _all_picks(groups, start, stop)),
                stop,
            )
            continue
        meta: dict[str, Any] = {"acquisition": "sobol"}
        if new.shape[0]:
            x = new[0]
        else:
            x, meta["space_exhausted"] = sobol[len(chosen) % sobol.shape[0]], True
        chosen.append(x)
        metadata.append(meta)
        pool = x.unsqueeze(0) if pool is None else torch.cat([pool, x.unsqueeze(0)])
    return torch.stack(chosen), metadata


class SpaceExhaustedWarning(UserWarning):
    """Every configuration left free has been evaluated or is pending: a repeat is proposed."""


def warn_exhausted(n: int, enumerated: bool) -> None:
    """Issue the :class:`SpaceExhaustedWarning` of a proposal that repeats a configuration
    because each of ``n`` (or, when not ``enumerated``, of the first ``MAX_SWEEP``) has been
    tried."""
    what = f"each of the {n}" if enumerated else f"each of the first {MAX_SWEEP}"
    warnings.warn(
        f"{what} configurations left free (with the fixed features) has been "
        "evaluated or is pending; proposing the acquisition's best one again (a repeat, "
        "space_exhausted in the trial's metadata)",
        SpaceExhaustedWarning,
        stacklevel=3,
    )


class GreedyBatch:
    """The ``q`` picks of a sequential greedy batch (as BoTorch's ``optimize_acqf`` with
    ``sequential=True``): each pick is made pending on ``acqf`` for the next one, and the
    acquisition's own pending points are restored when the batch ends (a context manager, so
    also when a pick fails).

    Example:
        >>> with GreedyBatch(acqf, q) as batch:
        ...     for _ in range(q):
        ...         batch.add(best_point(acqf), its_value)  # 1 x d, one value
        >>> X, values = batch.result()
    """

    def __init__(self, acqf: Any, q: int) -> None:
        self.acqf, self.q = acqf, q
        self.base = getattr(acqf, "X_pending", None)
        #: The picks so far (each ``1 x d``) and their values (each of one element).
        self.chosen: list[Tensor] = []
        self.values: list[Tensor] = []

    def __enter__(self) -> GreedyBatch:
        return self

    def add(self, x: Tensor, value: Tensor) -> None:
        """Record pick ``x`` (``1 x d``) and its acquisition ``value``; unless it is the last
        of the batch, it is pending for the next pick."""
        self.chosen.append(x)
        self.values.append(value.reshape(1))
        if len(self.chosen) < self.q:
            pending = self.chosen if self.base is None else [self.base, *self.chosen]
            self.acqf.set_X_pending(torch.cat(pending))

    def __exit__(self, *exc: object) -> None:
        if self.q > 1:
            self.acqf.set_X_pending(self.base)

    def result(self) -> tuple[Tensor, Tensor]:
        """The picks (``q x d``) and their values (``q``)."""
        return torch.cat(self.chosen), torch.cat(self.values)


def score_table(acqf: Any, bounds: Tensor, q: int, table: Tensor) -> tuple[Tensor, Tensor]:
    """Maximize ``acqf`` over the rows of ``table`` (``n x d`` complete points: every column
    fixed, so no optimizer has anything to move): the ``q`` best distinct rows, greedily with
    the chosen ones pending for ``q > 1`` (as ``optimize_acqf_mixed``); returns ``(X,
    values)``, ``q x d`` and ``q``. Used by :meth:`OptimizerSettings.maximize` and the mixed
    optimizer when fixed features and categories leave no free column."""
    table = torch.unique(table.to(bounds), dim=0)
    taken = torch.zeros(table.shape[0], dtype=torch.bool)
    with GreedyBatch(acqf, q) as batch:
        for _ in range(q):
            v = score(acqf, table)
            if not taken.all():
                v = v.masked_fill(taken, -math.inf)
            i = int(torch.argmax(v))
            taken[i] = True
            batch.add(table[i : i + 1], v[i])
    return batch.result()


__all__ = [
    "MAX_SWEEP",
    "RAW_BATCH",
    "DiscreteProposal",
    "SpaceExhaustedWarning",
    "configurations",
    "enumeration_limit",
    "free_categoricals",
    "local_search",
    "maximize_discrete",
    "neighbours",
    "repeat_tolerance",
    "score",
    "score_table",
    "settled_columns",
    "snap",
    "untried_design",
    "warn_exhausted",
]
