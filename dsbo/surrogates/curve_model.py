r"""Learning-curve surrogates: a zoo curve model fitted on every reported point of every curve,
read as a BoTorch model over (configuration, step).

The zoo's curve models (:class:`dsbo_zoo.DeepKernelCurveGP`, DyHPO's deep-kernel GP, and
:class:`dsbo_zoo.PowerLawEnsemble`, a deep ensemble of power-law curves) regress the value
at step :math:`t` of configuration :math:`x` on rows ``[x | t/T | s/T | y_1..y_s]``
(:mod:`dsbo_zoo.learning_curves`). :class:`CurveSurrogate` builds those rows from the curves
(values standardized with one mean and scale over all of them; a share ``truncate`` of the
rows with their prefix cut short, so that the model also learns to predict far ahead),
trains the module with Lightning's ``Trainer`` (:func:`~dsbo.surrogates.lightning_bridge.train_module`)
and keeps it: the next fit continues from these weights for ``warm_epochs`` steps instead of
``epochs`` from scratch (DyHPO refits after every new observation).

:class:`CurveModel` is the fitted surrogate as a BoTorch :class:`~botorch.models.model.Model`
whose inputs are ``[x (d, unit cube) | step]``: the prefix of a row is the observed curve of
the configuration it names (up to the step before), none for a configuration never trained.
Its posterior is Gaussian, jointly over the ``q`` points of a t-batch, in the units of the
curves, so BoTorch's analytic acquisitions (the multi-fidelity EI of
:mod:`dsbo.stopping.freeze_thaw`) take it unchanged.

The curve models register by name (:func:`~dsbo.surrogates.curve_catalogue.register_curve_model`;
:data:`~dsbo.surrogates.curve_catalogue.CURVE_MODELS` is the registry): the two above are
registered here, each a factory that builds its zoo class (the zoo never imports dsbo).

Example:
    >>> surrogate = CurveSurrogate("deep-kernel-gp", num_params=2, max_steps=27)
    >>> model = surrogate.fit(configs, curves)       # configs m x d, curves[i] = values at steps 1..
    >>> model.posterior(torch.tensor([[0.2, 0.7, 27.0]])).mean   # configuration 0.2, 0.7 at step 27
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.curve_catalogue import CURVE_MODELS, register_curve_model
from dsbo.surrogates.zoo_models import observation_noise_variance

#: Added to the diagonal of a predictive covariance (standardized units).
JITTER = 1e-8
#: Rows per chunk when a posterior is computed over many t-batches.
CHUNK_ROWS = 512
#: Digits a configuration is rounded to when it is matched to an observed curve.
MATCH_DIGITS = 9


def _key(config: Tensor) -> tuple[float, ...]:
    return tuple(round(float(v), MATCH_DIGITS) for v in config)


@register_curve_model(
    "deep-kernel-gp", "DyHPO's deep-kernel GP over (configuration, step, curve prefix)"
)
def deep_kernel_gp(num_params: int, max_steps: int, **options: Any) -> torch.nn.Module:
    """:class:`dsbo_zoo.DeepKernelCurveGP` (Wistuba et al. 2022, DyHPO), its defaults."""
    from dsbo_zoo.deep_kernel_curve_gp import DeepKernelCurveGP

    return DeepKernelCurveGP(num_params=num_params, max_steps=max_steps, **options)


@register_curve_model(
    "power-law-ensemble", "a deep ensemble of power-law curves (Domhan et al. 2015; LC-Net)"
)
def power_law_ensemble(num_params: int, max_steps: int, **options: Any) -> torch.nn.Module:
    """:class:`dsbo_zoo.PowerLawEnsemble` (Klein et al. 2017's LC-Net idea), its defaults."""
    from dsbo_zoo.power_law_ensemble import PowerLawEnsemble

    return PowerLawEnsemble(num_params=num_params, max_steps=max_steps, **options)


class CurveSurrogate:
    """A zoo curve model kept across fits (warm-started).

    Args:
        name: A registered curve model (:data:`~dsbo.surrogates.curve_catalogue.CURVE_MODELS`).
        num_params: ``d``, the configuration's coordinates (unit cube).
        max_steps: ``T``, the steps of a full curve.
        options: Constructor options of the zoo class (e.g. ``{"inducing": 128}``).
        epochs: Adam steps of the first fit (from a fresh initialization).
        warm_epochs: Adam steps of every later fit (from the previous weights).
        truncate: Share of training rows whose prefix is cut short (:mod:`dsbo_zoo.learning_curves`).
        device: Where the module trains (``"cpu"``, ``"cuda"``, ``"auto"``, ...).
    """

    def __init__(
        self,
        name: str,
        num_params: int,
        max_steps: int,
        options: Mapping[str, Any] | None = None,
        epochs: int = 300,
        warm_epochs: int = 50,
        truncate: float = 0.3,
        device: str = "cpu",
    ) -> None:
        if name not in CURVE_MODELS:
            raise ConfigError(
                f"curve model {name!r}: choose one of {', '.join(CURVE_MODELS.names())}"
            )
        for field, value, low in (("epochs", epochs, 1), ("warm_epochs", warm_epochs, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(
                    f"curve model {name}: {field} must be an integer >= {low}, got {value!r}"
                )
        if (
            isinstance(truncate, bool)
            or not isinstance(truncate, int | float)
            or not 0 <= truncate <= 1
        ):
            raise ConfigError(
                f"curve model {name}: truncate must be a number in [0, 1], got {truncate!r}"
            )
        from dsbo.surrogates.lightning_bridge import resolve_device

        factory = CURVE_MODELS.get(name)
        try:
            self.module = factory(num_params=num_params, max_steps=max_steps, **dict(options or {}))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"curve model {name}: {exc}") from None
        self.name, self.num_params, self.max_steps = name, int(num_params), int(max_steps)
        self.epochs, self.warm_epochs, self.truncate = epochs, warm_epochs, float(truncate)
        self.device = resolve_device(device, f"curve model {name}")
        self.fits = 0
        #: Seconds the last :meth:`fit` took (building the rows and training).
        self.fit_seconds = 0.0

    def fit(self, configs: Tensor, curves: Sequence[Sequence[float]]) -> CurveModel:
        """Train on every observed value (warm-started after the first fit) and return the model.

        Args:
            configs: ``m x d`` configurations in the unit cube, one per curve.
            curves: ``curves[i]``: the values of configuration ``i`` at steps ``1, 2, ...``
                (larger is better: BoTorch's direction).

        Raises:
            DataError: for fewer than two observed values, or values that are not finite.
        """
        from dsbo.surrogates.lightning_bridge import train_module

        start = time.perf_counter()
        configs = torch.as_tensor(configs, dtype=torch.float64)
        values = torch.tensor([v for curve in curves for v in curve], dtype=torch.float64)
        if values.numel() < 2:
            raise DataError(
                f"curve model {self.name}: needs at least 2 observed values, got {values.numel()}"
            )
        if not torch.isfinite(values).all():
            raise DataError(f"curve model {self.name}: the curves hold values that are not finite")
        mean, scale = values.mean(), values.std().clamp_min(1e-9)
        standardized = [[(v - float(mean)) / float(scale) for v in curve] for curve in curves]
        layout = self.module.layout
        generator = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, ()).item()))
        rows, y = layout.training_rows(configs, standardized, self.truncate, generator)
        epochs = self.epochs if self.fits == 0 else self.warm_epochs
        if epochs > 0:
            dtype = next(self.module.parameters()).dtype
            train_module(self.module, rows.to(dtype), y.to(dtype), epochs, device=self.device)
        self.fits += 1
        self.fit_seconds = time.perf_counter() - start
        return CurveModel(self.module, configs, standardized, float(mean), float(scale))


