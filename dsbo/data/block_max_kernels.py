r"""The numba kernels of :mod:`dsbo.data.block_max` (the design, the bound and the exactness
argument are in that module's docstring).

Per query (one thread):

1. :func:`_bounds`: every block's bound :math:`U_b` in one pass per query term over the term's
   row of block maxima (contiguous, vectorized);
2. **probe**: the ``probe`` blocks of largest bound are scored exactly (:func:`_score_block`) and
   their rows scoring ``> tau`` offered to the heap; when the heap is full its worst score
   :math:`\theta_0` is a lower bound of the final threshold;
3. **filter**: the other blocks are kept ("alive") when :math:`U_b (1 + (m+2)2^{-21}) f > \tau`
   and, with the heap full, :math:`\ge \theta_0` (a row that belongs to the answer scores
   :math:`\ge \theta \ge \theta_0`, so its block is kept; ``>=`` keeps ties, which the heap
   breaks by row id);
4. **scan**: term at a time over the alive blocks only (each term's per-block starts are read in
   increasing block order), scatter-adding into the ``n``-entry buffer exactly as the exhaustive
   scan does (query terms in stored order, postings in row order: bitwise its sums); then the
   alive rows scoring ``> tau`` are offered and the buffer reset.

A query whose bound pass would cost more than its postings (``m nb > cost * sum_j n_j``), whose
filter keeps more than ``alive_max`` of the blocks (then the per-posting mask test costs more than
the skipped postings save) or whose heap is not the answer (module docstring) is scored
exhaustively by :func:`_exhaustive`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dsbo.data.posting_lists import heap_sort, jit, offer, worse


@jit
def _bounds(
    bmax: Any, bmin: Any, signed: bool, dims: Any, weights: Any, ub: Any
) -> None:  # pragma: no cover - compiled
    """``ub[b]``: the sum over the query terms of the positive part of ``w_j`` times the block's
    extreme value of list ``j`` (``M+`` for ``w_j > 0``, ``M-`` for ``w_j < 0``)."""
    ub[:] = 0.0
    for e in range(dims.shape[0]):
        w = weights[e]
        if w > 0:
            row = bmax[dims[e]]
        elif w < 0 and signed:
            row = bmin[dims[e]]
        else:
            continue
        for b in range(ub.shape[0]):
            ub[b] += w * row[b]


@jit
def _score_block(
    starts: Any,
    positions: Any,
    data: Any,
    dims: Any,
    weights: Any,
    b: int,
    base: int,
    blockbuf: Any,
) -> int:  # pragma: no cover - compiled
    """Block ``b``'s scores (rows ``base ..``) into ``blockbuf`` (query terms in stored order);
    returns the postings read."""
    visited = 0
    for e in range(dims.shape[0]):
        j, w = dims[e], weights[e]
        low, high = starts[j, b], starts[j, b + 1]
        visited += np.int64(high) - np.int64(low)
        for p in range(low, high):
            blockbuf[np.int64(positions[p]) - base] += w * data[p]
    return visited


@jit
def _offer_rows(
    scores: Any,
    at: int,
    rows: int,
    orig: Any,
    base: int,
    tau: float,
    width: int,
    heap_scores: Any,
    heap_ids: Any,
    size: int,
) -> int:  # pragma: no cover - compiled
    """Offer ``rows`` scores ``scores[at:]`` (rows ``base ..`` of the reordered index) scoring
    ``> tau`` to the heap (ties by original id), resetting them; returns the heap's size."""
    for r in range(rows):
        score = scores[at + r]
        scores[at + r] = 0.0
        if score > tau:
            row = orig[base + r]
            if size < width or worse(heap_scores[0], heap_ids[0], score, row):
                size = offer(heap_scores, heap_ids, size, width, score, row)
    return size


