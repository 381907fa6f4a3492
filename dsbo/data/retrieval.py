r"""Maximum-inner-product search over sparse embeddings: an inverted index on scipy sparse
matrices (Paria thesis, section 5.4, Algorithm 5.1 and figure 5.2), with dense baselines.

:class:`SparseIndex` stores the database :math:`D` (``n x d``) as its transpose in CSR form:
row :math:`j` of ``postings`` is the list of database rows active in dimension :math:`j` with
their values (the inverted index). A block of sparse queries :math:`Q_b` (CSR, ``b x d``) is
scored by one sparse-sparse product :math:`S = Q_b D^T` that visits, for each query, only the
posting lists of its non-zero dimensions: :math:`\sum_j [q_j \ne 0] n_j` multiply-adds, whose
expectation per database row is the FLOPs per row :math:`\sum_j p_j^2` (eq. 5.1-5.2). The
product is densified into a ``b x n`` float32 score buffer (rows with no common dimension score
exactly 0 there, an implicit zero the sparse product never stores), and the selection runs on
the whole block at once, with no per-query Python loop:

1. **threshold**: the candidates of a query are its rows scoring ``> threshold`` (``None``:
   every row);
2. **top-k**: the ``shortlist`` best candidates (``numpy.partition`` for the ``shortlist``-th
   value, then a mask; no full sort), at least ``k`` (a query with fewer than ``k`` rows above
   the threshold is completed with the next best scores). With a threshold ``>= 0`` and
   re-ranking, only stored (non-zero) scores can pass, so the
   shortlist comes from the sparse product's entries directly (one ``lexsort`` of the passing
   entries of the block: query, score descending, row id); neither the ``b x n`` buffer nor
   the partition is needed, and the cost follows the non-zero scores rather than ``n``;
   only queries with fewer than ``k`` passing rows go through the buffer to be completed;
3. **re-rank** the shortlist exactly with dense vectors (``dense``: e.g. the unit-norm
   pre-activations of the same network; each shortlisted row's vector read once and multiplied
   with its query's, :func:`~dsbo.data.rerank.gathered_dots`) and return the ``k`` best;
   without dense vectors the sparse scores, which are exact inner products of the sparse codes,
   rank.

**Where the time goes.** ``search(..., timings={})`` adds the wall time (``time.perf_counter``)
of its parts to the dict (keys :data:`TIMING_PARTS` and ``"total"``, seconds, summed over
calls): ``scoring`` (the sparse products ``Q_b D^T`` and their densification into the score
buffer), ``topk`` (threshold counts, ``numpy.partition`` and the sorts, of the sparse scores and
of the re-ranked shortlist), ``rerank`` (gathering the shortlist's dense vectors and their
inner products; 0 without ``dense_queries``) and ``overhead``, the total minus the three: input
checks and conversion, output allocation, block slicing and the Python between the parts.
Without ``timings`` no clock is read (a few ``is None`` tests per block).

Without re-ranking the result is exactly the dense top-k of :math:`Q D^T` over all ``n`` rows,
for signed (SThresh) codes too: a row scoring 0 outranks one scoring below 0; ties are broken
by row id, also inside the selection (a threshold then changes nothing). Memory is bounded:
a block holds at most ``chunk`` queries and ``buffer`` scores (:meth:`SparseIndex.block_rows`).

**Dynamic pruning** (``traversal="block-max"``, compiled kernel): :mod:`dsbo.data.block_max`
bounds row blocks by the positive parts of the query-posting products and skips the blocks that
cannot enter the shortlist (BMP, Mallia et al. 2024), with the same ids and scores;
``bound_factor < 1`` makes it approximate (SEISMIC's heap factor). ``traversal="clustered"``
(:mod:`dsbo.data.clustered_postings`, SEISMIC, Bruch et al. 2024) cuts each posting list into
blocks of similar rows with summaries and scores the rows of the blocks that may enter through a
forward index: exact with its default :class:`~dsbo.data.clustered_postings.ClusterSettings`,
**approximate** with any of its relaxations (``list_size``, ``summary_mass``, ``query_terms``,
``bound_factor < 1``).

Baselines with the same ``search(queries, k) -> (scores, ids)`` interface
(:mod:`dsbo.data.dense_indexes`, importable from here too): :class:`DenseIndex` (one BLAS
matmul + ``argpartition``), :class:`TorchDenseIndex` (``torch.matmul`` + ``torch.topk``),
:class:`FaissFlatIndex` (faiss ``IndexFlatIP``, the exact scan a user would pick) and
:class:`FaissIVFIndex` (faiss ``IndexIVFFlat``, inverted-file clustering, approximate). faiss
comes with the ``retrieval`` extra (``pip install -e ".[retrieval]"``).

The row-wise selections are :mod:`dsbo.data.top_k`'s. The input is checked first
(:mod:`dsbo.data.retrieval_checks`): bad input raises :class:`~dsbo.errors.DataError` (NaN/inf
rows named, zero rows, a dimension mismatch between the index and the queries) or
:class:`~dsbo.errors.ConfigError` (``k`` larger than the database, a non-positive ``k`` or
``shortlist``), before any search runs.

Example:
    >>> index = SparseIndex(codes, dense=dense_vectors)
    >>> scores, ids = index.search(query_codes, k=10, shortlist=1000, threshold=0.25,
    ...                            dense_queries=dense_query_vectors)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from dsbo.data import block_max, clustered_postings, posting_lists
from dsbo.data.clustered_postings import ClusterSettings
from dsbo.data.dense_indexes import DenseIndex, FaissFlatIndex, FaissIVFIndex, TorchDenseIndex
from dsbo.data.rerank import gathered_dots
from dsbo.data.retrieval_checks import as_matrix, check_dim, check_k
from dsbo.data.top_k import best_reranked, sorted_top, top_k_rows
from dsbo.errors import ConfigError, DataError

#: ``SparseIndex(kernel=...)``: the compiled posting-list scan, scipy's sparse product, or the
#: compiled one where numba is installed.
KERNELS = ("auto", "compiled", "scipy")
#: The compiled scanners of :meth:`SparseIndex.search`, one per traversal.
QueryScanner = (
    posting_lists.PostingScanner | block_max.BlockMaxScanner | clustered_postings.ClusteredScanner
)
#: The parts of :meth:`SparseIndex.search`'s ``timings`` (with ``"total"``, their sum).
TIMING_PARTS = ("scoring", "topk", "rerank", "overhead")


class SparseIndex:
    """Inverted index over sparse codes with threshold, top-k shortlist and dense re-ranking.

    Args:
        codes: ``n x d`` database codes (scipy sparse, ndarray or tensor; zeros are not stored).
        dense: Optional ``n x e`` dense vectors of the same rows for exact re-ranking.
        kernel: How queries are scored and selected: ``"compiled"`` (the numba posting-list
            scan of :mod:`dsbo.data.posting_lists`), ``"scipy"`` (the sparse product and the
            vectorized selection of the module docstring) or ``"auto"`` (compiled when numba is
            installed). Both give the same ids and scores.
        threads: Threads of the compiled scan (queries split between them); the scipy path
            uses one.
        traversal: ``"block-max"`` (exact dynamic pruning, :mod:`dsbo.data.block_max`: row
            blocks whose score bound cannot enter the shortlist are skipped), ``"clustered"``
            (SEISMIC's blocked posting lists with summaries,
            :mod:`dsbo.data.clustered_postings`: exact with the default ``clusters``,
            approximate with its relaxations), ``"exhaustive"`` (every posting of every query
            term) or ``"auto"`` (exhaustive: block-max paid only
            on the sparsest codes of issue 60's benchmark). The same ids and scores either way
            (with ``bound_factor=1`` and exact ``clusters``); the pruning traversals need the
            compiled kernel.
        bound_factor: 1 (default): exact. ``< 1``: **approximate** pruning traversal, a
            block is visited only if ``bound_factor`` times its bound beats the heap
            (SEISMIC's ``heap_factor``); returned scores stay exact, rows may be missed.
        block_size: Rows per block of the block-max index.
        reorder: Reorder the rows before cutting the blocks (tighter block maxima; the ids
            returned are always the original ones).
        clusters: The clustered traversal's settings
            (:class:`~dsbo.data.clustered_postings.ClusterSettings`; default: exact).
    """

    #: Queries scored per sparse product (at most; see :meth:`block_rows`).
    chunk = 64
    #: Entries of the dense score buffer of one block (``block x n`` float32, 16 MB) and of
    #: the gathered re-rank block (``rows x shortlist x e``) where numba is missing.
    buffer = 1 << 22

    def __init__(
        self,
        codes: Any,
        dense: Any | None = None,
        kernel: str = "auto",
        threads: int = 1,
        traversal: str = "auto",
        bound_factor: float = 1.0,
        block_size: int = 64,
        reorder: bool = True,
        clusters: ClusterSettings | None = None,
    ) -> None:
        if kernel not in KERNELS:
            raise ConfigError(f"kernel={kernel!r}: choose one of {', '.join(KERNELS)}")
        if kernel == "compiled" and not posting_lists.available():
            raise ConfigError('kernel="compiled" needs numba: pip install -e ".[retrieval]"')
        if isinstance(threads, bool) or not isinstance(threads, int | np.integer) or threads < 1:
            raise ConfigError(f"threads must be a positive integer, got {threads!r}")
        matrix = as_matrix(codes, "index codes")
        matrix = sp.csr_matrix(matrix) if not sp.issparse(matrix) else matrix
        matrix.eliminate_zeros()
        self.n, self.dim = matrix.shape
        #: ``d x n`` CSR: row j lists the database rows active in dimension j (the inverted index).
        self.postings = matrix.T.tocsr()
        self.postings.sort_indices()
        #: ``"compiled"`` or ``"scipy"``: the path :meth:`search` takes.
        self.kernel = (
            "compiled"
            if kernel == "compiled" or (kernel == "auto" and posting_lists.available())
            else "scipy"
        )
        self.threads = int(threads)
        #: ``"block-max"`` or ``"exhaustive"``: how the compiled kernel walks the lists.
        self.traversal = block_max.check_traversal(traversal, self.kernel, bound_factor, block_size)
        self.bound_factor, self.block_size = float(bound_factor), int(block_size)
        self.reorder = bool(reorder)
        if clusters is not None and not isinstance(clusters, ClusterSettings):
            raise ConfigError(f"clusters must be a ClusterSettings, got {type(clusters).__name__}")
        if clusters is not None and self.traversal != "clustered":
            raise ConfigError(f"clusters given but traversal={self.traversal!r}: use 'clustered'")
        self.clusters = clusters or ClusterSettings()
        # the compiled scanners, built on first use: a retrieval index needs only the first, a
        # pool's only the second (each holds its own unsigned copy of the posting lists)
        self._scanner: QueryScanner | None = None
        self._dense_scanner: posting_lists.DenseQueryScanner | None = None
        self.dense = None
        if dense is not None:
            self.dense = np.ascontiguousarray(as_matrix(dense, "index dense vectors"))
            if self.dense.shape[0] != self.n:
                raise DataError(
                    f"index dense vectors have {self.dense.shape[0]} rows, the codes {self.n}"
                )

    @property
    def nnz(self) -> int:
        return int(self.postings.nnz)

    def traversal_stats(self) -> dict[str, int]:
        """Postings read and queries answered so far by :meth:`search`'s pruning traversal
        (block-max: postings; clustered: summary and forward-index entries; zeros on the other
        paths)."""
        scanner = self._scanner
        if isinstance(scanner, block_max.BlockMaxScanner):
            return {"postings_read": scanner.postings_read, "queries": scanner.queries_read}
        if isinstance(scanner, clustered_postings.ClusteredScanner):
            return {"postings_read": scanner.entries_read, "queries": scanner.queries_read}
        return {"postings_read": 0, "queries": 0}

    def flops_per_row(self) -> float:
        r"""Plug-in :math:`\sum_j \bar p_j^2` of the database (expected multiply-adds per row and query)."""
        p = np.diff(self.postings.indptr) / self.n
        return float((p**2).sum())

    def dense_query_scores(
        self, w: np.ndarray, dims: np.ndarray | None = None, hits: bool = False
    ) -> Any:
        """Scores ``D w`` of one dense query through the posting lists of ``dims`` (default:
        every dimension; exact), accumulated into a length-``n`` array (``numpy.bincount``):
        the cost is the number of posting entries visited plus ``n``, not ``n d``. With
        ``hits``, also the sorted ids of the rows that share a dimension with the query (the
        only rows that can score non-zero)."""
        w = np.asarray(w, dtype=np.float64).reshape(-1)
        if len(w) != self.dim:
            raise DataError(f"the query has {len(w)} dimensions, the index has {self.dim}")
        P = self.postings
        if self.kernel == "compiled":
            dims = np.arange(self.dim) if dims is None else np.asarray(dims, dtype=np.int64)
            scores, touched = self._dense_query_scanner().scores(dims, w[dims])
            return (scores, np.flatnonzero(touched)) if hits else scores
        if dims is None:
            sub, weights = P, w
        else:
            dims = np.asarray(dims, dtype=np.int64)
            sub, weights = P[dims], w[dims]
        counts = np.diff(sub.indptr)
        scores = np.bincount(
            sub.indices, weights=sub.data * np.repeat(weights, counts), minlength=self.n
        )
        if not hits:
            return scores
        touched = np.zeros(self.n, dtype=bool)
        touched[sub.indices] = True
        return scores, np.flatnonzero(touched)

    def dense_query_top(
        self, w: np.ndarray, dims: np.ndarray | None, width: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``width`` rows with the best scores :math:`D_{:, J} w_J` of one dense query
        through the posting lists of ``dims`` (``J``; default every dimension): ``(scores,
        ids)``, float64, best first, ties by row id, over all ``n`` rows (untouched rows score
        0). When at least ``width`` touched rows score above 0 only they are ranked, so the cost
        follows the posting lists, not ``n`` (the compiled kernel resets only what it touched).
        The block-max traversal prunes here too; the clustered one answers :meth:`search` only
        (a dense query walks the full lists, exactly).
        """
        w = np.asarray(w, dtype=np.float64).reshape(-1)
        if len(w) != self.dim:
            raise DataError(f"the query has {len(w)} dimensions, the index has {self.dim}")
        width = check_k(width, self.n, "width")
        dims = np.arange(self.dim) if dims is None else np.asarray(dims, dtype=np.int64)
        if self.kernel == "compiled":
            pruned = self._query_scanner() if self.traversal == "block-max" else None
            best = False
            if pruned is not None and pruned.worth_pruning(dims):
                best = pruned.dense_top(dims, w[dims], width)
            if best is False:  # exhaustive, or pruning would not pay (block_max.COST, ALIVE_MAX)
                best = self._dense_query_scanner().top(dims, w[dims], width)
            if best is not None:
                return best
        scores, hit = self.dense_query_scores(w, dims, hits=True)
        positive = hit[scores[hit] > 0]
        rows = positive if len(positive) >= width else None
        top_scores, at = sorted_top((scores if rows is None else scores[rows])[None, :], width)
        return top_scores[0], at[0] if rows is None else rows[at[0]]

    def scores(self, queries: Any) -> sp.csr_matrix:
        """``m x n`` sparse scores :math:`Q D^T` through the posting lists."""
        Q = as_matrix(queries, "queries")
        check_dim(Q, self.dim, "queries")
        Q = sp.csr_matrix(Q) if not sp.issparse(Q) else Q
        return (Q @ self.postings).tocsr()

    def search(
        self,
        queries: Any,
        k: int,
        shortlist: int | None = None,
        threshold: float | None = None,
        dense_queries: Any | None = None,
        timings: dict[str, float] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows per query: ``(scores, ids)``, each ``m x k``, best first.

        Args:
            queries: ``m x d`` sparse query codes.
            k: Results per query (``<= n``).
            shortlist: Candidates kept after the sparse scores for re-ranking (default ``k``).
            threshold: Re-rank only rows whose sparse score is ``> threshold`` (``None``: any
                row), completed to ``k`` with the next best sparse scores.
            dense_queries: ``m x e`` dense query vectors; with the index's ``dense``, the
                shortlist is re-ranked by exact dense inner products (returned scores are
                those); otherwise the sparse scores rank (exactly the top-k of ``Q D^T``).
            timings: A dict to which the seconds of ``scoring``, ``topk``, ``rerank``,
                ``overhead`` and their ``total`` are added (see the module docstring);
                ``None`` (default): not timed. The results do not depend on it.
        """
        started = time.perf_counter() if timings is not None else 0.0
        parts = None if timings is None else dict.fromkeys(TIMING_PARTS, 0.0)
        k = check_k(k, self.n)
        shortlist = k if shortlist is None else check_k(shortlist, self.n, "shortlist")
        if shortlist < k:
            raise ConfigError(f"shortlist={shortlist} must be >= k={k}")
        rerank = dense_queries is not None
        if rerank:
            if self.dense is None:
                raise ConfigError(
                    "dense_queries given but the index was built without dense vectors"
                )
            dq = as_matrix(dense_queries, "dense queries")
            check_dim(dq, self.dense.shape[1], "dense queries")
        Q = as_matrix(queries, "queries")
        check_dim(Q, self.dim, "queries")
        Q = sp.csr_matrix(Q) if not sp.issparse(Q) else Q
        m = Q.shape[0]
        if rerank and dq.shape[0] != m:
            raise DataError(f"dense queries have {dq.shape[0]} rows, the sparse queries {m}")
        out_scores = np.empty((m, k), dtype=np.float32)
        out_ids = np.empty((m, k), dtype=np.int64)
        search = self._search_compiled if self.kernel == "compiled" else self._search_scipy
        search(Q, k, shortlist, threshold, dq if rerank else None, out_scores, out_ids, parts)
        if parts is not None:
            total = time.perf_counter() - started
            parts["overhead"] = max(0.0, total - parts["scoring"] - parts["topk"] - parts["rerank"])
            parts["total"] = total
            for key, seconds in parts.items():
                timings[key] = timings.get(key, 0.0) + seconds
        return out_scores, out_ids

    def _search_scipy(
        self,
        Q: sp.csr_matrix,
        k: int,
        shortlist: int,
        threshold: float | None,
        dq: np.ndarray | None,
        out_scores: np.ndarray,
        out_ids: np.ndarray,
        parts: dict[str, float] | None,
    ) -> None:
        """:meth:`search` through scipy's sparse product, block by block (module docstring)."""
        block = self.block_rows()
        for start in range(0, Q.shape[0], block):  # bounded memory: the score buffer is block x n
            stop = min(Q.shape[0], start + block)
            rows = Q[start:stop]
            if parts is not None:
                tick = time.perf_counter()
            S = rows @ self.postings
            if dq is not None and threshold is not None and threshold >= 0:
                # only stored scores can pass: select from the sparse product, no n-wide buffer
                if parts is not None:
                    parts["scoring"] += time.perf_counter() - tick
                short = self._select_stored(
                    S.tocsr(),
                    k,
                    shortlist,
                    threshold,
                    dq[start:stop],
                    out_scores[start:stop],
                    out_ids[start:stop],
                    parts,
                )
                if not len(short):
                    continue
                if parts is not None:
                    tick = time.perf_counter()
                S, rows_out = S[short], start + short
            else:
                rows_out = np.arange(start, stop)
            # the sparse product densified: implicit zeros (no common dimension) included
            B = S.toarray()
            if parts is not None:
                parts["scoring"] += time.perf_counter() - tick
            block_scores, block_ids = out_scores[rows_out], out_ids[rows_out]
            self._select(
                B,
                k,
                shortlist,
                threshold,
                None if dq is None else dq[rows_out],
                block_scores,
                block_ids,
                parts,
            )
            out_scores[rows_out], out_ids[rows_out] = block_scores, block_ids

    def _query_scanner(self) -> QueryScanner:
        """The compiled scanner of :meth:`search` (built on first use): a
        :class:`~dsbo.data.posting_lists.PostingScanner`,
        :class:`~dsbo.data.block_max.BlockMaxScanner` or
        :class:`~dsbo.data.clustered_postings.ClusteredScanner`, by ``traversal``."""
        if self._scanner is None and self.traversal == "clustered":
            self._scanner = clustered_postings.ClusteredScanner(
                self.postings, self.clusters, self.threads, self.bound_factor
            )
        elif self._scanner is None and self.traversal == "block-max":
            self._scanner = block_max.BlockMaxScanner(
                self.postings, self.block_size, self.reorder, self.threads, self.bound_factor
            )
        elif self._scanner is None:
            self._scanner = posting_lists.PostingScanner(self.postings, self.threads)
        return self._scanner

    def _dense_query_scanner(self) -> posting_lists.DenseQueryScanner:
        if self._dense_scanner is None:
            self._dense_scanner = posting_lists.DenseQueryScanner(self.postings)
        return self._dense_scanner

    def _search_compiled(
        self,
        Q: sp.csr_matrix,
        k: int,
        shortlist: int,
        threshold: float | None,
        dq: np.ndarray | None,
        out_scores: np.ndarray,
        out_ids: np.ndarray,
        parts: dict[str, float] | None,
    ) -> None:
        """:meth:`search` through the compiled scan: per block of ``chunk`` queries, the scan
        returns each query's shortlist (or, without re-ranking, its top ``k``: a threshold
        then changes nothing); ``scoring`` times the scan, which selects while the scores are
        in cache, ``topk`` the best of the re-ranked shortlists."""
        width = shortlist if dq is not None else k
        cut = threshold if dq is not None else None
        for start in range(0, Q.shape[0], int(self.chunk)):
            stop = min(Q.shape[0], start + int(self.chunk))
            if parts is not None:
                tick = time.perf_counter()
            scores, ids, kept = self._query_scanner().top(Q[start:stop], k, width, cut)
            if parts is not None:
                tock = time.perf_counter()
                parts["scoring"] += tock - tick
            if dq is None:
                out_scores[start:stop], out_ids[start:stop] = scores, ids
                continue
            cand = ids[:, : int(kept.max())]
            dense = self._rerank(cand, dq[start:stop])
            if parts is not None:
                tick = time.perf_counter()
                parts["rerank"] += tick - tock
            dense[np.arange(cand.shape[1])[None, :] >= kept[:, None]] = -np.inf
            out_scores[start:stop], out_ids[start:stop] = best_reranked(cand, dense, k)
            if parts is not None:
                parts["topk"] += time.perf_counter() - tick

    def block_rows(self) -> int:
        """Queries per block: at most ``chunk``, and ``buffer // n`` (at least one)."""
        return max(1, min(int(self.chunk), int(self.buffer) // self.n))

    def _select(
        self,
        B: np.ndarray,
        k: int,
        shortlist: int,
        threshold: float | None,
        dq: np.ndarray | None,
        out_scores: np.ndarray,
        out_ids: np.ndarray,
        parts: dict[str, float] | None = None,
    ) -> None:
        """Threshold, shortlist, (re-rank) and top-k of a block ``B`` (``b x n`` dense scores),
        vectorized over the block; with ``parts``, its seconds are added to ``topk`` and
        ``rerank``."""
        if parts is not None:
            tick = time.perf_counter()
        if (
            dq is None
        ):  # the sparse scores are the ranking: exact top-k (a threshold changes nothing)
            out_scores[:], out_ids[:] = sorted_top(B, k)
            if parts is not None:
                parts["topk"] += time.perf_counter() - tick
            return
        if threshold is None:
            keep = np.full(len(B), shortlist)
        else:  # candidates: the rows scoring > threshold, at most shortlist, at least k
            keep = np.clip(np.count_nonzero(B > threshold, axis=1), k, shortlist)
        width = int(keep.max())
        _, cand = sorted_top(B, width)
        if parts is not None:
            tock = time.perf_counter()
            parts["topk"] += tock - tick
        dense = self._rerank(cand, dq)
        if parts is not None:
            tick = time.perf_counter()
            parts["rerank"] += tick - tock
        dense[np.arange(width)[None, :] >= keep[:, None]] = -np.inf
        out_scores[:], out_ids[:] = best_reranked(cand, dense, k)
        if parts is not None:
            parts["topk"] += time.perf_counter() - tick

    def _select_stored(
        self,
        S: sp.csr_matrix,
        k: int,
        shortlist: int,
        threshold: float,
        dq: np.ndarray,
        out_scores: np.ndarray,
        out_ids: np.ndarray,
        parts: dict[str, float] | None = None,
    ) -> np.ndarray:
        """:meth:`_select` for a threshold ``>= 0`` from the stored entries of the block's sparse
        scores ``S`` (``b x n`` CSR): the candidates, rows scoring ``> threshold``, are among
        them, so no ``b x n`` buffer is filled or partitioned; one ``lexsort`` of the passing
        entries (by query, score descending, row id) gives each query's shortlist. The cost
        follows the non-zero scores, not ``n``. Writes the queries with at least ``k``
        candidates and returns the others (positions in the block), to be completed by the
        next best sparse scores through :meth:`_select`; the results are the same."""
        if parts is not None:
            tick = time.perf_counter()
        b = S.shape[0]
        passing = S.data > threshold
        query = np.repeat(np.arange(b), np.diff(S.indptr))[passing]
        row, score = S.indices[passing], S.data[passing]
        counts = np.bincount(query, minlength=b)
        order = np.lexsort((row, -score, query))
        query, row = query[order], row[order]
        rank = np.arange(len(query)) - (np.cumsum(counts) - counts)[query]
        use = (rank < shortlist) & (counts[query] >= k)
        query, row, rank = query[use], row[use], rank[use]
        done = np.flatnonzero(counts >= k)
        width = int(min(shortlist, counts.max(initial=0)))
        if len(done):
            cand = np.zeros((b, width), dtype=np.int64)
            valid = np.zeros((b, width), dtype=bool)
            cand[query, rank], valid[query, rank] = row, True
            cand, valid = cand[done], valid[done]
            if parts is not None:
                tock = time.perf_counter()
                parts["topk"] += tock - tick
            dense = self._rerank(cand, dq[done])
            if parts is not None:
                tick = time.perf_counter()
                parts["rerank"] += tick - tock
            dense[~valid] = -np.inf
            out_scores[done], out_ids[done] = best_reranked(cand, dense, k)
        if parts is not None:
            parts["topk"] += time.perf_counter() - tick
        return np.flatnonzero(counts < k)

    def _rerank(self, cand: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """Dense inner products ``<dense[cand[i, l]], dq[i]>`` (``b x L``, float32;
        :func:`~dsbo.data.rerank.gathered_dots`, within ``buffer`` entries without numba)."""
        return gathered_dots(self.dense, cand, dq, int(self.buffer))


__all__ = [
    "KERNELS",
    "TIMING_PARTS",
    "DenseIndex",
    "FaissFlatIndex",
    "FaissIVFIndex",
    "SparseIndex",
    "TorchDenseIndex",
    "top_k_rows",
]
