"""Checks of what the retrieval indexes are given, before any search runs.

Every index of :mod:`dsbo.data.retrieval` and :mod:`dsbo.data.dense_indexes` takes its database,
queries and counts through these functions, so bad input fails the same way everywhere:
:class:`~dsbo.errors.DataError` for the data (NaN or inf, with the rows named; zero rows or
columns; a dimension mismatch between the index and the queries) and
:class:`~dsbo.errors.ConfigError` for the counts (a non-positive ``k`` or ``shortlist``, or one
larger than the database).

Example:
    >>> as_matrix([[1.0, 2.0]], "queries").shape
    (1, 2)
    >>> check_k(3, n=10)
    3
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from dsbo.errors import ConfigError, DataError


def as_matrix(values: Any, what: str, dtype: type = np.float32) -> np.ndarray | sp.csr_matrix:
    """``values`` (ndarray, tensor or scipy sparse) as a 2-D float matrix; NaN/inf rows named."""
    if sp.issparse(values):
        matrix = sp.csr_matrix(values, dtype=dtype)
        data = matrix.data
        if not np.isfinite(data).all():
            bad_entries = np.flatnonzero(~np.isfinite(data))
            rows = np.unique(np.searchsorted(matrix.indptr, bad_entries, side="right") - 1)
            raise DataError(
                f"{what} has NaN or inf in rows {rows[:10].tolist()}{' ...' if len(rows) > 10 else ''}"
            )
    else:
        if isinstance(values, torch.Tensor):
            values = values.detach().cpu().numpy()
        matrix = np.asarray(values, dtype=dtype)
        if matrix.ndim == 1:
            matrix = matrix[None, :]
        if matrix.ndim != 2:
            raise DataError(
                f"{what} must be a 2-D matrix (rows x dimensions), got shape {matrix.shape}"
            )
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            rows = np.flatnonzero(~finite)
            raise DataError(
                f"{what} has NaN or inf in rows {rows[:10].tolist()}{' ...' if len(rows) > 10 else ''}"
            )
    if matrix.shape[0] == 0:
        raise DataError(f"{what} has zero rows")
    if matrix.shape[1] == 0:
        raise DataError(f"{what} has zero columns")
    return matrix


def check_k(k: int, n: int, name: str = "k") -> int:
    """``k`` (named ``name`` in the error) as an ``int`` in ``[1, n]``: a count of rows to
    return, or of cells to probe, that the database of ``n`` rows can give."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ConfigError(f"{name} must be a positive integer, got {k!r}")
    if k > n:
        raise ConfigError(f"{name}={k} is larger than the database ({n} rows)")
    return int(k)


def check_dim(queries: Any, dim: int, what: str) -> None:
    """The queries (``what``) have the index's ``dim`` dimensions."""
    if queries.shape[1] != dim:
        raise DataError(f"{what} have {queries.shape[1]} dimensions, the index has {dim}")
