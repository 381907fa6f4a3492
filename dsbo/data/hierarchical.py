r"""Hierarchical time series for HiReD (Paria thesis, ch. 6): hierarchy, files, windows, batches.

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

**Files** (:func:`read_hierarchical`): the common format of HierE2E (Rangapuram et al., 2021)
and of ``../shared/data/README.md``: ``data.csv`` (first column the date, one column per node,
aggregates first, bottom level last), ``agg_mat.csv`` (S; a header row of bottom-series names,
then one row per node, named, in ``data.csv``'s column order) and ``tags.csv`` (no header; one
row per bottom series, in ``data.csv``'s bottom order: its path from the root, one column per
level). Every problem raises :class:`~dsbo.errors.DataError` naming the file, row and column.

**Scaling** (section 6.3 and 6.8.1): node :math:`i` is divided by its leaf count, so coherent data
satisfy the *mean* property eq. 6.1, and every value by one global :math:`\sigma`, the standard
deviation of those leaf-count-scaled values over the training range (all nodes and steps). The
thesis also centres the data ("standardized to mean zero"); here it is not centred, so that one
multiplicative ``scale = |L(i)| * sigma`` per node brings a scaled value back to original units
(the batch contract), and a global shift would not change the mean property anyway.

**Windows** (table 6.5, section 6.8.1): with history :math:`H` and horizon :math:`F`, the last
``test_windows * F`` steps are the test range, the ``val_windows * F`` steps before them the
validation range, the rest the training range. Validation and test windows roll by :math:`F`
(their forecast steps tile their range; their history may reach back into earlier ranges, as
inputs only). Training windows (length :math:`H + F`) lie entirely inside the training range,
so no validation or test value is ever a training input or target, and no test value is a
validation input or target.

**Representatives** (section 6.4 "Summary vector", 6.8.2): :math:`R` series chosen by separable
NMF (:func:`successive_projection`, Gillis & Vavasis 2014) on the training range of the scaled
matrix only; their histories :math:`Z_\mathcal H` go into every batch.

**Level-weighted sampling** (eq. 6.6): training batches draw nodes with probability
:math:`\pi_i \propto \alpha^{-d(i)}`. Section 6.5 says both "with replacement" and "without
replacement"; here ``alpha == 1`` draws a uniform subset without replacement (every node once
when :math:`N \le` ``batch_nodes``: the plain mini-batches of 6.8.1) and ``alpha != 1`` draws
``min(batch_nodes, N)`` nodes *with* replacement from :math:`\pi`, so the weighting acts on small
hierarchies too.

**Calendar covariates** (:func:`calendar_covariates`): the thesis does not specify them (see
``../shared/PAPER-NOTES.md``). Chosen here from the frequency inferred from the dates: the
position in the seasonal cycle as a sine/cosine pair (month of year for monthly data, quarter
of year for quarterly, day of week and day of year for daily, week of year for weekly, hour of
day and day of week for hourly), plus a linear trend :math:`t/(T-1) - 1/2` over the data's
steps (``trend=True``). Monthly and quarterly data get :math:`D = 3`.

**Defaults per data set** (:data:`DATASET_DEFAULTS`; ``None`` arguments resolve through them
by the data set's folder name, else the thesis' Tourism column of table 6.5, :math:`H = 24,
F = 4`, 3 rolling windows): labour :math:`(H, F) = (24, 8)`; tourismlarge :math:`(24, 12)`;
tourismsmall has only 36 quarterly steps, so with the literature's horizon 8 and one
validation and one test window 20 steps remain for training: :math:`H = 8` (two years) leaves
5 training windows (:math:`H = 12` would leave one).

Example:
    >>> dm = HierarchicalDataModule(synthetic={"branching": [2, 3], "num_steps": 96},
    ...                             history=12, horizon=4)
    >>> dm.num_nodes, dm.in_dim, dm.hierarchy.num_levels
    (9, 3, 3)
    >>> batch = next(iter(dm.train_dataloader()))
    >>> batch["y_hist"].shape, batch["y_fut"].shape, batch["z_hist"].shape
    (torch.Size([9, 12]), torch.Size([9, 4]), torch.Size([12, 6]))
"""

from __future__ import annotations

import csv
import math
import os
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, IterableDataset

from dsbo.errors import ConfigError, DataError

