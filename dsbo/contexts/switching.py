r"""When SADCBO stops only observing contexts and starts optimizing them (sec. 3.2, app. B).

The switch is the BO stopping criterion of Ishibashi et al. (AISTATS 2023) applied to the
observational phase. After each evaluation, with ``v*_t`` the best observed point of ``D_t``,
``Delta mu* = mu_t(v*_t) - mu_{t-1}(v*_{t-1})``,
``v = sqrt(sigma_t^2(v*_t) - 2 Sigma_t(v*_t, v*_{t-1}) + sigma_t^2(v*_{t-1}))`` and
``g = Delta mu* / v``, the change of the expected minimum simple regret is bounded by

    dR_t = v (phi(g) + g Phi(g)) + |Delta mu*| + kappa sqrt(KL(p_t || p_{t-1}) / 2)        (11)

and the phase switches when ``dR_t <= s_t`` with

    s_t = (sigma_{t-1}(v*_t) + kappa / 2) sigma_{t-1}(v_t) sigma sqrt(-2 log delta)
          / (sigma_{t-1}^2(v_t) + sigma^2)                                               (12)

``v_t`` the newest point, ``sigma^2`` the noise variance. ``kappa = max_V UCB_t - max_{D_{t-1}}
LCB_t`` bounds the simple regret (Makarova et al. 2022, sec. 3.2). The paper's eq. (S1),
appendix B, prints the two maxima swapped (``max_{D_{t-1}} UCB - max_V LCB``), which is not an
upper bound of the regret; the order here is Makarova et al.'s, as in the authors' code.
For fixed hyperparameters the KL between successive GP posteriors has the closed form of
Ishibashi et al. (it depends only on the new point)

    KL = 1/2 [log(1 + s / sigma^2) - s / (s + sigma^2) + s (y_t - mu_{t-1}(v_t))^2 / (s + sigma^2)^2],

``s = sigma_{t-1}^2(v_t)``; it equals the KL of the two marginals of ``f(v_t)``.

What needs an exact GP: ``Sigma_t`` (a joint posterior covariance) and ``sigma^2 > 0`` (a
noise model). GPs, MAP-SAAS (mixture moments) and NeuralLinTS have both. A surrogate without
a noise variance (NeuralUCB, ensembles, SimpleSMB) cannot evaluate eq. (12) (``s_t = 0``):
it uses the KL of the two marginals at ``v_t`` in eq. (11) and the **median rule** of the
authors' code instead, which is also an option for every surrogate: switch once at least
``20`` values of ``dR`` exist and the newest is below ``0.1 x`` the median of the first
``20`` (Ishibashi et al., end of sec. 4.3).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from botorch.acquisition.analytic import UpperConfidenceBound
from botorch.models.model import Model
from botorch.posteriors.fully_bayesian import GaussianMixturePosterior
from torch import Tensor
from torch.distributions import Normal

from dsbo.acquisition.base import OptimizerSettings
from dsbo.contexts.relevance import gaussian_kl, predictive_moments

SWITCH_RULES = ("regret-bound", "median")
#: The median rule: values of dR needed, and the fraction of their median to fall below.
MEDIAN_WINDOW, MEDIAN_FRACTION = 20, 0.1
#: A noise variance below this (in the output's units squared) counts as no noise model.
NO_NOISE = 1e-10


@dataclass
class SwitchCheck:
    """One evaluation of the switching rule."""

    delta_r: float
    threshold: float
    rule: str
    fired: bool
    kappa: float
    kl: float

    def as_dict(self) -> dict[str, float | str | bool]:
        return {
            "delta_r": self.delta_r,
            "threshold": self.threshold,
            "rule": self.rule,
            "fired": self.fired,
            "kappa": self.kappa,
            "kl": self.kl,
        }


def joint_moments(model: Model, X: Tensor) -> tuple[Tensor, Tensor]:
    """Mean (``n``) and covariance (``n x n``) of the latent posterior at ``X``; a posterior
    without a joint covariance over its points gets the diagonal of its variances."""
    n = X.shape[0]
    with torch.no_grad():
        posterior = model.posterior(X)
        cov = (
            posterior.mixture_covariance_matrix
            if isinstance(posterior, GaussianMixturePosterior)
            else None
        )
        if cov is None and getattr(posterior, "mvn", None) is not None:
            cov = posterior.mvn.covariance_matrix
        if cov is not None:
            cov = cov.to_dense() if hasattr(cov, "to_dense") else cov
            if cov.numel() == n * n:  # a covariance over the n points (not over outputs)
                mean, _ = predictive_moments(model, X)
                return mean, cov.reshape(n, n)
    mean, var = predictive_moments(model, X)
    return mean, torch.diag(var)


def noise_variance(model: Model, x: Tensor) -> float:
    """The observation-noise variance the model adds at ``x`` (0 if it has no noise model)."""
    try:
        _, with_noise = predictive_moments(model, x.reshape(1, -1), noise=True)
    except Exception:  # noqa: BLE001 - a model that rejects observation_noise has none
        return 0.0
    _, latent = predictive_moments(model, x.reshape(1, -1))
    return max(float(with_noise - latent), 0.0)


def regret_bound_check(
    model: Model,
    previous: Model,
    X: Tensor,
    y: Tensor,
    bounds: Tensor,
    beta: float,
    delta: float,
    optimizer: OptimizerSettings,
    seed: int,
    rule: str = "regret-bound",
    history: Sequence[float] = (),
) -> SwitchCheck:
    """Evaluate the switch after the newest observation ``(X[-1], y[-1])``.

    Args:
        model: The full surrogate fitted on all ``n`` points ``X`` (``n x D``), ``y`` (``n``).
        previous: The full surrogate fitted on the first ``n - 1``.
        bounds: ``2 x D`` box for ``max_V UCB``.
        beta: UCB's ``beta`` (``mu + sqrt(beta) sigma``) in ``kappa``.
        delta: The confidence ``1 - delta`` of the bound.
        optimizer: Settings to maximize UCB over the box.
        rule: ``regret-bound`` (eq. 12) or ``median``; without a noise model the median rule
            is used whatever ``rule`` says (recorded in the check).
        history: Earlier values of ``dR`` (for the median rule).
    """
    best_new, best_old = int(y.argmax()), int(y[:-1].argmax())
    pair = X[[best_new, best_old]]
    mean, cov = joint_moments(model, pair)
    mean_old_best, _ = predictive_moments(previous, X[best_old : best_old + 1])
    delta_mu = float(mean[0] - mean_old_best[0])
    v = math.sqrt(max(float(cov[0, 0] - 2 * cov[0, 1] + cov[1, 1]), 1e-16))
    g = torch.tensor(delta_mu / v, dtype=torch.double)
    normal = Normal(torch.tensor(0.0, dtype=torch.double), torch.tensor(1.0, dtype=torch.double))
    expected_gap = v * float(normal.log_prob(g).exp() + g * normal.cdf(g))

    ucb = UpperConfidenceBound(model, beta=beta)
    _, max_ucb = optimizer.maximize(ucb, bounds, q=1, seed=seed)
    m_prev, var_prev = predictive_moments(model, X[:-1])
    kappa = float(max_ucb) - float((m_prev - math.sqrt(beta) * var_prev.sqrt()).max())

    x_new = X[-1:]
    mu_old, s_old = predictive_moments(previous, x_new)
    sigma2 = noise_variance(previous, x_new[0])
    if sigma2 > NO_NOISE:
        s = float(s_old)
        kl = 0.5 * (
            math.log1p(s / sigma2)
            - s / (s + sigma2)
            + s * float(y[-1] - mu_old) ** 2 / (s + sigma2) ** 2
        )
    else:
        mu_new, s_new = predictive_moments(model, x_new)
        kl = float(gaussian_kl(mu_new, s_new, mu_old, s_old))
        rule = "median"
    delta_r = expected_gap + abs(delta_mu) + kappa * math.sqrt(max(kl, 0.0) / 2)
    if rule == "regret-bound":
        _, var_old_at_best = predictive_moments(previous, X[best_new : best_new + 1])
        s = float(s_old)
        threshold = (
            (math.sqrt(float(var_old_at_best)) + kappa / 2)
            * math.sqrt(s)
            * math.sqrt(sigma2)
            * math.sqrt(-2 * math.log(delta))
            / (s + sigma2)
        )
        fired = delta_r <= threshold
    else:
        window = [*history, delta_r][:MEDIAN_WINDOW]
        threshold = MEDIAN_FRACTION * statistics.median(window)
        fired = len(history) + 1 >= MEDIAN_WINDOW and delta_r < threshold
    return SwitchCheck(
        delta_r=delta_r, threshold=threshold, rule=rule, fired=bool(fired), kappa=kappa, kl=kl
    )
