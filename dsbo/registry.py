"""Named factories of one kind: the mechanism behind the problem, surrogate and policy
registries, so a YAML config or a caller can pick any of them by name.

Example:
    >>> widgets = Registry("widget")
    >>> @widgets.register("round", "a round widget")
    ... def make_round(radius: float = 1.0): ...
    >>> widgets.check_options("round", {"radius": 2.0})
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from dsbo.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


class Registry(Generic[F]):
    """Factories by name, each with a one-line description.

    Args:
        kind: What the factories make (``"problem"``, ``"surrogate"``, ``"acquisition"``);
            error messages say ``{kind}.name=...`` so they name the config field.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, F] = {}
        self._descriptions: dict[str, str] = {}

    def register(self, name: str, description: str = "") -> Callable[[F], F]:
        """Decorator registering ``factory`` under ``name`` (description defaults to the
        first line of its docstring)."""

        def decorator(factory: F) -> F:
            if name in self._factories and self._factories[name] is not factory:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._factories[name] = factory
            self._descriptions[name] = description or (factory.__doc__ or "").strip().split("\n")[0]
            return factory

        return decorator

    def unregister(self, name: str) -> None:
        """Remove ``name`` (e.g. a plugin or a test's temporary entry); no error if absent."""
        self._factories.pop(name, None)
        self._descriptions.pop(name, None)

    def __contains__(self, name: str) -> bool:
        return name in self._factories

    def available(self) -> dict[str, str]:
        """Registered names and their descriptions, sorted by name."""
        return dict(sorted(self._descriptions.items()))

    def get(self, name: str, hint: str = "") -> F:
        """The factory registered as ``name``; a ConfigError listing the choices otherwise."""
        try:
            return self._factories[name]
        except KeyError:
            raise ConfigError(
                f"{self.kind}.name={name!r} is not registered; choose one of: "
                + ", ".join(sorted(self._factories))
                + hint
            ) from None

    def check_options(self, name: str, options: Mapping[str, Any], reserved: Iterable[str] = ()) -> None:
        """Raise a ConfigError naming any option the factory ``name`` does not take.

        ``reserved`` parameters are supplied by dsbo, not by the user.
        """
        accepted = accepted_options(self.get(name))
        if accepted is None:
            return
        allowed = accepted - set(reserved)
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ConfigError(
                f"{self.kind} {name!r} has no option(s) {unknown}; its options are: "
                + (", ".join(sorted(allowed)) or "none")
            )


def accepted_options(factory: Callable[..., Any]) -> set[str] | None:
    """The keyword options ``factory`` takes; a class whose ``__init__`` forwards ``**kwargs``
    takes its bases' options too. ``None`` when they cannot be known (an open ``**kwargs``)."""
    inits = [c.__init__ for c in factory.__mro__ if "__init__" in vars(c)] if isinstance(factory, type) else [factory]
    names: set[str] = set()
    for init in inits:
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return None
