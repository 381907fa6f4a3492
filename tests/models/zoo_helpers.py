"""Shared helpers of the zoo tests: a quiet, cheap Lightning fit on (x, y, index) batches."""

from __future__ import annotations

import logging
import warnings

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)


def loader(x: torch.Tensor, y: torch.Tensor, batch_size: int | None = None, shuffle: bool = False):
    data = TensorDataset(x, y, torch.arange(len(y)))
    return DataLoader(data, batch_size=batch_size or len(y), shuffle=shuffle)


def fit(
    module: pl.LightningModule, x, y, epochs: int, batch_size=None, shuffle=False, callbacks=()
):
    trainer = pl.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=list(callbacks),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, loader(x, y, batch_size, shuffle))
    return module.eval()
