r"""Training-set subset selection: fit any surrogate on a representative subset of the data.

Mao & Li, *Are all training data useful? An empirical revisit of subset selection in Bayesian
optimization* (2023; Algorithm 2, appendix B, remarks 1-8). Three selectors pick ``k`` of the
``N`` evaluated points:

- ``rs``: ``k`` points uniformly at random;
- ``kcs``: k-means (scikit-learn's ``KMeans``) splits the points (unit-cube coordinates) into
  ``k`` clusters; the best point of each cluster is kept (B.1);
- ``scs``: ``k`` Latin-hypercube seeds (``scipy.stats.qmc.LatinHypercube``) partition the cube
  into the cells of their nearest points (Euclidean); the best point of each non-empty cell
  is kept (B.2), so ``scs`` keeps at most ``k`` points.

"Best" is the largest objective (dsbo maximizes; the paper minimizes), so KCS and SCS always
keep the incumbent: it is the best of its own cluster or cell.

**Schedule** (remarks 1, 2, 7, 8): below ``start x d`` observations (``30 d``) every point is
fitted. At ``N_r = start x d + j x refresh x d`` observations (every ``5 d``), the subset is
refreshed with ``k = N_r / alpha`` (``alpha = 20``, implied by the paper's table 3); points
evaluated after a refresh are appended to the subset until the next one. The subset is a pure
function of the ordered data and the seed, so a resumed campaign fits the same rows; the
campaign records the fitted rows of every proposal (trial metadata ``fitted_trials``).

scikit-learn and ``scipy.stats`` are imported by the selectors that use them, when they first
select.

Example:
    >>> selector = make_selector({"name": "kcs", "alpha": 20})
    >>> rows = selector.rows(X, Y, bounds, seed=0)        # indices into X, sorted
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dsbo.errors import ConfigError

if TYPE_CHECKING:
    from torch import Tensor

SELECTORS = ("rs", "kcs", "scs")


@dataclass(frozen=True)
class Selector:
    """A training-set selector and its schedule.

    Args:
        name: ``rs``, ``kcs`` or ``scs``.
        alpha: ``k = N_r / alpha`` points are selected at a refresh (the paper: 20).
        start: Selection starts at ``start x d`` observations (the paper: 30).
        refresh: The subset is refreshed every ``refresh x d`` observations (the paper: 5).
    """

    name: str = "kcs"
    alpha: float = 20.0
    start: float = 30.0
    refresh: float = 5.0

    def __post_init__(self) -> None:
        if self.name not in SELECTORS:
            raise ConfigError(f"surrogate.selector.name={self.name!r}; choose one of {SELECTORS}")
        for field_name in ("alpha", "start", "refresh"):
            value = getattr(self, field_name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 < value < math.inf
            ):
                raise ConfigError(
                    f"surrogate.selector.{field_name} must be a number > 0, got {value!r}"
                )

    # ------------------------------------------------------------------ schedule
    def last_refresh(self, n: int, d: int) -> int | None:
        """The number of observations at the latest refresh ``<= n`` (``None``: fit all)."""
        first = math.ceil(self.start * d)
        if n < first:
            return None
        step = max(1, math.ceil(self.refresh * d))
        return first + ((n - first) // step) * step

    def subset_size(self, n_refresh: int) -> int:
        return max(1, min(n_refresh, round(n_refresh / self.alpha)))

    def rows(self, X: Tensor, Y: Tensor, bounds: Tensor, seed: int = 0) -> list[int]:
        """Indices of the rows of ``X`` (``N x d``) to fit, sorted: all rows before selection
        starts, else the selection made at the latest refresh plus every later row."""
        n, d = X.shape
        refresh = self.last_refresh(n, d)
        if refresh is None:
            return list(range(n))
        Z = ((X[:refresh] - bounds[0]) / (bounds[1] - bounds[0])).detach().cpu().numpy()
        y = Y[:refresh, 0].detach().cpu().numpy()
        k = self.subset_size(refresh)
        chosen = SELECT[self.name](Z, y, k, (seed * 1_000_003 + refresh) % (2**31 - 1))
        return sorted(set(chosen) | set(range(refresh, n)))


def random_rows(Z: np.ndarray, y: np.ndarray, k: int, seed: int) -> list[int]:
    """RS: ``k`` distinct rows uniformly at random."""
    return np.random.default_rng(seed).choice(len(y), size=k, replace=False).tolist()


def best_per_group(labels: np.ndarray, y: np.ndarray) -> list[int]:
    """The row with the largest ``y`` in each group of ``labels`` (first on ties)."""
    best: dict[int, int] = {}
    for i, (label, value) in enumerate(zip(labels.tolist(), y.tolist(), strict=True)):
        if label not in best or value > y[best[label]]:
            best[label] = i
    return sorted(best.values())


def kmeans_rows(Z: np.ndarray, y: np.ndarray, k: int, seed: int) -> list[int]:
    """KCS: the best row of each of ``k`` k-means clusters."""
    from sklearn.cluster import KMeans

    labels = KMeans(n_clusters=k, n_init=1, random_state=seed).fit_predict(Z)
    return best_per_group(labels, y)


def seeded_rows(Z: np.ndarray, y: np.ndarray, k: int, seed: int) -> list[int]:
    """SCS: the best row of each non-empty cell of ``k`` Latin-hypercube seeds."""
    from scipy.stats import qmc

    seeds = qmc.LatinHypercube(d=Z.shape[1], seed=seed).random(k)
    distances = ((Z[:, None, :] - seeds[None, :, :]) ** 2).sum(-1)
    return best_per_group(distances.argmin(1), y)


SELECT = {"rs": random_rows, "kcs": kmeans_rows, "scs": seeded_rows}


def make_selector(spec: Selector | Mapping[str, Any] | str | None) -> Selector | None:
    """A :class:`Selector` from a mapping ``{name, alpha, start, refresh}`` or a name."""
    if spec is None or isinstance(spec, Selector):
        return spec
    if isinstance(spec, str):
        return Selector(name=spec)
    if not isinstance(spec, Mapping):
        raise ConfigError(f"surrogate.selector must be a name or a mapping, got {spec!r}")
    unknown = sorted(set(spec) - {"name", "alpha", "start", "refresh"})
    if unknown:
        raise ConfigError(
            f"surrogate.selector has no option(s) {unknown}; options: name, alpha, start, refresh"
        )
    return Selector(**spec)
