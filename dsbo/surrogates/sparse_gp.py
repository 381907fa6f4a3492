r"""Sparse (inducing-point) GP baselines of the subset-selection paper: ``vfe`` and ``fitc``.

Both approximate an exact GP on ``n`` training points through ``m << n`` inducing inputs
``Z`` (learned, like every hyperparameter, by maximizing the objective below). With
``K_nm = k(X, Z)``, ``K_mm = k(Z, Z)`` (plus a jitter of ``1e-6`` on its diagonal) and the
Nystrom approximation

.. math::
    Q_{nn} = K_{nm} K_{mm}^{-1} K_{mn},

the two methods differ in their objective (Quinonero-Candela and Rasmussen, 2005, unify FITC
and DTC; DTC's likelihood is VFE's without the trace term):

- **VFE** (Titsias, 2009, the collapsed variational bound, "SGPR")

  .. math::
      \mathcal F = \log \mathcal N(y \mid 0, Q_{nn} + \sigma^2 I)
                   - \frac{1}{2\sigma^2} \operatorname{tr}(K_{nn} - Q_{nn}),

  a lower bound on the exact log marginal likelihood. It is GPyTorch's
  ``InducingPointKernel`` (:class:`VFEKernel`) inside a BoTorch ``SingleTaskGP``: in
  training mode the kernel returns the low-rank ``Q_nn`` and registers the trace term as an
  added loss term, which ``ExactMarginalLogLikelihood`` adds to the log density.
- **FITC** (Snelson and Ghahramani, 2005, "sparse pseudo-input GP")

  .. math::
      \log \mathcal N\big(y \mid 0, Q_{nn} + \operatorname{diag}(K_{nn} - Q_{nn})
                          + \sigma^2 I\big),

  the exact marginal likelihood of a GP whose training conditional is fully independent
  given the inducing variables; no trace term. :class:`FITCKernel` returns the low-rank root
  plus the diagonal correction (a ``LowRankRootAddedDiagLinearOperator``), so the noise is
  added to the diagonal and GPyTorch solves and takes log-determinants with Woodbury and the
  determinant lemma in ``O(n m^2)``.

Predictions (both: training values ``f`` and test values ``f_*`` are independent given the
inducing values, and the test conditional is exact) are, with
``L = sigma^2 I`` (VFE, Titsias' predictive) or ``L = diag(K_nn - Q_nn) + sigma^2 I`` (FITC)
and ``S = (K_mm + K_mn L^{-1} K_nm)^{-1}``::

    mean = K_*m S K_mn L^{-1} y,      cov = K_** - Q_** + K_*m S K_m*,

(``y`` minus the constant prior mean) computed by GPyTorch's SGPR prediction strategy from
an ``m x m`` Woodbury cache. With
``Z = X`` both reduce to the exact GP.

Both factories take the options

- ``num_inducing``: ``m``, default ``5 d`` as in the paper (appendix C.3: "the number of
  inducing points is set as 5n", its ``n`` being the dimension), capped at the number of
  training points (also when given explicitly, so a BO loop can start below ``m`` points);
- ``kernel``: ``"rbf"`` (default, the paper's) or ``"matern"`` (= ``"matern52"``), ARD, with
  BoTorch's dimension-scaled lengthscale prior and no outputscale, as in the ``gp`` baseline;
- ``seed``: the inducing inputs start uniformly at random in the normalized input cube
  (the paper's "initialized by a uniform sampling"), drawn from a ``torch.Generator`` seeded
  with ``seed`` (default 0; the global RNG is untouched);
- ``maxiter``: optional cap on the L-BFGS-B iterations of each fitting attempt (default:
  BoTorch's, i.e. to convergence).

Cost (measured on a loaded 2-core machine, one thread): an evaluation of the objective and
its gradient is ``O(n m^2)`` (n = 1000, d = 10, m = 50: 10 ms against 245 ms for the exact
GP), but with ``m d`` inducing coordinates to learn the fits need many more iterations, so a
fit to convergence is *slower* than the exact ``gp``: 56 s (VFE) and 143 s (FITC) against
16 s there; on 200 points in 4-d, 1.0-1.8 s (VFE) and 8.6-12.5 s (FITC) against 0.2-0.8 s.
FITC converges slowest, its objective creeping up for ~2000 iterations while the noise
shrinks (its known tendency to underestimate the noise, Bauer et al. 2016). ``maxiter``
bounds this.

Hyperparameters, noise and inducing inputs are fitted with BoTorch's ``fit_gpytorch_mll`` on
``ExactMarginalLogLikelihood``, which divides the objective (priors and added loss terms
included) by ``n``. The paper also switches the sparse GP on only after ``30 d``
evaluations: that is a campaign policy, not part of these surrogates.

Deviations from a bare ``InducingPointKernel`` in a ``SingleTaskGP`` (GPyTorch 1.15), each
checked in ``tests/surrogates/test_sparse_gp.py``:

- GPyTorch registers the likelihood as a child module of the kernel and collects priors
  without de-duplication, so the noise prior enters the objective twice. The kernels here
  keep a plain (unregistered) reference to the likelihood.
- GPyTorch 1.15 evaluates the test block of the joint prior eagerly, so the switch of
  ``SGPRPredictionStrategy`` to the base kernel for that block never fires; with
  ``sgpr_diagonal_correction`` on (the default) the test block is
  ``Q_** + diag(K_** - Q_**)`` and the training block also gets ``diag(K_nn - Q_nn)``:
  stock SGPR predicts with FITC's training block and a fully independent test conditional,
  i.e. neither Titsias' nor FITC's predictive. Here the training block is built by
  :class:`SparsePredictionStrategy` (``Q`` or ``Q + diag(K - Q)``), the test block is the
  exact ``k(X_*, X_*)`` and the cross-covariances are ``Q_*n`` (also when the test inputs
  equal the training inputs).
- ``K_mm`` gets a jitter of ``1e-6`` (:data:`INDUCING_JITTER`).
- BoTorch switches GPyTorch's fast ``log_prob`` off at import, which makes
  ``ExactMarginalLogLikelihood`` build the dense ``n x n`` covariance and take its Cholesky
  factor (``O(n^3)``); the factories fit under :func:`woodbury_log_prob` instead.

- The model is a :class:`SparseSingleTaskGP`, whose prior covariance at prediction time is
  always GPyTorch's lazily evaluated kernel tensor, whatever ``lazily_evaluate_kernels`` says.
  GPyTorch picks the prediction strategy from that lazy tensor and slices the joint prior of
  training and test points through it; with the flag off (a process-wide switch that two
  threads using GPyTorch at once can leave off) a plain ``SingleTaskGP`` would evaluate the
  joint ``(n + t) x (n + t)`` kernel densely and predict with the exact GP's strategy on it:
  neither predictive, and ``O(n^3)``.

Limitations: the SGPR prediction strategy has no fantasy updates, so acquisition functions
that fantasize (knowledge gradient, ``condition_on_observations``) are not supported.

References:
    M. Titsias. Variational learning of inducing variables in sparse Gaussian processes.
    AISTATS 2009.
    E. Snelson and Z. Ghahramani. Sparse Gaussian processes using pseudo-inputs. NIPS 2005.
    J. Quinonero-Candela and C. E. Rasmussen. A unifying view of sparse approximate Gaussian
    process regression. JMLR 6, 2005.
    M. Bauer, M. van der Wilk and C. E. Rasmussen. Understanding probabilistic sparse Gaussian
    process approximations. NIPS 2016.

Example:
    >>> model = fit_surrogate({"name": "fitc", "num_inducing": 20}, X, Y, bounds=bounds)
    >>> acqf = LogExpectedImprovement(model, best_f=Y.max())
"""

