r"""A trained zoo module as a BoTorch ``Model``: :func:`model_from_module`.

The module is wrapped by its ``posterior_kind``:

- ``"ensemble"`` (SimpleSMB, PosteriorSMB, NeuralEnsemble): :class:`NeuralEnsembleModel`, a
  BoTorch ``EnsembleModel`` whose ``s`` members are the module's ``s`` networks (posterior
  draws); its :class:`NeuralEnsemblePosterior` accepts BoTorch's index base samples and also
  ``N(0, 1)`` base samples (dsbo's policies pass a ``SobolQMCNormalSampler``), which it maps
  to members through the normal CDF (stratified member indices);
- ``"gaussian"`` (NeuralLinTS, NeuralUCB): :class:`NeuralGaussianModel`, whose posterior is a
  ``GPyTorchPosterior`` over the module's ``predict_mean_cov``.

The wrappers carry the ``Normalize`` and ``Standardize`` transforms the module was trained in
(eval mode), so the posterior is in raw coordinates. BoTorch works in float64; the module runs
in its own dtype and device, and the model casts at the boundary. Nothing here needs
Lightning: a module is any ``torch.nn.Module`` with the zoo's interface. Training is
:mod:`dsbo.surrogates.lightning_bridge`; the registered surrogates are
:mod:`dsbo.surrogates.neural`.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.errors import UnsupportedError
from botorch.models.ensemble import EnsembleModel
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from botorch.posteriors.ensemble import EnsemblePosterior
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from dsbo.errors import ConfigError

POSTERIOR_KINDS = ("ensemble", "gaussian")
#: Jitter added to the diagonal of a Gaussian posterior covariance (standardized units), so
#: that coincident candidates in a q-batch do not make the Cholesky factor fail.
GAUSSIAN_JITTER = 1e-9


def observation_noise_variance(module: torch.nn.Module, inputs: Tensor) -> Tensor | float:
    """What an observation adds to a ``"gaussian"`` zoo module's variance at ``inputs``
    (``... x n x width``; ``predict_mean_cov`` gives the noise-free value's): the module's
    per-row ``noise_variance(inputs)`` (``... x n``, heteroscedastic, e.g. the power-law
    ensemble's aleatoric variance), else its scalar ``noise_var`` (the deep-kernel GP, the
    Bayesian linear head), else 0."""
    per_row = getattr(module, "noise_variance", None)
    if callable(per_row):
        return per_row(inputs)
    return float(getattr(module, "noise_var", 0.0))


# ---------------------------------------------------------------------------- posteriors
class NeuralEnsemblePosterior(EnsemblePosterior):
    r"""An ``EnsemblePosterior`` that also takes ``N(0, 1)`` base samples.

    BoTorch samples ensembles with index base samples (``IndexSampler``). dsbo's policies pass
    a ``SobolQMCNormalSampler`` to every model; for those, one normal number :math:`z` per MC
    sample (shared by all t-batches) selects the member :math:`k` with
    :math:`\Phi(z) \in (w_1 + \dots + w_{k-1}, w_1 + \dots + w_k]`: quasi-random normals give
    stratified member indices, and the same base samples give the same members everywhere.
    """

    @property
    def base_sample_shape(self) -> torch.Size:
        return self.batch_shape + torch.Size([1])

    @property
    def batch_range(self) -> tuple[int, int]:
        return (0, len(self.batch_shape))

    def rsample_from_base_samples(self, sample_shape: torch.Size, base_samples: Tensor) -> Tensor:
        if base_samples.is_floating_point():
            u = torch.special.ndtr(base_samples[..., 0].to(self.values))
            bounds = self.weights.cumsum(-1).contiguous()
            index = torch.searchsorted(bounds, u.contiguous() * bounds[-1])
            base_samples = index.clamp(max=self.ensemble_size - 1)
        return super().rsample_from_base_samples(sample_shape, base_samples)


# ---------------------------------------------------------------------------- models
# ---------------------------------------------------------------------------- models
class _ZooModel:
    """What both wrappers share: the module, the transforms it was trained in, no stored
    training inputs, no batch shape. Mixed in before the BoTorch base class."""

    _num_outputs = 1

    def __init__(
        self,
        module: torch.nn.Module,
        input_transform: InputTransform | None = None,
        outcome_transform: OutcomeTransform | None = None,
    ) -> None:
        super().__init__()
        self.module = module
        if input_transform is not None:
            self.input_transform = input_transform
        if outcome_transform is not None:
            self.outcome_transform = outcome_transform
        self.eval()

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size()

    def _set_transformed_inputs(self) -> None:
        """No stored training inputs to transform (the module holds what it learned)."""

    def _revert_to_original_inputs(self) -> None:
        """No stored training inputs to restore."""

    def module_input(self, X: Tensor) -> Tensor:
        """``X`` on the module's device and in its dtype (the fitted module stays where it was
        trained; BoTorch's tensors may live elsewhere, e.g. on the CPU)."""
        parameter = next(self.module.parameters())
        return X.to(device=parameter.device, dtype=parameter.dtype)


class NeuralEnsembleModel(_ZooModel, EnsembleModel):
    r"""A zoo module with ``posterior_kind = "ensemble"`` as a BoTorch ``EnsembleModel``.

    ``forward`` maps transformed inputs ``batch x n x d`` to ``batch x s x n x 1``: the
    module's ``s`` draws (``module(x)`` is ``s x batch x n``).
    """

    def forward(self, X: Tensor) -> Tensor:
        values = self.module(self.module_input(X))  # s x batch x n
        return values.movedim(0, -2).unsqueeze(-1).to(X)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> NeuralEnsemblePosterior:
        """The ensemble posterior at ``X`` (``batch x q x d``, raw coordinates)."""
        self.eval()
        if isinstance(kwargs.get("observation_noise"), Tensor):
            raise UnsupportedError("neural ensemble surrogates do not model observation noise")
        Xt = self.transform_inputs(X)
        values = self.forward(Xt)
        if hasattr(self, "outcome_transform"):
            values, _ = self.outcome_transform.untransform(values, X=X)
        if output_indices is not None:
            values = values[..., output_indices]
        posterior = NeuralEnsemblePosterior(values=values, weights=self.ensemble_weights)
        if posterior_transform is not None:
            return posterior_transform(posterior=posterior, X=X)
        return posterior


class NeuralGaussianModel(_ZooModel, Model):
    r"""A zoo module with ``posterior_kind = "gaussian"`` (``predict_mean_cov``) as a BoTorch
    model with a ``GPyTorchPosterior``: jointly Gaussian over the ``q`` points of a t-batch.

    ``observation_noise=True`` adds the module's ``noise_var`` (if it has one, e.g. the BLR
    noise of NeuralLinTS) in standardized units.
    """

    @property
    def num_outputs(self) -> int:
        return self._num_outputs

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: PosteriorTransform | None = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """The Gaussian posterior at ``X`` (``batch x q x d`` or ``q x d``, raw coordinates)."""
        self.eval()
        if output_indices is not None and list(output_indices) != [0]:
            raise UnsupportedError(f"the model has one output; got output_indices={output_indices}")
        Xt = self.transform_inputs(X)
        unbatched = Xt.ndim == 2
        if unbatched:
            Xt = Xt.unsqueeze(0)
        batch = Xt.shape[:-2]
        inputs = self.module_input(Xt.reshape(-1, *Xt.shape[-2:]))
        mean, cov = self.module.predict_mean_cov(inputs)
        mean = mean.reshape(*batch, -1).to(X)
        cov = cov.reshape(*batch, *cov.shape[-2:]).to(X)
        diag = torch.full_like(mean, GAUSSIAN_JITTER)
        if isinstance(observation_noise, Tensor):
            raise UnsupportedError("pass observation_noise=True; a noise tensor is not supported")
        if observation_noise:
            noise = observation_noise_variance(self.module, inputs)
            diag = diag + (noise.reshape(mean.shape).to(X) if isinstance(noise, Tensor) else noise)
        cov = cov + torch.diag_embed(diag)
        if unbatched:
            mean, cov = mean.squeeze(0), cov.squeeze(0)
        posterior = GPyTorchPosterior(MultivariateNormal(mean, cov))
        if hasattr(self, "outcome_transform"):
            posterior = self.outcome_transform.untransform_posterior(posterior, X=X)
        if posterior_transform is not None:
            return posterior_transform(posterior)
        return posterior


def model_from_module(
    module: torch.nn.Module,
    input_transform: InputTransform | None = None,
    outcome_transform: OutcomeTransform | None = None,
) -> Model:
    """Wrap a trained zoo module as a BoTorch model by its ``posterior_kind``.

    Args:
        module: A trained :mod:`models` LightningModule with ``posterior_kind`` ``"ensemble"``
            (``module(x)`` is ``s x batch``) or ``"gaussian"`` (``predict_mean_cov``).
        input_transform: Maps raw inputs to the coordinates the module was trained in.
        outcome_transform: The (fitted) transform of the training targets; the posterior is
            untransformed with it.

    Returns:
        A single-output model in eval mode whose posterior is in raw coordinates.
    """
    kind = getattr(module, "posterior_kind", None)
    for transform in (input_transform, outcome_transform):
        if transform is not None:
            transform.eval()
    module.eval()
    if kind == "ensemble":
        return NeuralEnsembleModel(module, input_transform, outcome_transform)
    if kind == "gaussian":
        if not callable(getattr(module, "predict_mean_cov", None)):
            raise ConfigError(
                f"{type(module).__name__} has posterior_kind 'gaussian' but no predict_mean_cov"
            )
        return NeuralGaussianModel(module, input_transform, outcome_transform)
    raise ConfigError(
        f"{type(module).__name__}.posterior_kind={kind!r}: a zoo surrogate needs one of {POSTERIOR_KINDS}"
    )


__all__ = [
    "GAUSSIAN_JITTER",
    "POSTERIOR_KINDS",
    "NeuralEnsembleModel",
    "NeuralEnsemblePosterior",
    "NeuralGaussianModel",
    "model_from_module",
]
