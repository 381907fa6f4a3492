"""SADCBO's phase switch (sec. 3.2, eqs. 11-12): the closed-form KL against exact GP posteriors
with fixed hyperparameters, the regret-bound terms by hand, and the median rule's window."""

import math
import statistics
import warnings

import pytest
import torch
from botorch.models import SingleTaskGP

from dsbo.acquisition import OptimizerSettings
from dsbo.contexts.switching import (
    MEDIAN_FRACTION,
    MEDIAN_WINDOW,
    joint_moments,
    noise_variance,
    regret_bound_check,
)

T = torch.double
CHEAP = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20)
NOISE, LENGTHSCALE, MEAN = 0.01, 0.3, 0.2
BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=T)


def fixed_gp(X, y):
    """An exact GP with fixed hyperparameters, no input or outcome transform."""
    model = SingleTaskGP(X, y.unsqueeze(-1), outcome_transform=None)
    model.likelihood.noise = NOISE
    model.covar_module.lengthscale = LENGTHSCALE
    model.mean_module.constant = MEAN
    return model.eval()


@pytest.fixture
def data():
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(7, 2, generator=generator, dtype=T)
    y = torch.sin(4 * X[:, 0]) + X[:, 1] + 0.05 * torch.randn(7, generator=generator, dtype=T)
    y[-1] = y.max() + 0.3  # the newest point is the best: v*_t != v*_{t-1}
    return X, y


def models(X, y):
    warnings.simplefilter("ignore")
    return fixed_gp(X, y), fixed_gp(X[:-1], y[:-1])


def test_fixed_hyperparameters_are_the_same_as_conditioning(data):
    X, y = data
    model, previous = models(X, y)
    with torch.no_grad():
        previous.posterior(X[:1])  # builds the caches conditioning needs
    conditioned = previous.condition_on_observations(X[-1:], y[-1:].unsqueeze(-1))
    probe = torch.rand(5, 2, generator=torch.Generator().manual_seed(1), dtype=T)
    with torch.no_grad():
        assert torch.allclose(
            model.posterior(probe).mean, conditioned.posterior(probe).mean, atol=1e-9
        )
        assert torch.allclose(
            model.posterior(probe).variance, conditioned.posterior(probe).variance, atol=1e-9
        )
    assert noise_variance(previous, X[-1]) == pytest.approx(NOISE, rel=1e-6)


def test_closed_form_kl_is_the_kl_of_the_marginals_of_f(data):
    X, y = data
    model, previous = models(X, y)
    check = regret_bound_check(
        model, previous, X, y, BOUNDS, beta=2.0, delta=0.05, optimizer=CHEAP, seed=0
    )
    assert check.rule == "regret-bound"
    with torch.no_grad():
        new, old = model.posterior(X[-1:]), previous.posterior(X[-1:])
        p = torch.distributions.Normal(new.mean.reshape(()), new.variance.reshape(()).sqrt())
        q = torch.distributions.Normal(old.mean.reshape(()), old.variance.reshape(()).sqrt())
    expected = float(torch.distributions.kl_divergence(p, q))
    assert expected > 0.1  # a surprising observation: a clearly non-trivial KL
    assert check.kl == pytest.approx(expected, rel=1e-7)
    # the same closed form by hand from the prior-to-posterior update at v_t
    s, mu = float(old.variance), float(old.mean)
    var_post, mean_post = s * NOISE / (s + NOISE), mu + s / (s + NOISE) * (float(y[-1]) - mu)
    assert float(new.variance) == pytest.approx(var_post, rel=1e-7)
    assert float(new.mean) == pytest.approx(mean_post, rel=1e-7)


