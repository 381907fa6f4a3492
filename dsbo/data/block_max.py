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
2024) instead cut the *rows* into blocks, bound every block at once and skip whole blocks. This
module is BMP's block filter on the compiled posting lists.

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

**Traversal** (per query, one thread; :mod:`dsbo.data.block_max_kernels`). The ``probe`` blocks of
largest bound are scored exactly first (into a ``block``-entry buffer) and their rows scoring
``> tau`` offered to a bounded heap of ``width`` rows ordered by (score descending, original row
id); with the heap full, its worst score :math:`\theta_0` is a lower bound of the final
threshold. The other blocks are kept when their bound is ``> tau`` and, with the heap full,
``>= theta_0`` (a row of the answer scores at least the final threshold, so its block is kept;
``>=`` keeps ties, which the heap breaks by id). The posting lists are then walked term at a time
as the exhaustive scan walks them (query terms in stored order, each list's postings in row
order: bitwise its sums) into an ``n``-entry buffer, passing over the postings whose row lies in
a skipped block (one mask test per posting instead of a random read-modify-write), and the rows
of the kept blocks scoring ``> tau`` are offered to the heap. The result is the top ``width``
rows scoring ``> tau``. BMP visits the kept blocks one by one through a forward index; here a
learned code has tens of non-zeros per row of which only a few match a query (its FLOPs per
row), so a forward index would read every entry of a visited row, and visiting blocks through
per-(term, block) ranges was measured slower than the mask. A query whose bound pass would cost
more than :data:`COST` times its postings, or whose filter keeps more than :data:`ALIVE_MAX` of
the blocks, is scored exhaustively at once (the same answer).

