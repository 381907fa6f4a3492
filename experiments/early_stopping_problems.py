"""Learning-curve problems of ``experiments/early_stopping.py``: real training runs of 27 epochs
on data that ship with scikit-learn, over the mixed search spaces users write, and the curve
cache that every arm reads them through.

Problems (minimization; the value at each epoch is the validation metric after that epoch,
the objective of a trial is its value at its last epoch; a value that is not finite or above
:data:`CAP` counts as :data:`CAP`, a diverged run):

1. ``zoo-diabetes`` (PyTorch Lightning, the zoo): ``load_diabetes`` (442 rows, 10 features,
   features and target standardized on the training rows), a fixed split of 300 training and
   142 validation rows. The model is one of the zoo's LightningModules, ``family`` =
   ``ensemble`` (:class:`dsbo_zoo.NeuralEnsemble`, ``members`` networks, only for it) or
   ``smb`` (:class:`dsbo_zoo.SimpleSMB`, one sample, target noise and anchor weight
   ``noise_var`` on a log scale, only for it), trained by Lightning's ``Trainer`` (CPU, no
   logger, checkpoints or progress bar) with dsbo's ``ReportCallback(trial,
   monitor="val_mse")``; the value is ``val_mse``. ``lr`` (log), ``width`` (log integer),
   ``depth`` (integer), ``gamma`` (the initialization scale, log), ``batch_size`` (log
   integer), ``activation`` and ``optimizer`` (adam / plain gradient descent) categorical.
2. ``mlp-cancer`` (a plain torch loop): ``load_breast_cancer`` (569 rows, 30 features,
   standardized on the training rows), a fixed stratified split of 398 / 171 rows; an MLP
   classifier, the value the validation cross-entropy. ``lr``, ``weight_decay`` (log),
   ``width`` (log integer), ``layers`` (integer), ``dropout`` (linear), ``batch_size`` (log
   integer), ``activation`` and ``optimizer`` (adam / sgd) categorical, ``momentum`` only for sgd.
3. ``cnn-digits`` (a plain torch loop): ``load_digits`` (1797 8x8 images, pixels / 16), a
   fixed stratified split of 800 / 400 of the images; a small CNN (a 3x3 convolution of
   ``channels`` maps, ``pool`` (max / avg) to 4x4, ``conv_layers - 1`` more 3x3 convolutions,
   a dense layer of ``hidden`` units), the value the validation cross-entropy. ``lr``,
   ``weight_decay`` (log), ``channels``, ``hidden``, ``batch_size`` (log integers),
   ``conv_layers`` (integer), ``label_smoothing`` (linear), ``pool`` and ``optimizer`` (adam /
   sgd / rmsprop) categorical, ``momentum`` only for sgd.

A training is deterministic given ``(params, seed)`` (one thread; the weights and the batch
order drawn from ``seed``), so that the first ``k`` epochs of a run stopped at ``k`` are the
first ``k`` epochs of the full run. :class:`CurveCache` keeps the curves by (rounded
parameters, seed) in ``curves/<problem>-seed<k>.jsonl`` under the output folder: a trial whose
curve is cached is replayed epoch by epoch (the stopping rule decides after each, exactly as
it would during training); one that needs more epochs than the cache holds is trained from
scratch by :func:`evaluate`, the replayed epochs not reported twice. Every value any arm sees
comes from a real training run; nothing is interpolated.
"""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAX_EPOCHS = 27
#: A validation value that is not finite or above this counts as this (a diverged run).
CAP = 10.0
#: Significant digits of the float parameters: a trial is trained on its rounded values, the
#: cache keyed by them.
DIGITS = 6


# ----------------------------------------------------------------------------- data
_DATA: dict[tuple[str, bool], tuple[Any, ...]] = {}
#: Splits built by other problem modules: ``name -> build(small)``.
_SPLITS: dict[str, Callable[[bool], tuple[Any, ...]]] = {}


def register_split(name: str, build: Callable[[bool], tuple[Any, ...]]) -> None:
    """Make ``_split(name, small)`` return ``build(small)`` (cached like the others)."""
    _SPLITS[name] = build


