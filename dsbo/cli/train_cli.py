"""The LightningCLI of ``python -m dsbo.train`` (:class:`DsboTrainCLI`): what a run does around
Lightning's subcommands.

Before the classes are built it sets the torch threads (``--threads``, default 1: measured faster
for the zoo's small networks on two shared cores, ``experiments/bench_surrogates.py``), derives
the model settings that follow from the data (:func:`~dsbo.cli.train_outputs.derive_model_settings`)
and makes the run directory. The trainer it builds logs to an offline W&B run
(:func:`wandb_mode`), saves checkpoints (:func:`default_checkpoint`) and, for a campaign's
train-run trial (``$DSBO_TRIAL_CHANNEL``, :mod:`dsbo.problems.trial_channel`), reports each
validation epoch through a :class:`~dsbo.integrations.lightning.ReportCallback`. After each
subcommand it writes ``summary.json`` (:meth:`DsboTrainCLI._finish`); after ``fit`` also
``checkpoints/final.ckpt``, the seasonal-naive floor decision
(:func:`~dsbo.cli.train_outputs.floor_choice`) and, with ``--test true``, the test of the best
checkpoint; after ``predict`` ``predictions.csv``
(:func:`~dsbo.cli.train_outputs.write_predictions`).

The hooks are LightningCLI's (``before_instantiate_classes``, ``instantiate_trainer``,
``before_<subcommand>``, ``after_<subcommand>``; see Lightning's "Configure hyperparameters from
the CLI" guide), so every option of the Trainer, the model and the data stays Lightning's own.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI
from pytorch_lightning.loggers import WandbLogger
from rich.console import Console
from torch import Tensor

from dsbo.cli.train_outputs import (
    SNAIVE_METRIC,
    derive_model_settings,
    fit_warnings,
    floor_choice,
    write_predictions,
)
from dsbo.cli.train_steps import add_missing_steps
from dsbo.errors import ConfigError
from dsbo.problems.trial_channel import CHANNEL_ENV, MONITOR_ENV, ChannelTrial

#: Where runs go unless ``--run_dir`` or ``$DSBO_RUN_DIR`` says otherwise.
RUNS_ROOT = Path("runs/train")
#: The run directory a caller chooses (``dsbo.sweep`` and the train-run problem set it).
RUN_DIR_ENV = "DSBO_RUN_DIR"
#: The final metrics of every subcommand run in a run directory, and the checkpoint paths.
SUMMARY_NAME = "summary.json"
#: Saved after ``fit`` returns: the trained surrogate, for :func:`~dsbo.surrogates.checkpoint.load_surrogate`.
FINAL_CHECKPOINT = "final.ckpt"
#: What ``predict`` writes (:func:`~dsbo.cli.train_outputs.write_predictions`).
PREDICTIONS_NAME = "predictions.csv"
#: Trainer defaults; small BO data sets train full batch, one step per epoch.
TRAINER_DEFAULTS: dict[str, Any] = {
    "accelerator": "auto",
    "max_epochs": 100,
    "log_every_n_steps": 1,
}
#: ``--seed_everything`` (``--seed``) unless given: runs are reproducible by default.
DEFAULT_SEED = 0


def wandb_mode() -> str:
    """``$WANDB_MODE``; unset, ``offline`` (``online`` under a W&B sweep agent, which sets
    ``$WANDB_SWEEP_ID``: its server needs the run's metrics). ``dryrun`` means offline."""
    default = "online" if os.environ.get("WANDB_SWEEP_ID") else "offline"
    mode = os.environ.get("WANDB_MODE", default)
    return "offline" if mode == "dryrun" else mode


def default_checkpoint(dirpath: Path, datamodule: Any, model: Any = None) -> ModelCheckpoint:
    """The checkpoint callback a run gets unless it configures its own: the best epoch by the
    model's ``checkpoint_monitor`` (a ``(metric, mode)`` class attribute, e.g. HiReD's
    ``("val_wape", "min")``) if it declares one, else by ``val_mse`` (the predictive mean's
    validation MSE) when the data have a validation split, else by ``train_loss``; plus
    ``last.ckpt``. Files are named after the metric and value."""
    declared = getattr(model, "checkpoint_monitor", None)
    if declared is not None:
        monitor, mode = declared
    else:
        has_val = float(getattr(datamodule, "hparams", {}).get("val_fraction", 0) or 0) > 0
        monitor, mode = ("val_mse" if has_val else "train_loss"), "min"
    return ModelCheckpoint(
        dirpath=str(dirpath),
        monitor=monitor,
        mode=mode,
        save_top_k=1,
        save_last=True,
        filename=f"best-{{epoch}}-{{{monitor}:.4g}}",
    )


def _class_name(config: Any) -> str:
    """The class name of a ``class_path`` config (the default run name), ``"model"`` without one."""
    class_path = config.get("class_path") if hasattr(config, "get") else None
    return str(class_path).rsplit(".", 1)[-1] if class_path else "model"


class DsboTrainCLI(LightningCLI):
    """LightningCLI with dsbo's defaults: run directories, offline W&B, checkpoints, a seed."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument(
            "--run_dir",
            type=str | None,
            default=None,
            help=f"run directory (default: ${RUN_DIR_ENV} or {RUNS_ROOT}/<name>-<timestamp>)",
        )
        parser.add_argument(
            "--name", type=str | None, default=None, help="run name (default: the model class name)"
        )
        parser.add_argument(
            "--threads",
            type=int | None,
            default=1,
            help="torch intra-op threads (default 1: measured faster for these small networks on "
            "2 shared cores, experiments/bench_surrogates.py; null keeps torch's default)",
        )
        parser.add_argument(
            "--test",
            type=bool,
            default=False,
            help="fit only: after the fit, test the best checkpoint on the same data; its test metrics join summary.json",
        )
        parser.link_arguments("data.in_dim", "model.init_args.in_dim", apply_on="instantiate")

    def _subconfig(self) -> Any:
        """The parsed config of the subcommand being run (the whole config without one)."""
        return self.config[self.subcommand] if self.subcommand else self.config

    def before_instantiate_classes(self) -> None:
        """Check and apply the run's own settings before the model, data and trainer exist:
        ``--threads``, ``--test`` (fit only), checkpoints restored with ``weights_only=True``,
        the model settings that follow from the data, and the run directory (made here).

        Raises:
            ConfigError: for ``threads < 1`` or ``--test true`` outside ``fit``.
        """
        cfg = self._subconfig()
        threads = cfg.get("threads")
        if threads is not None:
            if threads < 1:
                raise ConfigError(f"threads={threads} must be >= 1")
            torch.set_num_threads(threads)
        if cfg.get("test") and self.subcommand != "fit":
            raise ConfigError(
                f"--test true belongs to fit (it tests the fit's best checkpoint); {self.subcommand} got it"
            )
        if "weights_only" in cfg and cfg["weights_only"] is None:
            cfg["weights_only"] = True  # --ckpt_path restores with torch.load(weights_only=True)
        self.derived_settings = derive_model_settings(
            cfg
        )  # history, horizon, ... of a HierarchicalDataModule
        self.run_name = cfg.get("name") or _class_name(cfg.get("model"))
        run_dir = cfg.get("run_dir") or os.environ.get(RUN_DIR_ENV)
        if not run_dir:
            run_dir = RUNS_ROOT / f"{self.run_name}-{datetime.now():%Y%m%d-%H%M%S-%f}"
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()

    def instantiate_classes(self) -> None:
        """Build the classes, then give the model the generic steps it lacks
        (:func:`~dsbo.cli.train_steps.add_missing_steps`)."""
        super().instantiate_classes()
        self.generic_steps = add_missing_steps(self.model)

    def instantiate_trainer(self, **kwargs: Any) -> pl.Trainer:
        """The trainer with dsbo's defaults where the config leaves them out: the run directory
        as ``default_root_dir``, an offline W&B logger (``--trainer.logger`` unset or ``true``),
        :func:`default_checkpoint` (unless checkpointing is off or a ``ModelCheckpoint`` is
        configured) and, for a campaign's trial, a ``ReportCallback`` on its channel."""
        trainer_cfg = self._get(self.config_init, "trainer", default={})
        if trainer_cfg.get("default_root_dir") is None:
            kwargs["default_root_dir"] = str(self.run_dir)
        if trainer_cfg.get("logger") in (None, True):
            os.environ.setdefault("WANDB_SILENT", "true")
            kwargs["logger"] = WandbLogger(
                save_dir=str(self.run_dir),
                name=self.run_name,
                project=os.environ.get("WANDB_PROJECT", "dsbo"),
                mode=wandb_mode(),
            )
        callbacks = trainer_cfg.get("callbacks") or []
        callbacks = list(callbacks) if isinstance(callbacks, list | tuple) else [callbacks]
        wants_checkpoints = trainer_cfg.get("enable_checkpointing") is not False
        if wants_checkpoints and not any(isinstance(c, ModelCheckpoint) for c in callbacks):
            callbacks.append(
                default_checkpoint(self.run_dir / "checkpoints", self.datamodule, self.model)
            )
        if os.environ.get(
            CHANNEL_ENV
        ):  # a campaign's trial: report each validation epoch, stop when told
            from dsbo.integrations.lightning import ReportCallback

            callbacks.append(
                ReportCallback(
                    ChannelTrial(os.environ[CHANNEL_ENV]),
                    monitor=os.environ.get(MONITOR_ENV, "val_loss"),
                )
            )
        trainer_cfg["callbacks"] = callbacks
        return super().instantiate_trainer(**kwargs)

    # ------------------------------------------------------------------ around each subcommand
    def _log_data_hparams(self) -> None:
        """Log the datamodule's hyperparameters (under ``data``) to every logger."""
        hparams = getattr(self.datamodule, "hparams", None)
        if hparams:
            for logger in self.trainer.loggers:
                logger.log_hyperparams({"data": dict(hparams)})

    def before_fit(self) -> None:
        self._log_data_hparams()

    def before_validate(self) -> None:
        self._log_data_hparams()

    def before_test(self) -> None:
        self._log_data_hparams()

    def before_predict(self) -> None:
        self._log_data_hparams()

    def _metrics(self) -> dict[str, float]:
        """The trainer's scalar ``callback_metrics`` as floats (the last epoch's values)."""
        return {
            k: float(v)
            for k, v in self.trainer.callback_metrics.items()
            if isinstance(v, Tensor) and v.numel() == 1
        }

    def _finish(
        self, extra: dict[str, Any] | None = None, metrics: dict[str, float] | None = None
    ) -> dict[str, Any]:
        """Merge this subcommand's results into the run directory's ``summary.json`` (the
        metrics, the subcommand, model, run directory, seconds, generic steps, the best
        checkpoint and, for ``fit``, the monitored metric's best value, the epochs and steps and
        the seasonal-naive warnings; then ``extra``), copy the metrics to the W&B summary and
        close the W&B run. Returns the summary written."""
        trainer = self.trainer
        path = self.run_dir / SUMMARY_NAME
        summary: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        if self.subcommand == "fit":  # a former fit's, in the same run directory
            for key in ("warnings", "selected"):
                summary.pop(key, None)
        metrics = self._metrics() if metrics is None else metrics
        model_cfg = self._subconfig().get("model")
        summary.update(metrics)
        summary.update(
            {
                "subcommand": self.subcommand,
                "model": str(model_cfg.get("class_path")) if model_cfg is not None else None,
                "run_dir": str(self.run_dir),
                "seconds": round(time.perf_counter() - self.started, 3),
                "generic_steps": self.generic_steps,
            }
        )
        best = trainer.checkpoint_callback
        if best is not None and getattr(best, "best_model_path", ""):
            summary["checkpoint"] = best.best_model_path
            if self.subcommand == "fit" and best.monitor and best.best_model_score is not None:
                # the best epoch's value of the monitored metric (the metrics above are the last epoch's)
                summary[f"best_{best.monitor}"] = float(best.best_model_score)
                summary["best_checkpoint"] = best.best_model_path
        if self.subcommand == "fit":
            summary.update({"epochs": trainer.current_epoch, "global_step": trainer.global_step})
        summary.update(extra or {})
        if self.subcommand == "fit":
            found = fit_warnings(summary, self.model)
            for message in found:
                Console(stderr=True).print(f"[bold yellow]warning:[/] {message}", highlight=False)
            if found:
                summary["warnings"] = found
        path.write_text(json.dumps(summary, indent=2))
        for logger in trainer.loggers:
            if isinstance(logger, WandbLogger) and logger._experiment is not None:
                logger.experiment.summary.update({k: v for k, v in metrics.items()})
                if summary.get("warnings"):
                    logger.experiment.summary["warnings"] = summary["warnings"]
                logger.experiment.finish()
        return summary

    def after_fit(self) -> None:
        """Save ``final.ckpt``, keep a node forecaster's seasonal-naive floor when no epoch
        validated better, test the best checkpoint with ``--test true``, write the summary."""
        # After on_fit_end (where e.g. NeuralLinTS fits its BLR head and NeuralUCB its Z), which
        # the ModelCheckpoint files of the last epoch predate: this is the surrogate to load.
        floor = floor_choice(self.model, self._metrics(), self.trainer.checkpoint_callback)
        kept_floor = floor.get("selected") not in (None, "trained")
        final = self.run_dir / "checkpoints" / FINAL_CHECKPOINT
        self.trainer.save_checkpoint(final, weights_only=False)  # full: fit can resume from it
        metrics, extra = self._metrics(), {"checkpoint": str(final), **floor}
        if self._subconfig().get("test"):
            tested = self._test_best(at_floor=kept_floor)
            metrics.update({k: v for k, v in tested.items() if isinstance(v, float)})
            extra.update(tested)
        info = self._finish(extra, metrics)
        if kept_floor:
            Console(stderr=True).print(
                f"kept seasonal naive: no epoch validated better (best val_wape "
                f"{floor['best_val_wape']:.4g} >= val_wape_seasonal_naive {floor[SNAIVE_METRIC]:.4g}); "
                f"{final.name} forecasts seasonal naive",
                highlight=False,
            )
        Console(stderr=True).print(
            f"fit done: {info.get('checkpoint', 'no checkpoint')} (run directory {self.run_dir})"
        )

    def _test_best(self, at_floor: bool = False) -> dict[str, Any]:
        """``--test true``: test the fit's best checkpoint (by the monitored metric; else the
        final weights, when there is no checkpoint callback; the kept floor, ``final.ckpt``,
        when ``at_floor``) on the fit's datamodule. Returns the ``test_*`` metrics and
        ``tested_checkpoint``, what was tested."""
        best = self.trainer.checkpoint_callback
        ckpt = "" if at_floor else getattr(best, "best_model_path", "") if best is not None else ""
        results = self.trainer.test(
            self.model, datamodule=self.datamodule, ckpt_path=ckpt or None, verbose=False
        )
        out: dict[str, Any] = {k: float(v) for result in results for k, v in result.items()}
        if at_floor:
            out["tested_checkpoint"] = f"{FINAL_CHECKPOINT} (seasonal naive, the floor)"
        else:
            out["tested_checkpoint"] = ckpt or "final weights (no checkpoint callback)"
        return out

    def after_validate(self) -> None:
        """Write the validation metrics to ``summary.json``."""
        self._finish()

    def after_test(self) -> None:
        """Write the test metrics to ``summary.json``."""
        self._finish()

    def after_predict(self) -> None:
        """Write ``predictions.csv`` (raw units, or one row per node and step) and the summary."""
        outputs = self.trainer.predict_loop.predictions
        written = write_predictions(outputs, self.datamodule, self.run_dir / PREDICTIONS_NAME)
        self._finish({"predictions": str(written) if written else None})


__all__ = [
    "DEFAULT_SEED",
    "FINAL_CHECKPOINT",
    "PREDICTIONS_NAME",
    "RUNS_ROOT",
    "RUN_DIR_ENV",
    "SUMMARY_NAME",
    "TRAINER_DEFAULTS",
    "DsboTrainCLI",
    "default_checkpoint",
    "wandb_mode",
]
