"""The ``gp`` surrogate: kernel choice, fixed noise, and normalization applied exactly once."""

from __future__ import annotations

import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel, RBFKernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from gpytorch.priors import LogNormalPrior

from dsbo.surrogates import fit_surrogate

from .helpers import make_1d, make_3d, posterior_mean, posterior_variance


@pytest.mark.parametrize(
    "options, kernel_type",
    [({}, MaternKernel), ({"kernel": "matern52"}, MaternKernel), ({"kernel": "rbf"}, RBFKernel)],
)
def test_kernel_choice_is_honored(options, kernel_type, data_3d):
    model = fit_surrogate({"name": "gp", **options}, data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    assert isinstance(model, SingleTaskGP)
    kernel = model.covar_module
    assert type(kernel) is kernel_type
    if kernel_type is MaternKernel:
        assert kernel.nu == 2.5
    assert kernel.ard_num_dims == 3 and kernel.lengthscale.shape == (1, 3)
    # Both kernels carry BoTorch's default dimension-scaled lengthscale prior.
    prior = kernel.lengthscale_prior
    assert isinstance(prior, LogNormalPrior)
    assert torch.allclose(
        prior.loc, torch.tensor(2**0.5 + 0.5 * torch.log(torch.tensor(3.0)).item())
    )
    assert torch.allclose(prior.scale, torch.tensor(3**0.5))
    assert isinstance(model.likelihood, GaussianLikelihood)
    assert not isinstance(model.likelihood, FixedNoiseGaussianLikelihood)


def test_train_Yvar_gives_fixed_noise():
    data = make_1d(n=8)
    Yvar = torch.full_like(data.Y, 1e-3)
    model = fit_surrogate("gp", data.X, data.Y, bounds=data.bounds, Yvar=Yvar)
    assert isinstance(model.likelihood, FixedNoiseGaussianLikelihood)
    # The standardization rescales the noise variances with the outcomes.
    expected = Yvar.squeeze(-1) / data.Y.std() ** 2
    assert torch.allclose(model.likelihood.noise, expected)


def test_inputs_normalized_and_outputs_standardized_once(data_3d):
    model = fit_surrogate("gp", data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    lo, hi = data_3d.bounds
    # In eval mode the model stores its transformed training inputs: the unit cube, once.
    assert torch.allclose(model.train_inputs[0], (data_3d.X - lo) / (hi - lo))
    # ... and standardized targets.
    targets = model.train_targets
    assert torch.allclose(targets.mean(), torch.tensor(0.0, dtype=targets.dtype), atol=1e-12)
    assert torch.allclose(targets.std(), torch.tensor(1.0, dtype=targets.dtype))


@pytest.mark.parametrize("kernel", ["matern52", "rbf"])
def test_affine_maps_of_X_and_Y_commute_with_the_fit(kernel):
    """Fitting on (a*X + b, bounds mapped alike, c*Y + e) gives c * mean + e and c^2 * var."""
    data = make_3d(n=15)
    a = torch.tensor([3.0, 0.5, 20.0], dtype=torch.double)
    b = torch.tensor([-7.0, 100.0, 0.25], dtype=torch.double)
    c, e = -250.0, 1e3
    spec = {"name": "gp", "kernel": kernel}
    model = fit_surrogate(spec, data.X, data.Y, bounds=data.bounds)
    model_t = fit_surrogate(spec, a * data.X + b, c * data.Y + e, bounds=a * data.bounds + b)
    X_eval = torch.cat([data.X, data.X_test[:20]])
    mean, var = posterior_mean(model, X_eval), posterior_variance(model, X_eval)
    mean_t, var_t = (
        posterior_mean(model_t, a * X_eval + b),
        posterior_variance(model_t, a * X_eval + b),
    )
    scale = abs(c) * data.Y.std()
    assert (mean_t - (c * mean + e)).abs().max() <= 1e-4 * scale
    assert torch.allclose(var_t, c**2 * var, rtol=1e-3, atol=1e-8 * scale**2)


def test_default_bounds_are_the_data_range():
    data = make_3d(n=12)
    model = fit_surrogate("gp", data.X, data.Y)
    U = model.train_inputs[0]
    assert torch.allclose(U.min(0).values, torch.zeros(3, dtype=U.dtype))
    assert torch.allclose(U.max(0).values, torch.ones(3, dtype=U.dtype))
