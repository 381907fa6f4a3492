r"""The Lightning bridge: train a zoo model on ``(X, Y)`` and return a BoTorch ``Model``.

:func:`train_module` fits a :mod:`models` LightningModule with a cheap ``pl.Trainer`` (no
logger, checkpoints, progress bar or model summary; ``max_epochs`` full-batch gradient steps
on ``(X, Y, arange(n))``, run as one Lightning epoch), and :func:`model_from_module` wraps the trained module by its ``posterior_kind``:

- ``"ensemble"`` (SimpleSMB, PosteriorSMB, NeuralEnsemble): :class:`NeuralEnsembleModel`, a
  BoTorch ``EnsembleModel`` whose ``s`` members are the module's ``s`` networks (posterior
  draws); its :class:`NeuralEnsemblePosterior` accepts BoTorch's index base samples and also
  ``N(0, 1)`` base samples (dsbo's policies pass a ``SobolQMCNormalSampler``), which it maps
  to members through the normal CDF (stratified member indices);
- ``"gaussian"`` (NeuralLinTS, NeuralUCB): :class:`NeuralGaussianModel`, whose posterior is a
  ``GPyTorchPosterior`` over the module's ``predict_mean_cov``.

The networks train on unit-cube inputs and standardized outcomes: the factories receive the
``Normalize`` and ``Standardize`` transforms built by
:func:`~dsbo.surrogates.registry.fit_surrogate`, apply them to the data, and attach them to
the returned model (eval mode), so its posterior is in raw coordinates. BoTorch works in
float64; the module runs in its own dtype (option ``dtype``) and the model casts at the
boundary.

Registered surrogates (options = module hyperparameters + training options):

===================  =============================================  ===========================
name                 module (thesis ch. 3)                          posterior
===================  =============================================  ===========================
``simple-smb``       :class:`dsbo_zoo.smb.SimpleSMB` (Alg. 3.2)     ensemble of ``num_samples``
``posterior-smb``    :class:`dsbo_zoo.smb.PosteriorSMB` (Alg. 3.3)  ensemble of ``num_samples``
``neural-ensemble``  :class:`dsbo_zoo.NeuralEnsemble`               ensemble of 10, warm start
``neural-lints``     :class:`dsbo_zoo.NeuralLinTS`                  Gaussian (BLR on features)
``neural-ucb``       :class:`dsbo_zoo.NeuralUCB`                    Gaussian (``g^T Z^-1 g``)
===================  =============================================  ===========================

Training options common to all: ``max_epochs`` (full-batch steps), ``train_tol`` (stop once
the mean squared training residual, standardized units, is below it; ``0`` disables) and
``dtype`` (``"float32"`` or ``"float64"``). Randomness (initialization, target noise) comes
from torch's global RNG, which :class:`~dsbo.campaign.Campaign` seeds before every fit, so a
campaign is reproducible on CPU.

**Warm starts.** ``neural-ensemble`` (and any surrogate with ``warm_start: true``) continues
from the weights of its previous fit. The previous module is kept in a small in-process
:class:`WarmStartCache` keyed by the surrogate name and its options and matched on *data
lineage*: an entry is reused only when its training data are a prefix of the new data (same
first rows of ``X`` and ``Y``, in order, in raw units), which is how a BO campaign's history
grows. The two outputs of a multi-output fit therefore keep separate lineages (their ``Y``
columns differ), and an unrelated data set starts fresh. The cache holds at most
``WarmStartCache.max_entries`` lineages (least recently used dropped); it is not persisted,
so a campaign resumed in a new process restarts its warm-started networks from a fresh init.
:func:`clear_warm_start_cache` empties it.

Example:
    >>> from dsbo.surrogates import fit_surrogate
    >>> model = fit_surrogate({"name": "simple-smb", "num_samples": 8, "width": 512},
    ...                       X, Y, bounds=bounds)
    >>> model.posterior(X[:3]).mean.shape
    torch.Size([3, 1])
"""

from __future__ import annotations

import copy
import inspect
import logging
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