def _split(name: str, small: bool) -> tuple[Any, ...]:
    """``(X_train, y_train, X_val, y_val)`` as float32 / int64 torch tensors, fixed split;
    ``small`` (the smoke test) keeps a third of the rows."""
    key = (name, small)
    if key in _DATA:
        return _DATA[key]
    if name in _SPLITS:
        _DATA[key] = _SPLITS[name](small)
        return _DATA[key]
    import torch
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    if name == "diabetes":
        X, y = datasets.load_diabetes(return_X_y=True)
        X_tr, X_va, y_tr, y_va = train_test_split(X, y, train_size=300, random_state=0)
        mu, sd = y_tr.mean(), y_tr.std()
        y_tr, y_va = (y_tr - mu) / sd, (y_va - mu) / sd
        y_dtype = torch.float32
    else:
        if name == "cancer":
            X, y = datasets.load_breast_cancer(return_X_y=True)
            X_tr, X_va, y_tr, y_va = train_test_split(
                X, y, test_size=171, stratify=y, random_state=0
            )
        else:  # 800 / 400 of the 1797 images: a CNN epoch on all of them took twice as long
            X, y = datasets.load_digits(return_X_y=True)
            X_tr, X_va, y_tr, y_va = train_test_split(
                X / 16.0, y, train_size=800, test_size=400, stratify=y, random_state=0
            )
        y_dtype = torch.int64
    if name != "digits":
        mu, sd = X_tr.mean(0), X_tr.std(0) + 1e-12
        X_tr, X_va = (X_tr - mu) / sd, (X_va - mu) / sd
    if small:
        X_tr, y_tr, X_va, y_va = (
            X_tr[: len(X_tr) // 3],
            y_tr[: len(y_tr) // 3],
            X_va[: len(X_va) // 3],
            y_va[: len(y_va) // 3],
        )
    _DATA[key] = (
        torch.tensor(X_tr, dtype=torch.float32),
        torch.tensor(y_tr, dtype=y_dtype),
        torch.tensor(X_va, dtype=torch.float32),
        torch.tensor(y_va, dtype=y_dtype),
    )
    return _DATA[key]


# ----------------------------------------------------------------------------- training
def clean(value: float) -> float:
    """The reported value: :data:`CAP` for a diverged run."""
    return value if math.isfinite(value) and value < CAP else CAP


def _report_diverged(trial: Any, epoch: int) -> None:
    """A run whose weights are no longer finite stays at :data:`CAP` for every later epoch
    (reported without training on: the same curve, faster)."""
    for e in range(epoch, MAX_EPOCHS + 1):
        trial.report(e, CAP)
        if trial.should_stop():
            return


def _float32(train: Callable[..., None]) -> Callable[..., None]:
    """Train in float32 whatever torch's default dtype (dsbo's tests set float64)."""

    @functools.wraps(train)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        import torch

        before = torch.get_default_dtype()
        torch.set_default_dtype(torch.float32)
        try:
            train(*args, **kwargs)
        finally:
            torch.set_default_dtype(before)

    return wrapper


def _optimizer(params: dict[str, Any], weights: Any) -> Any:
    import torch

    lr, wd = params["lr"], params.get("weight_decay", 0.0)
    if params["optimizer"] == "sgd":
        return torch.optim.SGD(
            weights, lr=lr, momentum=params.get("momentum", 0.0), weight_decay=wd
        )
    if params["optimizer"] == "rmsprop":
        return torch.optim.RMSprop(weights, lr=lr, weight_decay=wd)
    return torch.optim.Adam(weights, lr=lr, weight_decay=wd)


def _torch_loop(
    net: Any,
    params: dict[str, Any],
    data: tuple[Any, ...],
    seed: int,
    trial: Any,
    loss_fn: Callable[..., Any],
    val_fn: Callable[..., Any],
) -> None:
    """Mini-batch training for :data:`MAX_EPOCHS` epochs, reporting ``val_fn`` after each."""
    import torch

    X_tr, y_tr, X_va, y_va = data
    generator = torch.Generator().manual_seed(seed)
    optimizer = _optimizer(params, net.parameters())
    n, batch = len(y_tr), int(params["batch_size"])
    for epoch in range(1, MAX_EPOCHS + 1):
        net.train()
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, batch):
            rows = order[start : start + batch]
            loss = loss_fn(net(X_tr[rows]), y_tr[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        net.eval()
        with torch.no_grad():
            value = float(val_fn(net(X_va), y_va))
        if not math.isfinite(value):
            _report_diverged(trial, epoch)
            return
        trial.report(epoch, value)
        if trial.should_stop():
            return


ACTIVATIONS = {"relu": "ReLU", "tanh": "Tanh", "gelu": "GELU"}


@_float32
def train_mlp_cancer(params: dict[str, Any], seed: int, trial: Any, small: bool = False) -> None:
    import torch
    import torch.nn.functional as F
    from torch import nn

    data = _split("cancer", small)
    torch.manual_seed(seed)
    layers: list[Any] = []
    d = data[0].shape[1]
    for _ in range(int(params["layers"])):
        layers += [
            nn.Linear(d, int(params["width"])),
            getattr(nn, ACTIVATIONS[params["activation"]])(),
            nn.Dropout(params["dropout"]),
        ]
        d = int(params["width"])
    net = nn.Sequential(*layers, nn.Linear(d, 2))
    _torch_loop(net, params, data, seed, trial, F.cross_entropy, F.cross_entropy)


@_float32
def train_cnn_digits(params: dict[str, Any], seed: int, trial: Any, small: bool = False) -> None:
    import torch
    import torch.nn.functional as F
    from torch import nn

    X_tr, y_tr, X_va, y_va = _split("digits", small)
    data = (X_tr.reshape(-1, 1, 8, 8), y_tr, X_va.reshape(-1, 1, 8, 8), y_va)
    torch.manual_seed(seed)
    c = int(params["channels"])
    layers: list[Any] = [
        nn.Conv2d(1, c, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2) if params["pool"] == "max" else nn.AvgPool2d(2),
    ]
    for _ in range(int(params["conv_layers"]) - 1):
        layers += [nn.Conv2d(c, c, 3, padding=1), nn.ReLU()]
    layers += [
        nn.Flatten(),
        nn.Linear(c * 16, int(params["hidden"])),
        nn.ReLU(),
        nn.Linear(int(params["hidden"]), 10),
    ]
    net = nn.Sequential(*layers)
    smoothing = float(params["label_smoothing"])

    def loss_fn(logits: Any, y: Any) -> Any:
        return F.cross_entropy(logits, y, label_smoothing=smoothing)

    _torch_loop(net, params, data, seed, trial, loss_fn, F.cross_entropy)


@_float32
def train_zoo_diabetes(params: dict[str, Any], seed: int, trial: Any, small: bool = False) -> None:
    """A zoo LightningModule fitted by Lightning's Trainer; dsbo's ReportCallback reports
    ``val_mse`` after each epoch and stops the fit when the trial says so."""
    import pytorch_lightning as pl
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from dsbo.integrations.lightning import ReportCallback
    from dsbo_zoo import NeuralEnsemble, SimpleSMB

    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    X_tr, y_tr, X_va, y_va = _split("diabetes", small)
    network = {
        "width": int(params["width"]),
        "depth": int(params["depth"]),
        "activation": params["activation"],
        "gamma": float(params["gamma"]),
        "lr": float(params["lr"]),
        "optimizer": params["optimizer"],
    }
    if params["family"] == "ensemble":
        model = NeuralEnsemble(X_tr.shape[1], num_members=int(params["members"]), **network)
    else:
        model = SimpleSMB(
            X_tr.shape[1], num_samples=1, noise_var=float(params["noise_var"]), **network
        )
    generator = torch.Generator().manual_seed(seed)
    train = DataLoader(
        TensorDataset(X_tr, y_tr, torch.arange(len(y_tr))),
        batch_size=int(params["batch_size"]),
        shuffle=True,
        generator=generator,
    )
    val = DataLoader(TensorDataset(X_va, y_va, torch.arange(len(y_va))), batch_size=len(y_va))
    torch.manual_seed(seed)  # the zoo draws theta_0 from torch's global RNG at fit start
    fit_reporting(pl.Trainer, model, train, val, ReportCallback(trial, monitor="val_mse"))


def fit_reporting(trainer: Any, model: Any, train: Any, val: Any, report: Any) -> None:
    """Fit ``model`` for :data:`MAX_EPOCHS` epochs with the Trainer class ``trainer`` (either
    Lightning package's) on CPU, quietly (no logger, checkpoints, progress bar or sanity
    check), the ``report`` callback reporting each validation to the trial and ending the fit
    when the trial says stop."""
    fit = trainer(
        max_epochs=MAX_EPOCHS,
        accelerator="cpu",
        devices=1,
        enable_progress_bar=False,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[report],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit.fit(model, train, val)


# ----------------------------------------------------------------------------- problems
@dataclass
class CurveProblem:
    name: str
    space: dict[str, Any]  # {name: dsbo parameter}
    train: Callable[..., None]  # train(params, seed, trial, small)
    dataset: str  # the key of _split
    data: str
    model: str
    metric: str
    modules: tuple[str, ...] = ()  # what its training imports, beyond torch

    def preload(self, small: bool = False) -> None:
        """Import what a training imports and load its data, so that a run's timers count
        training, not the first import of Lightning."""
        import importlib

        modules = ["torch", "torch.nn", "torch.nn.functional"]
        if self.dataset == "diabetes":
            modules += ["pytorch_lightning", "dsbo.integrations.lightning", "dsbo_zoo"]
        modules += list(self.modules)
        for module in modules:
            importlib.import_module(module)
        _split(self.dataset, small)


def make_problems() -> dict[str, CurveProblem]:
    import dsbo

    zoo = CurveProblem(
        "zoo-diabetes",
        {
            "family": dsbo.Choice(["ensemble", "smb"]),
            "members": dsbo.Int(1, 4, when={"family": "ensemble"}),
            "noise_var": dsbo.Float(1e-4, 1e-1, log=True, when={"family": "smb"}),
            "lr": dsbo.Float(1e-4, 0.3, log=True),
            "optimizer": dsbo.Choice(["adam", "sgd"]),
            "width": dsbo.Int(8, 256, log=True),
            "depth": dsbo.Int(1, 3),
            "activation": dsbo.Choice(["tanh", "relu", "erf"]),
            "gamma": dsbo.Float(0.25, 4.0, log=True),
            "batch_size": dsbo.Int(64, 300, log=True),
        },
        train_zoo_diabetes,
        "diabetes",
        "load_diabetes: 300 train / 142 validation rows, standardized",
        "dsbo_zoo NeuralEnsemble or SimpleSMB, Lightning Trainer + dsbo ReportCallback",
        "validation MSE (standardized target)",
    )
    mlp = CurveProblem(
        "mlp-cancer",
        {
            "lr": dsbo.Float(1e-4, 1.0, log=True),
            "optimizer": dsbo.Choice(["adam", "sgd"]),
            "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "weight_decay": dsbo.Float(1e-6, 1e-1, log=True),
            "width": dsbo.Int(8, 512, log=True),
            "layers": dsbo.Int(1, 3),
            "activation": dsbo.Choice(["relu", "tanh", "gelu"]),
            "dropout": dsbo.Float(0.0, 0.5),
            "batch_size": dsbo.Int(16, 256, log=True),
        },
        train_mlp_cancer,
        "cancer",
        "load_breast_cancer: 398 train / 171 validation rows (stratified), standardized",
        "torch MLP classifier, plain training loop",
        "validation cross-entropy",
    )
    cnn = CurveProblem(
        "cnn-digits",
        {
            "lr": dsbo.Float(1e-4, 1.0, log=True),
            "optimizer": dsbo.Choice(["adam", "sgd", "rmsprop"]),
            "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "weight_decay": dsbo.Float(1e-6, 1e-1, log=True),
            "channels": dsbo.Int(4, 16, log=True),
            "conv_layers": dsbo.Int(1, 2),
            "pool": dsbo.Choice(["max", "avg"]),
            "hidden": dsbo.Int(16, 128, log=True),
            "label_smoothing": dsbo.Float(0.0, 0.2),
            "batch_size": dsbo.Int(64, 512, log=True),
        },
        train_cnn_digits,
        "digits",
        "load_digits: 800 train / 400 validation 8x8 images (stratified), pixels / 16",
        "torch CNN, plain training loop",
        "validation cross-entropy",
    )
    from early_stopping_more_problems import more_problems  # issue 57's two

    return {**{p.name: p for p in (zoo, mlp, cnn)}, **more_problems()}


def active_values(space: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The active parameters' values (declaration order, parents first), floats rounded to
    :data:`DIGITS` significant digits, integers as ints: what every arm trains on."""
    from dsbo.space import Float, Int

    out: dict[str, Any] = {}
    for name, parameter in space.items():
        if name not in params or params[name] is None:
            continue
        if not all(
            parent in out and out[parent] in allowed
            for parent, allowed in parameter.conditions.items()
        ):
            continue
        value = params[name]
        if isinstance(parameter, Float):
            value = float(f"{float(value):.{DIGITS}g}")
        elif isinstance(parameter, Int):
            value = int(round(float(value)))
        elif isinstance(value, np.generic):
            value = value.item()
        out[name] = value
    return out


# ----------------------------------------------------------------------------- the cache
class CurveCache:
    """Curves by (problem, seed, parameters) in ``folder/<problem>-seed<k>.jsonl`` (one JSON
    line per curve written; the longest one of a key wins). Several processes may append to
    one file (``flock``); a process reads the file once per (problem, seed)."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self._curves: dict[tuple[str, int], dict[str, list[float]]] = {}

    def _path(self, problem: str, seed: int) -> Path | None:
        return None if self.folder is None else self.folder / f"{problem}-seed{seed}.jsonl"

    def _table(self, problem: str, seed: int) -> dict[str, list[float]]:
        if (problem, seed) not in self._curves:
            table: dict[str, list[float]] = {}
            path = self._path(problem, seed)
            if path is not None and path.exists():
                for line in path.read_text().splitlines():
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:  # a line cut by a crash
                        continue
                    if len(row["curve"]) > len(table.get(row["key"], ())):
                        table[row["key"]] = row["curve"]
            self._curves[(problem, seed)] = table
        return self._curves[(problem, seed)]

    def get(self, problem: str, seed: int, key: str) -> list[float]:
        return list(self._table(problem, seed).get(key, ()))

    def put(self, problem: str, seed: int, key: str, curve: list[float]) -> None:
        table = self._table(problem, seed)
        if len(curve) <= len(table.get(key, ())):
            return
        table[key] = list(curve)
        path = self._path(problem, seed)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as sink:
            fcntl.flock(sink, fcntl.LOCK_EX)
            sink.write(json.dumps({"key": key, "curve": curve}) + "\n")
            fcntl.flock(sink, fcntl.LOCK_UN)


class Forwarder:
    """The trial a training reports to: records every epoch's (cleaned) value, and passes on
    to the arm's trial only the epochs after ``skip`` (those before were replayed from the
    cache, and the arm's trial was already asked about them)."""

    def __init__(self, trial: Any, skip: int, on_epoch: Callable[[float], None]):
        self.trial, self.skip, self.on_epoch = trial, skip, on_epoch
        self.values: list[float] = []

    def report(self, step: int, value: float) -> None:
        value = clean(float(value))
        if step != len(self.values) + 1:
            raise RuntimeError(f"training reported epoch {step} after {len(self.values)} epochs")
        self.values.append(value)
        if step > self.skip:
            self.on_epoch(value)
            self.trial.report(step, value)

    def should_stop(self) -> bool:
        """Not asked before the first new epoch, nor after the last one (a trial that reached
        :data:`MAX_EPOCHS` is complete, whatever a rule with a rung there would say)."""
        return self.skip < len(self.values) < MAX_EPOCHS and bool(self.trial.should_stop())


class Recorder:
    """What one run spent and saw: each trial's epochs and last value, the epochs trained
    (cache misses) and the seconds spent training."""

    def __init__(self, problem: CurveProblem, seed: int, cache: CurveCache, small: bool = False):
        self.problem, self.seed, self.cache, self.small = problem, seed, cache, small
        self.trials: list[dict[str, Any]] = []
        self.epochs = 0  # epochs reported to the arm's trials (what the budget counts)
        self.trained_epochs = 0
        self.train_seconds = 0.0

    def _epoch(self, value: float) -> None:
        self.epochs += 1

    def evaluate(self, params: dict[str, Any], trial: Any) -> float:
        """Run one trial: replay the cached curve, train on if the trial goes past it; returns
        the value at the last epoch the trial reached."""
        values = active_values(self.problem.space, dict(params))
        key = json.dumps(values, sort_keys=True)
        curve = self.cache.get(self.problem.name, self.seed, key)
        steps, last, stopped = 0, math.nan, False
        for step, value in enumerate(curve, 1):
            self._epoch(value)
            trial.report(step, value)
            steps, last = step, value
            if step >= MAX_EPOCHS or trial.should_stop():
                stopped = step < MAX_EPOCHS
                break
        else:
            forward = Forwarder(trial, len(curve), self._epoch)
            t0 = time.perf_counter()
            self.problem.train(values, self.seed, forward, self.small)
            self.train_seconds += time.perf_counter() - t0
            self.trained_epochs += len(forward.values)
            self.cache.put(self.problem.name, self.seed, key, forward.values)
            steps, last = len(forward.values), forward.values[-1]
            stopped = steps < MAX_EPOCHS
        self.trials.append(
            {
                "params": values,
                "epochs": steps,
                "value": last,
                "full": steps >= MAX_EPOCHS,
                "end_epochs": self.epochs,
                "stopped": stopped,
            }
        )
        return last

    def trace(self) -> list[list[float]]:
        """``[epochs spent, best fully trained value so far]`` at the end of each trial that
        reached :data:`MAX_EPOCHS` and improved the best."""
        best, out = math.inf, []
        for t in self.trials:
            if t["full"] and t["value"] < best:
                best = t["value"]
                out.append([t["end_epochs"], best])
        return out
