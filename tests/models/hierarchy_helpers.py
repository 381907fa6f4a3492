"""Tiny hierarchies and coherent batch windows for the HiReD / seq2seq tests.

A duck-typed hierarchy (the attributes the data side's ``Hierarchy`` has and the models read)
and one window in the batch contract of ``dsbo.data.hierarchical``, generated exactly coherent
in the mean-constraint units of thesis section 6.3.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, IterableDataset


def tree_hierarchy(branching: tuple[int, ...] = (2, 2)) -> SimpleNamespace:
    """A tree with ``branching[d]`` children per node at depth ``d``, nodes listed level by
    level (root first, leaves last, as in the common data format)."""
    levels = [[()]]
    for b in branching:
        levels.append([p + (k,) for p in levels[-1] for k in range(b)])
    nodes = [n for lvl in levels for n in lvl]
    leaves = levels[-1]
    S = torch.tensor(
        [[float(leaf[: len(n)] == n) for leaf in leaves] for n in nodes], dtype=torch.float64
    )
    index = {n: k for k, n in enumerate(nodes)}
    leaf_pairs = [
        (index[n], index[leaf])
        for n in nodes
        for leaf in leaves
        if leaf[: len(n)] == n and n != leaf
    ]
    child_pairs = [(index[n[:-1]], index[n]) for n in nodes if n]
    name = lambda n: "T" + "".join(f"-{k}" for k in n)  # noqa: E731
    return SimpleNamespace(
        S=S.numpy(),
        node_names=[name(n) for n in nodes],
        leaf_names=[name(n) for n in leaves],
        level=torch.tensor([len(n) for n in nodes]),
        depth=torch.tensor([len(n) for n in nodes]),
        leaf_count=S.sum(1).numpy(),
        leaf_pairs=torch.tensor(leaf_pairs, dtype=torch.long).T.contiguous(),
        child_pairs=torch.tensor(child_pairs, dtype=torch.long).T.contiguous(),
    )


def seasonal_naive_window(series, history: int, horizon: int, season: int):
    """``N x F`` seasonal naive forecasts from origin ``history`` of ``N x T`` series:
    ``y[s - m + (h mod m)]`` (as dsbo.analysis.forecast_baselines.seasonal_naive)."""
    if not 1 <= season <= history:
        raise ValueError(f"season {season} must be in [1, history={history}]")
    h = torch.arange(horizon)
    return series[:, history - season + (h % season)]


def coherent_window(
    hierarchy, history=24, horizon=4, in_dim=3, reps=6, seed=0, dtype=torch.float32, season=6
) -> dict:
    """One window of every node: smooth leaf series (seasonal + level + noise), each node the
    mean of its leaves (Eq. 6.1), covariates a calendar-like sine/cosine set, ``z_hist`` the
    first ``reps`` nodes' histories, ``scale`` the leaf counts, ``y_snaive`` the seasonal naive
    forecast of period ``season`` (the series' period is 6) from the window's origin."""
    g = torch.Generator().manual_seed(seed)
    S = torch.as_tensor(hierarchy.S, dtype=torch.float64)
    L = S.shape[1]
    t = torch.arange(history + horizon, dtype=torch.float64)
    phase = torch.rand(L, 1, generator=g, dtype=torch.float64) * 6.28
    level = 1 + torch.rand(L, 1, generator=g, dtype=torch.float64)
    leaves = (
        level
        + 0.5 * torch.sin(2 * torch.pi * t / 6 + phase)
        + 0.05 * torch.randn(L, len(t), generator=g, dtype=torch.float64)
    )
    series = (S / S.sum(1, keepdim=True)) @ leaves  # N x (H + F), the data mean property
    cov = torch.stack([torch.sin(2 * torch.pi * (t + k) / 12) for k in range(in_dim)], dim=-1)
    N = S.shape[0]
    batch = {
        "y_hist": series[:, :history],
        "y_fut": series[:, history:],
        "y_snaive": seasonal_naive_window(series, history, horizon, season),
        "nodes": torch.arange(N),
        "level": torch.as_tensor(hierarchy.level).long(),
        "scale": S.sum(1),
        "x_hist": cov[:history],
        "x_fut": cov[history:],
        "z_hist": series[:reps, :history].T.contiguous(),
    }
    return {k: v.to(dtype) if v.dtype.is_floating_point else v for k, v in batch.items()}


class Repeat(IterableDataset):
    """The same batches, ``times`` rounds."""

    def __init__(self, batches: list[dict], times: int = 1) -> None:
        self.batches, self.times = batches, times

    def __iter__(self):
        return itertools.chain.from_iterable(self.batches for _ in range(self.times))


class WindowData(pl.LightningDataModule):
    """A datamodule with a ``hierarchy`` and fixed batches (train, val, test, predict)."""

    def __init__(
        self, hierarchy, train: list[dict], val: list[dict] | None = None, times: int = 1
    ) -> None:
        super().__init__()
        self.hierarchy, self.train, self.val, self.times = hierarchy, train, val or train, times

    def train_dataloader(self):
        return DataLoader(Repeat(self.train, self.times), batch_size=None)

    def val_dataloader(self):
        return DataLoader(Repeat(self.val), batch_size=None)

    def test_dataloader(self):
        return DataLoader(Repeat(self.val), batch_size=None)

    def predict_dataloader(self):
        return DataLoader(Repeat(self.val), batch_size=None)


def quiet_trainer(**kwargs) -> pl.Trainer:
    options = dict(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    options.update(kwargs)
    return pl.Trainer(**options)
