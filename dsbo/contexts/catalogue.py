"""The context policies dsbo ships, by name, and their registry.

:data:`CATALOGUE` names the module that registers each policy; the registry imports it when
the policy is first asked for (:func:`~dsbo.contexts.policies.make_context_policy`), or all of
them for :func:`available_context_policies`. This module imports no torch, so the names are
known without it (``CONTEXT_POLICIES.names()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dsbo.registry import Registry

if TYPE_CHECKING:
    from dsbo.contexts.policies import ContextPolicy

#: The modules that register the context policies dsbo ships (``tests/test_registries.py``
#: checks it).
CATALOGUE: dict[str, tuple[str, ...]] = {
    "dsbo.contexts.policies": ("sadcbo", "cubo", "vbo", "cbo", "cabo", "dropout", "mmdbo"),
}

CONTEXT_POLICIES: Registry[type[ContextPolicy]] = Registry("contexts.policy", CATALOGUE)


def register_context_policy(
    name: str, description: str = ""
) -> Callable[[type[ContextPolicy]], type[ContextPolicy]]:
    """Decorator registering a context policy class under ``name``."""
    return CONTEXT_POLICIES.register(name, description)


def available_context_policies() -> dict[str, str]:
    """Registered context policy names and their one-line descriptions."""
    return CONTEXT_POLICIES.available()


__all__ = ["CATALOGUE", "CONTEXT_POLICIES", "available_context_policies", "register_context_policy"]
