"""ReportCallback (dsbo.integrations.lightning) in real Lightning fits: tiny data, CPU.

The trial is a fake with the protocol the callback relies on (``report``, ``should_stop``):
it records its reports (and, for the spawned DDP processes, appends them to a file) and says
stop from a given step on.
"""

from __future__ import annotations

import json
import math
import time
import warnings

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo.errors import ConfigError
from dsbo.integrations.lightning import ReportCallback

TRAINER = dict(enable_progress_bar=False, logger=False, enable_checkpointing=False,
               enable_model_summary=False, accelerator="cpu", devices=1)


class FakeTrial:
    """Records ``report`` calls; ``should_stop`` is True once a step >= ``stop_at`` was
    reported. With ``path``, each call is also appended to that file (JSON lines, with the
    process's distributed rank), so a test can read what spawned processes did."""

    def __init__(self, stop_at: int | None = None, path: str | None = None, fail: bool = False):
        self.stop_at, self.path, self.fail = stop_at, path, fail
        self.reports: list[tuple[int, float]] = []
        self.asked = 0

    def _write(self, record: dict) -> None:
        if self.path is not None:
            rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else None
            with open(self.path, "a") as f:
                f.write(json.dumps({**record, "rank": rank}) + "\n")

    def report(self, step: int, value: float) -> None:
        if self.fail:
            raise RuntimeError("the trial's store is gone")
        assert type(step) is int and type(value) is float
        self.reports.append((step, value))
        self._write({"call": "report", "step": step, "value": value})

    def should_stop(self) -> bool:
        self.asked += 1
        stop = self.stop_at is not None and bool(self.reports) and self.reports[-1][0] >= self.stop_at
        self._write({"call": "should_stop", "stop": stop})
        return stop


class Tiny(pl.LightningModule):
    """A linear regression whose validation loss (one full batch) it records per epoch.
    ``log_as`` names the logged validation metric; ``nan_at`` logs NaN at that epoch;
    ``record`` appends each training epoch run (with the rank) to a file."""

    def __init__(self, log_as: str = "val_loss", nan_at: int | None = None,
                 record: str | None = None, sync_dist: bool = False):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.log_as, self.nan_at, self.record, self.sync_dist = log_as, nan_at, record, sync_dist
        self.logged: dict[int, float] = {}  # epoch -> val loss logged (not in the sanity check)
        self.validations = 0  # validation runs, sanity check included
        self.epochs_run: list[int] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        return ((self.layer(x) - y) ** 2).mean()

    def on_train_epoch_start(self):
        self.epochs_run.append(self.current_epoch)
        if self.record is not None:
            with open(self.record, "a") as f:
                f.write(json.dumps({"rank": self.global_rank, "epoch": self.current_epoch}) + "\n")

    def on_train_end(self):
        if self.record is not None:
            with open(self.record, "a") as f:
                f.write(json.dumps({"rank": self.global_rank, "end": True}) + "\n")

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = ((self.layer(x) - y) ** 2).mean()
        if self.nan_at is not None and self.current_epoch == self.nan_at:
            loss = loss * float("nan")
        self.log(self.log_as, loss, sync_dist=self.sync_dist)
        if not self.trainer.sanity_checking:
            self.logged[self.current_epoch] = loss.item()

    def on_validation_epoch_end(self):
        self.validations += 1

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class SlowToFail(pl.Callback):
    """Holds a failing rank 0 for a second before it raises, so that the test sees whether the
    other rank ends its fit meanwhile (rather than wait for rank 0 until it is killed)."""

    def on_exception(self, trainer, pl_module, exception):
        if trainer.is_global_zero:
            time.sleep(1.5)


def loaders(n: int = 16, train_batch: int = 8):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 2, generator=g)
    data = TensorDataset(x, x.sum(1, keepdim=True))
    return DataLoader(data, batch_size=train_batch), DataLoader(data, batch_size=n)


def fit(callback, module=None, ckpt_path=None, **trainer_kwargs):
    module = module or Tiny()
    trainer = pl.Trainer(callbacks=[callback], **{**TRAINER, "max_epochs": 4, **trainer_kwargs})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's advice on num_workers and the like
        trainer.fit(module, *loaders(), ckpt_path=ckpt_path)
    return trainer, module


# ---------------------------------------------------------------------- one process
def test_every_validation_epoch_is_reported_with_its_epoch_and_logged_value():
    trial = FakeTrial()
    trainer, module = fit(ReportCallback(trial, monitor="val_loss"), max_epochs=4)
    assert [s for s, _ in trial.reports] == [1, 2, 3, 4]  # epochs trained so far
    assert [v for _, v in trial.reports] == pytest.approx([module.logged[e] for e in range(4)])
    assert trial.asked == 4
    assert module.epochs_run == [0, 1, 2, 3] and trainer.current_epoch == 4


