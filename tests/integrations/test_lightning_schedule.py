"""dsbo.integrations.lightning_schedule: the next validation it predicts is the one Lightning
runs (real fits of both Lightning packages, tiny data, CPU), and steps of any integer type."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo.errors import ConfigError
from dsbo.integrations.lightning_schedule import as_steps, next_validation

PACKAGES = ("pytorch_lightning", "lightning.pytorch")
QUIET = dict(
    enable_progress_bar=False,
    logger=False,
    enable_checkpointing=False,
    enable_model_summary=False,
    accelerator="cpu",
    devices=1,
    num_sanity_val_steps=0,
)


@pytest.fixture(params=PACKAGES)
def L(request):
    return pytest.importorskip(request.param, reason=f"{request.param} is not installed")


def recorded_fit(L, batches: int, step: str, before: list, **trainer_kwargs):
    """Fit a linear model on ``batches`` batches an epoch; at the fit's start and after each
    validation, record ``(global_step or epochs trained, next_validation(...))``."""

    class Recorder(L.Callback):
        def on_train_start(self, trainer, pl_module):
            before.append(next_validation(trainer, step, 10**6, before_training=True))

        def on_validation_end(self, trainer, pl_module):
            if not trainer.sanity_checking:
                now = trainer.global_step if step == "global_step" else trainer.current_epoch + 1
                seen.append((now, next_validation(trainer, step, 10**6)))

    class Linear(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            return self.layer(batch[0]).pow(2).mean()

        def validation_step(self, batch, batch_idx):
            self.log("val", self.layer(batch[0]).pow(2).mean())

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    seen: list[tuple[int, int | None]] = []
    data = TensorDataset(torch.randn(batches, 2))
    trainer = L.Trainer(callbacks=[Recorder()], **{**QUIET, **trainer_kwargs})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(Linear(), DataLoader(data, batch_size=1), DataLoader(data, batch_size=batches))
    return seen


@pytest.mark.parametrize(
    "batches, step, kwargs",
    [
        (2, "epoch", dict(check_val_every_n_epoch=3)),
        (3, "epoch", dict(check_val_every_n_epoch=2)),
        (10, "global_step", dict(val_check_interval=0.3)),  # 3, 6, 9, then 13: not periodic
        (2, "global_step", dict(check_val_every_n_epoch=2)),
        (3, "global_step", dict(accumulate_grad_batches=2)),  # two optimizer steps an epoch
        (5, "global_step", dict(accumulate_grad_batches=2, val_check_interval=2)),
        (2, "global_step", dict(check_val_every_n_epoch=None, val_check_interval=3)),
        (4, "global_step", dict(check_val_every_n_epoch=3, val_check_interval=0.5)),
    ],
)
def test_the_predicted_next_validation_is_the_one_lightning_runs(L, batches, step, kwargs):
    before: list[int | None] = []
    seen = recorded_fit(L, batches, step, before, max_epochs=10, **kwargs)
    steps = [s for s, _ in seen]
    assert len(steps) >= 3 and len(set(steps)) == len(steps)
    assert before == [steps[0]]
    # each validation predicted the step of the next one (the last: its successor's, past the fit)
    assert [nxt for _, nxt in seen[:-1]] == steps[1:]
    assert seen[-1][1] is not None and seen[-1][1] > steps[-1]


def test_the_global_step_walk_stops_past_the_limit():
    trainer = SimpleNamespace(
        check_val_every_n_epoch=10**6,  # no validation for a million epochs
        lightning_module=SimpleNamespace(automatic_optimization=True),
        num_training_batches=4,
        val_check_batch=4,
        accumulate_grad_batches=1,
        current_epoch=0,
        global_step=4,
        fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(batch_idx=3, total_batch_idx=3)),
    )
    assert next_validation(trainer, "global_step", limit=20) == 24  # the first epoch past 20


@pytest.mark.parametrize(
    "change",
    [
        dict(val_check_batch=None),  # a time-based val_check_interval
        dict(num_training_batches=float("inf")),  # an iterable data set without a length
        dict(lightning_module=SimpleNamespace(automatic_optimization=False)),
    ],
)
def test_an_unknowable_global_step_schedule_is_none(change):
    trainer = SimpleNamespace(
        check_val_every_n_epoch=1,
        lightning_module=SimpleNamespace(automatic_optimization=True),
        num_training_batches=4,
        val_check_batch=4,
        accumulate_grad_batches=1,
        current_epoch=0,
        global_step=4,
        fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(batch_idx=3, total_batch_idx=3)),
    )
    assert next_validation(trainer, "global_step", limit=100) == 8
    for key, value in change.items():
        setattr(trainer, key, value)
    assert next_validation(trainer, "global_step", limit=100) is None


@pytest.mark.parametrize(
    "value, steps",
    [
        (7, 7),
        (np.int64(7), 7),
        (np.int32(7), 7),
        (np.uint8(7), 7),
        (torch.tensor(7), 7),
        (torch.tensor([7], dtype=torch.int32), 7),
        (7.0, 7),
        (6.9999999999, 7),  # a reservation summed in floats
        (7.5, 7),
        (np.float64(7.5), 7),
        (torch.tensor(7.5), 7),
    ],
)
def test_steps_of_any_integer_type_are_python_ints(value, steps):
    out = as_steps(value, "reserved_steps")
    assert out == steps and type(out) is int


@pytest.mark.parametrize("value", [True, math.nan, "7", None, torch.zeros(2)])
def test_what_is_not_a_number_of_steps_is_a_config_error(value):
    with pytest.raises(ConfigError, match="reserved_steps"):
        as_steps(value, "reserved_steps")
