r"""Tuning a faiss IVF-PQ index: query time, recall and memory as three objectives.

A real tuning problem in the spirit of the LSH experiment of the Paria thesis (section 2.4,
FALCONN on GloVe: query time, 1 - precision and memory): faiss-cpu's ``IndexIVFPQ`` on a
synthetic clustered embedding set (nothing is downloaded). Each evaluation builds, trains and
queries a real index, so the time objective is measured, not simulated (noisy).

Parameters (integer-valued):

- ``log2_nlist`` in [4, 8]: number of inverted lists (16 .. 256);
- ``log2_nprobe`` in [0, 7]: lists visited per query (1 .. 128, at most ``nlist``);
- ``log2_pq_m`` in [2, 5]: product-quantizer sub-vectors (4 .. 32 bytes per vector, 8 bits each).

Objectives, maximized (the thesis minimizes the three): ``-query_ms`` (milliseconds per query,
one thread, the faster of two passes), ``-(1 - recall@10)`` (against the exact top 10 of
``IndexFlatL2``) and ``-memory_mb`` (the serialized index). The thesis' LSH bounding boxes
become boxes in these units, e.g. ``[[-0.5, 0], [-0.35, 0], [-3, 0]]``.

Data: ``n_base`` points in ``dim`` dimensions around 100 Gaussian cluster centres, and 200
queries from the same mixture, drawn with ``data_seed``. Needs the ``retrieval`` extra
(``pip install -e ".[retrieval]"``).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import torch
from botorch.test_functions.base import MultiObjectiveTestProblem
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.problems.options import check_int
from dsbo.problems.registry import register_problem

PARAMETERS = ("log2_nlist", "log2_nprobe", "log2_pq_m")
BOUNDS = [(4.0, 8.0), (0.0, 7.0), (2.0, 5.0)]
#: k-means iterations of the coarse quantizer and the product quantizer (faiss: 25 / 25).
KMEANS_ITERATIONS = 10
NUM_QUERIES = 200
NUM_CLUSTERS = 100
TOP_K = 10


def _faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ConfigError(
            "problem 'faiss-ivf-tuning' needs faiss-cpu: pip install -e '.[retrieval]'"
        ) from exc
    return faiss


@functools.cache
def embedding_set(
    n_base: int, dim: int, data_seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(base, queries, exact top-10 ids)`` of a clustered Gaussian mixture (float32)."""
    rng = np.random.default_rng(data_seed)
    centres = rng.normal(size=(NUM_CLUSTERS, dim)).astype(np.float32) * 3.0

    def draw(n: int) -> np.ndarray:
        return (centres[rng.integers(NUM_CLUSTERS, size=n)] + rng.normal(size=(n, dim))).astype(
            np.float32
        )

    base, queries = draw(n_base), draw(NUM_QUERIES)
    faiss = _faiss()
    exact = faiss.IndexFlatL2(dim)
    exact.add(base)
    _, truth = exact.search(queries, TOP_K)
    return base, queries, truth


class FaissIVFPQ(MultiObjectiveTestProblem):
    """Build, train and query an ``IndexIVFPQ``; outcomes ``-ms, recall - 1, -MB``."""

    num_objectives = 3
    _ref_point = [-5.0, -1.0, -10.0]

    def __init__(self, n_base: int, dim: int, data_seed: int) -> None:
        self.dim = 3
        self.continuous_inds = []
        self.discrete_inds = [0, 1, 2]
        self._bounds = BOUNDS
        super().__init__()
        self.n_base, self.vector_dim, self.data_seed = n_base, dim, data_seed

    def _evaluate_true(self, X: Tensor) -> Tensor:
        faiss = _faiss()
        faiss.omp_set_num_threads(1)
        base, queries, truth = embedding_set(self.n_base, self.vector_dim, self.data_seed)
        rows = []
        for log2_nlist, log2_nprobe, log2_m in X.reshape(-1, 3).round().long().tolist():
            nlist, m = 2**log2_nlist, 2**log2_m
            quantizer = faiss.IndexFlatL2(self.vector_dim)
            index = faiss.IndexIVFPQ(quantizer, self.vector_dim, nlist, m, 8)
            index.cp.niter = KMEANS_ITERATIONS
            index.pq.cp.niter = KMEANS_ITERATIONS
            index.train(base)
            index.add(base)
            index.nprobe = min(2**log2_nprobe, nlist)
            seconds = []
            for _ in range(2):
                start = time.perf_counter()
                _, found = index.search(queries, TOP_K)
                seconds.append(time.perf_counter() - start)
            recall = np.mean(
                [len(set(f) & set(t)) / TOP_K for f, t in zip(found, truth, strict=True)]
            )
            memory = faiss.serialize_index(index).nbytes / 2**20
            rows.append([-1000.0 * min(seconds) / NUM_QUERIES, recall - 1.0, -memory])
        return torch.tensor(rows, dtype=X.dtype).reshape(*X.shape[:-1], 3)


@register_problem(
    "faiss-ivf-tuning",
    "faiss IVF-PQ index parameters: query time, 1 - recall@10, memory (3 objectives)",
)
def make_faiss_tuning(
    n_base: int = 10_000, dim: int = 64, data_seed: int = 0, target: str = "center"
) -> Problem:
    """faiss ``IndexIVFPQ`` tuning on a synthetic clustered embedding set (see the module doc).

    Args:
        n_base: Indexed vectors (>= 39 x 256, what training the largest ``nlist`` needs).
        dim: Vector dimension (a multiple of 32, so every ``pq_m`` divides it).
        data_seed: Seed of the embedding set.
        target: The default point (``center``: nlist 64, nprobe 8, 8 bytes per vector) or a list.
    """
    n_base = check_int(n_base, "faiss-ivf-tuning: n_base", minimum=39 * 256)
    dim = check_int(dim, "faiss-ivf-tuning: dim", minimum=32)
    if dim % 32:
        raise ConfigError(
            f"faiss-ivf-tuning: dim={dim} must be a multiple of 32 (pq_m up to 32 divides it)"
        )
    seed = check_int(data_seed, "faiss-ivf-tuning: data_seed", minimum=0)
    _faiss()
    f = FaissIVFPQ(n_base, dim, seed)
    default = torch.tensor([6.0, 3.0, 3.0] if target == "center" else target, dtype=torch.double)
    return Problem(
        name="faiss-ivf-tuning",
        test_problem=f,
        default_point=default,
        relevant_dims=(0, 1, 2),
        objective_names=("neg_query_ms", "recall_minus_one", "neg_memory_mb"),
        parameter_names=PARAMETERS,
        integer_dims=(0, 1, 2),
        ref_point=torch.tensor(FaissIVFPQ._ref_point, dtype=torch.double),
        description=make_faiss_tuning.__doc__.strip().split("\n")[0],
        metadata={"n_base": n_base, "dim": dim, "data_seed": seed},
    )


__all__ = ["FaissIVFPQ", "embedding_set", "make_faiss_tuning"]
