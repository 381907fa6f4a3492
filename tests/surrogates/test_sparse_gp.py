"""The sparse GPs ``vfe`` and ``fitc``: objectives and predictions against dense formulas
built by hand with ``torch.linalg``, the exact-GP limit ``Z = X``, and BoTorch acquisition
through ``fit_surrogate``."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from botorch.acquisition import (
    LogExpectedImprovement,
    UpperConfidenceBound,
    qLogNoisyExpectedImprovement,
)
from botorch.models import SingleTaskGP
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from botorch.optim import optimize_acqf
from botorch.optim.closures import get_loss_closure
from gpytorch import settings
from gpytorch.kernels import RBFKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.operators import LowRankRootAddedDiagLinearOperator
from torch import Tensor
from torch.overrides import TorchFunctionMode

from dsbo.errors import ConfigError
from dsbo.surrogates import available_surrogates, fit_surrogate
from dsbo.surrogates.sparse_gp import (
    FITCKernel,
    VFEKernel,
    build_sparse_gp,
    initial_inducing_points,
    woodbury_log_prob,
)

from .helpers import uniform

DTYPE = torch.double
BOUNDS = torch.tensor([[-1.0, 2.0], [3.0, 5.0]], dtype=DTYPE)
LENGTHSCALE = torch.tensor([[0.25, 0.4]], dtype=DTYPE)
NOISE = 0.05
MEAN = 0.3


def _f(X: Tensor) -> Tensor:
    return (torch.sin(2.0 * X[..., :1]) + torch.cos(1.5 * X[..., 1:])) * 2.0 + 1.0


def _normalize(X: Tensor) -> Tensor:
    return (X - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])


def _model(method: str, X: Tensor, Z: Tensor, jitter: float | None = None) -> SingleTaskGP:
    """A sparse GP with fixed hyperparameters and inducing points ``Z`` (unit cube)."""
    model = build_sparse_gp(
        method,
        X,
        _f(X),
        input_transform=Normalize(d=2, bounds=BOUNDS),
        outcome_transform=Standardize(m=1),
        inducing_points=Z,
    )
    model.covar_module.base_kernel.lengthscale = LENGTHSCALE
    model.likelihood.noise = NOISE
    model.mean_module.constant = MEAN
    if jitter is not None:
        model.covar_module.jitter = jitter
    return model


def _dense(model: SingleTaskGP, A: Tensor, B: Tensor) -> Tensor:
    """``k(A, B)`` of the model's base kernel, dense (inputs in the unit cube)."""
    return model.covar_module.base_kernel(A, B).to_dense().detach()


def _nystrom(model: SingleTaskGP, A: Tensor, B: Tensor) -> Tensor:
    """``Q_AB = K_AZ (K_ZZ + jitter I)^{-1} K_ZB`` by hand."""
    Z = model.covar_module.inducing_points.detach()
    Kzz = _dense(model, Z, Z) + model.covar_module.jitter * torch.eye(len(Z), dtype=DTYPE)
    return _dense(model, A, Z) @ torch.linalg.solve(Kzz, _dense(model, Z, B))


def _log_priors(model: SingleTaskGP) -> Tensor:
    """Each prior exactly once: the lengthscale prior and the noise prior."""
    kernel, noise_covar = model.covar_module.base_kernel, model.likelihood.noise_covar
    return (
        kernel.lengthscale_prior.log_prob(kernel.lengthscale).sum()
        + noise_covar.noise_prior.log_prob(noise_covar.noise).sum()
    ).detach()


def _fitted_objective(model: SingleTaskGP, woodbury: bool = True) -> Tensor:
    """The objective ``fit_gpytorch_mll`` maximizes, from BoTorch's own loss closure, in the
    context the factories fit in (``woodbury``) or in BoTorch's default (dense Cholesky)."""
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with woodbury_log_prob() if woodbury else contextlib.nullcontext():
        return -get_loss_closure(mll)().detach()


@pytest.fixture(scope="module")
def data():
    X = uniform(BOUNDS, 14, seed=11)
    Z = initial_inducing_points(5, 2, seed=3)
    return X, Z


@pytest.fixture(params=["lazy", "eager"])
def kernel_evaluation(request):
    """GPyTorch's process-wide ``lazily_evaluate_kernels`` on (its default) and off: two
    threads using GPyTorch at once can leave it off, and the predictions must not change."""
    with settings.lazily_evaluate_kernels(request.param == "lazy"):
        yield request.param


