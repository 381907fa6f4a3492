r"""Separable NMF by successive projection: the representative series of HiReD.

HiReD (Paria thesis, section 6.4 "Summary vector", section 6.8.2) feeds every forecast the
histories :math:`Z_\mathcal H` of :math:`R` representative series, chosen by the separable NMF
algorithm of Gillis and Vavasis: the data matrix is assumed to lie in the convex cone of a few
of its own columns, :math:`Y = Z W + \epsilon` with the columns of :math:`Z` a subset of those
of :math:`Y`. :func:`successive_projection` returns those columns.

Example:
    >>> M = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]])
    >>> successive_projection(M, 2).tolist()
    [0, 1]
"""

from __future__ import annotations

import numpy as np

from dsbo.errors import ConfigError, DataError


def successive_projection(M: np.ndarray, rank: int, normalize: bool = True) -> np.ndarray:
    r"""Column indices chosen by the successive projection algorithm (separable NMF).

    Gillis & Vavasis, "Fast and robust recursive algorithms for separable nonnegative matrix
    factorization" (IEEE TPAMI 2014), Algorithm 1: under separability
    :math:`M = W [I_r, H'] \Pi` with the columns of :math:`H'` in the simplex, the columns of
    :math:`W` are columns of :math:`M`; SPA recovers them by picking the column of largest
    :math:`\ell_2` norm and projecting every column on the orthogonal complement of the pick,
    ``rank`` times. With ``normalize`` the columns are first scaled to unit :math:`\ell_1` norm
    (the normalization that makes nonnegative data separable with simplex weights). Ties go to
    the lowest index; all-zero columns are never preferred. scikit-learn's NMF is not separable
    (its factors are not columns of the data), hence this implementation.

    Args:
        M: ``T x N`` data, series in columns (the thesis' :math:`Y`, training range only).
        rank: ``R``, how many columns to pick (``<= N``).

    Returns:
        ``R`` distinct column indices in the order picked.
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2:
        raise DataError(f"successive_projection: M must be a T x N matrix, got shape {M.shape}")
    if not np.isfinite(M).all():
        raise DataError("successive_projection: M holds NaN or inf")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank <= M.shape[1]:
        raise ConfigError(
            f"successive_projection: rank={rank!r} must be an integer in [0, {M.shape[1]}]"
        )
    R = M.copy()
    if normalize:
        col = np.abs(R).sum(0)
        R[:, col > 0] /= col[col > 0]
    chosen: list[int] = []
    for _ in range(rank):
        norms = (R**2).sum(0)
        norms[chosen] = -np.inf
        k = int(np.argmax(norms))
        u = R[:, k]
        nu = float(u @ u)
        if nu > 0:
            R -= np.outer(u, u @ R) / nu
        chosen.append(k)
    return np.array(chosen, dtype=np.int64)


__all__ = ["successive_projection"]
