r"""Synthetic hierarchical time series with known embeddings (Paria thesis, section 6.6).

:func:`synthetic_hierarchy` builds a complete tree (optionally crossed with a grouping, like
Tourism-L's purpose of travel), draws node embeddings down the tree so that children stay close
to their parent (the assumption of theorem 6.1), and generates the leaves as a basis expansion
:math:`Y = B\theta + w`; the aggregates are sums of the leaves, so the data are exactly
coherent. The basis and the leaf embeddings are returned in the series' ``meta``, so tests can
compare what a model recovers with the truth.

:data:`SYNTHETIC_SETS` names two larger sets for experiments on data HiReD was not tuned on
(``HierarchicalDataModule(synthetic="synthetic-daily")``, ``experiments/hired.py --data
synthetic-weekly``): ``synthetic-daily`` (76 nodes, 4 levels, 420 days, weekly season 7) and
``synthetic-weekly`` (59 nodes, 4 levels, 312 weeks, yearly season 52); both leave hundreds of
training windows under the settings derived from their frequency
(:func:`dsbo.data.hierarchical_settings.data_settings`).

Example:
    >>> series = synthetic_hierarchy(branching=(2, 3), num_steps=24)
    >>> series.values.shape, series.hierarchy.num_levels
    ((24, 9), 3)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np
import pandas as pd

from dsbo.data.hierarchy import HierarchicalSeries, Hierarchy
from dsbo.errors import ConfigError

#: Dates per frequency code (pandas offsets).
_FREQUENCIES = {"M": "MS", "Q": "QE", "D": "D", "W": "W-SUN"}
#: Seasonal period when ``season`` is not given (monthly and quarterly keep the former default 12).
DEFAULT_SEASONS = {"D": 7, "W": 52}


def _tree_matrix(branching: list[int]) -> tuple[np.ndarray, list[str], list[tuple[str, ...]]]:
    """Summing matrix, node names (level order) and leaf paths of a complete tree."""
    num_leaves = int(np.prod(branching)) if branching else 1
    rows, names = [np.ones(num_leaves)], ["total"]
    labels: list[str] = ["total"]
    for d in range(len(branching)):
        width = int(np.prod(branching[d + 1 :])) if d + 1 < len(branching) else 1
        count = int(np.prod(branching[: d + 1]))
        new_labels = []
        for k in range(count):
            row = np.zeros(num_leaves)
            row[k * width : (k + 1) * width] = 1
            rows.append(row)
            new_labels.append(f"{labels[k // branching[d]]}/{k % branching[d]}" if d else f"n{k}")
        names += new_labels
        labels = new_labels
    S = np.stack(rows)
    leaf_names = labels
    paths = []
    for leaf in leaf_names:
        parts = leaf.split("/")
        paths.append(tuple(["total"] + ["/".join(parts[: i + 1]) for i in range(len(parts))]))
    return S, names, paths


def synthetic_hierarchy(
    branching: list[int] | tuple[int, ...] = (2, 3),
    groups: int = 0,
    num_steps: int = 120,
    num_bases: int = 4,
    spread: float = 0.3,
    noise: float = 0.1,
    offset: float = 10.0,
    season: int | None = None,
    start: str = "2000-01-01",
    frequency: Literal["M", "Q", "D", "W"] = "M",
    seed: int = 0,
) -> HierarchicalSeries:
    r"""An exactly coherent hierarchy in the style of section 6.6: :math:`Y = B\theta + w` at the leaves.

    The basis :math:`B \in \mathbb R^{T \times K}` holds a constant, a linear trend and sine/cosine
    pairs of period ``season`` (and its harmonics). Embeddings go down the tree:
    :math:`\theta_{root} \sim \mathcal N(0, I)` and :math:`\theta_c = \theta_{parent} +`
    ``spread`` :math:`\cdot \mathcal N(0, I)` (children close to their parent, the assumption of
    theorem 6.1); leaf :math:`i` is ``offset`` :math:`+ B\theta_i + ` ``noise`` :math:`\cdot w_i`,
    clipped at 0. Aggregates are then ``S @ leaves``, so the data are exactly coherent.

    Args:
        branching: Children per node at each depth, e.g. ``(2, 3)``: a root, 2 children, 6 leaves.
        groups: ``G > 0`` crosses the tree with a grouping of ``G`` categories (like Tourism-L's
            purpose of travel): nodes are every tree node over all categories, then every tree
            node per category (tree-node major); leaves are tree leaves x categories.
        num_steps: ``T``. num_bases: ``K >= 2``.
        season: Seasonal period in steps (default: 7 for daily, 52 for weekly data, else 12).
        frequency: Dates: ``"M"`` month starts, ``"Q"`` quarter ends, ``"D"`` days or ``"W"``
            weeks (Sundays) from ``start``.

    Returns:
        A :class:`HierarchicalSeries`; ``meta`` holds ``basis`` (T x K) and ``theta`` (leaves x K).
    """
    branching = [int(b) for b in branching]
    if frequency not in _FREQUENCIES:
        raise ConfigError(
            f"synthetic_hierarchy: frequency={frequency!r}; choose one of {', '.join(_FREQUENCIES)}"
        )
    if season is None:
        season = DEFAULT_SEASONS.get(frequency, 12)
    if isinstance(season, bool) or not isinstance(season, int) or season < 1:
        raise ConfigError(f"synthetic_hierarchy: season must be an integer >= 1, got {season!r}")
    if any(b < 1 for b in branching) or num_steps < 2 or num_bases < 2 or groups < 0:
        raise ConfigError(
            f"synthetic_hierarchy: branching={branching} must hold integers >= 1, num_steps={num_steps} >= 2, "
            f"num_bases={num_bases} >= 2, groups={groups} >= 0"
        )
    rng = np.random.default_rng(seed)
    S_tree, tree_names, tree_paths = _tree_matrix(branching)
    if groups:
        cats = [f"g{c}" for c in range(groups)]
        S = np.vstack([np.kron(S_tree, np.ones((1, groups))), np.kron(S_tree, np.eye(groups))])
        names = [f"{n}|all" for n in tree_names] + [f"{n}|{c}" for n in tree_names for c in cats]
        paths = [p + (f"{p[-1]}|{c}",) for p in tree_paths for c in cats]
    else:
        S, names, paths = S_tree, tree_names, tree_paths
    t = np.arange(num_steps, dtype=np.float64)
    basis = [np.ones(num_steps), t / num_steps - 0.5]
    k = 1
    while len(basis) < num_bases:
        fn = np.sin if len(basis) % 2 == 0 else np.cos
        basis.append(fn(2 * math.pi * k * t / season))
        if fn is np.cos:
            k += 1
    Bm = np.stack(basis[:num_bases], axis=1)
    # embeddings down the tree: theta of each tree node from its parent's
    theta_node = {"total": rng.standard_normal(num_bases)}
    num_tree_leaves = S_tree.shape[1]
    for p in tree_paths:
        for d in range(1, len(p)):
            if p[d] not in theta_node:
                theta_node[p[d]] = theta_node[p[d - 1]] + spread * rng.standard_normal(num_bases)
    leaf_theta = np.stack([theta_node[p[-1]] for p in tree_paths])  # tree leaves x K
    if groups:
        leaf_theta = np.repeat(leaf_theta, groups, axis=0) + spread * rng.standard_normal(
            (num_tree_leaves * groups, num_bases)
        )
    bottom = (
        offset + Bm @ leaf_theta.T + noise * rng.standard_normal((num_steps, leaf_theta.shape[0]))
    )
    bottom = np.maximum(bottom, 0.0)
    hierarchy = Hierarchy(S, tuple(names), paths=tuple(paths))
    values = hierarchy.aggregate(bottom)
    freq = _FREQUENCIES[frequency]
    dates = pd.date_range(start, periods=num_steps, freq=freq)
    return HierarchicalSeries(
        hierarchy,
        values,
        dates,
        frequency,
        "synthetic",
        "synthetic",
        meta={"basis": Bm, "theta": leaf_theta},
    )


#: Named synthetic sets for experiments (keyword arguments of :func:`synthetic_hierarchy`).
SYNTHETIC_SETS: dict[str, dict[str, Any]] = {
    "synthetic-daily": {
        "branching": [3, 4, 5],
        "num_steps": 420,
        "frequency": "D",
        "season": 7,
        "noise": 0.5,
        "spread": 0.4,
        "start": "2020-01-06",
        "seed": 11,
    },
    "synthetic-weekly": {
        "branching": [2, 4, 6],
        "num_steps": 312,
        "frequency": "W",
        "season": 52,
        "noise": 0.5,
        "spread": 0.4,
        "start": "2015-01-04",
        "seed": 12,
    },
}


def synthetic_set(name: str) -> HierarchicalSeries:
    """The named set of :data:`SYNTHETIC_SETS`."""
    if name not in SYNTHETIC_SETS:
        raise ConfigError(
            f"unknown synthetic set {name!r}; choose one of {', '.join(SYNTHETIC_SETS)}"
        )
    return dataclasses.replace(synthetic_hierarchy(**SYNTHETIC_SETS[name]), name=name, source=name)


__all__ = ["DEFAULT_SEASONS", "SYNTHETIC_SETS", "synthetic_hierarchy", "synthetic_set"]
