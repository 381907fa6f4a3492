"""Cross-check of dsbo's NNGP/NTK kernels against the JAX library neural-tangents.

Runs only where the ``ntk`` extra is installed (a separate venv: it pins jax 0.4.30, which
conflicts with the ``saas`` extra); skipped otherwise. neural-tangents' ``stax.Dense`` uses the
NTK parameterization by default, like :class:`dsbo_zoo.mlp.EnsembleMLP`, and its final ``Dense``
has a random bias, i.e. ``final_bias="random"``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dsbo.surrogates.ntk import neural_kernels

nt = pytest.importorskip("neural_tangents")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
stax = nt.stax

ACTIVATIONS = {"erf": stax.Erf, "relu": stax.Relu}


def nt_activation(activation, deg):
    """tanh has no closed form: neural-tangents integrates it by Gauss-Hermite of degree ``deg``."""
    if activation == "tanh":
        return stax.ElementwiseNumerical(fn=jax.numpy.tanh, deg=deg)
    return ACTIVATIONS[activation]()


def nt_kernels(x, activation, depth, sigma_w, sigma_b, deg=64):
    layers = []
    for _ in range(depth):
        layers += [stax.Dense(512, W_std=sigma_w, b_std=sigma_b), nt_activation(activation, deg)]
    layers.append(stax.Dense(1, W_std=sigma_w, b_std=sigma_b))
    _, _, kernel_fn = stax.serial(*layers)
    k = kernel_fn(x, x, ("nngp", "ntk"))
    return np.asarray(k.nngp), np.asarray(k.ntk)


@pytest.mark.parametrize("activation", ["erf", "relu"])
@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize(("sigma_w", "sigma_b"), [(1.0, 1.0), (1.7, 0.3)])
def test_kernels_match_neural_tangents(activation, depth, sigma_w, sigma_b):
    """Agreement to 1e-8 relative: neural-tangents clamps the relu arc-cosine near the
    diagonal, which moves its diagonal by up to ~3e-9 relative (ours is exact there)."""
    x = np.random.default_rng(depth).uniform(-1.0, 2.0, size=(7, 3))
    nngp, ntk = nt_kernels(x, activation, depth, sigma_w, sigma_b)
    xt = torch.as_tensor(x, dtype=torch.double)
    K, T = neural_kernels(
        xt,
        xt,
        depth=depth,
        activation=activation,
        sigma_w=sigma_w,
        sigma_b=sigma_b,
        final_bias="random",
    )
    np.testing.assert_allclose(K.numpy(), nngp, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(T.numpy(), ntk, rtol=1e-8, atol=1e-10)
    # the zero-initialized final bias only removes sigma_b^2 from the NNGP kernel
    Kz, Tz = neural_kernels(
        xt,
        xt,
        depth=depth,
        activation=activation,
        sigma_w=sigma_w,
        sigma_b=sigma_b,
        final_bias="zero",
    )
    np.testing.assert_allclose(Kz.numpy(), nngp - sigma_b**2, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Tz.numpy(), ntk, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(("sigma_w", "sigma_b"), [(1.0, 1.0), (1.7, 0.3)])
def test_tanh_kernels_match_neural_tangents_quadrature(depth, sigma_w, sigma_b):
    """tanh has no closed form on either side. neural-tangents integrates it by Gauss-Hermite
    (``ElementwiseNumerical``): with 64 nodes per axis it is the same quadrature as dsbo's
    ``gauss-hermite`` (agreement to rounding), and as its degree grows it converges to dsbo's
    default erf mixture (< 1e-6 relative at degree 256, while degree 64 is still ~1e-4 off:
    the mixture is the accurate one)."""
    x = np.random.default_rng(10 + depth).uniform(-1.0, 2.0, size=(6, 3))
    xt = torch.as_tensor(x, dtype=torch.double)
    ours = {
        method: neural_kernels(
            xt,
            xt,
            depth=depth,
            activation="tanh",
            sigma_w=sigma_w,
            sigma_b=sigma_b,
            final_bias="random",
            tanh_method=method,
        )
        for method in ("erf-mixture", "gauss-hermite")
    }
    nngp64, ntk64 = nt_kernels(x, "tanh", depth, sigma_w, sigma_b, deg=64)
    np.testing.assert_allclose(ours["gauss-hermite"][0].numpy(), nngp64, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours["gauss-hermite"][1].numpy(), ntk64, rtol=1e-10, atol=1e-12)
    nngp256, ntk256 = nt_kernels(x, "tanh", depth, sigma_w, sigma_b, deg=256)
    np.testing.assert_allclose(ours["erf-mixture"][0].numpy(), nngp256, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours["erf-mixture"][1].numpy(), ntk256, rtol=1e-6, atol=1e-9)
    # neural-tangents' error against the mixture shrinks by orders of magnitude from 64 to 256 nodes
    mixture_ntk = ours["erf-mixture"][1].numpy()
    assert np.abs(ntk256 - mixture_ntk).max() < np.abs(ntk64 - mixture_ntk).max() / 30