#: Files of the common format.
FILES = ("data.csv", "agg_mat.csv", "tags.csv")
#: Per data set (folder name) defaults: history H, horizon F, validation and test windows.
DATASET_DEFAULTS: dict[str, dict[str, int]] = {
    "labour": {"history": 24, "horizon": 8, "val_windows": 3, "test_windows": 1},
    "tourismsmall": {"history": 8, "horizon": 8, "val_windows": 1, "test_windows": 1},
    "tourismlarge": {"history": 24, "horizon": 12, "val_windows": 3, "test_windows": 1},
}
#: Table 6.5, Tourism column: (H, F) = (24, 4), 3 rolling validation / test windows.
PAPER_DEFAULTS: dict[str, int] = {"history": 24, "horizon": 4, "val_windows": 3, "test_windows": 3}
#: Default relative tolerance of the coherence check ``data = S @ bottom``.
COHERENCE_RTOL = 1e-5
PREDICT_SPLITS = ("test", "future")
#: Batch keys (every split; ``y_fut`` is absent from ``predict_split="future"`` batches).
BATCH_KEYS = ("y_hist", "y_fut", "nodes", "level", "scale", "x_hist", "x_fut", "z_hist", "t_fut")
#: Keys of :meth:`HierarchicalDataModule.state_dict`.
STATE_KEYS = ("node_names", "global_scale", "representatives", "history", "horizon", "covariate_names")


# ---------------------------------------------------------------------------------------------
# The hierarchy
# ---------------------------------------------------------------------------------------------
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
            raise DataError(f"S row {r} (node {names[r]!r}), column {c}: value {S[r, c]!r} is not 0 or 1")
        B = S.astype(bool)
        leaf_count = B.sum(1)
        empty = np.flatnonzero(leaf_count == 0)
        if len(empty):
            raise DataError(f"S row {empty[0]} (node {names[empty[0]]!r}) has no bottom series (all zeros)")
        if self.leaf_index is None:
            leaf_index = _unit_rows(B, names)
        else:
            leaf_index = np.asarray(self.leaf_index, dtype=np.int64)
            if leaf_index.shape != (num_leaves,):
                raise DataError(f"leaf_index must hold {num_leaves} node rows, got shape {leaf_index.shape}")
            wrong = [j for j in range(num_leaves) if not (leaf_count[leaf_index[j]] == 1 and B[leaf_index[j], j])]
            if wrong:
                j = wrong[0]
                raise DataError(f"leaf_index[{j}] = {leaf_index[j]} is not a row of S selecting only bottom series {j}")
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


