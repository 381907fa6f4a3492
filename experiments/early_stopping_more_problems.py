"""The learning-curve problems issue 57 added to ``experiments/early_stopping.py``: one whose
curves cross, and a LightningModule written as a user writes one, trained by the ``lightning``
package's Trainer through dsbo's ``ReportCallback`` (27 epochs each, real training runs,
the conventions of ``early_stopping_problems.py``).

4. ``mlp-overfit`` (curves that cross; a plain torch loop): ``load_diabetes`` with its
   degree-2 polynomial features (65 columns, standardized on the training rows), a fixed split
   of 120 training and 142 validation rows, the target standardized; an MLP regressor, the
   value the validation MSE after each epoch (its last epoch's value is the trial's, not the
   best of its curve). With 120 rows and 65 features an unregularized network falls fastest
   and then overfits, its validation error rising again, while weight decay and dropout slow
   the first epochs and end lower: a rule that keeps the fast starters keeps the wrong ones.
   ``lr``, ``weight_decay`` (log), ``width`` (log integer), ``layers`` (integer), ``dropout``
   (linear), ``batch_size`` (log integer), ``optimizer`` (adam / sgd) categorical, ``momentum``
   only for sgd.
5. ``lightning-digits`` (``lightning.pytorch``): a ``LightningModule`` MLP classifier of the
   ``load_digits`` images (the 800 / 400 split of ``cnn-digits``) with ``validation_step``
   logging ``val_loss``, fitted by ``lightning.pytorch.Trainer`` (CPU, no logger, checkpoints
   or progress bar) with ``ReportCallback(trial, monitor="val_loss")``, which reports after
   each validation and ends the fit when the trial says stop. ``lr``, ``weight_decay`` (log),
   ``hidden`` (log integer), ``dropout``, ``batch_size`` (log integer), ``activation`` and
   ``optimizer`` (adam / sgd) categorical, ``momentum`` only for sgd.
"""

from __future__ import annotations

import logging
from typing import Any

from early_stopping_problems import (
    ACTIVATIONS,
    CurveProblem,
    _float32,
    _split,
    _torch_loop,
    fit_reporting,
    register_split,
)

OVERFIT_TRAIN_ROWS = 120


