"""The early-stopping rules dsbo ships, by name, and the registry every rule goes in.

A rule is a :class:`~dsbo.stopping.base.StoppingRule` class (or a factory returning one)
registered under a config name with :func:`register_stopping_rule`, in the module that
defines it; :func:`~dsbo.stopping.make_rule` builds it from ``early_stopping: {name: ...,
**options}``, its options being the factory's keyword arguments. Registering a name twice
is refused, and a second name for the same class is an alias (``successive-halving`` for
``asha``): the rule's own name is the class's ``name``.

:data:`CATALOGUE` names the module that registers each rule dsbo ships; the registry imports
it when the rule is first asked for, or all of them for :func:`available_stopping_rules`.
This module imports nothing but :mod:`dsbo.registry`, so the names are known without the rule
modules (``STOPPING_RULES.names()``, ``name in STOPPING_RULES``): the config checks of the
command lines and every "choose one of" message list them from here. The mechanism is
:mod:`dsbo.registry`'s, as for problems, surrogates and policies (Optuna's pruners and Ray
Tune's schedulers are likewise chosen by name from a table).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from dsbo.registry import Registry

if TYPE_CHECKING:
    from dsbo.stopping.base import StoppingRule

RuleFactory = Callable[..., "StoppingRule"]

#: The modules that register the rules dsbo ships (``tests/test_registries.py`` checks it).
CATALOGUE: dict[str, tuple[str, ...]] = {
    "dsbo.stopping.percentile": ("median", "percentile"),
    "dsbo.stopping.successive_halving": ("asha", "successive-halving", "hyperband"),
}

STOPPING_RULES: Registry[RuleFactory] = Registry("stopping", CATALOGUE)


def register_stopping_rule(
    name: str, description: str = ""
) -> Callable[[RuleFactory], RuleFactory]:
    """Decorator registering a stopping rule class (or factory) under ``name``.

    Args:
        name: The config name, lower case with dashes (``early_stopping: {name: ...}``).
        description: One line for :func:`available_stopping_rules` (defaults to the first
            line of the factory's docstring).

    Example:
        >>> from dsbo.stopping import MedianRule
        >>> @register_stopping_rule("my-median", "the median rule after 3 completed trials")
        ... class MyMedian(MedianRule):
        ...     name = "my-median"
    """
    return STOPPING_RULES.register(name, description)


def available_stopping_rules() -> dict[str, str]:
    """Registered stopping rule names and their one-line descriptions."""
    return STOPPING_RULES.available()


__all__ = [
    "CATALOGUE",
    "STOPPING_RULES",
    "RuleFactory",
    "available_stopping_rules",
    "register_stopping_rule",
]
