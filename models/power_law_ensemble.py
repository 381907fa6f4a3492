r"""PowerLawEnsemble: a deep ensemble whose members output the parameters of a power-law
learning curve, for freeze-thaw (learning-curve) BO.

Domhan, Springenberg and Hutter (*Speeding up automatic hyperparameter optimization of deep
neural networks by extrapolation of learning curves*, IJCAI 2015) extrapolate a partially
observed learning curve with a combination of parametric basis curves, the power law
:math:`c - b\,t^{-a}` among them. Klein, Falkner, Springenberg and Hutter (*Learning curve
prediction with Bayesian neural networks*, ICLR 2017; LC-Net) let a network of the
configuration :math:`x` output the parameters of such a curve, so that curves of configurations
never run to the end are predicted from the curves of the others. Here every member
:math:`m = 1, \dots, M` of a deep ensemble (Lakshminarayanan, Pritzel and Blundell, *Simple
and scalable predictive uncertainty estimation using deep ensembles*, NeurIPS 2017) maps
:math:`x` through an MLP (:class:`~dsbo_zoo.mlp.EnsembleMLP`'s last hidden layer) and a
linear layer to four numbers :math:`(c_m, b_m, a_m, \ell_m)(x)`, with
:math:`a_m = \operatorname{softplus}(\cdot) + 10^{-3} > 0`, and predicts at step :math:`t` of
:math:`T` (:math:`\tau = t / T \in (0, 1]`, the row's step column of
:class:`~dsbo_zoo.learning_curves.CurveLayout`)

.. math::

    \mu_m(x, t) = c_m(x) + b_m(x)\,\frac{\tau^{-a_m(x)} - 1}{T^{a_m(x)} - 1}, \qquad
    \sigma_m^2(x) = e^{\ell_m(x)} ,

so :math:`\mu_m(x, T) = c_m(x)` is the member's predicted *final* value,
:math:`b_m(x) = \mu_m(x, 1) - \mu_m(x, T)` the curve's total change (any sign), and the curve is
monotone in :math:`t` (decreasing for :math:`b_m > 0`). This is the power law
:math:`c' + b'\,t^{-a}` with :math:`b' = b\,T^a / (T^a - 1)`, parameterized by its change over
the budget rather than by :math:`b'`. With :math:`c + b\,(\tau^{-a} - 1)` the change grows like
:math:`T^a`; on the synthetic curves of the tests (noise variance ``4e-4``) its fits kept
spiking (members' training MSE jumping from ``1e-3`` to 0.1 or more; at ``lr = 1e-2`` members
drifted to :math:`a \to 0`, :math:`|b| \to \infty`, where the normalized curve tends to
:math:`\log(1/\tau) / \log T`) and ended 1000 Adam steps at a training MSE of 0.007 to 0.1,
against ``3e-4`` to ``9e-4`` normalized. :math:`\ell_m` is the aleatoric log noise variance,
softly clamped to :data:`LOG_VAR_RANGE`. Each member minimizes its Gaussian negative log-likelihood
:math:`\frac1n \sum_i \tfrac12 \big(\ell_m(x_i) + (y_i - \mu_m(x_i, t_i))^2 /
\sigma_m^2(x_i)\big)`; the loss is the mean over members.

The predictive distribution is the members' mixture, read as a Gaussian with its first two
moments (:meth:`PowerLawEnsemble.predict_mean_cov`):

.. math::

    \bar\mu = \frac1M \sum_m \mu_m, \qquad
    \Sigma = \frac1M \sum_m (\mu_m - \bar\mu)(\mu_m - \bar\mu)^\top
        + \operatorname{diag}\Big(\frac1M \sum_m \sigma_m^2\Big),

whose diagonal is :math:`\frac1M \sum_m (\sigma_m^2 + \mu_m^2) - \bar\mu^2`, the predictive
variance of an *observation*. The two parts are kept apart:
:meth:`PowerLawEnsemble.predict_mean_cov` gives the members' disagreement (the first term,
the uncertainty about the noise-free value, which an expected improvement on the value
itself needs) and :meth:`PowerLawEnsemble.noise_variance` the mean aleatoric variance
:math:`\frac1M \sum_m \sigma_m^2(x)` of each row (heteroscedastic: it depends on the
configuration), which an observation adds. The prefix columns of a row (the curve observed so
far) are not read.

Example:
    >>> model = PowerLawEnsemble(num_params=2, max_steps=10, num_members=3, width=16)
    >>> rows = model.layout.rows(torch.rand(4, 2), torch.tensor([1, 5, 10, 10]),
    ...                          torch.zeros(4, 10), torch.zeros(4))
    >>> [tuple(v.shape) for v in model(rows)]          # member means and variances
    [(3, 4), (3, 4)]
    >>> [tuple(v.shape) for v in model.predict_mean_cov(rows)]
    [(4,), (4, 4)]
    >>> tuple(model.noise_variance(rows).shape)      # what an observation adds, per row
    (4,)
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import check_number
from .learning_curves import CurveLayout
from .mlp import EnsembleMLP

#: The range a member's log noise variance is softly clamped to.
LOG_VAR_RANGE = (-12.0, 4.0)
#: The smallest exponent ``a``.
MIN_EXPONENT = 1e-3
#: The exponent of a fresh head with zero weights (the head's bias starts there).
INITIAL_EXPONENT = 0.5


def soft_clamp(z: Tensor, low: float, high: float) -> Tensor:
    """``z`` kept in ``(low, high)`` by two softplus hinges: about ``z`` well inside, with a
    gradient everywhere (a hard clamp would stop a member stuck at a bound)."""
    z = low + F.softplus(z - low)
    return high - F.softplus(high - z)


class PowerLawEnsemble(pl.LightningModule):
    r"""``num_members`` networks ``x -> (c, b, a, log var)`` of a power-law curve (module
    docstring), trained by Gaussian NLL on :class:`~dsbo_zoo.learning_curves.CurveLayout` rows.

    Args:
        num_params: ``d``, the configuration's coordinates.
        max_steps: ``T``, the steps of a full curve.
        num_members: Ensemble size ``M``.
        width: Hidden width of every member's MLP.
        depth: Hidden layers (``0``: the curve parameters are linear in ``x``).
        activation: ``"tanh"``, ``"relu"`` or ``"erf"``.
        lr: Adam's learning rate (at ``1e-2`` the NLL fits of the tests spiked and did not
            converge; ``3e-3`` did).
        weight_decay: Adam's L2 penalty.
        warm_start: Keep the weights across ``trainer.fit`` calls; ``False`` draws fresh ones
            (torch's global RNG) at the start of every fit that does not resume a checkpoint.
    """

    posterior_kind = "gaussian"

    def __init__(
        self,
        num_params: int,
        max_steps: int,
        num_members: int = 5,
        width: int = 64,
        depth: int = 2,
        activation: str = "tanh",
        lr: float = 3e-3,
        weight_decay: float = 0.0,
        warm_start: bool = True,
    ) -> None:
        super().__init__()
        self.layout = CurveLayout(num_params, max_steps)
        self.lr = check_number("lr", lr)
        self.weight_decay = check_number("weight_decay", weight_decay, allow_equal=True)
        if not isinstance(warm_start, bool):
            raise ValueError(f"warm_start must be true or false, got {warm_start!r}")
        self.warm_start = warm_start
        self.save_hyperparameters()
        self.net = EnsembleMLP(
            self.layout.num_params,
            width=width,
            depth=depth,
            activation=activation,
            num_members=num_members,
            parameterization="standard",
        )  # its own scalar output layer is not used: the head below replaces it
        features = self.net.width if self.net.depth > 0 else self.net.in_dim
        self.head_weight = nn.Parameter(torch.empty(self.net.num_members, features, 4))
        self.head_bias = nn.Parameter(torch.empty(self.net.num_members, 4))
        self.reset_parameters()
        #: Mean over members of each member's squared training residual, last step.
        self.train_mse: Tensor | None = None

    @property
    def num_members(self) -> int:
        return self.net.num_members

    @torch.no_grad()
    def reset_parameters(self) -> None:
        r"""Fresh weights from torch's global RNG: the MLP's own initialization, the head's
        weights :math:`\mathcal N(0, 1 / \text{fan-in})`, its bias at ``c = b = 0``,
        ``a = 0.5``, ``log var = 0``."""
        self.net.reset_parameters()
        self.head_weight.normal_(0.0, 1.0 / math.sqrt(self.head_weight.shape[1]))
        self.head_bias.zero_()
        self.head_bias[:, 2] = math.log(math.expm1(INITIAL_EXPONENT - MIN_EXPONENT))

    def curve_parameters(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(c, b, a, log var)`` of every member at configurations ``x`` (``... x d``),
        each ``M x ...``."""
        h = self.net.features(x)  # M x ... x F
        out = torch.einsum("m...f,mfk->m...k", h, self.head_weight)
        out = out + self.head_bias.reshape(self.num_members, *[1] * (out.ndim - 2), 4)
        c, b, raw_a, raw_log_var = out.unbind(-1)
        a = F.softplus(raw_a) + MIN_EXPONENT
        return c, b, a, soft_clamp(raw_log_var, *LOG_VAR_RANGE)

    def member_curves(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """Member means and log noise variances at ``rows`` (``... x width``), each ``M x ...``.
        A step fraction below ``1 / T`` is read as ``1 / T``."""
        if rows.shape[-1] != self.layout.width:
            raise ValueError(
                f"rows have {rows.shape[-1]} columns, the layout has {self.layout.width}"
            )
        d = self.layout.num_params
        c, b, a, log_var = self.curve_parameters(rows[..., :d])
        tau = rows[..., d].clamp_min(1.0 / self.layout.max_steps)
        # (tau^-a - 1) / (T^a - 1): 0 at t = T, 1 at t = 1 (0 everywhere when T = 1)
        shape = torch.expm1(-a * torch.log(tau)) / torch.expm1(
            a * math.log(self.layout.max_steps)
        ).clamp_min(1e-12)
        return c + b * shape, log_var

    def forward(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """Member means and noise variances at ``rows`` (``n x width``): ``(M x n, M x n)``."""
        mean, log_var = self.member_curves(rows)
        return mean, log_var.exp()

    def predict_mean_cov(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """The mixture's mean (``... x n``) and the covariance of the noise-free value
        (``... x n x n``, the members' disagreement, positive semidefinite) at ``rows``
        (``... x n x width``). The covariance of observations adds
        ``diag(noise_variance(rows))`` (the module docstring's moments)."""
        means, _ = self(rows)
        mean = means.mean(0)
        centered = means - mean
        return mean, torch.einsum("m...i,m...j->...ij", centered, centered) / self.num_members

    def noise_variance(self, rows: Tensor) -> Tensor:
        r"""The members' mean aleatoric variance :math:`\frac1M \sum_m \sigma_m^2` at each row
        (``... x n``): what an observation adds to :meth:`predict_mean_cov`'s diagonal."""
        return self(rows)[1].mean(0)

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        """The mean over members (and points) of the Gaussian negative log-likelihood."""
        rows, y, _ = batch
        mean, log_var = self.member_curves(rows)
        residual2 = (y - mean).pow(2)
        self.train_mse = residual2.detach().mean()
        return (0.5 * (log_var + residual2 * torch.exp(-log_var))).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)

    def on_fit_start(self) -> None:
        if self.warm_start or (self.trainer is not None and self.trainer.ckpt_path):
            return
        self.reset_parameters()


__all__ = ["LOG_VAR_RANGE", "PowerLawEnsemble"]
