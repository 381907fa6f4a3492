r"""Exact dense re-ranking of a shortlist: the inner products :math:`\langle v_{c_{il}}, u_i
\rangle` of each query's dense vector :math:`u_i` with the dense vectors of its shortlisted rows
:math:`c_{i1}, \dots, c_{iL}` (Paria thesis, section 5.4: the sparse shortlist is re-ranked by a
dense model).

The compiled kernel (numba, :func:`~dsbo.data.posting_lists.available`) reads each shortlisted
row once, straight from the database matrix, and sums its products with a vectorized reduction
(reassociated, fused multiply-adds): no ``b x L x e`` gathered copy is made, which on issue 60's
201k-row benchmark (1024-dimensional vectors, shortlists of 100) cost about a tenth of a query.
Without numba, the rows are gathered block by block (at most ``buffer`` entries) and multiplied
by ``numpy.matmul``. Both are float32 sums of the same products; their roundings may differ in
the last bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dsbo.data.posting_lists import available

try:
    import numba
except ImportError:  # pragma: no cover - the retrieval extra installs it
    numba = None


def _dots(dense: Any, cand: Any, queries: Any, out: Any) -> None:  # pragma: no cover - compiled
    """``out[i, l] = <dense[cand[i, l]], queries[i]>``."""
    e = dense.shape[1]
    for i in range(cand.shape[0]):
        query = queries[i]
        for slot in range(cand.shape[1]):
            row = dense[cand[i, slot]]
            total = np.float32(0.0)
            for t in range(e):
                total += row[t] * query[t]
            out[i, slot] = total


if numba is not None:
    _dots = numba.njit(nogil=True, cache=True, fastmath={"reassoc", "contract"})(_dots)


def gathered_dots(
    dense: np.ndarray, cand: np.ndarray, queries: np.ndarray, buffer: int = 1 << 22
) -> np.ndarray:
    """``b x L`` float32 inner products of ``queries`` (``b x e``) with the rows ``cand`` (``b x
    L`` ids) of ``dense`` (``n x e``); without numba, gathered ``buffer`` entries at a time."""
    b, width = cand.shape
    out = np.empty((b, width), dtype=np.float32)
    if available():
        _dots(dense, np.ascontiguousarray(cand), np.ascontiguousarray(queries), out)
        return out
    e = dense.shape[1]
    step = max(1, int(buffer) // max(1, width * e))
    for start in range(0, b, step):
        stop = min(b, start + step)
        out[start:stop] = np.matmul(dense[cand[start:stop]], queries[start:stop, :, None])[..., 0]
    return out


__all__ = ["gathered_dots"]
