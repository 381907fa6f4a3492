r"""SimpleSMB and PosteriorSMB trained by gradient descent match Propositions 3.1 and 3.2.

Setting (thesis ch. 3, proofs in 3.6, minus signs restored): training inputs
:math:`\mathcal X` (n points), targets :math:`\mathcal Y`, noise variance :math:`\sigma^2`,
scale :math:`\nu`, :math:`A = \Theta_{\mathcal X\mathcal X} + \sigma^2 I`. In the
infinite-width limit GD on :math:`\sum_i (y_i + \nu\epsilon_i - \nu g(x_i, \theta))^2 +
\sigma^2\nu^2\|\theta - \theta_0\|^2` trains the linearized network to

.. math::

    \tilde f(x) = \nu g_0(x) + \Theta_{x\mathcal X} A^{-1}
        (\mathcal Y + \nu\epsilon - \nu g_0(\mathcal X)),

with :math:`g_0 = f(\cdot, \theta_0)` (SimpleSMB) or :math:`f(\cdot, \theta_0) + \delta`
(PosteriorSMB), :math:`g_0 \sim GP(0, P)` and :math:`\epsilon \sim N(0, \sigma^2 I)`
independent. Hence, over the random initialization and target noise,

.. math::

    \mu(x) &= \Theta_{x\mathcal X} A^{-1} \mathcal Y, \\
    \operatorname{Cov}(x, x') &= \nu^2 \big[P_{xx'} - \Theta_{x\mathcal X} A^{-1} P_{\mathcal X x'}
        - P_{x\mathcal X} A^{-1} \Theta_{\mathcal X x'}
        + \Theta_{x\mathcal X} A^{-1} (P_{\mathcal X\mathcal X} + \sigma^2 I) A^{-1}
          \Theta_{\mathcal X x'}\big].

* Proposition 3.1 (SimpleSMB): :math:`P = \mathcal K^{NN}`.
* Proposition 3.2 (PosteriorSMB, final bias random): :math:`\delta` has covariance
  :math:`\Theta - \mathcal K^{NN}` (gradients of all but the last layer), so :math:`P = \Theta`
  and the covariance collapses to :math:`\nu^2(\Theta_{xx'} - \Theta_{x\mathcal X} A^{-1}
  \Theta_{\mathcal X x'})`, the NTK-GP posterior.
* With ``final_bias="zero"`` the output bias contributes nothing at initialization, so
  PosteriorSMB's :math:`P = \Theta - \sigma_b^2` (the general formula still applies).

300 members in one module (width 1024, tanh, ``gamma = 1``, 1-D input, 5 training points,
:math:`\sigma^2 = 0.1`, :math:`\nu = 1`, full-batch SGD = plain GD, float64) are compared at
three test points: the member mean within 0.15 formula standard deviations, the member
variance within 0.92-1.15 of the formula (the Monte-Carlo standard errors with 300 members
are 0.058 sd and 8%). Measured: SimpleSMB z = (0.075, 0.032, -0.004), variance ratios
(1.033, 0.989, 1.010); PosteriorSMB z = (-0.074, -0.028, 0.012), ratios (0.990, 1.031,
1.070); the same to 3 decimals with 600 steps at half the step size (converged). About 16 s
per test on one thread, hence ``slow``.
"""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo.surrogates.ntk import neural_kernels
from dsbo_zoo.smb import PosteriorSMB, SimpleSMB

X_TRAIN = torch.tensor([[-1.0], [-0.4], [0.1], [0.6], [1.1]], dtype=torch.double)
Y_TRAIN = torch.tensor([0.3, -0.5, 0.2, 0.9, 0.4], dtype=torch.double)
X_TEST = torch.tensor([[-1.6], [0.35], [2.0]], dtype=torch.double)
NOISE_VAR, NU, GAMMA, WIDTH, MEMBERS = 0.1, 1.0, 1.0, 1024, 300
STEPS, LR = 300, 0.1  # GD converges: residuals shrink by >= 1 - 2 LR sigma^2 per step


def predicted(kind: str, final_bias: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance at X_TEST from the formulas of the module docstring."""
    kw = dict(depth=1, activation="tanh", sigma_w=GAMMA, sigma_b=GAMMA, final_bias=final_bias)
    X = torch.cat([X_TRAIN, X_TEST])
    K, T = neural_kernels(X, X, **kw)
    if kind == "simple":
        P = K
    else:  # f + delta: K^NN + (Theta - Sigma^(L+1)), Sigma^(L+1) including sigma_b^2
        P = T - (GAMMA**2 if final_bias == "zero" else 0.0)
    n = len(X_TRAIN)
    A = T[:n, :n] + NOISE_VAR * torch.eye(n, dtype=torch.double)
    B = torch.linalg.solve(A, T[:n, n:]).T  # Theta_xX A^-1
    mean = B @ Y_TRAIN
    cov = P[n:, n:] - B @ P[:n, n:] - P[n:, :n] @ B.T
    cov = cov + B @ (P[:n, :n] + NOISE_VAR * torch.eye(n, dtype=torch.double)) @ B.T
    return mean, NU**2 * cov.diagonal()


def trained_draws(cls, final_bias: str, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    smb = cls(
        1,
        num_samples=MEMBERS,
        width=WIDTH,
        depth=1,
        activation="tanh",
        gamma=GAMMA,
        final_bias=final_bias,
        noise_var=NOISE_VAR,
        nu=NU,
        lr=LR,
        optimizer="sgd",
    ).double()
    data = TensorDataset(X_TRAIN, Y_TRAIN, torch.arange(len(Y_TRAIN)))
    trainer = pl.Trainer(
        max_epochs=STEPS,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(smb, DataLoader(data, batch_size=len(Y_TRAIN)))
    with torch.no_grad():
        return smb(X_TEST)  # members x test points


def check(draws: torch.Tensor, kind: str, final_bias: str) -> None:
    mean, var = predicted(kind, final_bias)
    sd = var.sqrt()
    z = (draws.mean(0) - mean) / sd
    ratio = draws.var(0) / var
    assert (z.abs() < 0.15).all(), (kind, final_bias, z, ratio)
    assert ((ratio > 0.92) & (ratio < 1.15)).all(), (kind, final_bias, z, ratio)


@pytest.mark.slow
def test_simple_smb_is_proposition_3_1():
    check(trained_draws(SimpleSMB, "zero", seed=0), "simple", "zero")


@pytest.mark.slow
def test_posterior_smb_is_proposition_3_2():
    check(trained_draws(PosteriorSMB, "random", seed=1), "posterior", "random")
