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