def test_regret_bound_terms_by_hand(data):
    X, y = data
    model, previous = models(X, y)
    beta, delta = 2.0, 0.05
    check = regret_bound_check(
        model, previous, X, y, BOUNDS, beta=beta, delta=delta, optimizer=CHEAP, seed=0
    )
    best_new, best_old = int(y.argmax()), int(y[:-1].argmax())
    assert best_new == 6 and best_old != 6
    with torch.no_grad():
        joint = model.posterior(X[[best_new, best_old]])
        mean, cov = joint.mean.reshape(-1), joint.mvn.covariance_matrix
        mu_old_best = float(previous.posterior(X[best_old : best_old + 1]).mean)
        var_old_new = float(previous.posterior(X[-1:]).variance)
        var_old_at_best = float(previous.posterior(X[best_new : best_new + 1]).variance)
        lcb = model.posterior(X[:-1])
        max_lcb = float(
            (lcb.mean.reshape(-1) - math.sqrt(beta) * lcb.variance.reshape(-1).sqrt()).max()
        )
    delta_mu = float(mean[0]) - mu_old_best
    v = math.sqrt(float(cov[0, 0] - 2 * cov[0, 1] + cov[1, 1]))
    g = delta_mu / v
    phi = math.exp(-g * g / 2) / math.sqrt(2 * math.pi)
    Phi = 0.5 * (1 + math.erf(g / math.sqrt(2)))
    kappa = check.kappa
    # kappa = max_V UCB - max_{D_{t-1}} LCB >= UCB at any data point - max LCB
    with torch.no_grad():
        ucb_points = model.posterior(X)
        ucb = (
            ucb_points.mean.reshape(-1) + math.sqrt(beta) * ucb_points.variance.reshape(-1).sqrt()
        ).max()
    assert kappa >= float(ucb) - max_lcb - 1e-3
    expected_dr = v * (phi + g * Phi) + abs(delta_mu) + kappa * math.sqrt(check.kl / 2)  # eq. (11)
    assert check.delta_r == pytest.approx(expected_dr, rel=1e-9)
    threshold = (
        (math.sqrt(var_old_at_best) + kappa / 2)
        * math.sqrt(var_old_new)
        * math.sqrt(NOISE)
        * math.sqrt(-2 * math.log(delta))
        / (var_old_new + NOISE)
    )  # eq. (12)
    assert check.threshold == pytest.approx(threshold, rel=1e-7)
    assert check.fired == (check.delta_r <= check.threshold)
    assert set(check.as_dict()) == {"delta_r", "threshold", "rule", "fired", "kappa", "kl"}


def test_joint_moments_have_the_cross_covariance(data):
    X, y = data
    model, _ = models(X, y)
    mean, cov = joint_moments(model, X[:3])
    with torch.no_grad():
        dense = model.posterior(X[:3]).mvn.covariance_matrix
    assert torch.allclose(cov, dense) and cov.shape == (3, 3) and float(cov[0, 1]) != 0.0


def median_check(data, history):
    X, y = data
    model, previous = models(X, y)
    return regret_bound_check(
        model,
        previous,
        X,
        y,
        BOUNDS,
        beta=2.0,
        delta=0.05,
        optimizer=CHEAP,
        seed=0,
        rule="median",
        history=history,
    )


def test_median_rule_fires_with_twenty_values_and_a_small_newest(data):
    assert (MEDIAN_WINDOW, MEDIAN_FRACTION) == (20, 0.1)
    check = median_check(data, [1e6] * 19)
    assert check.rule == "median" and check.fired
    assert check.threshold == pytest.approx(0.1 * statistics.median([1e6] * 19 + [check.delta_r]))
    # same values, but only 6 dR exist: never
    assert not median_check(data, [1e6] * 5).fired
    # 20 values, but the newest is not below a tenth of their median
    assert not median_check(data, [1e-9] * 19).fired


def test_median_rule_uses_the_first_twenty_values(data):
    fired = median_check(data, [1e6] * 20 + [1e-9] * 30)
    assert fired.fired and fired.threshold == pytest.approx(1e5)
    not_fired = median_check(data, [1e-9] * 20 + [1e6] * 30)
    assert not not_fired.fired and not_fired.threshold == pytest.approx(1e-10)