class CurveModel(Model):
    """A fitted curve module as a BoTorch model over ``[x (d, unit cube) | step]`` (module
    docstring): one output, Gaussian posterior in the units of the curves.

    Attributes:
        module: The trained zoo module.
        mean, scale: The standardization of the curve values.
    """

    num_outputs = 1

    def __init__(
        self,
        module: torch.nn.Module,
        configs: Tensor,
        curves: Sequence[Sequence[float]],
        mean: float,
        scale: float,
    ) -> None:
        super().__init__()
        self.module, self.mean, self.scale = module, mean, scale
        self.layout = module.layout
        T = self.layout.max_steps
        self._prefixes = torch.zeros(len(curves), T, dtype=torch.float64)
        self._lengths = torch.zeros(len(curves), dtype=torch.float64)
        self._index: dict[tuple[float, ...], int] = {}
        for i, curve in enumerate(curves):
            self._prefixes[i, : len(curve)] = torch.tensor(list(curve), dtype=torch.float64)
            self._lengths[i] = len(curve)
            self._index[_key(configs[i])] = i

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size()

    def rows(self, X: Tensor) -> Tensor:
        """The zoo rows of ``X`` (``n x (d + 1)``): each configuration's observed prefix (up to
        the step before the row's step), none for a configuration without a curve."""
        d, T = self.layout.num_params, self.layout.max_steps
        configs, steps = X[:, :d].double(), X[:, d].double().round()
        if ((steps < 1) | (steps > T)).any():
            raise DataError(f"a curve model's step column must hold steps 1..{T}")
        found = [self._index.get(_key(c)) for c in configs]
        prefixes = torch.zeros(len(X), T, dtype=torch.float64)
        lengths = torch.zeros(len(X), dtype=torch.float64)
        for row, i in enumerate(found):
            if i is not None:
                prefixes[row], lengths[row] = self._prefixes[i], self._lengths[i]
        return self.layout.rows(configs, steps, prefixes, torch.minimum(lengths, steps - 1))

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """The Gaussian posterior at ``X`` (``batch x q x (d + 1)`` or ``q x (d + 1)``)."""
        if output_indices is not None and list(output_indices) != [0]:
            raise DataError(f"a curve model has one output; got output_indices={output_indices}")
        unbatched = X.ndim == 2
        Xb = X.unsqueeze(0) if unbatched else X
        batch, q = Xb.shape[:-2], Xb.shape[-2]
        flat = Xb.reshape(-1, q, Xb.shape[-1])
        param = next(self.module.parameters())
        per_chunk = max(1, CHUNK_ROWS // q)
        means, covs = [], []
        with torch.no_grad():
            for start in range(0, flat.shape[0], per_chunk):
                chunk = flat[start : start + per_chunk]
                rows = self.rows(chunk.reshape(-1, chunk.shape[-1])).to(
                    device=param.device, dtype=param.dtype
                )
                mean, cov = self.module.predict_mean_cov(rows)
                if q == 1:  # one point per t-batch (an analytic acquisition): the diagonal
                    blocks = cov.diagonal().reshape(-1, 1, 1)
                else:
                    blocks = torch.stack(
                        [
                            cov[i * q : (i + 1) * q, i * q : (i + 1) * q]
                            for i in range(chunk.shape[0])
                        ]
                    )
                noise = torch.zeros(blocks.shape[0], q, dtype=torch.float64)
                if observation_noise is True:  # what an observation adds, per row or one value
                    added = torch.as_tensor(
                        observation_noise_variance(self.module, rows), dtype=torch.float64
                    )
                    noise = noise + (added.cpu().reshape(-1, q) if added.ndim else added)
                means.append(mean.reshape(-1, q).double().cpu())
                covs.append(blocks.double().cpu() + torch.diag_embed(noise))
        mean = torch.cat(means).reshape(*batch, q)
        cov = torch.cat(covs).reshape(*batch, q, q)
        cov = cov + JITTER * torch.eye(q, dtype=torch.float64)
        mean, cov = self.mean + self.scale * mean, self.scale**2 * cov
        if unbatched:
            mean, cov = mean.squeeze(0), cov.squeeze(0)
        posterior = GPyTorchPosterior(MultivariateNormal(mean.to(X), cov.to(X)))
        return posterior_transform(posterior) if posterior_transform is not None else posterior


__all__ = [
    "CURVE_MODELS",
    "CurveModel",
    "CurveSurrogate",
    "deep_kernel_gp",
    "power_law_ensemble",
    "register_curve_model",
]
