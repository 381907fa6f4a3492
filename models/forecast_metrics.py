r"""Hierarchical forecast metrics: WAPE and SMAPE per reporting level, and coherence.

The metrics of the HiReD chapter (Paria thesis, ch. 6, section 6.5 "Metrics" and table 6.3),
all computed on the **original scale** (sums, not the mean-constraint scaled units). For
predictions :math:`\hat y` and targets :math:`y` (any shape, flattened to :math:`n` values):

.. math::  \mathrm{WAPE} = \frac{\sum_i |\hat y_i - y_i|}{\sum_i |y_i|}, \qquad
           \mathrm{SMAPE} = \frac{2}{n} \sum_i \frac{|\hat y_i - y_i|}{|y_i| + |\hat y_i|}.

Both are torchmetrics' :class:`~torchmetrics.WeightedMeanAbsolutePercentageError` and
:class:`~torchmetrics.SymmetricMeanAbsolutePercentageError` (same formulas, same
``epsilon = 1.17e-6`` guarding the denominators; a term with :math:`y_i = \hat y_i = 0` adds 0
to SMAPE): :func:`wape` and :func:`smape` call torchmetrics' functional forms directly.

**Per level**: table 6.1 reports each metric for each level of the hierarchy (level 0 = root)
and their mean over levels ("Mean"). A level's WAPE is the WAPE of all the values of the
level's nodes pooled (one ratio of sums), not a mean of per-node WAPEs. :class:`LevelMetrics`
accumulates these sums over batches. It does **not** wrap the torchmetrics classes: those
hold a single scalar sum per instance, so grouping by level would take one instance per level
and a masked update loop per batch; :class:`LevelMetrics` keeps the same sums as vectors
indexed by level (``index_add_``, one pass per batch) and is checked against the torchmetrics
classes level by level in ``tests/models/test_forecast_metrics.py``.

**Coherence** (table 6.3): for each node :math:`p`, the deviation of its forecast from
:math:`c^{(p)} = \frac{1}{|\mathcal L(p)|}\sum_{i \in \mathcal L(p)} \hat y^{(i)}`, the mean of
the leaf forecasts of its sub-tree, in the mean-constraint units of section 6.3. On the
original scale (each node multiplied by :math:`|\mathcal L(p)|`) this is the sum of the leaf
forecasts, :math:`c = S\,\hat y_{\text{leaves}}`, and the WAPE of :math:`\hat y^{(p)}` against
:math:`c^{(p)}` is the same in both units for a single node; pooled over a level it weights
nodes by their original-scale size, which is what "computed on the original scale" means here.
:math:`c` is the reference (the WAPE's denominator). Leaves are trivially coherent (0); the
table leaves them out, and so does ``coherence/mean`` (see :func:`coherence_wape`).

Example:
    >>> metrics = LevelMetrics(num_levels=3)
    >>> metrics.update(pred, target, level)  # pred, target: B x F; level: B (long)
    >>> out = metrics.compute()
    >>> out["wape_mean"], out["wape/level0"], out["smape/level2"]
"""

from __future__ import annotations

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.functional import (
    symmetric_mean_absolute_percentage_error,
    weighted_mean_absolute_percentage_error,
)

#: torchmetrics' guard against a zero denominator (the same value in WAPE and SMAPE).
EPSILON = 1.17e-06

__all__ = [
    "EPSILON",
    "LevelMetrics",
    "coherence_reference",
    "coherence_wape",
    "level_metrics",
    "smape",
    "wape",
]


def wape(pred: Tensor, target: Tensor) -> Tensor:
    r"""WAPE :math:`\sum|\hat y - y| / \sum|y|` over every element (torchmetrics' functional)."""
    return weighted_mean_absolute_percentage_error(pred, target)


def smape(pred: Tensor, target: Tensor) -> Tensor:
    r"""SMAPE :math:`\frac2n\sum|\hat y - y|/(|y| + |\hat y|)` over every element (torchmetrics')."""
    return symmetric_mean_absolute_percentage_error(pred, target)


