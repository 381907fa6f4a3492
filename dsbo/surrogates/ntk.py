r"""Infinite-width kernels of :class:`dsbo_zoo.mlp.EnsembleMLP`: the NNGP kernel and the NTK.

Paria, *On greedy algorithms for blackbox optimization using neural networks* (thesis ch. 3,
section 3.2). A network with ``L`` hidden layers in the NTK parameterization,

.. math::

    \alpha^{(l+1)} = \phi\Big(\frac{\sigma_w}{\sqrt{d_l}} W^{(l)} \alpha^{(l)} + \sigma_b b^{(l)}\Big),
    \qquad f(x, \theta) = \frac{\sigma_w}{\sqrt{d_L}} W^{(L)} \alpha^{(L)} + \sigma_b b^{(L)},

with all entries of :math:`\theta` iid :math:`\mathcal N(0, 1)`, converges as
:math:`\min_l d_l \to \infty` to a GP with the NNGP kernel :math:`\mathcal K^{NN}` (Lee et al.
2018), and its empirical NTK :math:`\hat\Theta(x, x') = \langle \nabla_\theta f(x),
\nabla_\theta f(x') \rangle` converges to a deterministic kernel :math:`\Theta` (Jacot et al.
2018; Arora et al. 2019). Both follow the layer recursion

.. math::

    \Sigma^{(1)}(x, x') &= \sigma_w^2\, x^\top x' / d + \sigma_b^2, \qquad
    \Theta^{(1)} = \Sigma^{(1)}, \\
    \Sigma^{(l+1)}(x, x') &= \sigma_w^2\, \mathbb E[\phi(u)\phi(v)] + \sigma_b^2, \\
    \Theta^{(l+1)}(x, x') &= \Sigma^{(l+1)}(x, x')
        + \sigma_w^2\, \mathbb E[\phi'(u)\phi'(v)]\, \Theta^{(l)}(x, x'),

with :math:`(u, v) \sim \mathcal N\big(0, [[\Sigma^{(l)}(x,x), \Sigma^{(l)}(x,x')],
[\Sigma^{(l)}(x,x'), \Sigma^{(l)}(x',x')]]\big)`, for ``l = 1..L``; the network's kernels are
:math:`\mathcal K^{NN} = \Sigma^{(L+1)}` and :math:`\Theta = \Theta^{(L+1)}`.

**Zero final bias** (``final_bias="zero"``, section 3.7.1): the output bias starts at 0, so the
output at initialization has no :math:`\sigma_b^2` term,
:math:`\mathcal K^{NN} = \Sigma^{(L+1)} - \sigma_b^2`. The bias is still trained and
:math:`\partial f / \partial b^{(L)} = \sigma_b` does not depend on its value, so the NTK keeps
the :math:`\sigma_b^2` term: :math:`\Theta` is the same for both settings.

The Gaussian expectations :math:`\mathbb E[\phi(u)\phi(v)]` and
:math:`\mathbb E[\phi'(u)\phi'(v)]` of each activation (``relu`` and ``erf`` in closed
form, ``tanh`` as a positive mixture of erfs or by Gauss-Hermite quadrature, their accuracy
and cost) are :mod:`dsbo.surrogates.activation_expectations`; its names are importable from
here too.

All computations are in the dtype of the inputs (use float64).

References:
    R. M. Neal. Bayesian learning for neural networks. 1996.
    C. K. I. Williams. Computing with infinite networks. NeurIPS 1997.
    Y. Cho and L. K. Saul. Kernel methods for deep learning. NeurIPS 2009.
    D. F. Andrews and C. L. Mallows. Scale mixtures of normal distributions. JRSS B, 1974.
    J. Lee, Y. Bahri, R. Novak, S. S. Schoenholz, J. Pennington and J. Sohl-Dickstein. Deep
    neural networks as Gaussian processes. ICLR 2018.
    A. Jacot, F. Gabriel and C. Hongler. Neural tangent kernel: convergence and generalization
    in neural networks. NeurIPS 2018.
    S. Arora, S. S. Du, W. Hu, Z. Li, R. Salakhutdinov and R. Wang. On exact computation with
    an infinitely wide neural net. NeurIPS 2019.
    B. He, B. Lakshminarayanan and Y. W. Teh. Bayesian deep ensembles via the neural tangent
    kernel. NeurIPS 2020 (the NTK-GP as the limit of posterior-corrected ensembles).
"""

