"""The surrogates dsbo ships, by name, and the registry every surrogate factory goes in.

:data:`CATALOGUE` names the module that registers each surrogate; the registry imports it
when the surrogate is first asked for (:func:`~dsbo.surrogates.registry.fit_surrogate`), or
all of them for :func:`available_surrogates`. This module imports no torch, so the names are
known without it (``SURROGATES.names()``, ``name in SURROGATES``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dsbo.registry import Registry

if TYPE_CHECKING:
    from botorch.models.model import Model

SurrogateFactory = Callable[..., "Model"]

#: The modules that register the surrogates dsbo ships (``tests/test_registries.py`` checks it).
CATALOGUE: dict[str, tuple[str, ...]] = {
    "dsbo.surrogates.gp": ("gp", "map-saas", "saasbo", "ibnn"),
    "dsbo.surrogates.ntk": ("ntk-gp", "nngp-gp"),
    "dsbo.surrogates.neural": (
        "simple-smb",
        "posterior-smb",
        "neural-ensemble",
        "neural-lints",
        "neural-ucb",
    ),
    "dsbo.surrogates.sparse_gp": ("vfe", "fitc"),
    "dsbo.surrogates.sparse_linear": ("sparse-linear",),
}

SURROGATES: Registry[SurrogateFactory] = Registry("surrogate", CATALOGUE)


def register_surrogate(
    name: str, description: str = ""
) -> Callable[[SurrogateFactory], SurrogateFactory]:
    """Decorator: register a surrogate factory under ``name`` (lower case, dashes)."""
    return SURROGATES.register(name, description)


def available_surrogates() -> dict[str, str]:
    """Registered surrogate names and their one-line descriptions."""
    return SURROGATES.available()