# (a) ----------------------------------------------------------------------------------------
def test_vfe_objective_is_titsias_bound(data):
    """log N(y | mu, Q + s2 I) - tr(K - Q) / (2 s2) + log priors, divided by n (GPyTorch's
    scaling), including the trace term and each prior exactly once."""
    X, Z = data
    model = _model("vfe", X, Z)
    assert type(model.covar_module) is VFEKernel
    Xn, y, n = _normalize(X), model.train_targets, X.shape[0]
    K, Q = _dense(model, Xn, Xn), _nystrom(model, Xn, Xn)
    eye = torch.eye(n, dtype=DTYPE)
    log_density = torch.distributions.MultivariateNormal(
        torch.full((n,), MEAN, dtype=DTYPE), Q + NOISE * eye
    ).log_prob(y)
    trace = torch.trace(K - Q) / (2 * NOISE)
    assert trace / n > 1e-2  # large enough that a missing trace term would show
    expected = (log_density - trace + _log_priors(model)) / n
    for woodbury in (True, False):
        assert torch.allclose(_fitted_objective(model, woodbury), expected, rtol=0, atol=1e-6)
    # Each prior once: GPyTorch's InducingPointKernel alone would count the noise prior twice.
    assert len(list(model.named_priors())) == 2


# (b) ----------------------------------------------------------------------------------------
def test_fitc_objective_is_snelson_likelihood(data):
    """log N(y | mu, Q + diag(K - Q) + s2 I) + log priors, divided by n; no trace term; the
    covariance keeps its low-rank-plus-diagonal (Woodbury) structure."""
    X, Z = data
    model = _model("fitc", X, Z)
    assert type(model.covar_module) is FITCKernel
    Xn, y, n = _normalize(X), model.train_targets, X.shape[0]
    K, Q = _dense(model, Xn, Xn), _nystrom(model, Xn, Xn)
    correction = torch.diag(torch.diag(K - Q))
    assert correction.diagonal().mean() > 1e-2  # a missing correction would show
    covar = Q + correction + NOISE * torch.eye(n, dtype=DTYPE)
    log_density = torch.distributions.MultivariateNormal(
        torch.full((n,), MEAN, dtype=DTYPE), covar
    ).log_prob(y)
    expected = (log_density + _log_priors(model)) / n
    for woodbury in (True, False):
        assert torch.allclose(_fitted_objective(model, woodbury), expected, rtol=0, atol=1e-6)
    assert list(model.added_loss_terms()) == []
    marginal = model.likelihood(model(*model.train_inputs))
    covar = marginal.lazy_covariance_matrix.evaluate_kernel()
    assert isinstance(covar, LowRankRootAddedDiagLinearOperator)


class _LargestTensor(TorchFunctionMode):
    """Records the largest number of elements of any tensor a torch function returns."""

    def __init__(self) -> None:
        super().__init__()
        self.numel = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, Tensor):
                self.numel = max(self.numel, t.numel())
        return out


@pytest.mark.parametrize("method", ["vfe", "fitc"])
@pytest.mark.usefixtures("kernel_evaluation")
def test_objective_and_predictions_never_form_an_n_by_n_matrix(method):
    """The fitted objective (and its gradient) and the posterior cost O(n m^2): no tensor
    reaches n x n (BoTorch's default log_prob would form it and take its Cholesky)."""
    n = 400
    X = uniform(BOUNDS, n, seed=8)
    model = _model(method, X, initial_inducing_points(5, 2, seed=9))
    model.train()
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with _LargestTensor() as largest, woodbury_log_prob():
        loss = get_loss_closure(mll)()
        loss.backward()
    assert largest.numel < n * n // 10
    with _LargestTensor() as dense:
        get_loss_closure(mll)()
    assert dense.numel >= n * n  # the check above can fail
    model.eval()
    with _LargestTensor() as largest, torch.no_grad():
        post = model.posterior(uniform(BOUNDS, 3, seed=10))
        _ = (post.mean, post.variance)
    assert largest.numel < n * n // 10


