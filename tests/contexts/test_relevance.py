"""Context relevance: the Gaussian KL, feature collapsing (SADCBO eqs. 4-5), the eta cut,
the top-value set (eq. 6) and HSIC (appendix C, eq. S5), checked against hand computations."""

import math
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.contexts.relevance import (
    collapse_divergences,
    eta_cut,
    gaussian_kl,
    hsic,
    hsic_scores,
    normalized_scores,
    predictive_moments,
    top_value_mask,
)
from dsbo.errors import ConfigError
from dsbo.surrogates import fit_surrogate

T = torch.double


def tensor(values):
    return torch.tensor(values, dtype=T)


# ---------------------------------------------------------------- gaussian_kl (eq. 4)
def test_kl_of_identical_gaussians_is_zero():
    mean, var = tensor([-1.0, 0.0, 3.5]), tensor([0.1, 1.0, 7.0])
    assert torch.equal(gaussian_kl(mean, var, mean, var), torch.zeros(3, dtype=T))


def test_kl_matches_the_closed_form_torch_and_monte_carlo():
    torch.manual_seed(0)
    # KL(N(0, 1) || N(1, 4)) = 1/2 [log 4 + (1 + 1) / 4 - 1]
    kl = float(gaussian_kl(tensor(0.0), tensor(1.0), tensor(1.0), tensor(4.0)))
    assert kl == pytest.approx(0.5 * (math.log(4.0) + 0.5 - 1.0), rel=1e-12)
    p, q = (
        torch.distributions.Normal(tensor(0.0), tensor(1.0)),
        torch.distributions.Normal(tensor(1.0), tensor(2.0)),
    )
    assert kl == pytest.approx(float(torch.distributions.kl_divergence(p, q)), rel=1e-12)
    # Monte Carlo E_p[log p - log q]: the order of the arguments matters (KL is asymmetric)
    samples = p.sample(torch.Size([200_000]))
    mc = float((p.log_prob(samples) - q.log_prob(samples)).mean())
    assert abs(mc - kl) < 0.01
    reverse = float(gaussian_kl(tensor(1.0), tensor(4.0), tensor(0.0), tensor(1.0)))
    assert abs(reverse - kl) > 0.1


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-10, 10),
    st.floats(1e-4, 1e2),
    st.floats(-10, 10),
    st.floats(1e-4, 1e2),
)
def test_kl_is_nonnegative(mean_p, var_p, mean_q, var_q):
    kl = gaussian_kl(tensor(mean_p), tensor(var_p), tensor(mean_q), tensor(var_q))
    assert float(kl) >= -1e-12


# ---------------------------------------------------------------- feature collapsing
@pytest.fixture(scope="module")
def collapse_model():
    """A GP fitted to y = sin(3 x0) + z1 on [0, 1]^3: z1 (dim 1) matters, z2 (dim 2) is inert."""
    warnings.simplefilter("ignore")
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(40, 3, generator=generator, dtype=T)
    y = torch.sin(3 * X[:, 0]) + X[:, 1]
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3], dtype=T)
    model = fit_surrogate("gp", X, y.unsqueeze(-1), bounds=bounds)
    return model, X, bounds


def test_collapsing_an_inert_context_has_near_zero_relevance(collapse_model):
    model, X, bounds = collapse_model
    r = collapse_divergences(model, X[:20], [1, 2], bounds)
    assert r.shape == (20, 2) and (r >= 0).all()
    scores = normalized_scores(r)
    assert float(scores.sum()) == pytest.approx(1.0, abs=1e-12)
    assert float(scores[1]) < 0.1 and float(scores[0]) > 0.9
    # sqrt-kl is the elementwise root of the same divergences
    assert torch.allclose(
        collapse_divergences(model, X[:20], [1, 2], bounds, distance="sqrt-kl"), r.sqrt()
    )


def test_collapse_divergences_are_the_kl_of_the_predictives(collapse_model):
    model, X, bounds = collapse_model
    points = X[:5]
    r = collapse_divergences(model, points, [1, 2], bounds, noise=True)
    with torch.no_grad():
        post = model.posterior(points, observation_noise=True)
        mean_p, var_p = post.mean.reshape(-1), post.variance.reshape(-1)
        for k, dim in enumerate([1, 2]):
            collapsed = points.clone()
            collapsed[:, dim] = 0.0  # the lower bound
            q = model.posterior(collapsed, observation_noise=True)
            expected = torch.distributions.kl_divergence(
                torch.distributions.Normal(mean_p, var_p.sqrt()),
                torch.distributions.Normal(q.mean.reshape(-1), q.variance.reshape(-1).sqrt()),
            )
            assert torch.allclose(r[:, k], expected, rtol=1e-6, atol=1e-9)
    # noise=False uses the latent f: a smaller variance, hence larger divergences
    latent = collapse_divergences(model, points, [1, 2], bounds, noise=False)
    assert (latent[:, 0] >= r[:, 0]).all()


