r"""Clustered posting lists with block summaries for :class:`~dsbo.data.retrieval.SparseIndex`
(``traversal="clustered"``): SEISMIC's design (Bruch, Nardini, Rulli & Venturini, "Efficient
Inverted Indexes for Approximate Retrieval over Learned Sparse Representations", SIGIR 2024).

**Why.** The exhaustive scan (:mod:`dsbo.data.posting_lists`) visits every posting of every
query term and then the whole ``n``-entry score buffer; the block-max traversal
(:mod:`dsbo.data.block_max`) bounds blocks of the *database order* by the sum over all query
terms of the block maxima, which on learned codes (tens of terms per query, each row matching a
few of them) keeps almost every block (issue 60's measurement). SEISMIC organizes each *posting
list* instead, and reads far less by three relaxations, each a setting here:

1. **static pruning** (``list_size``, SEISMIC's :math:`\lambda`): list :math:`j` keeps only its
   ``list_size`` postings of largest :math:`|D_{rj}|`, the rows for which term :math:`j` matters;
2. **blocks with summaries** (``block_size``, ``summary_mass``, SEISMIC's :math:`\alpha`): the kept
   rows of a list are ordered so that similar rows are adjacent (by their largest and second
   largest dimension, :func:`~dsbo.data.block_max.dominant_order`; SEISMIC clusters each list with
   a shallow k-means) and cut into blocks of ``block_size`` rows; a block's *summary* holds, for
   every dimension :math:`i` its rows use, the extremes :math:`M^+_{bi} = \max(0, \max_{r \in b}
   D_{ri})` and :math:`M^-_{bi} = \min(0, \min_{r \in b} D_{ri})`, pruned to the largest entries
   (by :math:`M^+ - M^-`) that hold ``summary_mass`` of their total;
3. **query cut** (``query_terms``): only the query's ``query_terms`` largest :math:`|q_j|` walk
   their lists; and the **heap factor** (``bound_factor``, SEISMIC's ``heap_factor``).

**Search** (per query, :func:`~dsbo.data.clustered_kernels.search_queries`). The query is
scattered into a dense ``d``-vector; its selected terms are taken in decreasing :math:`|q_j|`,
and each term's blocks in turn. Once the heap holds ``width`` rows, a block is skipped when

.. math::  f \, U_b \, (1 + (m + 2) 2^{-21}) < \theta, \qquad
           U_b = \sum_{i:\, q_i > 0} q_i M^+_{bi} + \sum_{i:\, q_i < 0} q_i M^-_{bi},

:math:`\theta` the heap's worst score, :math:`f` the heap factor, :math:`m` the query's terms (the
margin covers float32 rounding). Otherwise every row of the block not yet scored is scored
exactly through the forward index (its entries against the dense query, in dimension order: the
exhaustive scan's float32 sum, bitwise) and offered to the heap (ties by row id). The forward
index holds the rows in the order of :func:`~dsbo.data.block_max.dominant_order`, so a block's
rows lie near each other in memory (a forward row read at random costs several times one read
in order). With the full summary, :math:`U_b \ge \sum_i (q_i D_{ri})_+ \ge s_r` for every row
of the block, so only rows that cannot enter are skipped.

**Exact semantics.** With every posting kept (``list_size=None``), the full summaries
(``summary_mass=1``), every query term (``query_terms=None``) and ``bound_factor=1``, every row
that shares a term with the query is scored or provably below the heap, and the rows never
scored are completed (their exact scores, in id order, while a score of 0 could still enter:
rows of no query list score exactly 0), so the answer is bitwise the exhaustive scan's:
the same ids, scores, ties, thresholds and shortlist sizes (tested against brute force). Any
of the four relaxations makes it **approximate**: every returned score is still exact and the
list sorted, but rows may be missed; the benchmark reports the recall against the exact answer.

Memory: the forward index (the codes, ``nnz``), the kept postings' row ids and the summaries
(at most ``block_size`` rows' entries per block, fewer with ``summary_mass < 1``).

**Measured** (issue 60, ``experiments/results/bench_retrieval/clustered``, 201k learned codes,
1000 queries, one thread, idle machine): with 1000 or 500 postings per list, blocks of 16,
summary mass 0.4, 10 or 5 query terms and heap factor 0.9 it was never the fastest path at a
recall budget: a row scored through the forward index reads its tens of entries in random
order, which costs more than the exhaustive scan's in-order walk of the postings it replaces,
and a shortlist of 100 keeps the heap's threshold low. It paid only on the sparsest codes
(about 2x the exhaustive scan, at a lower recall). ``traversal="auto"`` stays exhaustive.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsbo.data.block_max import dominant_order
from dsbo.data.clustered_kernels import search_queries, summaries
from dsbo.data.posting_lists import QueryBlock
from dsbo.errors import ConfigError

#: The most summary entries an index may hold (12 bytes each): exact settings on a large database
#: summarize every posting list in full, so the size is checked before anything is allocated.
MAX_SUMMARY_ENTRIES = 1 << 28


def _positive_int_or_none(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ConfigError(f"{name} must be a positive integer or None (all), got {value!r}")
    return int(value)


@dataclass(frozen=True)
class ClusterSettings:
    """The clustered index's relaxations (module docstring); the defaults are exact.

    Args:
        list_size: Postings kept per list, those of largest ``|value|`` (SEISMIC's lambda);
            ``None``: all (exact).
        block_size: Rows per block of a list.
        summary_mass: Share of a block summary's total kept, largest entries first (SEISMIC's
            alpha), in (0, 1]; 1: the full summary (exact).
        query_terms: Query terms that walk their lists, largest ``|q_j|`` first; ``None``: all
            (exact).
    """

    list_size: int | None = None
    block_size: int = 32
    summary_mass: float = 1.0
    query_terms: int | None = None

    def __post_init__(self) -> None:
        _positive_int_or_none(self.list_size, "list_size")
        _positive_int_or_none(self.query_terms, "query_terms")
        if (
            isinstance(self.block_size, bool)
            or not isinstance(self.block_size, int | np.integer)
            or self.block_size < 1
        ):
            raise ConfigError(f"block_size must be a positive integer, got {self.block_size!r}")
        mass = self.summary_mass
        if (
            isinstance(mass, bool)
            or not isinstance(mass, int | float | np.integer | np.floating)
            or not 0.0 < float(mass) <= 1.0
        ):
            raise ConfigError(f"summary_mass must be in (0, 1] (1: the full summary), got {mass!r}")

    @property
    def exact(self) -> bool:
        """Whether these settings keep the exhaustive scan's answer (with ``bound_factor=1``)."""
        return self.list_size is None and self.summary_mass >= 1.0 and self.query_terms is None


