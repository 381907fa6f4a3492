"""``python -m dsbo.train``: train, validate, test or predict with a zoo model (LightningCLI).

A LightningCLI over the surrogate zoo (every LightningModule in ``models/``, picked by class
name) and :class:`~dsbo.data.ObservationDataModule` (or any LightningDataModule named by
``data.class_path``, e.g. :class:`~dsbo.data.SyntheticClassesDataModule`). The datamodule's ``in_dim`` is passed to
the model, and so are the settings of its ``model_settings()`` (HierarchicalDataModule: history,
horizon, num_nodes, num_representatives; :func:`~dsbo.cli.train_outputs.derive_model_settings`):
a config pointed at new data repeats none of them. Typical use::

    python -m dsbo.train fit --config configs/train/simple-smb-branin.yaml
    python -m dsbo.train fit --config configs/train/simple-smb-branin.yaml --model.gamma 4
    python -m dsbo.train fit --model SimpleSMB --model.width 64 --data.problem hartmann6
    python -m dsbo.train test --config configs/train/simple-smb-branin.yaml \\
        --ckpt_path runs/train/SimpleSMB-.../checkpoints/epoch=....ckpt
    python -m dsbo.train fit --config configs/train/hired-labour.yaml --test true   # fit, then test the best checkpoint

Every run writes to its run directory (``--run_dir``; default ``$DSBO_RUN_DIR`` or
``runs/train/<name>-<timestamp>``): ``config.yaml``, ``checkpoints/`` (the best epoch by the
model's ``checkpoint_monitor`` if it declares one (HiReD: ``val_wape``), else ``val_mse``, or
``train_loss`` without a validation split, and ``last.ckpt``; load one as a BoTorch model with
:func:`dsbo.surrogates.checkpoint.load_surrogate`),
``summary.json`` (the final metrics of every subcommand run there, the checkpoint path),
``checkpoints/final.ckpt`` (saved when ``fit`` returns, after the module's ``on_fit_end``),
``predictions.csv`` (``predict``: raw inputs, target and predicted mean/std in raw units; for node
forecasters such as HiReD one row per node and forecast step, :func:`~dsbo.cli.train_outputs.write_node_forecasts`) and
the offline W&B run (``WANDB_MODE`` overrides ``offline``; ``--trainer.logger false`` turns it off,
``--trainer.logger`` another logger replaces it).

``fit --test true`` tests the best checkpoint (by the monitored metric; the final weights when
there is no checkpoint callback) on the same datamodule right after the fit: its ``test_*``
metrics join the fit's in ``summary.json`` and the W&B summary, with ``tested_checkpoint``.

When a fit logs ``val_wape_seasonal_naive`` (HiReD: the validation mean WAPE of the seasonal
naive forecasts, the same metric as ``val_wape``) and its best ``val_wape`` is worse, the run
prints a warning and ``summary.json`` lists it under ``warnings`` (:func:`fit_warnings`).
A model that can keep its seasonal-naive floor (HiReD with its residual) keeps it when no epoch
validated better (a tie included; :func:`~dsbo.cli.train_outputs.floor_choice`): ``final.ckpt``
then forecasts seasonal naive, ``--test true`` tests that, and ``summary.json`` says ``selected``.

Zoo modules that lack ``validation_step``, ``test_step`` or ``predict_step`` get the generic ones of
:class:`SurrogateMetrics` (MSE and R^2 of the ensemble mean, standardized, ``{val,test}_{mse,r2}``).
With ``$DSBO_TRIAL_CHANNEL`` set (a campaign's train-run trial, early stopping) a ``ReportCallback``
reports ``$DSBO_TRIAL_MONITOR`` after each validation epoch and stops the fit when told.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
import time
import warnings
from argparse import ArgumentError
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
import yaml
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI
from pytorch_lightning.loggers import WandbLogger
from pytorch_lightning.utilities.model_helpers import is_overridden
from rich.console import Console
from torch import Tensor, nn
from torchmetrics import MeanSquaredError, R2Score

from dsbo.cli.common import print_error
from dsbo.cli.train_outputs import (
    SNAIVE_METRIC,
    derive_model_settings,
    fit_warnings,
    floor_choice,
    write_predictions,
)
from dsbo.cli.train_outputs import write_node_forecasts as write_node_forecasts  # re-exported
from dsbo.data import ObservationDataModule
from dsbo.errors import ConfigError, DsboError
from dsbo.problems.trial_channel import CHANNEL_ENV, MONITOR_ENV, ChannelTrial

#: Package whose modules are imported so that ``--model SimpleSMB`` resolves by class name.
ZOO_PACKAGE = "dsbo_zoo"
#: Where runs go unless ``--run_dir`` or ``$DSBO_RUN_DIR`` says otherwise.
RUNS_ROOT = Path("runs/train")
RUN_DIR_ENV = "DSBO_RUN_DIR"
SUMMARY_NAME = "summary.json"
#: Saved after ``fit`` returns: the trained surrogate, for :func:`~dsbo.surrogates.checkpoint.load_surrogate`.
FINAL_CHECKPOINT = "final.ckpt"
PREDICTIONS_NAME = "predictions.csv"
STEP_HOOKS = ("validation_step", "test_step", "predict_step")
#: Trainer defaults; small BO data sets train full batch, one step per epoch.
TRAINER_DEFAULTS: dict[str, Any] = {"accelerator": "auto", "max_epochs": 100, "log_every_n_steps": 1}
DEFAULT_SEED = 0


def import_zoo() -> list[str]:
    """Import every module of the zoo package so jsonargparse finds its LightningModules by
    class name; returns the modules imported (a module that fails to import is skipped with a
    warning naming it)."""
    package = importlib.import_module(ZOO_PACKAGE)
    names = [f"{ZOO_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    imported = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # one broken zoo module must not take the others down
            warnings.warn(f"zoo module {name} failed to import, its models are unavailable: {exc!r}", stacklevel=2)
        else:
            imported.append(name)
    return imported


# ---------------------------------------------------------------------- generic steps
def surrogate_mean_std(module: pl.LightningModule, x: Tensor) -> tuple[Tensor, Tensor]:
    """Predictive mean and standard deviation of a zoo ``module`` at ``x`` (``n x d``), in the
    module's (standardized) units.

    A ``posterior_kind = "gaussian"`` module answers with ``predict_mean_cov``; otherwise
    ``module(x)`` is ``members x n`` (an ensemble: mean and std over members) or ``n`` (a
    point prediction, std zero).
    """
    n = x.shape[0]
    if getattr(module, "posterior_kind", None) == "gaussian" and callable(getattr(module, "predict_mean_cov", None)):
        mean, cov = module.predict_mean_cov(x.unsqueeze(-2))
        return mean.reshape(n).to(x), cov.reshape(n).clamp_min(0).sqrt().to(x)
    out = module(x)
    if not isinstance(out, Tensor):
        raise ConfigError(
            f"{type(module).__name__}.forward returned {type(out).__name__}; the generic metrics need "
            "a tensor of shape members x n or n (or the module's own validation/test/predict steps)"
        )
    if out.ndim == 1 and out.shape[0] == n:
        return out, torch.zeros_like(out)
    if out.ndim == 2 and out.shape[1] == n:
        std = out.std(dim=0) if out.shape[0] > 1 else torch.zeros_like(out[0])
        return out.mean(dim=0), std
    raise ConfigError(
        f"{type(module).__name__}.forward returned shape {tuple(out.shape)} for {n} points; "
        "the generic metrics need members x n or n"
    )


class SurrogateMetrics:
    """Validation, test and predict steps for a zoo module (see :func:`surrogate_mean_std`).

    ``{val,test}_mse`` and ``{val,test}_r2`` are the MSE and R^2 of the predictive mean,
    accumulated over the epoch (torchmetrics). ``predict_step`` returns the batch's
    ``index``, ``mean`` and ``std``, in standardized units.
    """

    def _dsbo_metrics(self, stage: str) -> nn.ModuleDict:
        if "dsbo_metrics" not in self._modules:
            # Metric states are not persistent: the state dict, hence checkpoints, stay the model's.
            self.add_module("dsbo_metrics", nn.ModuleDict())
        store = self._modules["dsbo_metrics"]
        if stage not in store:
            store[stage] = nn.ModuleDict({"mse": MeanSquaredError(), "r2": R2Score()}).to(self.device)
        return store[stage]

    def _dsbo_eval_step(self, batch: tuple[Tensor, Tensor, Tensor], stage: str) -> None:
        x, y, _ = batch
        mean, _ = surrogate_mean_std(self, x)
        for name, metric in self._dsbo_metrics(stage).items():
            metric.update(mean, y)
            self.log(
                f"{stage}_{name}",
                metric,
                on_step=False,
                on_epoch=True,
                batch_size=len(y),
                metric_attribute=f"dsbo_metrics.{stage}.{name}",
            )

    def validation_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> None:
        self._dsbo_eval_step(batch, "val")

    def test_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> None:
        self._dsbo_eval_step(batch, "test")

    def predict_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> dict[str, Tensor]:
        x, _, index = batch
        mean, std = surrogate_mean_std(self, x)
        return {"index": index, "mean": mean, "std": std}


@cache
def _with_metrics(cls: type, missing: tuple[str, ...]) -> type:
    namespace = {name: SurrogateMetrics.__dict__[name] for name in missing}
    namespace.update({k: v for k, v in SurrogateMetrics.__dict__.items() if k.startswith("_dsbo")})
    namespace.update({"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})
    return type(cls.__name__, (cls,), namespace)


def add_missing_steps(model: pl.LightningModule) -> list[str]:
    """Give ``model`` the :class:`SurrogateMetrics` steps it does not define itself; returns
    their names. Its class becomes a subclass with the same name, module and state dict, so
    checkpoints still load into the original class."""
    missing = tuple(name for name in STEP_HOOKS if not is_overridden(name, model, pl.LightningModule))
    if missing:
        model.__class__ = _with_metrics(type(model), missing)
    return list(missing)


# ---------------------------------------------------------------------- the CLI
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
    class_path = config.get("class_path") if hasattr(config, "get") else None
    return str(class_path).rsplit(".", 1)[-1] if class_path else "model"


class DsboTrainCLI(LightningCLI):
    """LightningCLI with dsbo's defaults: run directories, offline W&B, checkpoints, a seed."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--run_dir", type=str | None, default=None, help=f"run directory (default: ${RUN_DIR_ENV} or {RUNS_ROOT}/<name>-<timestamp>)")
        parser.add_argument("--name", type=str | None, default=None, help="run name (default: the model class name)")
        parser.add_argument(
            "--threads", type=int | None, default=1,
            help="torch intra-op threads (default 1: measured faster for these small networks on "
            "2 shared cores, experiments/bench_surrogates.py; null keeps torch's default)",
        )
        parser.add_argument(
            "--test", type=bool, default=False,
            help="fit only: after the fit, test the best checkpoint on the same data; its test metrics join summary.json",
        )
        parser.link_arguments("data.in_dim", "model.init_args.in_dim", apply_on="instantiate")

    def _subconfig(self) -> Any:
        return self.config[self.subcommand] if self.subcommand else self.config

    def before_instantiate_classes(self) -> None:
        cfg = self._subconfig()
        threads = cfg.get("threads")
        if threads is not None:
            if threads < 1:
                raise ConfigError(f"threads={threads} must be >= 1")
            torch.set_num_threads(threads)
        if cfg.get("test") and self.subcommand != "fit":
            raise ConfigError(f"--test true belongs to fit (it tests the fit's best checkpoint); {self.subcommand} got it")
        if "weights_only" in cfg and cfg["weights_only"] is None:
            cfg["weights_only"] = True  # --ckpt_path restores with torch.load(weights_only=True)
        self.derived_settings = derive_model_settings(cfg)  # history, horizon, ... of a HierarchicalDataModule
        self.run_name = cfg.get("name") or _class_name(cfg.get("model"))
        run_dir = cfg.get("run_dir") or os.environ.get(RUN_DIR_ENV)
        if not run_dir:
            run_dir = RUNS_ROOT / f"{self.run_name}-{datetime.now():%Y%m%d-%H%M%S-%f}"
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()

    def instantiate_classes(self) -> None:
        super().instantiate_classes()
        self.generic_steps = add_missing_steps(self.model)

    def instantiate_trainer(self, **kwargs: Any) -> pl.Trainer:
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
            callbacks.append(default_checkpoint(self.run_dir / "checkpoints", self.datamodule, self.model))
        if os.environ.get(CHANNEL_ENV):  # a campaign's trial: report each validation epoch, stop when told
            from dsbo.integrations.lightning import ReportCallback

            callbacks.append(ReportCallback(ChannelTrial(os.environ[CHANNEL_ENV]), monitor=os.environ.get(MONITOR_ENV, "val_loss")))
        trainer_cfg["callbacks"] = callbacks
        return super().instantiate_trainer(**kwargs)

    # ------------------------------------------------------------------ around each subcommand
    def _log_data_hparams(self) -> None:
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
        return {k: float(v) for k, v in self.trainer.callback_metrics.items() if isinstance(v, Tensor) and v.numel() == 1}

    def _finish(self, extra: dict[str, Any] | None = None, metrics: dict[str, float] | None = None) -> dict[str, Any]:
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
                f"kept seasonal naive: no epoch validated better (best val_wape {floor['best_val_wape']:.4g} >= "
                f"val_wape_seasonal_naive {floor[SNAIVE_METRIC]:.4g}); {final.name} forecasts seasonal naive", highlight=False)  # fmt: skip
        Console(stderr=True).print(f"fit done: {info.get('checkpoint', 'no checkpoint')} (run directory {self.run_dir})")

    def _test_best(self, at_floor: bool = False) -> dict[str, Any]:
        """``--test true``: test the best checkpoint (else the final weights; the kept floor if ``at_floor``)."""
        best = self.trainer.checkpoint_callback
        ckpt = "" if at_floor else getattr(best, "best_model_path", "") if best is not None else ""
        results = self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=ckpt or None, verbose=False)
        out: dict[str, Any] = {k: float(v) for result in results for k, v in result.items()}
        out["tested_checkpoint"] = (f"{FINAL_CHECKPOINT} (seasonal naive, the floor)" if at_floor
                                    else ckpt or "final weights (no checkpoint callback)")  # fmt: skip
        return out

    def after_validate(self) -> None:
        self._finish()

    def after_test(self) -> None:
        self._finish()

    def after_predict(self) -> None:
        outputs = self.trainer.predict_loop.predictions
        written = write_predictions(outputs, self.datamodule, self.run_dir / PREDICTIONS_NAME)
        self._finish({"predictions": str(written) if written else None})


