r"""Exact dynamic pruning for :class:`~dsbo.data.retrieval.SparseIndex`: a block-max traversal
of the posting lists that skips the row blocks which cannot enter a query's shortlist.

**Why blocks.** The exhaustive scan (:mod:`dsbo.data.posting_lists`) visits every posting of
every query term, :math:`\sum_{j: q_j \ne 0} n_j` random read-modify-writes. Dynamic pruning
visits only the postings of rows that may still beat the current top list. MaxScore (Turtle &
Flood 1995) and WAND (Broder et al. 2003) bound a row's score by the sum of per-list maxima and
skip, document at a time, the rows whose bound is below the heap's threshold; block-max WAND
(Ding & Suel 2011; PISA's implementation) tightens the bounds with the maxima of fixed-size
posting blocks. Learned sparse codes have long queries (tens of terms here) whose per-list
maxima all overlap, which makes WAND's pivot selection costly and its list bounds loose; BMP
(Block-Max Pruning, Mallia, Suel & Tonellotto, SIGIR 2024) and SEISMIC (Bruch et al., SIGIR
2024) instead cut the *rows* into blocks, bound every block at once and visit the blocks best
bound first. This module is BMP's design on the compiled posting lists.

**Index.** The database rows are optionally reordered (``reorder``: rows sorted by their largest
and second largest dimension, a cheap clustering so that a block's rows share dimensions and its
maxima are tight; BMP reorders by graph bisection) and cut into blocks of ``block`` consecutive
rows. For list :math:`j` and block :math:`b` the index stores where the list enters the block and
the block maxima :math:`M^+_{jb} = \max(0, \max_{r \in b} D_{rj})` and, when a value is negative,
:math:`M^-_{jb} = \min(0, \min_{r \in b} D_{rj})`.

**Bound.** Per query, every block's upper bound is computed at once (one contiguous pass over the
``nb`` block maxima of each query term, vectorized):

.. math::  U_b = \sum_{j:\, q_j > 0} q_j M^+_{jb} + \sum_{j:\, q_j < 0} q_j M^-_{jb}
           \;\ge\; \sum_j (q_j D_{rj})_+ \;\ge\; s_r \quad (r \in b),

the positive parts of the query-posting products, so signed codes and signed queries are bounded
correctly. The scores are float32 (float64 for the pool's dense queries) sums of rounded
products; a sum of :math:`m` terms is within :math:`\gamma_m \sum_j |q_j D_{rj}|` of the real sum
(:math:`\gamma_m \approx m 2^{-24}`), so the bound used is :math:`U_b (1 + (m + 2) 2^{-21})`, which
is never below a computed score.

**Traversal** (per query, one thread). The blocks whose bound exceeds the entry cut :math:`\tau`
are bucket-sorted by bound (64 buckets, descending: an :math:`O(nb)` near-sort) and visited in that
order; a visited block is scored exactly into a ``block``-entry buffer (the query terms in stored
order, each list's postings in the block in row order: the summation order of the exhaustive scan,
so the scores are bitwise its scores) and its rows scoring ``> tau`` are offered to a bounded heap
of ``width`` rows ordered by (score descending, original row id). A block is skipped when its
bound is ``<= tau`` or, with the heap full, below the heap's worst score (``<``: a row tying the
worst score with a lower id still enters). The result is the top ``width`` rows scoring ``> tau``,
in any visiting order.

**Exact semantics of** :meth:`SparseIndex.search`. With ``tau = max(threshold, 0)`` (0 without
a threshold), the heap is the exhaustive scan's answer whenever it holds ``width`` rows, or, for a
threshold ``>= 0``, at least ``k`` rows (then exactly the rows above the threshold, capped at
``width``); any other query (fewer rows above ``tau``: implicit zeros and negative scores belong
to its answer) is scored exhaustively over the same blocks. The ids and scores are those of the
exhaustive scan, ties and signed values included (tested against brute force).

**Approximate mode** (``bound_factor`` :math:`f < 1`, SEISMIC's ``heap_factor``): a block is
visited only if :math:`f \cdot U_b` beats the cut, i.e. blocks whose bound exceeds the heap's
threshold by less than a factor :math:`1/f` are skipped. Every returned score is still exact
and the list is sorted, but rows of skipped blocks are missing (so each returned score is at
most the exact answer's at the same place); ``f = 1`` is the exact traversal.

The kernels are numba functions (:func:`~dsbo.data.posting_lists.available`), compiled on first
use and cached on disk.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from dsbo.data.posting_lists import _heap_sort, _jit, _offer, _worse
from dsbo.errors import ConfigError

#: ``SparseIndex(traversal=...)``: the exhaustive scan, the block-max traversal, or ``"auto"``
#: (block-max on the compiled kernel, the scipy product otherwise).
TRAVERSALS = ("auto", "exhaustive", "block-max")
#: Buckets of the near-sort of the block bounds.
BUCKETS = 64


def check_traversal(traversal: Any, kernel: str, bound_factor: Any, block: Any) -> str:
    """The traversal :class:`SparseIndex` takes (``"exhaustive"`` or ``"block-max"``) for the
    requested one and kernel; bad values raise :class:`~dsbo.errors.ConfigError`."""
    if traversal not in TRAVERSALS:
        raise ConfigError(f"traversal={traversal!r}: choose one of {', '.join(TRAVERSALS)}")
    if traversal == "block-max" and kernel != "compiled":
        raise ConfigError('traversal="block-max" needs kernel="compiled" (numba)')
    chosen = "block-max" if traversal == "auto" and kernel == "compiled" else traversal
    chosen = "exhaustive" if chosen == "auto" else chosen
    if (
        isinstance(bound_factor, bool)
        or not isinstance(bound_factor, int | float | np.floating | np.integer)
        or not 0.0 < float(bound_factor) <= 1.0
    ):
        raise ConfigError(f"bound_factor must be in (0, 1] (1: exact), got {bound_factor!r}")
    if float(bound_factor) < 1.0 and chosen != "block-max":
        raise ConfigError(
            f"bound_factor={bound_factor} (approximate) needs traversal='block-max', not {chosen!r}"
        )
    if (
        isinstance(block, bool)
        or not isinstance(block, int | np.integer)
        or not 1 <= block <= 65536
    ):
        raise ConfigError(f"block must be an integer in [1, 65536], got {block!r}")
    return chosen


@_jit
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


@_jit
def _score_block(
    starts: Any, local: Any, data: Any, dims: Any, weights: Any, b: int, blockbuf: Any
) -> int:  # pragma: no cover - compiled
    """Block ``b``'s scores into ``blockbuf`` (query terms in stored order); returns the postings read."""
    visited = 0
    for e in range(dims.shape[0]):
        j, w = dims[e], weights[e]
        low, high = starts[j, b], starts[j, b + 1]
        visited += np.int64(high) - np.int64(low)
        for p in range(low, high):
            blockbuf[local[p]] += w * data[p]
    return visited


