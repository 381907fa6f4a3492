r"""Synthetic hierarchical time series with known embeddings (Paria thesis, section 6.6).

:func:`synthetic_hierarchy` builds a complete tree (optionally crossed with a grouping, like
Tourism-L's purpose of travel), draws node embeddings down the tree so that children stay close
to their parent (the assumption of theorem 6.1), and generates the leaves as a basis expansion
:math:`Y = B\theta + w`; the aggregates are sums of the leaves, so the data are exactly
coherent. The basis and the leaf embeddings are returned in the series' ``meta``, so tests can
compare what a model recovers with the truth.

Example:
    >>> series = synthetic_hierarchy(branching=(2, 3), num_steps=24)
    >>> series.values.shape, series.hierarchy.num_levels
    ((24, 9), 3)
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd

from dsbo.data.hierarchy import HierarchicalSeries, Hierarchy
from dsbo.errors import ConfigError


def _tree_matrix(branching: list[int]) -> tuple[np.ndarray, list[str], list[tuple[str, ...]]]:
    """Summing matrix, node names (level order) and leaf paths of a complete tree."""
    num_leaves = int(np.prod(branching)) if branching else 1
    rows, names = [np.ones(num_leaves)], ["total"]
    labels: list[str] = ["total"]
    for d in range(len(branching)):
        width = int(np.prod(branching[d + 1:])) if d + 1 < len(branching) else 1
        count = int(np.prod(branching[: d + 1]))
        new_labels = []
        for k in range(count):
            row = np.zeros(num_leaves)
            row[k * width: (k + 1) * width] = 1
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
    season: int = 12,
    start: str = "2000-01-01",
    frequency: Literal["M", "Q", "D"] = "M",
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
        num_steps: ``T``. num_bases: ``K >= 2``. season: seasonal period in steps.
        frequency: Dates: ``"M"`` month starts, ``"Q"`` quarter ends or ``"D"`` days from ``start``.

    Returns:
        A :class:`HierarchicalSeries`; ``meta`` holds ``basis`` (T x K) and ``theta`` (leaves x K).
    """
    branching = [int(b) for b in branching]
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
        leaf_theta = np.repeat(leaf_theta, groups, axis=0) + spread * rng.standard_normal((num_tree_leaves * groups, num_bases))
    bottom = offset + Bm @ leaf_theta.T + noise * rng.standard_normal((num_steps, leaf_theta.shape[0]))
    bottom = np.maximum(bottom, 0.0)
    hierarchy = Hierarchy(S, tuple(names), paths=tuple(paths))
    values = hierarchy.aggregate(bottom)
    freq = {"M": "MS", "Q": "QE", "D": "D"}[frequency]
    dates = pd.date_range(start, periods=num_steps, freq=freq)
    return HierarchicalSeries(hierarchy, values, dates, frequency, "synthetic", "synthetic",
                              meta={"basis": Bm, "theta": leaf_theta})


__all__ = ["synthetic_hierarchy"]