import pytorch_lightning as pl
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
from torch.utils.data import DataLoader, Sampler, TensorDataset

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.registry import register_surrogate
from dsbo_zoo.base import ZooModule
from dsbo_zoo.neural_ensemble import NeuralEnsemble
from dsbo_zoo.neural_lints import NeuralLinTS
from dsbo_zoo.neural_ucb import NeuralUCB
from dsbo_zoo.smb import PosteriorSMB, SimpleSMB

DTYPES = {"float32": torch.float32, "float64": torch.float64}
#: Adam steps per Lightning training batch in a BO-step fit (see :func:`train_module`).
STEPS_PER_BATCH = 50
#: Lightning's accelerator for each torch device type a surrogate may train on.
LIGHTNING_ACCELERATORS = {"cpu": "cpu", "cuda": "gpu", "mps": "mps"}


def resolve_device(device: str, name: str = "surrogate") -> torch.device:
    """``"auto"`` (CUDA, else MPS, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or
    ``"mps"`` as a torch device that this machine has; a ConfigError naming it otherwise."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        mps = getattr(torch.backends, "mps", None)
        return torch.device("mps" if mps is not None and mps.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        resolved = None
    if resolved is None or resolved.type not in LIGHTNING_ACCELERATORS:
        raise ConfigError(
            f"{name}: option device={device!r}; use auto, cpu, cuda, cuda:N or mps"
        )
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available() and (resolved.index or 0) < torch.cuda.device_count(),
        "mps": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
    }[resolved.type]
    if not available:
        raise ConfigError(f"{name}: option device={device!r} is not available on this machine; use cpu or auto")
    return torch.device("cuda", resolved.index or 0) if resolved.type == "cuda" else resolved
POSTERIOR_KINDS = ("ensemble", "gaussian")
#: Jitter added to the diagonal of a Gaussian posterior covariance (standardized units), so
#: that coincident candidates in a q-batch do not make the Cholesky factor fail.
GAUSSIAN_JITTER = 1e-9
_LIGHTNING_LOGGERS = ("pytorch_lightning", "lightning.pytorch", "lightning_fabric")


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
def _module_dtype(module: torch.nn.Module) -> torch.dtype:
    return next(module.parameters()).dtype


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
        mean, cov = self.module.predict_mean_cov(self.module_input(Xt.reshape(-1, *Xt.shape[-2:])))
        mean = mean.reshape(*batch, -1).to(X)
        cov = cov.reshape(*batch, *cov.shape[-2:]).to(X)
        diag = torch.full_like(mean, GAUSSIAN_JITTER)
        if isinstance(observation_noise, Tensor):
            raise UnsupportedError("pass observation_noise=True; a noise tensor is not supported")
        if observation_noise:
            diag = diag + float(getattr(self.module, "noise_var", 0.0))
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
    module: pl.LightningModule,
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
            raise ConfigError(f"{type(module).__name__} has posterior_kind 'gaussian' but no predict_mean_cov")
        return NeuralGaussianModel(module, input_transform, outcome_transform)
    raise ConfigError(
        f"{type(module).__name__}.posterior_kind={kind!r}: a zoo surrogate needs one of {POSTERIOR_KINDS}"
    )


# ---------------------------------------------------------------------------- training
class _StopAtTolerance(pl.Callback):
    """Stop training once the module's ``train_mse`` (last step) falls below ``tol``."""

    def __init__(self, tol: float) -> None:
        self.tol = tol

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        mse = getattr(pl_module, "train_mse", None)
        if mse is not None and float(mse) < self.tol:
            trainer.should_stop = True


