"""sparse-linear: the posterior equals a dense Bayesian linear regression on the same features;
the evidence fit is a stationary point; a SparseEmbedding checkpoint as the feature map."""

import logging
import warnings

import numpy as np
import pytest
import pytorch_lightning as pl
import scipy.optimize
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates import fit_surrogate
from dsbo.surrogates.sparse_linear import log_evidence
from dsbo_zoo.sparse_embedding import SparseEmbedding

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)


def sparse_data(n=15, D=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, D, generator=g) * (torch.rand(n, D, generator=g) < 0.3)
    w = torch.randn(D, generator=g)
    Y = (X @ w + 0.1 * torch.randn(n, generator=g) + 3.0).unsqueeze(-1)
    return X.double(), Y.double()


def dense_blr(Phi, y, Phis, v, s2):
    """Function-space form of BLR: y ~ GP(0, v phi^T phi') + N(0, s2)."""
    K = v * Phi @ Phi.T + s2 * np.eye(len(y))
    Ks = v * Phis @ Phi.T
    mean = Ks @ np.linalg.solve(K, y)
    cov = v * Phis @ Phis.T - Ks @ np.linalg.solve(K, Ks.T)
    return mean, cov


def test_posterior_equals_dense_bayesian_linear_regression():
    X, Y = sparse_data()
    model = fit_surrogate(
        {"name": "sparse-linear", "prior_var": 2.0, "noise_var": 0.3, "fit_hyperparameters": False},
        X,
        Y,
    )
    Xs, _ = sparse_data(n=4, seed=1)
    y = Y.numpy().ravel()
    mu, sd = y.mean(), y.std(ddof=1)  # BoTorch's Standardize
    mean, cov = dense_blr(X.numpy(), (y - mu) / sd, Xs.numpy(), 2.0, 0.3)
    post = model.posterior(Xs)
    np.testing.assert_allclose(
        post.mean.detach().numpy().ravel(), mean * sd + mu, rtol=1e-8, atol=1e-8
    )
    np.testing.assert_allclose(
        post.mvn.covariance_matrix.detach().numpy(), cov * sd**2, rtol=1e-6, atol=1e-7
    )
    # weight space: Sigma = (Phi^T Phi / s2 + I / v)^-1, mu = Sigma Phi^T y / s2
    Phi = X.numpy()
    Sigma = np.linalg.inv(Phi.T @ Phi / 0.3 + np.eye(10) / 2.0)
    np.testing.assert_allclose(model.weight_cov.numpy(), Sigma, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        model.weight_mean.numpy(), Sigma @ Phi.T @ ((y - mu) / sd) / 0.3, rtol=1e-8, atol=1e-10
    )
    noisy = model.posterior(Xs, observation_noise=True).mvn.covariance_matrix.detach().numpy()
    np.testing.assert_allclose(
        np.diag(noisy - post.mvn.covariance_matrix.detach().numpy()), 0.3 * sd**2, rtol=1e-6
    )


def test_weight_draws_use_the_precision_factor_and_follow_the_posterior():
    """sample_weights(z) = mu + L^-T z with L L^T = Sigma^-1: the draws' covariance is
    exactly L^-T L^-1 = Sigma, and their Monte Carlo mean and covariance match."""
    X, Y = sparse_data()
    model = fit_surrogate(
        {"name": "sparse-linear", "prior_var": 2.0, "noise_var": 0.3, "fit_hyperparameters": False},
        X,
        Y,
    )
    L = model.precision_cholesky.numpy()
    np.testing.assert_allclose(
        L @ L.T, np.linalg.inv(model.weight_cov.numpy()), rtol=1e-8, atol=1e-8
    )
    mu, Sigma = model.weight_mean.numpy(), model.weight_cov.numpy()
    Z = np.random.default_rng(0).standard_normal((10, 3))
    np.testing.assert_allclose(
        model.sample_weights(Z) - mu[:, None], np.linalg.solve(L.T, Z), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(
        model.sample_weights(Z[:, 0]), model.sample_weights(Z)[:, 0], rtol=1e-12
    )
    draws = model.sample_weights(np.random.default_rng(1).standard_normal((10, 200_000)))
    np.testing.assert_allclose(draws.mean(1), mu, atol=4 * np.sqrt(np.diag(Sigma).max() / 200_000))
    np.testing.assert_allclose(np.cov(draws), Sigma, atol=0.02 * np.abs(Sigma).max())


def test_evidence_fit_maximizes_the_marginal_likelihood():
    X, Y = sparse_data(n=30, seed=2)
    model = fit_surrogate("sparse-linear", X, Y)
    y = Y.ravel()
    y = (y - y.mean()) / y.std()

    def neg(log_params):
        return -log_evidence(X, y, float(np.exp(log_params[0])), float(np.exp(log_params[1])))

    best = scipy.optimize.minimize(
        neg,
        np.log([1.0, 0.1]),
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000},
    )
    assert -neg(np.log([model.prior_var, model.noise_var])) >= -best.fun - 1e-6
    np.testing.assert_allclose([model.prior_var, model.noise_var], np.exp(best.x), rtol=1e-2)


def test_checkpoint_feature_map(tmp_path):
    torch.manual_seed(0)
    module = SparseEmbedding(5, 3, embedding_dim=8, hidden=(8,), lam=0.1)
    x, labels = torch.randn(12, 5), torch.arange(3).repeat(4)
    trainer = pl.Trainer(
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, DataLoader(TensorDataset(x, labels), batch_size=12))
    path = tmp_path / "embedding.ckpt"
    trainer.save_checkpoint(path)
    X, Y = torch.randn(10, 5, dtype=torch.double), torch.randn(10, 1, dtype=torch.double)
    model = fit_surrogate(
        {"name": "sparse-linear", "checkpoint": str(path), "fit_hyperparameters": False}, X, Y
    )
    Phi = module.double().eval()(X).detach()
    y = Y.ravel()
    plain = fit_surrogate({"name": "sparse-linear", "fit_hyperparameters": False}, Phi, Y)
    Xs = torch.randn(3, 5, dtype=torch.double)
    torch.testing.assert_close(model.posterior(Xs).mean, plain.posterior(module(Xs).detach()).mean)
    assert model.weight_mean.shape == (8,) and torch.isfinite(y).all()
    with pytest.raises(DataError, match="takes 5 input dimensions"):
        fit_surrogate(
            {"name": "sparse-linear", "checkpoint": str(path)}, torch.randn(6, 4), torch.randn(6, 1)
        )
    with pytest.raises(ConfigError, match="is not a file"):
        fit_surrogate({"name": "sparse-linear", "checkpoint": str(tmp_path / "none.ckpt")}, X, Y)
    with pytest.raises(ConfigError, match="noise_var"):
        fit_surrogate({"name": "sparse-linear", "noise_var": -1.0}, X, Y)
