"""The ``saasbo`` surrogate: fully Bayesian SAAS GP fitted by NUTS (optional JAX/NumPyro extra).

The first NUTS fit in a process costs ~15-20 s on 2 CPU cores whatever the settings (JAX
compiles NumPyro's initialization and sampler), so the module fits once and reuses the model.
"""

from __future__ import annotations

import sys

import pytest
import torch

from dsbo.errors import ConfigError
from dsbo.surrogates import fit_surrogate

from .helpers import assert_fits, make_1d, make_3d

TINY_NUTS = {"warmup_steps": 32, "num_samples": 32, "thinning": 8, "max_tree_depth": 4}


def test_missing_extra_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpyro", None)  # makes `import numpyro` fail
    data = make_1d(n=5)
    with pytest.raises(ConfigError, match=r'pip install "dsbo\[saas\]"') as info:
        fit_surrogate("saasbo", data.X, data.Y, bounds=data.bounds)
    assert "NumPyro" in str(info.value) and "saasbo" in str(info.value)


@pytest.fixture(scope="module")
def saas_fit():
    pytest.importorskip("numpyro")
    pytest.importorskip("jax")
    data = make_3d(n=15)
    model = fit_surrogate({"name": "saasbo", **TINY_NUTS}, data.X, data.Y, bounds=data.bounds)
    return model, data


@pytest.mark.slow
def test_nuts_fit_approximates_smooth_function(saas_fit):
    from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP
    from botorch.posteriors.fully_bayesian import GaussianMixturePosterior

    model, data = saas_fit
    assert isinstance(model, SaasFullyBayesianSingleTaskGP)
    assert model.num_mcmc_samples == TINY_NUTS["num_samples"] // TINY_NUTS["thinning"]
    post = model.posterior(data.X_test[:5])
    assert isinstance(post, GaussianMixturePosterior)
    assert post.mixture_mean.shape == (5, 1)
    assert torch.isfinite(post.mixture_variance).all()
    assert_fits(model, data, interp_tol=0.1, test_ratio=0.3)
