"""The training set behind a Trainer, read once: for the models' post-training passes.

The zoo's datasets are rows ``(x, y, index)`` with ``index`` in ``0..n-1``. A train dataloader
may visit rows several times in one epoch (dsbo's BO-step trainer runs one epoch of many
identical full batches) or in shuffled mini-batches; the Bayesian heads (NeuralLinTS's
feature regression, NeuralUCB's design matrix ``Z``) and PosteriorSMB's table of
``delta(x_i)`` must see every training point exactly once.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor


def num_train_points(trainer: pl.Trainer) -> int | None:
    """Size of the dataset behind ``trainer``'s train dataloader, or ``None`` if unsized."""
    loader = trainer.train_dataloader
    dataset = getattr(loader, "dataset", None)
    if dataset is None and isinstance(loader, (list, tuple)) and loader:
        dataset = getattr(loader[0], "dataset", None)
    try:
        return len(dataset)  # type: ignore[arg-type]
    except TypeError:
        return None


def unique_training_rows(
    trainer: pl.Trainer, device: torch.device
) -> tuple[Tensor, Tensor, Tensor]:
    """Every training row once, ordered by index: ``(x, y, index)`` on ``device``.

    Reads ``trainer.train_dataloader`` batch by batch, keeps the first occurrence of each
    index and stops as soon as all ``n`` rows (the dataset's size, when known) are in.
    """
    n = num_train_points(trainer)
    xs, ys, indices = [], [], []
    seen: set[int] = set()
    for x, y, index in trainer.train_dataloader:
        fresh = [i for i, k in enumerate(index.tolist()) if k not in seen]
        if fresh:
            keep = torch.tensor(fresh, dtype=torch.long)
            xs.append(x[keep].to(device))
            ys.append(y[keep].to(device))
            indices.append(index[keep].to(device))
            seen.update(index[keep].tolist())
        if n is not None and len(seen) >= n:
            break
    index = torch.cat(indices)
    order = torch.argsort(index)
    return torch.cat(xs)[order], torch.cat(ys)[order], index[order]


__all__ = ["num_train_points", "unique_training_rows"]