def zoo_classes() -> dict[str, str]:
    """Class name -> full class path of every concrete LightningModule defined in the
    (imported) zoo (not the abstract base :class:`dsbo_zoo.base.ZooModule`)."""
    found: dict[str, str] = {}
    for name in import_zoo():
        for obj in vars(sys.modules[name]).values():
            concrete = isinstance(obj, type) and not inspect.isabstract(obj)
            if concrete and issubclass(obj, pl.LightningModule) and obj.__module__ == name:
                found.setdefault(obj.__name__, f"{name}.{obj.__qualname__}")
    return found


def expand_model_names(args: Sequence[str], classes: dict[str, str]) -> list[str]:
    """``--model SimpleSMB`` -> ``--model dsbo_zoo.smb.SimpleSMB``: a zoo class is also
    re-exported by ``models/__init__``, which jsonargparse would call ambiguous."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == "--model" and i + 1 < len(out) and out[i + 1] in classes:
            out[i + 1] = classes[out[i + 1]]
        elif arg.startswith("--model=") and arg[len("--model=") :] in classes:
            out[i] = "--model=" + classes[arg[len("--model=") :]]
    return out


def names_datamodule_class(args: Sequence[str]) -> bool:
    """Whether ``args`` pick the datamodule by class: ``--data <class>``, ``--data.class_path``,
    or a ``--config`` file whose ``data`` has a ``class_path``. Then the CLI takes any
    ``LightningDataModule`` (subclass mode); otherwise ``data`` configures
    :class:`~dsbo.data.ObservationDataModule` directly, as every observation config does."""
    args = list(args)
    for i, arg in enumerate(args):
        if arg in ("--data", "--data.class_path") or arg.startswith(("--data=", "--data.class_path=")):
            return True
        path = arg[len("--config="):] if arg.startswith("--config=") else (args[i + 1] if arg == "--config" and i + 1 < len(args) else None)
        if path and Path(path).is_file():
            try:
                data = (yaml.safe_load(Path(path).read_text()) or {}).get("data")
            except (yaml.YAMLError, AttributeError):
                continue  # jsonargparse reports a malformed config
            if isinstance(data, str) or (isinstance(data, dict) and "class_path" in data):
                return True
    return False


def build_cli(args: Sequence[str] | None = None, run: bool = True) -> DsboTrainCLI:
    """The CLI object after parsing ``args`` (and, with ``run``, running its subcommand).

    ``data`` is an :class:`~dsbo.data.ObservationDataModule` unless the arguments name a
    datamodule class (:func:`names_datamodule_class`), e.g. ``data: {class_path:
    dsbo.data.SyntheticClassesDataModule, init_args: {...}}``; either way the datamodule's
    ``in_dim`` is passed to the model."""
    classes = zoo_classes()
    if args is None:
        args = sys.argv[1:]
    args = expand_model_names(args, classes)
    subclass_data = names_datamodule_class(args)
    # We always pass the (expanded) command line, so Lightning's "args and sys.argv" caution is moot.
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    return DsboTrainCLI(
        model_class=pl.LightningModule,
        subclass_mode_model=True,
        datamodule_class=pl.LightningDataModule if subclass_data else ObservationDataModule,
        subclass_mode_data=subclass_data,
        trainer_defaults=TRAINER_DEFAULTS,
        seed_everything_default=DEFAULT_SEED,
        save_config_kwargs={"overwrite": True},
        parser_kwargs={"prog": "python -m dsbo.train", "exit_on_error": False},
        args=args,
        run=run,
    )


def instantiation_error(exc: BaseException) -> str | None:
    """One line for an error raised while the config's classes are built: the dsbo error in
    the chain, the class's own message from jsonargparse's union report (``HierarchicalDataModule:
    name='labour' needs the environment variable DSBO_DATA (or set path)``) or a missing file;
    ``None`` for anything else (a bug: its traceback is worth seeing)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, DsboError):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    lines = [line.strip() for line in str(exc).splitlines()]
    if "Does not validate against any of the Union subtypes" in lines[0]:  # one "- Class: why" per subtype
        reasons = [line[2:] for line in lines if line.startswith("- ") and not line.startswith("- Expected a")]
        return reasons[0] if reasons else None
    return f"{exc.filename or exc}: no such file" if isinstance(exc, FileNotFoundError) else None


