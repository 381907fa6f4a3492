"""Test helpers: small smooth regression problems in raw (non-unit) coordinates, float64,
fixed seeds, and accuracy checks of a fitted model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

DTYPE = torch.double


@dataclass
class Data:
    """Training and held-out points of a noiseless smooth function on a box."""

    X: Tensor
    Y: Tensor
    X_test: Tensor
    Y_test: Tensor
    bounds: Tensor


def uniform(bounds: Tensor, n: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(n, bounds.shape[-1], generator=g, dtype=DTYPE)
    return bounds[0] + (bounds[1] - bounds[0]) * u


def f1(X: Tensor) -> Tensor:
    """1-D: a smooth wave with a trend on [-2, 3]."""
    return torch.sin(1.5 * X) + 0.3 * X


def f3(X: Tensor, bounds: Tensor) -> Tensor:
    """3-D: smooth, anisotropic, evaluated in unit-cube coordinates of ``bounds``."""
    U = (X - bounds[0]) / (bounds[1] - bounds[0])
    return (
        torch.sin(2 * math.pi * U[..., :1] * 0.75)
        + 2.0 * (U[..., 1:2] - 0.4) ** 2
        + 0.5 * U[..., 2:3]
    ) * 3.0 + 10.0


def make_1d(n: int = 10, n_test: int = 100) -> Data:
    bounds = torch.tensor([[-2.0], [3.0]], dtype=DTYPE)
    X = torch.linspace(-2.0, 3.0, n, dtype=DTYPE).unsqueeze(-1)
    X_test = uniform(bounds, n_test, seed=1)
    return Data(X, f1(X), X_test, f1(X_test), bounds)


def make_3d(n: int = 20, n_test: int = 100) -> Data:
    bounds = torch.tensor([[-1.0, 0.0, 2.0], [1.0, 4.0, 5.0]], dtype=DTYPE)
    X = uniform(bounds, n, seed=2)
    X_test = uniform(bounds, n_test, seed=3)
    return Data(X, f3(X, bounds), X_test, f3(X_test, bounds), bounds)


def posterior_mean(model, X: Tensor) -> Tensor:
    """``n x m`` posterior mean; mixture models (ensembles, MCMC) are averaged."""
    with torch.no_grad():
        post = model.posterior(X)
        mean = getattr(post, "mixture_mean", None)
        return post.mean if mean is None else mean


def posterior_variance(model, X: Tensor) -> Tensor:
    with torch.no_grad():
        post = model.posterior(X)
        var = getattr(post, "mixture_variance", None)
        return post.variance if var is None else var


def assert_fits(model, data: Data, interp_tol: float = 0.05, test_ratio: float = 0.3) -> None:
    """The posterior mean reproduces the training targets to ``interp_tol`` standard
    deviations of Y and its held-out MSE is below ``test_ratio`` times that of the best
    constant (the training mean)."""
    y_std = data.Y.std()
    train_err = (posterior_mean(model, data.X) - data.Y).abs().max()
    assert train_err <= interp_tol * y_std, f"max train error {train_err:.3g} (Y std {y_std:.3g})"
    mse = ((posterior_mean(model, data.X_test) - data.Y_test) ** 2).mean()
    mse_const = ((data.Y.mean() - data.Y_test) ** 2).mean()
    assert mse <= test_ratio * mse_const, f"held-out MSE {mse:.3g} vs constant {mse_const:.3g}"