# (c) ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["vfe", "fitc"])
def test_inducing_points_at_training_inputs_give_the_exact_gp(method):
    """With Z = X (no jitter), the objective and the predictions equal the exact GP's."""
    X = uniform(BOUNDS, 8, seed=5)
    X_test = uniform(BOUNDS, 6, seed=6)
    model = _model(method, X, _normalize(X), jitter=0.0)
    exact = SingleTaskGP(
        X,
        _f(X),
        covar_module=RBFKernel(ard_num_dims=2),
        input_transform=Normalize(d=2, bounds=BOUNDS),
        outcome_transform=Standardize(m=1),
    )
    exact.covar_module.lengthscale = LENGTHSCALE
    exact.likelihood.noise = NOISE
    exact.mean_module.constant = MEAN
    mll_sparse, mll_exact = _fitted_objective(model), _fitted_objective(exact)
    # The exact GP's objective without its (unregularized) kernel has no lengthscale prior.
    kernel = model.covar_module.base_kernel
    ls_prior = kernel.lengthscale_prior.log_prob(kernel.lengthscale).sum().detach()
    assert torch.allclose(mll_sparse, mll_exact + ls_prior / X.shape[0], rtol=0, atol=1e-8)
    model.eval()
    exact.eval()
    with torch.no_grad():
        for points in (X_test, X, torch.cat([X[:3], X_test])):
            post, ref = model.posterior(points), exact.posterior(points)
            assert torch.allclose(post.mean, ref.mean, rtol=0, atol=1e-8)
            assert torch.allclose(
                post.distribution.covariance_matrix,
                ref.distribution.covariance_matrix,
                rtol=0,
                atol=1e-8,
            )


# (d) ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["vfe", "fitc"])
@pytest.mark.usefixtures("kernel_evaluation")
def test_predictive_matches_dense_formulas(method, data):
    """mean = mu + K_*m S K_mn L^-1 (y - mu), cov = K_** - Q_** + K_*m S K_m* with
    S = (K_mm + K_mn L^-1 K_nm)^-1 and L = diag(K_nn - Q_nn) + s2 I (FITC, Snelson) or
    L = s2 I (VFE, Titsias); at new points, at the training points and in batches."""
    X, Z = data
    model = _model(method, X, Z)
    model.eval()
    Xn, n = _normalize(X), X.shape[0]
    y = model.train_targets
    Zd = model.covar_module.inducing_points.detach()
    Kmm = _dense(model, Zd, Zd) + model.covar_module.jitter * torch.eye(len(Zd), dtype=DTYPE)
    Knm = _dense(model, Xn, Zd)
    Lam = torch.full((n,), NOISE, dtype=DTYPE)
    if method == "fitc":
        Lam = Lam + torch.diag(_dense(model, Xn, Xn) - _nystrom(model, Xn, Xn))
    S = torch.linalg.inv(Kmm + Knm.T @ (Knm / Lam.unsqueeze(-1)))
    ostd = model.outcome_transform.stdvs.squeeze()
    omean = model.outcome_transform.means.squeeze()

    def dense_predictive(points: Tensor) -> tuple[Tensor, Tensor]:
        Pn = _normalize(points)
        Ksm = _dense(model, Pn, Zd)
        mean = MEAN + Ksm @ S @ Knm.T @ ((y - MEAN) / Lam)
        cov = _dense(model, Pn, Pn) - _nystrom(model, Pn, Pn) + Ksm @ S @ Ksm.T
        return omean + ostd * mean, ostd**2 * cov  # back to raw outcome units

    X_test = uniform(BOUNDS, 6, seed=7)
    with torch.no_grad():
        for points in (X_test, X, torch.cat([X, X_test])):
            post = model.posterior(points)
            mean, cov = dense_predictive(points)
            assert torch.allclose(post.mean.squeeze(-1), mean, rtol=0, atol=1e-8)
            assert torch.allclose(post.distribution.covariance_matrix, cov, rtol=0, atol=1e-8)
        batch = X_test.view(3, 2, 2)
        post = model.posterior(batch)
        for b in range(3):
            mean, cov = dense_predictive(batch[b])
            assert torch.allclose(post.mean[b].squeeze(-1), mean, rtol=0, atol=1e-8)
            assert torch.allclose(post.distribution.covariance_matrix[b], cov, rtol=0, atol=1e-8)


