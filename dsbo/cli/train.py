"""``python -m dsbo.train``: train, validate, test or predict with a zoo model (LightningCLI).

A LightningCLI over the surrogate zoo (every LightningModule in ``models/``, picked by class
name) and :class:`~dsbo.data.ObservationDataModule` (or any LightningDataModule named by
``data.class_path``, e.g. :class:`~dsbo.data.SyntheticClassesDataModule`). The datamodule's
``in_dim`` is passed to the model, and so are the settings of its ``model_settings()``
(HierarchicalDataModule: history, horizon, num_nodes, num_representatives;
:func:`~dsbo.cli.train_outputs.derive_model_settings`): a config pointed at new data repeats none
of them. Typical use::

    python -m dsbo.train fit --config configs/train/simple-smb-branin.yaml
    python -m dsbo.train fit --config configs/train/simple-smb-branin.yaml --model.gamma 4
    python -m dsbo.train fit --model SimpleSMB --model.width 64 --data.problem hartmann6
    python -m dsbo.train fit --config configs/train/simple-smb-branin.yaml --print_config
    python -m dsbo.train test --config configs/train/simple-smb-branin.yaml \\
        --ckpt_path runs/train/SimpleSMB-.../checkpoints/epoch=....ckpt
    python -m dsbo.train fit --config configs/train/hired-labour.yaml --test true   # fit, then test the best checkpoint

Every run writes to its run directory (``--run_dir``; default ``$DSBO_RUN_DIR`` or
``runs/train/<name>-<timestamp>``): ``config.yaml``, ``checkpoints/`` (the best epoch by the
model's ``checkpoint_monitor`` if it declares one (HiReD: ``val_wape``), else ``val_mse``, or
``train_loss`` without a validation split, and ``last.ckpt``; load one as a BoTorch model
with :func:`dsbo.surrogates.checkpoint.load_surrogate`),
``summary.json`` (the final metrics of every subcommand run there, the checkpoint path),
``checkpoints/final.ckpt`` (saved when ``fit`` returns, after the module's ``on_fit_end``),
``predictions.csv`` (``predict``: raw inputs, target and predicted mean/std in raw units; for
node forecasters such as HiReD one row per node and forecast step,
:func:`~dsbo.cli.train_outputs.write_node_forecasts`) and the offline W&B run (``WANDB_MODE``
overrides ``offline``; ``--trainer.logger false`` turns it off, ``--trainer.logger`` another
logger replaces it).

``fit --test true`` tests the best checkpoint (by the monitored metric; the final weights when
there is no checkpoint callback) on the same datamodule right after the fit: its ``test_*``
metrics join the fit's in ``summary.json`` and the W&B summary, with ``tested_checkpoint``.

When a fit logs ``val_wape_seasonal_naive`` (HiReD: the validation mean WAPE of the seasonal
naive forecasts, the same metric as ``val_wape``) and its best ``val_wape`` is worse, the run
prints a warning and ``summary.json`` lists it under ``warnings``
(:func:`~dsbo.cli.train_outputs.fit_warnings`).
A model that starts at seasonal naive and can keep it (HiReD with its default residual,
``keep_floor``) keeps it when no epoch validated better: the best ``val_wape`` at or above
``val_wape_seasonal_naive`` makes the final checkpoint forecast seasonal naive (a tie goes to
seasonal naive, as in ``select_on_validation``; :func:`~dsbo.cli.train_outputs.floor_choice`),
``--test true`` tests that, and ``summary.json`` says ``selected: seasonal_naive`` (else
``trained``) with the two values.

Zoo modules that lack ``validation_step``, ``test_step`` or ``predict_step`` get the generic
ones of :class:`~dsbo.cli.train_steps.SurrogateMetrics` (MSE and R^2 of the ensemble mean in
standardized units, logged as ``{val,test}_mse`` and ``{val,test}_r2``). With
``$DSBO_TRIAL_CHANNEL`` set (a campaign's train-run trial, early stopping) a ``ReportCallback``
reports ``$DSBO_TRIAL_MONITOR`` after each validation epoch and stops the fit when told.

The program is split by responsibility: this module parses and runs (:func:`build_cli`,
:func:`main`, the dry run); :mod:`dsbo.cli.train_args` reads the command line before
LightningCLI does and shortens its errors; :mod:`dsbo.cli.train_cli` is the LightningCLI with
the run directory, trainer defaults and summaries; :mod:`dsbo.cli.train_steps` holds the generic
steps; :mod:`dsbo.cli.train_outputs` what a run derives and writes. Their public names are
re-exported here, so ``from dsbo.cli.train import build_cli, surrogate_mean_std`` keeps working.
"""

from __future__ import annotations

import sys
import warnings
from argparse import ArgumentError
from collections.abc import Sequence

import pytorch_lightning as pl
from rich.console import Console

from dsbo.cli.common import print_error
from dsbo.cli.train_args import (
    SUBCOMMANDS,
    ZOO_PACKAGE,
    expand_model_names,
    import_zoo,
    instantiation_error,
    names_datamodule_class,
    shared_spellings,
    short_argument_error,
    zoo_classes,
)
from dsbo.cli.train_cli import (
    DEFAULT_SEED,
    FINAL_CHECKPOINT,
    PREDICTIONS_NAME,
    RUN_DIR_ENV,
    RUNS_ROOT,
    SUMMARY_NAME,
    TRAINER_DEFAULTS,
    DsboTrainCLI,
    default_checkpoint,
    wandb_mode,
)
from dsbo.cli.train_outputs import fit_warnings, write_node_forecasts, write_predictions
from dsbo.cli.train_steps import STEP_HOOKS, SurrogateMetrics, add_missing_steps, surrogate_mean_std
from dsbo.data import ObservationDataModule
from dsbo.errors import DsboError


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


#: The program's names, its parts' included (re-exported: ``dsbo.train`` forwards to them).
__all__ = [
    "DEFAULT_SEED",
    "FINAL_CHECKPOINT",
    "PREDICTIONS_NAME",
    "RUNS_ROOT",
    "RUN_DIR_ENV",
    "STEP_HOOKS",
    "SUBCOMMANDS",
    "SUMMARY_NAME",
    "TRAINER_DEFAULTS",
    "ZOO_PACKAGE",
    "DsboTrainCLI",
    "SurrogateMetrics",
    "add_missing_steps",
    "build_cli",
    "default_checkpoint",
    "dry_run",
    "expand_model_names",
    "fit_warnings",
    "import_zoo",
    "instantiation_error",
    "main",
    "names_datamodule_class",
    "shared_spellings",
    "short_argument_error",
    "surrogate_mean_std",
    "wandb_mode",
    "write_node_forecasts",
    "write_predictions",
    "zoo_classes",
]


if __name__ == "__main__":
    sys.exit(main())