@contextmanager
def _quiet_lightning() -> Iterator[None]:
    """Silence Lightning's per-fit info messages and hints inside a BO step."""
    loggers = [logging.getLogger(name) for name in _LIGHTNING_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            warnings.filterwarnings("ignore", message=".*LeafSpec.*")
            warnings.filterwarnings("ignore", message=".*no `val_dataloader`.*")
            warnings.filterwarnings("ignore", message=".*smaller than the logging interval.*")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


class FullBatches(TensorDataset):
    """``TensorDataset`` that fetches a whole batch of rows with one indexing operation."""

    def __getitems__(self, indices: list[int] | Tensor) -> tuple[Tensor, ...]:
        index = torch.as_tensor(indices, dtype=torch.long)
        return tuple(t[index] for t in self.tensors)


class RepeatedFullBatch(Sampler[list[int]]):
    """Yields the full index ``0..n-1`` ``steps`` times: one epoch of ``steps`` full batches."""

    def __init__(self, n: int, steps: int) -> None:
        self.index = list(range(n))
        self.steps = steps

    def __iter__(self) -> Iterator[list[int]]:
        for _ in range(self.steps):
            yield self.index

    def __len__(self) -> int:
        return self.steps


def _as_batch(batch: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    return batch


def train_module(
    module: pl.LightningModule,
    X: Tensor,
    Y: Tensor,
    max_epochs: int,
    train_tol: float = 0.0,
    device: torch.device | str = "cpu",
) -> pl.LightningModule:
    """Fit ``module`` on ``X`` (``n x d``, model coordinates) and ``Y`` (``n``) with full-batch
    gradient steps: ``max_epochs`` steps at most, fewer if ``train_tol > 0`` is reached.

    The steps run as *one* Lightning epoch of identical full batches, each running
    :data:`STEPS_PER_BATCH` Adam steps (:meth:`dsbo_zoo.base.ZooModule.repeated_steps`, manual
    optimization; the trainer's ``max_steps`` caps the total at ``max_epochs``): Lightning's
    per-epoch machinery runs once per fit and its per-batch hooks once per
    :data:`STEPS_PER_BATCH` steps (``experiments/bench_surrogates.py`` measures its share).
    A module that is not a :class:`~dsbo_zoo.base.ZooModule` trains one step per batch.

    The module trains on ``device`` (Lightning's accelerator for it) and stays there; the
    BoTorch wrappers move their inputs to it."""
    device = torch.device(device)
    dtype = _module_dtype(module)
    n = X.shape[0]
    repeated = isinstance(module, ZooModule)
    steps_per_batch = min(STEPS_PER_BATCH, max_epochs) if repeated else 1
    data = FullBatches(X.to(dtype), Y.reshape(n).to(dtype), torch.arange(n))
    batches = -(-max_epochs // steps_per_batch)
    loader = DataLoader(data, batch_sampler=RepeatedFullBatch(n, batches), collate_fn=_as_batch)
    callbacks = [_StopAtTolerance(train_tol)] if train_tol > 0 else []
    module.train()  # a warm-started module comes back from the cache in eval mode
    if repeated:
        saved = (module.log_metrics, module.automatic_optimization, module.steps_per_batch, module.train_tol)
        # self.log costs milliseconds per step and nothing reads it inside a BO step
        module.log_metrics = False
        module.automatic_optimization = False
        module.steps_per_batch, module.train_tol = steps_per_batch, train_tol
    with _quiet_lightning():
        trainer = pl.Trainer(
            accelerator=LIGHTNING_ACCELERATORS[device.type],
            devices=[device.index or 0] if device.type == "cuda" else 1,
            max_epochs=1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            callbacks=callbacks,
            max_steps=max_epochs,
        )
        try:
            trainer.fit(module, loader)
        finally:
            if repeated:
                module.log_metrics, module.automatic_optimization, module.steps_per_batch, module.train_tol = saved
    module.to(device)
    return module.eval()


# ---------------------------------------------------------------------------- warm starts
class WarmStartCache:
    """Trained modules of warm-started surrogates, by configuration and data lineage.

    ``lookup(key, X, Y)`` returns (and removes) the stored module of ``key`` whose training
    data ``(X', Y')`` are the first rows of ``(X, Y)``, preferring the longest such prefix;
    ``store(key, X, Y, module)`` records a module after its fit. Entries beyond
    ``max_entries`` are dropped, least recently used first.
    """

    max_entries = 8

    def __init__(self) -> None:
        self._entries: OrderedDict[int, tuple[Hashable, Tensor, Tensor, torch.nn.Module]] = OrderedDict()
        self._next = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def lookup(self, key: Hashable, X: Tensor, Y: Tensor) -> torch.nn.Module | None:
        best, best_rows = None, -1
        for entry_id, (k, X_old, Y_old, _) in self._entries.items():
            rows = X_old.shape[0]
            if k != key or rows > X.shape[0] or rows <= best_rows:
                continue
            if torch.equal(X_old, X[:rows]) and torch.equal(Y_old, Y[:rows]):
                best, best_rows = entry_id, rows
        if best is None:
            return None
        return self._entries.pop(best)[3]

    def store(self, key: Hashable, X: Tensor, Y: Tensor, module: torch.nn.Module) -> None:
        self._entries[self._next] = (key, X.detach().clone(), Y.detach().clone(), module)
        self._next += 1
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


#: The process-wide cache of warm-started surrogates.
WARM_START_CACHE = WarmStartCache()


def clear_warm_start_cache() -> None:
    """Forget every warm-started network (the next fits start from a fresh init)."""
    WARM_START_CACHE.clear()


# ---------------------------------------------------------------------------- factories
@dataclass(frozen=True)
class TrainingOptions:
    """How a zoo surrogate is trained inside a BO step (shared by every registration).

    Args:
        max_epochs: Full-batch gradient steps at most.
        train_tol: Stop once the mean squared training residual (standardized units) is below
            it; ``0`` disables.
        dtype: ``"float32"`` or ``"float64"``.
        device: Where the network trains and then predicts: ``"cpu"`` (default, the
            measured choice for BO-sized data), ``"auto"`` (a GPU if there is one),
            ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    """

    max_epochs: int = 2000
    train_tol: float = 1e-4
    dtype: str = "float32"
    device: str = "cpu"

    def check(self, name: str) -> torch.dtype:
        """The torch dtype; a ConfigError naming the option if any value is invalid."""
        resolve_device(self.device, f"surrogate {name!r}")
        if isinstance(self.max_epochs, bool) or not isinstance(self.max_epochs, int) or self.max_epochs < 1:
            raise ConfigError(f"surrogate {name!r}: option max_epochs={self.max_epochs!r} must be an integer >= 1")
        tol = self.train_tol
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not tol >= 0:
            raise ConfigError(f"surrogate {name!r}: option train_tol={tol!r} must be a number >= 0")
        if self.dtype not in DTYPES:
            raise ConfigError(f"surrogate {name!r}: option dtype={self.dtype!r}; choose one of {sorted(DTYPES)}")
        return DTYPES[self.dtype]


def fit_zoo_surrogate(
    name: str,
    cls: Callable[..., pl.LightningModule],
    train_X: Tensor,
    train_Y: Tensor,
    input_transform: InputTransform,
    outcome_transform: OutcomeTransform,
    module_options: dict[str, Any],
    training: TrainingOptions,
) -> Model:
    """Build (or, for warm starts, retrieve) the module, train it on the transformed data
    and wrap it with :func:`model_from_module`. Shared by every registered factory."""
    torch_dtype = training.check(name)
    if train_Y.ndim != 2 or train_Y.shape[-1] != 1:
        raise DataError(f"surrogate {name!r} fits one output at a time; got train_Y of shape {tuple(train_Y.shape)}")
    try:
        module = cls(train_X.shape[-1], **module_options)
    except (ValueError, TypeError) as err:
        raise ConfigError(f"surrogate {name!r}: {err}") from err
    key = (name, train_X.shape[-1], tuple(sorted((k, repr(v)) for k, v in module_options.items())))
    if module.warm_start:
        cached = WARM_START_CACHE.lookup(key, train_X, train_Y)
        if cached is not None:
            module = cached
    module = module.to(torch_dtype)
    input_transform.train()
    outcome_transform.train()
    X_unit = input_transform(train_X)
    Y_std, _ = outcome_transform(train_Y)
    train_module(
        module, X_unit, Y_std.squeeze(-1), max_epochs=training.max_epochs,
        train_tol=training.train_tol, device=resolve_device(training.device),
    )  # fmt: skip
    if module.warm_start:
        WARM_START_CACHE.store(key, train_X, train_Y, copy.deepcopy(module))
    return model_from_module(module, input_transform, outcome_transform)


def _constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """The named constructor arguments of ``cls`` but ``in_dim``, from the first class of its
    MRO that spells them out (``PosteriorSMB(*args, **kwargs)`` forwards to SimpleSMB's)."""
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    for klass in cls.__mro__:
        params = list(inspect.signature(klass.__init__).parameters.values())[1:]
        if not any(p.kind in variadic for p in params):
            return [p for p in params if p.name != "in_dim"]
    raise ConfigError(f"{cls.__name__} does not spell out its constructor arguments")


def register_zoo_surrogate(
    name: str, cls: type[pl.LightningModule], description: str, **defaults: Any
) -> Callable[..., Model]:
    """Register the zoo class ``cls`` as the surrogate ``name``.

    Its options are the class's constructor arguments (but ``in_dim``, which the data give)
    and the :class:`TrainingOptions`, with ``defaults`` overriding either. The factory gets an
    explicit signature, so misspelled options are refused by name and ``--list`` and the docs
    show every option with its default.
    """
    module_params = _constructor_parameters(cls)
    training_names = {f.name for f in fields(TrainingOptions)}
    unknown = set(defaults) - {p.name for p in module_params} - training_names
    if unknown:
        raise ConfigError(f"register_zoo_surrogate({name!r}): unknown defaults {sorted(unknown)}")

    def factory(
        train_X: Tensor,
        train_Y: Tensor,
        *,
        input_transform: InputTransform,
        outcome_transform: OutcomeTransform,
        train_Yvar: Tensor | None = None,
        **options: Any,
    ) -> Model:
        options = {**defaults, **options}
        training = TrainingOptions(**{k: options.pop(k) for k in list(options) if k in training_names})
        return fit_zoo_surrogate(
            name, cls, train_X, train_Y, input_transform, outcome_transform, options, training
        )

    keyword = inspect.Parameter.KEYWORD_ONLY
    fixed = [
        inspect.Parameter("train_X", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Tensor),
        inspect.Parameter("train_Y", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Tensor),
        inspect.Parameter("input_transform", keyword, annotation=InputTransform),
        inspect.Parameter("outcome_transform", keyword, annotation=OutcomeTransform),
        inspect.Parameter("train_Yvar", keyword, default=None),
    ]
    option_params = [
        p.replace(kind=keyword, default=defaults.get(p.name, p.default)) for p in module_params
    ] + [
        inspect.Parameter(f.name, keyword, default=defaults.get(f.name, f.default), annotation=f.type)
        for f in fields(TrainingOptions)
    ]
    factory.__signature__ = inspect.Signature(fixed + option_params, return_annotation=Model)
    factory.__name__ = factory.__qualname__ = "fit_" + name.replace("-", "_")
    factory.__doc__ = (
        f"{description} (:class:`{cls.__module__}.{cls.__name__}`, whose docstring gives the "
        "options and their thesis defaults; training: :class:`TrainingOptions`). "
        "``train_Yvar`` is ignored."
    )
    return register_surrogate(name, description)(factory)


fit_simple_smb = register_zoo_surrogate(
    "simple-smb", SimpleSMB, "SimpleSMB (Paria thesis Alg. 3.2): networks trained from a fresh NTK init"
)
fit_posterior_smb = register_zoo_surrogate(
    "posterior-smb", PosteriorSMB, "PosteriorSMB (Paria thesis Alg. 3.3): SimpleSMB + NTK posterior correction"
)
fit_neural_ensemble = register_zoo_surrogate(
    "neural-ensemble", NeuralEnsemble, "Deep ensemble of 10 MSE-trained networks, warm-started across fits"
)
fit_neural_lints = register_zoo_surrogate(
    "neural-lints", NeuralLinTS, "NeuralLinTS: Bayesian linear regression on a trained network's features",
    dtype="float64",
)
fit_neural_ucb = register_zoo_surrogate(
    "neural-ucb", NeuralUCB, "NeuralUCB: network mean, covariance g^T Z^-1 g / m from gradient features",
    dtype="float64",
)

__all__ = [
    "NeuralEnsembleModel",
    "TrainingOptions",
    "register_zoo_surrogate",
    "resolve_device",
    "NeuralEnsemblePosterior",
    "NeuralGaussianModel",
    "WARM_START_CACHE",
    "WarmStartCache",
    "clear_warm_start_cache",
    "model_from_module",
    "train_module",
]
