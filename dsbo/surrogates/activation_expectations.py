r"""Gaussian expectations of an activation and its derivative, the step of the NNGP/NTK recursion.

For :math:`(u, v) \sim \mathcal N(0, [[q_1, c], [c, q_2]])` the layer recursion of the
infinite-width kernels (:mod:`dsbo.surrogates.ntk`; Paria thesis ch. 3, section 3.2) needs
:math:`\mathbb E[\phi(u)\phi(v)]` and :math:`\mathbb E[\phi'(u)\phi'(v)]`
(:func:`gaussian_expectations`).

The Gaussian expectations :math:`\mathbb E[\phi(u)\phi(v)]` and
:math:`\mathbb E[\phi'(u)\phi'(v)]` are, with :math:`q_1 = \Sigma(x,x)`,
:math:`q_2 = \Sigma(x',x')`, :math:`c = \Sigma(x,x')`:

* ``relu`` (arc-cosine kernel, Cho and Saul 2009), :math:`\vartheta = \arccos(c/\sqrt{q_1 q_2})`:
  :math:`\frac{\sqrt{q_1 q_2}}{2\pi}(\sin\vartheta + (\pi - \vartheta)\cos\vartheta)` and
  :math:`\frac{\pi - \vartheta}{2\pi}`;
* ``erf`` (Williams 1997): :math:`\frac{2}{\pi}\arcsin\frac{2c}{\sqrt{(1+2q_1)(1+2q_2)}}` and
  :math:`\frac{4}{\pi}\big((1+2q_1)(1+2q_2) - 4c^2\big)^{-1/2}`;
* ``tanh``: no closed form; two methods (``tanh_method``).

  ``"gauss-hermite"``: the tensor-product Gauss-Hermite rule of order ``n`` per axis on
  :math:`u = \sqrt{q_1} z_1`, :math:`v = (c/\sqrt{q_1}) z_1 + \sqrt{q_2 - c^2/q_1}\, z_2`,
  :math:`z \sim \mathcal N(0, I_2)` (``n^2`` nodes; tanh is odd, so half are evaluated).
  It converges slowly, because tanh has poles at :math:`\pm i\pi/2`, i.e. at distance
  :math:`\pi / (2\sqrt q)` from the real axis in :math:`z`. Measured worst-case absolute
  error of the two expectations over correlations in [-1, 1] (equal variances ``q``, against
  order 600):

  ======  =======  =======  =======  =======  =======
  q       n = 16   n = 32   n = 48   n = 64   n = 96
  ======  =======  =======  =======  =======  =======
  0.5     1e-4     3e-7     2e-9     3e-11    3e-14
  1       3e-3     5e-5     2e-6     1e-7     7e-10
  2       2e-2     1e-3     2e-4     2e-5     8e-7
  3       4e-2     6e-3     1e-3     2e-4     2e-5
  10      1e-1     6e-2     3e-2     1e-2     4e-3
  ======  =======  =======  =======  =======  =======

  ``q`` is ``gamma^2 (|x|^2/d + 1)`` in the first layer: ``1..2`` for ``gamma = 1`` on the unit
  cube, up to 50 for the thesis' largest ``gamma = 5``, where the rule is useless.

  ``"erf-mixture"`` (default): the logistic distribution is a normal scale mixture with the
  Kolmogorov mixing law (Andrews and Mallows 1974), hence exactly
  :math:`\tanh x = \mathbb E_K[\operatorname{erf}(x / (\sqrt 2 K))]`, ``K ~ kstwobign``.
  A 20-point trapezoid rule in :math:`\log K` gives
  :math:`\tanh x \approx \sum_k w_k \operatorname{erf}(\beta_k x)` with positive weights and
  sup-norm errors ``7e-9`` (tanh) and ``4e-8`` (its derivative) **uniformly in x**, so both
  expectations are sums of Williams' closed forms, accurate to ``~1e-7`` for every variance
  (measured against Gauss-Hermite of order 600: ``<= 3e-8`` for ``q <= 10``; at ``q = 50``
  the reference itself is off by ``~1e-3``), and the kernels are exactly the NNGP/NTK of
  that activation, hence PSD. The Gauss-Hermite rule is not: on 500 uniform points in
  ``[0, 1]^3`` (``gamma = 1``) order 32 gives an NTK matrix with eigenvalue ``-3e-3``.
  Cost: 400 ``arcsin`` per kernel entry (about 7 us; 1.9 s for a 500 x 500 NTK matrix on
  one thread), like Gauss-Hermite of order 28.

All computations are in the dtype of the inputs (use float64).

References:
    C. K. I. Williams. Computing with infinite networks. NeurIPS 1997.
    Y. Cho and L. K. Saul. Kernel methods for deep learning. NeurIPS 2009.
    D. F. Andrews and C. L. Mallows. Scale mixtures of normal distributions. JRSS B, 1974.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
from scipy.special import roots_hermitenorm
from torch import Tensor

from dsbo.errors import ConfigError

#: Activations with an analytic or quadrature kernel (those of ``dsbo_zoo.mlp.ACTIVATIONS``).
KERNEL_ACTIVATIONS = ("tanh", "relu", "erf")
#: Gauss-Hermite nodes per axis for tanh (``n^2`` nodes on the 2-D Gaussian).
DEFAULT_QUADRATURE_ORDER = 64
#: How tanh's Gaussian expectations are computed: a positive erf mixture (default) or the
#: tensor-product Gauss-Hermite rule.
TANH_METHODS = ("erf-mixture", "gauss-hermite")
#: Terms of the erf mixture representing tanh.
TANH_MIXTURE_TERMS = 20
#: Kernel entries evaluated at once by the tanh quadrature (bounds memory: chunk * n^2).
_QUADRATURE_CHUNK_NODES = 2**22
_TINY = 1e-300


@lru_cache(maxsize=16)
def _hermite_rule(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights normalized to the N(0, 1) measure."""
    nodes, weights = roots_hermitenorm(order)
    return nodes, weights / math.sqrt(2.0 * math.pi)


