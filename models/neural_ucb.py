r"""NeuralUCB: a network's prediction with a confidence width from its gradient features.

Zhou, Li and Gu, *Neural contextual bandits with UCB-based exploration* (ICML 2020), as the
NeuralUCB baseline of Paria's thesis (ch. 3, sections 3.5 and 3.7.1). A network
:math:`f(x, \theta)` of width ``m`` is trained from its initialization :math:`\theta_0` on

.. math::

    \mathcal L(\theta) = \sum_{i=1}^n \big(f(x_i, \theta) - y_i\big)^2
        + m \lambda \|\theta - \theta_0\|_2^2

(Zhou et al.'s Algorithm 2 with both terms doubled: the same minimizer). With the gradient
features :math:`g(x) = \nabla_\theta f(x, \theta) \in \mathbb R^p` at the trained
:math:`\theta` and the ``p x p`` design matrix

.. math::

    Z = \lambda I_p + \frac1m \sum_{i=1}^n g(x_i) g(x_i)^\top ,

the model is the Gaussian with mean :math:`f(x, \theta)` and covariance
:math:`\kappa^2\, g(x)^\top Z^{-1} g(x') / m` (:meth:`NeuralUCB.predict_mean_cov`), so that
BoTorch's UCB with :math:`\sqrt\beta = 1` is Zhou et al.'s
:math:`f(x) + \kappa \sqrt{g^\top Z^{-1} g / m}` with confidence scale :math:`\kappa`.
Zhou et al. accumulate each :math:`g(x_t)` at the parameters of the round it was played; here
all gradients are taken at the current parameters (one network, refitted each step).

Thesis defaults (3.5, 3.7.1): two hidden layers of width 20 (``p`` is small enough to invert
``Z``), the standard fan-in-scaled initialization with :math:`\gamma = 1` and zero final
bias, tanh, Adam with learning rate ``1e-3``; :math:`\kappa` is tuned over
``{0.01, 0.1, 1}`` and :math:`\lambda` over ``{1e-2, 1e-3, 1e-4, 1e-5}`` (defaults: 0.1, 1e-3).
Gradient features come from ``torch.func.vmap(jacrev(...))`` and stay differentiable in ``x``;
the linear algebra runs in float64.

Example:
    >>> ucb = NeuralUCB(in_dim=3)
    >>> pl.Trainer(max_epochs=500, logger=False).fit(ucb, loader)   # then Z is computed
    >>> mean, cov = ucb.predict_mean_cov(torch.rand(4, 2, 3))
    >>> mean.shape, cov.shape
    (torch.Size([4, 2]), torch.Size([4, 2, 2]))
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.func import functional_call, jacrev, vmap

from .base import ZooModule, check_number, network_arguments
from .training_data import num_train_points


class NeuralUCB(ZooModule):
    r"""Zhou et al.'s NeuralUCB as a Gaussian model over ``f``.

    The design matrix ``Z`` is the Bayesian head (:meth:`fit_head`): refitted after training,
    before every validation during ``fit`` and before every checkpoint
    (:class:`~dsbo_zoo.base.ZooModule`).

    Args:
        in_dim: Input dimension ``d``.
        width: Hidden width ``m`` (thesis/Zhou et al.: 20).
        depth: Hidden layers (thesis: 2).
        activation: ``"tanh"`` (thesis), ``"relu"`` (Zhou et al.) or ``"erf"``.
        gamma: Initialization scale of the network (thesis: 1).
        parameterization: ``"standard"`` (section 3.7.1) or ``"ntk"``.
        final_bias: ``"zero"`` (section 3.7.1) or ``"random"``.
        reg_lambda: :math:`\lambda`, the L2-to-initialization weight and the prior of ``Z``.
        confidence_scale: :math:`\kappa`, the scale of the confidence width.
        lr: Learning rate (thesis: Adam, ``1e-3``).
        optimizer: ``"adam"`` or ``"sgd"`` (gradient descent, as in Zhou et al.).
        warm_start: Continue from the previous fit's weights instead of a fresh init (the
            regularizer then pulls towards those weights).
    """

    posterior_kind = "gaussian"
    anchored = True
    has_head = True

    def __init__(
        self,
        in_dim: int,
        width: int = 20,
        depth: int = 2,
        activation: str = "tanh",
        gamma: float = 1.0,
        parameterization: str = "standard",
        final_bias: str = "zero",
        reg_lambda: float = 1e-3,
        confidence_scale: float = 0.1,
        lr: float = 1e-3,
        optimizer: str = "adam",
        warm_start: bool = False,
    ) -> None:
        super().__init__(in_dim, **network_arguments(locals()))
        self.save_hyperparameters()
        self.reg_lambda = check_number("reg_lambda", reg_lambda)
        self.confidence_scale = check_number("confidence_scale", confidence_scale)
        p = self.num_params
        # Cholesky factor of Z (float64), lambda I before the first fit.
        self.register_buffer(
            "z_chol", math.sqrt(self.reg_lambda) * torch.eye(p, dtype=torch.double)
        )

    def _apply(self, fn, recurse=True):  # type: ignore[override]
        """Casts move ``z_chol`` between devices but keep it float64."""
        z_chol = self.z_chol
        out = super()._apply(fn, recurse)
        self.z_chol = z_chol.to(device=self.z_chol.device)
        return out

    @property
    def num_params(self) -> int:
        """``p``, the number of network parameters."""
        return sum(p.numel() for p in self.net.parameters())

    @property
    def width(self) -> int:
        return self.net.width

    def forward(self, x: Tensor) -> Tensor:
        """The network's prediction at ``x`` (``batch x d``): ``batch``."""
        return self.net(x).squeeze(0)

    def loss(self, x: Tensor, y: Tensor, index: Tensor) -> Tensor:
        """Squared errors plus ``m lambda ||theta - theta_0||^2``, weighted ``batch / n``."""
        residual = (self(x) - y).pow(2)
        self.train_mse = residual.detach().mean()
        n = num_train_points(self.trainer) if self._trainer is not None else None
        penalty = self.net.squared_distance(self.theta0()).sum()
        return (
            residual.sum() + len(index) / (n or len(index)) * self.width * self.reg_lambda * penalty
        )

    def gradient_features(self, x: Tensor) -> Tensor:
        r""":math:`g(x) = \nabla_\theta f(x, \theta)` for ``x`` of shape ``... x d``: ``... x p``
        (``vmap`` over points of ``jacrev``; differentiable in ``x``)."""
        params = {name: p for name, p in self.net.named_parameters()}
        flat = x.reshape(-1, x.shape[-1])

        def f(params: dict[str, Tensor], point: Tensor) -> Tensor:
            return functional_call(self.net, params, (point.unsqueeze(0),)).squeeze()

        jac = vmap(jacrev(f), in_dims=(None, 0))(params, flat)
        g = torch.cat([jac[name].reshape(flat.shape[0], -1) for name in self._param_names], -1)
        return g.reshape(*x.shape[:-1], g.shape[-1])

    def fit_head(self, x: Tensor, y: Tensor) -> None:
        self.fit_design(x)

    @torch.no_grad()
    def fit_design(self, x: Tensor) -> None:
        """Set ``Z = lambda I + sum_i g(x_i) g(x_i)^T / m`` from the points ``x`` (``n x d``)."""
        g = self.gradient_features(x).double()
        z = g.T @ g / self.width
        z.diagonal().add_(self.reg_lambda)
        self.z_chol = torch.linalg.cholesky(z)
        self.head_fitted.fill_(True)

    def predict_members(self, x: Tensor) -> Tensor:
        """The predictive mean, the network's output (one member)."""
        return self(x).reshape(1, -1)

    def predict_mean_cov(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""Mean :math:`f(x, \theta)` (``batch x q``) and covariance
        :math:`\kappa^2 g^\top Z^{-1} g / m` (``batch x q x q``) at ``x`` (``batch x q x d``),
        float64 and differentiable in ``x``.

        Raises:
            UnfittedHeadError: if ``Z`` was never fitted.
        """
        self.require_head()
        x = x.to(self.net.weights[0].dtype)
        mean = self(x).double()
        g = self.gradient_features(x).double()  # batch x q x p
        half = torch.linalg.solve_triangular(self.z_chol, g.transpose(-1, -2), upper=False)
        cov = half.transpose(-1, -2) @ half * (self.confidence_scale**2 / self.width)
        return mean, cov


__all__ = ["NeuralUCB"]
