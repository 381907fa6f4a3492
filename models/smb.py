r"""Neural greedy surrogate model builders: SimpleSMB and PosteriorSMB.

Paria, *On greedy algorithms for blackbox optimization using neural networks* (thesis ch. 3,
Algorithms 3.2 and 3.3; Propositions 3.1 and 3.2). Each fit draws a fresh initialization
:math:`\theta_0` (NTK-INIT(:math:`\gamma`), see :mod:`dsbo_zoo.mlp`) and a fresh target
perturbation :math:`\epsilon_i \sim \mathcal N(0, \sigma^2)`, and minimizes by (stochastic)
gradient descent, starting at :math:`\theta_0`, the *sum* over data points

.. math::

    \mathcal L(\theta) = \sum_{i=1}^n \big(y'_i - \nu\, g(x_i, \theta)\big)^2
        + \sigma^2 \nu^2 \|\theta - \theta_0\|_2^2, \qquad y'_i = y_i + \nu \epsilon_i,

(the minus signs lost in the extracted text of Alg. 3.2 line 3 and Alg. 3.3 line 5 are
restored from the proofs of section 3.6), where

- **SimpleSMB** (Alg. 3.2): :math:`g = f(\cdot, \theta)`; in the infinite-width limit the
  trained surrogate :math:`\nu f(\cdot, \theta_t)` is a draw from the GP of Proposition 3.1
  (mean :math:`\Theta_{x X}(\Theta_{XX} + \sigma^2 I)^{-1} Y`, covariance
  :math:`\mathcal K^{\rm NNGD}_t`), which is *not* the NTK posterior;
- **PosteriorSMB** (Alg. 3.3, He et al. 2020): :math:`g = f(\cdot, \theta) + \delta`, with the
  untrainable random function
  :math:`\delta(x) = \langle \nabla_\theta f(x, \theta_0), \tilde\theta_0 \rangle`,
  :math:`\tilde\theta_0` a second initialization whose last layer is zero. At init
  :math:`f + \delta \sim GP(0, \Theta)` (the last layer's gradient carries
  :math:`\mathcal K^{\rm NN}`, the other layers :math:`\Theta - \mathcal K^{\rm NN}`), so the
  trained surrogate :math:`\nu (f(\cdot, \theta_t) + \delta)` is a draw from the NTK-GP
  posterior (Proposition 3.2): Thompson sampling.

``num_samples = s`` members are ``s`` independent draws (independent :math:`\theta_0`,
:math:`\tilde\theta_0` and :math:`\epsilon`), trained together as one batched
:class:`~dsbo_zoo.mlp.EnsembleMLP`; the loss is summed over members, so members do not interact.

Training batches are ``(x, y, index)`` with ``index`` each point's row in the training set, so
:math:`\epsilon` (one per member and point, drawn once per fit) stays attached to its point
across epochs and minibatches. With minibatches the regularizer of a step is weighted by
``batch / n``, so one epoch of steps sums to :math:`\mathcal L`.

Thesis defaults (section 3.7.1): one hidden layer of width 5000, tanh, :math:`\sigma_w =
\sigma_b = \gamma` (tuned in ``[0.5, 5]``), :math:`\nu = 1`, :math:`\sigma^2 = 0`, Adam with
learning rate ``1e-3``; the training length is not stated. ``warm_start=True`` is the ablation
of section 3.3.1 (keep the previous weights instead of re-initializing: no exploration).

Example:
    >>> smb = SimpleSMB(in_dim=2, num_samples=4, width=256)
    >>> loader = DataLoader(TensorDataset(x, y, torch.arange(len(y))), batch_size=len(y))
    >>> pl.Trainer(max_epochs=500, logger=False).fit(smb, loader)
    >>> smb(torch.rand(7, 2)).shape      # samples x points
    torch.Size([4, 7])
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.func import functional_call, jvp

from .base import OPTIMIZERS, ZooModule, buffer_name, check_number, network_arguments
from .training_data import num_train_points, unique_training_rows


class SimpleSMB(ZooModule):
    r"""SimpleSMB (thesis Algorithm 3.2): ``num_samples`` networks, each trained from a fresh
    NTK initialization on perturbed targets with a distance-to-initialization penalty.

    Args:
        in_dim: Input dimension ``d``.
        num_samples: Number ``s`` of independent surrogate draws (ensemble members).
        width: Hidden width (thesis: 5000).
        depth: Hidden layers (thesis: 1).
        activation: ``"tanh"`` (thesis), ``"relu"`` or ``"erf"``.
        gamma: :math:`\sigma_w = \sigma_b = \gamma` (thesis: tuned in ``[0.5, 5]``).
        parameterization: ``"ntk"`` (section 3.2, the theory) or ``"standard"`` (3.7.1).
        final_bias: ``"zero"`` (section 3.7.1) or ``"random"``.
        noise_var: :math:`\sigma^2` (thesis experiments: 0).
        nu: Scale :math:`\nu` (thesis experiments: 1).
        lr: Learning rate (thesis: Adam, ``1e-3``).
        optimizer: ``"adam"`` (thesis) or ``"sgd"`` (plain gradient descent, the theory).
        warm_start: Keep the weights of the previous fit as the next initialization (the
            ablation of section 3.3.1); the first fit still starts from a random init.
    """

    posterior_kind = "ensemble"
    anchored = True

    def __init__(
        self,
        in_dim: int,
        num_samples: int = 1,
        width: int = 5000,
        depth: int = 1,
        activation: str = "tanh",
        gamma: float = 1.0,
        parameterization: str = "ntk",
        final_bias: str = "zero",
        noise_var: float = 0.0,
        nu: float = 1.0,
        lr: float = 1e-3,
        optimizer: str = "adam",
        warm_start: bool = False,
    ) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
            raise ValueError(f"num_samples must be an integer >= 1, got {num_samples!r}")
        super().__init__(in_dim, num_members=num_samples, **network_arguments(locals()))
        self.save_hyperparameters()
        self.noise_var = check_number("noise_var", noise_var, allow_equal=True)
        self.nu = check_number("nu", nu)
        # eps_{m,i} ~ N(0, noise_var) of the current fit, members x training points.
        self.register_buffer("eps", torch.zeros(num_samples, 0), persistent=False)

    @property
    def num_samples(self) -> int:
        return self.net.num_members

    def on_train_start(self) -> None:
        """Draw the target noise ``eps`` (members x training points) once for this fit."""
        self._num_train = _num_train_points(self.trainer)
        shape = (self.num_samples, self._num_train)
        eps = torch.zeros(shape, dtype=self.eps.dtype, device=self.eps.device)
        if self.noise_var > 0:
            eps = torch.randn(shape, dtype=eps.dtype).to(eps.device) * math.sqrt(self.noise_var)
        self.eps = eps

    def training_offset(self, x: Tensor, index: Tensor) -> Tensor:
        """The untrainable offset at training points ``x`` (rows ``index``); zero here."""
        return torch.zeros((), dtype=x.dtype, device=x.device)

    def surrogate_offset(self, x: Tensor) -> Tensor:
        """What is added to ``f(x, theta)`` before scaling by ``nu`` (zero for SimpleSMB)."""
        return torch.zeros((), dtype=x.dtype, device=x.device)

    def forward(self, x: Tensor) -> Tensor:
        r"""The surrogate draws :math:`\nu f(x, \theta)` at ``x`` (``batch x d``):
        ``num_samples x batch``."""
        return self.nu * (self.net(x) + self.surrogate_offset(x))

    def loss(self, x: Tensor, y: Tensor, index: Tensor) -> Tensor:
        r"""The objective of Alg. 3.2/3.3 on a batch (a sum over points and members); the
        regularizer is weighted by ``len(index) / n`` so that an epoch sums to it once."""
        with torch.no_grad():
            offset = self.training_offset(x, index)
        pred = self.nu * (self.net(x) + offset)
        target = y + self.nu * self.eps[:, index]
        residual = (target - pred).pow(2)
        self.train_mse = residual.detach().mean()
        loss = residual.sum()
        if self.noise_var > 0:
            weight = len(index) / getattr(self, "_num_train", len(index))
            penalty = self.net.squared_distance(self.theta0()).sum()
            loss = loss + weight * self.noise_var * self.nu**2 * penalty
        return loss


class PosteriorSMB(SimpleSMB):
    r"""PosteriorSMB (thesis Algorithm 3.3): SimpleSMB plus the untrainable random function
    :math:`\delta(x) = \langle \nabla_\theta f(x, \theta_0), \tilde\theta_0 \rangle`.

    :math:`\tilde\theta_0` is drawn like :math:`\theta_0` (same parameterization, so
    :math:`\delta` has the same distribution under ``"ntk"`` and ``"standard"``) with every
    parameter of the last layer set to zero. :math:`\delta` is a forward-mode
    Jacobian-vector product (``torch.func.jvp`` over ``functional_call`` at the buffers
    :math:`\theta_0`), differentiable in ``x``. Same arguments as :class:`SimpleSMB`.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, p in self.net.named_parameters():
            self.register_buffer(buffer_name("theta_tilde_", name), torch.zeros_like(p.detach()))

    def theta_tilde(self) -> dict[str, Tensor]:
        r""":math:`\tilde\theta_0` by parameter name (its last layer is zero)."""
        return {
            name: getattr(self, buffer_name("theta_tilde_", name)) for name in self._param_names
        }

    @torch.no_grad()
    def reinitialize(self) -> None:
        r"""Fresh :math:`\tilde\theta_0` (last layer zeroed) and :math:`\theta_0`."""
        self.net.reset_parameters()
        tilde = self.net.initial_state()
        last = self.net.depth
        tilde[f"weights.{last}"].zero_()
        tilde[f"biases.{last}"].zero_()
        self._set_buffers("theta_tilde_", tilde)
        super().reinitialize()

    def delta(self, x: Tensor) -> Tensor:
        r""":math:`\delta(x)` for every member: ``num_samples x batch``."""
        theta0 = self.theta0()

        def f(params: dict[str, Tensor]) -> Tensor:
            return functional_call(self.net, params, (x,))

        _, tangent_out = jvp(f, (theta0,), (self.theta_tilde(),))
        return tangent_out

    def surrogate_offset(self, x: Tensor) -> Tensor:
        return self.delta(x)

    def on_train_start(self) -> None:
        """Draw ``eps`` and tabulate ``delta`` at the training points (fixed during a fit)."""
        super().on_train_start()
        table = torch.zeros_like(self.eps)
        x, _, index = unique_training_rows(self.trainer, table.device)
        with torch.no_grad():
            table[:, index] = self.delta(x)
        self._delta_train = table

    def on_fit_end(self) -> None:
        super().on_fit_end()
        self._delta_train = None

    def training_offset(self, x: Tensor, index: Tensor) -> Tensor:
        table = getattr(self, "_delta_train", None)
        if table is None:
            return self.delta(x)
        return table[:, index]

    def forward(self, x: Tensor) -> Tensor:
        r"""The surrogate draws :math:`\nu (f(x, \theta) + \delta(x))`: ``num_samples x batch``."""
        return super().forward(x)


def _num_train_points(trainer: pl.Trainer) -> int:
    """Size of the training set behind ``trainer``'s train dataloader (the range of ``index``)."""
    n = num_train_points(trainer)
    if n is None:
        raise ValueError(
            "train_dataloader: SMB models need a sized dataset of (x, y, index) rows, so that "
            "the target noise eps is drawn once per training point"
        )
    return n


__all__ = ["OPTIMIZERS", "PosteriorSMB", "SimpleSMB"]
