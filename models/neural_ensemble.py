r"""NeuralEnsemble: a deep ensemble of independently initialized networks, warm-started.

The neural-ensemble baseline of Paria's thesis (ch. 3, sections 3.5 and 3.7.1), after Kim et
al. (*Deep learning for Bayesian optimization of scientific problems with high-dimensional
structure*, 2021) and Lakshminarayanan et al. (2017): ``M`` networks with identical
architecture and independent random initializations are each fitted to the data by
minimizing the mean squared error

.. math::

    \mathcal L(\theta_1, \dots, \theta_M) = \sum_{m=1}^M \frac1n \sum_{i=1}^n
        \big(y_i - f(x_i, \theta_m)\big)^2 ,

and the ``M`` trained networks are read as ``M`` posterior samples (an EI-type acquisition
averages over them). Unlike SimpleSMB, the ensemble is **warm-started**: every fit continues
from the weights of the previous one (only the very first fit starts from a random init).

Thesis defaults (section 3.7.1): ``M = 10`` members, one hidden layer of width 1000, the
fan-in-scaled standard initialization :math:`W \sim \mathcal N(0, \gamma^2 / d_{in})`,
:math:`b \sim \mathcal N(0, \gamma^2)`, zero final bias, :math:`\gamma = 1`, tanh, Adam with
learning rate ``1e-3``, trained "to convergence" (the length is not stated).

Example:
    >>> ens = NeuralEnsemble(in_dim=3, num_members=5, width=64)
    >>> ens(torch.rand(7, 3)).shape       # members x points
    torch.Size([5, 7])
"""

from __future__ import annotations

from torch import Tensor

from .base import ZooModule, network_arguments


class NeuralEnsemble(ZooModule):
    r"""``num_members`` networks fitted by MSE, weights kept across fits (warm start).

    Args:
        in_dim: Input dimension ``d``.
        num_members: Ensemble size ``M`` (thesis: 10).
        width: Hidden width (thesis: 1000).
        depth: Hidden layers (thesis: 1).
        activation: ``"tanh"`` (thesis), ``"relu"`` or ``"erf"``.
        gamma: Initialization scale :math:`\sigma_w = \sigma_b = \gamma` (thesis: 1).
        parameterization: ``"standard"`` (section 3.7.1) or ``"ntk"``.
        final_bias: ``"zero"`` (section 3.7.1) or ``"random"``.
        lr: Learning rate (thesis: ``1e-3``).
        optimizer: ``"adam"`` (thesis) or ``"sgd"`` (plain gradient descent).
        warm_start: Continue from the previous fit's weights (thesis: yes); ``False``
            re-initializes at every ``trainer.fit``.
    """

    posterior_kind = "ensemble"

    def __init__(
        self,
        in_dim: int,
        num_members: int = 10,
        width: int = 1000,
        depth: int = 1,
        activation: str = "tanh",
        gamma: float = 1.0,
        parameterization: str = "standard",
        final_bias: str = "zero",
        lr: float = 1e-3,
        optimizer: str = "adam",
        warm_start: bool = True,
    ) -> None:
        super().__init__(in_dim, **network_arguments(locals()))
        self.save_hyperparameters()

    def forward(self, x: Tensor) -> Tensor:
        """Every member at ``x`` (``batch x d``): ``num_members x batch``."""
        return self.net(x)

    def loss(self, x: Tensor, y: Tensor, index: Tensor) -> Tensor:
        """The sum over members of each member's mean squared error."""
        mse = (self.net(x) - y).pow(2).mean(-1)  # per member
        self.train_mse = mse.detach().mean()
        return mse.sum()


__all__ = ["NeuralEnsemble"]
