"""The proposal policies and post-processors dsbo ships, by name, and their registries.

:data:`POLICY_CATALOGUE` and :data:`POSTPROCESSOR_CATALOGUE` name the module that registers
each; the registries import it when the name is first asked for
(:func:`~dsbo.acquisition.base.make_policy`, :func:`~dsbo.acquisition.base.make_postprocessor`),
or all of them for :func:`available_policies`. This module imports no torch, so the names are
known without it (``POLICIES.names()``, ``name in POSTPROCESSORS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dsbo.registry import Registry

if TYPE_CHECKING:
    from dsbo.acquisition.base import Policy, PostProcessor

PolicyFactory = Callable[..., "Policy"]
PostProcessorFactory = Callable[..., "PostProcessor"]

#: The modules that register the policies dsbo ships (``tests/test_registries.py`` checks it).
POLICY_CATALOGUE: dict[str, tuple[str, ...]] = {
    "dsbo.acquisition.plain": (
        "qlognei",
        "ucb",
        "logei",
        "greedy",
        "qlognehvi",
        "qparego",
        "sobol",
    ),
    "dsbo.acquisition.thompson": ("thompson",),
    "dsbo.acquisition.scalarized": ("mobo-rs",),
    "dsbo.acquisition.cost_aware": ("logei-per-cost", "mes", "cost-mes"),
    "dsbo.acquisition.cost_ids": ("cost-ids",),
    "dsbo.acquisition.sebo": ("sebo",),
    "dsbo.acquisition.regularized": ("ir", "er"),
    "dsbo.acquisition.pool": ("pool",),
    "dsbo.acquisition.multi_fidelity": ("mf-kg",),
}
#: The modules that register the post-processors dsbo ships.
POSTPROCESSOR_CATALOGUE: dict[str, tuple[str, ...]] = {"dsbo.acquisition.bonsai": ("bonsai",)}

POLICIES: Registry[PolicyFactory] = Registry("acquisition", POLICY_CATALOGUE)
POSTPROCESSORS: Registry[PostProcessorFactory] = Registry("postprocess", POSTPROCESSOR_CATALOGUE)


def register_policy(name: str, description: str = "") -> Callable[[PolicyFactory], PolicyFactory]:
    """Decorator registering a policy class (or factory) under ``name``."""
    return POLICIES.register(name, description)


def available_policies() -> dict[str, str]:
    """Registered policy names and their one-line descriptions."""
    return POLICIES.available()


def register_postprocessor(
    name: str, description: str = ""
) -> Callable[[PostProcessorFactory], PostProcessorFactory]:
    """Decorator registering a post-processor class (or factory) under ``name``."""
    return POSTPROCESSORS.register(name, description)


__all__ = [
    "POLICIES",
    "POLICY_CATALOGUE",
    "POSTPROCESSORS",
    "POSTPROCESSOR_CATALOGUE",
    "PolicyFactory",
    "PostProcessorFactory",
    "available_policies",
    "register_policy",
    "register_postprocessor",
]