def short_argument_error(exc: ArgumentError) -> str:
    """One line from jsonargparse's nested report: the key, what is wrong, and a suggestion.

    ``--model.widht 5`` gives ``model.widht: SimpleSMB has no option 'widht' (did you mean
    'width'?)`` instead of the ~60 lines of usage and union-type diagnostics.
    """
    text = str(exc)
    key = re.search(r'Parser key "([^"]+)"', text)
    option = re.search(r"Option '([^']+)' is not accepted", text)
    class_path = re.search(r"class_path '([^']+)'", text)
    if option:
        name = option.group(1)
        where = f"{key.group(1)}.{name}" if key else name
        owner, accepted = "it", []
        if class_path:
            module_name, _, cls_name = class_path.group(1).rpartition(".")
            cls = getattr(sys.modules.get(module_name), cls_name, None)
            if cls is not None:
                owner = cls_name
                accepted = [p for p in inspect.signature(cls).parameters if p not in ("self", "in_dim")]
        close = difflib.get_close_matches(name, accepted, n=1)
        return f"{where}: {owner} has no option {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    if key and key.group(1) == "model" and "Expected a path" in text:
        return "model: not a zoo model; choose one of " + ", ".join(sorted(zoo_classes()))
    keys = re.findall(r'Parser key "([^"]+)":\s*\n\s*(?!Does not validate)(.+)', text)
    if keys:  # the innermost key with its message, e.g. model.width: Expected a <class 'int'>
        path = ".".join(re.findall(r'Parser key "([^"]+)"', text))
        return f"{path}: {keys[-1][1].strip()}"
    noise = ("Subtypes:", "Errors:", "Given value", "- Expected a <class 'NoneType'>", "Does not validate")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(noise)]
    return " ".join(lines[:3])