def test_no_report_during_the_sanity_check():
    trial = FakeTrial()
    _, module = fit(ReportCallback(trial), num_sanity_val_steps=1, max_epochs=2)
    assert module.validations == 3  # the sanity check ran
    assert [s for s, _ in trial.reports] == [1, 2]


def test_fit_stops_right_after_the_epoch_the_trial_says_stop():
    trial = FakeTrial(stop_at=3)
    callback = ReportCallback(trial)
    trainer, module = fit(callback, max_epochs=10)
    assert module.epochs_run == [0, 1, 2]
    assert [s for s, _ in trial.reports] == [1, 2, 3]
    assert trainer.current_epoch == 3  # three epochs completed
    assert callback.stopped and callback.stopped_epoch == 2


def test_not_stopped_until_the_trial_says_so():
    callback = ReportCallback(FakeTrial())
    fit(callback, max_epochs=2)
    assert not callback.stopped and callback.stopped_epoch is None


def test_global_step_is_reported_as_the_step():
    trial = FakeTrial()
    fit(ReportCallback(trial, step="global_step"), max_epochs=3)  # two batches an epoch
    assert [s for s, _ in trial.reports] == [2, 4, 6]


def test_global_step_with_validation_twice_an_epoch_stops_mid_epoch():
    trial = FakeTrial(stop_at=3)
    callback = ReportCallback(trial, step="global_step")
    _, module = fit(callback, max_epochs=5, val_check_interval=0.5)
    assert [s for s, _ in trial.reports] == [1, 2, 3]
    assert module.epochs_run == [0, 1] and callback.stopped_epoch == 1


def test_step_epoch_with_validation_twice_an_epoch_is_refused():
    with pytest.raises(ConfigError, match="global_step"):
        fit(ReportCallback(FakeTrial()), val_check_interval=0.5)
    # an integer interval (every batch here) is caught at the second validation of epoch 0
    trial = FakeTrial()
    with pytest.raises(ConfigError, match="twice in epoch 0"):
        fit(ReportCallback(trial), val_check_interval=1)
    assert trial.reports and [s for s, _ in trial.reports] == [1]


def test_a_missing_monitor_raises_a_config_error_naming_it_and_the_logged_metrics():
    trial = FakeTrial()
    with pytest.raises(ConfigError, match=r"'val_los'.*'val_loss'"):
        fit(ReportCallback(trial, monitor="val_los"))
    assert trial.reports == []


def test_a_nan_value_is_reported_not_swallowed():
    trial = FakeTrial()
    fit(ReportCallback(trial), module=Tiny(nan_at=1), max_epochs=3)
    assert [s for s, _ in trial.reports] == [1, 2, 3]
    assert math.isnan(trial.reports[1][1]) and math.isfinite(trial.reports[2][1])


def test_an_error_of_the_trial_propagates():
    with pytest.raises(RuntimeError, match="store is gone"):
        fit(ReportCallback(FakeTrial(fail=True)))


def test_trainer_validate_reports_nothing():
    trial = FakeTrial()
    trainer, module = fit(ReportCallback(trial), max_epochs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.validate(module, loaders()[1], verbose=False)
    assert len(trial.reports) == 1


def test_min_epochs_keeps_training_without_more_reports():
    trial = FakeTrial(stop_at=1)
    callback = ReportCallback(trial)
    _, module = fit(callback, min_epochs=3, max_epochs=10)
    assert module.epochs_run == [0, 1, 2]
    assert len(trial.reports) == 1 and callback.stopped_epoch == 0


def test_state_dict_round_trip_and_a_resumed_fit_of_a_stopped_trial_ends_at_once(tmp_path):
    callback = ReportCallback(FakeTrial(stop_at=2))
    trainer, _ = fit(callback, max_epochs=10)
    assert callback.state_dict() == {"stopped": True, "stopped_epoch": 1}
    path = tmp_path / "stopped.ckpt"
    trainer.save_checkpoint(path)

    trial = FakeTrial()
    resumed = ReportCallback(trial)
    _, module = fit(resumed, ckpt_path=str(path), max_epochs=10)
    assert resumed.stopped and resumed.stopped_epoch == 1
    assert module.epochs_run == [] and trial.reports == []

    fresh = ReportCallback(FakeTrial())
    fresh.load_state_dict(callback.state_dict())
    assert (fresh.stopped, fresh.stopped_epoch) == (True, 1)
    # two callbacks of one trainer keep separate states
    assert ReportCallback(trial, monitor="a").state_key != ReportCallback(trial, monitor="b").state_key


class PauseAt(FakeTrial):
    """A freeze-thaw trial: ``should_stop`` says ``True`` at ``stop_at`` with ``paused`` set."""

    paused = False

    def should_stop(self) -> bool:
        self.paused = super().should_stop()
        return self.paused


def test_a_paused_fit_ends_and_its_checkpoint_trains_on_when_thawed(tmp_path):
    callback = ReportCallback(PauseAt(stop_at=2))
    trainer, module = fit(callback, max_epochs=10)
    assert module.epochs_run == [0, 1] and callback.paused_epoch == 1
    assert callback.state_dict() == {"stopped": False, "stopped_epoch": None}, "a checkpoint does not remember a pause"
    path = tmp_path / "paused.ckpt"
    trainer.save_checkpoint(path)

    thawed = FakeTrial(stop_at=4)
    _, resumed = fit(ReportCallback(thawed), ckpt_path=str(path), max_epochs=10)
    assert resumed.epochs_run == [2, 3] and [s for s, _ in thawed.reports] == [3, 4]


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="report"):
        ReportCallback("val_loss")
    with pytest.raises(ConfigError, match="monitor"):
        ReportCallback(FakeTrial(), monitor="")
    with pytest.raises(ConfigError, match="step"):
        ReportCallback(FakeTrial(), step="batch")


