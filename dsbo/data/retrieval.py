r"""Maximum-inner-product search over sparse embeddings: an inverted index on scipy sparse
matrices (Paria thesis, section 5.4, Algorithm 5.1 and figure 5.2), with dense baselines.

:class:`SparseIndex` stores the database :math:`D` (``n x d``) as its transpose in CSR form:
row :math:`j` of ``postings`` is the list of database rows active in dimension :math:`j` with
their values (the inverted index). A batch of sparse queries :math:`Q` (CSR, ``m x d``) is
scored by one sparse-sparse product :math:`S = Q D^T` that visits, for each query, only the
posting lists of its non-zero dimensions: :math:`\sum_j [q_j \ne 0] n_j` multiply-adds, whose
expectation per database row is the FLOPs per row :math:`\sum_j p_j^2` (eq. 5.1-5.2). Then, per
query,

1. **threshold**: keep the scores ``> threshold`` (``None`` keeps every row with a stored score);
2. **top-k**: the ``shortlist`` best of them (``numpy.argpartition``, no full sort);
3. **re-rank** the shortlist exactly with dense vectors (``dense``: e.g. the unit-norm
   pre-activations of the same network; without them the sparse scores, which are exact
   inner products of the sparse codes) and return the ``k`` best.

With ``threshold=None`` the result is exactly the dense top-k of :math:`Q D^T` (rows with no
common non-zero dimension score exactly 0; they enter the list, in row order, when fewer than
``k`` rows score above 0; ties are broken by row id).

Baselines with the same ``search(queries, k) -> (scores, ids)`` interface:
:class:`DenseIndex` (one BLAS matmul + ``argpartition``), :class:`TorchDenseIndex`
(``torch.matmul`` + ``torch.topk``), :class:`FaissFlatIndex` (faiss ``IndexFlatIP``, the exact
scan a user would pick) and :class:`FaissIVFIndex` (faiss ``IndexIVFFlat``, inverted-file
clustering, approximate). faiss comes with the ``retrieval`` extra
(``pip install -e ".[retrieval]"``).

Bad input raises :class:`~dsbo.errors.DataError` (NaN/inf rows named, zero rows, a dimension
mismatch between the index and the queries) or :class:`~dsbo.errors.ConfigError` (``k`` larger
than the database, a non-positive ``k`` or ``shortlist``), before any search runs.

Example:
    >>> index = SparseIndex(codes, dense=dense_vectors)
    >>> scores, ids = index.search(query_codes, k=10, shortlist=1000, threshold=0.25,
    ...                            dense_queries=dense_query_vectors)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from dsbo.errors import ConfigError, DataError


def _as_matrix(values: Any, what: str, dtype: type = np.float32) -> np.ndarray | sp.csr_matrix:
    """``values`` (ndarray, tensor or scipy sparse) as a 2-D float matrix; NaN/inf rows named."""
    if sp.issparse(values):
        matrix = sp.csr_matrix(values, dtype=dtype)
        data = matrix.data
        if not np.isfinite(data).all():
            bad_entries = np.flatnonzero(~np.isfinite(data))
            rows = np.unique(np.searchsorted(matrix.indptr, bad_entries, side="right") - 1)
            raise DataError(f"{what} has NaN or inf in rows {rows[:10].tolist()}{' ...' if len(rows) > 10 else ''}")
    else:
        if isinstance(values, torch.Tensor):
            values = values.detach().cpu().numpy()
        matrix = np.asarray(values, dtype=dtype)
        if matrix.ndim == 1:
            matrix = matrix[None, :]
        if matrix.ndim != 2:
            raise DataError(f"{what} must be a 2-D matrix (rows x dimensions), got shape {matrix.shape}")
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            rows = np.flatnonzero(~finite)
            raise DataError(f"{what} has NaN or inf in rows {rows[:10].tolist()}{' ...' if len(rows) > 10 else ''}")
    if matrix.shape[0] == 0:
        raise DataError(f"{what} has zero rows")
    if matrix.shape[1] == 0:
        raise DataError(f"{what} has zero columns")
    return matrix


def _check_k(k: int, n: int, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"{name} must be a positive integer, got {k!r}")
    if k > n:
        raise ConfigError(f"{name}={k} is larger than the database ({n} rows)")
    return int(k)


def _check_dim(queries: Any, dim: int, what: str) -> None:
    if queries.shape[1] != dim:
        raise DataError(f"{what} have {queries.shape[1]} dimensions, the index has {dim}")


def top_k_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top ``k`` of a dense ``m x n`` score matrix, sorted descending (argpartition)."""
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(part, order, axis=1)


