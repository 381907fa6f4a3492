"""The learning-curve models dsbo ships, by name, and the registry every curve model goes in.

A curve model is what freeze-thaw fits on every reported point of every curve
(:class:`~dsbo.surrogates.curve_model.CurveSurrogate`, :mod:`dsbo.campaign.freeze_thaw`): a
factory ``factory(num_params, max_steps, **options) -> torch.nn.Module`` registered under a
name with :func:`register_curve_model`, whose module is a zoo curve model (it has the
``layout`` of :mod:`dsbo_zoo.learning_curves`, a ``predict_mean_cov(rows)`` and a
``training_step`` that Lightning trains; DyHPO's deep-kernel GP and the power-law ensemble
are the models to follow). A config picks it as ``early_stopping: {name: freeze-thaw,
curve_model: ..., options: {...}}``; the options are the factory's keyword arguments.

:data:`CATALOGUE` names the module that registers each curve model dsbo ships; the registry
imports it when the model is first asked for. This module imports no torch, so a campaign's
config is checked against the names (``CURVE_MODELS.names()``, ``name in CURVE_MODELS``)
before torch loads. The mechanism is :mod:`dsbo.registry`'s, as for the surrogates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dsbo.registry import Registry

if TYPE_CHECKING:
    from torch import nn

CurveModelFactory = Callable[..., "nn.Module"]

#: The modules that register the curve models dsbo ships (``tests/test_registries.py``
#: checks it).
CATALOGUE: dict[str, tuple[str, ...]] = {
    "dsbo.surrogates.curve_model": ("deep-kernel-gp", "power-law-ensemble"),
}

CURVE_MODELS: Registry[CurveModelFactory] = Registry("curve_model", CATALOGUE)


def register_curve_model(
    name: str, description: str = ""
) -> Callable[[CurveModelFactory], CurveModelFactory]:
    """Decorator registering a curve-model factory under ``name`` (lower case, dashes).

    Example:
        >>> @register_curve_model("small-power-law", "a power-law ensemble of 2 members")
        ... def small_power_law(num_params, max_steps, **options):
        ...     from dsbo_zoo.power_law_ensemble import PowerLawEnsemble
        ...     return PowerLawEnsemble(num_params=num_params, max_steps=max_steps, members=2)
    """
    return CURVE_MODELS.register(name, description)


def available_curve_models() -> dict[str, str]:
    """Registered curve model names and their one-line descriptions."""
    return CURVE_MODELS.available()


__all__ = [
    "CATALOGUE",
    "CURVE_MODELS",
    "CurveModelFactory",
    "available_curve_models",
    "register_curve_model",
]