**Measured** (issue 60, ``experiments/results/bench_retrieval/pruning``): on 201k learned codes
the bounds are loose (a block's bound sums tens of query terms, a row matches a few), so on the
high-recall models almost every block is kept and the traversal costs a median 0.85x the
exhaustive scan's speed; it pays only on the sparsest codes (up to 1.96x). Hence
``traversal="auto"`` is the exhaustive scan.

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

from dsbo.data.block_max_kernels import dense_pruned_top, search_queries, worth_pruning
from dsbo.data.posting_lists import QueryBlock
from dsbo.errors import ConfigError

#: ``SparseIndex(traversal=...)``: the exhaustive scan, the block-max traversal, the clustered
#: lists of :mod:`dsbo.data.clustered_postings`, or ``"auto"`` (the exhaustive scan: on the
#: 201k-row benchmark of issue 60 the block-max traversal paid only on the sparsest codes;
#: ``experiments/results/bench_retrieval/pruning``).
TRAVERSALS = ("auto", "exhaustive", "block-max", "clustered")
#: The traversals that prune (need the compiled kernel, take a ``bound_factor < 1``).
PRUNING = ("block-max", "clustered")
#: A query is pruned only if its bound pass (``m nb`` multiply-adds, vectorized) is below
#: ``COST`` times its postings (random read-modify-writes); otherwise it is scanned exhaustively.
COST = 2.0
#: Above this share of blocks kept by the filter, a query is scanned exhaustively instead.
ALIVE_MAX = 0.8


def check_traversal(traversal: Any, kernel: str, bound_factor: Any, block: Any) -> str:
    """The traversal :class:`SparseIndex` takes (``"exhaustive"``, ``"block-max"`` or
    ``"clustered"``) for the requested one and kernel; bad values raise
    :class:`~dsbo.errors.ConfigError`."""
    if traversal not in TRAVERSALS:
        raise ConfigError(f"traversal={traversal!r}: choose one of {', '.join(TRAVERSALS)}")
    if traversal in PRUNING and kernel != "compiled":
        raise ConfigError(f"traversal={traversal!r} needs kernel='compiled' (numba)")
    chosen = "exhaustive" if traversal == "auto" else traversal
    if (
        isinstance(bound_factor, bool)
        or not isinstance(bound_factor, int | float | np.floating | np.integer)
        or not 0.0 < float(bound_factor) <= 1.0
    ):
        raise ConfigError(f"bound_factor must be in (0, 1] (1: exact), got {bound_factor!r}")
    if float(bound_factor) < 1.0 and chosen not in PRUNING:
        raise ConfigError(
            f"bound_factor={bound_factor} (approximate) needs traversal='block-max' or "
            f"'clustered', not {chosen!r}"
        )
    if (
        isinstance(block, bool)
        or not isinstance(block, int | np.integer)
        or not 1 <= block <= 65536
        or block & (block - 1)
    ):
        raise ConfigError(f"block must be a power of two in [1, 65536], got {block!r}")
    return chosen


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
        #: Each posting's row in the reordered index (its block: ``position >> shift``).
        self.positions = lists.indices.astype(np.uint32)
        self.shift = self.block.bit_length() - 1
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
        """Scratch of one thread: block bounds, alive blocks and their mask, one block's and all
        rows' scores."""
        return (
            np.zeros(self.n_blocks, dtype=dtype),
            np.zeros(self.n_blocks, dtype=np.int64),
            np.zeros(self.n_blocks, dtype=np.bool_),
            np.zeros(self.block, dtype=dtype),
            np.zeros(self.n, dtype=dtype),
        )

    def probe(self, width: int) -> int:
        """Blocks scored first, for the heap's threshold: enough rows for ``width`` twice over."""
        return int(min(self.n_blocks, max(8, -(-2 * width // self.block))))

    def worth_pruning(self, dims: np.ndarray) -> bool:
        """Whether a query over the lists ``dims`` goes through the pruned traversal (:data:`COST`)."""
        return bool(worth_pruning(self.starts, np.ascontiguousarray(dims, dtype=np.int64), COST))

    @property
    def kernel_index(self) -> tuple[Any, ...]:
        """The index as the compiled kernels take it: posting lists (``starts``, ``positions``,
        ``data``), per-block bounds (``bmax``, ``bmin``, ``signed``), the row order (``orig``)
        and the block geometry (``block``, ``shift``)."""
        return (
            self.starts,
            self.positions,
            self.data,
            self.bmax,
            self.bmin,
            self.signed,
            self.orig,
            self.block,
            self.shift,
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the index arrays (bounds, block starts, postings, row ids)."""
        parts = (self.starts, self.positions, self.data, self.bmax, self.bmin, self.orig)
        return int(sum(a.nbytes for a in parts))

    def top(
        self, queries: Any, k: int, width: int, threshold: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`~dsbo.data.posting_lists.PostingScanner.top`'s ``(scores, ids, kept)`` of a
        block of CSR float32 queries, through the block-max traversal (the same answer with
        ``bound_factor = 1``)."""
        block = QueryBlock(queries, width, threshold)
        self.visited = np.zeros(block.m, dtype=np.int64)

        def scan(part: int, first: int, last: int) -> None:
            ub, alive, mask, blockbuf, buffer = self._scratch[part]
            search_queries(
                *self.kernel_index,
                *block.arrays,
                first,
                last,
                block.cut,
                block.use_threshold,
                k,
                width,
                self.bound_factor,
                self.probe(width),
                ALIVE_MAX,
                COST,
                *block.outputs(first, last),
                self.visited[first:last],
                ub,
                alive,
                mask,
                blockbuf,
                buffer,
            )

        block.split(scan, self._pool, self.threads)
        self.postings_read += int(self.visited.sum())
        self.queries_read += block.m
        return block.result

    def dense_top(
        self, dims: np.ndarray, weights: np.ndarray, width: int
    ) -> tuple[np.ndarray, np.ndarray] | None | bool:
        """:meth:`~dsbo.data.posting_lists.DenseQueryScanner.top` through the traversal: the
        ``width`` best rows of one float64 dense query over the lists of ``dims`` when at least
        ``width`` rows score above 0 (bitwise the scan's scores), ``None`` otherwise, ``False``
        when the filter kept too many blocks (:data:`ALIVE_MAX`: scan exhaustively)."""
        if self._dense_scratch is None:
            self._dense_scratch = self._buffers(np.float64)
        ub, alive, mask, blockbuf, buffer = self._dense_scratch
        scores = np.empty(width, dtype=np.float64)
        ids = np.empty(width, dtype=np.int64)
        size = dense_pruned_top(
            *self.kernel_index,
            np.ascontiguousarray(dims, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=np.float64),
            self.bound_factor,
            width,
            self.probe(width),
            ALIVE_MAX,
            scores,
            ids,
            ub,
            alive,
            mask,
            blockbuf,
            buffer,
        )
        if size < 0:
            return False
        return (scores, ids) if size == width else None


__all__ = [
    "ALIVE_MAX",
    "COST",
    "PRUNING",
    "TRAVERSALS",
    "BlockMaxScanner",
    "check_traversal",
    "dominant_order",
]