class SparseIndex:
    """Inverted index over sparse codes with threshold, top-k shortlist and dense re-ranking.

    Args:
        codes: ``n x d`` database codes (scipy sparse, ndarray or tensor; zeros are not stored).
        dense: Optional ``n x e`` dense vectors of the same rows for exact re-ranking.
    """

    #: Queries scored per sparse product (the score block is at most ``chunk x n``).
    chunk = 64

    def __init__(self, codes: Any, dense: Any | None = None) -> None:
        matrix = _as_matrix(codes, "index codes")
        matrix = sp.csr_matrix(matrix) if not sp.issparse(matrix) else matrix
        matrix.eliminate_zeros()
        self.n, self.dim = matrix.shape
        #: ``d x n`` CSR: row j lists the database rows active in dimension j (the inverted index).
        self.postings = matrix.T.tocsr()
        self.postings.sort_indices()
        self.dense = None
        if dense is not None:
            self.dense = np.ascontiguousarray(_as_matrix(dense, "index dense vectors"))
            if self.dense.shape[0] != self.n:
                raise DataError(f"index dense vectors have {self.dense.shape[0]} rows, the codes {self.n}")

    @property
    def nnz(self) -> int:
        return int(self.postings.nnz)

    def flops_per_row(self) -> float:
        r"""Plug-in :math:`\sum_j \bar p_j^2` of the database (expected multiply-adds per row and query)."""
        p = np.diff(self.postings.indptr) / self.n
        return float((p**2).sum())

    def dense_query_scores(self, w: np.ndarray, dims: np.ndarray | None = None, hits: bool = False) -> Any:
        """Scores ``D w`` of one dense query through the posting lists of ``dims`` (default:
        every dimension; exact), accumulated into a length-``n`` array (``numpy.bincount``):
        the cost is the number of posting entries visited plus ``n``, not ``n d``. With
        ``hits``, also the sorted ids of the rows that share a dimension with the query (the
        only rows that can score non-zero)."""
        w = np.asarray(w, dtype=np.float64).reshape(-1)
        if len(w) != self.dim:
            raise DataError(f"the query has {len(w)} dimensions, the index has {self.dim}")
        P = self.postings
        if dims is None:
            sub, weights = P, w
        else:
            dims = np.asarray(dims, dtype=np.int64)
            sub, weights = P[dims], w[dims]
        counts = np.diff(sub.indptr)
        scores = np.bincount(sub.indices, weights=sub.data * np.repeat(weights, counts), minlength=self.n)
        if not hits:
            return scores
        touched = np.zeros(self.n, dtype=bool)
        touched[sub.indices] = True
        return scores, np.flatnonzero(touched)

    def scores(self, queries: Any) -> sp.csr_matrix:
        """``m x n`` sparse scores :math:`Q D^T` through the posting lists."""
        Q = _as_matrix(queries, "queries")
        _check_dim(Q, self.dim, "queries")
        Q = sp.csr_matrix(Q) if not sp.issparse(Q) else Q
        return (Q @ self.postings).tocsr()

    def search(
        self,
        queries: Any,
        k: int,
        shortlist: int | None = None,
        threshold: float | None = None,
        dense_queries: Any | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows per query: ``(scores, ids)``, each ``m x k``, best first.

        Args:
            queries: ``m x d`` sparse query codes.
            k: Results per query (``<= n``).
            shortlist: Candidates kept after the sparse scores for re-ranking (default ``k``).
            threshold: Keep only sparse scores ``> threshold`` (``None``: keep all).
            dense_queries: ``m x e`` dense query vectors; with the index's ``dense``, the
                shortlist is re-ranked by exact dense inner products (returned scores are
                those); otherwise by the sparse scores.
        """
        k = _check_k(k, self.n)
        shortlist = k if shortlist is None else _check_k(shortlist, self.n, "shortlist")
        if shortlist < k:
            raise ConfigError(f"shortlist={shortlist} must be >= k={k}")
        rerank = dense_queries is not None
        if rerank:
            if self.dense is None:
                raise ConfigError("dense_queries given but the index was built without dense vectors")
            dq = _as_matrix(dense_queries, "dense queries")
            _check_dim(dq, self.dense.shape[1], "dense queries")
        Q = _as_matrix(queries, "queries")
        _check_dim(Q, self.dim, "queries")
        Q = sp.csr_matrix(Q) if not sp.issparse(Q) else Q
        m = Q.shape[0]
        if rerank and dq.shape[0] != m:
            raise DataError(f"dense queries have {dq.shape[0]} rows, the sparse queries {m}")
        out_scores = np.empty((m, k), dtype=np.float32)
        out_ids = np.empty((m, k), dtype=np.int64)
        for start in range(0, m, self.chunk):  # bounded memory: S is up to chunk x n
            stop = min(m, start + self.chunk)
            S = (Q[start:stop] @ self.postings).tocsr()
            self._select(S, k, shortlist, threshold, dq[start:stop] if rerank else None,
                         out_scores[start:stop], out_ids[start:stop])
        return out_scores, out_ids

    def _select(self, S: sp.csr_matrix, k: int, shortlist: int, threshold: float | None,
                dq: np.ndarray | None, out_scores: np.ndarray, out_ids: np.ndarray) -> None:
        """Threshold, shortlist, (re-rank) and top-k of each row of the score block ``S``."""
        rerank = dq is not None
        indptr, indices, data = S.indptr, S.indices, S.data
        for i in range(S.shape[0]):
            cols, vals = indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]]
            if threshold is not None:
                keep = vals > threshold
                cols, vals = cols[keep], vals[keep]
            if len(cols) > shortlist:
                part = np.argpartition(-vals, shortlist - 1)[:shortlist]
                cols, vals = cols[part], vals[part]
            if len(cols) < k or (threshold is None and vals.min() < 0):
                # rows with no common dimension score exactly 0: they outrank negative scores
                cols, vals = self._pad(cols, vals, k, indices[indptr[i]:indptr[i + 1]])
            if rerank:
                vals = self.dense[cols] @ dq[i]
            order = np.lexsort((cols, -vals))[:k]  # best first, ties by row id
            out_scores[i], out_ids[i] = vals[order], cols[order]

    def _pad(self, cols: np.ndarray, vals: np.ndarray, k: int, scored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Append up to ``k`` rows without a stored score (score 0), in row order."""
        taken = np.zeros(self.n, dtype=bool)
        taken[scored] = True
        taken[cols] = True
        extra = np.flatnonzero(~taken)[: k - len(cols)]
        return np.concatenate([cols, extra]), np.concatenate([vals, np.zeros(len(extra), dtype=vals.dtype)])


class DenseIndex:
    """Exact dense scan: one BLAS matmul ``Q D^T`` and a row-wise ``argpartition``."""

    def __init__(self, vectors: Any) -> None:
        self.vectors = np.ascontiguousarray(_as_matrix(vectors, "index vectors"))
        self.n, self.dim = self.vectors.shape

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = _check_k(k, self.n)
        Q = _as_matrix(queries, "queries")
        Q = Q.toarray() if sp.issparse(Q) else Q
        _check_dim(Q, self.dim, "queries")
        return top_k_rows(Q @ self.vectors.T, k)


class TorchDenseIndex:
    """Exact dense scan in torch: ``Q @ D.T`` and ``torch.topk``."""

    def __init__(self, vectors: Any) -> None:
        self.vectors = torch.as_tensor(np.ascontiguousarray(_as_matrix(vectors, "index vectors")))
        self.n, self.dim = self.vectors.shape

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = _check_k(k, self.n)
        Q = _as_matrix(queries, "queries")
        Q = torch.as_tensor(Q.toarray() if sp.issparse(Q) else Q)
        _check_dim(Q, self.dim, "queries")
        values, ids = torch.topk(Q @ self.vectors.T, k, dim=1)
        return values.numpy(), ids.numpy()


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ConfigError('faiss is not installed: pip install -e ".[retrieval]" (faiss-cpu)') from exc
    return faiss


class FaissFlatIndex:
    """faiss ``IndexFlatIP``: the exact inner-product scan."""

    def __init__(self, vectors: Any) -> None:
        faiss = _faiss()
        X = np.ascontiguousarray(_as_matrix(vectors, "index vectors"))
        self.n, self.dim = X.shape
        self.index = faiss.IndexFlatIP(self.dim)
        self.index.add(X)

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = _check_k(k, self.n)
        Q = _as_matrix(queries, "queries")
        Q = np.ascontiguousarray(Q.toarray() if sp.issparse(Q) else Q)
        _check_dim(Q, self.dim, "queries")
        return self.index.search(Q, k)


class FaissIVFIndex:
    """faiss ``IndexIVFFlat`` (inner product): k-means into ``nlist`` cells, ``nprobe`` cells
    scanned per query. Approximate; ``nprobe = nlist`` is exact."""

    def __init__(self, vectors: Any, nlist: int = 256, nprobe: int = 8, seed: int = 0) -> None:
        faiss = _faiss()
        X = np.ascontiguousarray(_as_matrix(vectors, "index vectors"))
        self.n, self.dim = X.shape
        nlist = _check_k(nlist, self.n, "nlist")
        self.quantizer = faiss.IndexFlatIP(self.dim)
        self.index = faiss.IndexIVFFlat(self.quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        self.index.cp.seed = seed
        self.index.train(X)
        self.index.add(X)
        self.index.nprobe = _check_k(nprobe, nlist, "nprobe")

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = _check_k(k, self.n)
        Q = _as_matrix(queries, "queries")
        Q = np.ascontiguousarray(Q.toarray() if sp.issparse(Q) else Q)
        _check_dim(Q, self.dim, "queries")
        return self.index.search(Q, k)


__all__ = ["DenseIndex", "FaissFlatIndex", "FaissIVFIndex", "SparseIndex", "TorchDenseIndex", "top_k_rows"]