def _relu_expectations(q1: Tensor, q2: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    norm = torch.sqrt((q1 * q2).clamp_min(_TINY))
    rho = (c / norm).clamp(-1.0, 1.0)
    # arccos(rho) via atan2, with a gradient that stays finite at rho = +-1 (the diagonal)
    angle = torch.atan2(torch.sqrt((1 - rho * rho).clamp_min(_TINY)), rho)
    e_phi = norm / (2 * math.pi) * (torch.sin(angle) + (math.pi - angle) * rho)
    e_dphi = (math.pi - angle) / (2 * math.pi)
    return e_phi, e_dphi


def _erf_expectations(q1: Tensor, q2: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    a1, a2 = 1 + 2 * q1, 1 + 2 * q2
    e_phi = 2 / math.pi * torch.arcsin((2 * c / torch.sqrt(a1 * a2)).clamp(-1.0, 1.0))
    e_dphi = 4 / math.pi / torch.sqrt((a1 * a2 - 4 * c * c).clamp_min(_TINY))
    return e_phi, e_dphi


@lru_cache(maxsize=1)
def _tanh_erf_mixture() -> tuple[np.ndarray, np.ndarray]:
    """Weights ``w_k`` and scales ``beta_k`` with ``tanh(x) ~= sum_k w_k erf(beta_k x)``.

    The logistic distribution is a normal scale mixture with the Kolmogorov (KS) mixing law
    (Andrews and Mallows 1974), so ``tanh(x) = E_K[erf(x / (sqrt(2) K))]`` exactly for
    ``K ~ kstwobign``. The expectation is discretized by the trapezoid rule in ``log K`` on
    ``[-2.5, 1.65]`` (the density decays double-exponentially at both ends), weights
    renormalized to sum to 1.
    """
    from scipy.stats import kstwobign

    log_k = np.linspace(-2.5, 1.65, TANH_MIXTURE_TERMS)
    k = np.exp(log_k)
    weights = kstwobign.pdf(k) * k
    return weights / weights.sum(), 1.0 / (math.sqrt(2.0) * k)


def _chunks(q1: Tensor, q2: Tensor, c: Tensor, nodes: int):
    """Broadcast and flatten, then yield ``(q1, q2, c)`` slices of at most ``2^22 / nodes``
    kernel entries."""
    shape = torch.broadcast_shapes(q1.shape, q2.shape, c.shape)
    q1, q2, c = (t.expand(shape).reshape(-1) for t in (q1, q2, c))
    chunk = max(1, _QUADRATURE_CHUNK_NODES // nodes)
    for start in range(0, c.numel(), chunk):
        yield q1[start : start + chunk], q2[start : start + chunk], c[start : start + chunk]


def _tanh_erf_mixture_expectations(q1: Tensor, q2: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    r"""tanh as a positive mixture of erfs: sums of Williams' closed forms.

    With :math:`r_{ik} = \beta_k / \sqrt{1 + 2\beta_k^2 q_i}` and
    :math:`a_{jk} = 2 c\, r_{1j} r_{2k}`:
    :math:`\mathbb E[\phi\phi] = \frac{2}{\pi}\sum_{jk} w_j w_k \arcsin a_{jk}` and
    :math:`\mathbb E[\phi'\phi'] = \frac{4}{\pi}\sum_{jk} w_j w_k r_{1j} r_{2k}
    / \sqrt{1 - a_{jk}^2}`.
    """
    w_np, beta_np = _tanh_erf_mixture()
    w = torch.as_tensor(w_np, dtype=c.dtype, device=c.device)
    beta = torch.as_tensor(beta_np, dtype=c.dtype, device=c.device)
    e_phi, e_dphi = [], []
    shape = torch.broadcast_shapes(q1.shape, q2.shape, c.shape)
    for a_q1, a_q2, cc in _chunks(q1, q2, c, beta.numel() ** 2):
        r1 = beta * torch.rsqrt(1 + 2 * beta**2 * a_q1[:, None])  # chunk x K
        r2 = beta * torch.rsqrt(1 + 2 * beta**2 * a_q2[:, None])
        arg = ((2 * cc)[:, None, None] * r1[:, :, None] * r2[:, None, :]).clamp(-1.0, 1.0)
        e_phi.append((((torch.arcsin(arg) @ w) * w).sum(-1)) * (2 / math.pi))
        inv = torch.rsqrt((1 - arg * arg).clamp_min(_TINY))
        e_dphi.append(
            (((inv @ (w * r2)[:, :, None]).squeeze(-1) * (w * r1)).sum(-1)) * (4 / math.pi)
        )
    return torch.cat(e_phi).reshape(shape), torch.cat(e_dphi).reshape(shape)


def _tanh_gauss_hermite_expectations(
    q1: Tensor, q2: Tensor, c: Tensor, order: int
) -> tuple[Tensor, Tensor]:
    """Tensor-product Gauss-Hermite rule on the 2-D Gaussian, in chunks of kernel entries.

    The integrand is even under ``z -> -z`` (tanh is odd), so only the rows ``z_1 < 0`` of the
    node grid are evaluated (and the middle row for odd orders), halving the cost.
    """
    nodes, weights = _hermite_rule(order)
    half = (order + 1) // 2
    z = torch.as_tensor(nodes, dtype=c.dtype, device=c.device)
    w = torch.as_tensor(weights, dtype=c.dtype, device=c.device)
    w_row = w[:half] * 2.0
    if order % 2:
        w_row[-1] = w[half - 1]  # the middle row z_1 = 0 maps to itself
    z_row = z[:half]
    e_phi, e_dphi = [], []
    shape = torch.broadcast_shapes(q1.shape, q2.shape, c.shape)
    for a_q1, a_q2, cc in _chunks(q1, q2, c, half * order):
        s1 = torch.sqrt(a_q1.clamp_min(_TINY))
        a = cc / s1
        b = torch.sqrt((a_q2 - a * a).clamp_min(_TINY))
        t_u = torch.tanh(s1[:, None] * z_row)  # chunk x half
        t_v = torch.tanh(
            a[:, None, None] * z_row[:, None] + b[:, None, None] * z
        )  # chunk x half x n
        e_phi.append(((t_v @ w) * t_u) @ w_row)
        e_dphi.append((((1 - t_v * t_v) @ w) * (1 - t_u * t_u)) @ w_row)
    return torch.cat(e_phi).reshape(shape), torch.cat(e_dphi).reshape(shape)


def gaussian_expectations(
    q1: Tensor,
    q2: Tensor,
    c: Tensor,
    activation: str,
    tanh_method: str = "erf-mixture",
    quadrature_order: int = DEFAULT_QUADRATURE_ORDER,
) -> tuple[Tensor, Tensor]:
    r""":math:`(\mathbb E[\phi(u)\phi(v)], \mathbb E[\phi'(u)\phi'(v)])` for
    :math:`(u, v) \sim \mathcal N(0, [[q_1, c], [c, q_2]])`, elementwise over broadcast shapes.
    """
    if activation == "relu":
        return _relu_expectations(q1, q2, c)
    if activation == "erf":
        return _erf_expectations(q1, q2, c)
    if activation == "tanh":
        if tanh_method == "erf-mixture":
            return _tanh_erf_mixture_expectations(q1, q2, c)
        if tanh_method == "gauss-hermite":
            return _tanh_gauss_hermite_expectations(q1, q2, c, quadrature_order)
        raise ConfigError(f"tanh_method={tanh_method!r}: choose one of {list(TANH_METHODS)}")
    raise ConfigError(f"activation={activation!r}: choose one of {list(KERNEL_ACTIVATIONS)}")


__all__ = [
    "DEFAULT_QUADRATURE_ORDER",
    "KERNEL_ACTIVATIONS",
    "TANH_METHODS",
    "TANH_MIXTURE_TERMS",
    "gaussian_expectations",
]