@jit
def _pruned(
    starts: Any,
    positions: Any,
    data: Any,
    bmax: Any,
    bmin: Any,
    signed: bool,
    orig: Any,
    block: int,
    shift: int,
    dims: Any,
    weights: Any,
    tau: float,
    factor: float,
    width: int,
    probe: int,
    alive_max: float,
    heap_scores: Any,
    heap_ids: Any,
    ub: Any,
    alive: Any,
    mask: Any,
    blockbuf: Any,
    buffer: Any,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """The top ``width`` rows scoring ``> tau`` into the (unsorted) heap: ``(size, postings read)``."""
    n = buffer.shape[0]
    nb = ub.shape[0]
    _bounds(bmax, bmin, signed, dims, weights, ub)
    scale = (1.0 + (dims.shape[0] + 2) * 2.0**-21) * factor
    # probe: the blocks of largest bound, kept sorted (descending) by insertion
    top_blocks = np.empty(probe, dtype=np.int64)
    top_bounds = np.empty(probe, dtype=np.float64)
    count = 0
    for b in range(nb):
        v = ub[b] * scale
        if v <= tau or (count == probe and v <= top_bounds[probe - 1]):
            continue
        at = count if count < probe else probe - 1
        while at > 0 and top_bounds[at - 1] < v:
            if at < probe:
                top_bounds[at], top_blocks[at] = top_bounds[at - 1], top_blocks[at - 1]
            at -= 1
        top_bounds[at], top_blocks[at] = v, b
        count = min(count + 1, probe)
    size = 0
    visited = 0
    for t in range(count):
        b = top_blocks[t]
        base = b * block
        visited += _score_block(starts, positions, data, dims, weights, b, base, blockbuf)
        rows = min(block, n - base)
        size = _offer_rows(blockbuf, 0, rows, orig, base, tau, width, heap_scores, heap_ids, size)
        ub[b] = -1.0  # scored: not alive
    # filter with the probe's threshold, then scan the lists, skipping the rows of dead blocks
    na = 0
    for b in range(nb):
        v = ub[b] * scale
        if v <= tau or (size == width and v < heap_scores[0]):
            continue
        alive[na] = b
        mask[b] = True
        na += 1
    if na > alive_max * nb:  # too few blocks skipped to pay for the mask: scan exhaustively
        for a in range(na):
            mask[alive[a]] = False
        return -1, visited
    if na > 0:
        for e in range(dims.shape[0]):
            j, w = dims[e], weights[e]
            for p in range(starts[j, 0], starts[j, nb]):
                r = positions[p]
                if mask[r >> shift]:
                    buffer[r] += w * data[p]
                    visited += 1
    for a in range(na):
        mask[alive[a]] = False
        base = alive[a] * block
        rows = min(block, n - base)
        size = _offer_rows(buffer, base, rows, orig, base, tau, width, heap_scores, heap_ids, size)
    return size, visited


@jit
def _exhaustive(
    starts: Any,
    positions: Any,
    data: Any,
    orig: Any,
    block: int,
    dims: Any,
    weights: Any,
    threshold: float,
    use_threshold: bool,
    k: int,
    width: int,
    heap_scores: Any,
    heap_ids: Any,
    buffer: Any,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """Every row scored (the exhaustive scan's selection over the reordered rows, ties by
    original id): ``kept = clip(rows above the threshold, k, width)`` best rows into the heap;
    ``(kept, postings read)``."""
    n = buffer.shape[0]
    nb = starts.shape[1] - 1
    visited = 0
    for e in range(dims.shape[0]):
        j, w = dims[e], weights[e]
        visited += np.int64(starts[j, nb]) - np.int64(starts[j, 0])
        for p in range(starts[j, 0], starts[j, nb]):
            buffer[positions[p]] += w * data[p]
    kept = width
    if use_threshold:
        count = 0
        for r in range(n):
            if buffer[r] > threshold:
                count += 1
        kept = min(max(count, k), width)
    size = 0
    for r in range(n):
        score = buffer[r]
        buffer[r] = 0.0
        if size < kept or score >= heap_scores[0]:
            row = orig[r]
            if size < kept or worse(heap_scores[0], heap_ids[0], score, row):
                size = offer(heap_scores, heap_ids, size, kept, score, row)
    return size, visited


@jit
def worth_pruning(starts: Any, dims: Any, cost: float) -> bool:  # pragma: no cover - compiled
    """Whether the bound pass (``m nb`` multiply-adds) costs less than ``cost`` times the
    postings of the query's lists."""
    nb = starts.shape[1] - 1
    postings = 0
    for e in range(dims.shape[0]):
        postings += np.int64(starts[dims[e], nb]) - np.int64(starts[dims[e], 0])
    return dims.shape[0] * nb < cost * postings


@jit
def search_queries(
    starts: Any,
    positions: Any,
    data: Any,
    bmax: Any,
    bmin: Any,
    signed: bool,
    orig: Any,
    block: int,
    shift: int,
    q_indptr: Any,
    q_indices: Any,
    q_data: Any,
    first: int,
    last: int,
    threshold: float,
    use_threshold: bool,
    k: int,
    width: int,
    factor: float,
    probe: int,
    alive_max: float,
    cost: float,
    out_scores: Any,
    out_ids: Any,
    out_kept: Any,
    out_visited: Any,
    ub: Any,
    alive: Any,
    mask: Any,
    blockbuf: Any,
    buffer: Any,
) -> None:  # pragma: no cover - compiled
    """Queries ``first .. last - 1`` of a CSR block: the pruned traversal, or the exhaustive
    scoring where it cannot pay or its heap is not the answer; sorted outputs."""
    tau = max(threshold, 0.0) if use_threshold else 0.0
    need = k if use_threshold and threshold >= 0 else width
    for i in range(first, last):
        dims = q_indices[q_indptr[i] : q_indptr[i + 1]]
        weights = q_data[q_indptr[i] : q_indptr[i + 1]]
        scores, ids = out_scores[i - first], out_ids[i - first]
        size, visited = 0, 0
        pruned = worth_pruning(starts, dims, cost)
        if pruned:
            size, visited = _pruned(
                starts,
                positions,
                data,
                bmax,
                bmin,
                signed,
                orig,
                block,
                shift,
                dims,
                weights,
                tau,
                factor,
                width,
                probe,
                alive_max,
                scores,
                ids,
                ub,
                alive,
                mask,
                blockbuf,
                buffer,
            )
        if not pruned or size < need:  # (size -1: too few blocks skipped)
            size, more = _exhaustive(
                starts,
                positions,
                data,
                orig,
                block,
                dims,
                weights,
                threshold,
                use_threshold,
                k,
                width,
                scores,
                ids,
                buffer,
            )
            visited += more
        heap_sort(scores, ids, size)
        out_kept[i - first] = size
        out_visited[i - first] = visited


@jit
def dense_pruned_top(
    starts: Any,
    positions: Any,
    data: Any,
    bmax: Any,
    bmin: Any,
    signed: bool,
    orig: Any,
    block: int,
    shift: int,
    dims: Any,
    weights: Any,
    factor: float,
    width: int,
    probe: int,
    alive_max: float,
    out_scores: Any,
    out_ids: Any,
    ub: Any,
    alive: Any,
    mask: Any,
    blockbuf: Any,
    buffer: Any,
) -> int:  # pragma: no cover - compiled
    """One dense (float64) query: the ``width`` best rows scoring ``> 0``, sorted; returns how
    many were found (``width``: they are the best of all rows; -1: too few blocks skipped, the
    caller scans exhaustively)."""
    size, _ = _pruned(
        starts,
        positions,
        data,
        bmax,
        bmin,
        signed,
        orig,
        block,
        shift,
        dims,
        weights,
        0.0,
        factor,
        width,
        probe,
        alive_max,
        out_scores,
        out_ids,
        ub,
        alive,
        mask,
        blockbuf,
        buffer,
    )
    if size > 0:
        heap_sort(out_scores, out_ids, size)
    return size


__all__ = ["dense_pruned_top", "search_queries", "worth_pruning"]
