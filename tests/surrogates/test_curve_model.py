"""CurveModel (dsbo.surrogates.curve_model): the noise an observation adds to the posterior of
the curve value, per row for the power-law ensemble, one value for the deep-kernel GP."""

from __future__ import annotations

import pytest
import torch

from dsbo.surrogates.curve_model import CurveSurrogate

T = 6


def _data():
    g = torch.Generator().manual_seed(0)
    configs = torch.rand(10, 2, generator=g)
    tau = torch.arange(1, T + 1) / T
    curves = [
        (-(c[0] + 0.5 * tau.pow(-0.5)) + 0.05 * torch.randn(T, generator=g))[: 2 + i % 5].tolist()
        for i, c in enumerate(configs)
    ]
    return configs, curves


@pytest.mark.parametrize("name", ["power-law-ensemble", "deep-kernel-gp"])
def test_observation_noise_adds_the_modules_noise_to_the_noise_free_posterior(name):
    torch.manual_seed(0)
    configs, curves = _data()
    surrogate = CurveSurrogate(name, 2, T, epochs=20)
    model = surrogate.fit(configs, curves)
    X = torch.cat(
        [
            torch.rand(3, 2, generator=torch.Generator().manual_seed(1)),
            torch.tensor([[T], [2.0], [T]]),
        ],
        -1,
    )
    latent = model.posterior(X)  # one t-batch of q = 3
    observed = model.posterior(X, observation_noise=True)
    torch.testing.assert_close(observed.mean, latent.mean)
    added = observed.mvn.covariance_matrix - latent.mvn.covariance_matrix
    module = surrogate.module
    with torch.no_grad():
        rows = model.rows(X).to(next(module.parameters()))
        noise = (
            module.noise_variance(rows).double()
            if name == "power-law-ensemble"
            else torch.full((3,), module.noise_var)
        )
    # in the units of the curves: the standardized noise times the scale squared
    torch.testing.assert_close(added, torch.diag(noise * model.scale**2), rtol=1e-5, atol=1e-10)
    assert (noise > 0).all()
    if name == "power-law-ensemble":  # heteroscedastic: the noise depends on the configuration
        assert noise.max() > noise.min()
    # the members' disagreement alone: well below an observation's variance at a new point
    batched = model.posterior(X.unsqueeze(-2), observation_noise=True)
    torch.testing.assert_close(batched.variance.reshape(-1), observed.variance.reshape(-1))
