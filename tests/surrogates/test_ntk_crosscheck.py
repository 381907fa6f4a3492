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
#: Gauss-Hermite degree of neural-tangents' numerical kernel for tanh (no closed form exists).
TANH_DEGREE = 64


def nt_activation(activation):
    if activation == "tanh":
        return stax.ElementwiseNumerical(fn=jax.numpy.tanh, deg=TANH_DEGREE)
    return ACTIVATIONS[activation]()


def nt_kernels(x, activation, depth, sigma_w, sigma_b):
    layers = []
    for _ in range(depth):
        layers += [stax.Dense(512, W_std=sigma_w, b_std=sigma_b), nt_activation(activation)]
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
    K, T = neural_kernels(xt, xt, depth=depth, activation=activation, sigma_w=sigma_w,
                          sigma_b=sigma_b, final_bias="random")  # fmt: skip
    np.testing.assert_allclose(K.numpy(), nngp, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(T.numpy(), ntk, rtol=1e-8, atol=1e-10)
    # the zero-initialized final bias only removes sigma_b^2 from the NNGP kernel
    Kz, Tz = neural_kernels(xt, xt, depth=depth, activation=activation, sigma_w=sigma_w,
                            sigma_b=sigma_b, final_bias="zero")  # fmt: skip
    np.testing.assert_allclose(Kz.numpy(), nngp - sigma_b**2, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Tz.numpy(), ntk, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("tanh_method", ["erf-mixture", "gauss-hermite"])
@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(("sigma_w", "sigma_b"), [(1.0, 1.0), (1.7, 0.3)])
def test_tanh_kernels_match_neural_tangents_quadrature(tanh_method, depth, sigma_w, sigma_b):
    """tanh has no closed form on either side: neural-tangents integrates it numerically
    (``ElementwiseNumerical``, Gauss-Hermite of degree 64), dsbo by an erf mixture or its own
    quadrature; both agree to 1e-5 relative."""
    x = np.random.default_rng(10 + depth).uniform(-1.0, 2.0, size=(6, 3))
    nngp, ntk = nt_kernels(x, "tanh", depth, sigma_w, sigma_b)
    xt = torch.as_tensor(x, dtype=torch.double)
    K, T = neural_kernels(xt, xt, depth=depth, activation="tanh", sigma_w=sigma_w, sigma_b=sigma_b,
                          final_bias="random", tanh_method=tanh_method)  # fmt: skip
    np.testing.assert_allclose(K.numpy(), nngp, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(T.numpy(), ntk, rtol=1e-5, atol=1e-7)
