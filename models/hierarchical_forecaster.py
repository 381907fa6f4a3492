r"""Training, evaluation and prediction shared by the zoo's hierarchical forecasters.

The forecasters of hierarchical time series in the zoo (:class:`~dsbo_zoo.hired.HiReD`, Paria
thesis ch. 6, and its baseline :class:`~dsbo_zoo.seq2seq_rnn.Seq2SeqRNN`) differ only in their
``forward(batch) -> B x F`` (scaled forecasts) and their penalty; :class:`HierarchicalForecaster`
holds the rest, in plain Lightning (the zoo never imports dsbo, so the hierarchy is duck-typed).

Training (section 6.8.1): the loss is the mean absolute error on the scaled targets of the
mini-batch plus the subclass's :meth:`~HierarchicalForecaster.regularizer`; Adam with its
learning rate decayed by ``lr_decay`` every ``decay_every`` epochs (``StepLR``) and early
stopping on the validation mean WAPE (:meth:`~HierarchicalForecaster.configure_callbacks`;
``early_stopping_patience=None`` turns it off). dsbo.train's checkpoint callback follows
:attr:`HierarchicalForecaster.checkpoint_monitor` (``val_wape``).

Batches (the data side's ``HierarchicalDataModule``; one window each): ``y_hist`` ``B x H``,
``y_fut`` ``B x F`` (scaled), ``y_snaive`` ``B x F`` (scaled, the seasonal naive forecast
:math:`y_{s - m + (h \bmod m)}` from the window's origin :math:`s`), ``nodes`` ``B``, ``level``
``B``, ``scale`` ``B`` (scaled -> original units), ``x_hist`` ``H x D``, ``x_fut`` ``F x D``,
``z_hist`` ``H x R``. ``y_fut`` is absent when predicting past the data; ``y_snaive`` is needed
only by models whose :attr:`~HierarchicalForecaster.uses_seasonal_naive` is true (HiReD's
default residual), others run without it.

Logged: ``train_loss``, ``train_mae``, ``train_ereg`` (the subclass's unweighted penalty:
HiReD's :math:`\bar E_{\rm reg}`, a mean over pairs), ``train_reg_share`` (the weighted
penalty's share of the loss, :math:`\lambda_E \bar E_{\rm reg} / \ell`, mean over steps);
``val_wape`` (mean over reporting levels, original scale), ``val_wape_level{k}``,
``val_smape``, ``val_smape_level{k}``, ``val_coherence`` (table 6.3's coherence WAPE, mean
over non-leaf levels, from the windows whose every node was predicted),
``val_coherence_level{k}``, ``val_mae``, and ``val_wape_seasonal_naive`` (the same mean WAPE
of the batches' ``y_snaive`` forecasts, when every evaluation batch carries them: a model whose
best ``val_wape`` is above it fits worse than the seasonal naive forecast); the same with
``test_``. ``predict_step`` returns
``{"nodes", "level", "forecast"}`` (original units, ``B x F``), ``target`` (original units) when
the batch has ``y_fut``, and the batch's ``t_fut`` (``dsbo.train predict`` writes them as a CSV,
one row per node and step).

**Selection with a floor** (issue 46): :func:`select_on_validation` validates candidates (e.g. the
best checkpoints of HiReD with and without its seasonal-naive residual) together with
:class:`SeasonalNaiveForecaster`, the untrained residual model's exact forecast, and returns the
one with the lowest ``val_wape`` (a tie goes to seasonal naive): a forecaster selected this way
never validates worse than seasonal naive.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, EarlyStopping
from torch import Tensor

from .forecast_metrics import coherence_wape, level_metrics

#: Batch keys of the hierarchical batch contract (the data side's). ``y_fut`` is absent when
#: predicting past the data; ``y_snaive`` is required only by models with ``uses_seasonal_naive``.
BATCH_KEYS = ("y_hist", "y_fut", "y_snaive", "nodes", "level", "scale", "x_hist", "x_fut", "z_hist")
#: Keys a batch may carry to place its forecasts in time (the data side's ``t_fut``: the step
#: index of each forecast step); passed through by predict_step, and used to group evaluation
#: batches into windows.
TIME_KEYS = ("t_fut",)


def check_int(cls: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{cls}.{name} must be an integer >= {minimum}, got {value!r}")
    return value


def check_float(cls: str, name: str, value: Any, positive: bool) -> float:
    ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        raise ValueError(
            f"{cls}.{name} must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}"
        )
    return float(value)


class HierarchicalForecaster(pl.LightningModule, ABC):
    """Training, evaluation and prediction shared by HiReD and its baselines (module docstring).

    A subclass defines ``forward(batch) -> B x F`` (scaled forecasts) and may override
    :meth:`regularizer`. The hierarchy (duck-typed: ``S``, ``level``, ``node_names``,
    ``leaf_names``, ``leaf_pairs``, ``child_pairs``) comes from ``trainer.datamodule.hierarchy``
    in :meth:`setup`, or from :meth:`set_hierarchy`.
    """

    #: (metric, mode) the checkpoint callback of ``dsbo.train`` and the early stopping follow.
    checkpoint_monitor = ("val_wape", "min")
    #: Whether ``forward`` reads the batch's ``y_snaive`` (then a batch without it is an error).
    uses_seasonal_naive = False

    def __init__(self) -> None:
        super().__init__()
        self.hierarchy: Any = None
        self._eval_outputs: list[dict[str, Tensor]] = []

    # ------------------------------------------------------------------ hierarchy
    def set_hierarchy(self, hierarchy: Any) -> None:
        """Keep what evaluation needs: ``S`` (coherence), node names, levels, leaf rows."""
        S = torch.as_tensor(hierarchy.S, dtype=torch.float64)
        node_names = [str(n) for n in hierarchy.node_names]
        if S.shape[0] != len(node_names):
            raise ValueError(f"hierarchy: S has {S.shape[0]} rows but {len(node_names)} node names")
        self.hierarchy = hierarchy
        self._S = S
        self._node_level = torch.as_tensor(hierarchy.level).long()
        leaf_index = getattr(hierarchy, "leaf_index", None)
        leaf_names = getattr(hierarchy, "leaf_names", None)
        if leaf_index is not None:
            self._leaf_index = torch.as_tensor(leaf_index).long()
        elif leaf_names is not None:
            position = {name: k for k, name in enumerate(node_names)}
            self._leaf_index = torch.tensor(
                [position[str(n)] for n in leaf_names], dtype=torch.long
            )
        else:
            self._leaf_index = None  # the common format: the last L nodes are the leaves

    def setup(self, stage: str) -> None:
        datamodule = (
            getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        )
        hierarchy = getattr(datamodule, "hierarchy", None)
        if hierarchy is not None:
            self.set_hierarchy(hierarchy)

    # ------------------------------------------------------------------ model interface
    @abstractmethod
    def forward(self, batch: Mapping[str, Tensor]) -> Tensor:
        """Scaled forecasts ``B x F`` of the batch's nodes."""

    def regularizer(self) -> Tensor:
        """The penalty added to the MAE (already weighted); zero unless a subclass has one."""
        return torch.zeros((), device=self.device, dtype=self.dtype)

    def regularizer_value(self) -> Tensor:
        """The unweighted penalty, logged as ``train_ereg``."""
        return torch.zeros((), device=self.device, dtype=self.dtype)

    def _inputs(self, batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
        optional = ("y_fut",) if self.uses_seasonal_naive else ("y_fut", "y_snaive")
        missing = [k for k in BATCH_KEYS if k not in batch and k not in optional]
        if missing:
            hint = (
                (
                    " (this model adds its forecast to the seasonal naive one: a data module that provides "
                    "y_snaive, or baseline='none')"
                )
                if "y_snaive" in missing
                else ""
            )
            raise KeyError(
                f"{type(self).__name__}: the batch lacks {missing} (hierarchical batch contract){hint}"
            )
        H, F = self.hparams.history, self.hparams.horizon
        y_hist, x_hist, x_fut, z_hist = (
            batch["y_hist"],
            batch["x_hist"],
            batch["x_fut"],
            batch["z_hist"],
        )
        expected = {
            "y_hist": (y_hist.shape[-1], H),
            "x_hist": (x_hist.shape[0], H),
            "z_hist": (z_hist.shape[0], H),
            "x_fut": (x_fut.shape[0], F),
            "x_hist/x_fut covariates": (x_hist.shape[-1], self.hparams.in_dim),
            "z_hist representatives": (z_hist.shape[-1], self.hparams.num_representatives),
        }
        for name, (got, want) in expected.items():
            if got != want:
                raise ValueError(
                    f"{type(self).__name__}: batch {name} has size {got} but the model expects {want} "
                    "(match the model's history/horizon/in_dim/num_representatives to the data)"
                )
        dtype = self.dtype
        out = {
            "y_hist": y_hist.to(dtype),
            "x_hist": x_hist.to(dtype),
            "x_fut": x_fut.to(dtype),
            "z_hist": z_hist.to(dtype),
            "nodes": batch["nodes"].long(),
        }
        if self.uses_seasonal_naive:
            y_snaive = batch["y_snaive"]
            if tuple(y_snaive.shape) != (y_hist.shape[0], F):
                raise ValueError(
                    f"{type(self).__name__}: batch y_snaive has shape {tuple(y_snaive.shape)}, "
                    f"expected {(y_hist.shape[0], F)} (nodes x horizon)"
                )
            out["y_snaive"] = y_snaive.to(dtype)
        return out

    # ------------------------------------------------------------------ Lightning hooks
    def training_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> Tensor:
        pred = self(batch)
        mae = (pred - batch["y_fut"].to(pred)).abs().mean()
        reg = self.regularizer()
        loss = mae + reg
        n = len(batch["nodes"])
        values = {
            "train_loss": loss.detach(),
            "train_mae": mae.detach(),
            "train_ereg": self.regularizer_value().detach(),
            "train_reg_share": (reg / loss).detach()
            if float(loss.detach()) > 0
            else torch.zeros_like(loss.detach()),
        }
        self.log_dict(values, on_step=False, on_epoch=True, batch_size=n)
        return loss

    def _eval_step(self, batch: Mapping[str, Tensor]) -> None:
        pred = self(batch).detach()
        scale = batch["scale"].to(pred)[:, None]
        target = batch["y_fut"].to(pred)
        self._eval_outputs.append(
            {
                "nodes": batch["nodes"].long().cpu(),
                "level": batch["level"].long().cpu(),
                "pred": (pred * scale).cpu(),
                "target": (target * scale).cpu(),
                "abs_err": (pred - target).abs().sum().cpu(),
                "count": torch.tensor(target.numel()),
            }
        )
        if "t_fut" in batch:
            self._eval_outputs[-1]["start"] = int(batch["t_fut"].reshape(-1)[0])
        if "y_snaive" in batch:
            self._eval_outputs[-1]["snaive"] = (batch["y_snaive"].to(pred) * scale).cpu()

    def validation_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> None:
        self._eval_step(batch)

    def test_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> None:
        self._eval_step(batch)

    def on_validation_epoch_start(self) -> None:
        self._eval_outputs = []

    def on_test_epoch_start(self) -> None:
        self._eval_outputs = []

    def on_validation_epoch_end(self) -> None:
        self._log_eval("val")

    def on_test_epoch_end(self) -> None:
        self._log_eval("test")

    def evaluation_metrics(self, outputs: list[dict[str, Tensor]]) -> dict[str, Tensor]:
        """Per-level and mean WAPE/SMAPE (original scale) of evaluation ``outputs`` (one dict per
        batch), the scaled-unit MAE, and coherence over the complete windows (module docstring)."""
        pred = torch.cat([o["pred"] for o in outputs])
        target = torch.cat([o["target"] for o in outputs])
        level = torch.cat([o["level"] for o in outputs])
        num_levels = int(self._node_level.max()) + 1 if self.hierarchy is not None else None
        found = level_metrics(pred, target, level, num_levels=num_levels)
        out: dict[str, Tensor] = {"wape": found["wape_mean"], "smape": found["smape_mean"]}
        for key, value in found.items():
            if "/level" in key:
                name, k = key.split("/")
                out[f"{name}_{k}"] = value
        out["mae"] = sum(o["abs_err"] for o in outputs) / sum(o["count"] for o in outputs)
        if all("snaive" in o for o in outputs):
            snaive = torch.cat([o["snaive"] for o in outputs])
            out["wape_seasonal_naive"] = level_metrics(
                snaive, target, level, num_levels=num_levels
            )["wape_mean"]
        windows = self._complete_windows(outputs)
        if windows:
            coherence = coherence_wape(
                torch.cat(windows, dim=1).double(), self._S, self._node_level, self._leaf_index
            )
            out["coherence"] = coherence["coherence/mean"]
            for key, value in coherence.items():
                if "/level" in key:
                    out[f"coherence_{key.split('/')[1]}"] = value
        return out

    def _complete_windows(self, outputs: list[dict[str, Tensor]]) -> list[Tensor]:
        """``N x F`` forecasts of every window whose every node was predicted. Evaluation
        batches are one window each; batches with the same first forecast step (``t_fut``)
        belong to one window. Without ``t_fut``, a window's node chunks are taken to be
        consecutive: a node seen twice starts the next window."""
        if self.hierarchy is None:
            return []
        N = self._S.shape[0]
        groups: dict[Any, list[dict[str, Tensor]]] = {}
        window = 0
        seen = torch.zeros(N, dtype=torch.bool)
        for o in outputs:
            if "start" in o:
                key = ("start", o["start"])
            else:
                if bool(seen[o["nodes"]].any()):
                    window, seen = window + 1, torch.zeros(N, dtype=torch.bool)
                seen[o["nodes"]] = True
                key = ("run", window)
            groups.setdefault(key, []).append(o)
        windows = []
        for parts in groups.values():
            pred = torch.zeros(N, parts[0]["pred"].shape[1], dtype=parts[0]["pred"].dtype)
            covered = torch.zeros(N, dtype=torch.bool)
            for o in parts:
                pred[o["nodes"]] = o["pred"]
                covered[o["nodes"]] = True
            if bool(covered.all()):
                windows.append(pred)
        return windows

    def _log_eval(self, stage: str) -> None:
        if not self._eval_outputs:
            return
        metrics = self.evaluation_metrics(self._eval_outputs)
        self._eval_outputs = []
        self.log_dict(
            {f"{stage}_{k}": v.to(self.dtype) for k, v in metrics.items()},
            on_step=False,
            on_epoch=True,
        )

    def predict_step(self, batch: Mapping[str, Tensor], batch_idx: int) -> dict[str, Tensor]:
        pred = self(batch).detach()
        scale = batch["scale"].to(pred)[:, None]
        out = {"nodes": batch["nodes"].long(), "forecast": pred * scale}
        if "y_fut" in batch:
            out["target"] = batch["y_fut"].to(pred) * scale
        if "level" in batch:
            out["level"] = batch["level"].long()
        out.update({k: batch[k] for k in TIME_KEYS if k in batch})
        return out

    def configure_optimizers(self) -> dict[str, Any]:
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(
            optimizer, step_size=self.hparams.decay_every, gamma=self.hparams.lr_decay
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "epoch"},
        }

    def configure_callbacks(self) -> list[Callback]:
        patience = self.hparams.early_stopping_patience
        if patience is None:
            return []
        monitor, mode = self.checkpoint_monitor
        return [EarlyStopping(monitor=monitor, mode=mode, patience=patience)]


