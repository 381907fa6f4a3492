r"""A hierarchy of time series given by its summing matrix (Paria thesis, ch. 6), and its data.

**The hierarchy** (:class:`Hierarchy`) is its summing matrix :math:`S \in \{0, 1\}^{N \times L}`
(rows: all nodes, columns: the bottom series), so that coherent data satisfy
:math:`y_t = S\, y_t^{\text{bottom}}`. The leaves under node :math:`p` are
:math:`\mathcal L(p) = \{j : S_{pj} = 1\}` and :math:`|\mathcal L(p)|` its leaf count. From
:math:`S` alone follow the depth of a node (the number of nodes whose leaf set strictly contains
its own; root 0: the :math:`d(i)` of eq. 6.6), the reporting levels (the depth classes for a
tree; for a grouped hierarchy such as Tourism-L, consecutive runs of nodes in file order whose
leaf sets partition the leaves), the covering pairs (parent, child) and the pairs
:math:`(p, i),\ i \in \mathcal L(p)` of the regularizer eq. 6.4,
:math:`E_\text{reg} = \sum_p \sum_{i \in \mathcal L(p)} \|\theta_p - \theta_i\|^2`.

:meth:`Hierarchy.check_coherent` checks data against :math:`S` and raises
:class:`~dsbo.errors.DataError` naming the worst node and step. A :class:`HierarchicalSeries` is a
hierarchy with its data (``T x N`` values in original units, the dates and their frequency), as
read from files (:mod:`dsbo.data.hierarchical_io`) or generated
(:mod:`dsbo.data.synthetic_hierarchies`).

Example:
    >>> h = Hierarchy(np.array([[1, 1], [1, 0], [0, 1]]), ["total", "a", "b"])
    >>> h.num_nodes, h.num_leaves, h.leaves_of(0).tolist()
    (3, 2, [1, 2])
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from dsbo.errors import DataError

#: Default relative tolerance of the coherence check ``data = S @ bottom``.
COHERENCE_RTOL = 1e-5


@dataclass(frozen=True, eq=False)
class Hierarchy:
    r"""A (tree or grouped) hierarchy given by its summing matrix.

    Args:
        S: ``N x L`` summing matrix, 0/1: ``S[p, j] = 1`` iff bottom series ``j`` is under node ``p``.
        node_names: ``N`` node names (``data.csv``'s columns).
        leaf_index: ``L`` node row of each column of ``S`` (default: for column ``j`` the last
            row of ``S`` equal to the unit vector :math:`e_j`).
        paths: Optional path from the root of each bottom series (``tags.csv``).

    Derived attributes (numpy unless said otherwise):
        ``leaf_names`` (L,), ``leaf_count`` (N,) :math:`|\mathcal L(p)|`, ``depth`` (N,) the number of
        nodes whose leaf set strictly contains the node's (root 0), ``level`` (N,) and
        ``level_names``: reporting levels, leaves last (:meth:`_levels`), ``parent`` (N,): the
        first covering node in file order (-1 for a root; for a tree, the parent), ``is_tree``,
        ``leaf_pairs`` (``LongTensor 2 x P``: every :math:`(p, i)`, :math:`i \in \mathcal L(p)`,
        :math:`p \ne i`, the pairs of eq. 6.4), ``child_pairs`` (``LongTensor 2 x E``: the covering
        pairs (parent, child); the tree's edges for a tree). For the covering relation a node whose
        leaf set equals another's (a node with a single child) lies below the earlier one in file
        order, so such chains keep a tree a tree; ``depth`` counts strict containers only, so the
        two share a depth.

    Example:
        >>> h = Hierarchy(np.array([[1, 1], [1, 0], [0, 1]]), ["total", "a", "b"])
        >>> h.depth.tolist(), h.level.tolist(), h.leaf_pairs.tolist()
        ([0, 1, 1], [0, 1, 1], [[0, 0], [1, 2]])
    """

    S: np.ndarray
    node_names: tuple[str, ...]
    leaf_index: np.ndarray | None = None
    paths: tuple[tuple[str, ...], ...] | None = None
    leaf_names: tuple[str, ...] = field(init=False)
    leaf_count: np.ndarray = field(init=False)
    depth: np.ndarray = field(init=False)
    level: np.ndarray = field(init=False)
    level_names: tuple[str, ...] = field(init=False)
    parent: np.ndarray = field(init=False)
    is_tree: bool = field(init=False)

    def __post_init__(self) -> None:
        S = np.asarray(self.S, dtype=np.float64)
        if S.ndim != 2 or S.shape[0] < 1 or S.shape[1] < 1:
            raise DataError(f"S must be a nonempty N x L matrix, got shape {S.shape}")
        n, num_leaves = S.shape
        names = tuple(str(x) for x in self.node_names)
        if len(names) != n:
            raise DataError(f"node_names has {len(names)} names for the {n} rows of S")
        bad = np.argwhere((S != 0) & (S != 1))
        if len(bad):
            r, c = bad[0]
            raise DataError(
                f"S row {r} (node {names[r]!r}), column {c}: value {S[r, c]!r} is not 0 or 1"
            )
        B = S.astype(bool)
        leaf_count = B.sum(1)
        empty = np.flatnonzero(leaf_count == 0)
        if len(empty):
            raise DataError(
                f"S row {empty[0]} (node {names[empty[0]]!r}) has no bottom series (all zeros)"
            )
        if self.leaf_index is None:
            leaf_index = _unit_rows(B, names)
        else:
            leaf_index = np.asarray(self.leaf_index, dtype=np.int64)
            if leaf_index.shape != (num_leaves,):
                raise DataError(
                    f"leaf_index must hold {num_leaves} node rows, got shape {leaf_index.shape}"
                )
            wrong = [
                j
                for j in range(num_leaves)
                if not (leaf_count[leaf_index[j]] == 1 and B[leaf_index[j], j])
            ]
            if wrong:
                j = wrong[0]
                raise DataError(
                    f"leaf_index[{j}] = {leaf_index[j]} is not a row of S selecting only bottom series {j}"
                )
        if self.paths is not None and len(self.paths) != num_leaves:
            raise DataError(f"paths has {len(self.paths)} entries for {num_leaves} bottom series")
        depth, parent, covers = _containment(B, leaf_count)
        set_ = object.__setattr__
        set_(self, "S", S)
        set_(self, "node_names", names)
        set_(self, "leaf_index", leaf_index)
        set_(self, "leaf_names", tuple(names[i] for i in leaf_index))
        set_(self, "leaf_count", leaf_count.astype(np.int64))
        set_(self, "depth", depth)
        set_(self, "parent", parent)
        set_(self, "is_tree", bool(all(len(c) <= 1 for c in covers)))
        set_(self, "_covers", covers)
        level = self._levels(B, depth, leaf_index)
        set_(self, "level", level)
        set_(self, "level_names", tuple(f"level{k}" for k in range(int(level.max()) + 1)))

    # ------------------------------------------------------------------ facts
    @property
    def num_nodes(self) -> int:
        return self.S.shape[0]

    @property
    def num_leaves(self) -> int:
        return self.S.shape[1]

    @property
    def num_levels(self) -> int:
        return len(self.level_names)

    @cached_property
    def leaf_pairs(self) -> Tensor:
        r"""``2 x P`` long: every :math:`(p, i)` with leaf node :math:`i \in \mathcal L(p)`, :math:`p \ne i` (eq. 6.4)."""
        rows, cols = np.nonzero(self.S)
        leaves = self.leaf_index[cols]
        keep = rows != leaves
        return torch.as_tensor(np.stack([rows[keep], leaves[keep]]), dtype=torch.long)

    @cached_property
    def child_pairs(self) -> Tensor:
        """``2 x E`` long: covering pairs (parent, child); for a tree exactly its edges."""
        pairs = [(p, c) for c, ps in enumerate(self._covers) for p in ps]  # type: ignore[attr-defined]
        return torch.as_tensor(np.array(pairs, dtype=np.int64).reshape(-1, 2).T, dtype=torch.long)

    def leaves_of(self, node: int) -> np.ndarray:
        """Node indices of the leaves under ``node`` (:math:`\\mathcal L(p)`)."""
        return self.leaf_index[np.flatnonzero(self.S[node])]

    def aggregate(self, bottom: np.ndarray) -> np.ndarray:
        """``T x L`` bottom series to ``T x N`` all nodes: :math:`y_t = S\\,y_t^{bottom}`."""
        return np.asarray(bottom, dtype=np.float64) @ self.S.T

    def check_coherent(
        self,
        values: np.ndarray,
        rtol: float = COHERENCE_RTOL,
        source: str = "data",
        step_names: list[str] | None = None,
    ) -> None:
        """Raise :class:`DataError` naming the worst node and step if ``values != S @ bottom``.

        A value passes when :math:`|y - S y^{bottom}| \\le` ``rtol`` :math:`(|S y^{bottom}| +
        10^{-8} \\max|y|)`.
        """
        values = np.asarray(values, dtype=np.float64)
        expected = self.aggregate(values[:, self.leaf_index])
        err = np.abs(values - expected)
        allowed = rtol * (np.abs(expected) + 1e-8 * max(float(np.abs(values).max()), 1e-300))
        excess = err - allowed
        t, p = np.unravel_index(int(np.argmax(excess)), excess.shape)
        if excess[t, p] > 0:
            step = step_names[t] if step_names is not None else str(t)
            raise DataError(
                f"{source}: not coherent: node {self.node_names[p]!r} at step {t} ({step}) is "
                f"{values[t, p]!r} but the sum of its {self.leaf_count[p]} bottom series (S @ bottom) is "
                f"{expected[t, p]!r} (|difference| {err[t, p]:.6g} > tolerance {allowed[t, p]:.6g}, rtol={rtol:g}); "
                "this is the worst node and step"
            )

    # ------------------------------------------------------------------ levels
    def _levels(self, B: np.ndarray, depth: np.ndarray, leaf_index: np.ndarray) -> np.ndarray:
        """Reporting levels: depth classes if each partitions the leaves (trees), else runs in file order."""
        ones = np.ones(B.shape[1], dtype=np.int64)
        if all(np.array_equal(B[depth == d].sum(0), ones) for d in np.unique(depth)):
            return depth.copy()
        level = np.full(B.shape[0], -1, dtype=np.int64)
        covered = np.zeros(B.shape[1], dtype=np.int64)
        k = 0
        for p in range(B.shape[0]):
            covered += B[p]
            level[p] = k
            if (covered > 1).any():
                break
            if (covered == 1).all():
                covered[:] = 0
                k += 1
        ok = (level >= 0).all() and not covered.any() and len(set(level[leaf_index])) == 1
        ok = ok and level[leaf_index[0]] == level.max()
        if ok:
            return level
        warnings.warn(
            "hierarchy: the nodes neither group by depth nor in file order into levels that partition "
            "the bottom series; the reporting levels are the depths",
            stacklevel=3,
        )
        return depth.copy()


def _unit_rows(B: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """For each column ``j`` the last row of ``B`` equal to the unit vector ``e_j``."""
    single = B.sum(1) == 1
    leaf_index = np.full(B.shape[1], -1, dtype=np.int64)
    for p in np.flatnonzero(single):
        leaf_index[np.flatnonzero(B[p])[0]] = p
    missing = np.flatnonzero(leaf_index < 0)
    if len(missing):
        raise DataError(
            f"S column {missing[0]}: no row of S selects only this bottom series, so it has no "
            "node of its own (every bottom series needs a row equal to its unit vector)"
        )
    return leaf_index


def _containment(
    B: np.ndarray, leaf_count: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Depth (strict containers per node), first covering node, and all covering nodes of each node.

    Covering: ``a`` covers ``b`` if ``a`` is above ``b`` (leaf set strictly larger, or equal and
    earlier in file order) with no node in between.
    """
    Bf = B.astype(np.float32)
    inter = Bf @ Bf.T  # exact for counts < 2^24
    contains = inter == leaf_count[None, :].astype(np.float32)  # contains[a, b]: L(a) >= L(b)
    strict = contains & (leaf_count[:, None] > leaf_count[None, :])
    depth = strict.sum(0).astype(np.int64)
    # for the covering relation, nodes with equal leaf sets (a node with a single child) are
    # ordered by file order: the earlier one is above, so a chain of them stays a tree
    idx = np.arange(B.shape[0])
    above = strict | (contains & contains.T & (idx[:, None] < idx[None, :]))
    covers: list[list[int]] = []
    parent = np.full(B.shape[0], -1, dtype=np.int64)
    for b in range(B.shape[0]):
        cands = np.flatnonzero(above[:, b])
        if len(cands) == 0:
            covers.append([])
            continue
        sub = above[np.ix_(cands, cands)]  # sub[i, j]: cands[i] is above cands[j]
        minimal = cands[~sub.any(1)]
        covers.append(sorted(int(x) for x in minimal))
        parent[b] = covers[-1][0]
    return depth, parent, covers


@dataclass(frozen=True, eq=False)
class HierarchicalSeries:
    """A hierarchy with its data: ``values`` is ``T x N`` (original units, float64, coherent)."""

    hierarchy: Hierarchy
    values: np.ndarray
    dates: pd.DatetimeIndex
    frequency: str
    name: str
    source: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def num_steps(self) -> int:
        return self.values.shape[0]


__all__ = ["COHERENCE_RTOL", "HierarchicalSeries", "Hierarchy"]
