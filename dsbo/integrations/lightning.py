"""PyTorch Lightning: report a trial's validation metric to dsbo and stop ``fit`` when told.

:class:`ReportCallback` is dsbo's counterpart of Optuna's ``PyTorchLightningPruningCallback``
and Ray Tune's ``TuneReportCheckpointCallback``: after each validation run of ``Trainer.fit``
it reports ``(step, trainer.callback_metrics[monitor])`` to the running trial, asks the
trial's stopping rule whether to go on, and sets ``trainer.should_stop`` when it says stop.

Example:
    >>> import pytorch_lightning as pl
    >>> from dsbo.integrations.lightning import ReportCallback
    >>> def train(params, trial):
    ...     model = MyModule(lr=params["lr"], width=params["width"])
    ...     trainer = pl.Trainer(max_epochs=50,
    ...                          callbacks=[ReportCallback(trial, monitor="val_loss")])
    ...     trainer.fit(model, datamodule=data)
    ...     return trainer.callback_metrics["val_loss"].item()

What the callback relies on is only the trial's protocol (:class:`TrialLike`):
``trial.report(step, value)`` and ``trial.should_stop()``. The value is reported as logged
(in the user's direction: ``val_loss`` as it is, if the search minimizes it), NaN and
infinity included: the trial records the failure, and its stopping rule decides.

**When it reports.** At ``on_validation_end`` of ``Trainer.fit`` only: never during the
sanity check, a ``fast_dev_run``, or ``trainer.validate()``. The step is the number of
epochs trained so far, ``trainer.current_epoch + 1`` (``step="epoch"``: the first epoch is
step 1, so that a budget in steps charges a trial the epochs it used), or ``trainer.global_step``
(``step="global_step"``, for validation several times an epoch, ``val_check_interval < 1``).
``monitor`` must be logged during validation (``validation_step`` or
``on_validation_epoch_end``); a metric that is missing then raises
:class:`~dsbo.errors.ConfigError` naming it and the metrics that exist (like Lightning's
``EarlyStopping(strict=True)``).

**Several processes (DDP).** Only global rank 0 talks to the trial: it reads the metric,
reports it and asks ``should_stop()``; its decision is broadcast to every rank
(``trainer.strategy.broadcast``), and every rank sets ``trainer.should_stop``, so all stop
after the same validation. Rank 0 reports *its own* value of the metric: log it with
``sync_dist=True`` to report the value over all ranks (or with ``rank_zero_only=True``: the
other ranks never read it). If rank 0 fails (a missing metric, an error from the trial), the
others are told and stop, so that they do not wait for it; rank 0 raises the error. With
``strategy="ddp_spawn"`` every rank works on a pickled copy of the callback and the trial:
the trial must be picklable and record where the main process can read it (its store), and
the callback in the main process keeps ``stopped=False`` (Lightning sends back only the
weights and ``callback_metrics``); ``strategy="ddp"`` runs rank 0 in the main process.

**Paused, not stopped.** In a freeze-thaw campaign (:mod:`dsbo.campaign.freeze_thaw`)
``should_stop()`` also says ``True`` where the trial's steps end, with ``trial.paused`` set:
the fit ends after that validation like a stop, but the checkpoint saved there (``last.ckpt``
of a ``ModelCheckpoint(save_last=True)``) does not remember a stop, so ``trainer.fit(...,
ckpt_path=...)`` from it, when the trial is thawed, trains the next epochs.

**After the stop.** :attr:`ReportCallback.stopped` is ``True`` and
:attr:`ReportCallback.stopped_epoch` the epoch whose validation said stop; both are saved in
checkpoints (``state_dict``), so a fit resumed from a checkpoint of a stopped trial ends at
once and reports nothing more. Lightning keeps training until ``min_epochs``/``min_steps``
are reached even when told to stop; the callback then reports nothing more.
"""

from __future__ import annotations

from typing import Any, Protocol

import pytorch_lightning as pl
import torch
from pytorch_lightning.trainer.states import TrainerFn

from dsbo.errors import ConfigError

#: What ``step=`` may name: the trainer attribute reported as the step.
STEPS = ("epoch", "global_step")


class TrialLike(Protocol):
    """What :class:`ReportCallback` needs of a trial (a running dsbo trial has it)."""

    def report(self, step: int, value: float) -> None:
        """Record the intermediate ``value`` (the user's direction) at ``step``."""

    def should_stop(self) -> bool:
        """Whether the stopping rule says this trial should stop now."""