@pytest.mark.usefixtures("kernel_evaluation")
def test_the_two_predictives_differ(data):
    """Sanity check that (d) can tell VFE's predictive from FITC's on the same parameters."""
    X, Z = data
    X_test = uniform(BOUNDS, 6, seed=7)
    with torch.no_grad():
        vfe, fitc = (_model(m, X, Z).eval().posterior(X_test).mean for m in ("vfe", "fitc"))
    assert (vfe - fitc).abs().max() > 1e-3


# (e) ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def problem_4d():
    bounds = torch.tensor([[-1.0] * 4, [2.0] * 4], dtype=DTYPE)

    def f(X: Tensor) -> Tensor:
        return (torch.sin(2.0 * X).sum(-1) - 0.1 * X.pow(2).sum(-1)).unsqueeze(-1)

    X = uniform(bounds, 200, seed=21)
    X_test = uniform(bounds, 50, seed=22)
    return X, f(X), X_test, f(X_test), bounds


@pytest.mark.parametrize("method, kernel_type", [("vfe", VFEKernel), ("fitc", FITCKernel)])
def test_fit_surrogate_and_optimize_acquisition(method, kernel_type, problem_4d):
    X, Y, X_test, Y_test, bounds = problem_4d
    assert method in available_surrogates()
    model = fit_surrogate({"name": method, "maxiter": 40}, X, Y, bounds=bounds)
    assert isinstance(model, SingleTaskGP) and type(model.covar_module) is kernel_type
    assert type(model.covar_module.base_kernel) is RBFKernel
    Z = model.covar_module.inducing_points
    assert Z.shape == (20, 4)  # 5 d
    assert not torch.allclose(Z, initial_inducing_points(20, 4, seed=0))  # learned
    with torch.no_grad():
        post = model.posterior(X_test)
        assert post.mean.shape == (50, 1) and post.variance.shape == (50, 1)
        assert (post.variance > 0).all()
        mse = (post.mean - Y_test).pow(2).mean()
        assert mse < 0.5 * Y_test.var(), f"held-out MSE {mse:.3g} vs variance {Y_test.var():.3g}"
        assert model.posterior(X_test[:6].view(3, 2, 4)).mean.shape == (3, 2, 1)

    tiny = {"num_restarts": 2, "raw_samples": 16, "options": {"maxiter": 10}}
    for acqf, q in (
        (LogExpectedImprovement(model, best_f=Y.max()), 1),
        (UpperConfidenceBound(model, beta=2.0), 1),
        (qLogNoisyExpectedImprovement(model, X_baseline=X[:30]), 2),
    ):
        candidates, value = optimize_acqf(acqf, bounds=bounds, q=q, **tiny)
        assert candidates.shape == (q, 4) and torch.isfinite(value)
        assert ((candidates >= bounds[0]) & (candidates <= bounds[1])).all()
        # A deep copy (as BONSAI makes) predicts the same and keeps its own likelihood.
        clone = copy.deepcopy(acqf)
        assert clone.model.covar_module.likelihood is clone.model.likelihood
        assert torch.allclose(clone(candidates.unsqueeze(0)), acqf(candidates.unsqueeze(0)))


def test_options(problem_4d):
    X, Y, *_, bounds = problem_4d
    a = build_sparse_gp("vfe", X[:30], Y[:30], seed=4).covar_module.inducing_points
    b = build_sparse_gp("fitc", X[:30], Y[:30], seed=4).covar_module.inducing_points
    c = build_sparse_gp("vfe", X[:30], Y[:30], seed=5).covar_module.inducing_points
    assert a.shape == (20, 4) and torch.equal(a, b) and not torch.equal(a, c)
    assert ((a >= 0) & (a <= 1)).all()  # the normalized input cube
    # At most n inducing points, also when asked for more.
    assert build_sparse_gp("fitc", X[:7], Y[:7]).covar_module.inducing_points.shape == (7, 4)
    assert (
        build_sparse_gp("vfe", X, Y, num_inducing=300).covar_module.inducing_points.shape[0] == 200
    )
    assert build_sparse_gp("vfe", X, Y, num_inducing=3).covar_module.inducing_points.shape[0] == 3
    kernel = build_sparse_gp("vfe", X, Y, kernel="matern").covar_module.base_kernel
    assert kernel.nu == 2.5 and kernel.lengthscale.shape == (1, 4)
    for bad in ({"kernel": "linear"}, {"num_inducing": 0}, {"seed": -1}, {"maxiter": 0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            fit_surrogate({"name": "fitc", **bad}, X[:10], Y[:10], bounds=bounds)
