r"""The ``pool`` policy: Thompson sampling or UCB over a pool of ``10^5 - 10^6`` candidates,
with the argmax as a maximum-inner-product search through an inverted index.

With the ``sparse-linear`` surrogate (:mod:`dsbo.surrogates.sparse_linear`) the posterior of
:math:`f(c) = \phi(c)^\top w` is explicit in the weights, :math:`w \sim \mathcal N(\mu, \Sigma)`,
and the pool's feature matrix :math:`Z` (``N x D``, rows :math:`\phi(c_i)`) is sparse. Then

- **Thompson sampling** (``rule: thompson``) draws :math:`\tilde w \sim \mathcal N(\mu, \Sigma)`
  (:meth:`~dsbo.surrogates.sparse_linear.SparseLinearModel.sample_weights`: one triangular
  solve with the precision's Cholesky factor kept from the fit) and proposes
  :math:`\arg\max_i \langle z_i, \tilde w\rangle`: one MIPS query. Through the
  inverted index (:class:`~dsbo.data.retrieval.SparseIndex`, posting lists of :math:`Z^\top`) it
  costs the posting lists' entries of the query's dimensions (a compiled scan that ranks only
  the rows it touched, ``kernel: compiled``, the default where numba is installed; or
  :math:`\mathrm{nnz}(Z) + N` operations through ``numpy.bincount``, ``kernel: scipy``)
  instead of :math:`N D` for a dense scan; the query
  may be truncated to its ``query_nnz`` largest coordinates :math:`|\tilde w_j|` (fewer posting
  lists visited), the ``shortlist`` best rows of the truncated scores are then **re-ranked
  exactly** with the full :math:`\tilde w`. Without truncation (``query_nnz: null``) the
  sparse scores are exact and the proposal equals the dense scan's argmax.
- **UCB** (``rule: ucb``) maximizes :math:`z^\top\mu + \beta\sqrt{z^\top\Sigma z}`, which is
  not an inner product, but :math:`\sqrt{z^\top\Sigma z} = \max_{\|u\| \le 1} z^\top L u`
  (:math:`\Sigma = L L^\top`), so every query :math:`\mu + \beta L u` scores a *lower bound* of
  the UCB of every row. The shortlist is the union of the top ``shortlist`` rows of the queries
  :math:`\mu` and :math:`\mu \pm \beta \sqrt{\lambda_k} e_k` over the ``ucb_directions``
  leading eigenpairs :math:`(\lambda_k, e_k)` of :math:`\Sigma`; the UCB is computed exactly on
  it. This is a heuristic shortlist (the exact argmax is not guaranteed to be in it);
  ``search: dense`` computes the UCB of every row.
- ``search: dense`` is the baseline: a dense ``N x D`` matrix times :math:`\tilde w` (one BLAS
  matrix-vector product) and ``argmax``.

Rows already evaluated or pending are never proposed again. For ``q > 1``, Thompson sampling
draws ``q`` weight vectors (each contributes its best row not yet taken); UCB takes the ``q``
best distinct rows. The weight draws use the proposal seed (the global RNG is untouched). The
pool's codes and index are built once per pool and feature map and cached in the policy.

The policy needs a pool problem (:mod:`dsbo.problems.pool`) and a ``sparse-linear`` model; the
campaign's initial design is snapped to pool rows by the problem. ``beta`` is the UCB width
(constant; default 2).

Example:
    >>> campaign = Campaign(get_problem("pool", size=1_000_000), surrogate="sparse-linear",
    ...                     acquisition={"name": "pool", "rule": "thompson"})
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from botorch.models.model import Model

from dsbo.acquisition.base import History, OptimizerSettings, Proposal, register_policy
from dsbo.data.retrieval import KERNELS, SparseIndex
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

RULES = ("thompson", "ucb")
SEARCHES = ("index", "dense")


def _positive_int_or_none(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"acquisition.options.{name} must be a positive integer or null, got {value!r}"
        )
    return value


class PoolSearch:
    """The pool's sparse codes, inverted index and (for ``search: dense``) dense matrix."""

    def __init__(self, codes: sp.csr_matrix, dense: bool, kernel: str = "auto") -> None:
        self.codes = codes.astype(np.float32).tocsr()
        self.index = SparseIndex(self.codes, kernel=kernel)
        self.dense = self.codes.toarray() if dense else None

    @property
    def size(self) -> int:
        return self.codes.shape[0]

    def top(
        self, w: np.ndarray, k: int, shortlist: int, query_nnz: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows of ``Z w`` (exact scores, best first) by index search + re-rank."""
        keep = None
        if query_nnz is not None and query_nnz < len(w):
            keep = np.argpartition(-np.abs(w), query_nnz - 1)[:query_nnz]
        shortlist = min(max(shortlist, k), self.size)
        # the shortlist through the posting lists of the kept dimensions (ties by row id)
        ids = (
            self.index.dense_query_top(w, keep, shortlist)[1]
            if shortlist < self.size
            else np.arange(self.size)
        )
        exact = self.codes[ids] @ w.astype(np.float32)  # exact re-rank with the full query
        order = np.lexsort((ids, -exact))[:k]
        return exact[order], ids[order]

    def dense_top(self, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows of ``Z w`` by a dense scan (BLAS matvec + argpartition)."""
        scores = self.dense @ w.astype(np.float32)
        part = np.argpartition(-scores, k - 1)[:k]
        order = np.lexsort((part, -scores[part]))
        return scores[part][order], part[order]


@register_policy(
    "pool", "Thompson sampling / UCB over a candidate pool, argmax by inverted-index MIPS"
)
class PoolPolicy:
    """Thompson sampling or UCB over the rows of a pool problem (module docstring).

    Args:
        rule: ``thompson`` or ``ucb``.
        search: ``index`` (inverted index + exact re-rank) or ``dense`` (full scan).
        shortlist: Rows re-ranked exactly after the index search.
        query_nnz: Coordinates of the query kept for the index search (``null``: all; exact).
        beta: UCB width.
        ucb_directions: Leading eigen-directions of the weight covariance probed by UCB.
        kernel: The index's scan (:class:`~dsbo.data.retrieval.SparseIndex`): ``auto``,
            ``compiled`` or ``scipy``.
        optimizer: Unused (pools are searched, not optimized).
    """

    name = "pool"
    needs_model = True

    def __init__(
        self,
        rule: str = "thompson",
        search: str = "index",
        shortlist: int = 1000,
        query_nnz: int | None = None,
        beta: float = 2.0,
        ucb_directions: int = 4,
        kernel: str = "auto",
        optimizer: OptimizerSettings | None = None,
    ) -> None:
        if rule not in RULES:
            raise ConfigError(
                f"acquisition.options.rule={rule!r}: choose one of {', '.join(RULES)}"
            )
        if search not in SEARCHES:
            raise ConfigError(
                f"acquisition.options.search={search!r}: choose one of {', '.join(SEARCHES)}"
            )
        if kernel not in KERNELS:
            raise ConfigError(
                f"acquisition.options.kernel={kernel!r}: choose one of {', '.join(KERNELS)}"
            )
        if _positive_int_or_none("shortlist", shortlist) is None:
            raise ConfigError("acquisition.options.shortlist must be a positive integer, got null")
        _positive_int_or_none("query_nnz", query_nnz)
        _positive_int_or_none("ucb_directions", ucb_directions)
        if (
            isinstance(beta, bool)
            or not isinstance(beta, int | float)
            or not (math.isfinite(beta) and beta >= 0)
        ):
            raise ConfigError(
                f"acquisition.options.beta must be a finite number >= 0, got {beta!r}"
            )
        self.rule, self.search, self.shortlist, self.query_nnz = rule, search, shortlist, query_nnz
        self.beta, self.ucb_directions, self.kernel = float(beta), int(ucb_directions or 0), kernel
        self._cache: dict[tuple[int, str], PoolSearch] = {}

    def check(self, problem: Problem, q: int) -> None:
        pool = getattr(problem, "pool", None)
        if pool is None:
            raise ConfigError(
                f"acquisition 'pool' needs a pool problem (problem.name: pool), got {problem.name}"
            )
        if problem.num_objectives > 1 or problem.num_constraints:
            raise ConfigError("acquisition 'pool' is single-objective and unconstrained")
        if q > pool.size:
            raise ConfigError(f"q={q} is larger than the pool ({pool.size} rows)")

    def searcher(self, problem: Problem, model: Model) -> PoolSearch:
        """The cached :class:`PoolSearch` of this pool under the model's feature map."""
        feature_map = model.feature_map
        key = (id(problem.pool), feature_map.key)
        if key not in self._cache:
            self._cache[key] = PoolSearch(
                feature_map.codes(problem.pool.features),
                dense=self.search == "dense",
                kernel=self.kernel,
            )
        return self._cache[key]

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        self.check(problem, q)
        if not hasattr(model, "weight_mean") or not hasattr(model, "feature_map"):
            raise ConfigError(
                f"acquisition 'pool' needs the sparse-linear surrogate, got {type(model).__name__}"
            )
        searcher = self.searcher(problem, model)
        if searcher.codes.shape[1] != model.weight_mean.shape[0]:
            raise ConfigError(
                f"the pool's features have {searcher.codes.shape[1]} dimensions, the model's weights {model.weight_mean.shape[0]}"
            )
        seen = [history.X] + ([history.X_pending] if history.X_pending is not None else [])
        taken = (
            set(int(r) for r in problem.pool.rows_of(torch.cat(seen)) if r >= 0)
            if len(history.X)
            else set()
        )
        extra = len(taken) + q  # enough results to skip evaluated rows
        if extra > searcher.size:
            raise ConfigError(
                f"the pool has {searcher.size} rows; {len(taken)} are taken and q={q}"
            )
        mu = model.weight_mean.numpy()
        started = time.perf_counter()
        rows: list[int] = []
        scores: list[float] = []
        if self.rule == "thompson":
            rng = np.random.default_rng(history.seed)
            for _ in range(q):
                w = model.sample_weights(rng.standard_normal(len(mu)))
                vals, ids = self._top(searcher, w, extra + len(rows))
                for v, i in zip(vals, ids, strict=True):
                    if int(i) not in taken and int(i) not in rows:
                        rows.append(int(i))
                        scores.append(float(v))
                        break
        else:
            vals, ids = self._ucb(searcher, mu, model.weight_cov.numpy(), extra)
            for v, i in zip(vals, ids, strict=True):
                if int(i) not in taken and len(rows) < q:
                    rows.append(int(i))
                    scores.append(float(v))
        seconds = time.perf_counter() - started
        X = torch.as_tensor(problem.pool.dense(rows), dtype=torch.double)
        meta = [
            {
                "acquisition": self.name,
                "rule": self.rule,
                "search": self.search,
                "pool_row": r,
                "score_std_units": s,
                "search_seconds": seconds / q,
            }
            for r, s in zip(rows, scores, strict=True)
        ]
        return Proposal(X=X, metadata=meta)

    def _top(self, searcher: PoolSearch, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.search == "dense":
            return searcher.dense_top(w, k)
        return searcher.top(w, k, self.shortlist, self.query_nnz)

    def _ucb(
        self, searcher: PoolSearch, mu: np.ndarray, cov: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows by UCB ``z mu + beta sqrt(z Sigma z)``: exact over a shortlist (index) or all (dense)."""
        if self.search == "dense":
            Z = searcher.dense
            ucb = Z @ mu.astype(np.float32) + self.beta * np.sqrt(
                np.maximum(((Z @ cov.astype(np.float32)) * Z).sum(1), 0)
            )
            part = np.argpartition(-ucb, k - 1)[:k]
            order = np.lexsort((part, -ucb[part]))
            return ucb[part][order], part[order]
        eigval, eigvec = np.linalg.eigh(cov)
        queries = [mu]
        for j in range(1, min(self.ucb_directions, len(mu)) + 1):
            step = self.beta * math.sqrt(max(eigval[-j], 0.0)) * eigvec[:, -j]
            queries += [mu + step, mu - step]
        candidates = np.unique(
            np.concatenate(
                [
                    searcher.top(
                        w,
                        min(max(self.shortlist, k), searcher.size),
                        self.shortlist,
                        self.query_nnz,
                    )[1]
                    for w in queries
                ]
            )
        )
        Z = searcher.codes[candidates].toarray().astype(np.float64)
        ucb = Z @ mu + self.beta * np.sqrt(np.maximum(((Z @ cov) * Z).sum(1), 0))
        order = np.lexsort((candidates, -ucb))[:k]
        return ucb[order], candidates[order]


__all__ = ["PoolPolicy", "PoolSearch"]
