"""One call turns data into a BoTorch model: :func:`fit_surrogate`.

Every surrogate (the GP baselines, the Lightning-trained zoo models, ...) registers a factory
under a name in :data:`~dsbo.surrogates.catalogue.SURROGATES` (re-exported here with
:func:`register_surrogate` and :func:`available_surrogates`), whose catalogue says which module
registers each. :func:`fit_surrogate` validates the data, builds the input normalization to the
unit cube and the output standardization **once**, and hands both to the factory, so every
acquisition function works with every surrogate.

A factory has the signature::

    factory(train_X, train_Y, *, input_transform, outcome_transform, train_Yvar, **options)
        -> botorch.models.model.Model   # fitted, single output

``train_X`` is ``n x d`` in the problem's raw coordinates (the input transform maps it to the
unit cube), ``train_Y`` is ``n x 1``. Multi-output data are fitted one output at a time and
combined into a ``ModelListGP`` (all GPyTorch models) or a ``ModelList``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.models import ModelList, ModelListGP
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.model import Model
from botorch.models.transforms.input import Normalize
from botorch.models.transforms.outcome import Standardize
from torch import Tensor

from dsbo.errors import ConfigError, DataError
from dsbo.registry import accepted_options
from dsbo.surrogates.catalogue import (
    SURROGATES,
    SurrogateFactory,
    available_surrogates,
    register_surrogate,
)
from dsbo.surrogates.selection import Selector, make_selector

_RESERVED = (
    "train_X",
    "train_Y",
    "input_transform",
    "outcome_transform",
    "train_Yvar",
    "previous_fit",
    "categorical_groups",
)


@dataclass
class SurrogateSpec:
    """Which surrogate to fit and with what options, e.g. ``SurrogateSpec("gp", {"kernel": "rbf"})``;
    ``selector`` fits it on a subset of the data (:mod:`dsbo.surrogates.selection`)."""

    name: str = "map-saas"
    options: dict[str, Any] = field(default_factory=dict)
    selector: Selector | None = None

    def __post_init__(self) -> None:
        self.selector = make_selector(self.selector)

    @classmethod
    def coerce(cls, spec: SurrogateSpec | str | Mapping[str, Any]) -> SurrogateSpec:
        """Accept a spec, a bare name, or a mapping ``{"name": ..., **options}``."""
        if isinstance(spec, SurrogateSpec):
            return spec
        if isinstance(spec, str):
            return cls(spec, {})
        if isinstance(spec, Mapping):
            spec = dict(spec)
            if "name" not in spec:
                raise ConfigError(
                    "surrogate.name is missing (one of: " + ", ".join(SURROGATES.names()) + ")"
                )
            name = spec.pop("name")
            selector = spec.pop("selector", None)
            options = dict(spec.pop("options", {}) or {})
            options.update(spec)
            return cls(str(name), options, selector)
        raise ConfigError(f"surrogate must be a name or a mapping, got {type(spec).__name__}")

    def for_dry_run(self) -> SurrogateSpec:
        """A cheap copy for a campaign's dry iteration: a factory with fit restarts
        (``map-saas``) fits once, unless the options set ``fit_restarts`` themselves (then
        they are checked as given)."""
        factory = SURROGATES.get(self.name) if self.name in SURROGATES.names() else None
        if factory is None or "fit_restarts" in self.options:
            return self
        if "fit_restarts" not in inspect.signature(factory).parameters:
            return self
        return SurrogateSpec(self.name, {**self.options, "fit_restarts": 0}, self.selector)


def _validate(X: Tensor, Y: Tensor, Yvar: Tensor | None, bounds: Tensor) -> None:
    if X.ndim != 2:
        raise DataError(f"train_X must be n x d, got shape {tuple(X.shape)}")
    if Y.ndim != 2 or Y.shape[0] != X.shape[0]:
        raise DataError(f"train_Y must be n x m with n = {X.shape[0]}, got shape {tuple(Y.shape)}")
    if X.shape[0] == 0:
        raise DataError("cannot fit a surrogate on zero observations")
    if not torch.isfinite(X).all():
        raise DataError("train_X contains NaN or inf")
    if not torch.isfinite(Y).all():
        bad = (~torch.isfinite(Y)).any(dim=-1).nonzero().flatten().tolist()
        raise DataError(f"train_Y contains NaN or inf in rows {bad[:10]}; drop failed trials first")
    if Yvar is not None and Yvar.shape != Y.shape:
        raise DataError(
            f"train_Yvar must have the shape of train_Y {tuple(Y.shape)}, got {tuple(Yvar.shape)}"
        )
    if bounds.shape != (2, X.shape[-1]):
        raise DataError(f"bounds must be 2 x {X.shape[-1]}, got {tuple(bounds.shape)}")
    if not (bounds[1] > bounds[0]).all():
        raise DataError("bounds: every upper bound must exceed its lower bound")


def fit_surrogate(
    spec: SurrogateSpec | str | Mapping[str, Any],
    X: Tensor,
    Y: Tensor,
    bounds: Tensor | None = None,
    Yvar: Tensor | None = None,
    selection_seed: int = 0,
    previous_fits: Sequence[Any] | None = None,
    categorical_groups: Sequence[Sequence[int]] | None = None,
) -> Model:
    """Fit the surrogate named by ``spec`` to ``(X, Y)`` and return a BoTorch ``Model``.

    With a ``spec.selector`` the model is fitted on the rows it selects (seeded by
    ``selection_seed``), listed in the model's ``training_rows`` attribute.

    A factory that warm-starts (it takes ``previous_fit``: ``map-saas``, ``gp``;
    :mod:`dsbo.surrogates.warm_start`) gets ``previous_fits[j]`` for output ``j``, and the
    returned model lists the states its fits leave for the next one as ``fit_states`` (one
    per output, ``None`` for a factory that keeps none).

    Args:
        spec: A :class:`SurrogateSpec`, a registered name, or ``{"name": ..., **options}``.
        X: ``n x d`` inputs in raw coordinates.
        Y: ``n x m`` outcomes (maximization sense); ``n`` may also be given as a vector.
        bounds: ``2 x d`` box the inputs are normalized from (defaults to the data range).
        Yvar: Optional ``n x m`` observation noise variances.
        previous_fits: The ``fit_states`` of the previous fit of the same surrogate, or ``None``.
        categorical_groups: The one-hot columns of each unordered categorical, given to a
            factory that takes them (``gp``: :mod:`dsbo.surrogates.mixed_kernel`).

    Returns:
        A fitted model with ``num_outputs == m`` whose posterior is in raw coordinates.

    Example:
        >>> model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
        >>> model.posterior(X[:3]).mean.shape
        torch.Size([3, 1])
    """
    spec = SurrogateSpec.coerce(spec)
    factory = SURROGATES.get(spec.name)
    X = torch.as_tensor(X, dtype=torch.double)
    Y = torch.as_tensor(Y, dtype=torch.double)
    if Y.ndim == 1:
        Y = Y.unsqueeze(-1)
    if bounds is None:
        bounds = torch.stack([X.min(0).values, X.max(0).values])
        bounds[1] = torch.where(bounds[1] > bounds[0], bounds[1], bounds[0] + 1.0)
    bounds = torch.as_tensor(bounds, dtype=torch.double)
    if Yvar is not None:
        Yvar = torch.as_tensor(Yvar, dtype=torch.double).reshape(Y.shape)
    _validate(X, Y, Yvar, bounds)
    SURROGATES.check_options(spec.name, spec.options, reserved=_RESERVED)
    rows = None
    if spec.selector is not None:
        rows = spec.selector.rows(X, Y, bounds, seed=selection_seed)
        X, Y = X[rows], Y[rows]
        Yvar = None if Yvar is None else Yvar[rows]

    accepted = accepted_options(factory) or ()
    warm = "previous_fit" in accepted
    models = []
    for j in range(Y.shape[-1]):
        options = dict(spec.options)
        if warm:
            options["previous_fit"] = (
                previous_fits[j] if previous_fits is not None and j < len(previous_fits) else None
            )
        if categorical_groups and "categorical_groups" in accepted:
            options["categorical_groups"] = [list(g) for g in categorical_groups]
        model = factory(
            X,
            Y[:, j : j + 1],
            input_transform=Normalize(d=X.shape[-1], bounds=bounds),
            outcome_transform=Standardize(m=1),
            train_Yvar=None if Yvar is None else Yvar[:, j : j + 1],
            **options,
        )
        models.append(model)
    if len(models) == 1:
        model = models[0]
    elif all(isinstance(m, GPyTorchModel) for m in models):
        model = ModelListGP(*models)
    else:
        model = ModelList(*models)
    if rows is not None:
        model.training_rows = rows
    model.fit_states = [getattr(m, "fit_state", None) for m in models]
    return model


__all__ = [
    "SURROGATES",
    "SurrogateFactory",
    "SurrogateSpec",
    "available_surrogates",
    "fit_surrogate",
    "register_surrogate",
]
