"""One batched acquisition optimization over every combination of categories.

BoTorch's ``optimize_acqf_mixed`` optimizes the continuous columns once per combination of
the categorical columns (``fixed_features_list``), each time with ``num_restarts`` starts
picked among ``raw_samples`` points: with 16 combinations that is 16 full optimizations per
proposal. Here the combinations share one optimization, as in the mixed optimizers of
CoCaBO (Ru et al., 2020) and BoTorch's own ``optimize_acqf_mixed_alternating``:

1. ``max(raw_samples, 32 * combinations)`` scrambled Sobol points are dealt out evenly over
   the combinations by a seeded shuffle, and the given ``starts`` (e.g. the best evaluated
   points, each in its own combination) join them;
2. the starts kept are the best raw point of every combination and the ``num_restarts``
   best overall, so every combination is optimized at least once;
3. one batched L-BFGS-B run (BoTorch's ``gen_candidates_scipy``, each start its own problem)
   moves the continuous columns, the categorical columns of each start pinned to its
   combination by batch-shaped fixed features;
4. the best local optimum is proposed, unless it lies within ``min_distance`` of an
   evaluated, pending or already chosen point (max-norm in the unit cube, after ``snap``
   puts it on the search space), in which case the next best one is; ``q > 1`` is built
   greedily, each chosen point becoming pending for the next, as ``optimize_acqf_mixed``
   does.

When the combinations and fixed features fix every column there is nothing to optimize: the
combinations are scored in one batched call and the best kept (``OptimizedPolicy.propose``
sends such problems to :mod:`dsbo.acquisition.discrete_search`, which also enumerates spaces
too large for ``max_enumerate`` and keeps to untried configurations).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from botorch.generation.gen import gen_candidates_scipy
from torch import Tensor
from torch.quasirandom import SobolEngine

from dsbo.acquisition.discrete_search import GreedyBatch, score_table
from dsbo.acquisition.sparsity import is_duplicate

#: Raw points per combination at least, whatever ``raw_samples`` says.
RAW_PER_COMBINATION = 32
#: Starts per call of the batched L-BFGS-B solver.
CHUNK = 64


def maximize_over_combinations(
    acqf: Any,
    bounds: Tensor,
    q: int,
    combinations: list[dict[int, float]],
    *,
    num_restarts: int,
    raw_samples: int,
    maxiter: int,
    seed: int,
    fixed_features: dict[int, float] | None = None,
    starts: Tensor | None = None,
    avoid: Tensor | None = None,
    min_distance: float = 0.0,
    snap: Callable[[Tensor], Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """Maximize ``acqf`` over ``bounds`` with the categorical columns taking one of the
    ``combinations`` (``{column: value}`` each); returns ``(X, values)``, ``q x d`` and ``q``.

    Args:
        fixed_features: ``{column: value}`` held fixed in every combination.
        starts: Extra raw points (``n x d``, e.g. the incumbents); their categorical columns
            are kept as they are.
        avoid: Points a proposal should not repeat (``n x d``: evaluated and pending ones).
        min_distance: A local optimum within this max-norm unit-cube distance of ``avoid`` or
            of an earlier pick is passed over for the next best (``0``: only exact repeats
            are left to the caller).
        snap: Maps candidates to the search space (rounding) before the distance check.
    """
    fixed_features = {int(j): float(v) for j, v in (fixed_features or {}).items()}
    columns = sorted({j for combo in combinations for j in combo} | set(fixed_features))
    table = torch.tensor(
        [[{**combo, **fixed_features}.get(j, 0.0) for j in columns] for combo in combinations],
        dtype=bounds.dtype,
        device=bounds.device,
    )
    if len(columns) == bounds.shape[-1]:  # every column fixed: L-BFGS-B has nothing to move
        return _score_points(acqf, bounds, q, table, avoid, min_distance, snap)
    with GreedyBatch(acqf, q) as batch:
        for step in range(q):
            n_raw = max(raw_samples, RAW_PER_COMBINATION * len(table))
            raw, groups = _raw_points(bounds, table, columns, n_raw, seed + step)
            if starts is not None and starts.numel():
                raw = torch.cat([raw, starts.to(raw)])
                groups = torch.cat([groups, torch.full((starts.shape[0],), -1, device=raw.device)])
            with torch.no_grad():
                scores = torch.cat(
                    [acqf(chunk.unsqueeze(-2)).reshape(-1) for chunk in raw.split(512)]
                )
            picked = _pick_starts(scores, groups, len(table), num_restarts)
            initial = raw[picked].unsqueeze(-2)
            candidates, acq_values = _optimize_batched(acqf, initial, bounds, columns, maxiter)
            order = torch.argsort(acq_values.reshape(-1), descending=True)
            x = candidates[order[0], 0]
            if min_distance > 0:
                seen = [t for t in (avoid, *batch.chosen) if t is not None and t.numel()]
                pool = (
                    torch.cat([t.reshape(-1, bounds.shape[-1]).to(raw) for t in seen])
                    if seen
                    else None
                )
                snapped = snap(candidates[order, 0]) if snap is not None else candidates[order, 0]
                far = ~is_duplicate(snapped, pool, bounds, min_distance)
                if far.any():
                    x = candidates[order[int(torch.nonzero(far)[0])], 0]
            with torch.no_grad():
                value = acqf(x.reshape(1, 1, -1)).reshape(-1)
            batch.add(x.unsqueeze(0), value)
    return batch.result()


def _score_points(
    acqf: Any,
    bounds: Tensor,
    q: int,
    table: Tensor,
    avoid: Tensor | None,
    min_distance: float,
    snap: Callable[[Tensor], Tensor] | None,
) -> tuple[Tensor, Tensor]:
    """The ``q`` best of the complete points ``table`` (every column fixed), those within
    ``min_distance`` of ``avoid`` passed over while others are left
    (:func:`~dsbo.acquisition.discrete_search.score_table`)."""
    if min_distance > 0 and avoid is not None and avoid.numel():
        snapped = snap(table) if snap is not None else table
        far = ~is_duplicate(
            snapped, avoid.reshape(-1, bounds.shape[-1]).to(table), bounds, min_distance
        )
        if int(far.sum()) >= q:
            table = table[far]
    return score_table(acqf, bounds, q, table)


def _raw_points(
    bounds: Tensor, table: Tensor, columns: list[int], n: int, seed: int
) -> tuple[Tensor, Tensor]:
    """``n`` scrambled Sobol points over ``bounds`` and their combination labels: a seeded
    shuffle deals the combinations out evenly (``n / len(table)`` points each, give or take
    one), and each point's ``columns`` take its combination's values."""
    u = SobolEngine(bounds.shape[-1], scramble=True, seed=seed).draw(n).to(bounds)
    X = bounds[0] + (bounds[1] - bounds[0]) * u
    generator = torch.Generator().manual_seed(seed)
    groups = (torch.randperm(n, generator=generator) % len(table)).to(bounds.device)
    X[:, columns] = table[groups]
    return X, groups


def _pick_starts(scores: Tensor, groups: Tensor, num_groups: int, num_restarts: int) -> Tensor:
    """Indices of the starts: the best raw point of every combination and the
    ``num_restarts`` best overall (incumbent rows included), without repeats."""
    scores = torch.nan_to_num(scores, nan=-torch.inf)
    picked = set(torch.topk(scores, min(num_restarts, scores.numel())).indices.tolist())
    for g in range(num_groups):
        members = torch.nonzero(groups == g).reshape(-1)
        if members.numel():
            picked.add(int(members[torch.argmax(scores[members])]))
    return torch.tensor(sorted(picked), dtype=torch.long)


def _optimize_batched(
    acqf: Any, initial: Tensor, bounds: Tensor, columns: list[int], maxiter: int
) -> tuple[Tensor, Tensor]:
    """L-BFGS-B from every start (``b x 1 x d``), each its own problem (BoTorch's batched
    L-BFGS-B), the ``columns`` of each start pinned to its own values; ``CHUNK`` starts per
    call bound the memory."""
    outs, vals = [], []
    for chunk in initial.split(CHUNK):
        fixed = {j: chunk[:, 0, j].clone() for j in columns}
        X, v = gen_candidates_scipy(
            initial_conditions=chunk,
            acquisition_function=acqf,
            lower_bounds=bounds[0],
            upper_bounds=bounds[1],
            options={"maxiter": maxiter},
            fixed_features=fixed,
        )
        outs.append(X.detach())
        vals.append(v.detach().reshape(-1))
    return torch.cat(outs), torch.cat(vals)
