r"""Sparse (inducing-point) GP baselines of the subset-selection paper: ``vfe`` and ``fitc``.

Both approximate an exact GP on ``n`` training points through ``m << n`` inducing inputs
``Z`` (learned, like every hyperparameter, by maximizing the objective below). With
``K_nm = k(X, Z)``, ``K_mm = k(Z, Z)`` and the Nystrom approximation

.. math::
    Q_{nn} = K_{nm} K_{mm}^{-1} K_{mn},

the two methods differ in their objective (Quinonero-Candela and Rasmussen, 2005, give both
as exact GPs under a modified prior):

- **VFE** (Titsias, 2009, the collapsed variational bound, "SGPR")

  .. math::
      \mathcal F = \log \mathcal N(y \mid 0, Q_{nn} + \sigma^2 I)
                   - \frac{1}{2\sigma^2} \operatorname{tr}(K_{nn} - Q_{nn}),

  a lower bound on the exact log marginal likelihood. It is GPyTorch's
  ``InducingPointKernel`` inside a BoTorch ``SingleTaskGP``: the kernel returns the low-rank
  ``Q_nn`` and registers the trace term as an added loss term, which
  ``ExactMarginalLogLikelihood`` adds to the log density. Predictions are Titsias' (the DTC
  predictive): ``mean = K_*m S K_mn y / sigma^2``,
  ``var = K_** - Q_** + K_*m S K_m*``, ``S = (K_mm + K_mn K_nm / sigma^2)^{-1}``.
- **FITC** (Snelson and Ghahramani, 2005, "sparse pseudo-input GP")

  .. math::
      \log \mathcal N\big(y \mid 0, Q_{nn} + \operatorname{diag}(K_{nn} - Q_{nn})
                          + \sigma^2 I\big),

  the exact marginal likelihood of a GP whose training conditional is fully independent
  given the inducing variables; no trace term. :class:`FITCKernel` returns the low-rank root
  plus the diagonal correction (a ``LowRankRootAddedDiagLinearOperator``), so the noise is
  added to the diagonal and GPyTorch solves and takes log-determinants with Woodbury and the
  determinant lemma in ``O(n m^2)``. Predictions are the FITC predictive (exact test
  conditional, cross-covariances ``Q_*n``, the correction on the training points only):
  ``mean = K_*m S K_mn L^{-1} y``, ``var = K_** - Q_** + K_*m S K_m*`` with
  ``L = diag(K_nn - Q_nn) + sigma^2 I`` and ``S = (K_mm + K_mn L^{-1} K_nm)^{-1}``.

With ``Z = X`` both reduce to the exact GP. Both factories take the options

- ``num_inducing``: ``m``, default ``5 d`` as in the paper (appendix C.3: "the number of
  inducing points is set as 5n", its ``n`` being the dimension), capped at the number of
  training points (also when given explicitly, so a BO loop can start below ``m`` points);
- ``kernel``: ``"rbf"`` (default, the paper's) or ``"matern"`` (= ``"matern52"``), ARD, with
  BoTorch's dimension-scaled lengthscale prior and no outputscale, as in the ``gp`` baseline;
- ``seed``: the inducing inputs start uniformly at random in the normalized input cube
  (the paper's "initialized by a uniform sampling"), drawn from a ``torch.Generator`` seeded
  with ``seed`` (default 0; the global RNG is untouched).

Hyperparameters, noise and inducing inputs are fitted with BoTorch's ``fit_gpytorch_mll`` on
``ExactMarginalLogLikelihood`` (which divides the objective, priors included, by ``n``). The
paper also switches the sparse GP on only after ``30 d`` evaluations: that is a campaign
policy, not part of these surrogates.

Two deviations from a bare ``InducingPointKernel`` (both measured in
``tests/surrogates/test_sparse_gp.py``):

- GPyTorch registers the likelihood as a child module of the kernel; GPyTorch collects priors
  without de-duplication, so the noise prior would enter the objective twice. The kernels
  here keep only a plain reference to the likelihood.
- GPyTorch's ``sgpr_diagonal_correction`` (on by default) adds ``diag(K_nn - Q_nn)`` to the
  training block at prediction time, which turns SGPR's predictions into FITC's. ``vfe``
  predicts with Titsias' (DTC) formulas instead; ``fitc`` uses the correction always.

References:
    M. Titsias. Variational learning of inducing variables in sparse Gaussian processes.
    AISTATS 2009.
    E. Snelson and Z. Ghahramani. Sparse Gaussian processes using pseudo-inputs. NIPS 2005.
    J. Quinonero-Candela and C. E. Rasmussen. A unifying view of sparse approximate Gaussian
    process regression. JMLR 6, 2005.

Example:
    >>> model = fit_surrogate({"name": "fitc", "num_inducing": 20}, X, Y, bounds=bounds)
    >>> acqf = LogExpectedImprovement(model, best_f=Y.max())
"""

from __future__ import annotations