from __future__ import annotations

import copy
import functools
import math

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch import settings
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import InducingPointKernel, Kernel
from gpytorch.lazy import LazyEvaluatedKernelTensor
from gpytorch.likelihoods import Likelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.models.exact_prediction_strategies import SGPRPredictionStrategy
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

#: Jitter added to the diagonal of ``K_mm`` (GPflow's default). Without it FITC's fit drives
#: inducing points together until ``K_mm`` is numerically singular (condition number 4e12 on
#: a 200-point 4-d problem), its gradients turn to noise and L-BFGS-B stops abnormally, which
#: makes ``fit_gpytorch_mll`` restart from prior samples up to five times.
INDUCING_JITTER = 1e-6

#: Eval-time caches of ``InducingPointKernel`` (recomputed on demand, never copied).
_CACHES = ("_cached_kernel_mat", "_cached_kernel_inv_root")


class SparsePredictionStrategy(SGPRPredictionStrategy):
    """GPyTorch's SGPR prediction (an ``m x m`` Woodbury cache) on the prior of a
    :class:`_SparseKernel`: the training block is the kernel's ``training_covariance``
    (``Q`` for VFE, ``Q + diag(K - Q)`` for FITC), the cross-covariances are ``Q`` and the
    test block is ``K`` (the kernel's prediction-time output)."""

    def __init__(self, train_inputs, train_prior_dist, train_labels, likelihood, kernel):
        self._train_covariance = kernel.training_covariance(train_inputs[0])
        prior = MultivariateNormal(train_prior_dist.mean, self._train_covariance)
        super().__init__(train_inputs, prior, train_labels, likelihood)

    def exact_prediction(self, test_mean, test_test_covar, test_train_covar):
        if not isinstance(test_train_covar, MatmulLinearOperator):
            # The test inputs equal the training inputs, so the kernel saw one set and returned
            # k(X, X). Test and training values are independent given the inducing values:
            # the cross-covariance is Q.
            covar = self._train_covariance
            if isinstance(covar, LowRankRootAddedDiagLinearOperator):
                covar = covar._linear_op
            root = covar.root.to_dense()
            root = root.expand(*test_train_covar.shape[:-2], *root.shape[-2:])
            test_train_covar = MatmulLinearOperator(root, root.mT)
        return super().exact_prediction(test_mean, test_test_covar, test_train_covar)


