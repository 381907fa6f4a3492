r"""The Lightning bridge: train a zoo model on ``(X, Y)`` and return a BoTorch ``Model``.

:func:`train_module` fits a :mod:`models` LightningModule with a cheap ``pl.Trainer`` (no
logger, checkpoints, progress bar or model summary; ``max_epochs`` full-batch gradient steps
on ``(X, Y, arange(n))``, run as one Lightning epoch), and :func:`fit_zoo_surrogate` (what
every zoo surrogate of :mod:`dsbo.surrogates.neural` runs when it is fitted) wraps the trained
module with :func:`~dsbo.surrogates.zoo_models.model_from_module`.

The networks train on unit-cube inputs and standardized outcomes: the factories receive the
``Normalize`` and ``Standardize`` transforms built by
:func:`~dsbo.surrogates.registry.fit_surrogate`, apply them to the data, and attach them to
the returned model (eval mode), so its posterior is in raw coordinates. BoTorch works in
float64; the module runs in its own dtype (option ``dtype``) and the model casts at the
boundary.

Training options common to all (:class:`TrainingOptions`): ``max_epochs`` (full-batch steps),
``train_tol`` (stop once the mean squared training residual, standardized units, is below it;
``0`` disables), ``dtype`` (``"float32"`` or ``"float64"``) and ``device``. Randomness
(initialization, target noise) comes from torch's global RNG, which
:class:`~dsbo.campaign.Campaign` seeds before every fit, so a campaign is reproducible on CPU.

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

This module imports Lightning and the zoo; it is imported when a zoo surrogate is fitted,
never with :mod:`dsbo.surrogates`.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytorch_lightning as pl
import torch
from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from torch import Tensor
from torch.utils.data import DataLoader, Sampler, TensorDataset

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.zoo_models import model_from_module
from dsbo_zoo.base import ZooModule

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
        raise ConfigError(f"{name}: option device={device!r}; use auto, cpu, cuda, cuda:N or mps")
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available() and (resolved.index or 0) < torch.cuda.device_count(),
        "mps": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
    }[resolved.type]
    if not available:
        raise ConfigError(
            f"{name}: option device={device!r} is not available on this machine; use cpu or auto"
        )
    return torch.device("cuda", resolved.index or 0) if resolved.type == "cuda" else resolved


_LIGHTNING_LOGGERS = ("pytorch_lightning", "lightning.pytorch", "lightning_fabric")


def _module_dtype(module: torch.nn.Module) -> torch.dtype:
    return next(module.parameters()).dtype


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
        saved = (
            module.log_metrics,
            module.automatic_optimization,
            module.steps_per_batch,
            module.train_tol,
        )
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
                (
                    module.log_metrics,
                    module.automatic_optimization,
                    module.steps_per_batch,
                    module.train_tol,
                ) = saved
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
        self._entries: OrderedDict[int, tuple[Hashable, Tensor, Tensor, torch.nn.Module]] = (
            OrderedDict()
        )
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


# ---------------------------------------------------------------------------- fitting
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
        if (
            isinstance(self.max_epochs, bool)
            or not isinstance(self.max_epochs, int)
            or self.max_epochs < 1
        ):
            raise ConfigError(
                f"surrogate {name!r}: option max_epochs={self.max_epochs!r} must be an integer >= 1"
            )
        tol = self.train_tol
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not tol >= 0:
            raise ConfigError(f"surrogate {name!r}: option train_tol={tol!r} must be a number >= 0")
        if self.dtype not in DTYPES:
            raise ConfigError(
                f"surrogate {name!r}: option dtype={self.dtype!r}; choose one of {sorted(DTYPES)}"
            )
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
    and wrap it with :func:`~dsbo.surrogates.zoo_models.model_from_module`. Shared by every
    registered factory."""
    torch_dtype = training.check(name)
    if train_Y.ndim != 2 or train_Y.shape[-1] != 1:
        raise DataError(
            f"surrogate {name!r} fits one output at a time; got train_Y of shape {tuple(train_Y.shape)}"
        )
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
        module,
        X_unit,
        Y_std.squeeze(-1),
        max_epochs=training.max_epochs,
        train_tol=training.train_tol,
        device=resolve_device(training.device),
    )
    if module.warm_start:
        WARM_START_CACHE.store(key, train_X, train_Y, copy.deepcopy(module))
    return model_from_module(module, input_transform, outcome_transform)


__all__ = [
    "DTYPES",
    "LIGHTNING_ACCELERATORS",
    "STEPS_PER_BATCH",
    "WARM_START_CACHE",
    "TrainingOptions",
    "WarmStartCache",
    "clear_warm_start_cache",
    "fit_zoo_surrogate",
    "resolve_device",
    "train_module",
]
