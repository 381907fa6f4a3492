r"""Generic validation, test and predict steps for the zoo modules ``python -m dsbo.train`` runs.

A zoo module (``models/``, :mod:`dsbo_zoo`) need only define ``training_step``: the ones it
lacks of ``validation_step``, ``test_step`` and ``predict_step`` come from
:class:`SurrogateMetrics` (:func:`add_missing_steps`). They read the module as a surrogate,
through :func:`surrogate_mean_std`, and log the MSE and the coefficient of determination of its
predictive mean on the standardized targets,

.. math::

    \mathrm{MSE} = \frac{1}{n} \sum_i (\mu(x_i) - y_i)^2, \qquad
    R^2 = 1 - \frac{\sum_i (\mu(x_i) - y_i)^2}{\sum_i (y_i - \bar y)^2},

accumulated over the epoch by torchmetrics (``MeanSquaredError``, ``R2Score``) and logged as
``{val,test}_mse`` and ``{val,test}_r2``. ``val_mse`` is what the default checkpoint callback
monitors (:func:`dsbo.cli.train_cli.default_checkpoint`). The model gains the steps by a change of
class to a same-named subclass, so its state dict, hence its checkpoints, stay the model's own.
"""

from __future__ import annotations

from functools import cache

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities.model_helpers import is_overridden
from torch import Tensor, nn
from torchmetrics import MeanSquaredError, R2Score

from dsbo.errors import ConfigError

#: The LightningModule hooks :class:`SurrogateMetrics` provides when a zoo module lacks them.
STEP_HOOKS = ("validation_step", "test_step", "predict_step")


def surrogate_mean_std(module: pl.LightningModule, x: Tensor) -> tuple[Tensor, Tensor]:
    """Predictive mean and standard deviation of a zoo ``module`` at ``x`` (``n x d``), in the
    module's (standardized) units.

    A ``posterior_kind = "gaussian"`` module answers with ``predict_mean_cov``; otherwise
    ``module(x)`` is ``members x n`` (an ensemble: mean and std over members) or ``n`` (a
    point prediction, std zero).
    """
    n = x.shape[0]
    if getattr(module, "posterior_kind", None) == "gaussian" and callable(
        getattr(module, "predict_mean_cov", None)
    ):
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
        """The ``mse`` and ``r2`` metrics of ``stage`` (``val``, ``test``), made on first use on
        the module's device."""
        if "dsbo_metrics" not in self._modules:
            # Metric states are not persistent: the state dict, hence checkpoints, stay the model's.
            self.add_module("dsbo_metrics", nn.ModuleDict())
        store = self._modules["dsbo_metrics"]
        if stage not in store:
            store[stage] = nn.ModuleDict({"mse": MeanSquaredError(), "r2": R2Score()}).to(
                self.device
            )
        return store[stage]

    def _dsbo_eval_step(self, batch: tuple[Tensor, Tensor, Tensor], stage: str) -> None:
        """Update ``stage``'s metrics with the batch's predictive mean and log them per epoch."""
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

    def predict_step(
        self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int
    ) -> dict[str, Tensor]:
        x, _, index = batch
        mean, std = surrogate_mean_std(self, x)
        return {"index": index, "mean": mean, "std": std}


@cache
def _with_metrics(cls: type, missing: tuple[str, ...]) -> type:
    """A subclass of ``cls`` with the ``missing`` steps of :class:`SurrogateMetrics` and its
    metric helpers, under ``cls``'s name, module, qualified name and docstring (so that
    Lightning's messages, and a checkpoint's class, still name the original); cached, one
    class per ``(cls, missing)``."""
    namespace = {name: SurrogateMetrics.__dict__[name] for name in missing}
    namespace.update({k: v for k, v in SurrogateMetrics.__dict__.items() if k.startswith("_dsbo")})
    namespace.update(
        {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__}
    )
    return type(cls.__name__, (cls,), namespace)


def add_missing_steps(model: pl.LightningModule) -> list[str]:
    """Give ``model`` the :class:`SurrogateMetrics` steps it does not define itself; returns
    their names. Its class becomes a subclass with the same name, module and state dict, so
    checkpoints still load into the original class."""
    missing = tuple(
        name for name in STEP_HOOKS if not is_overridden(name, model, pl.LightningModule)
    )
    if missing:
        model.__class__ = _with_metrics(type(model), missing)
    return list(missing)


__all__ = ["STEP_HOOKS", "SurrogateMetrics", "add_missing_steps", "surrogate_mean_std"]