class SeasonalNaiveForecaster(HierarchicalForecaster):
    r"""The seasonal naive forecast as a forecaster: ``forward`` returns the batch's ``y_snaive``
    (:math:`y_{s - m + (h \bmod m)}`), nothing to train. It is what a HiReD with the residual is
    before training, and the floor :func:`select_on_validation` always offers.

    Example:
        >>> trainer.validate(SeasonalNaiveForecaster(), datamodule=dm)  # val_wape == val_wape_seasonal_naive
    """

    uses_seasonal_naive = True

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.hparams.early_stopping_patience = None

    def forward(self, batch: Mapping[str, Tensor]) -> Tensor:
        if "y_snaive" not in batch:
            raise KeyError(
                "SeasonalNaiveForecaster: the batch lacks y_snaive (hierarchical batch contract)"
            )
        return batch["y_snaive"].to(self.dtype)

    def configure_optimizers(self) -> Any:
        raise RuntimeError(
            "SeasonalNaiveForecaster has nothing to train: validate, test or predict it"
        )


#: The name :func:`select_on_validation` gives the seasonal naive candidate.
SEASONAL_NAIVE = "seasonal_naive"


def select_on_validation(
    candidates: Mapping[str, HierarchicalForecaster], datamodule: Any, floor: bool = True
) -> tuple[str, HierarchicalForecaster, dict[str, float]]:
    """The candidate with the lowest validation mean WAPE (``val_wape``) on ``datamodule``'s
    validation windows; with ``floor`` the seasonal naive forecast (:class:`SeasonalNaiveForecaster`,
    named :data:`SEASONAL_NAIVE`) is a candidate too, listed first, so a tie goes to it and a
    trained model is kept only when it validates strictly better. Pass each candidate in the
    state to be judged (e.g. its best checkpoint loaded).

    Returns:
        ``(name, model, {name: val_wape})`` of the chosen candidate.

    Example:
        >>> name, model, scores = select_on_validation({"residual": hired, "none": thesis}, dm)
    """
    if floor and SEASONAL_NAIVE in candidates:
        raise ValueError(
            f"select_on_validation: the name {SEASONAL_NAIVE!r} is the floor's; name the candidate otherwise"
        )
    pool: dict[str, HierarchicalForecaster] = (
        {SEASONAL_NAIVE: SeasonalNaiveForecaster()} if floor else {}
    )
    pool.update(candidates)
    if not pool:
        raise ValueError("select_on_validation: no candidates")
    scores: dict[str, float] = {}
    for name, model in pool.items():
        trainer = pl.Trainer(
            accelerator="auto",
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            enable_checkpointing=False,
        )
        logged = trainer.validate(model, datamodule=datamodule, verbose=False)[0]
        if "val_wape" not in logged:
            raise ValueError(f"select_on_validation: candidate {name!r} logged no val_wape")
        scores[name] = float(logged["val_wape"])
    best = min(pool, key=lambda n: (scores[n], list(pool).index(n)))
    return best, pool[best], scores


