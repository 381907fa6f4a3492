r"""A compiled posting-list kernel for :class:`~dsbo.data.retrieval.SparseIndex` (Paria thesis,
section 5.4, Algorithm 5.1: the thesis' figures come from a C++ posting-list scan).

The index stores the database codes :math:`D` (``n x d``) as posting lists: dimension :math:`j`
lists the rows active in it with their values. A sparse query :math:`q` is scored by walking
only the posting lists of its non-zero dimensions,

.. math::  s_r = \sum_{j:\, q_j \ne 0} q_j D_{rj}, \qquad
           \text{cost} = \sum_{j:\, q_j \ne 0} n_j \text{ multiply-adds}

(eq. 5.1-5.2: in expectation :math:`n \sum_j p_j^2` per query), accumulated into a dense
``n``-entry float32 buffer that stays in the core's cache, and the buffer is selected from
while it is still there:

1. **count** the rows scoring ``> threshold`` (the candidates; ``None``: every row);
2. **select** the ``s = clip(count, k, width)`` best rows (``s = width`` without a threshold)
   with a bounded heap: rows are visited in increasing id, so a row enters only when it scores
   strictly above the worst kept one, which gives ties to the lowest id;
3. **sort** the kept rows by score (descending), ties by id (heap extraction), and reset the
   buffer.

With a threshold the ``s`` rows are exactly "the rows above the threshold, at most ``width``,
completed to ``k`` with the next best scores" of :meth:`SparseIndex.search`. The products and
sums run in float32 in the same order as scipy's sparse product (the query's entries in stored
order, each posting list in row order), so the scores, and therefore the ids, are bitwise those
of the scipy path. One query at a time per thread: with ``threads > 1`` the queries of a block
are split into contiguous ranges, each scanned by a Python thread into its own buffer (the
kernels release the GIL; no numba threading layer is involved, so concurrent callers are safe).

:class:`DenseQueryScanner` is the same walk for one dense query in float64 (the pool policy's
Thompson and UCB queries): its scores and the rows it touched, or its best rows, ranking only
the touched rows when enough of them score above 0 and resetting only what it touched.

The kernels are `numba <https://numba.pydata.org>`_ functions, compiled on first use and cached
on disk (``pip install -e ".[retrieval]"``); :func:`available` says whether numba is installed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - the retrieval extra installs it
    numba = None


def available() -> bool:
    """Whether the compiled kernels can be used (numba is installed)."""
    return numba is not None


def _jit(function: Any) -> Any:
    return numba.njit(nogil=True, cache=True)(function) if numba is not None else function


@_jit
def _worse(
    score_a: float, id_a: int, score_b: float, id_b: int
) -> bool:  # pragma: no cover - compiled
    """Ranking order: a lower score is worse; of equal scores the higher row id is worse."""
    return score_a < score_b or (score_a == score_b and id_a > id_b)


@_jit
def _sift_down(
    heap_scores: Any, heap_ids: Any, size: int, at: int
) -> None:  # pragma: no cover - compiled
    """Restore the heap below ``at`` (the worst kept row at the root)."""
    score, row = heap_scores[at], heap_ids[at]
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and _worse(
            heap_scores[child + 1], heap_ids[child + 1], heap_scores[child], heap_ids[child]
        ):
            child += 1
        if not _worse(heap_scores[child], heap_ids[child], score, row):
            break
        heap_scores[at], heap_ids[at] = heap_scores[child], heap_ids[child]
        at = child
    heap_scores[at], heap_ids[at] = score, row


@_jit
def _offer(
    heap_scores: Any, heap_ids: Any, size: int, width: int, score: float, row: int
) -> int:  # pragma: no cover - compiled
    """Offer a row to a heap of at most ``width`` (the worst kept row at the root); returns its size."""
    if size < width:  # fill: sift the new row up
        at = size
        while at > 0:
            parent = (at - 1) // 2
            if not _worse(score, row, heap_scores[parent], heap_ids[parent]):
                break
            heap_scores[at], heap_ids[at] = heap_scores[parent], heap_ids[parent]
            at = parent
        heap_scores[at], heap_ids[at] = score, row
        return size + 1
    if _worse(heap_scores[0], heap_ids[0], score, row):
        heap_scores[0], heap_ids[0] = score, row
        _sift_down(heap_scores, heap_ids, size, 0)
    return size


@_jit
def _heap_sort(heap_scores: Any, heap_ids: Any, size: int) -> None:  # pragma: no cover - compiled
    """Sort a heap best first: the worst goes to the end, repeatedly."""
    for end in range(size - 1, 0, -1):
        score, row = heap_scores[0], heap_ids[0]
        heap_scores[0], heap_ids[0] = heap_scores[end], heap_ids[end]
        heap_scores[end], heap_ids[end] = score, row
        _sift_down(heap_scores, heap_ids, end, 0)


@_jit
def _scan_queries(
    indptr: Any,
    indices: Any,
    data: Any,
    q_indptr: Any,
    q_indices: Any,
    q_data: Any,
    first: int,
    last: int,
    threshold: float,
    use_threshold: bool,
    k: int,
    width: int,
    out_scores: Any,
    out_ids: Any,
    out_kept: Any,
    buffer: Any,
) -> None:  # pragma: no cover - compiled
    """Queries ``first .. last - 1``: scores through the posting lists into ``buffer`` (all
    zeros on entry and on exit), then the best ``kept`` rows into row ``i - first`` of the
    outputs (sorted; ``kept = clip(count above threshold, k, width)``, or ``width``)."""
    n = buffer.shape[0]
    for i in range(first, last):
        for e in range(q_indptr[i], q_indptr[i + 1]):
            j, w = q_indices[e], q_data[e]
            for p in range(indptr[j], indptr[j + 1]):
                buffer[indices[p]] += w * data[p]
        kept = width
        if use_threshold:
            count = 0
            for r in range(n):
                if buffer[r] > threshold:
                    count += 1
            kept = min(max(count, k), width)
        heap_scores, heap_ids = out_scores[i - first], out_ids[i - first]
        size = 0
        for r in range(n):
            score = buffer[r]
            # rows come in id order: once the heap is full only a strictly higher score enters
            if size < kept or score > heap_scores[0]:
                size = _offer(heap_scores, heap_ids, size, kept, score, r)
            buffer[r] = 0.0
        _heap_sort(heap_scores, heap_ids, size)
        out_kept[i - first] = size


@_jit
def _dense_top(
    tile_starts: Any,
    indices: Any,
    data: Any,
    dims: Any,
    weights: Any,
    width: int,
    buffer: Any,
    touched: Any,
    out_scores: Any,
    out_ids: Any,
) -> int:  # pragma: no cover - compiled
    """The ``width`` best rows scoring ``> 0`` of one dense query through the posting lists of
    ``dims``, sorted (score descending, ties by id); returns how many rows score ``> 0``. When
    that is at least ``width`` these are the ``width`` best of all rows (every row outside the
    posting lists scores 0).

    Row tiles of ``len(buffer)`` rows: the posting entries of a tile (``tile_starts[j, t] ..
    tile_starts[j, t + 1]``) are added into the float64 tile buffer, which stays in cache. A
    tile with fewer entries than rows (a truncated query) lists each row
    when an entry finds its sum at 0, then reads, resets and offers the listed rows (a row
    listed twice, its sum having come back to exactly 0, reads the reset 0 the second time):
    the cost follows the posting entries, not the pool's size. Other tiles are read whole, in
    id order."""
    tile = buffer.shape[0]
    n_tiles = tile_starts.shape[1] - 1
    size = 0
    positive = 0
    for t in range(n_tiles):
        low = t * tile
        entries = 0
        for e in range(dims.shape[0]):
            entries += tile_starts[dims[e], t + 1] - tile_starts[dims[e], t]
        listed = entries < tile
        count = 0
        for e in range(dims.shape[0]):
            j, w = dims[e], weights[e]
            for p in range(tile_starts[j, t], tile_starts[j, t + 1]):
                r = indices[p] - low
                if listed and buffer[r] == 0.0:
                    touched[count] = r
                    count += 1
                buffer[r] += w * data[p]
        for i in range(count if listed else tile):
            r = touched[i] if listed else i
            score = buffer[r]
            if score != 0.0:
                buffer[r] = 0.0
            if score > 0.0:
                positive += 1
                if size < width or _worse(out_scores[0], out_ids[0], score, low + r):
                    size = _offer(out_scores, out_ids, size, width, score, low + r)
    _heap_sort(out_scores, out_ids, size)
    return positive


@_jit
def _accumulate_dense(
    indptr: Any, indices: Any, data: Any, dims: Any, weights: Any, scores: Any, touched: Any
) -> None:  # pragma: no cover - compiled
    for e in range(dims.shape[0]):
        j, w = dims[e], weights[e]
        for p in range(indptr[j], indptr[j + 1]):
            r = indices[p]
            scores[r] += w * data[p]
            touched[r] = True


#: The compiled heap of the scans, shared with :mod:`dsbo.data.block_max_kernels`: ``jit`` (numba's
#: ``njit(nogil=True, cache=True)``), ``worse`` (the ranking order), ``offer`` (a bounded heap's
#: insert) and ``heap_sort`` (best first).
jit, worse, offer, heap_sort = _jit, _worse, _offer, _heap_sort


def unsigned_postings(postings: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of a ``d x n`` CSR as uint64, uint32 and float32 arrays:
    unsigned positions spare the compiled loops numpy's negative-index check on every entry
    (about a fifth of the scan's time here)."""
    if postings.shape[1] >= 2**32:
        raise ValueError(
            f"the compiled scan indexes at most 2**32 - 1 rows, got {postings.shape[1]}"
        )
    return (
        postings.indptr.astype(np.uint64),
        postings.indices.astype(np.uint32),
        np.ascontiguousarray(postings.data, dtype=np.float32),
    )