class SparseSingleTaskGP(SingleTaskGP):
    """A BoTorch ``SingleTaskGP`` around a :class:`VFEKernel` or :class:`FITCKernel`.

    At prediction time its prior covariance is a ``LazyEvaluatedKernelTensor`` built here,
    not by ``Kernel.__call__`` under GPyTorch's global ``lazily_evaluate_kernels`` flag: the
    SGPR prediction strategy is chosen from it, and the joint prior of training and test
    points is sliced into ``k(X_*, X_*)`` and ``Q_*n`` without forming the ``n x n`` block.
    In training mode it is ``SingleTaskGP.forward`` unchanged.
    """

    def forward(self, x: Tensor) -> MultivariateNormal:
        if self.training:
            return super().forward(x)
        mean = self.mean_module(x)
        return MultivariateNormal(mean, LazyEvaluatedKernelTensor(x, x, kernel=self.covar_module))


class _SparseKernel(InducingPointKernel):
    """Shared part of :class:`VFEKernel` and :class:`FITCKernel`.

    - The likelihood is a plain reference, not a child module (GPyTorch collects priors
      without de-duplication, so the model's noise prior would be counted twice).
    - At prediction time a set with itself gives the exact ``k(X1, X1)`` (the test block: the
      test conditional is exact) and two different sets give ``Q_12``; the training block is
      built by :class:`SparsePredictionStrategy` from :meth:`training_covariance`.
    - ``deepcopy`` honours the memo, so a copied model's kernel uses the copied likelihood.
    """

    #: Added to the diagonal of ``K_mm`` (see :data:`INDUCING_JITTER`).
    jitter: float = INDUCING_JITTER

    #: Whether the training block of the prior carries ``diag(K - Q)`` (FITC) or not (VFE).
    diagonal_correction: bool = False

    def __init__(
        self,
        base_kernel: Kernel,
        inducing_points: Tensor,
        likelihood: Likelihood | None = None,
        active_dims: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__(base_kernel, inducing_points, likelihood, active_dims=active_dims)
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

    @property
    def _inducing_mat(self) -> Tensor:
        """``K_mm + jitter I`` (cached at prediction time, like GPyTorch's)."""
        if not self.training and hasattr(self, "_cached_kernel_mat"):
            return self._cached_kernel_mat
        res = to_dense(self.base_kernel(self.inducing_points, self.inducing_points))
        res = res + self.jitter * torch.eye(res.shape[-1], dtype=res.dtype, device=res.device)
        if not self.training:
            self._cached_kernel_mat = res
        return res

    def _root(self, x: Tensor) -> Tensor:
        """``R`` with ``R R^T = Q = K_xm K_mm^{-1} K_mx`` (``... x n x m``)."""
        return to_dense(self.base_kernel(x, self.inducing_points)) @ self._inducing_inv_root

    def training_covariance(
        self, x: Tensor
    ) -> LowRankRootLinearOperator | LowRankRootAddedDiagLinearOperator:
        """The prior covariance of the training values: ``Q_xx``, plus ``diag(K_xx - Q_xx)``
        when :attr:`diagonal_correction` is set (FITC)."""
        if x.ndim == 1:
            x = x.unsqueeze(-1)
        root = self._root(x)
        covar = LowRankRootLinearOperator(root)
        if not self.diagonal_correction:
            return covar
        k_diag = to_dense(self.base_kernel(x, x, diag=True))
        correction = (k_diag - root.pow(2).sum(-1)).clamp(0, math.inf)
        return LowRankRootAddedDiagLinearOperator(covar, DiagLinearOperator(correction))

    def _predictive_forward(self, x1: Tensor, x2: Tensor, diag: bool) -> LinearOperator | Tensor:
        if x1.ndim == 1:
            x1 = x1.unsqueeze(-1)
        if x2.ndim == 1:
            x2 = x2.unsqueeze(-1)
        if torch.equal(x1, x2):
            return to_dense(self.base_kernel(x1, x2, diag=diag))
        root1, root2 = self._root(x1), self._root(x2)
        if diag:
            return (root1 * root2).sum(-1)
        return MatmulLinearOperator(root1, root2.mT)

    def prediction_strategy(self, train_inputs, train_prior_dist, train_labels, likelihood):
        return SparsePredictionStrategy(
            train_inputs, train_prior_dist, train_labels, likelihood, kernel=self
        )


class VFEKernel(_SparseKernel):
    r"""SGPR kernel of Titsias (2009).

    In training mode it is GPyTorch's ``InducingPointKernel``: the covariance is
    ``Q = K_nm K_mm^{-1} K_mn`` and the added loss term ``-tr(K_nn - Q_nn) / (2 sigma^2)``
    enters ``ExactMarginalLogLikelihood``. Predictions are Titsias':
    ``mean = K_*m S K_mn y / sigma^2``, ``cov = K_** - Q_** + K_*m S K_m*``.

    Args:
        base_kernel: The kernel ``k`` being approximated.
        inducing_points: ``m x d`` initial inducing inputs (a learnable parameter).
        likelihood: The model's Gaussian likelihood (its noise enters the trace term).
    """

    diagonal_correction = False

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, **kwargs
    ) -> LinearOperator | Tensor:
        if self.training:
            return super().forward(x1, x2, diag=diag, **kwargs)
        return self._predictive_forward(x1, x2, diag)


