"""ReportCallback (dsbo.integrations.lightning) in real Lightning fits: tiny data, CPU, with the
Trainer of each Lightning package (``pytorch_lightning`` and ``lightning.pytorch``; a package
that is not installed skips its tests, CI installs both).

The trial is a fake with the protocol the callback relies on (``report``, ``should_stop``,
optionally ``reserved_steps``): it records its reports (and, for the spawned DDP processes,
appends them to a file) and says stop from a given step on. The last tests run dsbo searches
whose trials are dsbo's own running trials.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import warnings
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo.errors import ConfigError
from dsbo.integrations.lightning import CALLBACK_BASES, PACKAGES, ReportCallback

TRAINER = dict(
    enable_progress_bar=False,
    logger=False,
    enable_checkpointing=False,
    enable_model_summary=False,
    accelerator="cpu",
    devices=1,
)


class FakeTrial:
    """Records ``report`` calls; ``should_stop`` is True once a step >= ``stop_at`` was
    reported. ``reserved`` is its ``reserved_steps``. With ``path``, each call is also appended
    to that file (JSON lines, with the process's distributed rank), so a test can read what
    spawned processes did."""

    def __init__(self, stop_at=None, path=None, fail=False, reserved=None):
        self.stop_at, self.path, self.fail, self.reserved_steps = stop_at, path, fail, reserved
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
        last = self.reports[-1][0] if self.reports else None
        stop = self.stop_at is not None and last is not None and last >= self.stop_at
        self._write({"call": "should_stop", "stop": stop})
        return stop

    def steps(self) -> list[int]:
        return [s for s, _ in self.reports]


class PauseAt(FakeTrial):
    """A freeze-thaw trial: ``should_stop`` says ``True`` at ``stop_at`` with ``paused`` set."""

    paused = False

    def should_stop(self) -> bool:
        self.paused = super().should_stop()
        return self.paused


class TinySteps:
    """A linear regression whose validation loss (one full batch) it records per epoch, mixed
    into a ``LightningModule`` of either package. ``log_as`` names the logged validation
    metric; ``nan_at`` logs NaN at that epoch; ``record`` appends each training epoch run (with
    the rank) to a file."""

    def __init__(self, log_as="val_loss", nan_at=None, record=None, sync_dist=False):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.log_as, self.nan_at, self.record, self.sync_dist = log_as, nan_at, record, sync_dist
        self.logged: dict[int, float] = {}  # epoch -> val loss logged (not the sanity check)
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
        return torch.optim.SGD(self.parameters(), lr=getattr(self, "lr", 0.05))


class SlowToFailHook:
    """Holds a failing rank 0 for a second before it raises, so that the test sees whether the
    other rank ends its fit meanwhile (rather than wait for rank 0 until it is killed)."""

    def on_exception(self, trainer, pl_module, exception):
        if trainer.is_global_zero:
            time.sleep(1.5)


# pytorch_lightning's at module level: the spawned DDP processes unpickle them by name
class Tiny(TinySteps, pl.LightningModule):
    pass


class SlowToFail(SlowToFailHook, pl.Callback):
    pass


@cache
def kit(package: str) -> SimpleNamespace:
    """The test classes of one Lightning package (a Trainer takes only its own package's):
    ``L`` (the package), ``Tiny`` and ``tuned(lr)``, a ``Tiny`` trained at that rate."""
    import importlib

    L = importlib.import_module(package)
    tiny = Tiny if L is pl else type("Tiny", (TinySteps, L.LightningModule), {})

    def tuned(lr: float):
        module = tiny()
        module.lr = lr
        return module

    return SimpleNamespace(L=L, Tiny=tiny, tuned=tuned)


@pytest.fixture(params=PACKAGES)
def pkg(request) -> SimpleNamespace:
    pytest.importorskip(request.param, reason=f"{request.param} is not installed")
    return kit(request.param)


def loaders(n: int = 16, train_batch: int = 8):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 2, generator=g)
    data = TensorDataset(x, x.sum(1, keepdim=True))
    return DataLoader(data, batch_size=train_batch), DataLoader(data, batch_size=n)


def fit(pkg, callback, module=None, ckpt_path=None, n=16, batch=8, **trainer_kwargs):
    module = module or pkg.Tiny()
    kwargs = {**TRAINER, "max_epochs": 4, **trainer_kwargs}
    trainer = pkg.L.Trainer(callbacks=[callback], **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's advice on num_workers and the like
        trainer.fit(module, *loaders(n, batch), ckpt_path=ckpt_path)
    return trainer, module


# ---------------------------------------------------------------------- both packages
def test_the_callback_is_a_callback_of_every_installed_package():
    import importlib

    for name in PACKAGES:
        try:
            base = importlib.import_module(name).Callback
        except ImportError:
            continue
        assert base in CALLBACK_BASES and isinstance(ReportCallback(FakeTrial()), base)


ONLY = """
import sys
for name in {blocked}:
    sys.modules[name] = None  # that package is not installed
try:
    from dsbo.integrations import lightning
except ImportError as exc:
    print("ImportError", exc)
else:
    print([b.__module__.split(".")[0] for b in lightning.ReportCallback.__mro__[1:-1]])
"""


@pytest.mark.parametrize(
    "blocked, expected",
    [
        (["lightning"], "['pytorch_lightning']"),
        (["pytorch_lightning"], "['lightning']"),
        (["lightning", "pytorch_lightning"], "ImportError dsbo.integrations.lightning needs"),
    ],
)
def test_it_imports_with_either_package_alone(blocked, expected):
    code = ONLY.format(blocked=blocked)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith(expected)
    if blocked == ["lightning", "pytorch_lightning"]:
        assert 'pip install "dsbo[lightning]"' in out.stdout


def test_importing_dsbo_integrations_imports_no_lightning():
    code = (
        "import sys, dsbo.integrations; "
        "print(sorted({'pytorch_lightning', 'lightning'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- one process
def test_every_validation_epoch_is_reported_with_its_epoch_and_logged_value(pkg):
    trial = FakeTrial()
    trainer, module = fit(pkg, ReportCallback(trial, monitor="val_loss"), max_epochs=4)
    assert trial.steps() == [1, 2, 3, 4]  # epochs trained so far
    assert [v for _, v in trial.reports] == pytest.approx([module.logged[e] for e in range(4)])
    assert trial.asked == 4
    assert module.epochs_run == [0, 1, 2, 3] and trainer.current_epoch == 4


def test_no_report_during_the_sanity_check(pkg):
    trial = FakeTrial()
    _, module = fit(pkg, ReportCallback(trial), num_sanity_val_steps=1, max_epochs=2)
    assert module.validations == 3  # the sanity check ran
    assert trial.steps() == [1, 2]


def test_fit_stops_right_after_the_epoch_the_trial_says_stop(pkg):
    trial = FakeTrial(stop_at=3)
    callback = ReportCallback(trial)
    trainer, module = fit(pkg, callback, max_epochs=10)
    assert module.epochs_run == [0, 1, 2]
    assert trial.steps() == [1, 2, 3]
    assert trainer.current_epoch == 3  # three epochs completed
    assert callback.stopped and callback.stopped_epoch == 2 and callback.reservation_epoch is None


def test_not_stopped_until_the_trial_says_so(pkg):
    callback = ReportCallback(FakeTrial())
    fit(pkg, callback, max_epochs=2)
    assert not callback.stopped and callback.stopped_epoch is None


def test_global_step_is_reported_as_the_step(pkg):
    trial = FakeTrial()
    fit(pkg, ReportCallback(trial, step="global_step"), max_epochs=3)  # two batches an epoch
    assert trial.steps() == [2, 4, 6]


def test_global_step_with_validation_twice_an_epoch_stops_mid_epoch(pkg):
    trial = FakeTrial(stop_at=3)
    callback = ReportCallback(trial, step="global_step")
    _, module = fit(pkg, callback, max_epochs=5, val_check_interval=0.5)
    assert trial.steps() == [1, 2, 3]
    assert module.epochs_run == [0, 1] and callback.stopped_epoch == 1


def test_step_epoch_without_one_validation_per_epoch_is_refused(pkg):
    with pytest.raises(ConfigError, match="global_step"):
        fit(pkg, ReportCallback(FakeTrial()), val_check_interval=0.5)
    with pytest.raises(ConfigError, match="check_val_every_n_epoch=None"):
        fit(pkg, ReportCallback(FakeTrial()), check_val_every_n_epoch=None, val_check_interval=3)
    # an integer interval (every batch here) is caught at the second validation of epoch 0
    trial = FakeTrial()
    with pytest.raises(ConfigError, match="twice in epoch 0"):
        fit(pkg, ReportCallback(trial), val_check_interval=1)
    assert trial.steps() == [1]


def test_a_missing_monitor_raises_a_config_error_naming_it_and_the_logged_metrics(pkg):
    trial = FakeTrial()
    with pytest.raises(ConfigError, match=r"'val_los'.*'val_loss'"):
        fit(pkg, ReportCallback(trial, monitor="val_los"))
    assert trial.reports == []


def test_a_nan_value_is_reported_not_swallowed(pkg):
    trial = FakeTrial()
    fit(pkg, ReportCallback(trial), module=pkg.Tiny(nan_at=1), max_epochs=3)
    assert trial.steps() == [1, 2, 3]
    assert math.isnan(trial.reports[1][1]) and math.isfinite(trial.reports[2][1])


def test_an_error_of_the_trial_propagates(pkg):
    with pytest.raises(RuntimeError, match="store is gone"):
        fit(pkg, ReportCallback(FakeTrial(fail=True)))


def test_trainer_validate_reports_nothing(pkg):
    trial = FakeTrial()
    trainer, module = fit(pkg, ReportCallback(trial), max_epochs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.validate(module, loaders()[1], verbose=False)
    assert len(trial.reports) == 1


def test_min_epochs_keeps_training_without_more_reports(pkg):
    trial = FakeTrial(stop_at=1)
    callback = ReportCallback(trial)
    _, module = fit(pkg, callback, min_epochs=3, max_epochs=10)
    assert module.epochs_run == [0, 1, 2]
    assert len(trial.reports) == 1 and callback.stopped_epoch == 0


def test_state_dict_round_trip_and_a_resumed_fit_of_a_stopped_trial_ends_at_once(pkg, tmp_path):
    callback = ReportCallback(FakeTrial(stop_at=2))
    trainer, _ = fit(pkg, callback, max_epochs=10)
    assert callback.state_dict() == {"stopped": True, "stopped_epoch": 1}
    path = tmp_path / "stopped.ckpt"
    trainer.save_checkpoint(path)

    trial = FakeTrial()
    resumed = ReportCallback(trial)
    _, module = fit(pkg, resumed, ckpt_path=str(path), max_epochs=10)
    assert resumed.stopped and resumed.stopped_epoch == 1
    assert module.epochs_run == [] and trial.reports == []

    fresh = ReportCallback(FakeTrial())
    fresh.load_state_dict(callback.state_dict())
    assert (fresh.stopped, fresh.stopped_epoch) == (True, 1)
    # two callbacks of one trainer keep separate states
    a, b = ReportCallback(trial, monitor="a"), ReportCallback(trial, monitor="b")
    assert a.state_key != b.state_key


def test_a_paused_fit_ends_and_its_checkpoint_trains_on_when_thawed(pkg, tmp_path):
    callback = ReportCallback(PauseAt(stop_at=2))
    trainer, module = fit(pkg, callback, max_epochs=10)
    assert module.epochs_run == [0, 1] and callback.paused_epoch == 1
    assert callback.state_dict() == {"stopped": False, "stopped_epoch": None}, "not remembered"
    path = tmp_path / "paused.ckpt"
    trainer.save_checkpoint(path)

    thawed = FakeTrial(stop_at=4)
    _, resumed = fit(pkg, ReportCallback(thawed), ckpt_path=str(path), max_epochs=10)
    assert resumed.epochs_run == [2, 3] and thawed.steps() == [3, 4]


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="report"):
        ReportCallback("val_loss")
    with pytest.raises(ConfigError, match="monitor"):
        ReportCallback(FakeTrial(), monitor="")
    with pytest.raises(ConfigError, match="step"):
        ReportCallback(FakeTrial(), step="batch")


# ---------------------------------------------------------------------- the reservation
@pytest.mark.parametrize(
    "reserved, epochs, steps",
    [
        (7, 6, [3, 6]),  # validated every 3 epochs: the 7th would never be reported
        (6, 6, [3, 6]),
        (5, 3, [3]),
        (None, 10, [3, 6, 9]),  # no reservation: max_epochs, the 10th epoch unreported
    ],
)
def test_a_fit_validated_every_3_epochs_ends_at_the_last_validation_its_reservation_covers(
    pkg, reserved, epochs, steps
):
    trial = FakeTrial(reserved=reserved)
    callback = ReportCallback(trial)
    _, module = fit(pkg, callback, max_epochs=10, check_val_every_n_epoch=3)
    assert len(module.epochs_run) == epochs and trial.steps() == steps
    assert callback.reservation_epoch == (None if reserved is None else epochs - 1)
    assert not callback.stopped and callback.state_dict()["stopped"] is False


def test_a_reservation_short_of_the_first_validation_trains_nothing(pkg):
    trial = FakeTrial(reserved=2)
    callback = ReportCallback(trial)
    _, module = fit(pkg, callback, max_epochs=10, check_val_every_n_epoch=3)
    assert module.epochs_run == [] and trial.reports == [] and callback.reservation_epoch == -1


@pytest.mark.parametrize(
    "kwargs, n, batch, reserved, steps, trained",
    [
        # 10 batches an epoch, validation every 3 of them: at global steps 3, 6, 9, then 13
        (dict(val_check_interval=0.3), 20, 2, 12, [3, 6, 9], 9),
        (dict(val_check_interval=0.3), 20, 2, 13, [3, 6, 9, 13], 13),
        # two batches an epoch, validation every other epoch: at 4, 8
        (dict(check_val_every_n_epoch=2), 16, 8, 7, [4], 4),
        # every 3 batches across epochs of 2
        (dict(check_val_every_n_epoch=None, val_check_interval=3), 16, 8, 8, [3, 6], 6),
    ],
)
def test_global_steps_end_at_the_last_validation_the_reservation_covers(
    pkg, kwargs, n, batch, reserved, steps, trained
):
    trial = FakeTrial(reserved=reserved)
    callback = ReportCallback(trial, step="global_step")
    trainer, _ = fit(pkg, callback, n=n, batch=batch, max_epochs=10, **kwargs)
    assert trial.steps() == steps and trainer.global_step == trained


@pytest.mark.parametrize(
    "reserved", [np.int64(5), np.int32(5), torch.tensor(5), torch.tensor([5]), 5.0, lambda: 5]
)
def test_a_reservation_of_any_integer_type_or_a_method(pkg, reserved):
    trial = FakeTrial(reserved=reserved)
    _, module = fit(pkg, ReportCallback(trial), max_epochs=10, check_val_every_n_epoch=3)
    assert len(module.epochs_run) == 3 and trial.steps() == [3]  # python ints (FakeTrial)


# ---------------------------------------------------------------------- two processes
def ddp_fit(trial, module, max_epochs=6):
    kwargs = {**TRAINER, "devices": 2, "strategy": "ddp_spawn", "max_epochs": max_epochs}
    trainer = pl.Trainer(
        callbacks=[ReportCallback(trial), SlowToFail()], num_sanity_val_steps=0, **kwargs
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, *loaders())


def read_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
def test_ddp_rank_zero_decides_and_both_ranks_stop_at_the_same_epoch(tmp_path):
    start = time.time()
    calls, epochs = tmp_path / "trial.jsonl", tmp_path / "epochs.jsonl"
    ddp_fit(
        FakeTrial(stop_at=2, path=str(calls)),
        Tiny(record=str(epochs), sync_dist=True),
    )
    calls, epochs = read_lines(calls), read_lines(epochs)
    assert {c["rank"] for c in calls} == {0}  # only rank 0 talked to the trial
    assert [(c["call"], c.get("step")) for c in calls] == [
        ("report", 1),
        ("should_stop", None),
        ("report", 2),
        ("should_stop", None),
    ]
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
def test_a_dsbo_search_stops_lightning_fits_through_the_callback(pkg):
    import dsbo

    def train(params, trial):
        callback = ReportCallback(trial, monitor="val_loss")
        trainer, _ = fit(pkg, callback, module=pkg.tuned(params["lr"]), max_epochs=6)
        return trainer.callback_metrics["val_loss"].item()

    result = dsbo.minimize(
        train,
        {"lr": dsbo.Float(1e-4, 0.3, log=True)},
        budget=8,
        n_init=4,
        surrogate="gp",
        dry_run=False,
        early_stopping="asha",
        max_steps=6,
        budget_steps=40,
    )
    store = result.campaign.store
    curves = store.curves()
    assert store.count("stopped") >= 1 and store.count("failed") == 0
    for trial in store.trials():
        steps = [s for s, _ in curves[trial.id]]
        assert steps == list(range(1, len(steps) + 1))  # epochs trained so far
        assert (steps[-1] < 6) == (trial.status == "stopped") and trial.cost == steps[-1]
    assert store.cost_used() <= 40


def budgeted_search(pkg, budget_steps, max_steps, step, n, batch, **trainer_kwargs):
    """A dsbo search under ``budget_steps`` whose trials are Lightning fits; returns the store
    and, by trial id, the steps each fit trained (epochs, or optimizer steps)."""
    import dsbo

    trained: dict[int, int] = {}

    def train(params, trial):
        callback = ReportCallback(trial, monitor="val_loss", step=step)
        module = pkg.tuned(params["lr"])
        trainer, module = fit(pkg, callback, module=module, n=n, batch=batch, **trainer_kwargs)
        trained[trial.id] = len(module.epochs_run) if step == "epoch" else trainer.global_step
        return trainer.callback_metrics["val_loss"].item()

    result = dsbo.minimize(
        train,
        {"lr": dsbo.Float(1e-3, 0.1, log=True)},
        budget=6,
        n_init=2,
        surrogate="gp",
        dry_run=False,
        max_steps=max_steps,
        budget_steps=budget_steps,
    )
    return result.campaign.store, trained


def test_validated_every_3_epochs_a_search_trains_exactly_what_it_is_charged(pkg):
    store, trained = budgeted_search(
        pkg, 16, 6, "epoch", 16, 8, max_epochs=6, check_val_every_n_epoch=3
    )
    curves, trials = store.curves(), store.trials()
    assert len(trials) >= 3 and store.count("failed") == 0
    for trial in trials:
        assert trained[trial.id] == trial.cost == curves[trial.id][-1][0]  # epochs == charged
    assert any(trial.cost < 6 for trial in trials)  # a reservation short of max_steps
    assert store.cost_used() == sum(trained.values()) <= 16


def test_an_irregular_validation_schedule_never_trains_past_the_reservation(pkg):
    # 10 batches an epoch validated every 3: at global steps 3, 6, 9, 13, ... The first trial
    # reserves 12 of the 30 (no report yet): the trial alone would expect a validation at
    # 12 and train to 13; the callback knows the next is at 13 and ends the fit at 9.
    store, trained = budgeted_search(
        pkg, 12, 30, "global_step", 20, 2, max_epochs=3, val_check_interval=0.3
    )
    curves, trials = store.curves(), store.trials()
    first = min(trials, key=lambda t: t.id)
    assert trained[first.id] == first.cost == 9
    for trial in trials:
        assert trained[trial.id] == trial.cost == curves[trial.id][-1][0]
    assert store.cost_used() == sum(trained.values()) <= 12