class QueryBlock:
    """One block of CSR queries as the compiled scans take it, with the outputs of a ``top``
    (``scores``, ``ids``, ``kept``: row ``i`` holds the ``kept[i]`` best rows, best first, ties
    by id; the places after them unused, id 0 and score 0), shared by the scanners of
    :mod:`dsbo.data.posting_lists`, :mod:`dsbo.data.block_max` and
    :mod:`dsbo.data.clustered_postings`."""

    def __init__(self, queries: Any, width: int, threshold: float | None) -> None:
        self.m = queries.shape[0]
        self.scores = np.zeros((self.m, width), dtype=np.float32)
        self.ids = np.zeros((self.m, width), dtype=np.int64)
        self.kept = np.zeros(self.m, dtype=np.int64)
        #: The queries' CSR arrays (float32 values), the kernels' query arguments.
        self.arrays = (
            np.ascontiguousarray(queries.indptr),
            np.ascontiguousarray(queries.indices),
            np.ascontiguousarray(queries.data, dtype=np.float32),
        )
        self.use_threshold = threshold is not None
        self.cut = np.float32(threshold if self.use_threshold else 0.0)

    def outputs(self, first: int, last: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The output rows of queries ``first .. last - 1``."""
        return self.scores[first:last], self.ids[first:last], self.kept[first:last]

    def split(self, scan: Any, pool: ThreadPoolExecutor | None, threads: int) -> None:
        """``scan(part, first, last)`` over contiguous query ranges, one per thread of ``pool``
        (or all at once without one)."""
        if pool is None or self.m < 2:
            scan(0, 0, self.m)
            return
        bounds = np.linspace(0, self.m, min(threads, self.m) + 1).astype(int)
        list(pool.map(scan, range(len(bounds) - 1), bounds[:-1], bounds[1:]))

    @property
    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.scores, self.ids, self.kept


class PostingScanner:
    """Reusable buffers of the compiled scan over one index's posting lists (``d x n`` CSR)."""

    def __init__(self, postings: Any, threads: int = 1) -> None:
        self.indptr, self.indices, self.data = unsigned_postings(postings)
        self.n = postings.shape[1]
        self.threads = max(1, int(threads))
        self._buffers = [np.zeros(self.n, dtype=np.float32) for _ in range(self.threads)]
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None

    def top(
        self, queries: Any, k: int, width: int, threshold: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(scores, ids, kept)`` of a block of CSR float32 queries (:class:`QueryBlock`)."""
        block = QueryBlock(queries, width, threshold)

        def scan(part: int, first: int, last: int) -> None:
            _scan_queries(
                self.indptr,
                self.indices,
                self.data,
                *block.arrays,
                first,
                last,
                block.cut,
                block.use_threshold,
                k,
                width,
                *block.outputs(first, last),
                self._buffers[part],
            )

        block.split(scan, self._pool, self.threads)
        return block.result


class DenseQueryScanner:
    """Reusable buffers for :func:`_dense_top` over one index's posting lists (one caller at a
    time)."""

    #: Rows per tile of :meth:`top` (a 512 KB float64 buffer: the core's L2 cache).
    tile = 65536

    def __init__(self, postings: Any) -> None:
        self.indptr, self.indices, self.data = unsigned_postings(postings)
        self.n = postings.shape[1]
        d = postings.shape[0]
        rows = min(self.tile, self.n)
        n_tiles = -(-self.n // rows)
        # tile_starts[j, t]: where posting list j reaches row t * rows (its rows are sorted)
        lists = np.repeat(np.arange(d), np.diff(postings.indptr))
        counts = np.bincount(
            lists * n_tiles + postings.indices // rows, minlength=d * n_tiles
        ).reshape(d, n_tiles)
        self.tile_starts = np.zeros((d, n_tiles + 1), dtype=np.uint64)
        self.tile_starts[:, 1:] = np.cumsum(counts, axis=1)
        self.tile_starts += self.indptr[:-1, None]
        self._tile_buffer = np.zeros(rows, dtype=np.float64)
        self._touched = np.empty(rows, dtype=np.int64)

    def scores(self, dims: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, touched)``: float64 :math:`\\sum_e w_e D_{r, j_e}` over the posting lists
        of ``dims`` (with ``weights``) for every row ``r``, and a mask of the rows they list."""
        scores = np.zeros(self.n, dtype=np.float64)
        touched = np.zeros(self.n, dtype=np.bool_)
        _accumulate_dense(
            self.indptr,
            self.indices,
            self.data,
            np.ascontiguousarray(dims, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=np.float64),
            scores,
            touched,
        )
        return scores, touched

    def top(
        self, dims: np.ndarray, weights: np.ndarray, width: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(scores, ids)``: the ``width`` best rows of :math:`\\sum_e w_e D_{r, j_e}` (float64,
        best first, ties by id) when at least ``width`` rows score above 0; ``None`` otherwise
        (then zero-score rows belong to the answer: rank :meth:`scores`)."""
        scores = np.empty(width, dtype=np.float64)
        ids = np.empty(width, dtype=np.int64)
        positive = _dense_top(
            self.tile_starts,
            self.indices,
            self.data,
            np.ascontiguousarray(dims, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=np.float64),
            width,
            self._tile_buffer,
            self._touched,
            scores,
            ids,
        )
        return (scores, ids) if positive >= width else None


__all__ = [
    "DenseQueryScanner",
    "PostingScanner",
    "QueryBlock",
    "available",
    "heap_sort",
    "jit",
    "offer",
    "unsigned_postings",
    "worse",
]
