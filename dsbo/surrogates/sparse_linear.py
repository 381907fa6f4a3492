r"""The ``sparse-linear`` surrogate: a sparse embedding as the feature map, a Bayesian linear head.

The model is Bayesian linear regression on sparse features :math:`\phi(x) \in \mathbb R^D`
(Paria thesis ch. 5: a FLOPs-regularized embedding, :class:`~dsbo_zoo.sparse_embedding.SparseEmbedding`),

.. math::  y = \phi(x)^\top w + \varepsilon,\quad w \sim \mathcal N(0, v I_D),\quad
           \varepsilon \sim \mathcal N(0, s^2),

in standardized outcome units, with the closed-form posterior
:math:`w \mid \mathcal D \sim \mathcal N(\mu, \Sigma)`,
:math:`\Sigma = (\Phi^\top\Phi / s^2 + I/v)^{-1}`, :math:`\mu = \Sigma \Phi^\top y / s^2`, and
predictive :math:`f(x) \sim \mathcal N(\phi(x)^\top\mu, \phi(x)^\top\Sigma\phi(x))`. The prior
and noise variances are fitted by maximizing the evidence with MacKay's fixed-point updates
(Bishop, PRML 3.5.2: :math:`\gamma = \sum_i \lambda_i / (\lambda_i + 1/v)` over the eigenvalues
:math:`\lambda_i` of :math:`\Phi^\top\Phi/s^2`, :math:`v = \|\mu\|^2/\gamma`,
:math:`s^2 = \|y - \Phi\mu\|^2 / (n - \gamma)`) unless ``fit_hyperparameters: false``.

Because the posterior over the weights is explicit, a Thompson draw is a weight vector
:math:`\tilde w \sim \mathcal N(\mu, \Sigma)` and the maximizer of the draw over a pool of
candidates is a **maximum-inner-product search** :math:`\arg\max_c \langle \phi(c), \tilde w\rangle`:
the ``pool`` policy (:mod:`dsbo.acquisition.pool`) answers it through an inverted index on the
sparse pool codes.

Feature map (option ``checkpoint``): a ``SparseEmbedding`` checkpoint written by
``python -m dsbo.train fit`` (loaded with ``weights_only=True``), applied to the raw inputs; or,
without it, the identity: the inputs already are the sparse codes (a pool file of embeddings).
The ``Normalize`` input transform of :func:`~dsbo.surrogates.fit_surrogate` is **not** applied:
the embedding was trained on raw features, and scaling sparse codes per column would change the
inner products the index computes. The outcome ``Standardize`` is used as everywhere.

Options: ``checkpoint`` (path or ``null``), ``prior_var`` (1.0), ``noise_var`` (0.1; both are
the starting point of the evidence fit, or the fixed values), ``fit_hyperparameters`` (true),
``max_iter`` (200 fixed-point iterations).

Example:
    >>> model = fit_surrogate({"name": "sparse-linear"}, X_codes, Y)
    >>> model.weight_mean.shape, model.posterior(X_codes[:3]).mean.shape
    (torch.Size([256]), torch.Size([3, 1]))
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from scipy.linalg import solve_triangular
from torch import Tensor

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.registry import register_surrogate

#: Diagonal jitter of the predictive covariance (standardized units).
JITTER = 1e-9
MIN_VARIANCE = 1e-8
#: Rows embedded per forward pass when a whole pool goes through the feature map.
EMBED_CHUNK = 65_536


class FeatureMap:
    """``x -> phi(x)``: the identity, or a trained ``SparseEmbedding`` from a checkpoint."""

    def __init__(self, checkpoint: str | None = None) -> None:
        self.checkpoint = None if checkpoint is None else str(checkpoint)
        self.module = None
        if checkpoint is not None:
            path = Path(checkpoint)
            if not path.is_file():
                raise ConfigError(f"sparse-linear: option checkpoint={str(path)!r} is not a file")
            from dsbo_zoo.sparse_embedding import SparseEmbedding

            try:
                self.module = (
                    SparseEmbedding.load_from_checkpoint(
                        path, map_location="cpu", weights_only=True
                    )
                    .double()
                    .eval()
                )
            except Exception as exc:  # a checkpoint of another model, or a corrupt file
                raise ConfigError(
                    f"sparse-linear: cannot load a SparseEmbedding from {str(path)!r}: {exc}"
                ) from exc

    @property
    def key(self) -> str:
        return self.checkpoint or "identity"

    def in_dim(self) -> int | None:
        return None if self.module is None else int(self.module.hparams.in_dim)

    def __call__(self, X: Tensor) -> Tensor:
        """``... x d`` raw inputs -> ``... x D`` features (float64)."""
        X = X.to(torch.double)
        if self.module is None:
            return X
        shape = X.shape
        with torch.no_grad():
            out = self.module(X.reshape(-1, shape[-1]))
        return out.reshape(*shape[:-1], out.shape[-1])

    def codes(self, features: sp.spmatrix | np.ndarray) -> sp.csr_matrix:
        """The sparse feature matrix of a whole pool (``N x d`` rows -> ``N x D`` CSR)."""
        if self.module is None:
            return sp.csr_matrix(features, dtype=np.float64)
        blocks = []
        for start in range(0, features.shape[0], EMBED_CHUNK):
            block = features[start : start + EMBED_CHUNK]
            block = block.toarray() if sp.issparse(block) else np.asarray(block)
            with torch.no_grad():
                out = self.module(torch.as_tensor(block, dtype=torch.double)).numpy()
            blocks.append(sp.csr_matrix(out))
        return sp.vstack(blocks).tocsr()


def blr_posterior(
    Phi: Tensor, y: Tensor, prior_var: float, noise_var: float
) -> tuple[Tensor, Tensor, Tensor]:
    r"""Weight posterior :math:`(\mu, \Sigma)` of Bayesian linear regression (module
    docstring), and the lower Cholesky factor :math:`L` of the precision
    :math:`\Lambda = \Sigma^{-1} = L L^\top`: a posterior draw is :math:`\mu + L^{-\top} z`,
    :math:`z \sim \mathcal N(0, I)` (its covariance is :math:`L^{-\top} L^{-1} = \Sigma`), one
    triangular solve and no new factorization per Thompson sample."""
    D = Phi.shape[-1]
    precision = Phi.T @ Phi / noise_var + torch.eye(D, dtype=Phi.dtype) / prior_var
    L = torch.linalg.cholesky(precision)
    cov = torch.cholesky_inverse(L)
    mean = cov @ (Phi.T @ y) / noise_var
    return mean, cov, L


def log_evidence(Phi: Tensor, y: Tensor, prior_var: float, noise_var: float) -> float:
    r""":math:`\log \mathcal N(y; 0, v \Phi\Phi^\top + s^2 I)`, the marginal likelihood."""
    n = len(y)
    K = prior_var * Phi @ Phi.T + noise_var * torch.eye(n, dtype=Phi.dtype)
    return float(
        torch.distributions.MultivariateNormal(torch.zeros(n, dtype=Phi.dtype), K).log_prob(y)
    )


def fit_evidence(
    Phi: Tensor,
    y: Tensor,
    prior_var: float,
    noise_var: float,
    max_iter: int = 200,
    tol: float = 1e-8,
) -> tuple[float, float]:
    """MacKay's fixed point for ``(prior_var, noise_var)`` (module docstring)."""
    n = len(y)
    eig = torch.linalg.eigvalsh(Phi.T @ Phi).clamp_min(0)
    v, s2 = float(prior_var), float(noise_var)
    for _ in range(max_iter):
        mean, _, _ = blr_posterior(Phi, y, v, s2)
        lam = eig / s2
        gamma = float((lam / (lam + 1.0 / v)).sum())
        resid = float(((y - Phi @ mean) ** 2).sum())
        new_v = max(float(mean @ mean) / max(gamma, 1e-12), MIN_VARIANCE)
        new_s2 = max(resid / max(n - gamma, 1e-12), MIN_VARIANCE)
        done = abs(math.log(new_v / v)) < tol and abs(math.log(new_s2 / s2)) < tol
        v, s2 = new_v, new_s2
        if done:
            break
    return v, s2