def test_collapse_is_a_no_op_for_a_context_already_at_its_lower_bound(collapse_model):
    model, X, bounds = collapse_model
    points = X[:6].clone()
    points[:, 1] = bounds[0, 1]
    r = collapse_divergences(model, points, [1, 2], bounds)
    assert torch.equal(r[:, 0], torch.zeros(6, dtype=T))
    # and a collapse to a non-zero lower bound uses that bound, not 0
    shifted = bounds.clone()
    shifted[0, 1] = -0.5
    assert (collapse_divergences(model, points, [1], shifted)[:, 0] > 0).all()


def test_unknown_distance_is_refused(collapse_model):
    model, X, bounds = collapse_model
    with pytest.raises(ConfigError, match="distance"):
        collapse_divergences(model, X[:2], [1], bounds, distance="l2")


def test_predictive_moments_noise_adds_the_noise_variance(collapse_model):
    model, X, _ = collapse_model
    _, latent = predictive_moments(model, X[:3], noise=False)
    _, noisy = predictive_moments(model, X[:3], noise=True)
    assert (noisy > latent).all()
    # the added variance is the same (homoskedastic) noise at every point
    assert torch.allclose(noisy - latent, (noisy - latent)[0].expand(3), rtol=1e-6)


# ---------------------------------------------------------------- normalized scores (eq. 5)
def test_per_sample_and_average_first_differ_where_the_order_matters():
    r = tensor([[1.0, 0.0], [9.0, 1.0]])
    # per sample: rows [1, 0] and [0.9, 0.1], averaged -> [0.95, 0.05]
    assert torch.allclose(normalized_scores(r, "per-sample"), tensor([0.95, 0.05]), atol=1e-15)
    # average first: means [5, 0.5] normalized -> [10/11, 1/11]
    assert torch.allclose(
        normalized_scores(r, "average-first"), tensor([10 / 11, 1 / 11]), atol=1e-15
    )


def test_zero_rows_are_skipped_and_all_zero_is_uniform():
    r = tensor([[0.0, 0.0, 0.0], [1.0, 3.0, 0.0]])
    assert torch.allclose(normalized_scores(r), tensor([0.25, 0.75, 0.0]))
    assert torch.allclose(
        normalized_scores(torch.zeros(4, 3, dtype=T)), torch.full((3,), 1 / 3, dtype=T)
    )
    assert torch.allclose(
        normalized_scores(torch.zeros(4, 3, dtype=T), "average-first"),
        torch.full((3,), 1 / 3, dtype=T),
    )
    with pytest.raises(ConfigError, match="normalize"):
        normalized_scores(r, "mean")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.floats(0, 100), min_size=3, max_size=3), min_size=1, max_size=8),
    st.sampled_from(["per-sample", "average-first"]),
)
def test_scores_sum_to_one(rows, normalize):
    scores = normalized_scores(tensor(rows), normalize)
    assert float(scores.sum()) == pytest.approx(1.0, abs=1e-9) and (scores >= 0).all()


# ---------------------------------------------------------------- eta cut (Algorithm 1, line 7)
@pytest.mark.parametrize(
    "eta, kept", [(0.8, [1, 2]), (0.5, [1]), (0.81, [1, 2, 0]), (1.0, [1, 2, 0, 3]), (0.05, [1])]
)
def test_eta_cut_keeps_the_smallest_descending_prefix(eta, kept):
    assert eta_cut(tensor([0.1, 0.5, 0.3, 0.1]), eta) == kept


def test_eta_cut_with_zero_scores():
    assert eta_cut(tensor([0.5, 0.0, 0.5]), 1.0) == [0, 2]  # zero mass is not needed to reach eta
    assert eta_cut(tensor([0.0, 0.0]), 0.8) == [0, 1]  # no information: keep everything
    # unnormalized scores: the share, not the raw sum, is compared with eta
    assert eta_cut(tensor([1.0, 5.0, 3.0, 1.0]), 0.8) == [1, 2]


@pytest.mark.parametrize("eta", [0.0, -0.1, 1.5, 1.0000001])
def test_eta_outside_the_unit_interval_is_refused(eta):
    with pytest.raises(ConfigError, match="eta"):
        eta_cut(tensor([0.5, 0.5]), eta)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 10, allow_subnormal=False), min_size=1, max_size=8), st.floats(0.01, 1.0)
)
def test_eta_cut_is_the_smallest_prefix_reaching_eta(values, eta):
    scores = tensor(values)
    kept = eta_cut(scores, eta)
    total = float(scores.sum())
    if total <= 0:
        assert kept == list(range(len(values)))
        return
    kept_scores = [values[k] for k in kept]
    assert kept_scores == sorted(kept_scores, reverse=True)
    assert min(kept_scores) >= max([v for k, v in enumerate(values) if k not in kept], default=0.0)
    assert sum(kept_scores) >= eta * total - 1e-9 * total
    if len(kept) > 1:  # without its smallest member the kept set falls short of eta
        assert sum(kept_scores[:-1]) < eta * total + 1e-9 * total