from __future__ import annotations

import functools

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from gpytorch.constraints import GreaterThan, Interval
from gpytorch.kernels import Kernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.means import ZeroMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.surrogates.activation_expectations import (  # noqa: F401  (TANH_MIXTURE_TERMS: re-exported)
    DEFAULT_QUADRATURE_ORDER,
    KERNEL_ACTIVATIONS,
    TANH_METHODS,
    TANH_MIXTURE_TERMS,
    gaussian_expectations,
)
from dsbo.surrogates.registry import register_surrogate

FINAL_BIAS = ("zero", "random")
#: Bounds of learnable sigma_w, sigma_b (the thesis tunes gamma in [0.5, 5]).
SIGMA_BOUNDS = (1e-3, 10.0)
#: Fixed noise variances below this (standardized units) are raised to it (jitter).
MIN_NOISE = 1e-6


def neural_kernels(
    x1: Tensor,
    x2: Tensor,
    *,
    depth: int = 1,
    activation: str = "tanh",
    sigma_w: float | Tensor = 1.0,
    sigma_b: float | Tensor = 1.0,
    final_bias: str = "zero",
    tanh_method: str = "erf-mixture",
    quadrature_order: int = DEFAULT_QUADRATURE_ORDER,
    diag: bool = False,
) -> tuple[Tensor, Tensor]:
    r"""The NNGP kernel :math:`\mathcal K^{NN}` and the NTK :math:`\Theta` of the network family
    of :class:`dsbo_zoo.mlp.EnsembleMLP` (see the module docstring for the recursion).

    Args:
        x1: ``batch x n x d`` inputs.
        x2: ``batch x m x d`` inputs.
        depth: Number of hidden layers ``L >= 0`` (``0``: a linear model).
        activation: ``"tanh"``, ``"relu"`` or ``"erf"``.
        sigma_w: Weight scale :math:`\sigma_w` (a float or a scalar tensor, e.g. learnable).
        sigma_b: Bias scale :math:`\sigma_b`.
        final_bias: ``"zero"`` (output bias initialized at 0: no :math:`\sigma_b^2` in
            :math:`\mathcal K^{NN}`) or ``"random"``.
        tanh_method: ``"erf-mixture"`` or ``"gauss-hermite"`` (tanh only).
        quadrature_order: Gauss-Hermite nodes per axis (``tanh_method="gauss-hermite"``).
        diag: Return only ``K(x1[i], x2[i])`` (``batch x n``; needs ``n == m``).

    Returns:
        ``(nngp, ntk)``, each ``batch x n x m`` (or ``batch x n`` with ``diag``).
    """
    if depth < 0:
        raise ConfigError(f"depth must be >= 0, got {depth}")
    if final_bias not in FINAL_BIAS:
        raise ConfigError(f"final_bias={final_bias!r}: choose one of {list(FINAL_BIAS)}")
    if activation not in KERNEL_ACTIVATIONS:
        raise ConfigError(f"activation={activation!r}: choose one of {list(KERNEL_ACTIVATIONS)}")
    sw2, sb2 = sigma_w**2, sigma_b**2
    d = x1.shape[-1]
    q1 = sw2 * (x1 * x1).sum(-1) / d + sb2
    q2 = sw2 * (x2 * x2).sum(-1) / d + sb2
    if diag:
        c = sw2 * (x1 * x2).sum(-1) / d + sb2
    else:
        c = sw2 * (x1 @ x2.transpose(-1, -2)) / d + sb2
        q1, q2 = q1.unsqueeze(-1), q2.unsqueeze(-2)
    theta = c
    for layer in range(depth):
        bias = sb2 if (layer < depth - 1 or final_bias == "random") else 0.0
        e_phi, e_dphi = gaussian_expectations(q1, q2, c, activation, tanh_method, quadrature_order)
        e_phi1, _ = gaussian_expectations(q1, q1, q1, activation, tanh_method, quadrature_order)
        e_phi2, _ = gaussian_expectations(q2, q2, q2, activation, tanh_method, quadrature_order)
        c_next = sw2 * e_phi + bias
        theta = c_next + sw2 * e_dphi * theta + (sb2 - bias)
        c = c_next
        q1, q2 = sw2 * e_phi1 + sb2, sw2 * e_phi2 + sb2
    if depth == 0 and final_bias == "zero":
        # the output layer is the first affine layer: its bias starts at zero
        c = c - sb2
    return c, theta