class FITCKernel(_SparseKernel):
    r"""FITC prior of Snelson and Ghahramani (2005).

    In training mode the covariance of the training values is
    ``Q_nn + diag(K_nn - Q_nn)`` (a ``LowRankRootAddedDiagLinearOperator``: with the noise
    added, solves and log-determinants use Woodbury and the determinant lemma, ``O(n m^2)``);
    no added loss term. Predictions are FITC's: ``mean = K_*m S K_mn L^{-1} y``,
    ``cov = K_** - Q_** + K_*m S K_m*``.

    Args:
        base_kernel: The kernel ``k`` being approximated.
        inducing_points: ``m x d`` initial inducing inputs (a learnable parameter).
        likelihood: Unused (FITC needs no noise inside the kernel).
    """

    diagonal_correction = True

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, **kwargs
    ) -> LinearOperator | Tensor:
        if not self.training:
            return self._predictive_forward(x1, x2, diag)
        if not torch.equal(x1, x2):
            raise RuntimeError("x1 should equal x2 in training mode")
        covar = self.training_covariance(x1)
        return covar.diagonal(dim1=-1, dim2=-2) if diag else covar


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
) -> SparseSingleTaskGP:
    """An unfitted :class:`SparseSingleTaskGP` whose kernel is :class:`VFEKernel` (``method="vfe"``) or
    :class:`FITCKernel` (``method="fitc"``) around an ARD RBF or Matern-5/2 kernel.

    ``inducing_points`` (``m x d``, in the normalized input coordinates) overrides the
    random initialization; otherwise ``min(num_inducing or 5 d, n)`` points are drawn
    uniformly from the unit cube with a generator seeded by ``seed``.
    """
    kernel_classes = {"vfe": VFEKernel, "fitc": FITCKernel}
    if method not in kernel_classes:
        raise ConfigError(
            f"sparse GP method {method!r} is unknown; choose one of {list(kernel_classes)}"
        )
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
    model = SparseSingleTaskGP(
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


def woodbury_log_prob() -> settings.fast_computations:
    """Context in which ``MultivariateNormal.log_prob`` calls the covariance operator's own
    ``inv_quad_logdet``: exact Woodbury and determinant lemma (``O(n m^2)``) for the
    ``LowRankRootAddedDiagLinearOperator`` of these models.

    Importing BoTorch switches GPyTorch's ``fast_computations.log_prob`` off globally, so that
    ``log_prob`` builds the dense ``n x n`` covariance and takes its Cholesky factor
    (``O(n^3)``), which would defeat the sparse approximation. Only ``log_prob`` is switched
    back on: for these operators its fast path is exact (no CG or Lanczos).
    """
    return settings.fast_computations(covar_root_decomposition=False, log_prob=True, solves=False)


def _fit(model: SparseSingleTaskGP, method: str, maxiter: int | None) -> SparseSingleTaskGP:
    """Maximize the objective with ``fit_gpytorch_mll`` under :func:`woodbury_log_prob`
    (L-BFGS-B; at most ``maxiter`` iterations per attempt when given, else BoTorch's
    default)."""
    optimizer_kwargs = None
    if maxiter is not None:
        optimizer_kwargs = {"options": {"maxiter": _check_int(method, "maxiter", maxiter, 1)}}
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with woodbury_log_prob():
        fit_gpytorch_mll(mll, optimizer_kwargs=optimizer_kwargs)
    model.eval()
    return model


def fit_sparse_gp(
    method: str,
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    train_Yvar: Tensor | None = None,
    num_inducing: int | None = None,
    kernel: str = "rbf",
    seed: int = 0,
    maxiter: int | None = None,
) -> SparseSingleTaskGP:
    """The ``method`` (``vfe`` or ``fitc``) sparse GP of the module docstring, fitted by
    ``fit_gpytorch_mll``; registered as the surrogates ``vfe`` and ``fitc``.

    Args:
        num_inducing: Number of inducing points (default ``5 d``, at most ``n``).
        kernel: ``"rbf"`` (default) or ``"matern"`` (Matern-5/2), ARD.
        seed: Seed of the uniform initialization of the inducing points.
        maxiter: Optional cap on the L-BFGS-B iterations of each fitting attempt.

    Example:
        >>> model = fit_surrogate("vfe", X, Y, bounds=bounds)
    """
    model = build_sparse_gp(
        method,
        train_X,
        train_Y,
        input_transform=input_transform,
        outcome_transform=outcome_transform,
        train_Yvar=train_Yvar,
        num_inducing=num_inducing,
        kernel=kernel,
        seed=seed,
    )
    return _fit(model, method, maxiter)


fit_vfe = register_surrogate(
    "vfe", "Sparse GP, Titsias' variational free energy (SGPR), 5d inducing points"
)(functools.partial(fit_sparse_gp, "vfe"))
fit_fitc = register_surrogate(
    "fitc", "Sparse GP, FITC (Snelson & Ghahramani) marginal likelihood, 5d inducing points"
)(functools.partial(fit_sparse_gp, "fitc"))
