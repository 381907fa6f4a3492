r"""The zoo surrogates: networks of :mod:`dsbo_zoo`, trained with Lightning, as registered
surrogates of :func:`~dsbo.surrogates.registry.fit_surrogate`.

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

Each is registered by name with the *path* of its zoo class (:class:`ZooSurrogate`): the class,
and with it Lightning, is imported only when such a surrogate is fitted or its options are
read, so registering them (and ``import dsbo.surrogates``) costs no Lightning import. A fit
runs :func:`~dsbo.surrogates.lightning_bridge.fit_zoo_surrogate` (the training, the training
options and the warm starts are documented there) and returns the BoTorch model of
:mod:`dsbo.surrogates.zoo_models`. The names of both modules are re-exported here
(``from dsbo.surrogates.neural import train_module`` imports the bridge, and Lightning, then).

Example:
    >>> from dsbo.surrogates import fit_surrogate
    >>> model = fit_surrogate({"name": "simple-smb", "num_samples": 8, "width": 512},
    ...                       X, Y, bounds=bounds)
    >>> model.posterior(X[:3]).mean.shape
    torch.Size([3, 1])
"""

from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import fields
from typing import Any

from botorch.models.model import Model
from botorch.models.transforms.input import InputTransform
from botorch.models.transforms.outcome import OutcomeTransform
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.registry import lazy_exports
from dsbo.surrogates.catalogue import register_surrogate
from dsbo.surrogates.zoo_models import (
    GAUSSIAN_JITTER,
    POSTERIOR_KINDS,
    NeuralEnsembleModel,
    NeuralEnsemblePosterior,
    NeuralGaussianModel,
    model_from_module,
)


def _constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """The named constructor arguments of ``cls`` but ``in_dim``, from the first class of its
    MRO that spells them out (``PosteriorSMB(*args, **kwargs)`` forwards to SimpleSMB's)."""
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    for klass in cls.__mro__:
        params = list(inspect.signature(klass.__init__).parameters.values())[1:]
        if not any(p.kind in variadic for p in params):
            return [p for p in params if p.name != "in_dim"]
    raise ConfigError(f"{cls.__name__} does not spell out its constructor arguments")


class ZooSurrogate:
    """The registered factory of a zoo surrogate::

        factory(train_X, train_Y, *, input_transform, outcome_transform, train_Yvar=None,
                **options) -> Model

    Its options are the zoo class's constructor arguments (but ``in_dim``, which the data
    give) and the :class:`~dsbo.surrogates.lightning_bridge.TrainingOptions`, with
    ``defaults`` overriding either. The class is imported from ``class_path`` on first use;
    the factory then has an explicit signature (``inspect.signature``), so misspelled options
    are refused by name and the docs show every option with its default.

    Args:
        name: The registered name (error messages use it).
        class_path: ``"package.module.Class"`` of the zoo class, or the class itself.
        description: One line for ``available_surrogates()``.
        defaults: Option values overriding the class's and the training defaults.
    """

    def __init__(
        self, name: str, class_path: str | type, description: str, defaults: dict[str, Any]
    ) -> None:
        self.name, self.description, self.defaults = name, description, dict(defaults)
        if isinstance(class_path, type):
            self.__dict__["zoo_class"] = class_path
            class_path = f"{class_path.__module__}.{class_path.__qualname__}"
        self.class_path = class_path
        self.__name__ = self.__qualname__ = "fit_" + name.replace("-", "_")
        self.__doc__ = (
            f"{description} (:class:`{class_path}`, whose docstring gives the options and their "
            "thesis defaults; training: :class:`~dsbo.surrogates.lightning_bridge.TrainingOptions`). "
            "``train_Yvar`` is ignored."
        )

    def __repr__(self) -> str:
        return f"ZooSurrogate({self.name!r}, {self.class_path!r})"

    @functools.cached_property
    def zoo_class(self) -> type:
        """The zoo class (imported on first access)."""
        module, _, name = self.class_path.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def __getattr__(self, name: str) -> Any:
        # ``inspect.signature`` reads ``__signature__``: built on first request (it needs the
        # zoo class), then kept. Only called for attributes not found the normal way.
        if name != "__signature__":
            raise AttributeError(name)
        self.__dict__["__signature__"] = signature = self._signature()
        return signature

    def _signature(self) -> inspect.Signature:
        from dsbo.surrogates.lightning_bridge import TrainingOptions

        module_params = _constructor_parameters(self.zoo_class)
        training = fields(TrainingOptions)
        unknown = set(self.defaults) - {p.name for p in module_params} - {f.name for f in training}
        if unknown:
            raise ConfigError(
                f"register_zoo_surrogate({self.name!r}): unknown defaults {sorted(unknown)}"
            )
        positional, keyword = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
        fixed = [
            inspect.Parameter("train_X", positional, annotation=Tensor),
            inspect.Parameter("train_Y", positional, annotation=Tensor),
            inspect.Parameter("input_transform", keyword, annotation=InputTransform),
            inspect.Parameter("outcome_transform", keyword, annotation=OutcomeTransform),
            inspect.Parameter("train_Yvar", keyword, default=None),
        ]
        options = [
            p.replace(kind=keyword, default=self.defaults.get(p.name, p.default))
            for p in module_params
        ] + [
            inspect.Parameter(
                f.name, keyword, default=self.defaults.get(f.name, f.default), annotation=f.type
            )
            for f in training
        ]
        return inspect.Signature(fixed + options, return_annotation=Model)

    def __call__(
        self,
        train_X: Tensor,
        train_Y: Tensor,
        *,
        input_transform: InputTransform,
        outcome_transform: OutcomeTransform,
        train_Yvar: Tensor | None = None,
        **options: Any,
    ) -> Model:
        from dsbo.surrogates.lightning_bridge import TrainingOptions, fit_zoo_surrogate

        self.__signature__  # noqa: B018  (checks the defaults against the class)
        options = {**self.defaults, **options}
        training_names = {f.name for f in fields(TrainingOptions)}
        training = TrainingOptions(
            **{k: options.pop(k) for k in list(options) if k in training_names}
        )
        return fit_zoo_surrogate(
            self.name,
            self.zoo_class,
            train_X,
            train_Y,
            input_transform,
            outcome_transform,
            options,
            training,
        )