def _containment(B: np.ndarray, leaf_count: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
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


# ---------------------------------------------------------------------------------------------
# Series: files, synthetic data
# ---------------------------------------------------------------------------------------------
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


def _read_rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise DataError(f"{path}: file not found (the common format needs {', '.join(FILES)})")
    with path.open(newline="") as fh:
        rows = [row for row in csv.reader(fh)]
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        raise DataError(f"{path}: the file is empty")
    return rows


def _check_ragged(path: Path, rows: list[list[str]], width: int, first_line: int) -> None:
    for i, row in enumerate(rows):
        if len(row) != width:
            raise DataError(
                f"{path}: row {first_line + i} has {len(row)} fields, expected {width} "
                f"(a ragged row{'; the header has ' + str(width) if first_line > 1 else ''})"
            )


def _numeric(path: Path, rows: list[list[str]], columns: list[str], labels: list[str], first_line: int) -> np.ndarray:
    """Cells (without the first column) to float64; names file, row and column of a bad cell."""
    frame = pd.DataFrame([row[1:] for row in rows], dtype=object)
    values = frame.apply(lambda col: pd.to_numeric(col, errors="coerce")).to_numpy(dtype=np.float64)
    bad = np.argwhere(~np.isfinite(values))
    if len(bad):
        i, j = bad[0]
        cell = rows[i][j + 1]
        what = "missing value" if not cell.strip() else (
            f"non-numeric value {cell!r}" if np.isnan(values[i, j]) and cell.strip().lower() not in ("nan", "na", "null")
            else f"non-finite value {cell!r}"
        )
        raise DataError(
            f"{path}: row {first_line + i} ({labels[i]}), column {j + 2} ({columns[j]!r}): {what}; "
            "every value must be a finite number"
        )
    return values


def read_hierarchical(path: str | os.PathLike, coherence_rtol: float = COHERENCE_RTOL) -> HierarchicalSeries:
    """Read ``data.csv``, ``agg_mat.csv`` and ``tags.csv`` from a folder (the common format).

    ``agg_mat.csv``'s rows must name ``data.csv``'s columns in the same order. Its columns are
    matched to the bottom series by the rows of S that equal a unit vector (each bottom series is
    a node of its own), not by the header: the published labour file's header lists the bottom
    series in another order than its (coherent) columns; a header that disagrees is a warning.
    ``tags.csv`` (no header) gives each bottom series' path in ``data.csv``'s bottom order; each
    group of bottom series sharing a path prefix must be the leaf set of a node of S.

    Raises:
        DataError: naming the file, row and column of: a missing file, a ragged row, a missing or
            non-numeric value, an unparsable or non-increasing date, ``agg_mat.csv`` rows that do
            not match ``data.csv``'s columns, a value of S other than 0/1, a bottom series without
            a row or a path, a path inconsistent with S, and values that are not coherent.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise DataError(f"{folder}: not a folder (expected a folder holding {', '.join(FILES)})")
    data_path, agg_path, tags_path = (folder / f for f in FILES)

    # data.csv -------------------------------------------------------------------------------
    rows = _read_rows(data_path)
    header, body = rows[0], rows[1:]
    if len(header) < 2:
        raise DataError(f"{data_path}: row 1 (header) has {len(header)} field(s); expected a date column and one column per node")
    if not body:
        raise DataError(f"{data_path}: no data rows after the header")
    _check_ragged(data_path, body, len(header), first_line=2)
    node_names = [h.strip() for h in header[1:]]
    seen: dict[str, int] = {}
    for j, name in enumerate(node_names):
        if not name:
            raise DataError(f"{data_path}: row 1 (header), column {j + 2}: empty node name")
        if name in seen:
            raise DataError(f"{data_path}: row 1 (header), columns {seen[name] + 2} and {j + 2}: node {name!r} appears twice")
        seen[name] = j
    date_cells = [row[0] for row in body]
    values = _numeric(data_path, body, node_names, [f"date {d!r}" for d in date_cells], first_line=2)
    dates = _parse_dates(data_path, date_cells)

    # agg_mat.csv ----------------------------------------------------------------------------
    rows = _read_rows(agg_path)
    agg_header, agg_body = rows[0], rows[1:]
    num_leaves = len(agg_header) - 1
    if num_leaves < 1:
        raise DataError(f"{agg_path}: row 1 (header) names no bottom series")
    _check_ragged(agg_path, agg_body, len(agg_header), first_line=2)
    leaf_headers = [h.strip() for h in agg_header[1:]]
    row_names = [row[0].strip() for row in agg_body]
    for i, (got, want) in enumerate(zip(row_names, node_names, strict=False)):
        if got != want:
            raise DataError(
                f"{agg_path}: row {i + 2}, column 1: node {got!r}, but data.csv column {i + 2} is {want!r}; "
                "agg_mat.csv's rows must name data.csv's columns in the same order"
            )
    if len(row_names) != len(node_names):
        extra = (f"data.csv column {len(row_names) + 2} ({node_names[len(row_names)]!r}) has no row"
                 if len(row_names) < len(node_names) else f"row {len(node_names) + 2} ({row_names[len(node_names)]!r}) is not a data.csv column")
        raise DataError(f"{agg_path}: {len(row_names)} rows of S for the {len(node_names)} nodes of data.csv: {extra}")
    S = _numeric(agg_path, agg_body, leaf_headers, [f"node {n!r}" for n in row_names], first_line=2)
    bad = np.argwhere((S != 0) & (S != 1))
    if len(bad):
        i, j = bad[0]
        raise DataError(
            f"{agg_path}: row {i + 2} (node {row_names[i]!r}), column {j + 2} ({leaf_headers[j]!r}): "
            f"value {agg_body[i][j + 1]!r}; S holds only 0 and 1"
        )
    B = S.astype(bool)
    empty = np.flatnonzero(~B.any(1))
    if len(empty):
        i = empty[0]
        raise DataError(f"{agg_path}: row {i + 2} (node {row_names[i]!r}) selects no bottom series (all zeros)")
    single = B.sum(1) == 1
    leaf_index = np.full(num_leaves, -1, dtype=np.int64)
    for p in np.flatnonzero(single):
        leaf_index[np.flatnonzero(B[p])[0]] = p
    missing = np.flatnonzero(leaf_index < 0)
    if len(missing):
        j = missing[0]
        raise DataError(
            f"{agg_path}: column {j + 2} ({leaf_headers[j]!r}): no row selects only this bottom series, "
            "so it has no column in data.csv (every bottom series must be a node of its own)"
        )
    leaf_names = [node_names[i] for i in leaf_index]
    if leaf_names != leaf_headers:
        j = next(j for j in range(num_leaves) if leaf_names[j] != leaf_headers[j])
        warnings.warn(
            f"{agg_path}: row 1 (header), column {j + 2} names {leaf_headers[j]!r} but that column is the "
            f"unit row of node {leaf_names[j]!r}; columns are matched to bottom series by S's unit rows, "
            "not by the header",
            stacklevel=2,
        )

    # tags.csv -------------------------------------------------------------------------------
    paths = _read_tags(tags_path, leaf_names, B, leaf_index, agg_path)

    hierarchy = Hierarchy(S, tuple(node_names), leaf_index=leaf_index, paths=paths)
    hierarchy.check_coherent(values, rtol=coherence_rtol, source=str(data_path),
                             step_names=[f"row {t + 2}, date {d}" for t, d in enumerate(date_cells)])
    return HierarchicalSeries(hierarchy, values, dates, _infer_frequency(data_path, dates), folder.name, str(folder))


def _parse_dates(path: Path, cells: list[str]) -> pd.DatetimeIndex:
    try:
        dates = pd.DatetimeIndex(pd.to_datetime(cells))
    except (ValueError, TypeError):
        for i, cell in enumerate(cells):
            try:
                pd.Timestamp(cell)
            except (ValueError, TypeError):
                raise DataError(f"{path}: row {i + 2}, column 1 (date): {cell!r} is not a date") from None
        raise DataError(f"{path}: column 1 (date): the dates do not parse as one format") from None
    if dates.isna().any():
        i = int(np.flatnonzero(dates.isna())[0])
        raise DataError(f"{path}: row {i + 2}, column 1 (date): missing date")
    steps = _step_seconds(dates)
    if len(steps) and (steps <= 0).any():
        i = int(np.flatnonzero(steps <= 0)[0])
        raise DataError(f"{path}: row {i + 3}, column 1 (date): {cells[i + 1]!r} does not come after {cells[i]!r}")
    return dates


def _read_tags(path: Path, leaf_names: list[str], B: np.ndarray, leaf_index: np.ndarray, agg_path: Path) -> tuple:
    rows = _read_rows(path)
    num_leaves = len(leaf_names)
    if len(rows) < num_leaves:
        j = len(rows)
        raise DataError(
            f"{path}: {len(rows)} rows for {num_leaves} bottom series: bottom series {leaf_names[j]!r} "
            f"(the {j + 1}th bottom column of data.csv) has no path (expected at row {j + 1})"
        )
    if len(rows) > num_leaves:
        raise DataError(f"{path}: row {num_leaves + 1} is one row too many: there are {num_leaves} bottom series")
    width = len(rows[0])
    _check_ragged(path, rows, width, first_line=1)
    for i, row in enumerate(rows):
        for k, cell in enumerate(row):
            if not cell.strip():
                raise DataError(f"{path}: row {i + 1}, column {k + 1}: empty path element for bottom series {leaf_names[i]!r}")
    paths = tuple(tuple(cell.strip() for cell in row) for row in rows)
    # each prefix must be the leaf set of a node of S (a path inconsistent with S is an error)
    row_sets = {B[p].tobytes() for p in range(B.shape[0])}
    for k in range(width):
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, pth in enumerate(paths):
            groups.setdefault(pth[: k + 1], []).append(i)
        for prefix, members in groups.items():
            mask = np.zeros(num_leaves, dtype=bool)
            mask[members] = True
            if mask.tobytes() not in row_sets:
                rows_txt = ", ".join(str(m + 1) for m in members[:5]) + (" ..." if len(members) > 5 else "")
                raise DataError(
                    f"{path}: column {k + 1}, tag {prefix[-1]!r} (rows {rows_txt}): its {len(members)} bottom "
                    f"series are not the leaves of any node in {agg_path.name}"
                )
    return paths


def _step_seconds(dates: pd.DatetimeIndex) -> np.ndarray:
    """Seconds between consecutive dates (whatever the index's time unit)."""
    return (dates[1:] - dates[:-1]).total_seconds().to_numpy(dtype=np.float64)


def _infer_frequency(path: Path | str, dates: pd.DatetimeIndex) -> str:
    """``"h"``, ``"D"``, ``"W"``, ``"M"``, ``"Q"``, ``"Y"`` from the median spacing, else ``"unknown"``."""
    if len(dates) < 2:
        return "unknown"
    days = float(np.median(_step_seconds(dates))) / 86400.0
    for freq, lo, hi in (("h", 1 / 24 - 1e-6, 1 / 24 + 1e-6), ("D", 0.99, 1.01), ("W", 6.9, 7.1),
                         ("M", 27.9, 31.1), ("Q", 89, 92.1), ("Y", 364.9, 366.1)):
        if lo <= days <= hi:
            return freq
    warnings.warn(f"{path}: dates {days:g} days apart match no known frequency; only the trend covariate is used",
                  stacklevel=3)
    return "unknown"


#: Offsets to extend the dates past the data (predict on the future).
_OFFSETS = {"h": pd.DateOffset(hours=1), "D": pd.DateOffset(days=1), "W": pd.DateOffset(weeks=1),
            "M": pd.DateOffset(months=1), "Q": pd.DateOffset(months=3), "Y": pd.DateOffset(years=1)}


def extend_dates(dates: pd.DatetimeIndex, frequency: str, steps: int) -> pd.DatetimeIndex:
    """The ``steps`` dates after ``dates`` (``last + k * offset``, so month ends stay month ends)."""
    if frequency not in _OFFSETS:
        spacing = pd.Timedelta(seconds=float(np.median(_step_seconds(dates)))) if len(dates) > 1 else pd.Timedelta(days=1)
        return pd.DatetimeIndex([dates[-1] + spacing * k for k in range(1, steps + 1)])
    offset = _OFFSETS[frequency]
    return pd.DatetimeIndex([dates[-1] + offset * k for k in range(1, steps + 1)])


def calendar_covariates(
    dates: pd.DatetimeIndex, frequency: str, num_data_steps: int | None = None, trend: bool = True
) -> tuple[np.ndarray, tuple[str, ...]]:
    r"""``T x D`` calendar covariates and their names (see the module docstring for the choice).

    Each seasonal position :math:`\phi \in [0, m)` of period :math:`m` becomes
    :math:`(\sin 2\pi\phi/m, \cos 2\pi\phi/m)`; the trend is :math:`t/(T_{data} - 1) - 1/2` with
    ``num_data_steps`` :math:`T_{data}` (default ``len(dates)``; steps past the data exceed 1/2).
    """
    cycles: list[tuple[str, np.ndarray, float]] = []
    if frequency == "M":
        cycles.append(("month", dates.month.to_numpy() - 1.0, 12.0))
    elif frequency == "Q":
        cycles.append(("quarter", dates.quarter.to_numpy() - 1.0, 4.0))
    elif frequency == "W":
        cycles.append(("week_of_year", dates.dayofyear.to_numpy() - 1.0, 365.25))
    elif frequency == "D":
        cycles.append(("day_of_week", dates.dayofweek.to_numpy().astype(float), 7.0))
        cycles.append(("day_of_year", dates.dayofyear.to_numpy() - 1.0, 365.25))
    elif frequency == "h":
        cycles.append(("hour", dates.hour.to_numpy().astype(float), 24.0))
        cycles.append(("day_of_week", dates.dayofweek.to_numpy().astype(float), 7.0))
    columns, names = [], []
    for name, phase, period in cycles:
        angle = 2 * math.pi * phase / period
        columns += [np.sin(angle), np.cos(angle)]
        names += [f"{name}_sin", f"{name}_cos"]
    if trend:
        n = num_data_steps if num_data_steps is not None else len(dates)
        columns.append(np.arange(len(dates)) / max(n - 1, 1) - 0.5)
        names.append("trend")
    if not columns:
        raise ConfigError(f"frequency {frequency!r} gives no seasonal covariate: set trend=True")
    return np.stack(columns, axis=1).astype(np.float64), tuple(names)


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


def write_hierarchical(series: HierarchicalSeries, path: str | os.PathLike) -> Path:
    """Write ``series`` in the common format (``data.csv``, ``agg_mat.csv``, ``tags.csv``) to a folder."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    h = series.hierarchy
    data = pd.DataFrame(series.values, columns=list(h.node_names), index=series.dates.strftime("%Y-%m-%d"))
    data.to_csv(folder / "data.csv", float_format="%.10g")
    pd.DataFrame(h.S, index=list(h.node_names), columns=list(h.leaf_names)).to_csv(folder / "agg_mat.csv")
    paths = h.paths if h.paths is not None else tuple((n,) for n in h.leaf_names)
    with (folder / "tags.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(paths)
    return folder


# ---------------------------------------------------------------------------------------------
# Separable NMF
# ---------------------------------------------------------------------------------------------
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
        raise ConfigError(f"successive_projection: rank={rank!r} must be an integer in [0, {M.shape[1]}]")
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


def level_weights(depth: np.ndarray, alpha: float) -> np.ndarray:
    r"""Node sampling probabilities :math:`\pi_i \propto \alpha^{-d(i)}` (eq. 6.6), summing to 1."""
    logw = -np.asarray(depth, dtype=np.float64) * math.log(alpha)
    w = np.exp(logw - logw.max())
    return w / w.sum()


# ---------------------------------------------------------------------------------------------
# The datamodule
# ---------------------------------------------------------------------------------------------
def _int_arg(name: str, value: Any, minimum: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"HierarchicalDataModule: {name} must be an integer >= {minimum}{' or None' if allow_none else ''}, got {value!r}")


class _TrainWindows(IterableDataset):
    """Random training windows: ``length`` batches per pass, reseeded from ``(seed, pass)``."""

    def __init__(self, dm: HierarchicalDataModule, length: int) -> None:
        self.dm, self.length, self.passes = dm, length, 0

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        g = torch.Generator().manual_seed(self.dm.seed * 1_000_003 + self.passes)
        self.passes += 1
        starts = self.dm.forecast_starts("train")
        for _ in range(self.length):
            start = starts[int(torch.randint(len(starts), (1,), generator=g))]
            yield self.dm.make_batch(start, self.dm.sample_nodes(g))


class _FixedWindows(Dataset):
    """Every (window, chunk of <= batch_nodes nodes) of a split, in order."""

    def __init__(self, dm: HierarchicalDataModule, starts: list[int]) -> None:
        self.dm = dm
        chunks = torch.arange(dm.num_nodes).split(dm.batch_nodes)
        self.items = [(s, c) for s in starts for c in chunks]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return self.dm.make_batch(*self.items[i])


class HierarchicalDataModule(pl.LightningDataModule):
    r"""Windows of a hierarchy for HiReD: one window and up to ``batch_nodes`` nodes per batch.

    The data come from a folder in the common format (``path``, or ``$DSBO_DATA/<name>``, or
    ``$DSBO_DATA/hierarchical/<name>``), or from :func:`synthetic_hierarchy` (``synthetic``: its
    keyword arguments), or from a :class:`HierarchicalSeries` (:meth:`from_series`). They are read
    and checked when the module is built (after its arguments are checked), so ``in_dim``,
    ``num_nodes`` and ``hierarchy`` are there for ``dsbo.train``'s argument links; ``setup`` has
    nothing left to do.

    Every dataloader yields ready batches (``batch_size=None``), a dict of tensors:

    - ``y_hist`` ``B x H``, ``y_fut`` ``B x F`` (float32, scaled; ``y_fut`` absent when predicting
      the steps after the data), ``nodes`` ``B`` and ``level`` ``B`` (long),
    - ``scale`` ``B`` (float32): scaled value times ``scale`` = original units
      (:math:`|\mathcal L(i)|\,\sigma`),
    - ``x_hist`` ``H x D``, ``x_fut`` ``F x D`` (float32 calendar covariates),
    - ``z_hist`` ``H x R`` (float32, scaled histories of the representatives),
    - ``t_fut`` ``F`` (long): the step index of each forecast step (``>= T`` past the data).

    Args:
        path: A folder with ``data.csv``, ``agg_mat.csv``, ``tags.csv``.
        name: A data set under ``$DSBO_DATA`` (used when ``path`` is None); also selects the
            :data:`DATASET_DEFAULTS` (default: ``path``'s folder name).
        synthetic: Keyword arguments of :func:`synthetic_hierarchy` (exclusive with path/name).
        history: :math:`H`. horizon: :math:`F`. val_windows, test_windows: rolling windows of
            :math:`F` steps at the end of the data. ``None``: :data:`DATASET_DEFAULTS` of the
            data set, else :data:`PAPER_DEFAULTS` (table 6.5, Tourism).
        batch_nodes: Most nodes per batch (512, table 6.5); evaluation chunks the nodes.
        alpha: Level weighting :math:`\alpha` of eq. 6.6 (1: uniform).
        num_representatives: :math:`R` (table 6.5, Tourism: 6).
        windows_per_epoch: Training batches per epoch (default: the number of training windows
            times :math:`\lceil N / \text{batch\_nodes} \rceil`).
        seed: Seeds the training windows and node samples.
        predict_split: ``"test"``: predict the test windows; ``"future"``: the :math:`F` steps
            after the data.
        trend: Add the linear trend covariate.
        coherence_rtol: Tolerance of the coherence check of the files.
    """

    def __init__(
        self,
        path: str | None = None,
        name: str | None = None,
        synthetic: dict[str, Any] | None = None,
        history: int | None = None,
        horizon: int | None = None,
        val_windows: int | None = None,
        test_windows: int | None = None,
        batch_nodes: int = 512,
        alpha: float = 1.0,
        num_representatives: int = 6,
        windows_per_epoch: int | None = None,
        seed: int = 0,
        predict_split: Literal["test", "future"] = "test",
        trend: bool = True,
        coherence_rtol: float = COHERENCE_RTOL,
        _series: HierarchicalSeries | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(logger=False, ignore=["_series"])
        # ---- arguments, before any I/O
        sources = sum(x is not None for x in (path, synthetic, _series)) + (name is not None and path is None)
        if sources != 1 or (synthetic is not None and name is not None):
            raise ConfigError(
                "HierarchicalDataModule: set exactly one of path (a folder in the common format), "
                "name (a data set under $DSBO_DATA) or synthetic (arguments of synthetic_hierarchy)"
            )
        if synthetic is not None and not isinstance(synthetic, dict):
            raise ConfigError(f"HierarchicalDataModule: synthetic must be a dict of synthetic_hierarchy arguments, got {synthetic!r}")
        for arg, value in (("history", history), ("horizon", horizon), ("val_windows", val_windows),
                           ("test_windows", test_windows), ("windows_per_epoch", windows_per_epoch)):
            _int_arg(arg, value, 1, allow_none=True)
        _int_arg("batch_nodes", batch_nodes, 1)
        _int_arg("num_representatives", num_representatives, 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"HierarchicalDataModule: seed must be an integer, got {seed!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not (math.isfinite(alpha) and alpha > 0):
            raise ConfigError(f"HierarchicalDataModule: alpha must be a finite number > 0, got {alpha!r}")
        if predict_split not in PREDICT_SPLITS:
            raise ConfigError(f"HierarchicalDataModule: predict_split must be one of {PREDICT_SPLITS}, got {predict_split!r}")
        if not (isinstance(coherence_rtol, int | float) and coherence_rtol >= 0):
            raise ConfigError(f"HierarchicalDataModule: coherence_rtol must be a number >= 0, got {coherence_rtol!r}")
        folder: Path | None = None
        if path is not None:
            folder = Path(path)
            name = name or folder.name
        elif name is not None:
            root = os.environ.get("DSBO_DATA")
            if not root:
                raise ConfigError(f"HierarchicalDataModule: name={name!r} needs the environment variable DSBO_DATA (or set path)")
            folder = next((c for c in (Path(root) / name, Path(root) / "hierarchical" / name) if c.is_dir()), Path(root) / name)
        defaults = DATASET_DEFAULTS.get(name or "", PAPER_DEFAULTS)
        self.history = history if history is not None else defaults["history"]
        self.horizon = horizon if horizon is not None else defaults["horizon"]
        self.val_windows = val_windows if val_windows is not None else defaults["val_windows"]
        self.test_windows = test_windows if test_windows is not None else defaults["test_windows"]
        self.batch_nodes = batch_nodes
        self.alpha = float(alpha)
        self.seed = seed
        self.predict_split = predict_split

        # ---- data
        if _series is not None:
            series = _series
        elif synthetic is not None:
            try:
                series = synthetic_hierarchy(**synthetic)
            except TypeError as exc:
                raise ConfigError(f"HierarchicalDataModule: synthetic={synthetic!r}: {exc}") from None
        else:
            series = read_hierarchical(folder, coherence_rtol=coherence_rtol)
        self.series = series
        self.hierarchy: Hierarchy = series.hierarchy
        self.Y: np.ndarray = series.values  # T x N, original units
        self.dates: pd.DatetimeIndex = series.dates
        num_steps, n = self.Y.shape
        H, F = self.history, self.horizon
        held_out = (self.val_windows + self.test_windows) * F
        if num_steps < H + F + held_out:
            raise DataError(
                f"{series.source}: {num_steps} steps are too few for history {H} + horizon {F} (one training "
                f"window) + {self.val_windows} validation and {self.test_windows} test windows of {F} steps "
                f"= {H + F + held_out}; shorten history or use fewer windows"
            )
        if num_representatives > n:
            raise ConfigError(f"HierarchicalDataModule: num_representatives={num_representatives} exceeds the {n} nodes of {series.source}")
        self.train_end = num_steps - held_out
        self.val_end = num_steps - self.test_windows * F
        self.num_steps = num_steps

        # ---- covariates over the data and the F steps after it
        all_dates = self.dates.append(extend_dates(self.dates, series.frequency, F))
        X, self.covariate_names = calendar_covariates(all_dates, series.frequency, num_data_steps=num_steps, trend=trend)
        self.X = torch.as_tensor(X, dtype=torch.float32)

        # ---- scaling (training range only)
        mean_units = self.Y / self.hierarchy.leaf_count[None, :]
        sigma = float(mean_units[: self.train_end].std())
        self.global_scale = sigma if sigma > 0 else 1.0
        self.representatives = torch.as_tensor(
            successive_projection(mean_units[: self.train_end], num_representatives), dtype=torch.long
        )
        self._refresh_scaling()
        self.node_probs = torch.as_tensor(level_weights(self.hierarchy.depth, self.alpha))
        self.windows_per_epoch = windows_per_epoch or len(self.forecast_starts("train")) * math.ceil(n / batch_nodes)

    @classmethod
    def from_series(cls, series: HierarchicalSeries, **kwargs: Any) -> HierarchicalDataModule:
        """A datamodule over an in-memory :class:`HierarchicalSeries` (e.g. a modified synthetic one)."""
        return cls(_series=series, **kwargs)

    def _refresh_scaling(self) -> None:
        self.scale = torch.as_tensor(self.hierarchy.leaf_count * self.global_scale, dtype=torch.float64)
        self.Y_scaled = torch.as_tensor(self.Y / self.scale.numpy()[None, :], dtype=torch.float32)
        self._scale32 = self.scale.float()
        self._level = torch.as_tensor(self.hierarchy.level, dtype=torch.long)

    # ------------------------------------------------------------------ facts
    @property
    def num_nodes(self) -> int:
        return self.hierarchy.num_nodes

    @property
    def in_dim(self) -> int:
        """Number of calendar covariates ``D`` (``dsbo.train`` links it to ``model.init_args.in_dim``)."""
        return self.X.shape[1]

    @property
    def num_levels(self) -> int:
        return self.hierarchy.num_levels

    @property
    def leaf_pairs(self) -> Tensor:
        return self.hierarchy.leaf_pairs

    def ranges(self) -> dict[str, tuple[int, int]]:
        """``[first, last + 1)`` step ranges of ``train``, ``val`` and ``test``."""
        return {"train": (0, self.train_end), "val": (self.train_end, self.val_end), "test": (self.val_end, self.num_steps)}

    def forecast_starts(self, split: str) -> list[int]:
        """First forecast step of every window of ``split`` (``train``: every valid window)."""
        H, F = self.history, self.horizon
        if split == "train":
            return list(range(H, self.train_end - F + 1))
        if split == "val":
            return [self.train_end + k * F for k in range(self.val_windows)]
        if split == "test":
            return [self.val_end + k * F for k in range(self.test_windows)]
        if split == "future":
            return [self.num_steps]
        raise ConfigError(f"split must be one of train, val, test, future; got {split!r}")

    def unscale(self, values: Tensor, nodes: Tensor) -> Tensor:
        """Scaled ``B x ...`` values of ``nodes`` back to original units."""
        return values * self.scale.to(values)[nodes.to(values.device)].reshape((-1,) + (1,) * (values.dim() - 1))

    # ------------------------------------------------------------------ batches
    def sample_nodes(self, generator: torch.Generator) -> Tensor:
        """Training nodes: a uniform subset (``alpha == 1``) or ``min(batch_nodes, N)`` draws from eq. 6.6."""
        size = min(self.batch_nodes, self.num_nodes)
        if self.alpha == 1.0:
            return torch.randperm(self.num_nodes, generator=generator)[:size]
        return torch.multinomial(self.node_probs, size, replacement=True, generator=generator)

    def make_batch(self, start: int, nodes: Tensor) -> dict[str, Tensor]:
        """The batch of the window forecasting steps ``start .. start + F - 1`` for ``nodes``."""
        H, F = self.history, self.horizon
        hist = self.Y_scaled[start - H: start]
        batch = {
            "y_hist": hist[:, nodes].T.contiguous(),
            "nodes": nodes,
            "level": self._level[nodes],
            "scale": self._scale32[nodes],
            "x_hist": self.X[start - H: start],
            "x_fut": self.X[start: start + F],
            "z_hist": hist[:, self.representatives].contiguous(),
            "t_fut": torch.arange(start, start + F),
        }
        if start + F <= self.num_steps:
            batch["y_fut"] = self.Y_scaled[start: start + F, nodes].T.contiguous()
        return batch

    # ------------------------------------------------------------------ Lightning
    def setup(self, stage: str | None = None) -> None:
        """Nothing to do: the data are read and checked when the module is built."""

    def train_dataloader(self) -> DataLoader:
        if not hasattr(self, "_train_windows"):
            self._train_windows = _TrainWindows(self, self.windows_per_epoch)
        return DataLoader(self._train_windows, batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(_FixedWindows(self, self.forecast_starts("val")), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(_FixedWindows(self, self.forecast_starts("test")), batch_size=None)

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(_FixedWindows(self, self.forecast_starts(self.predict_split)), batch_size=None)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to rebuild the scaling: node names, sigma, representatives, H, F."""
        return {
            "node_names": list(self.hierarchy.node_names),
            "global_scale": self.global_scale,
            "representatives": self.representatives.tolist(),
            "history": self.history,
            "horizon": self.horizon,
            "covariate_names": list(self.covariate_names),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        missing = [k for k in STATE_KEYS if k not in state_dict]
        if missing:
            raise DataError(f"HierarchicalDataModule state: missing keys {missing}")
        for key, mine in (("node_names", list(self.hierarchy.node_names)), ("history", self.history),
                          ("horizon", self.horizon), ("covariate_names", list(self.covariate_names))):
            if state_dict[key] != mine:
                raise DataError(f"HierarchicalDataModule state: the checkpoint's {key} differ from this data's")
        self.global_scale = float(state_dict["global_scale"])
        self.representatives = torch.as_tensor(state_dict["representatives"], dtype=torch.long)
        self._refresh_scaling()
