"""A trained zoo checkpoint as a BoTorch model: :func:`load_surrogate`.

``python -m dsbo.train fit`` saves, in every checkpoint, the module's weights and
hyperparameters (with the class path LightningCLI records) and the state of
:class:`~dsbo.data.ObservationDataModule`: the input bounds and the target's mean and standard
deviation. :func:`load_surrogate` reloads the module with ``weights_only=True``, rebuilds the
exact input normalization (``Normalize`` with those bounds) and outcome standardization
(``Standardize`` with that mean and standard deviation) the module was trained in, and hands
all three to :func:`dsbo.surrogates.zoo_models.model_from_module`; the model's posterior is in
raw units (inputs as in the CSV or problem, target in the maximization sense). Lightning (and
the datamodule) are imported by the functions that load a checkpoint, not with this module.

Example:
    >>> model = load_surrogate("runs/train/SimpleSMB-.../checkpoints/epoch=199-step=200.ckpt")
    >>> model.posterior(X).mean        # n x 1, raw units
"""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from botorch.models.model import Model
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.zoo_models import model_from_module

if TYPE_CHECKING:
    import pytorch_lightning as pl

#: Packages whose classes a checkpoint may name and :func:`load_surrogate` imports itself.
TRUSTED_PACKAGES = ("dsbo_zoo.",)
#: The zoo's import name before it became ``dsbo_zoo`` (checkpoints saved then name it).
LEGACY_ZOO_PREFIX = "models."
#: Key of the datamodule state in a Lightning checkpoint: the qualname of
#: :class:`~dsbo.data.observations.ObservationDataModule` (a test checks they agree).
DATAMODULE_KEY = "ObservationDataModule"


def make_transforms(state: dict[str, Any]) -> tuple[Normalize, Standardize]:
    """``Normalize`` and ``Standardize`` (float64, eval mode) from an
    :meth:`ObservationDataModule.state_dict`."""
    from dsbo.data.observations import check_state

    check_state(state)
    bounds = torch.tensor(state["bounds"], dtype=torch.double)
    normalize = Normalize(d=bounds.shape[-1], bounds=bounds)
    standardize = Standardize(m=1)
    mean, std = float(state["y_mean"]), float(state["y_std"])
    standardize.load_state_dict(
        {
            "means": torch.full((1, 1), mean, dtype=torch.double),
            "stdvs": torch.full((1, 1), std, dtype=torch.double),
            "_stdvs_sq": torch.full((1, 1), std**2, dtype=torch.double),
            "_is_trained": torch.tensor(True),
        }
    )
    return normalize.eval(), standardize.eval()


def read_checkpoint(checkpoint_path: str | Path) -> dict[str, Any]:
    """The checkpoint dict, loaded with ``weights_only=True`` on the CPU."""
    path = Path(checkpoint_path)
    if not path.is_file():
        raise ConfigError(f"checkpoint_path={str(checkpoint_path)!r}: no such file")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle/zip errors of many kinds: a file that is not a checkpoint
        raise DataError(
            f"checkpoint_path={str(checkpoint_path)!r} is not a loadable checkpoint: {exc}"
        ) from None


def current_class_path(class_path: str) -> str:
    """``models.smb.SimpleSMB`` (the zoo's import name until it became ``dsbo_zoo``) ->
    ``dsbo_zoo.smb.SimpleSMB``; any other class path unchanged."""
    if class_path.startswith(LEGACY_ZOO_PREFIX):
        return TRUSTED_PACKAGES[0] + class_path.removeprefix(LEGACY_ZOO_PREFIX)
    return class_path


def module_class(
    checkpoint: dict[str, Any], checkpoint_path: str | Path
) -> type[pl.LightningModule]:
    """The LightningModule class a LightningCLI checkpoint names (``_class_path``).

    Classes of the zoo (``dsbo_zoo.*``; ``models.*`` in checkpoints saved before the rename)
    are imported on demand; any other class must already be imported (a checkpoint must not
    make us import arbitrary code).
    """
    import pytorch_lightning as pl

    hparams = checkpoint.get("hyper_parameters") or {}
    class_path = hparams.get("_class_path")
    if not class_path:
        raise ConfigError(
            f"checkpoint_path={str(checkpoint_path)!r} does not name its model class (it was not "
            "trained with python -m dsbo.train): pass model_class"
        )
    class_path = current_class_path(str(class_path))
    module_name, _, name = class_path.rpartition(".")
    if module_name not in sys.modules:
        if not f"{module_name}.".startswith(
            TRUSTED_PACKAGES
        ):  # the zoo package itself or a module of it
            raise ConfigError(
                f"checkpoint model class {class_path!r} is outside the zoo {TRUSTED_PACKAGES}: "
                f"import {module_name} first or pass model_class"
            )
        importlib.import_module(module_name)
    cls = getattr(sys.modules[module_name], name, None)
    if not (isinstance(cls, type) and issubclass(cls, pl.LightningModule)):
        raise ConfigError(f"checkpoint model class {class_path!r} is not a LightningModule")
    return cls


def load_surrogate(
    checkpoint_path: str | Path,
    model_class: type[pl.LightningModule] | None = None,
    dtype: torch.dtype = torch.double,
) -> Model:
    """A BoTorch model from a checkpoint written by ``python -m dsbo.train``.

    Args:
        checkpoint_path: A ``.ckpt`` file (e.g. from the run's ``checkpoints/``).
        model_class: The module's class; default: the class the checkpoint names.
        dtype: The module's parameters are cast to it (BoTorch works in float64).

    Returns:
        :func:`~dsbo.surrogates.zoo_models.model_from_module` of the reloaded module (eval mode)
        with the input normalization and outcome standardization it was trained with: its
        posterior is in raw units.

    Raises:
        ConfigError: the file is missing, or its class is unknown or untrusted.
        DataError: the file is not a checkpoint, lacks the datamodule state, or holds a model
            whose Bayesian head was never fitted.
    """
    checkpoint = read_checkpoint(checkpoint_path)
    state = checkpoint.get(DATAMODULE_KEY)
    if state is None:
        raise DataError(
            f"checkpoint_path={str(checkpoint_path)!r} holds no {DATAMODULE_KEY} state (bounds, target "
            "mean and std): train with dsbo.data.ObservationDataModule to make a loadable surrogate"
        )
    normalize, standardize = make_transforms(state)
    cls = model_class or module_class(checkpoint, checkpoint_path)
    source: str | Path | io.BytesIO = checkpoint_path
    hparams = checkpoint.get("hyper_parameters") or {}
    if str(hparams.get("_class_path", "")).startswith(LEGACY_ZOO_PREFIX):
        # Lightning checks the recorded class path itself: hand it the renamed one
        hparams["_class_path"] = current_class_path(hparams["_class_path"])
        source = io.BytesIO()
        torch.save(checkpoint, source)
        source.seek(0)
    module = cls.load_from_checkpoint(source, map_location="cpu", weights_only=True)
    module = module.to(dtype).eval()
    if getattr(module, "has_head", False) and not bool(module.head_fitted):
        raise DataError(
            f"checkpoint_path={str(checkpoint_path)!r}: the {cls.__name__} in it has no fitted "
            "Bayesian head (saved before training); use a checkpoint saved during or after fit, "
            "e.g. last.ckpt or final.ckpt"
        )
    return model_from_module(module, input_transform=normalize, outcome_transform=standardize)
