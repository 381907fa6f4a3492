r"""What every zoo model shares: the network, its initialization per fit, the training step,
the validation metrics, and the Bayesian head's place in the Lightning life cycle.

Paria's thesis (ch. 3) compares four families of neural surrogates that differ only in what
they add to an MLP (:class:`~dsbo_zoo.mlp.EnsembleMLP`): SimpleSMB/PosteriorSMB perturb targets
and anchor to the initialization, the deep ensemble keeps its weights across fits, NeuralLinTS
puts a Bayesian linear regression on the last hidden layer, NeuralUCB a Gaussian on the
gradient features. :class:`ZooModule` holds everything else once:

- **Initialization per fit.** Every ``trainer.fit`` starts from a fresh draw
  :math:`\theta_0` from torch's global RNG (:meth:`ZooModule.reinitialize`), unless it resumes
  a checkpoint or ``warm_start`` continues the weights of an earlier fit
  (:meth:`ZooModule.continue_from_weights`). Families with an *anchor* (a regularizer
  :math:`\|\theta - \theta_0\|^2`: SMB, NeuralUCB) keep :math:`\theta_0` as buffers.
- **Training step.** :meth:`ZooModule.loss` is the family's objective on a batch
  ``(x, y, index)``; ``train_loss`` is logged every epoch, whether or not a logger is attached
  (so ``EarlyStopping(monitor="train_loss")`` works with ``logger=False``), unless
  :attr:`ZooModule.log_metrics` is switched off (dsbo's BO-step trainer does, where a
  ``self.log`` costs milliseconds per step and nothing reads it). ``train_mse`` holds the mean
  squared training residual of the last step, a stopping signal.
- **Repeated steps on one batch.** With ``automatic_optimization = False`` a training batch
  runs :attr:`ZooModule.steps_per_batch` optimizer steps (:meth:`ZooModule.repeated_steps`;
  Lightning's manual optimization): a full-batch fit then pays Lightning's per-batch hooks
  once per ``steps_per_batch`` steps instead of every step.
- **Validation metrics, one definition for the zoo.** ``val_mse`` is the mean squared error of
  the model's *predictive mean* (the ensemble mean; the Gaussian head's mean);
  ``val_member_mse`` is the mean over members of each member's MSE and
  ``val_member_mse_std`` their spread (ensembles only). A sweep that ranks runs by
  ``val_mse`` therefore compares the same quantity across families.
- **Bayesian heads** (:attr:`ZooModule.has_head`). A head is a closed form on the features of
  the trained network and the training set. It is refitted after training
  (``on_fit_end``), before every validation during ``fit`` (so ``val_mse`` measures the model
  as it is, not an unfitted head) and before every checkpoint saved during ``fit`` (so every
  checkpoint file holds a head that matches its weights). A model whose head was never fitted
  refuses to predict with :class:`UnfittedHeadError`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor

from .mlp import EnsembleMLP
from .training_data import unique_training_rows

OPTIMIZERS = ("adam", "sgd")


class UnfittedHeadError(RuntimeError):
    """A model with a Bayesian head was asked to predict before the head was fitted."""


def check_number(name: str, value: Any, minimum: float = 0.0, allow_equal: bool = False) -> float:
    """``value`` as a finite float ``> minimum`` (``>=`` with ``allow_equal``), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value < minimum or (value == minimum and not allow_equal):
        raise ValueError(
            f"{name} must be {'>=' if allow_equal else '>'} {minimum:g}, got {value!r}"
        )
    return float(value)


#: The constructor arguments every family passes on to :class:`ZooModule`.
NETWORK_ARGUMENTS = (
    "num_members",
    "width",
    "depth",
    "activation",
    "gamma",
    "parameterization",
    "final_bias",
    "lr",
    "optimizer",
    "warm_start",
)


def network_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """The :data:`NETWORK_ARGUMENTS` among a family constructor's ``locals()``."""
    return {k: v for k, v in arguments.items() if k in NETWORK_ARGUMENTS}


def buffer_name(prefix: str, param_name: str) -> str:
    return prefix + param_name.replace(".", "_")