def _check_inputs(pred: Tensor, target: Tensor, level: Tensor, num_levels: int | None) -> Tensor:
    """Checks shapes and level indices; returns ``level`` broadcast to ``pred``'s shape."""
    if pred.shape != target.shape:
        raise ValueError(f"pred has shape {tuple(pred.shape)} but target has {tuple(target.shape)}")
    if pred.dim() == 0:
        raise ValueError("pred must have a node dimension first (B or B x F), got a scalar")
    if level.dim() != 1 or level.shape[0] != pred.shape[0]:
        raise ValueError(
            f"level must be a 1-d tensor with one entry per node (pred.shape[0] = {pred.shape[0]}), "
            f"got shape {tuple(level.shape)}"
        )
    if level.dtype.is_floating_point or level.dtype == torch.bool:
        raise ValueError(f"level must hold integer level indices, got dtype {level.dtype}")
    if level.numel() and (
        int(level.min()) < 0 or (num_levels is not None and int(level.max()) >= num_levels)
    ):
        raise ValueError(
            f"level holds values in [{int(level.min())}, {int(level.max())}], outside [0, {num_levels})"
            if num_levels is not None
            else f"level holds a negative value {int(level.min())}"
        )
    if not (torch.isfinite(pred).all() and torch.isfinite(target).all()):
        raise ValueError(
            "pred and target must be finite (a NaN or inf would poison every level's sum)"
        )
    return level.reshape((-1,) + (1,) * (pred.dim() - 1)).expand_as(pred)


class LevelMetrics(Metric):
    r"""WAPE and SMAPE per reporting level, accumulated over batches, and their means over levels.

    For every level :math:`k` it keeps (as ``num_levels`` vectors, summed across processes)

    .. math::  E_k = \sum |\hat y - y|, \quad A_k = \sum |y|, \quad
               P_k = \sum \frac{2 |\hat y - y|}{\max(|y| + |\hat y|, \epsilon)}, \quad n_k,

    over every value of every node of level :math:`k` seen since the last reset, and reports
    ``wape/level{k}`` :math:`= E_k / \max(A_k, \epsilon)` and ``smape/level{k}`` :math:`= P_k/n_k`
    (torchmetrics' formulas), plus ``wape_mean`` and ``smape_mean``, the unweighted means over
    the levels that received at least one value (table 6.1's "Mean" column). A level that never
    received a value is absent from the dict (never a NaN). Feed original-scale values
    (multiply the scaled ones by the batch's ``scale``).

    Args:
        num_levels: Number of reporting levels; levels are ``0 .. num_levels - 1``.

    Example:
        >>> metrics = LevelMetrics(num_levels=2)
        >>> metrics.update(torch.tensor([[9.0], [2.0]]), torch.tensor([[10.0], [2.0]]),
        ...                torch.tensor([0, 1]))
        >>> metrics.compute()["wape/level0"]
        tensor(0.1000)
    """

    full_state_update = False
    higher_is_better = False
    is_differentiable = False

    def __init__(self, num_levels: int, **kwargs) -> None:
        super().__init__(**kwargs)
        if isinstance(num_levels, bool) or not isinstance(num_levels, int) or num_levels < 1:
            raise ValueError(f"num_levels={num_levels!r} must be an integer >= 1")
        self.num_levels = num_levels
        self._out_dtype = torch.get_default_dtype()  # results come in the dtype of the inputs
        for name in ("abs_error", "abs_target", "smape_sum", "count"):
            self.add_state(
                name, default=torch.zeros(num_levels, dtype=torch.float64), dist_reduce_fx="sum"
            )

    def update(self, pred: Tensor, target: Tensor, level: Tensor) -> None:
        """Adds a batch: ``pred`` and ``target`` are ``B`` or ``B x ...`` (nodes first), ``level`` is ``B``."""
        level_full = _check_inputs(pred, target, level, self.num_levels).reshape(-1).long()
        if pred.dtype.is_floating_point:
            self._out_dtype = pred.dtype
        pred = pred.detach().reshape(-1).to(torch.float64)
        target = target.detach().reshape(-1).to(torch.float64)
        diff = (pred - target).abs()
        denom = torch.clamp(target.abs() + pred.abs(), min=EPSILON)
        self.abs_error.index_add_(0, level_full, diff)
        self.abs_target.index_add_(0, level_full, target.abs())
        self.smape_sum.index_add_(0, level_full, 2 * diff / denom)
        self.count.index_add_(0, level_full, torch.ones_like(diff))

    def compute(self) -> dict[str, Tensor]:
        """``wape/level{k}``, ``smape/level{k}`` for every level seen, and ``wape_mean``, ``smape_mean``."""
        seen = (self.count > 0).nonzero().flatten().tolist()
        if not seen:
            raise ValueError("LevelMetrics.compute() before any update: no values to score")
        # sums are kept in float64; results come back in the dtype of the last update's pred
        wapes = self.abs_error / torch.clamp(self.abs_target, min=EPSILON)
        smapes = self.smape_sum / torch.clamp(self.count, min=1)
        out: dict[str, Tensor] = {}
        for k in seen:
            out[f"wape/level{k}"] = wapes[k].to(self._out_dtype)
            out[f"smape/level{k}"] = smapes[k].to(self._out_dtype)
        out["wape_mean"] = wapes[seen].mean().to(self._out_dtype)
        out["smape_mean"] = smapes[seen].mean().to(self._out_dtype)
        return out