SUBCOMMANDS = ("fit", "validate", "test", "predict")


def shared_spellings(argv: Sequence[str]) -> tuple[list[str], bool]:
    """The command line with the shared options of :mod:`dsbo.cli.common` in Lightning's
    spelling (``--seed N`` is ``--seed_everything N``), and whether ``--dry_run`` was given."""
    out: list[str] = []
    for arg in argv:
        if arg == "--seed" or arg.startswith("--seed="):
            arg = "--seed_everything" + arg[len("--seed"):]
        out.append(arg)
    dry_run = "--dry_run" in out
    return [a for a in out if a != "--dry_run"], dry_run


def dry_run(args: Sequence[str], console: Console) -> None:
    """Parse and instantiate the model, the datamodule and the trainer; train nothing."""
    args = [a for a in args if a not in SUBCOMMANDS]
    cli = build_cli(args, run=False)
    console.print(
        f"dry run: model {type(cli.model).__name__}, data {type(cli.datamodule).__name__}, "
        f"trainer max_epochs={cli.trainer.max_epochs}: the config instantiates; nothing was trained",
        markup=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 on a dsbo error, with the message)."""
    console = Console(stderr=True)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    args, dry = shared_spellings(sys.argv[1:] if argv is None else argv)
    try:
        if dry:
            dry_run(args, console)
        else:
            build_cli(args)
    except DsboError as exc:
        print_error(console, str(exc))
        return 2
    except (ValueError, OSError) as exc:  # a data module refusing its settings, a missing file
        message = instantiation_error(exc)
        if message is None:
            raise
        print_error(console, message)
        return 2
    except ArgumentError as exc:
        print_error(console, short_argument_error(exc))
        console.print("(python -m dsbo.train fit --help lists every option)")
        return 2
    except SystemExit as exc:  # argparse: --help, --print_config, a bad argument
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