class SparseLinearModel(Model):
    r"""Bayesian linear regression on a (sparse) feature map, as a BoTorch model.

    Attributes:
        weight_mean, weight_cov: :math:`\mu` (``D``) and :math:`\Sigma` (``D x D``) in
            standardized units.
        prior_var, noise_var: The (fitted) variances.
        feature_map: The :class:`FeatureMap`.
        precision_cholesky: Lower Cholesky factor :math:`L` of :math:`\Sigma^{-1}`, kept from
            the fit (:func:`blr_posterior`): :meth:`sample_weights` draws with it.
    """

    def __init__(
        self,
        feature_map: FeatureMap,
        weight_mean: Tensor,
        weight_cov: Tensor,
        precision_cholesky: Tensor,
        prior_var: float,
        noise_var: float,
        outcome_transform: OutcomeTransform | None = None,
    ) -> None:
        super().__init__()
        self.feature_map = feature_map
        self.weight_mean, self.weight_cov = weight_mean, weight_cov
        self.precision_cholesky = precision_cholesky
        self.prior_var, self.noise_var = prior_var, noise_var
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform.eval()

    @property
    def num_outputs(self) -> int:
        return 1

    def sample_weights(self, z: np.ndarray) -> np.ndarray:
        r"""Posterior weight draws :math:`\mu + L^{-\top} z` for standard-normal ``z``
        (``D`` or ``D x m``): exact draws from :math:`\mathcal N(\mu, \Sigma)` at the cost of
        one triangular solve."""
        mu = self.weight_mean.numpy()
        step = solve_triangular(self.precision_cholesky.numpy(), z, lower=True, trans="T")
        return (mu if step.ndim == 1 else mu[:, None]) + step

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """The joint Gaussian posterior at ``X`` (``batch x q x d`` or ``q x d``, raw inputs)."""
        if output_indices is not None and list(output_indices) != [0]:
            raise UnsupportedError(f"the model has one output; got output_indices={output_indices}")
        if isinstance(observation_noise, Tensor):
            raise UnsupportedError("pass observation_noise=True; a noise tensor is not supported")
        phi = self.feature_map(X)
        mean = (phi @ self.weight_mean).to(X)
        cov = (phi @ self.weight_cov @ phi.transpose(-1, -2)).to(X)
        diag = torch.full_like(mean, JITTER + (self.noise_var if observation_noise else 0.0))
        posterior = GPyTorchPosterior(MultivariateNormal(mean, cov + torch.diag_embed(diag)))
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        return posterior_transform(posterior) if posterior_transform is not None else posterior


