"""Proposals that repeat a configuration already tried: replaced by the best new one, or, where
the space is finite and every configuration has been tried, proposed again and said so.

Snapping a relaxed maximizer onto the search space (integers, categoricals, inactive
conditional parameters) can land on a configuration already evaluated or pending, which would
spend an evaluation on it again. :func:`replace_repeats` swaps such a row for the best new
point (by the acquisition) of a scrambled Sobol set; where only categories are free, for the
best new configuration of :func:`~dsbo.acquisition.discrete_search.maximize_discrete`.

A space whose free parameters are all integers, ordered choices or categoricals is finite. When
no Sobol point is new there, :func:`finite_grid` builds every configuration (up to
``MAX_SWEEP``, conditions applied, fixed features set) and the best untried one is the
replacement; when none is left, the row is kept, the proposal's metadata says
``space_exhausted: True`` and a :class:`~dsbo.acquisition.discrete_search.SpaceExhaustedWarning`
is issued, as for a space of only categoricals.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch
from torch import Tensor

from dsbo.acquisition.base import History, OptimizerSettings
from dsbo.acquisition.discrete_search import (
    MAX_SWEEP,
    free_categoricals,
    maximize_discrete,
    score,
    settled_columns,
    snap,
    warn_exhausted,
)
from dsbo.acquisition.sparsity import DUPLICATE_TOLERANCE, is_duplicate
from dsbo.problems.base import Problem


def grid_values(parameter: Any) -> list[Any] | None:
    """The values a parameter can take, or ``None`` for a continuous one."""
    from dsbo.space.parameters import Choice, Int

    if isinstance(parameter, Choice):
        return list(parameter.values)
    if isinstance(parameter, Int):
        return list(range(parameter.low, parameter.high + 1, parameter.step))
    return None


def finite_grid(problem: Problem, optimizer: OptimizerSettings) -> Tensor | None:
    """Every configuration of the search space with the optimizer's fixed features set, on the
    space and distinct (``n x d``), when each parameter that is not settled (fixed, or inactive
    wherever the fixed columns allow; :func:`~dsbo.acquisition.discrete_search.settled_columns`)
    takes finitely many values and their product is at most ``MAX_SWEEP``; else ``None``."""
    space = getattr(problem, "space", None)
    if space is None:
        return None
    fixed = {int(j): float(v) for j, v in (optimizer.fixed_features or {}).items()}
    settled = settled_columns(problem, fixed)
    base = space.decode(optimizer.apply_fixed_features(problem.bounds[0].clone()).tolist())
    axes: dict[str, list[Any]] = {}
    for name, parameter in space.parameters.items():
        columns = set(range(space.dim)[space.slices[name]])
        if not columns or columns <= settled:
            continue
        values = grid_values(parameter)
        if values is None:
            return None
        axes[name] = values
    if math.prod(len(v) for v in axes.values()) > MAX_SWEEP:
        return None
    rows = []
    for combination in itertools.product(*axes.values()):
        values = {**base, **dict(zip(axes, combination, strict=True))}
        rows.append(space.snap(space.encode(active_only(space, values), partial=True)))
    X = torch.tensor(rows, dtype=problem.bounds.dtype)
    return snap(problem, optimizer.apply_fixed_features(X))


def active_only(space: Any, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the parameters their parents leave inactive (declaration order:
    parents first)."""
    kept: dict[str, Any] = {}
    for name, parameter in space.parameters.items():
        if name not in values:
            continue
        if all(kept.get(p) in allowed for p, allowed in parameter.conditions.items()):
            kept[name] = values[name]
    return kept


def replace_repeats(
    acqf: Any,
    X: Tensor,
    history: History,
    problem: Problem,
    optimizer: OptimizerSettings,
    tol: float,
) -> tuple[Tensor, list[bool], list[bool]]:
    """``X`` with every row that repeats an evaluated, pending or earlier row (within ``tol``,
    at least ``DUPLICATE_TOLERANCE``, in the unit cube's max-norm, after snapping to the
    search space) replaced by the new point of a scrambled Sobol set of ``raw_samples``
    points (snapped, feasible, fixed features applied) where ``acqf`` is largest; when only
    categories are free, by the best new configuration of
    :func:`~dsbo.acquisition.discrete_search.maximize_discrete` (a Sobol set can miss the few
    untried ones of a small space); when no Sobol point is new and the space is finite
    (:func:`finite_grid`), by its best untried configuration. A row is kept when no new point
    is left.

    Returns:
        The rows; per row, whether it was replaced; and per row, whether it was kept because
        every configuration of a finite space has been tried (``space_exhausted``).
    """
    seen = history.seen().to(X)
    bounds = problem.bounds.to(X)
    tol = max(tol, DUPLICATE_TOLERANCE)
    groups = free_categoricals(problem, optimizer)
    rows: list[Tensor] = []
    replaced: list[bool] = []
    exhausted: list[bool] = []
    for i, x in enumerate(X):
        pool = torch.cat([seen, *(r.unsqueeze(0) for r in rows)])
        if not is_duplicate(x.unsqueeze(0), pool, bounds, tol)[0]:
            rows.append(x)
            replaced.append(False)
            exhausted.append(False)
            continue
        seed = (history.seed + 7919 * (i + 1)) % (2**31 - 1)
        if groups is not None:  # only categories are free: the best new configuration
            found = maximize_discrete(
                acqf, problem, optimizer, 1, seed, groups, avoid=pool, warn=False
            )
            none_left = found.metadata[0].get("space_exhausted", False)
            rows.append(x if none_left else found.X[0].to(x))
            replaced.append(not none_left)
            exhausted.append(none_left)
            continue
        candidates = problem.sobol_design(
            optimizer.raw_samples, seed, optimizer.apply_fixed_features
        ).to(X)
        candidates = candidates[~is_duplicate(candidates, pool, bounds, tol)]
        none_left = False
        if candidates.shape[0] == 0:  # a finite space may still hold untried configurations
            grid = finite_grid(problem, optimizer)
            if grid is not None:
                grid = grid.to(X)
                candidates = grid[~is_duplicate(grid, pool, bounds, tol)]
                none_left = candidates.shape[0] == 0
                if none_left:
                    warn_exhausted(grid.shape[0], enumerated=True)
        if candidates.shape[0] == 0:
            rows.append(x)
            replaced.append(False)
            exhausted.append(none_left)
            continue
        rows.append(candidates[int(torch.argmax(score(acqf, candidates)))])
        replaced.append(True)
        exhausted.append(False)
    return torch.stack(rows), replaced, exhausted


__all__ = ["active_only", "finite_grid", "grid_values", "replace_repeats"]
