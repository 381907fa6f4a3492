"""The ``map-saas`` surrogate (BONSAI's ensemble MAP-SAAS GP): determinism and options."""

from __future__ import annotations

import torch
from botorch.models.map_saas import EnsembleMapSaasSingleTaskGP
from botorch.posteriors.fully_bayesian import GaussianMixturePosterior

from dsbo.surrogates import fit_surrogate
from dsbo.surrogates.gp import draw_saas_taus

from .helpers import make_3d, posterior_mean


def _fit(**options):
    data = make_3d(n=12)
    return fit_surrogate({"name": "map-saas", **options}, data.X, data.Y, bounds=data.bounds), data


def _same_state(m1, m2) -> bool:
    s1, s2 = m1.state_dict(), m2.state_dict()
    return s1.keys() == s2.keys() and all(torch.equal(s1[k], s2[k]) for k in s1)


def test_deterministic_under_torch_manual_seed():
    torch.manual_seed(123)
    m1, data = _fit()
    torch.manual_seed(123)
    m2, _ = _fit()
    assert torch.equal(m1.taus, m2.taus)
    assert _same_state(m1, m2)
    assert torch.equal(posterior_mean(m1, data.X_test), posterior_mean(m2, data.X_test))
    torch.manual_seed(124)
    m3, _ = _fit()
    assert not torch.equal(m1.taus, m3.taus)


def test_seed_option_is_independent_of_and_leaves_global_rng():
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    m1, data = _fit(seed=7)
    assert torch.equal(torch.random.get_rng_state(), state)  # global stream untouched
    torch.manual_seed(999)
    m2, _ = _fit(seed=7)
    assert _same_state(m1, m2)
    m3, _ = _fit(seed=8)
    assert not torch.equal(m1.taus, m3.taus)


def test_num_taus_and_mixture_posterior():
    torch.manual_seed(0)
    model, data = _fit(num_taus=3)
    assert isinstance(model, EnsembleMapSaasSingleTaskGP)
    assert model.taus.shape == (3,) and (model.taus > 0).all()
    post = model.posterior(data.X_test[:5])
    assert isinstance(post, GaussianMixturePosterior)
    assert post.mean.shape == (3, 5, 1)
    assert post.mixture_mean.shape == (5, 1)


def test_taus_follow_half_cauchy_prior():
    g = torch.Generator().manual_seed(0)
    taus = draw_saas_taus(20_000, generator=g)
    assert taus.dtype == torch.double and (taus > 0).all()
    # The median of HalfCauchy(0.1) is 0.1.
    assert abs(taus.median().item() - 0.1) < 0.005


def test_fixed_noise_ensemble():
    data = make_3d(n=12)
    Yvar = torch.full_like(data.Y, 1e-4)
    torch.manual_seed(0)
    model = fit_surrogate("map-saas", data.X, data.Y, bounds=data.bounds, Yvar=Yvar)
    assert torch.allclose(
        model.likelihood.noise, (Yvar.squeeze(-1) / data.Y.std() ** 2).expand(4, -1)
    )
    assert (posterior_mean(model, data.X) - data.Y).abs().max() <= 0.05 * data.Y.std()


def test_member_objective_is_each_members_own_log_posterior():
    """Member m's value = its exact log marginal likelihood + its own priors' log densities:
    compared with a single-member model built from that member's tau and parameters."""
    from botorch.models.transforms.outcome import Standardize

    from dsbo.surrogates.gp import _lengthscale_kernel, map_saas_member_objective

    torch.manual_seed(0)
    model, data = _fit(num_taus=3, fit_restarts=0)
    values = map_saas_member_objective(model)
    assert values.shape == (3,) and torch.isfinite(values).all()
    for m in range(3):
        single = EnsembleMapSaasSingleTaskGP(
            data.X,
            data.Y,
            num_taus=1,
            taus=model.taus[m : m + 1],
            input_transform=model.input_transform,
            outcome_transform=Standardize(m=1, batch_shape=torch.Size([1])),
        )
        with torch.no_grad():
            for p, q in zip(single.parameters(), model.parameters(), strict=True):
                p.copy_(q[m : m + 1])
        assert torch.allclose(
            _lengthscale_kernel(single).lengthscale,
            _lengthscale_kernel(model).lengthscale[m : m + 1],
        )
        assert torch.allclose(
            map_saas_member_objective(single), values[m : m + 1], rtol=1e-6, atol=1e-6
        )


def test_restarts_never_lower_any_members_objective():
    from dsbo.surrogates.gp import map_saas_member_objective

    torch.manual_seed(3)
    single, data = _fit(fit_restarts=0)
    torch.manual_seed(3)
    restarted, _ = _fit(fit_restarts=3)
    assert torch.equal(single.taus, restarted.taus)  # the same ensemble, fitted better
    assert (map_saas_member_objective(restarted) >= map_saas_member_objective(single) - 1e-9).all()
    post = restarted.posterior(data.X_test[:4])  # the copied members predict (no stale caches)
    assert torch.isfinite(post.mixture_mean).all()


def test_restarts_find_the_relevant_inputs_the_default_start_misses():
    """Branin in 50-D, 30 random points (data set 1 of the gp.py docstring's study): from the
    default start every member switches Branin's two inputs off; with restarts they are the
    two shortest lengthscales and the log posterior per point rises from about -1.7."""
    from dsbo.problems import get_problem
    from dsbo.surrogates.gp import _lengthscale_kernel, map_saas_member_objective

    problem = get_problem("branin-50d")
    lo, hi = problem.bounds
    torch.manual_seed(1)
    X = lo + (hi - lo) * torch.rand(30, 50, dtype=torch.double)
    Y = problem.evaluate(X, noise=False)
    per_point = {}
    for restarts in (0, 4):
        torch.manual_seed(101)
        model = fit_surrogate(
            {"name": "map-saas", "fit_restarts": restarts}, X, Y, bounds=problem.bounds
        )
        per_point[restarts] = map_saas_member_objective(model) / 30
        lengthscales = _lengthscale_kernel(model).lengthscale.detach().squeeze(-2)
        shortest = set(torch.argsort(lengthscales.min(dim=0).values)[:2].tolist())
        if restarts:
            assert shortest == set(problem.relevant_dims)
    assert (per_point[0] < -1.5).all() and (per_point[4] > -0.6).all()
