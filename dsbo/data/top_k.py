"""Row-wise top-k selection of score matrices, exact and deterministic.

The retrieval indexes (:mod:`dsbo.data.retrieval`, :mod:`dsbo.data.dense_indexes`) select the
best rows of a block of scores with these, vectorized over the block (no per-query Python loop):

- :func:`top_k_rows`: ``numpy.argpartition`` then a sort of the ``k`` chosen, the dense
  baseline's selection;
- :func:`sorted_top`: the ``k``-th largest value by ``numpy.partition`` and a mask, ties broken
  by row id, so the result is exactly the top-k of a full sort by (score descending, row id);
- :func:`best_reranked`: the ``k`` best of a shortlist after re-ranking by dense scores, ties
  by row id, masked places holding ``-inf``.

Example:
    >>> import numpy as np
    >>> scores, ids = sorted_top(np.array([[0.5, 2.0, 2.0, 1.0]]), k=2)
    >>> scores.tolist(), ids.tolist()
    ([[2.0, 2.0]], [[1, 2]])
"""

from __future__ import annotations

import numpy as np


def top_k_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top ``k`` of a dense ``m x n`` score matrix, sorted descending (argpartition)."""
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(part, order, axis=1)


def best_reranked(cand: np.ndarray, dense: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best re-ranked candidates per row, ``(scores, ids)``: by dense score, ties by
    row id (a sort by id, then a stable sort by score); masked places hold ``-inf``."""
    order = np.argsort(cand, axis=1)
    cand, dense = np.take_along_axis(cand, order, 1), np.take_along_axis(dense, order, 1)
    order = np.argsort(-dense, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dense, order, 1), np.take_along_axis(cand, order, 1)


def sorted_top(B: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top ``k`` of a dense ``b x n`` score matrix, best first, ties by row id (exact
    and deterministic): the ``k``-th largest value by ``numpy.partition``, the rows above it,
    and of the rows equal to it the lowest ids (a cumulative count, only in rows with more ties
    than places)."""
    b, n = B.shape
    kth = (np.partition(B, n - k, axis=1)[:, n - k] if k < n else B.min(axis=1))[:, None]
    chosen = B > kth
    need = k - np.count_nonzero(chosen, axis=1)
    tied = B == kth
    over = np.flatnonzero(np.count_nonzero(tied, axis=1) > need)
    if len(over):
        sub = tied[over]
        sub &= np.cumsum(sub, axis=1, dtype=np.int32) <= need[over, None]
        tied[over] = sub
    chosen |= tied
    ids = np.nonzero(chosen)[1].reshape(b, k)  # row-major: ascending ids within a row
    vals = np.take_along_axis(B, ids, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(ids, order, axis=1)