class ReportCallback(pl.Callback):
    """Report ``monitor`` to ``trial`` after each validation of ``Trainer.fit``; stop the fit
    (on every rank) once ``trial.should_stop()`` says so.

    Args:
        trial: the running trial (:class:`TrialLike`: ``report(step, value)`` and
            ``should_stop()``); under DDP only global rank 0 calls it.
        monitor: the metric reported, a key of ``trainer.callback_metrics`` logged during
            validation (``self.log("val_loss", ...)`` in ``validation_step``).
        step: ``"epoch"`` (epochs trained, ``trainer.current_epoch + 1``) or ``"global_step"``
            (``trainer.global_step``, the optimizer steps so far).

    Attributes:
        stopped: whether the trial has stopped this fit.
        stopped_epoch: the epoch after whose validation it stopped (``None`` until then).
        paused_epoch: the epoch after whose validation a freeze-thaw campaign paused the trial
            (``trial.paused``): the fit ended there, but ``stopped`` stays ``False``, so a fit
            resumed from that epoch's checkpoint trains on.

    Raises:
        ConfigError: at construction for a ``trial`` without the two methods, an empty
            ``monitor`` or an unknown ``step``; at ``fit`` for ``step="epoch"`` with several
            validations an epoch, and when ``monitor`` is missing after a validation.
    """

    def __init__(self, trial: TrialLike, monitor: str = "val_loss", step: str = "epoch") -> None:
        super().__init__()
        missing = [m for m in ("report", "should_stop") if not callable(getattr(trial, m, None))]
        if missing:
            raise ConfigError(
                f"ReportCallback: trial must be a running trial with report(step, value) and "
                f"should_stop() methods; {type(trial).__name__} has no {' or '.join(missing)}()"
            )
        if not isinstance(monitor, str) or not monitor:
            raise ConfigError(f"ReportCallback: monitor must be a metric name, got {monitor!r}")
        if step not in STEPS:
            raise ConfigError(f"ReportCallback: step must be one of {list(STEPS)}, got {step!r}")
        self.trial = trial
        self.monitor = monitor
        self.step = step
        self.stopped = False
        self.stopped_epoch: int | None = None
        self.paused_epoch: int | None = None
        self._reported_epoch: int | None = None  # within this fit, for step="epoch"

    @property
    def state_key(self) -> str:
        return self._generate_state_key(monitor=self.monitor, step=self.step)

    def state_dict(self) -> dict[str, Any]:
        return {"stopped": self.stopped, "stopped_epoch": self.stopped_epoch}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.stopped = bool(state_dict.get("stopped", False))
        self.stopped_epoch = state_dict.get("stopped_epoch")

    # ------------------------------------------------------------------ Lightning hooks
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._reported_epoch = None
        interval = trainer.val_check_interval
        if stage == "fit" and self.step == "epoch" and isinstance(interval, float) and interval < 1.0:
            raise ConfigError(
                f"ReportCallback(step='epoch'): the trainer validates several times an epoch "
                f"(val_check_interval={interval}), which would report the same epoch more than "
                f"once; use step='global_step'"
            )

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.stopped:  # resumed from a checkpoint of a stopped trial: train no further
            trainer.should_stop = True

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.fast_dev_run or trainer.state.fn != TrainerFn.FITTING:
            return
        if self.stopped:  # told to stop, but still training (min_epochs/min_steps): no reports
            trainer.should_stop = True
            return
        stop, paused, error = False, False, None
        if trainer.is_global_zero:
            try:
                stop = self._report(trainer)
                paused = stop and getattr(self.trial, "paused", False) is True
            except Exception as exc:  # re-raised below, once the other ranks know
                error = exc
        stop, paused, failed = trainer.strategy.broadcast((stop, paused, error is not None), src=0)
        if error is not None:
            raise error
        if failed:  # rank 0 is raising: stop here rather than wait for it at a collective
            trainer.should_stop = True
            return
        if stop and paused:  # freeze-thaw: the fit ends here, and its checkpoint resumes training when thawed
            self.paused_epoch = trainer.current_epoch
            trainer.should_stop = True
        elif stop:
            self.stopped = True
            self.stopped_epoch = trainer.current_epoch
            trainer.should_stop = True

    # ------------------------------------------------------------------ rank 0
    def _report(self, trainer: pl.Trainer) -> bool:
        """Report the metric to the trial and return its decision (rank 0 only)."""
        if self.step == "epoch":
            epoch = trainer.current_epoch
            if epoch == self._reported_epoch:
                raise ConfigError(
                    f"ReportCallback(step='epoch'): validation ran twice in epoch {epoch} "
                    f"(val_check_interval={trainer.val_check_interval}); use step='global_step'"
                )
            self._reported_epoch = epoch
            step = epoch + 1  # epochs trained so far: a step counts what the trial used
        else:
            step = trainer.global_step
        self.trial.report(int(step), self._value(trainer.callback_metrics))
        return bool(self.trial.should_stop())

    def _value(self, metrics: dict[str, Any]) -> float:
        if self.monitor not in metrics:
            available = ", ".join(f"'{k}'" for k in metrics) or "none"
            raise ConfigError(
                f"ReportCallback(monitor={self.monitor!r}): no metric {self.monitor!r} after "
                f"validation; the metrics logged are: {available}. Log it during validation "
                f"(self.log({self.monitor!r}, value) in validation_step), or set monitor to one "
                f"of those. A metric logged in training_step with on_epoch=True is updated only "
                f"after validation, so it cannot be monitored here."
            )
        value = metrics[self.monitor]
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                raise ConfigError(
                    f"ReportCallback(monitor={self.monitor!r}): the metric must be one number, "
                    f"got a tensor of shape {tuple(value.shape)}"
                )
            value = value.item()
        return float(value)