@register_surrogate(
    "sparse-linear", "Bayesian linear regression on a trained sparse embedding (Paria ch. 5)"
)
def make_sparse_linear(
    train_X: Tensor,
    train_Y: Tensor,
    *,
    input_transform: InputTransform | None = None,
    outcome_transform: OutcomeTransform | None = None,
    train_Yvar: Tensor | None = None,
    checkpoint: str | None = None,
    prior_var: float = 1.0,
    noise_var: float = 0.1,
    fit_hyperparameters: bool = True,
    max_iter: int = 200,
) -> SparseLinearModel:
    """Fit the ``sparse-linear`` surrogate (module docstring); ``input_transform`` is unused."""
    for name, value in (("prior_var", prior_var), ("noise_var", noise_var)):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and value > 0)
        ):
            raise ConfigError(
                f"sparse-linear: option {name} must be a finite number > 0, got {value!r}"
            )
    if not isinstance(fit_hyperparameters, bool):
        raise ConfigError(
            f"sparse-linear: option fit_hyperparameters must be true or false, got {fit_hyperparameters!r}"
        )
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ConfigError(
            f"sparse-linear: option max_iter must be a positive integer, got {max_iter!r}"
        )
    if train_Yvar is not None:
        raise ConfigError(
            "sparse-linear: known observation noise (Yvar) is not supported; the noise variance is fitted"
        )
    feature_map = FeatureMap(checkpoint)
    expected = feature_map.in_dim()
    if expected is not None and train_X.shape[-1] != expected:
        raise DataError(
            f"sparse-linear: the embedding takes {expected} input dimensions, train_X has {train_X.shape[-1]}"
        )
    y = train_Y
    if outcome_transform is not None:
        outcome_transform.train()
        y, _ = outcome_transform(train_Y)
    y = y.reshape(-1).to(torch.double)
    Phi = feature_map(train_X)
    if fit_hyperparameters:
        prior_var, noise_var = fit_evidence(
            Phi, y, float(prior_var), float(noise_var), max_iter=max_iter
        )
    mean, cov, precision_cholesky = blr_posterior(Phi, y, float(prior_var), float(noise_var))
    return SparseLinearModel(
        feature_map,
        mean,
        cov,
        precision_cholesky,
        float(prior_var),
        float(noise_var),
        outcome_transform,
    )


__all__ = [
    "FeatureMap",
    "SparseLinearModel",
    "blr_posterior",
    "fit_evidence",
    "log_evidence",
    "make_sparse_linear",
]
