"""Dense baselines of the sparse retrieval index: exact scans and faiss.

Each has the interface of :class:`~dsbo.data.retrieval.SparseIndex`'s plain search,
``search(queries, k) -> (scores, ids)``, best first, so that the benchmarks
(``experiments/bench_retrieval.py``) compare like with like (Paria thesis, section 5.4):

- :class:`DenseIndex`: one BLAS matmul :math:`Q D^T` and a row-wise ``argpartition``;
- :class:`TorchDenseIndex`: ``torch.matmul`` and ``torch.topk``;
- :class:`FaissFlatIndex`: faiss ``IndexFlatIP``, the exact scan a user would pick;
- :class:`FaissIVFIndex`: faiss ``IndexIVFFlat``, inverted-file clustering, approximate.

faiss comes with the ``retrieval`` extra (``pip install -e ".[retrieval]"``) and is imported on
first use (:func:`faiss_module`).

Example:
    >>> import numpy as np
    >>> scores, ids = DenseIndex(np.eye(3)).search(np.array([[0.0, 1.0, 0.5]]), k=2)
    >>> ids.tolist()
    [[1, 2]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from dsbo.data.retrieval_checks import as_matrix, check_dim, check_k
from dsbo.data.top_k import top_k_rows
from dsbo.errors import ConfigError


class DenseIndex:
    """Exact dense scan: one BLAS matmul ``Q D^T`` and a row-wise ``argpartition``."""

    def __init__(self, vectors: Any) -> None:
        self.vectors = np.ascontiguousarray(as_matrix(vectors, "index vectors"))
        self.n, self.dim = self.vectors.shape

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = check_k(k, self.n)
        Q = as_matrix(queries, "queries")
        Q = Q.toarray() if sp.issparse(Q) else Q
        check_dim(Q, self.dim, "queries")
        return top_k_rows(Q @ self.vectors.T, k)


class TorchDenseIndex:
    """Exact dense scan in torch: ``Q @ D.T`` and ``torch.topk``."""

    def __init__(self, vectors: Any) -> None:
        self.vectors = torch.as_tensor(np.ascontiguousarray(as_matrix(vectors, "index vectors")))
        self.n, self.dim = self.vectors.shape

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = check_k(k, self.n)
        Q = as_matrix(queries, "queries")
        Q = torch.as_tensor(Q.toarray() if sp.issparse(Q) else Q)
        check_dim(Q, self.dim, "queries")
        values, ids = torch.topk(Q @ self.vectors.T, k, dim=1)
        return values.numpy(), ids.numpy()


def faiss_module() -> Any:
    """faiss, imported on first use (the ``retrieval`` extra), or a ConfigError saying how to
    install it."""
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ConfigError(
            'faiss is not installed: pip install -e ".[retrieval]" (faiss-cpu)'
        ) from exc
    return faiss


class FaissFlatIndex:
    """faiss ``IndexFlatIP``: the exact inner-product scan."""

    def __init__(self, vectors: Any) -> None:
        faiss = faiss_module()
        X = np.ascontiguousarray(as_matrix(vectors, "index vectors"))
        self.n, self.dim = X.shape
        self.index = faiss.IndexFlatIP(self.dim)
        self.index.add(X)

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = check_k(k, self.n)
        Q = as_matrix(queries, "queries")
        Q = np.ascontiguousarray(Q.toarray() if sp.issparse(Q) else Q)
        check_dim(Q, self.dim, "queries")
        return self.index.search(Q, k)


class FaissIVFIndex:
    """faiss ``IndexIVFFlat`` (inner product): k-means into ``nlist`` cells, ``nprobe`` cells
    scanned per query. Approximate; ``nprobe = nlist`` is exact."""

    def __init__(self, vectors: Any, nlist: int = 256, nprobe: int = 8, seed: int = 0) -> None:
        faiss = faiss_module()
        X = np.ascontiguousarray(as_matrix(vectors, "index vectors"))
        self.n, self.dim = X.shape
        nlist = check_k(nlist, self.n, "nlist")
        self.quantizer = faiss.IndexFlatIP(self.dim)
        self.index = faiss.IndexIVFFlat(self.quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        self.index.cp.seed = seed
        self.index.train(X)
        self.index.add(X)
        self.index.nprobe = check_k(nprobe, nlist, "nprobe")

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = check_k(k, self.n)
        Q = as_matrix(queries, "queries")
        Q = np.ascontiguousarray(Q.toarray() if sp.issparse(Q) else Q)
        check_dim(Q, self.dim, "queries")
        return self.index.search(Q, k)
