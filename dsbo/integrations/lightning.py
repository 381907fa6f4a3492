"""PyTorch Lightning: report a trial's validation metric to dsbo and stop ``fit`` when told.

:class:`ReportCallback` is dsbo's counterpart of Optuna's ``PyTorchLightningPruningCallback``
and Ray Tune's ``TuneReportCheckpointCallback``: after each validation run of ``Trainer.fit``
it reports ``(step, trainer.callback_metrics[monitor])`` to the running trial, asks the
trial's stopping rule whether to go on, and sets ``trainer.should_stop`` when it says stop.

Example:
    >>> import lightning.pytorch as L  # or: import pytorch_lightning as L
    >>> from dsbo.integrations.lightning import ReportCallback
    >>> def train(params, trial):
    ...     model = MyModule(lr=params["lr"], width=params["width"])
    ...     trainer = L.Trainer(max_epochs=50,
    ...                         callbacks=[ReportCallback(trial, monitor="val_loss")])
    ...     trainer.fit(model, datamodule=data)
    ...     return trainer.callback_metrics["val_loss"].item()

**Both Lightning packages.** Lightning ships as ``pytorch_lightning`` and as ``lightning``
(``lightning.pytorch``, the ``lightning`` extra: ``pip install "dsbo[lightning]"``); each
Trainer wants callbacks of its own package's ``Callback`` class. :class:`ReportCallback`
derives from the ``Callback`` of every package installed (:data:`CALLBACK_BASES`, both when
both are), so one callback object is accepted by either Trainer; importing this module
imports whichever of the two exists (an :class:`ImportError` naming the extra when neither
does). The model must be a ``LightningModule`` of the Trainer's package, as always.

What the callback relies on is only the trial's protocol (:class:`TrialLike`):
``trial.report(step, value)`` and ``trial.should_stop()``, and, where the trial has it,
``trial.reserved_steps``. The value is reported as logged (in the user's direction:
``val_loss`` as it is, if the search minimizes it), NaN and infinity included: the trial
records the failure, and its stopping rule decides.

**When it reports.** At ``on_validation_end`` of ``Trainer.fit`` only: never during the
sanity check, a ``fast_dev_run``, or ``trainer.validate()``. The step is the number of
epochs trained so far, ``trainer.current_epoch + 1`` (``step="epoch"``: the first epoch is
step 1, so that a budget in steps charges a trial the epochs it used), or
``trainer.global_step`` (``step="global_step"``, for validation several times an epoch,
``val_check_interval < 1``, or every ``n`` batches across epochs). Steps are reported as Python
``int`` whatever integer type the trainer holds (NumPy or torch integers included).
``monitor`` must be logged during validation (``validation_step`` or
``on_validation_epoch_end``); a metric that is missing then raises
:class:`~dsbo.errors.ConfigError` naming it and the metrics that exist (like Lightning's
``EarlyStopping(strict=True)``).

**Exact budgets.** A trial under a budget in steps (``budget_steps``) reserves steps when it is
proposed and is charged the last step it reported (:mod:`dsbo.campaign.ledger`). A trial that
says how many steps it may train in all (``trial.reserved_steps``, an integer or ``None``;
dsbo's running trial reads its reservation from the store) never trains past them: after each
validation the trial's rule did not stop, the callback works out the step of the next
validation from the Trainer's schedule (``check_val_every_n_epoch``, ``val_check_interval``,
``accumulate_grad_batches``: :func:`~dsbo.integrations.lightning_schedule.next_validation`)
and, when it would come after the reservation, ends the fit there (:attr:`reservation_epoch`).
So the steps trained are the steps reported, hence charged, with ``check_val_every_n_epoch=3``
or any other interval: a reservation of 7 epochs validated every 3 trains 6 and is charged 6.
Before training, a fit whose first validation would already pass the reservation ends at once
(it trains and reports nothing). Where the schedule cannot be known (a time-based interval,
manual optimization: :mod:`~dsbo.integrations.lightning_schedule`) the trial's own decision
(``should_stop``) is all there is.

**Several processes (DDP).** Only global rank 0 talks to the trial: it reads the metric,
reports it and asks ``should_stop()`` (and ``reserved_steps``); its decision is broadcast to
every rank (``trainer.strategy.broadcast``), and every rank sets ``trainer.should_stop``, so all
stop after the same validation. Rank 0 reports *its own* value of the metric: log it with
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
ckpt_path=...)`` from it, when the trial is thawed, trains the next epochs. A fit ended at its
reservation is not remembered either: a thawed trial's reservation has grown.

**After the stop.** :attr:`ReportCallback.stopped` is ``True`` and
:attr:`ReportCallback.stopped_epoch` the epoch whose validation said stop; both are saved in
checkpoints (``state_dict``), so a fit resumed from a checkpoint of a stopped trial ends at
once and reports nothing more. Lightning keeps training until ``min_epochs``/``min_steps``
are reached even when told to stop (stopped, paused or at the reservation); the callback then
reports nothing more in that fit.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol

from dsbo.errors import ConfigError
from dsbo.integrations.lightning_schedule import STEPS, as_steps, next_validation

#: The Lightning packages whose Trainer :class:`ReportCallback` serves, where installed.
PACKAGES = ("pytorch_lightning", "lightning.pytorch")

#: What a validation's decision is (broadcast from rank 0 to every rank).
GO, STOP, PAUSE, RESERVED, FAILED = "go", "stop", "pause", "reserved", "failed"


def callback_bases() -> tuple[type, ...]:
    """The ``Callback`` class of each installed package of :data:`PACKAGES`, in that order.

    Raises:
        ImportError: when neither is installed, naming the extra that installs one.
    """
    bases = []
    for name in PACKAGES:
        try:
            bases.append(importlib.import_module(name).Callback)
        except ImportError:
            continue
    if not bases:
        raise ImportError(
            "dsbo.integrations.lightning needs pytorch-lightning or lightning: "
            'pip install "dsbo[lightning]"'
        )
    return tuple(bases)


#: The bases of :class:`ReportCallback`: one ``Callback`` class per installed Lightning package.
CALLBACK_BASES = callback_bases()


class TrialLike(Protocol):
    """What :class:`ReportCallback` needs of a trial (a running dsbo trial has it). A trial may
    also have ``reserved_steps`` (an attribute, property or method: the steps it may train in
    all, ``None`` for no limit) and ``paused`` (freeze-thaw)."""

    def report(self, step: int, value: float) -> None:
        """Record the intermediate ``value`` (the user's direction) at ``step``."""

    def should_stop(self) -> bool:
        """Whether the stopping rule says this trial should stop now."""


class ReportCallback(*CALLBACK_BASES):
    """Report ``monitor`` to ``trial`` after each validation of ``Trainer.fit``; stop the fit
    (on every rank) once ``trial.should_stop()`` says so, or before it would train past the
    trial's ``reserved_steps``. A ``Callback`` of both ``pytorch_lightning`` and
    ``lightning.pytorch`` (whichever are installed: module docstring).

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
        reservation_epoch: the last epoch trained when the fit ended because its next
            validation would come after ``trial.reserved_steps`` (``current_epoch - 1``, no
            new epoch, when the first validation already would); ``None`` otherwise. Not
            saved in checkpoints, like a pause.

    Raises:
        ConfigError: at construction for a ``trial`` without the two methods, an empty
            ``monitor`` or an unknown ``step``; at ``fit`` for ``step="epoch"`` with several
            validations an epoch or validation by batches across epochs
            (``check_val_every_n_epoch=None``), for a step or reservation that is not a
            number, and when ``monitor`` is missing after a validation.

    Example:
        >>> trainer = pl.Trainer(max_epochs=27, check_val_every_n_epoch=3,
        ...                      callbacks=[ReportCallback(trial, monitor="val_loss")])
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
        self.reservation_epoch: int | None = None
        self._reported_epoch: int | None = None  # within this fit, for step="epoch"
        self._ended = False  # this fit was told to end (stop, pause, reservation)

    @property
    def state_key(self) -> str:
        return self._generate_state_key(monitor=self.monitor, step=self.step)

    def state_dict(self) -> dict[str, Any]:
        return {"stopped": self.stopped, "stopped_epoch": self.stopped_epoch}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.stopped = bool(state_dict.get("stopped", False))
        self.stopped_epoch = state_dict.get("stopped_epoch")

    # ------------------------------------------------------------------ Lightning hooks
    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._reported_epoch, self._ended = None, False
        if stage != "fit" or self.step != "epoch":
            return
        interval = trainer.val_check_interval
        if isinstance(interval, float) and interval < 1.0:
            raise ConfigError(
                f"ReportCallback(step='epoch'): the trainer validates several times an epoch "
                f"(val_check_interval={interval}), which would report the same epoch more than "
                f"once; use step='global_step'"
            )
        if trainer.check_val_every_n_epoch is None:
            raise ConfigError(
                "ReportCallback(step='epoch'): check_val_every_n_epoch=None validates every "
                f"val_check_interval={interval} batches across epochs, not after whole epochs; "
                "use step='global_step'"
            )

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if self.stopped:  # resumed from a checkpoint of a stopped trial: train no further
            trainer.should_stop = True
            return
        if trainer.fast_dev_run or not trainer.enable_validation:
            return  # no reports in this fit: nothing to end at a validation
        outcome = self._decide(trainer, lambda: self._check_reservation(trainer, True))
        self._end(trainer, outcome, last_epoch=trainer.current_epoch - 1)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking or trainer.fast_dev_run or trainer.state.fn != "fit":
            return
        if self.stopped or self._ended:  # still training (min_epochs/min_steps): no reports
            trainer.should_stop = True
            return
        outcome = self._decide(trainer, lambda: self._report(trainer))
        self._end(trainer, outcome, last_epoch=trainer.current_epoch)

    # ------------------------------------------------------------------ every rank
    def _decide(self, trainer: Any, decide: Callable[[], str]) -> str:
        """Rank 0's ``decide()``, broadcast to every rank; an error on rank 0 is raised there
        once the others know (they stop rather than wait for it at a collective)."""
        outcome, error = GO, None
        if trainer.is_global_zero:
            try:
                outcome = decide()
            except Exception as exc:  # re-raised below, once the other ranks know
                outcome, error = FAILED, exc
        outcome = trainer.strategy.broadcast(outcome, src=0)
        if error is not None:
            raise error
        return outcome

    def _end(self, trainer: Any, outcome: str, last_epoch: int) -> None:
        """Act on a decision: remember a stop (not a pause or a reservation), end the fit."""
        if outcome == GO:
            return
        trainer.should_stop, self._ended = True, True
        if outcome == STOP:
            self.stopped, self.stopped_epoch = True, last_epoch
        elif outcome == PAUSE:  # freeze-thaw: its checkpoint resumes training when thawed
            self.paused_epoch = last_epoch
        elif outcome == RESERVED:
            self.reservation_epoch = last_epoch

    # ------------------------------------------------------------------ rank 0
    def _report(self, trainer: Any) -> str:
        """Report the metric to the trial and return the decision (rank 0 only)."""
        if self.step == "epoch":
            epoch = as_steps(trainer.current_epoch, "trainer.current_epoch")
            if epoch == self._reported_epoch:
                raise ConfigError(
                    f"ReportCallback(step='epoch'): validation ran twice in epoch {epoch} "
                    f"(val_check_interval={trainer.val_check_interval}); use step='global_step'"
                )
            self._reported_epoch = epoch
            step = epoch + 1  # epochs trained so far: a step counts what the trial used
        else:
            step = as_steps(trainer.global_step, "trainer.global_step")
        self.trial.report(step, self._value(trainer.callback_metrics))
        if self.trial.should_stop():
            return PAUSE if getattr(self.trial, "paused", False) is True else STOP
        return self._check_reservation(trainer, False)

    def _check_reservation(self, trainer: Any, before_training: bool) -> str:
        """:data:`RESERVED` when the next validation would come after the trial's
        ``reserved_steps`` (:data:`GO` without a reservation or a known schedule)."""
        reserved = getattr(self.trial, "reserved_steps", None)
        reserved = reserved() if callable(reserved) else reserved
        if reserved is None or reserved == float("inf"):
            return GO
        limit = as_steps(reserved, "trial.reserved_steps")
        upcoming = next_validation(trainer, self.step, limit, before_training)
        return RESERVED if upcoming is not None and upcoming > limit else GO

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
        if hasattr(value, "numel"):  # a tensor
            if value.numel() != 1:
                raise ConfigError(
                    f"ReportCallback(monitor={self.monitor!r}): the metric must be one number, "
                    f"got a tensor of shape {tuple(value.shape)}"
                )
            value = value.item()
        return float(value)


__all__ = ["CALLBACK_BASES", "PACKAGES", "ReportCallback", "TrialLike", "callback_bases"]
