r"""The numba kernels of :mod:`dsbo.data.clustered_postings` (the index, the bound and the
exactness argument are in that module's docstring).

- :func:`summaries`: each block's summary, the coordinate-wise
  extremes of its rows (:math:`M^+_b = \max(0, \max_r D_r)`, :math:`M^-_b = \min(0, \min_r D_r)`),
  pruned to the largest entries holding ``mass`` of the summary's total :math:`\sum_i
  (M^+_{bi} - M^-_{bi})`; a first pass sizes, a second writes (the arrays are allocated once
  between them).
- :func:`search_queries`: per query, the selected terms' blocks in turn; a block is skipped when
  the heap is full and ``factor`` times its bound is below the heap's worst score, otherwise each
  of its rows not yet scored is scored exactly through the forward index and offered to the
  heap; then, if the heap is not full or its worst score is ``<= 0``, the rows never scored are
  offered in id order (their exact scores) until none can enter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dsbo.data.posting_lists import heap_sort, jit, offer, worse

#: Relative margin per query term on a block bound: a float32 sum of ``m`` products is within
#: about ``m 2^-24`` of the real one, so ``U (1 + (m + 2) 2^-21)`` is never below a computed score
#: (the same margin as :mod:`dsbo.data.block_max`).
ROUNDING = 2.0**-21


@jit
def _block_summary(
    rows: Any,
    first: int,
    last: int,
    fwd_indptr: Any,
    fwd_dims: Any,
    fwd_vals: Any,
    mass: float,
    hi: Any,
    lo: Any,
    touched: Any,
) -> tuple[Any, int]:  # pragma: no cover - compiled
    """The summary of the block of ``rows[first:last]`` in the dense scratch ``hi``/``lo`` (zero
    on entry; the caller resets them through the returned dims): the kept dims, in increasing
    order, and how many dims the block touched."""
    count = 0
    for p in range(first, last):
        r = rows[p]
        for e in range(fwd_indptr[r], fwd_indptr[r + 1]):
            i, v = fwd_dims[e], fwd_vals[e]
            if hi[i] == 0.0 and lo[i] == 0.0:
                touched[count] = i
                count += 1
            if v > hi[i]:
                hi[i] = v
            if v < lo[i]:
                lo[i] = v
    dims = touched[:count].copy()
    weight = np.empty(count, dtype=np.float64)
    total = 0.0
    for t in range(count):
        weight[t] = hi[dims[t]] - lo[dims[t]]
        total += weight[t]
    if mass >= 1.0:
        kept = dims
    else:
        order = np.argsort(-weight, kind="mergesort")
        acc, n_kept = 0.0, 0
        while n_kept < count and (n_kept == 0 or acc < mass * total):
            acc += weight[order[n_kept]]
            n_kept += 1
        kept = np.sort(dims[order[:n_kept]])
    return kept, count


@jit
def summaries(
    block_ptr: Any,
    rows: Any,
    fwd_indptr: Any,
    fwd_dims: Any,
    fwd_vals: Any,
    mass: float,
    hi: Any,
    lo: Any,
    touched: Any,
    summary_ptr: Any,
    summary_dims: Any,
    summary_hi: Any,
    summary_lo: Any,
    signed: bool,
    write: bool,
) -> None:  # pragma: no cover - compiled
    """Every block's summary. Sizing pass (``write`` false): ``summary_ptr[b + 1]`` is the
    entries block ``b`` keeps (the caller turns the sizes into offsets). Writing pass: block
    ``b``'s dims and extremes at ``summary_ptr[b]``. ``hi``, ``lo`` (``d`` zeros) and
    ``touched`` are scratch, left as found."""
    for b in range(block_ptr.shape[0] - 1):
        kept, count = _block_summary(
            rows,
            block_ptr[b],
            block_ptr[b + 1],
            fwd_indptr,
            fwd_dims,
            fwd_vals,
            mass,
            hi,
            lo,
            touched,
        )
        if not write:
            summary_ptr[b + 1] = kept.shape[0]
        else:
            at = summary_ptr[b]
            for t in range(kept.shape[0]):
                i = kept[t]
                summary_dims[at + t] = i
                summary_hi[at + t] = hi[i]
                if signed:
                    summary_lo[at + t] = lo[i]
        for t in range(count):
            hi[touched[t]] = 0.0
            lo[touched[t]] = 0.0


@jit
def _row_score(
    fwd_indptr: Any, fwd_dims: Any, fwd_vals: Any, qd: Any, r: int
) -> Any:  # pragma: no cover - compiled
    """Row ``r``'s float32 score against the dense query ``qd``, its entries in dim order: the
    exhaustive scan's sum (the query's terms in stored order), since the other products are 0."""
    score = np.float32(0.0)
    for e in range(fwd_indptr[r], fwd_indptr[r + 1]):
        score += qd[fwd_dims[e]] * fwd_vals[e]
    return score


@jit
def _block_bound(
    summary_ptr: Any,
    summary_dims: Any,
    summary_hi: Any,
    summary_lo: Any,
    signed: bool,
    qd: Any,
    b: int,
) -> float:  # pragma: no cover - compiled
    """Block ``b``'s bound: the sum over its summary of the positive part of the query's weight
    times the extreme value (``M+`` for a positive weight, ``M-`` for a negative one)."""
    bound = 0.0
    for s in range(summary_ptr[b], summary_ptr[b + 1]):
        w = qd[summary_dims[s]]
        if w > 0:
            bound += w * summary_hi[s]
        elif w < 0 and signed:
            bound += w * summary_lo[s]
    return bound


@jit
def search_queries(
    list_blocks: Any,
    block_ptr: Any,
    rows: Any,
    summary_ptr: Any,
    summary_dims: Any,
    summary_hi: Any,
    summary_lo: Any,
    signed: bool,
    fwd_indptr: Any,
    fwd_dims: Any,
    fwd_vals: Any,
    orig: Any,
    position: Any,
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
    query_terms: int,
    out_scores: Any,
    out_ids: Any,
    out_kept: Any,
    out_read: Any,
    qd: Any,
    stamp: Any,
    scored: Any,
) -> None:  # pragma: no cover - compiled
    """Queries ``first .. last - 1`` into row ``i - first`` of the outputs: the ``kept`` best
    rows found (sorted, ties by row id; ``kept = clip(count above threshold, k, width)`` or
    ``width``) and the index entries read (summaries and forward rows). Blocks and the forward
    index address rows by their position: ``orig[position]`` is the row id, ``position[id]``
    its inverse. ``qd`` (``d`` zeros), ``stamp`` (``n`` zeros) and ``scored`` (``n``) are
    scratch, left as found. Every bound is a sum of non-negative terms, so a block is skipped
    only while the heap's worst score is positive, and the rows completed at the end (worst
    ``<= 0``) are exactly those that no skipped block holds."""
    n = stamp.shape[0]
    for i in range(first, last):
        low, high = q_indptr[i], q_indptr[i + 1]
        m = high - low
        for e in range(low, high):
            qd[q_indices[e]] = q_data[e]
        order = np.argsort(-np.abs(q_data[low:high]), kind="mergesort")
        use = m if query_terms <= 0 else min(m, query_terms)
        margin = 1.0 + (m + 2) * ROUNDING
        heap_scores, heap_ids = out_scores[i - first], out_ids[i - first]
        size, n_scored, read = 0, 0, 0
        for t in range(use):
            j = q_indices[low + order[t]]
            for b in range(list_blocks[j], list_blocks[j + 1]):
                if size == width:
                    read += summary_ptr[b + 1] - summary_ptr[b]
                    bound = _block_bound(
                        summary_ptr, summary_dims, summary_hi, summary_lo, signed, qd, b
                    )
                    if factor * bound * margin < heap_scores[0]:
                        continue
                for p in range(block_ptr[b], block_ptr[b + 1]):
                    at = rows[p]
                    if stamp[at]:
                        continue
                    stamp[at] = 1
                    scored[n_scored] = at
                    n_scored += 1
                    read += fwd_indptr[at + 1] - fwd_indptr[at]
                    score = _row_score(fwd_indptr, fwd_dims, fwd_vals, qd, at)
                    r = orig[at]
                    if size < width or worse(heap_scores[0], heap_ids[0], score, r):
                        size = offer(heap_scores, heap_ids, size, width, score, r)
        if size < width or heap_scores[0] <= 0.0:
            # rows never scored: exactly 0 unless a skipped block holds them (then below the
            # heap's worst, which is <= 0 here), so (0, r) bounds them, in id order
            for r in range(n):
                if size == width and not worse(heap_scores[0], heap_ids[0], 0.0, r):
                    break
                at = position[r]
                if stamp[at]:
                    continue
                read += fwd_indptr[at + 1] - fwd_indptr[at]
                score = _row_score(fwd_indptr, fwd_dims, fwd_vals, qd, at)
                if size < width or worse(heap_scores[0], heap_ids[0], score, r):
                    size = offer(heap_scores, heap_ids, size, width, score, r)
        heap_sort(heap_scores, heap_ids, size)
        kept = size
        if use_threshold:
            count = 0
            for t in range(size):
                if heap_scores[t] > threshold:
                    count += 1
            kept = min(max(count, k), size)
        for t in range(kept, size):  # the places after the answer stay unused, as the scan's
            heap_scores[t] = 0.0
            heap_ids[t] = 0
        out_kept[i - first] = kept
        out_read[i - first] = read
        for t in range(n_scored):
            stamp[scored[t]] = 0
        for e in range(low, high):
            qd[q_indices[e]] = 0.0
