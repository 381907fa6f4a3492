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

import torch
from torch import Tensor

from .base import ZooModule, check_number, network_arguments


class NeuralLinTS(ZooModule):
    r"""A trained network's last-hidden-layer features with a Bayesian linear regression head.

    The head (:meth:`fit_head`) is refitted after training, before every validation during
    ``fit`` and before every checkpoint (:class:`~dsbo_zoo.base.ZooModule`), so ``val_mse`` and
    every checkpoint describe the model with its head.

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
    has_head = True

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
        if isinstance(depth, int) and depth < 1:
            raise ValueError(f"depth must be >= 1 (the features are a hidden layer), got {depth!r}")
        super().__init__(in_dim, **network_arguments(locals()))
        self.save_hyperparameters()
        self.prior_var = check_number("prior_var", prior_var)
        self.noise_var = check_number("noise_var", noise_var)
        p = self.net.width
        # BLR posterior (float64): mean mu (p) and the Cholesky factor L of Sigma^{-1} (p x p).
        self.register_buffer("blr_mean", torch.zeros(p, dtype=torch.double))
        self.register_buffer(
            "blr_precision_chol", math.sqrt(1 / self.prior_var) * torch.eye(p, dtype=torch.double)
        )

    def _apply(self, fn, recurse=True):  # type: ignore[override]
        """Casts move the BLR buffers between devices but keep them float64."""
        keep = {name: getattr(self, name) for name in ("blr_mean", "blr_precision_chol")}
        out = super()._apply(fn, recurse)
        for name, value in keep.items():
            setattr(self, name, value.to(device=getattr(self, name).device))
        return out

    def features(self, x: Tensor) -> Tensor:
        r""":math:`\phi(x)`: ``batch x p`` for ``x`` of shape ``batch x d``."""
        return self.net.features(x).squeeze(0)

    def forward(self, x: Tensor) -> Tensor:
        """The trained network's prediction at ``x`` (``batch x d``): ``batch``."""
        return self.net(x).squeeze(0)

    def loss(self, x: Tensor, y: Tensor, index: Tensor) -> Tensor:
        """The network's mean squared error (the features are trained by MSE)."""
        loss = (self(x) - y).pow(2).mean()
        self.train_mse = loss.detach()
        return loss

    def predict_members(self, x: Tensor) -> Tensor:
        """The head's predictive mean (one member); before the head's first fit (Lightning's
        sanity check runs before any training data is loaded) the network's own output."""
        if not bool(self.head_fitted):
            return self(x).reshape(1, -1)
        return self.predict_mean_cov(x.unsqueeze(-2))[0].reshape(1, -1)

    def fit_head(self, x: Tensor, y: Tensor) -> None:
        self.fit_posterior(x, y)

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
        self.head_fitted.fill_(True)

    def predict_mean_cov(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Posterior of :math:`g` at ``x`` (``batch x q x d``), differentiable in ``x``:
        mean ``batch x q`` and covariance ``batch x q x q`` (float64).

        Raises:
            UnfittedHeadError: if the head was never fitted.
        """
        self.require_head()
        phi = self.features(x.to(self.net.weights[0].dtype)).double()  # batch x q x p
        mean = phi @ self.blr_mean
        # phi Sigma phi^T = (L^{-1} phi^T)^T (L^{-1} phi^T) with L L^T = Sigma^{-1}
        half = torch.linalg.solve_triangular(
            self.blr_precision_chol, phi.transpose(-1, -2), upper=False
        )
        cov = half.transpose(-1, -2) @ half
        return mean, cov


__all__ = ["NeuralLinTS"]