@_jit
def _pruned(
    starts: Any,
    local: Any,
    data: Any,
    bmax: Any,
    bmin: Any,
    signed: bool,
    orig: Any,
    block: int,
    n: int,
    dims: Any,
    weights: Any,
    tau: float,
    factor: float,
    width: int,
    heap_scores: Any,
    heap_ids: Any,
    ub: Any,
    order: Any,
    bucket_of: Any,
    counts: Any,
    blockbuf: Any,
) -> tuple[int, int]:  # pragma: no cover - compiled
    """The top ``width`` rows scoring ``> tau`` (unsorted heap; module docstring): ``(size, postings read)``."""
    nb = ub.shape[0]
    _bounds(bmax, bmin, signed, dims, weights, ub)
    scale = (1.0 + (dims.shape[0] + 2) * 2.0**-21) * factor
    top = 0.0
    for b in range(nb):
        top = max(top, ub[b])
    if top * scale <= tau:
        return 0, 0
    low = max(tau, 0.0) / scale
    span = top - low
    counts[:] = 0
    for b in range(nb):
        bucket_of[b] = -1
        if ub[b] * scale > tau:
            at = int((ub[b] - low) * BUCKETS / span) if span > 0 else 0
            at = min(BUCKETS - 1, max(0, at))
            bucket_of[b] = at
            counts[at] += 1
    total = 0
    for at in range(BUCKETS - 1, -1, -1):  # best bucket first
        c = counts[at]
        counts[at] = total
        total += c
    for b in range(nb):
        at = bucket_of[b]
        if at >= 0:
            order[counts[at]] = b
            counts[at] += 1
    size = 0
    visited = 0
    for i in range(total):
        b = order[i]
        bound = ub[b] * scale
        if size == width and bound < heap_scores[0]:
            continue
        visited += _score_block(starts, local, data, dims, weights, b, blockbuf)
        base = b * block
        for r in range(min(block, n - base)):
            score = blockbuf[r]
            blockbuf[r] = 0.0
            if score > tau:
                row = orig[base + r]
                if size < width or _worse(heap_scores[0], heap_ids[0], score, row):
                    size = _offer(heap_scores, heap_ids, size, width, score, row)
    return size, visited


