r"""The datasets that serve a hierarchy's windows, and the level-weighted node sampling.

:class:`~dsbo.data.hierarchical.HierarchicalDataModule` makes one batch per (window, nodes)
(:meth:`~dsbo.data.hierarchical.HierarchicalDataModule.make_batch`); the datasets here decide
which:

- :class:`TrainWindows`: random training windows, ``length`` batches per pass, each with
  nodes drawn by :func:`sample_nodes`; pass ``k`` is seeded from ``(seed, k)``, so every epoch
  differs and a run is reproducible;
- :class:`FixedWindows`: every (window, chunk of at most ``batch_nodes`` nodes) of a
  validation, test or prediction split, in order, so every node of every window is scored
  once.

**Level-weighted sampling** (Paria thesis, ch. 6, eq. 6.6): training batches draw nodes with
probability :math:`\pi_i \propto \alpha^{-d(i)}` (:func:`level_weights`, :math:`d(i)` the
node's depth). Section 6.5 says both "with replacement" and "without replacement"; here
``alpha == 1`` draws a uniform subset without replacement (every node once when :math:`N \le`
``batch_nodes``: the plain mini-batches of 6.8.1) and ``alpha != 1`` draws
``min(batch_nodes, N)`` nodes *with* replacement from :math:`\pi`, so the weighting acts on
small hierarchies too.

Example:
    >>> import numpy as np
    >>> level_weights(np.array([0, 1, 1]), alpha=2.0).round(3).tolist()
    [0.5, 0.25, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset, IterableDataset

if TYPE_CHECKING:
    from dsbo.data.hierarchical import HierarchicalDataModule


def level_weights(depth: np.ndarray, alpha: float) -> np.ndarray:
    r"""Node sampling probabilities :math:`\pi_i \propto \alpha^{-d(i)}` (eq. 6.6), summing to 1.

    Formed in logs and shifted by the largest, so deep hierarchies with a large ``alpha`` do not
    underflow.
    """
    logw = -np.asarray(depth, dtype=np.float64) * math.log(alpha)
    w = np.exp(logw - logw.max())
    return w / w.sum()


def sample_nodes(
    probs: Tensor, batch_nodes: int, alpha: float, generator: torch.Generator
) -> Tensor:
    """Training nodes: a uniform subset (``alpha == 1``) or ``min(batch_nodes, N)`` draws with
    replacement from ``probs`` (eq. 6.6, module docstring)."""
    num_nodes = probs.numel()
    size = min(batch_nodes, num_nodes)
    if alpha == 1.0:
        return torch.randperm(num_nodes, generator=generator)[:size]
    return torch.multinomial(probs, size, replacement=True, generator=generator)


class TrainWindows(IterableDataset):
    """Random training windows: ``length`` batches per pass, reseeded from ``(seed, pass)``."""

    def __init__(self, dm: HierarchicalDataModule, length: int) -> None:
        self.dm, self.length, self.passes = dm, length, 0

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[dict[str, Tensor]]:
        g = torch.Generator().manual_seed(self.dm.seed * 1_000_003 + self.passes)
        self.passes += 1
        starts = self.dm.forecast_starts("train")
        for _ in range(self.length):
            start = starts[int(torch.randint(len(starts), (1,), generator=g))]
            yield self.dm.make_batch(start, self.dm.sample_nodes(g))


class FixedWindows(Dataset):
    """Every (window, chunk of <= batch_nodes nodes) of a split, in order."""

    def __init__(self, dm: HierarchicalDataModule, starts: list[int]) -> None:
        self.dm = dm
        chunks = torch.arange(dm.num_nodes).split(dm.batch_nodes)
        self.items = [(s, c) for s in starts for c in chunks]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return self.dm.make_batch(*self.items[i])