import copy
import math

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch import settings
from gpytorch.kernels import InducingPointKernel, Kernel
from gpytorch.likelihoods import Likelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator import to_dense
from linear_operator.operators import (
    DiagLinearOperator,
    LinearOperator,
    LowRankRootAddedDiagLinearOperator,
    LowRankRootLinearOperator,
    MatmulLinearOperator,
)
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.surrogates.registry import register_surrogate

#: Values of the ``kernel`` option (``"matern"`` and ``"matern52"`` are Matern-5/2).
SPARSE_KERNELS = ("rbf", "matern", "matern52")

#: Default number of inducing points per input dimension (the paper's ``5 d``).
INDUCING_PER_DIM = 5

#: Eval-time caches of ``InducingPointKernel`` (recomputed on demand, never copied).
_CACHES = ("_cached_kernel_mat", "_cached_kernel_inv_root")


class _SparseKernel(InducingPointKernel):
    """``InducingPointKernel`` with a plain (unregistered) reference to the likelihood and a
    ``deepcopy`` that honours the memo (so a copied model's kernel uses the copied
    likelihood)."""

    def __init__(
        self,
        base_kernel: Kernel,
        inducing_points: Tensor,
        likelihood: Likelihood | None = None,
        active_dims: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__(base_kernel, inducing_points, likelihood, active_dims=active_dims)
        # The model owns the likelihood: as a child of the kernel too, its priors would be
        # counted twice (GPyTorch's prior collection does not de-duplicate modules).
        self._modules.pop("likelihood", None)
        object.__setattr__(self, "likelihood", likelihood)

    def __deepcopy__(self, memo: dict) -> _SparseKernel:
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if key in _CACHES:
                continue
            if key == "_added_loss_terms":  # holds the last training graph: start empty
                value = dict.fromkeys(value)
            object.__setattr__(new, key, copy.deepcopy(value, memo))
        return new

    def _root(self, x: Tensor) -> Tensor:
        """``R`` with ``R R^T = Q = K_xm K_mm^{-1} K_mx`` (``... x n x m``)."""
        return to_dense(self.base_kernel(x, self.inducing_points)) @ self._inducing_inv_root


class VFEKernel(_SparseKernel):
    r"""SGPR kernel of Titsias (2009): ``Q = K_nm K_mm^{-1} K_mn`` plus the added loss term
    ``-tr(K_nn - Q_nn) / (2 sigma^2)``.

    Identical to GPyTorch's ``InducingPointKernel`` except that predictions never add the
    ``sgpr_diagonal_correction`` (see the module docstring), i.e. they are Titsias'.

    Args:
        base_kernel: The kernel ``k`` being approximated.
        inducing_points: ``m x d`` initial inducing inputs (a learnable parameter).
        likelihood: The model's Gaussian likelihood (its noise enters the trace term).
    """

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **kwargs) -> LinearOperator:
        with settings.sgpr_diagonal_correction(False):
            return super().forward(x1, x2, diag=diag, **kwargs)


class FITCKernel(_SparseKernel):
    r"""FITC prior covariance of Snelson and Ghahramani (2005).

    ``k_FITC(X, X) = Q_XX + diag(K_XX - Q_XX)`` on a set with itself (a
    ``LowRankRootAddedDiagLinearOperator``, so that adding the noise keeps the Woodbury
    structure) and ``Q_X1X2`` across two different sets; no added loss term. At prediction
    time GPyTorch's ``SGPRPredictionStrategy`` (inherited) evaluates the test-test block with
    the base kernel, i.e. the test conditional is exact, and caches the ``m x m`` Woodbury
    factor, so the predictive is FITC's: ``mean = K_*m S K_mn L^{-1} y``,
    ``cov = K_** - Q_** + K_*m S K_m*``.

    Args:
        base_kernel: The kernel ``k`` being approximated.
        inducing_points: ``m x d`` initial inducing inputs (a learnable parameter).
        likelihood: Unused (FITC needs no noise inside the kernel); kept for the signature.
    """

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **kwargs) -> LinearOperator | Tensor:
        if x1.ndim == 1:
            x1 = x1.unsqueeze(-1)
        if x2.ndim == 1:
            x2 = x2.unsqueeze(-1)
        same = torch.equal(x1, x2)
        if self.training and not same:
            raise RuntimeError("x1 should equal x2 in training mode")
        if same:
            root = self._root(x1)
            k_diag = to_dense(self.base_kernel(x1, x1, diag=True))
            correction = (k_diag - root.pow(2).sum(-1)).clamp(0, math.inf)
            if diag:
                return root.pow(2).sum(-1) + correction
            return LowRankRootAddedDiagLinearOperator(
                LowRankRootLinearOperator(root), DiagLinearOperator(correction)
            )
        root1, root2 = self._root(x1), self._root(x2)
        if diag:
            return (root1 * root2).sum(-1)
        return MatmulLinearOperator(root1, root2.mT)


