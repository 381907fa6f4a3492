r"""DeepKernelCurveGP: DyHPO's deep-kernel Gaussian process over (configuration, step, curve).

Wistuba, Schulz and Grabocka, *Supervising the multi-fidelity race of hyperparameter
configurations* (DyHPO, NeurIPS 2022, sec. 4.1). A feature extractor
:math:`\varphi(x, t, Y_{x,s})` maps a configuration :math:`x`, a step :math:`t` and the curve
observed before it (:mod:`~dsbo_zoo.learning_curves` packs the three into one row) to a
few features: the curve goes through a 1-d convolution and a max-pool over the observed
positions, and is concatenated with :math:`(x, t/T, s/T, y_{x,s})` before fully connected
layers (the last observed value :math:`y_{x,s}` is our addition: a max-pool loses where a
curve ended, which predicting far beyond a short prefix needs). A Gaussian process with a squared-exponential kernel on the features,

.. math::

    f \sim \mathcal{GP}\big(\mu, k\big), \qquad
    k(r, r') = \sigma_f^2 \exp\Big(-\frac{\|\varphi(r) - \varphi(r')\|^2}{2\ell^2}\Big), \qquad
    y = f(r) + \varepsilon, \ \varepsilon \sim \mathcal N(0, \sigma_n^2),

is trained jointly with the network by maximizing the marginal likelihood of the observed
values (DyHPO trains both with Adam on the exact log marginal likelihood).

**Thousands of points.** The exact marginal likelihood costs :math:`O(n^3)` per step. With
more than ``inducing`` observations the head uses Titsias' collapsed variational bound
(*Variational learning of inducing variables in sparse Gaussian processes*, AISTATS 2009,
eq. 9) with :math:`m` inducing inputs, the features of ``inducing`` observations drawn at the
start of each fit (:math:`Q_{nn} = K_{nm} K_{mm}^{-1} K_{mn}`):

.. math::

    \log p(y) \ \ge\ \log \mathcal N\big(y \mid \mu, Q_{nn} + \sigma_n^2 I\big)
        - \frac{1}{2\sigma_n^2} \operatorname{tr}\big(K_{nn} - Q_{nn}\big),

which costs :math:`O(n m^2)` (linear in the observations) and equals the exact marginal
likelihood when every observation is an inducing input (:math:`n \le m`). Predictions use the
bound's optimal :math:`q(u)` (the SGPR predictive; exact GP regression for :math:`n \le m`):
with :math:`\Sigma = (K_{mm} + \sigma_n^{-2} K_{mn} K_{nm})^{-1}`,

.. math::

    \mathbb E[f_*] = \mu + \sigma_n^{-2} K_{*m} \Sigma K_{mn} (y - \mu), \qquad
    \operatorname{Cov}[f_*] = K_{**} - Q_{**} + K_{*m} \Sigma K_{m*}.

The head computes in float64 whatever the network's dtype. The training data are kept (as
buffers) for prediction. With ``warm_start`` (the default) a new fit continues from the
previous fit's weights, so a BO decision refines the model rather than training it anew.

Example:
    >>> gp = DeepKernelCurveGP(num_params=3, max_steps=27)
    >>> # trainer.fit(gp, DataLoader of full batches (rows, y, index)); then
    >>> mean, cov = gp.predict_mean_cov(rows)     # n, n x n
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
from einops import rearrange
from torch import Tensor, nn

from .base import check_number
from .learning_curves import CurveLayout

#: Added to the diagonal of the inducing kernel matrix (float64, standardized targets).
JITTER = 1e-6


def _softplus_inverse(value: float) -> float:
    return math.log(math.expm1(value))


class DeepKernelCurveGP(pl.LightningModule):
    r"""A GP on learned features of ``(configuration, step, curve prefix)`` rows.

    Args:
        num_params: ``d``, the configuration's coordinates.
        max_steps: ``T``, the steps of a full curve.
        hidden: Width of the fully connected layers (DyHPO: 64, 128).
        features: Dimension of :math:`\varphi` (the kernel's input).
        channels: Output channels of the curve convolution (DyHPO: 4).
        kernel_size: Width of the curve convolution (DyHPO: 3).
        inducing: Observations beyond which the head switches from the exact marginal
            likelihood to Titsias' bound with this many inducing inputs.
        lr: Adam's learning rate (DyHPO: 0.001 over 1000 epochs; a warm-started decision
            takes a few dozen steps, so the default is larger).
        warm_start: Continue from the previous fit's weights; ``False`` re-initializes at
            every ``trainer.fit``.
    """

    posterior_kind = "gaussian"

    def __init__(
        self,
        num_params: int,
        max_steps: int,
        hidden: int = 64,
        features: int = 8,
        channels: int = 4,
        kernel_size: int = 3,
        inducing: int = 256,
        lr: float = 1e-2,
        warm_start: bool = True,
    ) -> None:
        super().__init__()
        self.layout = CurveLayout(num_params, max_steps)
        for name, value in (
            ("hidden", hidden),
            ("features", features),
            ("channels", channels),
            ("kernel_size", kernel_size),
            ("inducing", inducing),
        ):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.lr = check_number("lr", lr)
        self.inducing, self.warm_start = int(inducing), bool(warm_start)
        self.save_hyperparameters()
        self.curve_conv = nn.Conv1d(1, channels, kernel_size, padding=kernel_size // 2)
        self.net = nn.Sequential(
            nn.Linear(num_params + 3 + channels, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, features),
        )
        self.raw_lengthscale = nn.Parameter(torch.tensor(_softplus_inverse(math.sqrt(features))))
        self.raw_outputscale = nn.Parameter(torch.tensor(_softplus_inverse(1.0)))
        self.raw_noise = nn.Parameter(torch.tensor(_softplus_inverse(0.1)))
        self.mean_constant = nn.Parameter(torch.tensor(0.0))
        self.register_buffer("train_rows", torch.zeros(0, self.layout.width))
        self.register_buffer("train_y", torch.zeros(0))
        self.register_buffer("inducing_index", torch.zeros(0, dtype=torch.long))
        self._fitted_once = False

    # ------------------------------------------------------------------ the deep kernel
    def features(self, rows: Tensor) -> Tensor:
        r""":math:`\varphi` of ``rows`` (``n x width``): ``n x features``."""
        configs, step, prefix_fraction, prefix, mask = self.layout.split(
            rows.to(self.curve_conv.weight)
        )
        curve = self.curve_conv(rearrange(prefix * mask, "n t -> n 1 t"))  # n x channels x T
        pooled = curve.masked_fill(~rearrange(mask, "n t -> n 1 t"), -math.inf).amax(-1)
        observed = mask.any(-1, keepdim=True)
        pooled = torch.where(observed, pooled, torch.zeros_like(pooled))  # no prefix: zeros
        last = (
            prefix.gather(-1, (mask.sum(-1, keepdim=True) - 1).clamp_min(0)) * observed
        )  # y_s (0 if s = 0)
        inputs = [configs, step.unsqueeze(-1), prefix_fraction.unsqueeze(-1), last, pooled]
        return self.net(torch.cat(inputs, dim=-1))

    @property
    def lengthscale(self) -> Tensor:
        return nn.functional.softplus(self.raw_lengthscale).double() + 1e-4

    @property
    def outputscale(self) -> Tensor:
        return nn.functional.softplus(self.raw_outputscale).double() + 1e-6

    @property
    def noise_var(self) -> float:
        """:math:`\\sigma_n^2` in the units of the targets."""
        return float(self._noise().detach())

    def _noise(self) -> Tensor:
        return nn.functional.softplus(self.raw_noise).double() + 1e-6

    def kernel(self, a: Tensor, b: Tensor) -> Tensor:
        """The squared-exponential kernel between feature sets (float64)."""
        a, b = a.double() / self.lengthscale, b.double() / self.lengthscale
        sq = (a.pow(2).sum(-1, keepdim=True) - 2 * a @ b.T + b.pow(2).sum(-1)).clamp_min(0)
        return self.outputscale * torch.exp(-0.5 * sq)

    # ------------------------------------------------------------------ the head
    def _sparse_for(self, n: int) -> bool:
        """Whether the head uses inducing inputs for ``n`` observations (more than ``inducing``)."""
        return 0 < len(self.inducing_index) < n

    def _eye(self, n: int, like: Tensor) -> Tensor:
        return torch.eye(n, dtype=torch.float64, device=like.device)

    def _exact(self, feats: Tensor, y: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(L, alpha, r)``: ``L L^T = K + noise I``, ``alpha = L^{-1} r``, ``r = y - mean``."""
        L = torch.linalg.cholesky(
            self.kernel(feats, feats) + self._noise() * self._eye(len(feats), feats)
        )
        r = y.double() - self.mean_constant.double()
        return L, torch.linalg.solve_triangular(L, r.unsqueeze(-1), upper=False).squeeze(-1), r

    def _sparse(self, feats: Tensor, y: Tensor) -> tuple[Tensor, ...]:
        """Titsias' factors ``(Z, L, M, L_B, c, r)`` with ``L L^T = K_mm``,
        ``M = A A^T = L^{-1} K_mn K_nm L^{-T} / sigma_n^2``, ``L_B L_B^T = I + M`` and
        ``c = L_B^{-1} A r / sigma_n``: every solve is ``m x m``, the one ``O(n m^2)``
        product is ``K_mn K_nm``."""
        Z, noise = feats[self.inducing_index], self._noise()
        m = Z.shape[0]
        L = torch.linalg.cholesky(self.kernel(Z, Z) + JITTER * self._eye(m, feats))
        K_mn = self.kernel(Z, feats)
        r = y.double() - self.mean_constant.double()
        half = torch.linalg.solve_triangular(L, K_mn @ K_mn.T, upper=False)
        M = (
            torch.linalg.solve_triangular(L, half.T, upper=False) / noise
        )  # L^-1 P L^-T, P symmetric
        M = 0.5 * (M + M.T)
        L_B = torch.linalg.cholesky(self._eye(m, feats) + M)
        Ar = torch.linalg.solve_triangular(L, (K_mn @ r).unsqueeze(-1), upper=False)
        c = torch.linalg.solve_triangular(L_B, Ar, upper=False).squeeze(-1) / noise
        return Z, L, M, L_B, c, r

    def marginal_likelihood_bound(self, rows: Tensor, y: Tensor) -> Tensor:
        """Per observation: the exact log marginal likelihood (``n <= inducing``), else
        Titsias' bound on it."""
        feats, n = self.features(rows), y.shape[0]
        if not self._sparse_for(n):
            L, alpha, _ = self._exact(feats, y)
            return (
                -0.5 * alpha.pow(2).sum() - torch.log(torch.diagonal(L)).sum()
            ) / n - 0.5 * math.log(2 * math.pi)
        _, _, M, L_B, c, r = self._sparse(feats, y)
        noise = self._noise()
        bound = (
            -0.5 * n * math.log(2 * math.pi)
            - torch.log(torch.diagonal(L_B)).sum()
            - 0.5 * n * torch.log(noise)
            - 0.5 * r.pow(2).sum() / noise
            + 0.5 * c.pow(2).sum()
            - 0.5
            * (n * self.outputscale / noise - torch.diagonal(M).sum())  # tr(K_nn - Q_nn) / noise
        )
        return bound / n

    # ------------------------------------------------------------------ Lightning
    def on_fit_start(self) -> None:
        if self._fitted_once and not self.warm_start:
            self._reinitialize()
        self._fitted_once = True

    def _reinitialize(self) -> None:
        for module in (self.curve_conv, *self.net):
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        with torch.no_grad():
            self.raw_lengthscale.fill_(_softplus_inverse(math.sqrt(self.hparams.features)))
            self.raw_outputscale.fill_(_softplus_inverse(1.0))
            self.raw_noise.fill_(_softplus_inverse(0.1))
            self.mean_constant.zero_()

    def training_step(self, batch: tuple[Tensor, ...], batch_idx: int) -> Tensor:
        rows, y = batch[0], batch[1].reshape(-1)
        if self.train_rows.shape != rows.shape or not torch.equal(self.train_rows, rows):
            self._keep(rows, y)
        return -self.marginal_likelihood_bound(rows, y).to(rows.dtype)

    def _keep(self, rows: Tensor, y: Tensor) -> None:
        """Keep the training data (prediction conditions on them) and draw the inducing
        observations from torch's global RNG (all of them when ``n <= inducing``)."""
        self.train_rows, self.train_y = rows.detach().clone(), y.detach().clone()
        n = rows.shape[0]
        index = (
            torch.arange(n)
            if n <= self.inducing
            else torch.randperm(n)[: self.inducing].sort().values
        )
        self.inducing_index = index.to(rows.device)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)

    # ------------------------------------------------------------------ prediction
    @torch.no_grad()
    def predict_mean_cov(self, rows: Tensor) -> tuple[Tensor, Tensor]:
        """The posterior of :math:`f` at ``rows`` (``n x width``): ``(mean (n), cov (n x n))``
        in float64, the units of the training targets (add :attr:`noise_var` for an
        observation).

        Raises:
            RuntimeError: before the model was fitted.
        """
        if self.train_y.numel() == 0:
            raise RuntimeError(
                "DeepKernelCurveGP was not fitted: trainer.fit it on (rows, y) first"
            )
        feats = self.features(self.train_rows)
        test = self.features(rows.to(self.train_rows))
        if not self._sparse_for(self.train_y.numel()):
            L, alpha, _ = self._exact(feats, self.train_y)
            v = torch.linalg.solve_triangular(L, self.kernel(feats, test), upper=False)
            mean = self.mean_constant.double() + v.T @ alpha
            cov = self.kernel(test, test) - v.T @ v
        else:
            Z, L, _, L_B, c, _ = self._sparse(feats, self.train_y)
            t1 = torch.linalg.solve_triangular(L, self.kernel(Z, test), upper=False)
            t2 = torch.linalg.solve_triangular(L_B, t1, upper=False)
            mean = self.mean_constant.double() + t2.T @ c
            cov = self.kernel(test, test) - t1.T @ t1 + t2.T @ t2
        return mean, 0.5 * (cov + cov.T)


__all__ = ["DeepKernelCurveGP"]