def seasonal_naive_warning(
    best_val_wape: float | None, snaive_val_wape: float | None, uses_seasonal_naive: bool
) -> str | None:
    """The warning for a fit whose best ``val_wape`` is worse than the seasonal naive forecasts'
    (``val_wape_seasonal_naive``), with advice that depends on whether the model already forecasts a
    residual on seasonal naive; ``None`` when it is not worse (or a value is missing). ``dsbo.train``
    and ``experiments/hired.py`` print it."""
    if snaive_val_wape is None or best_val_wape is None or not best_val_wape > snaive_val_wape:
        return None
    if uses_seasonal_naive:
        residual = "a smaller lr or fewer epochs (the residual model starts at seasonal naive: training moved away from it)"
    else:
        residual = "the seasonal naive residual base (HiReD baseline='seasonal_naive'), more epochs or a smaller lr"
    return (
        f"the model fits worse than seasonal naive on the validation windows: best val_wape {best_val_wape:.4g} > "
        f"val_wape_seasonal_naive {snaive_val_wape:.4g}. Try: {residual}; the settings derived for this data "
        "(HierarchicalDataModule's preset and season; a history of at least one season); or check the data's "
        "frequency and scale; or select on validation with the seasonal naive floor (select_on_validation)"
    )


def check_common(
    cls: str,
    history: int,
    horizon: int,
    in_dim: int,
    num_representatives: int,
    lr: float,
    lr_decay: float,
    decay_every: int,
    early_stopping_patience: int | None,
) -> None:
    check_int(cls, "history", history, 1)
    check_int(cls, "horizon", horizon, 1)
    check_int(cls, "in_dim", in_dim, 0)
    check_int(cls, "num_representatives", num_representatives, 0)
    check_float(cls, "lr", lr, positive=True)
    check_float(cls, "lr_decay", lr_decay, positive=True)
    check_int(cls, "decay_every", decay_every, 1)
    if early_stopping_patience is not None:
        check_int(cls, "early_stopping_patience", early_stopping_patience, 0)


__all__ = [
    "BATCH_KEYS",
    "SEASONAL_NAIVE",
    "TIME_KEYS",
    "HierarchicalForecaster",
    "SeasonalNaiveForecaster",
    "seasonal_naive_warning",
    "select_on_validation",
]