# ---------------------------------------------------------------- top-value set (eq. 6)
def test_ratio_rule_is_y_over_y_best_when_the_minimum_is_zero():
    y = tensor([0.0, 0.3, 0.85, 1.0, 0.79, 0.8, 0.5, 0.95])
    mask = top_value_mask(y, 0.8, "ratio")
    assert (
        mask.tolist()
        == (y / y.max() >= 0.8).tolist()
        == [False, False, True, True, False, True, False, True]
    )
    # the ratio is scale free: y / y_best with y_best = 2
    assert top_value_mask(2 * y, 0.8, "ratio").tolist() == mask.tolist()
    # min-max scaled: an affine shift does not change the set
    assert top_value_mask(y - 3.0, 0.8, "ratio").tolist() == mask.tolist()
    assert top_value_mask(torch.ones(3, dtype=T), 0.8).all()  # all equal: every point is top


@pytest.mark.parametrize(
    "gamma, n, k", [(0.8, 10, 2), (0.75, 10, 3), (0.9, 7, 1), (0.0, 5, 5), (1.0, 5, 1), (0.5, 9, 5)]
)
def test_rank_rule_keeps_the_best_ceil_one_minus_gamma_n(gamma, n, k):
    y = torch.randperm(n, generator=torch.Generator().manual_seed(n)).to(T)
    mask = top_value_mask(y, gamma, "rank")
    assert int(mask.sum()) == k == max(1, math.ceil(round((1 - gamma) * n, 9)))
    if k < n:
        assert float(y[mask].min()) > float(y[~mask].max())


def test_rank_rule_floating_point_ceil():
    y = torch.arange(10, dtype=T)
    assert int(top_value_mask(y, 0.7, "rank").sum()) == 3  # ceil((1 - 0.7) * 10) = ceil(3) = 3


def test_top_value_mask_refuses_bad_settings():
    with pytest.raises(ConfigError, match="gamma"):
        top_value_mask(tensor([1.0, 2.0]), 1.2)
    with pytest.raises(ConfigError, match="top_set"):
        top_value_mask(tensor([1.0, 2.0]), 0.5, "quantile")


# ---------------------------------------------------------------- HSIC (appendix C, eq. S5)
def brute_force_hsic(a, b, bandwidth):
    """E[k l] + E[k] E[l] - 2 E_i[E_j k_ij E_k l_ik] with empirical means (triple sums)."""
    n = len(a)
    k = [[math.exp(-((a[i] - a[j]) ** 2) / (2 * bandwidth**2)) for j in range(n)] for i in range(n)]
    lin = [[b[i] * b[j] for j in range(n)] for i in range(n)]
    e_kl = sum(k[i][j] * lin[i][j] for i in range(n) for j in range(n)) / n**2
    e_k = sum(k[i][j] for i in range(n) for j in range(n)) / n**2
    e_l = sum(lin[i][j] for i in range(n) for j in range(n)) / n**2
    cross = sum(k[i][j] * lin[i][m] for i in range(n) for j in range(n) for m in range(n)) / n**3
    return e_kl + e_k * e_l - 2 * cross


@pytest.mark.parametrize("seed, n, bandwidth", [(0, 6, 0.3), (1, 9, 1.0), (2, 12, 0.05)])
def test_hsic_equals_the_triple_sum_of_eq_s5(seed, n, bandwidth):
    generator = torch.Generator().manual_seed(seed)
    a, b = (
        torch.randn(n, generator=generator, dtype=T),
        torch.randn(n, generator=generator, dtype=T),
    )
    expected = brute_force_hsic(a.tolist(), b.tolist(), bandwidth)
    assert abs(float(hsic(a, b, bandwidth)) - expected) < 1e-10
    indicator = (b > 0).to(T)
    assert (
        abs(
            float(hsic(a, indicator, bandwidth))
            - brute_force_hsic(a.tolist(), indicator.tolist(), bandwidth)
        )
        < 1e-10
    )


def test_hsic_is_near_zero_for_independent_and_larger_for_dependent_data():
    generator = torch.Generator().manual_seed(3)
    a = torch.rand(300, generator=generator, dtype=T)
    independent = (torch.rand(300, generator=generator, dtype=T) > 0.5).to(T)
    dependent = (a > 0.5).to(T)
    h_ind, h_dep = float(hsic(a, independent)), float(hsic(a, dependent))
    assert h_ind >= -1e-12 and h_dep > 20 * h_ind and h_ind < 2e-3
    # a constant indicator carries no information at all
    assert abs(float(hsic(a, torch.ones(300, dtype=T)))) < 1e-12


def test_hsic_scores_rank_the_context_that_decides_the_top_set_first():
    generator = torch.Generator().manual_seed(4)
    Z = torch.rand(80, 3, generator=generator, dtype=T)
    y = Z[:, 1] ** 2  # only z1 decides whether y is in the top set
    scores = hsic_scores(Z, y, gamma=0.8)
    assert scores.shape == (3,) and (scores >= 0).all()
    assert float(scores[1]) > 5 * max(float(scores[0]), float(scores[2]))
    assert eta_cut(scores / scores.sum(), 0.8) == [1]
