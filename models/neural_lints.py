r"""NeuralLinTS: Bayesian linear regression on the last hidden layer of a trained network.

The *neural linear* model of Riquelme, Tucker and Snoek (*Deep Bayesian bandits showdown*,
ICLR 2018), as the NeuralLinTS baseline of Paria's thesis (ch. 3, sections 3.5 and 3.7.1):
a network :math:`f(x, \theta) = w^\top \phi_\theta(x) + b` is trained on the data by mean
squared error; then its last hidden layer :math:`\phi(x) \in \mathbb R^p` is frozen and the
output weights are replaced by a Bayesian linear regression

.. math::

    g(x) = \phi(x)^\top \beta, \qquad \beta \sim \mathcal N(0, \gamma I_p), \qquad
    y_i = g(x_i) + \xi_i, \quad \xi_i \sim \mathcal N(0, \sigma^2),

whose posterior is :math:`\beta \mid \mathcal D \sim \mathcal N(\mu, \Sigma)` with

.. math::

    \Sigma = \Big(\frac{\Phi^\top \Phi}{\sigma^2} + \frac{I_p}{\gamma}\Big)^{-1}, \qquad
    \mu = \Sigma \frac{\Phi^\top y}{\sigma^2}, \qquad
    \Phi = [\phi(x_1), \dots, \phi(x_n)]^\top .

The predictive distribution of :math:`g` at ``q`` points is Gaussian with mean
:math:`\phi(x_i)^\top \mu` and covariance :math:`\phi(x_i)^\top \Sigma\, \phi(x_j)`
(:meth:`NeuralLinTS.predict_mean_cov`); Thompson sampling draws from it.

Thesis defaults (3.5, 3.7.1): one hidden layer of width 500 (``Sigma`` is ``p x p``), tanh,
the standard fan-in-scaled initialization with :math:`\gamma_{init} = 1` and zero final bias,
Adam with learning rate ``1e-3``; the prior variance is tuned over
:math:`\gamma \in \{10, 100, 1000\}` and the noise variance over
:math:`\sigma^2 \in \{0.001, 0.01, 0.1\}` (the defaults here are the middle values).
The BLR runs in float64 whatever the network's dtype.

Example:
    >>> lints = NeuralLinTS(in_dim=3, width=64)
    >>> pl.Trainer(max_epochs=500, logger=False).fit(lints, loader)  # then the BLR is fitted
    >>> mean, cov = lints.predict_mean_cov(torch.rand(4, 2, 3))
    >>> mean.shape, cov.shape
    (torch.Size([4, 2]), torch.Size([4, 2, 2]))
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
from torch import Tensor

from models.mlp import EnsembleMLP
from models.training_data import unique_training_rows

OPTIMIZERS = ("adam", "sgd")


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


class NeuralLinTS(pl.LightningModule):
    r"""A trained network's last-hidden-layer features with a Bayesian linear regression head.

    Args:
        in_dim: Input dimension ``d``.
        width: Hidden width ``p`` (thesis: 500).
        depth: Hidden layers (thesis: 1).
        activation: ``"tanh"`` (thesis), ``"relu"`` or ``"erf"``.
        gamma: Initialization scale of the network (thesis: 1).
        parameterization: ``"standard"`` (section 3.7.1) or ``"ntk"``.
        final_bias: ``"zero"`` (section 3.7.1) or ``"random"``.
        prior_var: Prior variance :math:`\gamma` of the regression weights (grid 10/100/1000).
        noise_var: Noise variance :math:`\sigma^2` (grid 0.001/0.01/0.1).
        lr: Learning rate (thesis: Adam, ``1e-3``).
        optimizer: ``"adam"`` or ``"sgd"``.
        warm_start: Continue from the previous fit's network weights instead of a fresh init.
    """

    posterior_kind = "gaussian"

    def __init__(
        self,
        in_dim: int,
        width: int = 500,
        depth: int = 1,
        activation: str = "tanh",
        gamma: float = 1.0,
        parameterization: str = "standard",
        final_bias: str = "zero",
        prior_var: float = 100.0,
        noise_var: float = 0.01,
        lr: float = 1e-3,
        optimizer: str = "adam",
        warm_start: bool = False,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if depth < 1:
            raise ValueError(f"depth must be >= 1 (the features are a hidden layer), got {depth!r}")
        self.prior_var = _positive("prior_var", prior_var)
        self.noise_var = _positive("noise_var", noise_var)
        self.lr = _positive("lr", lr)
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
            num_members=1,
            parameterization=parameterization,
            final_bias=final_bias,
        )
        p = self.net.width
        # BLR posterior (float64): mean mu (p) and the Cholesky factor L of Sigma^{-1} (p x p).
        self.register_buffer("blr_mean", torch.zeros(p, dtype=torch.double))
        self.register_buffer("blr_precision_chol", math.sqrt(1 / self.prior_var) * torch.eye(p, dtype=torch.double))
        self.register_buffer("num_fits", torch.zeros((), dtype=torch.long))
        self.train_mse: Tensor | None = None

    def _apply(self, fn, recurse=True):  # type: ignore[override]
        """Casts move the BLR buffers between devices but keep them float64."""
        keep = {name: getattr(self, name) for name in ("blr_mean", "blr_precision_chol")}
        out = super()._apply(fn, recurse)
        for name, value in keep.items():
            setattr(self, name, value.to(device=getattr(self, name).device))
        return out

    def on_fit_start(self) -> None:
        if self.trainer is not None and self.trainer.ckpt_path:
            return
        if self.warm_start and int(self.num_fits) > 0:
            return
        self.net.reset_parameters()

    def features(self, x: Tensor) -> Tensor:
        r""":math:`\phi(x)`: ``batch x p`` for ``x`` of shape ``batch x d``."""
        return self.net.features(x).squeeze(0)

    def forward(self, x: Tensor) -> Tensor:
        """The trained network's prediction at ``x`` (``batch x d``): ``batch``."""
        return self.net(x).squeeze(0)

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y, _ = batch
        loss = (self(x) - y).pow(2).mean()
        self.train_mse = loss.detach()
        if self.trainer.loggers:
            self.log("train_loss", loss.detach(), on_step=False, on_epoch=True, batch_size=len(y))
        return loss

    def validation_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        x, y, _ = batch
        mse = (self.predict_mean_cov(x.unsqueeze(-2))[0].squeeze(-1) - y.double()).pow(2).mean()
        self.log("val_mse", mse, batch_size=len(y))
        return mse

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.optimizer_name == "sgd":
            return torch.optim.SGD(self.parameters(), lr=self.lr)
        return torch.optim.Adam(self.parameters(), lr=self.lr)

    def on_fit_end(self) -> None:
        """Fit the BLR head on the features of every training point, once."""
        x, y, _ = unique_training_rows(self.trainer, self.device)
        self.fit_posterior(x, y)
        self.num_fits += 1

    @torch.no_grad()
    def fit_posterior(self, x: Tensor, y: Tensor) -> None:
        r"""Set the BLR posterior :math:`(\mu, \Sigma)` from data ``x`` (``n x d``), ``y`` (``n``)."""
        phi = self.features(x).double()
        precision = phi.T @ phi / self.noise_var
        precision.diagonal().add_(1 / self.prior_var)
        chol = torch.linalg.cholesky(precision)
        rhs = (phi.T @ y.double() / self.noise_var).unsqueeze(-1)
        self.blr_mean = torch.cholesky_solve(rhs, chol).squeeze(-1)
        self.blr_precision_chol = chol

    def predict_mean_cov(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Posterior of :math:`g` at ``x`` (``batch x q x d``), differentiable in ``x``:
        mean ``batch x q`` and covariance ``batch x q x q`` (float64)."""
        phi = self.features(x.to(self.net.weights[0].dtype)).double()  # batch x q x p
        mean = phi @ self.blr_mean
        # phi Sigma phi^T = (L^{-1} phi^T)^T (L^{-1} phi^T) with L L^T = Sigma^{-1}
        half = torch.linalg.solve_triangular(self.blr_precision_chol, phi.transpose(-1, -2), upper=False)
        cov = half.transpose(-1, -2) @ half
        return mean, cov


__all__ = ["NeuralLinTS"]