def level_metrics(
    pred: Tensor, target: Tensor, level: Tensor, num_levels: int | None = None
) -> dict[str, Tensor]:
    """One-shot :class:`LevelMetrics`: per-level and mean WAPE / SMAPE of one set of forecasts.

    Args:
        pred: ``N x ...`` original-scale forecasts (nodes first).
        target: Same shape, the true values.
        level: ``N`` integer reporting level of each row.
        num_levels: Number of levels (default: ``level.max() + 1``).
    """
    if num_levels is None:
        num_levels = int(level.max()) + 1 if level.numel() else 1
    metric = LevelMetrics(num_levels=num_levels).to(pred.device)
    metric.update(pred, target, level)
    return metric.compute()


def _leaf_rows(S: Tensor, leaf_index: Tensor | None) -> Tensor:
    if S.dim() != 2:
        raise ValueError(
            f"S must be a 2-d summing matrix (nodes x leaves), got shape {tuple(S.shape)}"
        )
    n, num_leaves = S.shape
    if leaf_index is None:
        # The common format (data.csv, agg_mat.csv) lists the bottom level last.
        return torch.arange(n - num_leaves, n, device=S.device)
    leaf_index = torch.as_tensor(leaf_index, device=S.device).long()
    if leaf_index.shape != (num_leaves,):
        raise ValueError(
            f"leaf_index must have one node index per column of S ({num_leaves}), got {tuple(leaf_index.shape)}"
        )
    return leaf_index


def coherence_reference(pred: Tensor, S: Tensor, leaf_index: Tensor | None = None) -> Tensor:
    r"""The bottom-up reference :math:`c = S \hat y_{\text{leaves}}` of every node (original scale).

    Args:
        pred: ``N x ...`` original-scale forecasts of **all** nodes (nodes first).
        S: ``N x L`` summing matrix (0/1).
        leaf_index: ``L`` node index of each column of ``S`` (default: the last ``L`` nodes,
            the common format's order).

    Returns:
        ``N x ...``: for node :math:`p`, :math:`\sum_{i \in \mathcal L(p)} \hat y^{(i)}`, i.e.
        :math:`|\mathcal L(p)|\, c^{(p)}` of table 6.3 in original units.
    """
    if pred.dim() == 0 or pred.shape[0] != S.shape[0]:
        raise ValueError(
            f"pred must have the {S.shape[0]} nodes of S first, got shape {tuple(pred.shape)}"
        )
    leaves = pred.index_select(0, _leaf_rows(S, leaf_index))
    flat = leaves.reshape(leaves.shape[0], -1)
    return (S.to(flat.dtype) @ flat).reshape(pred.shape)


def coherence_wape(
    pred: Tensor, S: Tensor, level: Tensor, leaf_index: Tensor | None = None
) -> dict[str, Tensor]:
    r"""Coherence of forecasts per level (table 6.3): WAPE of :math:`\hat y^{(p)}` against :math:`c^{(p)}`.

    Args:
        pred: ``N x ...`` original-scale forecasts of all nodes (nodes first; e.g. ``N x F`` for
            one window, or windows concatenated along the last dimension).
        S: ``N x L`` summing matrix.
        level: ``N`` reporting level of each node.
        leaf_index: ``L`` node index of each column of ``S`` (default: the last ``L`` nodes).

    Returns:
        ``coherence/level{k}`` for every level, and ``coherence/mean``, the mean over the levels
        that hold at least one non-leaf node (leaf levels are 0 by construction; table 6.3 leaves
        them out). Perfectly coherent forecasts score 0 everywhere.
    """
    ref = coherence_reference(pred, S, leaf_index)
    num_levels = int(level.max()) + 1
    per_level = LevelMetrics(num_levels=num_levels).to(pred.device)
    per_level.update(pred, ref, level)
    out = per_level.compute()
    is_leaf = torch.zeros(S.shape[0], dtype=torch.bool, device=S.device)
    is_leaf[_leaf_rows(S, leaf_index)] = True
    result: dict[str, Tensor] = {}
    upper = []
    for k in range(num_levels):
        key = f"wape/level{k}"
        if key not in out:
            continue
        result[f"coherence/level{k}"] = out[key]
        if not bool(is_leaf[level.to(S.device) == k].all()):
            upper.append(out[key])
    result["coherence/mean"] = (
        torch.stack(upper).mean() if upper else torch.zeros((), dtype=pred.dtype)
    )
    return result
