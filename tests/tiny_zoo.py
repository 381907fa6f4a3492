"""A tiny zoo-style LightningModule for the train/checkpoint/sweep tests.

Same contract as the zoo (``models/``): ``in_dim`` first, ``save_hyperparameters()``, batches
``(x, y, index)``, ``forward(x)`` returns ``members x n``. It defines only ``training_step``, so
the CLI's generic validation/test/predict steps are exercised.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor

from dsbo_zoo.mlp import EnsembleMLP


class TinyEnsemble(pl.LightningModule):
    posterior_kind = "ensemble"

    def __init__(
        self,
        in_dim: int,
        width: int = 16,
        num_members: int = 2,
        gamma: float = 1.0,
        lr: float = 0.05,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = EnsembleMLP(
            in_dim, width=width, num_members=num_members, gamma=gamma, parameterization="standard"
        )
        self.lr = lr

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y, index = batch
        assert index.dtype == torch.long and index.max() < len(
            self.trainer.train_dataloader.dataset
        )
        loss = (self(x) - y).pow(2).mean()
        self.log("train_loss", loss, on_step=False, on_epoch=True, batch_size=len(y))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)


class TinyWapeLogger(TinyEnsemble):
    """Logs HiReD's validation metric names with fixed values: ``val_wape`` (``val_wape`` per
    epoch from ``val_wapes``, the last value repeated) and ``val_wape_seasonal_naive``
    (``snaive_wape``); checkpoints follow ``val_wape`` like HiReD's."""

    checkpoint_monitor = ("val_wape", "min")

    def __init__(
        self, in_dim: int, val_wapes: list[float] | None = None, snaive_wape: float = 0.3, **kwargs
    ) -> None:
        super().__init__(in_dim, **kwargs)
        self.save_hyperparameters()
        self.val_wapes = list(val_wapes or [0.5])

    def validation_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> None:
        value = self.val_wapes[min(self.current_epoch, len(self.val_wapes) - 1)]
        self.log("val_wape", float(value), on_step=False, on_epoch=True, batch_size=len(batch[1]))
        self.log(
            "val_wape_seasonal_naive",
            float(self.hparams.snaive_wape),
            on_step=False,
            on_epoch=True,
            batch_size=len(batch[1]),
        )


class TinyFloorWapeLogger(TinyWapeLogger):
    """:class:`TinyWapeLogger` that starts at seasonal naive and can keep it (``keep_floor``,
    an ``at_floor`` buffer kept in checkpoints), as HiReD with its residual."""

    uses_seasonal_naive = True

    def __init__(
        self, in_dim: int, val_wapes: list[float] | None = None, snaive_wape: float = 0.3, **kwargs
    ) -> None:
        super().__init__(in_dim, val_wapes=val_wapes, snaive_wape=snaive_wape, **kwargs)
        self.register_buffer("at_floor", torch.zeros((), dtype=torch.bool))

    def keep_floor(self) -> None:
        self.at_floor.fill_(True)