def list_blocks(
    codes: Any, settings: ClusterSettings, position: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The kept postings cut into blocks: ``(list_blocks, block_ptr, rows)``, list ``j``'s blocks
    ``list_blocks[j] .. list_blocks[j + 1] - 1``, block ``b``'s rows ``rows[block_ptr[b] ..
    block_ptr[b + 1] - 1]`` as their ``position`` in the index's row order, increasing (similar
    rows adjacent). ``codes``: ``n x d`` CSR."""
    d = codes.shape[1]
    postings = codes.T.tocsr()
    owner = np.repeat(np.arange(d, dtype=np.int64), np.diff(postings.indptr))
    row = postings.indices.astype(np.int64)
    if settings.list_size is not None:
        by_value = np.lexsort((row, -np.abs(postings.data), owner))
        rank = np.arange(len(owner)) - postings.indptr[owner[by_value]]
        keep = np.sort(by_value[rank < settings.list_size])
        owner, row = owner[keep], row[keep]
    row = position[row]
    order = np.lexsort((row, owner))
    owner, row = owner[order], row[order]
    lengths = np.bincount(owner, minlength=d)
    blocks_per_list = -(-lengths // settings.block_size)
    list_ptr = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(blocks_per_list, out=list_ptr[1:])
    starts = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    within = np.arange(len(owner)) - starts[owner]
    block_of = list_ptr[owner] + within // settings.block_size
    block_ptr = np.zeros(list_ptr[-1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(block_of, minlength=list_ptr[-1]), out=block_ptr[1:])
    return list_ptr, block_ptr, row.astype(np.uint32)


class ClusteredScanner:
    """The clustered index of one database (``d x n`` CSR posting lists) and the reusable
    buffers of its search (one set per thread).

    Args:
        postings: ``d x n`` CSR, row ``j`` the posting list of dimension ``j``.
        settings: The relaxations (:class:`ClusterSettings`; the defaults are exact).
        threads: Threads of :meth:`top` (queries split between them).
        bound_factor: SEISMIC's heap factor in (0, 1]; 1 skips only blocks that cannot enter.
    """

    def __init__(
        self,
        postings: Any,
        settings: ClusterSettings | None = None,
        threads: int = 1,
        bound_factor: float = 1.0,
    ) -> None:
        d, n = postings.shape
        if n >= 2**32:
            raise ValueError(f"the clustered index holds at most 2**32 - 1 rows, got {n}")
        self.n, self.dim = n, d
        self.settings = settings or ClusterSettings()
        self.bound_factor = float(bound_factor)
        codes = postings.T.tocsr()
        codes.sort_indices()
        #: The row order of the forward index (``orig[position]`` is the row id) and its inverse:
        #: similar rows adjacent, so that a block's rows are near each other in memory.
        self.orig = dominant_order(codes).astype(np.int64)
        self.position = np.empty(n, dtype=np.int64)
        self.position[self.orig] = np.arange(n)
        forward = codes[self.orig]
        self.fwd_indptr = forward.indptr.astype(np.int64)
        self.fwd_dims = forward.indices.astype(np.int32)
        self.fwd_vals = np.ascontiguousarray(forward.data, dtype=np.float32)
        self.signed = bool((self.fwd_vals < 0).any())
        self.list_blocks, self.block_ptr, self.rows = list_blocks(
            codes, self.settings, self.position
        )
        self._summaries()
        self.threads = max(1, int(threads))
        self._scratch = [
            (
                np.zeros(d, dtype=np.float32),
                np.zeros(n, dtype=np.uint8),
                np.zeros(n, dtype=np.int64),
            )
            for _ in range(self.threads)
        ]
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        #: Index entries read (summaries and forward rows) and queries answered by :meth:`top`.
        self.entries_read = self.queries_read = 0

    def _summaries(self) -> None:
        """Every block's summary: sized in a first pass of
        :func:`~dsbo.data.clustered_kernels.summaries` (checked against
        :data:`MAX_SUMMARY_ENTRIES`), written by a second into arrays allocated once."""
        scratch = (
            np.zeros(self.dim, dtype=np.float32),
            np.zeros(self.dim, dtype=np.float32),
            np.zeros(self.dim, dtype=np.int64),
        )
        args = (self.block_ptr, self.rows, self.fwd_indptr, self.fwd_dims, self.fwd_vals)
        mass = float(self.settings.summary_mass)
        self.summary_ptr = np.zeros(len(self.block_ptr), dtype=np.int64)
        self.summary_dims = np.zeros(0, dtype=np.int32)
        self.summary_hi = self.summary_lo = np.zeros(0, dtype=np.float32)
        outputs = (self.summary_ptr, self.summary_dims, self.summary_hi, self.summary_lo)
        summaries(*args, mass, *scratch, *outputs, self.signed, False)
        np.cumsum(self.summary_ptr, out=self.summary_ptr)  # sizes (from index 1) to offsets
        total = int(self.summary_ptr[-1])
        if total > MAX_SUMMARY_ENTRIES:
            raise ConfigError(
                f"the clustered index's summaries would hold {total} entries (at most "
                f"{MAX_SUMMARY_ENTRIES}): set ClusterSettings' list_size or summary_mass"
            )
        self.summary_dims = np.zeros(total, dtype=np.int32)
        self.summary_hi = np.zeros(total, dtype=np.float32)
        self.summary_lo = np.zeros(total if self.signed else 1, dtype=np.float32)
        outputs = (self.summary_ptr, self.summary_dims, self.summary_hi, self.summary_lo)
        summaries(*args, mass, *scratch, *outputs, self.signed, True)

    @property
    def kernel_index(self) -> tuple[Any, ...]:
        """The index as :func:`~dsbo.data.clustered_kernels.search_queries` takes it: the
        lists' blocks (``list_blocks``, ``block_ptr``, ``rows``), their summaries
        (``summary_ptr``, ``summary_dims``, ``summary_hi``, ``summary_lo``, ``signed``), the
        forward index (``fwd_indptr``, ``fwd_dims``, ``fwd_vals``) and the row order (``orig``,
        ``position``)."""
        return (
            self.list_blocks,
            self.block_ptr,
            self.rows,
            self.summary_ptr,
            self.summary_dims,
            self.summary_hi,
            self.summary_lo,
            self.signed,
            self.fwd_indptr,
            self.fwd_dims,
            self.fwd_vals,
            self.orig,
            self.position,
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the index arrays (blocks, summaries, forward index, row order)."""
        return int(sum(a.nbytes for a in self.kernel_index if isinstance(a, np.ndarray)))

    def top(
        self, queries: Any, k: int, width: int, threshold: float | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`~dsbo.data.posting_lists.PostingScanner.top`'s ``(scores, ids, kept)`` of a
        block of CSR float32 queries through the clustered index (the same answer with exact
        settings, module docstring)."""
        block = QueryBlock(queries, width, threshold)
        read = np.zeros(block.m, dtype=np.int64)
        terms = self.settings.query_terms or 0

        def scan(part: int, first: int, last: int) -> None:
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
                terms,
                *block.outputs(first, last),
                read[first:last],
                *self._scratch[part],
            )

        block.split(scan, self._pool, self.threads)
        self.entries_read += int(read.sum())
        self.queries_read += block.m
        return block.result


__all__ = ["MAX_SUMMARY_ENTRIES", "ClusterSettings", "ClusteredScanner", "list_blocks"]
