r"""Where Lightning's ``Trainer.fit`` validates next, counted in the steps a trial reports: what
lets :class:`~dsbo.integrations.lightning.ReportCallback` end a fit at the last validation that
a trial's reservation covers, so that a trial never trains steps it is not charged for.

**Lightning's schedule.** ``Trainer.fit`` validates (Lightning 2.x,
``_TrainingEpochLoop._should_check_val_fx``) in epoch :math:`e` (0-based) only when
``check_val_every_n_epoch`` is ``None`` or divides :math:`e + 1`, and there after the batch
:math:`b` (0-based within the epoch, or across epochs when ``check_val_every_n_epoch=None``)
with :math:`(b + 1) \bmod v = 0`, where :math:`v` is ``trainer.val_check_batch``:
``val_check_interval`` itself (an int: every :math:`v` batches) or
:math:`\max(1, \lfloor B f \rfloor)` for a fraction :math:`f` of
the :math:`B` = ``num_training_batches`` of an epoch. Under automatic optimization the global
step counts optimizer steps: one after every ``accumulate_grad_batches`` batches of an epoch
and one after its last batch (Lightning's ``_should_accumulate``).

**In the reported steps.** With ``step="epoch"`` (epochs trained; one validation an epoch, every
:math:`k` = ``check_val_every_n_epoch`` epochs) the validation after :math:`s` epochs is
followed by the one after :math:`(\lfloor s / k \rfloor + 1)\,k`. With ``step="global_step"``
:func:`next_validation` walks the schedule forward from the batch just trained (whole epochs at
once where none validates) until the first validation or until the step passes the limit.

The schedule cannot be known ahead (:func:`next_validation` answers ``None``, and the callback
then relies on the trial's own decision) for a time-based ``val_check_interval`` (a duration),
an iterable training set without a length (Lightning validates at its end), manual
optimization (the module calls ``optimizer.step()`` as often as it likes), or epochs of
different lengths (``reload_dataloaders_every_n_epochs`` with a changing data set).
"""

from __future__ import annotations

import math
import operator
from typing import Any

from dsbo.errors import ConfigError

#: What ``step=`` may name: the trainer attribute reported as the step.
STEPS = ("epoch", "global_step")


def as_steps(value: Any, what: str) -> int:
    """``value`` as a Python ``int``: any integer type (``int``, NumPy and torch integers, a
    one-element integer tensor) exactly, a float (a reservation a ledger keeps in cost units)
    rounded down.

    Raises:
        ConfigError: for a boolean, NaN or anything that is not a number, naming ``what``.
    """
    if isinstance(value, bool | str | bytes):
        raise ConfigError(f"ReportCallback: {what} must be a number of steps, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        pass
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"ReportCallback: {what} must be a number of steps, got {type(value).__name__}"
        ) from None
    if math.isnan(number):
        raise ConfigError(f"ReportCallback: {what} must be a number of steps, got NaN")
    return math.floor(number + 1e-9)


def _known(count: Any) -> int | None:
    """``count`` as an int when it is a finite positive whole number (Lightning's
    ``num_training_batches`` and ``val_check_batch`` are ``inf`` or ``None`` when unknown)."""
    if count is None or isinstance(count, bool):
        return None
    number = float(count)
    return int(number) if math.isfinite(number) and number >= 1 and number == int(number) else None


def next_validation(
    trainer: Any, step: str, limit: int, before_training: bool = False
) -> int | None:
    """The step of ``trainer``'s next validation in ``fit``, as ``step`` counts it
    (:data:`STEPS`), or some step past ``limit`` when none comes at or before ``limit``.

    From the validation that just ran (``on_validation_end``), or, with ``before_training``,
    from where the fit starts (``on_train_start``: the first validation). ``None`` when the
    schedule cannot be known (module docstring).
    """
    every_n_epochs = trainer.check_val_every_n_epoch
    if step == "epoch":
        if every_n_epochs is None:
            return None
        k = as_steps(every_n_epochs, "check_val_every_n_epoch")
        done = as_steps(trainer.current_epoch, "current_epoch") + (0 if before_training else 1)
        return (done // k + 1) * k
    return _next_global_step(trainer, limit, before_training)


def _next_global_step(trainer: Any, limit: int, before_training: bool) -> int | None:
    """:func:`next_validation` for ``step="global_step"``: the schedule walked batch by batch."""
    module = trainer.lightning_module
    batches, every = _known(trainer.num_training_batches), _known(trainer.val_check_batch)
    if batches is None or every is None or not getattr(module, "automatic_optimization", True):
        return None
    k = trainer.check_val_every_n_epoch
    k = None if k is None else as_steps(k, "check_val_every_n_epoch")
    accumulate = as_steps(trainer.accumulate_grad_batches, "accumulate_grad_batches")
    per_epoch = -(-batches // accumulate)  # optimizer steps in a whole epoch
    loop = trainer.fit_loop.epoch_loop
    epoch = as_steps(trainer.current_epoch, "current_epoch")
    index = -1 if before_training else as_steps(loop.batch_idx, "batch_idx")
    total = as_steps(loop.total_batch_idx, "total_batch_idx")
    global_step = as_steps(trainer.global_step, "global_step")
    while global_step <= limit:
        if index >= batches - 1:  # the next batch opens the next epoch
            epoch, index = epoch + 1, -1
        if index == -1 and k is not None and (epoch + 1) % k:  # an epoch without validation
            epoch, total, global_step = epoch + 1, total + batches, global_step + per_epoch
            continue
        index, total = index + 1, total + 1
        if (index + 1) % accumulate == 0 or index == batches - 1:
            global_step += 1
        if ((total if k is None else index) + 1) % every == 0:
            return global_step
    return global_step


__all__ = ["STEPS", "as_steps", "next_validation"]