class ZooModule(pl.LightningModule, ABC):
    """Base of the zoo's LightningModules (module docstring).

    Args:
        in_dim: Input dimension ``d``.
        num_members: Networks held as one batched :class:`~dsbo_zoo.mlp.EnsembleMLP`.
        width, depth, activation, gamma, parameterization, final_bias: The network
            (:class:`~dsbo_zoo.mlp.EnsembleMLP`).
        lr: Learning rate.
        optimizer: ``"adam"`` or ``"sgd"`` (plain gradient descent).
        warm_start: Continue from the previous fit's weights instead of a fresh init.
    """

    #: ``"ensemble"`` (members are posterior draws) or ``"gaussian"`` (``predict_mean_cov``).
    posterior_kind = "ensemble"
    #: Whether the family anchors a regularizer at the initialization theta_0 (buffers).
    anchored = False
    #: Whether the family has a Bayesian head fitted after training (``fit_head``).
    has_head = False

    def __init__(
        self,
        in_dim: int,
        *,
        num_members: int = 1,
        width: int,
        depth: int,
        activation: str,
        gamma: float,
        parameterization: str,
        final_bias: str,
        lr: float,
        optimizer: str,
        warm_start: bool,
    ) -> None:
        super().__init__()
        self.lr = check_number("lr", lr)
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={optimizer!r}: choose one of {OPTIMIZERS}")
        if not isinstance(warm_start, bool):
            raise ValueError(f"warm_start must be true or false, got {warm_start!r}")
        self.optimizer_name, self.warm_start = optimizer, warm_start
        self.net = EnsembleMLP(
            in_dim,
            width=width,
            depth=depth,
            activation=activation,
            gamma=gamma,
            num_members=num_members,
            parameterization=parameterization,
            final_bias=final_bias,
        )
        self._param_names = [name for name, _ in self.net.named_parameters()]
        if self.anchored:
            for name, p in self.net.named_parameters():
                self.register_buffer(buffer_name("theta0_", name), p.detach().clone())
        #: Number of completed fits (persistent, so a warm start survives a checkpoint).
        self.register_buffer("num_fits", torch.zeros((), dtype=torch.long))
        #: Whether the Bayesian head matches the weights (persistent).
        self.register_buffer("head_fitted", torch.zeros((), dtype=torch.bool))
        #: Mean squared training residual of the last step (a stopping signal).
        self.train_mse: Tensor | None = None
        #: Log ``train_loss`` in ``training_step`` (dsbo switches it off inside BO steps).
        self.log_metrics = True
        #: Optimizer steps per batch under manual optimization (``automatic_optimization =
        #: False``; :meth:`repeated_steps`), and the training MSE that ends them early (0: never).
        #: dsbo's full-batch BO-step fits use this (``dsbo.surrogates.neural.train_module``).
        self.steps_per_batch = 1
        self.train_tol = 0.0
        #: Optimizer steps taken by the current (or last) fit.
        self.fit_steps = 0
        self._head_step = -1

    # ------------------------------------------------------------------ state
    @property
    def num_members(self) -> int:
        return self.net.num_members

    def theta0(self) -> dict[str, Tensor]:
        r"""The anchor :math:`\theta_0` of the current fit, by parameter name."""
        return {name: getattr(self, buffer_name("theta0_", name)) for name in self._param_names}

    def _set_buffers(self, prefix: str, values: dict[str, Tensor]) -> None:
        for name in self._param_names:
            getattr(self, buffer_name(prefix, name)).copy_(values[name])

    @torch.no_grad()
    def reinitialize(self) -> None:
        r"""A fresh :math:`\theta_0` from torch's global RNG (and the anchor set to it)."""
        self.net.reset_parameters()
        if self.anchored:
            self._set_buffers("theta0_", self.net.initial_state())

    @torch.no_grad()
    def continue_from_weights(self) -> None:
        """A warm start: keep the weights; an anchor moves to them."""
        if self.anchored:
            self._set_buffers("theta0_", self.net.initial_state())

    # ------------------------------------------------------------------ the family's part
    @abstractmethod
    def loss(self, x: Tensor, y: Tensor, index: Tensor) -> Tensor:
        """The training objective on a batch; sets :attr:`train_mse`."""

    def predict_members(self, x: Tensor) -> Tensor:
        """Predictions at ``x`` (``batch x d``) as ``members x batch`` (validation, metrics)."""
        return self(x).reshape(-1, x.shape[0])

    def fit_head(self, x: Tensor, y: Tensor) -> None:
        """Fit the Bayesian head on the training set (families with :attr:`has_head`)."""

    # ------------------------------------------------------------------ Lightning hooks
    def on_fit_start(self) -> None:
        self.fit_steps = 0
        if self.trainer is not None and self.trainer.ckpt_path:
            return
        if self.warm_start and int(self.num_fits) > 0:
            self.continue_from_weights()
        else:
            self.reinitialize()
        self.head_fitted.fill_(False)

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y, index = batch
        if self.automatic_optimization:
            loss = self.loss(x, y, index)
            self.fit_steps += 1
        else:
            loss = self.repeated_steps(x, y, index)
        if self.log_metrics:
            self.log("train_loss", loss.detach(), on_step=False, on_epoch=True, batch_size=len(y))
        return loss

    def repeated_steps(self, x: Tensor, y: Tensor, index: Tensor) -> Tensor:
        """``steps_per_batch`` optimizer steps on one batch (manual optimization): Lightning's
        per-batch machinery then runs once per ``steps_per_batch`` steps. Stops early at the
        trainer's ``max_steps`` or once :attr:`train_mse` falls below :attr:`train_tol`;
        returns the last step's loss (detached)."""
        optimizer = self.optimizers()
        max_steps = self.trainer.max_steps
        for _ in range(self.steps_per_batch):
            optimizer.zero_grad()
            loss = self.loss(x, y, index)
            self.manual_backward(loss)
            optimizer.step()
            self.fit_steps += 1
            if 0 < max_steps <= self.trainer.global_step:
                break
            if self.train_tol > 0 and float(self.train_mse) < self.train_tol:
                break
        return loss.detach()

    def validation_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y, _ = batch
        members = self.predict_members(x).to(y.dtype)
        mse = (members.mean(0) - y).pow(2).mean()
        per_member = (members - y).pow(2).mean(-1)
        self.log("val_mse", mse, batch_size=len(y))
        self.log("val_member_mse", per_member.mean(), batch_size=len(y))
        if per_member.numel() > 1:
            self.log("val_member_mse_std", per_member.std(), batch_size=len(y))
        return mse

    def configure_optimizers(self) -> torch.optim.Optimizer:
        params = self.net.parameters()
        if self.optimizer_name == "sgd":
            return torch.optim.SGD(params, lr=self.lr)
        return torch.optim.Adam(params, lr=self.lr)

    def on_fit_end(self) -> None:
        self.refit_head()
        self.num_fits += 1

    def on_validation_start(self) -> None:
        if self._fitting():
            self.refit_head()

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """A checkpoint saved during ``fit`` gets a head refitted to its weights (Lightning
        has already copied the state dict: the head's buffers are replaced in it)."""
        if not (self.has_head and self._fitting()) or not self.refit_head():
            return
        state = checkpoint["state_dict"]
        for name, buffer in self.named_buffers():
            if name in state and name not in self.theta0_names():
                state[name] = buffer.detach().clone()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Checkpoints written before ``head_fitted`` existed: a head counts as fitted once a
        fit had ended (``num_fits > 0``), the only moment such files had one."""
        state = checkpoint.get("state_dict", {})
        if "head_fitted" not in state and "num_fits" in state:
            state["head_fitted"] = torch.as_tensor(int(state["num_fits"]) > 0 or not self.has_head)

    def theta0_names(self) -> set[str]:
        return {buffer_name("theta0_", n) for n in self._param_names} if self.anchored else set()

    def _fitting(self) -> bool:
        return self._trainer is not None and self.trainer.state.fn == "fit"

    @torch.no_grad()
    def refit_head(self) -> bool:
        """Refit the head on the trainer's training set if the weights moved since its last
        fit; returns whether the head is now fitted. No-op without a head or training data."""
        if not self.has_head:
            return False
        step = self.trainer.global_step
        if bool(self.head_fitted) and step == self._head_step:
            return True
        if self.trainer.train_dataloader is None:  # e.g. the sanity check before training
            return bool(self.head_fitted)
        x, y, _ = unique_training_rows(self.trainer, self.device)
        self.fit_head(x, y)
        self.head_fitted.fill_(True)
        self._head_step = step
        return True

    def require_head(self) -> None:
        """Raise :class:`UnfittedHeadError` if the Bayesian head was never fitted."""
        if self.has_head and not bool(self.head_fitted):
            raise UnfittedHeadError(
                f"{type(self).__name__}: the Bayesian head is not fitted (a checkpoint saved "
                "before it was, or a module never trained): train it with trainer.fit, or load "
                "a checkpoint saved during or after fit"
            )


__all__ = [
    "NETWORK_ARGUMENTS",
    "OPTIMIZERS",
    "UnfittedHeadError",
    "ZooModule",
    "check_number",
    "network_arguments",
]