def _check_int(name: str, field: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(
            f"surrogate {name!r}: option {field}={value!r} must be an integer >= {minimum}"
        )
    return value


def initial_inducing_points(num_inducing: int, dim: int, seed: int = 0, **tensor_kwargs) -> Tensor:
    """``num_inducing x dim`` points drawn uniformly from the unit cube by a generator seeded
    with ``seed`` (float64 unless ``dtype`` is given)."""
    generator = torch.Generator().manual_seed(seed)
    tensor_kwargs.setdefault("dtype", torch.double)
    return torch.rand(num_inducing, dim, generator=generator, **tensor_kwargs)


def build_sparse_gp(
    method: str,
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform | None = None,
    outcome_transform: OutcomeTransform | None = None,
    train_Yvar: Tensor | None = None,
    num_inducing: int | None = None,
    kernel: str = "rbf",
    seed: int = 0,
    inducing_points: Tensor | None = None,
) -> SingleTaskGP:
    """An unfitted ``SingleTaskGP`` whose kernel is :class:`VFEKernel` (``method="vfe"``) or
    :class:`FITCKernel` (``method="fitc"``) around an ARD RBF or Matern-5/2 kernel.

    ``inducing_points`` (``m x d``, in the normalized input coordinates) overrides the
    random initialization; otherwise ``min(num_inducing or 5 d, n)`` points are drawn
    uniformly from the unit cube with a generator seeded by ``seed``.
    """
    kernel_classes = {"vfe": VFEKernel, "fitc": FITCKernel}
    if method not in kernel_classes:
        raise ConfigError(f"sparse GP method {method!r} is unknown; choose one of {list(kernel_classes)}")
    if kernel not in SPARSE_KERNELS:
        raise ConfigError(
            f"surrogate {method!r}: option kernel={kernel!r} is unknown; choose one of {list(SPARSE_KERNELS)}"
        )
    n, d = train_X.shape[-2:]
    _check_int(method, "seed", seed, 0)
    if inducing_points is None:
        if num_inducing is None:
            num_inducing = INDUCING_PER_DIM * d
        num_inducing = min(_check_int(method, "num_inducing", num_inducing, 1), n)
        inducing_points = initial_inducing_points(
            num_inducing, d, seed, dtype=train_X.dtype, device=train_X.device
        )
    base = get_covar_module_with_dim_scaled_prior(ard_num_dims=d, use_rbf_kernel=kernel == "rbf")
    model = SingleTaskGP(
        train_X,
        train_Y,
        train_Yvar=train_Yvar,
        covar_module=base,
        input_transform=input_transform,
        outcome_transform=outcome_transform,
    )
    # The kernel needs the model's likelihood (VFE's trace term uses its noise), which
    # SingleTaskGP builds (learned or fixed noise): wrap the base kernel afterwards.
    model.covar_module = kernel_classes[method](
        model.covar_module, inducing_points.to(train_X), model.likelihood
    )
    return model


def _fit(model: SingleTaskGP) -> SingleTaskGP:
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll)
    model.eval()
    return model


@register_surrogate("vfe", "Sparse GP, Titsias' variational free energy (SGPR), 5d inducing points")
def fit_vfe(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    num_inducing: int | None = None,
    kernel: str = "rbf",
    seed: int = 0,
) -> SingleTaskGP:
    """Titsias' VFE sparse GP (see the module docstring), fitted by ``fit_gpytorch_mll``.

    Args:
        num_inducing: Number of inducing points (default ``5 d``, at most ``n``).
        kernel: ``"rbf"`` (default) or ``"matern"`` (Matern-5/2), ARD.
        seed: Seed of the uniform initialization of the inducing points.

    Example:
        >>> model = fit_surrogate("vfe", X, Y, bounds=bounds)
    """
    model = build_sparse_gp(
        "vfe",
        train_X,
        train_Y,
        input_transform=input_transform,
        outcome_transform=outcome_transform,
        train_Yvar=train_Yvar,
        num_inducing=num_inducing,
        kernel=kernel,
        seed=seed,
    )
    return _fit(model)


@register_surrogate("fitc", "Sparse GP, FITC (Snelson & Ghahramani) marginal likelihood, 5d inducing points")
def fit_fitc(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    num_inducing: int | None = None,
    kernel: str = "rbf",
    seed: int = 0,
) -> SingleTaskGP:
    """The FITC sparse GP (see the module docstring), fitted by ``fit_gpytorch_mll``.

    Args:
        num_inducing: Number of inducing points (default ``5 d``, at most ``n``).
        kernel: ``"rbf"`` (default) or ``"matern"`` (Matern-5/2), ARD.
        seed: Seed of the uniform initialization of the inducing points.

    Example:
        >>> model = fit_surrogate("fitc", X, Y, bounds=bounds)
    """
    model = build_sparse_gp(
        "fitc",
        train_X,
        train_Y,
        input_transform=input_transform,
        outcome_transform=outcome_transform,
        train_Yvar=train_Yvar,
        num_inducing=num_inducing,
        kernel=kernel,
        seed=seed,
    )
    return _fit(model)