@_jit
def _exhaustive(
    starts: Any,
    local: Any,
    data: Any,
    orig: Any,
    block: int,
    n: int,
    dims: Any,
    weights: Any,
    threshold: float,
    use_threshold: bool,
    k: int,
    width: int,
    heap_scores: Any,
    heap_ids: Any,
    buffer: Any,
) -> int:  # pragma: no cover - compiled
    """Every row scored (the exhaustive scan's selection over the reordered rows, ties by
    original id): ``kept = clip(rows above the threshold, k, width)`` best rows into the heap."""
    nb = starts.shape[1] - 1
    for e in range(dims.shape[0]):
        j, w = dims[e], weights[e]
        for b in range(nb):
            base = b * block
            for p in range(starts[j, b], starts[j, b + 1]):
                buffer[base + local[p]] += w * data[p]
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
        row = orig[r]
        if size < kept or _worse(heap_scores[0], heap_ids[0], score, row):
            size = _offer(heap_scores, heap_ids, size, kept, score, row)
    return size


@_jit
def _search_queries(
    starts: Any,
    local: Any,
    data: Any,
    bmax: Any,
    bmin: Any,
    signed: bool,
    orig: Any,
    block: int,
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
    out_scores: Any,
    out_ids: Any,
    out_kept: Any,
    out_visited: Any,
    ub: Any,
    order: Any,
    bucket_of: Any,
    counts: Any,
    blockbuf: Any,
    buffer: Any,
) -> None:  # pragma: no cover - compiled
    """Queries ``first .. last - 1`` of a CSR block: the pruned traversal, or the exhaustive
    scoring where the pruned heap is not the answer (module docstring); sorted outputs."""
    n = buffer.shape[0]
    nb = ub.shape[0]
    tau = max(threshold, 0.0) if use_threshold else 0.0
    need = k if use_threshold and threshold >= 0 else width
    for i in range(first, last):
        dims = q_indices[q_indptr[i] : q_indptr[i + 1]]
        weights = q_data[q_indptr[i] : q_indptr[i + 1]]
        scores, ids = out_scores[i - first], out_ids[i - first]
        size, visited = _pruned(
            starts,
            local,
            data,
            bmax,
            bmin,
            signed,
            orig,
            block,
            n,
            dims,
            weights,
            tau,
            factor,
            width,
            scores,
            ids,
            ub,
            order,
            bucket_of,
            counts,
            blockbuf,
        )
        if size < need:
            size = _exhaustive(
                starts,
                local,
                data,
                orig,
                block,
                n,
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
            for e in range(dims.shape[0]):
                visited += np.int64(starts[dims[e], nb]) - np.int64(starts[dims[e], 0])
        _heap_sort(scores, ids, size)
        out_kept[i - first] = size
        out_visited[i - first] = visited


@_jit
def _dense_pruned_top(
    starts: Any,
    local: Any,
    data: Any,
    bmax: Any,
    bmin: Any,
    signed: bool,
    orig: Any,
    block: int,
    n: int,
    dims: Any,
    weights: Any,
    factor: float,
    width: int,
    out_scores: Any,
    out_ids: Any,
    ub: Any,
    order: Any,
    bucket_of: Any,
    counts: Any,
    blockbuf: Any,
) -> int:  # pragma: no cover - compiled
    """One dense (float64) query: the ``width`` best rows scoring ``> 0``, sorted; returns how
    many were found (``width``: they are the best of all rows)."""
    size, _ = _pruned(
        starts,
        local,
        data,
        bmax,
        bmin,
        signed,
        orig,
        block,
        n,
        dims,
        weights,
        0.0,
        factor,
        width,
        out_scores,
        out_ids,
        ub,
        order,
        bucket_of,
        counts,
        blockbuf,
    )
    _heap_sort(out_scores, out_ids, size)
    return size


def dominant_order(codes: Any) -> np.ndarray:
    """Row order for tight block maxima: rows sorted by their largest-magnitude dimension, then
    their second largest, then id (rows without entries last). ``codes``: ``n x d`` CSR."""
    n, d = codes.shape
    lengths = np.diff(codes.indptr)
    if codes.nnz == 0:
        return np.arange(n)
    rows = np.repeat(np.arange(n), lengths)
    cols = codes.indices[np.lexsort((-np.abs(codes.data), rows))]
    head = np.minimum(codes.indptr[:-1], codes.nnz - 1)
    first = np.where(lengths > 0, cols[head], d)
    second = np.where(lengths > 1, cols[np.minimum(head + 1, codes.nnz - 1)], d)
    return np.lexsort((np.arange(n), second, first))


class BlockMaxScanner:
    """The block-max index of one database (``d x n`` CSR posting lists, rows sorted) and the
    reusable buffers of its traversal (one set per thread).

    Args:
        postings: ``d x n`` CSR, row ``j`` the posting list of dimension ``j``.
        block: Rows per block.
        reorder: Reorder the rows by :func:`dominant_order` before cutting the blocks.
        threads: Threads of :meth:`top` (queries split between them).
        bound_factor: 1 exact; ``< 1`` approximate (module docstring).
    """

    def __init__(
        self,
        postings: Any,
        block: int = 64,
        reorder: bool = True,
        threads: int = 1,
        bound_factor: float = 1.0,
    ) -> None:
        d, n = postings.shape
        if n >= 2**32:
            raise ValueError(f"the block-max index holds at most 2**32 - 1 rows, got {n}")
        self.n, self.block, self.bound_factor = n, int(block), float(bound_factor)
        codes = postings.T.tocsr()
        self.orig = (dominant_order(codes) if reorder else np.arange(n)).astype(np.int64)
        lists = codes[self.orig].T.tocsr()
        lists.sort_indices()
        nb = max(1, -(-n // self.block))
        self.n_blocks = nb
        owner = np.repeat(np.arange(d, dtype=np.int64), np.diff(lists.indptr))
        in_block = lists.indices.astype(np.int64) // self.block
        segment = owner * nb + in_block  # non-decreasing: lists in order, rows sorted in each
        counts = np.bincount(segment, minlength=d * nb).reshape(d, nb)
        kind = np.uint32 if lists.nnz < 2**32 else np.uint64
        self.starts = np.zeros((d, nb + 1), dtype=kind)
        self.starts[:, 1:] = np.cumsum(counts, axis=1) + lists.indptr[:-1, None]
        self.starts[:, 0] = lists.indptr[:-1]
        self.local = (lists.indices - in_block * self.block).astype(np.uint16)
        self.data = np.ascontiguousarray(lists.data, dtype=np.float32)
        self.bmax = np.zeros((d, nb), dtype=np.float32)
        self.signed = bool((self.data < 0).any())
        self.bmin = np.zeros((d, nb) if self.signed else (1, 1), dtype=np.float32)
        if lists.nnz:
            heads = np.flatnonzero(np.r_[True, np.diff(segment) != 0])
            where = segment[heads]
            self.bmax.flat[where] = np.maximum(np.maximum.reduceat(self.data, heads), 0)
            if self.signed:
                self.bmin.flat[where] = np.minimum(np.minimum.reduceat(self.data, heads), 0)
        self.threads = max(1, int(threads))
        self._scratch = [self._buffers(np.float32) for _ in range(self.threads)]
        self._dense_scratch: tuple[np.ndarray, ...] | None = None
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        #: Postings read per query by the last :meth:`top` (pruned plus any exhaustive pass),
        #: and the totals of every :meth:`top` so far.
        self.visited = np.zeros(0, dtype=np.int64)
        self.postings_read = self.queries_read = 0

    def _buffers(self, dtype: Any) -> tuple[np.ndarray, ...]:
        nb = self.n_blocks
        return (
            np.zeros(nb, dtype=dtype),  # block bounds
            np.zeros(nb, dtype=np.int64),  # visiting order
            np.zeros(nb, dtype=np.int64),  # bucket of each block
            np.zeros(BUCKETS, dtype=np.int64),
            np.zeros(self.block, dtype=dtype),  # one block's scores
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the index arrays (bounds, block starts, postings, row ids)."""
        parts = (self.starts, self.local, self.data, self.bmax, self.bmin, self.orig)
        return int(sum(a.nbytes for a in parts))

    def top(
        self, queries: Any, k: int, width: int, threshold: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`~dsbo.data.posting_lists.PostingScanner.top`'s ``(scores, ids, kept)`` of a
        block of CSR float32 queries, through the block-max traversal (the same answer with
        ``bound_factor = 1``)."""
        m = queries.shape[0]
        scores = np.zeros((m, width), dtype=np.float32)
        ids = np.zeros((m, width), dtype=np.int64)
        kept = np.zeros(m, dtype=np.int64)
        self.visited = np.zeros(m, dtype=np.int64)
        q_indptr = np.ascontiguousarray(queries.indptr)
        q_indices = np.ascontiguousarray(queries.indices)
        q_data = np.ascontiguousarray(queries.data, dtype=np.float32)
        use_threshold = threshold is not None
        cut = np.float32(threshold if use_threshold else 0.0)

        def scan(part: int, first: int, last: int) -> None:
            ub, order, bucket_of, counts, blockbuf = self._scratch[part][:5]
            _search_queries(
                self.starts,
                self.local,
                self.data,
                self.bmax,
                self.bmin,
                self.signed,
                self.orig,
                self.block,
                q_indptr,
                q_indices,
                q_data,
                first,
                last,
                cut,
                use_threshold,
                k,
                width,
                self.bound_factor,
                scores[first:last],
                ids[first:last],
                kept[first:last],
                self.visited[first:last],
                ub,
                order,
                bucket_of,
                counts,
                blockbuf,
                self._row_buffer(part),
            )

        if self._pool is None or m < 2:
            scan(0, 0, m)
        else:
            bounds = np.linspace(0, m, min(self.threads, m) + 1).astype(int)
            list(self._pool.map(scan, range(len(bounds) - 1), bounds[:-1], bounds[1:]))
        self.postings_read += int(self.visited.sum())
        self.queries_read += m
        return scores, ids, kept

    def _row_buffer(self, part: int) -> np.ndarray:
        """The ``n``-entry buffer of the exhaustive pass of thread ``part`` (built on first use)."""
        scratch = self._scratch[part]
        if len(scratch) == 5:
            self._scratch[part] = scratch = (*scratch, np.zeros(self.n, dtype=np.float32))
        return scratch[5]

    def dense_top(
        self, dims: np.ndarray, weights: np.ndarray, width: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`~dsbo.data.posting_lists.DenseQueryScanner.top` through the traversal: the
        ``width`` best rows of one float64 dense query over the lists of ``dims`` when at least
        ``width`` rows score above 0 (bitwise the scan's scores), ``None`` otherwise."""
        if self._dense_scratch is None:
            self._dense_scratch = self._buffers(np.float64)
        ub, order, bucket_of, counts, blockbuf = self._dense_scratch
        scores = np.empty(width, dtype=np.float64)
        ids = np.empty(width, dtype=np.int64)
        size = _dense_pruned_top(
            self.starts,
            self.local,
            self.data,
            self.bmax,
            self.bmin,
            self.signed,
            self.orig,
            self.block,
            self.n,
            np.ascontiguousarray(dims, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=np.float64),
            self.bound_factor,
            width,
            scores,
            ids,
            ub,
            order,
            bucket_of,
            counts,
            blockbuf,
        )
        return (scores, ids) if size == width else None


__all__ = ["BUCKETS", "TRAVERSALS", "BlockMaxScanner", "check_traversal", "dominant_order"]
