r"""Pool problems: optimize over a finite set of candidates (rows of a feature matrix).

Many BO tasks choose among existing items (molecules in a library, documents, configurations
already built) rather than points of a box. A pool problem holds ``N`` candidate rows
:math:`c_1, \dots, c_N \in \mathbb R^d` (dense or scipy sparse) and their objective values;
a point is valid only if it is one of the rows. Two sources:

- **a file**: ``features`` is a ``.npy`` array (``N x d``) or a scipy ``.npz`` sparse matrix
  (``scipy.sparse.save_npz``), ``values`` a ``.npy`` vector of ``N`` objective values
  (maximization sense);
- **generated** (no ``features``): ``size`` sparse unit-norm codes in ``dim`` dimensions,
  ``density * dim`` active dimensions per row drawn uniformly (balanced activations, what the
  FLOPs regularizer aims for; draws with replacement, so a row may have fewer), non-negative
  values; the objective is linear in the code, :math:`f(c) = \langle w^*, c\rangle` with
  :math:`w^* \sim \mathcal N(0, I_d)` from the ``seed``.

The box of the problem is the range of each column (so :meth:`Problem.validate` still applies);
the default point is row 0; the optimal value is the best value in the pool. ``evaluate``
accepts only rows of the pool (found by a random-projection hash and checked exactly; a
``ProblemError`` names the first row that is not a candidate). :meth:`PoolProblem.round_to_domain`
maps a point of the box to the **nearest candidate** (Euclidean), so a campaign's Sobol initial
design becomes a set of pool rows.

Proposals come from the ``pool`` policy (:mod:`dsbo.acquisition.pool`), with the
``sparse-linear`` surrogate (:mod:`dsbo.surrogates.sparse_linear`).

Example:
    >>> problem = get_problem("pool", size=100_000, dim=256, density=0.01, seed=0)
    >>> problem.pool.size, problem.dim
    (100000, 256)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from botorch.test_functions.base import BaseTestProblem
from torch import Tensor

from dsbo.errors import ConfigError, DataError, ProblemError
from dsbo.problems.base import Problem
from dsbo.problems.registry import register_problem

#: Rows compared per chunk when snapping points to their nearest candidate.
CHUNK = 65_536


class CandidatePool:
    """``N`` candidate rows (CSR, float64) and their values, with exact row lookup.

    Args:
        features: ``N x d`` matrix (ndarray, tensor or scipy sparse).
        values: ``N`` objective values (maximization sense).
        name: For error messages (e.g. the file).
    """

    def __init__(self, features: object, values: object, name: str = "pool") -> None:
        if sp.issparse(features):
            matrix = sp.csr_matrix(features, dtype=np.float64)
            bad = ~np.isfinite(matrix.data)
            if bad.any():
                rows = np.unique(
                    np.searchsorted(matrix.indptr, np.flatnonzero(bad), side="right") - 1
                )
                raise DataError(f"{name}: features have NaN or inf in rows {rows[:10].tolist()}")
        else:
            dense = np.asarray(
                features.detach().cpu() if isinstance(features, Tensor) else features,
                dtype=np.float64,
            )
            if dense.ndim != 2:
                raise DataError(
                    f"{name}: features must be a 2-D matrix (rows x dimensions), got shape {dense.shape}"
                )
            finite = np.isfinite(dense).all(axis=1)
            if not finite.all():
                raise DataError(
                    f"{name}: features have NaN or inf in rows {np.flatnonzero(~finite)[:10].tolist()}"
                )
            matrix = sp.csr_matrix(dense)
        if matrix.shape[0] == 0:
            raise DataError(f"{name}: the pool has zero rows")
        if matrix.shape[1] == 0:
            raise DataError(f"{name}: the pool has zero columns")
        values = np.asarray(
            values.detach().cpu() if isinstance(values, Tensor) else values, dtype=np.float64
        ).reshape(-1)
        if len(values) != matrix.shape[0]:
            raise DataError(f"{name}: {len(values)} values for {matrix.shape[0]} candidate rows")
        if not np.isfinite(values).all():
            raise DataError(
                f"{name}: values are NaN or inf in rows {np.flatnonzero(~np.isfinite(values))[:10].tolist()}"
            )
        matrix.sum_duplicates()
        matrix.sort_indices()
        self.name = name
        self.features = matrix
        self.values = values
        rng = np.random.default_rng(12345)
        self._projection = rng.standard_normal(matrix.shape[1])
        keys = matrix @ self._projection
        self._order = np.argsort(keys, kind="stable")
        self._keys = keys[self._order]
        self._sq_norms = np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel()

    @property
    def size(self) -> int:
        return int(self.features.shape[0])

    @property
    def dim(self) -> int:
        return int(self.features.shape[1])

    def dense(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """The rows ``rows`` as a dense ``len(rows) x d`` float64 array."""
        return self.features[np.asarray(rows, dtype=np.int64)].toarray()

    def rows_of(self, X: Tensor | np.ndarray) -> np.ndarray:
        """The pool row of each row of ``X`` (``-1`` where ``X`` is not a candidate)."""
        X = np.asarray(X.detach().cpu() if isinstance(X, Tensor) else X, dtype=np.float64).reshape(
            -1, self.dim
        )
        keys = X @ self._projection
        tol = 1e-9 * (1.0 + np.abs(keys))
        lo = np.searchsorted(self._keys, keys - tol, side="left")
        hi = np.searchsorted(self._keys, keys + tol, side="right")
        out = np.full(len(X), -1, dtype=np.int64)
        # every candidate row whose key matches, compared with its point in one gather
        owner = np.repeat(np.arange(len(X)), hi - lo)
        rows = self._order[
            np.concatenate(
                [np.arange(a, b) for a, b in zip(lo, hi, strict=True)] or [np.zeros(0, np.int64)]
            )
        ]
        if len(rows):
            equal = (self.features[rows].toarray() == X[owner]).all(axis=1)
            for i, row in zip(
                owner[equal][::-1], rows[equal][::-1], strict=True
            ):  # the first match wins
                out[i] = row
        return out

    def nearest(self, X: Tensor | np.ndarray) -> np.ndarray:
        """The pool row nearest (Euclidean) to each row of ``X``."""
        X = np.asarray(X.detach().cpu() if isinstance(X, Tensor) else X, dtype=np.float64).reshape(
            -1, self.dim
        )
        best = np.full(len(X), np.inf)
        arg = np.zeros(len(X), dtype=np.int64)
        for start in range(0, self.size, CHUNK):
            block = self.features[start : start + CHUNK]
            d2 = self._sq_norms[start : start + CHUNK, None] - 2 * (
                block @ X.T
            )  # + ||x||^2, constant per column
            j = d2.argmin(axis=0)
            better = d2[j, np.arange(len(X))] < best
            best[better] = d2[j, np.arange(len(X))][better]
            arg[better] = start + j[better]
        return arg


class PoolTestProblem(BaseTestProblem):
    """The pool as a BoTorch test problem: ``f(x)`` is the value of the candidate row ``x``."""

    _is_minimization_by_default = False

    def __init__(self, pool: CandidatePool, noise_std: float | None = None) -> None:
        self.pool = pool
        self.dim = pool.dim
        lower = pool.features.min(axis=0).toarray().ravel()
        upper = pool.features.max(axis=0).toarray().ravel()
        upper = np.where(upper > lower, upper, lower + 1.0)
        self._bounds = list(zip(lower.tolist(), upper.tolist(), strict=True))
        self.continuous_inds = list(range(self.dim))
        self.discrete_inds, self.categorical_inds = [], []
        super().__init__(noise_std=noise_std)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        rows = self.pool.rows_of(X)
        missing = np.flatnonzero(rows < 0)
        if len(missing):
            raise ProblemError(
                f"{self.pool.name}: row {int(missing[0])} of X is not a candidate of the pool"
            )
        return torch.as_tensor(self.pool.values[rows], dtype=X.dtype)


class PoolProblem(Problem):
    """A :class:`Problem` over the rows of a :class:`CandidatePool` (module docstring)."""

    @property
    def pool(self) -> CandidatePool:
        return self.test_problem.pool

    def evaluate(self, X: Tensor, noise: bool = True) -> Tensor:
        """Values of the candidate rows ``X`` (``n x 1``); a ``ProblemError`` names the first row
        of ``X`` that is not a candidate (no snapping: that is :meth:`round_to_domain`'s job)."""
        X = self.validate(X)
        return self.test_problem(X, noise=noise).to(torch.double).unsqueeze(-1)

    def round_to_domain(self, X: Tensor) -> Tensor:
        """The nearest candidate of each row of ``X`` (``... x d``)."""
        X = torch.as_tensor(X, dtype=torch.double)
        flat = X.reshape(-1, self.dim)
        rows = self.pool.nearest(flat)
        return torch.as_tensor(self.pool.dense(rows), dtype=torch.double).reshape(X.shape)


def generate_pool(
    size: int, dim: int, density: float, seed: int
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``size x dim`` sparse unit-norm non-negative codes with ``round(density * dim)``
    uniformly drawn active dimensions per row, and linear values ``c^T w*`` (module docstring)."""
    rng = np.random.default_rng([seed, 17])
    k = max(1, round(density * dim))
    rows = np.repeat(np.arange(size), k)
    cols = rng.integers(0, dim, size=size * k)
    vals = np.abs(rng.standard_normal(size * k)) + 0.1
    codes = sp.csr_matrix((vals, (rows, cols)), shape=(size, dim))
    codes.sum_duplicates()
    norms = np.sqrt(np.asarray(codes.multiply(codes).sum(axis=1)).ravel())
    codes = sp.diags(1.0 / norms) @ codes
    w_star = rng.standard_normal(dim)
    return codes.tocsr(), codes @ w_star


def _load(path: str | Path, what: str) -> object:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"pool: options.{what}={str(path)!r} is not a file")
    try:
        if path.suffix == ".npz":
            return sp.load_npz(path)
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"pool: cannot read {what} file {str(path)!r}: {exc}") from exc
    raise ConfigError(
        f"pool: options.{what}={str(path)!r} must be a .npy array or a scipy .npz sparse matrix"
    )


@register_problem(
    "pool", "a finite candidate pool (feature-matrix file, or generated sparse codes)"
)
def make_pool_problem(
    features: str | None = None,
    values: str | None = None,
    size: int = 100_000,
    dim: int = 256,
    density: float = 0.01,
    seed: int = 0,
    noise_std: float | None = None,
) -> PoolProblem:
    """A pool problem (module docstring).

    Args:
        features: ``.npy`` (dense) or ``.npz`` (scipy sparse) file of the ``N x d`` candidates;
            omitted: generated codes.
        values: ``.npy`` file of the ``N`` objective values (required with ``features``).
        size, dim, density, seed: The generated pool (``size`` rows, ``dim`` dimensions,
            ``density * dim`` active dimensions per row).
        noise_std: Observation noise added by ``evaluate``.
    """
    if features is not None:
        if values is None:
            raise ConfigError(
                "pool: options.values (a .npy file of objective values) is required with options.features"
            )
        pool = CandidatePool(
            _load(features, "features"), _load(values, "values"), name=f"pool {features}"
        )
    else:
        if values is not None:
            raise ConfigError("pool: options.values needs options.features (the candidates)")
        for name, value in (("size", size), ("dim", dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"pool: options.{name} must be a positive integer, got {value!r}")
        if not (isinstance(density, int | float) and 0 < density <= 1):
            raise ConfigError(f"pool: options.density must be in (0, 1], got {density!r}")
        codes, vals = generate_pool(size, dim, float(density), int(seed))
        pool = CandidatePool(codes, vals, name="pool")
    test_problem = PoolTestProblem(pool, noise_std=noise_std)
    return PoolProblem(
        name="pool",
        test_problem=test_problem,
        default_point=torch.as_tensor(pool.dense([0])[0]),
        relevant_dims=tuple(range(pool.dim)),
        optimal_value=float(pool.values.max()),
        noise_std=noise_std,
        description=f"{pool.size} candidates in {pool.dim} dimensions",
    )


__all__ = ["CandidatePool", "PoolProblem", "PoolTestProblem", "generate_pool", "make_pool_problem"]