def register_zoo_surrogate(
    name: str, zoo_class: str | type, description: str, **defaults: Any
) -> ZooSurrogate:
    """Register the zoo class ``zoo_class`` (a ``"package.module.Class"`` path, imported when
    the surrogate is first fitted, or the class) as the surrogate ``name``; ``defaults``
    override the class's options and the training options (:class:`ZooSurrogate`)."""
    return register_surrogate(name, description)(
        ZooSurrogate(name, zoo_class, description, defaults)
    )


fit_simple_smb = register_zoo_surrogate(
    "simple-smb",
    "dsbo_zoo.smb.SimpleSMB",
    "SimpleSMB (Paria thesis Alg. 3.2): networks trained from a fresh NTK init",
)
fit_posterior_smb = register_zoo_surrogate(
    "posterior-smb",
    "dsbo_zoo.smb.PosteriorSMB",
    "PosteriorSMB (Paria thesis Alg. 3.3): SimpleSMB + NTK posterior correction",
)
fit_neural_ensemble = register_zoo_surrogate(
    "neural-ensemble",
    "dsbo_zoo.neural_ensemble.NeuralEnsemble",
    "Deep ensemble of 10 MSE-trained networks, warm-started across fits",
)
fit_neural_lints = register_zoo_surrogate(
    "neural-lints",
    "dsbo_zoo.neural_lints.NeuralLinTS",
    "NeuralLinTS: Bayesian linear regression on a trained network's features",
    dtype="float64",
)
fit_neural_ucb = register_zoo_surrogate(
    "neural-ucb",
    "dsbo_zoo.neural_ucb.NeuralUCB",
    "NeuralUCB: network mean, covariance g^T Z^-1 g / m from gradient features",
    dtype="float64",
)

#: Names of the training bridge, re-exported here and imported (with Lightning) on first use.
_BRIDGE = (
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
)
__getattr__, __dir__ = lazy_exports(
    __name__, dict.fromkeys(_BRIDGE, "dsbo.surrogates.lightning_bridge")
)

__all__ = [
    "GAUSSIAN_JITTER",
    "POSTERIOR_KINDS",
    "NeuralEnsembleModel",
    "NeuralEnsemblePosterior",
    "NeuralGaussianModel",
    "ZooSurrogate",
    "model_from_module",
    "register_zoo_surrogate",
    *_BRIDGE,
]
