"""Named factories of one kind: the mechanism behind the problem, surrogate and policy
registries, so a YAML config or a caller can pick any of them by name.

A registry may hold a *catalogue*: for each name dsbo ships, the module that registers it.
The catalogued modules are imported on demand (``get`` imports the one module of the name
asked for; ``available`` imports them all, for the descriptions), so importing a package
neither loads every registering module nor the heavy libraries some of them need, and the
names themselves (:meth:`Registry.names`, ``name in registry``) are known without importing
anything. ``tests/test_registries.py`` checks that every catalogue matches what its modules
register.

Example:
    >>> widgets = Registry("widget")
    >>> @widgets.register("round", "a round widget")
    ... def make_round(radius: float = 1.0): ...
    >>> widgets.check_options("round", {"radius": 2.0})
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from dsbo.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


class Registry(Generic[F]):
    """Factories by name, each with a one-line description.

    Args:
        kind: What the factories make (``"problem"``, ``"surrogate"``, ``"acquisition"``);
            error messages say ``{kind}.name=...`` so they name the config field.
        catalogue: ``{module: names}``, the modules that register the names dsbo ships;
            a module is imported when one of its names is first looked up.
    """

    def __init__(self, kind: str, catalogue: Mapping[str, Iterable[str]] | None = None) -> None:
        self.kind = kind
        #: ``{name: module}``: where each catalogued name is registered.
        self.catalogue: dict[str, str] = {
            name: module for module, names in (catalogue or {}).items() for name in names
        }
        self._factories: dict[str, F] = {}
        self._descriptions: dict[str, str] = {}
        self._origins: dict[str, str | None] = {}

    # ------------------------------------------------------------------ registering
    def register(self, name: str, description: str = "") -> Callable[[F], F]:
        """Decorator registering ``factory`` under ``name`` (description defaults to the
        first line of its docstring)."""

        def decorator(factory: F) -> F:
            origin = _registering_module()
            if origin != self.catalogue.get(name):
                self._load(name)  # a catalogued name belongs to its module: it registers first
            if name in self._factories and self._factories[name] is not factory:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
            self._factories[name] = factory
            self._descriptions[name] = description or (factory.__doc__ or "").strip().split("\n")[0]
            self._origins[name] = origin
            return factory

        return decorator

    def unregister(self, name: str) -> None:
        """Remove ``name`` (e.g. a plugin or a test's temporary entry); no error if absent."""
        self._load(name)
        for table in (self._factories, self._descriptions, self._origins, self.catalogue):
            table.pop(name, None)

    def origin(self, name: str) -> str | None:
        """The module whose import registered ``name`` (``None`` if unknown or not registered)."""
        return self._origins.get(name)

    # ------------------------------------------------------------------ loading
    def modules(self) -> list[str]:
        """The catalogued modules, each once, in catalogue order."""
        return list(dict.fromkeys(self.catalogue.values()))

    def load_all(self) -> None:
        """Import every catalogued module (each registers its names)."""
        for module in self.modules():
            importlib.import_module(module)

    def _load(self, name: str) -> None:
        module = self.catalogue.get(name)
        if module is not None and name not in self._factories:
            importlib.import_module(module)

    # ------------------------------------------------------------------ looking up
    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is registered or catalogued (imports nothing)."""
        return name in self._factories or name in self.catalogue

    def names(self) -> list[str]:
        """Every registered or catalogued name, sorted (imports nothing)."""
        return sorted({*self._factories, *self.catalogue})

    def available(self) -> dict[str, str]:
        """Registered names and their descriptions, sorted by name (imports every catalogued
        module: the descriptions live with the factories)."""
        self.load_all()
        return dict(sorted(self._descriptions.items()))

    def get(self, name: str, hint: str = "") -> F:
        """The factory registered as ``name`` (importing its module if it is catalogued); a
        ConfigError listing the choices otherwise."""
        self._load(name)
        try:
            return self._factories[name]
        except KeyError:
            raise ConfigError(
                f"{self.kind}.name={name!r} is not registered; choose one of: "
                + ", ".join(self.names())
                + hint
            ) from None

    def check_options(
        self, name: str, options: Mapping[str, Any], reserved: Iterable[str] = ()
    ) -> None:
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


def _registering_module() -> str | None:
    """The module whose top-level code is running the registration (the innermost
    ``<module>`` frame), e.g. ``dsbo.problems.classic`` while it is imported."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return None if frame is None else frame.f_globals.get("__name__")


def accepted_options(factory: Callable[..., Any]) -> set[str] | None:
    """The keyword options ``factory`` takes; a class whose ``__init__`` forwards ``**kwargs``
    takes its bases' options too. ``None`` when they cannot be known (an open ``**kwargs``)."""
    inits = (
        [c.__init__ for c in factory.__mro__ if "__init__" in vars(c)]
        if isinstance(factory, type)
        else [factory]
    )
    names: set[str] = set()
    for init in inits:
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {
            "self"
        }
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return None


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) that import its re-exports on
    first use: ``exports`` maps each name to the module defining it, so ``from dsbo.data import
    ObservationDataModule`` works while ``import dsbo.data`` loads none of its modules. Any
    other attribute that names a submodule imports it (``dsbo.problems.classic``)."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