def test_importing_dsbo_integrations_imports_no_lightning():
    import subprocess
    import sys

    code = "import sys, dsbo.integrations; print('pytorch_lightning' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------- two processes
def ddp_fit(trial, module, max_epochs=6):
    trainer = pl.Trainer(callbacks=[ReportCallback(trial), SlowToFail()],
                         **{**TRAINER, "devices": 2, "strategy": "ddp_spawn", "max_epochs": max_epochs,
                            "num_sanity_val_steps": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, *loaders())


def read_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_ddp_rank_zero_decides_and_both_ranks_stop_at_the_same_epoch(tmp_path):
    start = time.time()
    calls, epochs = tmp_path / "trial.jsonl", tmp_path / "epochs.jsonl"
    ddp_fit(FakeTrial(stop_at=2, path=str(calls)),
            Tiny(record=str(epochs), sync_dist=True))
    calls, epochs = read_lines(calls), read_lines(epochs)
    assert {c["rank"] for c in calls} == {0}  # only rank 0 talked to the trial
    assert [(c["call"], c.get("step")) for c in calls] == [
        ("report", 1), ("should_stop", None), ("report", 2), ("should_stop", None)]
    assert all(math.isfinite(c["value"]) for c in calls if c["call"] == "report")
    by_rank = {r: [e["epoch"] for e in epochs if e["rank"] == r and "epoch" in e] for r in (0, 1)}
    assert by_rank == {0: [0, 1], 1: [0, 1]}
    assert sorted(e["rank"] for e in epochs if "end" in e) == [0, 1]
    print(f"ddp fit: {time.time() - start:.1f} s")


@pytest.mark.slow
def test_ddp_an_error_on_rank_zero_ends_the_fit_without_a_hang(tmp_path):
    epochs = tmp_path / "epochs.jsonl"
    with pytest.raises(Exception, match="val_los"):
        ddp_fit(FakeTrial(), Tiny(log_as="val_los", record=str(epochs)))
    epochs = read_lines(epochs)
    by_rank = {r: [e["epoch"] for e in epochs if e["rank"] == r and "epoch" in e] for r in (0, 1)}
    assert by_rank == {0: [0], 1: [0]}
    # rank 1 was told and ended its fit, rather than wait for rank 0 at the next collective
    assert [e["rank"] for e in epochs if "end" in e] == [1]


# ---------------------------------------------------------------------- with dsbo's own trial
class TunedTiny(Tiny):
    def __init__(self, lr: float):
        super().__init__()
        self.lr = lr

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def test_a_dsbo_search_stops_lightning_fits_through_the_callback():
    import dsbo

    def train(params, trial):
        trainer, _ = fit(ReportCallback(trial, monitor="val_loss"), module=TunedTiny(params["lr"]), max_epochs=6)
        return trainer.callback_metrics["val_loss"].item()

    result = dsbo.minimize(train, {"lr": dsbo.Float(1e-4, 0.3, log=True)}, budget=8, n_init=4, surrogate="gp",
                           dry_run=False, early_stopping="asha", max_steps=6, budget_steps=40)
    store = result.campaign.store
    curves = store.curves()
    assert store.count("stopped") >= 1 and store.count("failed") == 0
    for trial in store.trials():
        steps = [s for s, _ in curves[trial.id]]
        assert steps == list(range(1, len(steps) + 1))  # epochs trained so far
        assert (steps[-1] < 6) == (trial.status == "stopped") and trial.cost == steps[-1]
    assert store.cost_used() <= 40