def overfit_split(small: bool) -> tuple[Any, ...]:
    """``load_diabetes`` with degree-2 polynomial features: 120 training rows, 142 validation
    rows (the last 142 of a fixed shuffle), features and target standardized on the training
    rows; ``small`` keeps a third of each."""
    import numpy as np
    import torch
    from sklearn import datasets
    from sklearn.preprocessing import PolynomialFeatures

    X, y = datasets.load_diabetes(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X = PolynomialFeatures(degree=2, include_bias=False).fit_transform(X[order])
    y = y[order]
    train, val = slice(0, OVERFIT_TRAIN_ROWS), slice(len(y) - 142, len(y))
    mu, sd = X[train].mean(0), X[train].std(0) + 1e-12
    X = (X - mu) / sd
    y = (y - y[train].mean()) / y[train].std()
    parts = [X[train], y[train], X[val], y[val]]
    if small:
        parts = [p[: len(p) // 3] for p in parts]
    return tuple(torch.tensor(p, dtype=torch.float32) for p in parts)


register_split("diabetes-poly", overfit_split)


@_float32
def train_mlp_overfit(params: dict[str, Any], seed: int, trial: Any, small: bool = False) -> None:
    import torch
    import torch.nn.functional as F
    from torch import nn

    data = _split("diabetes-poly", small)
    torch.manual_seed(seed)
    layers: list[Any] = []
    d = data[0].shape[1]
    for _ in range(int(params["layers"])):
        layers += [nn.Linear(d, int(params["width"])), nn.ReLU(), nn.Dropout(params["dropout"])]
        d = int(params["width"])
    net = nn.Sequential(*layers, nn.Linear(d, 1), nn.Flatten(0))
    _torch_loop(net, params, data, seed, trial, F.mse_loss, F.mse_loss)


def digits_module(params: dict[str, Any], n_features: int) -> Any:
    """The user's ``LightningModule``: an MLP classifier that logs ``val_loss``."""
    import lightning.pytorch as L
    import torch
    import torch.nn.functional as F
    from torch import nn

    class DigitsMLP(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            hidden = int(params["hidden"])
            self.net = nn.Sequential(
                nn.Linear(n_features, hidden),
                getattr(nn, ACTIVATIONS[params["activation"]])(),
                nn.Dropout(float(params["dropout"])),
                nn.Linear(hidden, 10),
            )

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            x, y = batch
            return F.cross_entropy(self.net(x), y)

        def validation_step(self, batch: Any, batch_idx: int) -> None:
            x, y = batch
            self.log("val_loss", F.cross_entropy(self.net(x), y))

        def configure_optimizers(self) -> Any:
            lr, wd = float(params["lr"]), float(params["weight_decay"])
            if params["optimizer"] == "sgd":
                momentum = float(params.get("momentum", 0.0))
                return torch.optim.SGD(self.parameters(), lr=lr, momentum=momentum, weight_decay=wd)
            return torch.optim.Adam(self.parameters(), lr=lr, weight_decay=wd)

    return DigitsMLP()


@_float32
def train_lightning_digits(
    params: dict[str, Any], seed: int, trial: Any, small: bool = False
) -> None:
    """The module above fitted by ``lightning.pytorch.Trainer``; dsbo's ``ReportCallback``
    reports ``val_loss`` after each epoch and stops the fit when the trial says so."""
    import lightning.pytorch as L
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from dsbo.integrations.lightning import ReportCallback

    for name in ("lightning.pytorch", "lightning_fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    X_tr, y_tr, X_va, y_va = _split("digits", small)
    train = DataLoader(
        TensorDataset(X_tr, y_tr),
        batch_size=int(params["batch_size"]),
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
    )
    val = DataLoader(TensorDataset(X_va, y_va), batch_size=len(y_va))
    torch.manual_seed(seed)
    model = digits_module(params, X_tr.shape[1])
    fit_reporting(L.Trainer, model, train, val, ReportCallback(trial, monitor="val_loss"))


def more_problems() -> dict[str, CurveProblem]:
    import dsbo

    overfit = CurveProblem(
        "mlp-overfit",
        {
            "lr": dsbo.Float(1e-4, 0.3, log=True),
            "optimizer": dsbo.Choice(["adam", "sgd"]),
            "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "weight_decay": dsbo.Float(1e-6, 1.0, log=True),
            "width": dsbo.Int(16, 512, log=True),
            "layers": dsbo.Int(1, 3),
            "dropout": dsbo.Float(0.0, 0.8),
            "batch_size": dsbo.Int(8, 120, log=True),
        },
        train_mlp_overfit,
        "diabetes-poly",
        "load_diabetes, degree-2 polynomial features (65): 120 train / 142 validation rows, standardized",
        "torch MLP regressor, plain training loop (curves cross: the fast starters overfit)",
        "validation MSE (standardized target)",
    )
    lightning = CurveProblem(
        "lightning-digits",
        {
            "lr": dsbo.Float(1e-4, 1.0, log=True),
            "optimizer": dsbo.Choice(["adam", "sgd"]),
            "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "weight_decay": dsbo.Float(1e-6, 1e-1, log=True),
            "hidden": dsbo.Int(16, 256, log=True),
            "activation": dsbo.Choice(["relu", "tanh", "gelu"]),
            "dropout": dsbo.Float(0.0, 0.5),
            "batch_size": dsbo.Int(16, 256, log=True),
        },
        train_lightning_digits,
        "digits",
        "load_digits: 800 train / 400 validation 8x8 images (stratified), pixels / 16",
        "a user's LightningModule, lightning.pytorch Trainer + dsbo ReportCallback",
        "validation cross-entropy",
        ("lightning.pytorch", "dsbo.integrations.lightning"),
    )
    return {p.name: p for p in (overfit, lightning)}
