"""The ``ibnn`` surrogate: a GP with BoTorch's infinite-width BNN kernel."""

from __future__ import annotations

import torch
from botorch.models import SingleTaskGP
from botorch.models.kernels.infinite_width_bnn import InfiniteWidthBNNKernel

from dsbo.surrogates import fit_surrogate
from dsbo.surrogates.gp import IBNN_MAX_VAR

from .helpers import posterior_variance


def test_kernel_and_depth_option():
    X = torch.linspace(0, 1, 6, dtype=torch.double).unsqueeze(-1)
    model = fit_surrogate({"name": "ibnn", "depth": 2}, X, torch.sin(3 * X))
    assert isinstance(model, SingleTaskGP)
    assert isinstance(model.covar_module, InfiniteWidthBNNKernel)
    assert model.covar_module.depth == 2


def test_variance_is_finite_and_grows_away_from_data():
    # Data in the first third of the box; query points move away from it.
    X = torch.linspace(0, 1, 8, dtype=torch.double).unsqueeze(-1)
    Y = torch.sin(3 * X) + X
    bounds = torch.tensor([[0.0], [3.0]], dtype=torch.double)
    model = fit_surrogate("ibnn", X, Y, bounds=bounds)
    var_train = posterior_variance(model, X)
    var_away = posterior_variance(
        model, torch.tensor([[1.25], [1.5], [2.0], [2.5], [3.0]], dtype=torch.double)
    )
    assert torch.isfinite(var_train).all() and torch.isfinite(var_away).all()
    assert (var_train > 0).all()
    assert var_away.min() > 10 * var_train.max()
    assert (var_away.squeeze(-1).diff() > 0).all()


def test_near_linear_target_fits_with_bounded_variances():
    """A linear target drives the bias variance to its bound instead of a failed fit."""
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 3, generator=g, dtype=torch.double)
    Y = X[:, :1] - X[:, 1:2]
    model = fit_surrogate(
        "ibnn", X, Y, bounds=torch.tensor([[0.0] * 3, [1.0] * 3], dtype=torch.double)
    )
    kernel = model.covar_module
    assert kernel.weight_var.item() <= IBNN_MAX_VAR and kernel.bias_var.item() <= IBNN_MAX_VAR
    with torch.no_grad():
        assert (model.posterior(X).mean - Y).abs().max() < 0.05 * Y.std()