class _NeuralKernel(Kernel):
    """Shared machinery of :class:`NTKKernel` and :class:`NNGPKernel`."""

    has_lengthscale = False
    _which = 1  # index into neural_kernels' (nngp, ntk)

    def __init__(
        self,
        depth: int = 1,
        activation: str = "tanh",
        sigma_w: float = 1.0,
        sigma_b: float = 1.0,
        final_bias: str = "zero",
        learn_sigmas: bool = False,
        tanh_method: str = "erf-mixture",
        quadrature_order: int = DEFAULT_QUADRATURE_ORDER,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ConfigError(f"depth must be an integer >= 0, got {depth!r}")
        if activation not in KERNEL_ACTIVATIONS:
            raise ConfigError(
                f"activation={activation!r}: choose one of {list(KERNEL_ACTIVATIONS)}"
            )
        if final_bias not in FINAL_BIAS:
            raise ConfigError(f"final_bias={final_bias!r}: choose one of {list(FINAL_BIAS)}")
        if tanh_method not in TANH_METHODS:
            raise ConfigError(f"tanh_method={tanh_method!r}: choose one of {list(TANH_METHODS)}")
        if (
            isinstance(quadrature_order, bool)
            or not isinstance(quadrature_order, int)
            or quadrature_order < 2
        ):
            raise ConfigError(f"quadrature_order must be an integer >= 2, got {quadrature_order!r}")
        if not sigma_w > 0:
            raise ConfigError(f"sigma_w must be > 0, got {sigma_w!r}")
        if not sigma_b >= 0:
            raise ConfigError(f"sigma_b must be >= 0, got {sigma_b!r}")
        self.depth, self.activation, self.final_bias = depth, activation, final_bias
        self.tanh_method, self.quadrature_order = tanh_method, quadrature_order
        self.learn_sigmas = bool(learn_sigmas)
        if self.learn_sigmas:
            low, high = SIGMA_BOUNDS
            for name, value in (("sigma_w", sigma_w), ("sigma_b", sigma_b)):
                if not low < value < high:
                    raise ConfigError(
                        f"learnable {name} must start inside {SIGMA_BOUNDS}, got {value}"
                    )
                self.register_parameter(f"raw_{name}", torch.nn.Parameter(torch.zeros(())))
                self.register_constraint(f"raw_{name}", Interval(low, high))
            self._set_sigmas(float(sigma_w), float(sigma_b))
        else:
            self.register_buffer("_sigma_w", torch.tensor(float(sigma_w)))
            self.register_buffer("_sigma_b", torch.tensor(float(sigma_b)))

    def _set_sigmas(self, sigma_w: float, sigma_b: float) -> None:
        for name, value in (("sigma_w", sigma_w), ("sigma_b", sigma_b)):
            raw = getattr(self, f"raw_{name}")
            constraint = getattr(self, f"raw_{name}_constraint")
            raw.data.copy_(constraint.inverse_transform(torch.as_tensor(value).to(raw)))

    @property
    def sigma_w(self) -> Tensor:
        if self.learn_sigmas:
            return self.raw_sigma_w_constraint.transform(self.raw_sigma_w)
        return self._sigma_w

    @property
    def sigma_b(self) -> Tensor:
        if self.learn_sigmas:
            return self.raw_sigma_b_constraint.transform(self.raw_sigma_b)
        return self._sigma_b

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        if params.get("last_dim_is_batch"):
            raise ConfigError(f"{type(self).__name__} does not support last_dim_is_batch")
        kernels = neural_kernels(
            x1,
            x2,
            depth=self.depth,
            activation=self.activation,
            sigma_w=self.sigma_w.to(x1),
            sigma_b=self.sigma_b.to(x1),
            final_bias=self.final_bias,
            tanh_method=self.tanh_method,
            quadrature_order=self.quadrature_order,
            diag=diag,
        )
        return kernels[self._which]


class NTKKernel(_NeuralKernel):
    r"""The neural tangent kernel :math:`\Theta` of the infinitely wide ``EnsembleMLP``.

    :math:`\Theta` is the covariance of the infinite-width limit of PosteriorSMB (thesis
    Proposition 3.2, He et al. 2020) and the kernel of gradient-descent training.

    Args:
        depth: Hidden layers ``L``.
        activation: ``"tanh"`` (thesis), ``"relu"`` or ``"erf"``.
        sigma_w: Weight scale (thesis: ``gamma``).
        sigma_b: Bias scale (thesis: ``gamma``).
        final_bias: ``"zero"`` or ``"random"`` (does not change the NTK; kept for symmetry).
        learn_sigmas: Make ``sigma_w`` and ``sigma_b`` parameters, constrained to
            :data:`SIGMA_BOUNDS` (positive), e.g. for marginal-likelihood fitting.
        tanh_method: ``"erf-mixture"`` (default, error < 1e-7) or ``"gauss-hermite"``.
        quadrature_order: Gauss-Hermite nodes per axis (``tanh_method="gauss-hermite"``).

    Example:
        >>> k = NTKKernel(depth=2, activation="relu", sigma_w=1.5, sigma_b=0.1)
        >>> k(torch.rand(5, 3, dtype=torch.double)).to_dense().shape
        torch.Size([5, 5])
    """

    _which = 1


class NNGPKernel(_NeuralKernel):
    r"""The NNGP kernel :math:`\mathcal K^{NN}` of the infinitely wide ``EnsembleMLP``: the
    covariance of the network output at initialization (Neal 1996; Lee et al. 2018).

    Same arguments as :class:`NTKKernel`; ``final_bias="zero"`` drops the output layer's
    :math:`\sigma_b^2`.
    """

    _which = 0


def _gamma_option(name: str, gamma: float | str) -> tuple[float, bool]:
    if gamma == "fit":
        return 1.0, True
    if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not gamma > 0:
        raise ConfigError(
            f"surrogate {name!r}: option gamma={gamma!r} must be a number > 0 or 'fit'"
        )
    return float(gamma), False


def _fit_neural_gp(
    kernel_cls: type[_NeuralKernel],
    name: str,
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    activation: str = "tanh",
    depth: int = 1,
    gamma: float | str = 1.0,
    sigma_w: float | None = None,
    sigma_b: float | None = None,
    noise: float | str = 1e-4,
    nu: float | str = 1.0,
    final_bias: str = "zero",
    tanh_method: str = "erf-mixture",
    quadrature_order: int = DEFAULT_QUADRATURE_ORDER,
) -> SingleTaskGP:
    gamma_value, learn = _gamma_option(name, gamma)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ConfigError(f"surrogate {name!r}: option depth={depth!r} must be an integer >= 0")
    for field, value in (("activation", activation), ("final_bias", final_bias)):
        allowed = KERNEL_ACTIVATIONS if field == "activation" else FINAL_BIAS
        if value not in allowed:
            raise ConfigError(
                f"surrogate {name!r}: option {field}={value!r}; choose one of {list(allowed)}"
            )
    sw = gamma_value if sigma_w is None else sigma_w
    sb = gamma_value if sigma_b is None else sigma_b
    for field, value in (("sigma_w", sw), ("sigma_b", sb)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ConfigError(f"surrogate {name!r}: option {field}={value!r} must be a number > 0")
    try:
        kernel: Kernel = kernel_cls(
            depth=depth,
            activation=activation,
            sigma_w=float(sw),
            sigma_b=float(sb),
            final_bias=final_bias,
            learn_sigmas=learn,
            tanh_method=tanh_method,
            quadrature_order=quadrature_order,
        )
    except ConfigError as err:
        raise ConfigError(f"surrogate {name!r}: {err}") from err
    if nu != 1.0:
        kernel = ScaleKernel(kernel)
        if nu == "fit":
            kernel.outputscale = 1.0
        elif isinstance(nu, bool) or not isinstance(nu, int | float) or not nu > 0:
            raise ConfigError(f"surrogate {name!r}: option nu={nu!r} must be a number > 0 or 'fit'")
        else:
            kernel.outputscale = float(nu) ** 2
            kernel.raw_outputscale.requires_grad_(False)
    likelihood = None
    if train_Yvar is None and noise != "fit":
        if isinstance(noise, bool) or not isinstance(noise, int | float) or not noise >= 0:
            raise ConfigError(
                f"surrogate {name!r}: option noise={noise!r} must be a number >= 0 or 'fit'"
            )
        likelihood = GaussianLikelihood(noise_constraint=GreaterThan(MIN_NOISE / 2))
        # Proposition 3.2: kernel nu^2 Theta with noise nu^2 sigma^2 (the mean does not depend on
        # nu); with nu="fit" the noise is taken as the absolute variance sigma^2.
        scale = float(nu) ** 2 if nu != "fit" else 1.0
        likelihood.noise = max(scale * float(noise), MIN_NOISE)
        likelihood.raw_noise.requires_grad_(False)
    model = SingleTaskGP(
        train_X,
        train_Y,
        train_Yvar=train_Yvar,
        likelihood=likelihood,
        covar_module=kernel,
        mean_module=ZeroMean(),
        input_transform=input_transform,
        outcome_transform=outcome_transform,
    )
    if any(p.requires_grad for p in model.parameters()):
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        fit_gpytorch_mll(mll)
    model.eval()
    return model


_FACTORY_DOC = """
    The GP has zero mean on the standardized outcomes (the thesis' GP(0, .)) and sees inputs
    normalized to the unit cube. Observation noise is ``nu^2 noise`` (standardized units, as
    in Proposition 3.2; ``noise`` alone when ``nu="fit"``; values below :data:`MIN_NOISE` are
    raised to it) or fitted by marginal likelihood (``noise="fit"``);
    observed noise ``train_Yvar``, when given, is used instead and ``noise`` is ignored.

    Args:
        activation: ``"tanh"`` (thesis default), ``"relu"`` or ``"erf"``.
        depth: Hidden layers of the infinitely wide network (thesis: 1).
        gamma: ``sigma_w = sigma_b = gamma`` fixed (thesis default 1, tuned in [0.5, 5]), or
            ``"fit"``: both learned by maximizing the marginal likelihood (from 1, bounded in
            :data:`SIGMA_BOUNDS`).
        sigma_w: Overrides gamma's weight scale (or its starting value when fitted).
        sigma_b: Overrides gamma's bias scale (or its starting value when fitted).
        noise: sigma^2 (thesis: 0) or ``"fit"``.
        nu: The scale parameter nu (kernel multiplied by nu^2, thesis: 1) or ``"fit"``.
        final_bias: ``"zero"`` (thesis 3.7.1) or ``"random"``; changes only the NNGP kernel.
        tanh_method: ``"erf-mixture"`` (default) or ``"gauss-hermite"`` (see the module doc).
        quadrature_order: Gauss-Hermite nodes per axis for ``tanh_method="gauss-hermite"``.
"""


fit_ntk_gp = register_surrogate(
    "ntk-gp", "Exact GP with the NTK of an infinitely wide MLP (PosteriorSMB limit)"
)(functools.partial(_fit_neural_gp, NTKKernel, "ntk-gp"))
fit_ntk_gp.__doc__ = (
    """An exact GP with kernel nu^2 Theta (the NTK) and noise nu^2 sigma^2: the infinite-width
    limit of PosteriorSMB (thesis Proposition 3.2). Its posterior is
    mu(x) = Theta_xX (Theta_XX + sigma^2 I)^-1 Y and
    K(x, x') = nu^2 (Theta_xx' - Theta_xX (Theta_XX + sigma^2 I)^-1 Theta_Xx'); Thompson
    sampling from it (acquisition ``thompson``) is the thesis' GP-TS with the NTK.
"""
    + _FACTORY_DOC
    + """
    Example:
        >>> model = fit_surrogate({"name": "ntk-gp", "activation": "relu", "depth": 2}, X, Y)
"""
)


fit_nngp_gp = register_surrogate(
    "nngp-gp", "Exact GP with the NNGP kernel of an infinitely wide MLP"
)(functools.partial(_fit_neural_gp, NNGPKernel, "nngp-gp"))
fit_nngp_gp.__doc__ = (
    """An exact GP with the NNGP kernel K^NN (the prior of a randomly initialized, infinitely
    wide network; Lee et al. 2018): Bayesian inference with the network prior itself.
"""
    + _FACTORY_DOC
)


__all__ = [
    "DEFAULT_QUADRATURE_ORDER",
    "NNGPKernel",
    "NTKKernel",
    "fit_nngp_gp",
    "fit_ntk_gp",
    "gaussian_expectations",
    "neural_kernels",
]
