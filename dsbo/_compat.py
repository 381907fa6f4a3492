"""Import paths from before the packages by role, kept for one release with a warning.

dsbo 0.1 had one flat package; its modules now live in packages by role (see the
architecture page of the docs). ``import dsbo.store`` and ``from dsbo.executors import
WorkerPool`` keep working: the old name is an alias of the new module (the same module object,
so ``isinstance`` checks and monkeypatching agree) and importing it emits a
``DeprecationWarning`` naming the new path. The program modules (``dsbo.optimize``,
``dsbo.train``, ``dsbo.blackbox``, ``dsbo.sweep``) stay as the ``python -m`` entry points;
reading any other attribute from them warns and forwards to :mod:`dsbo.cli`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

#: Old module -> the module that replaced it.
MOVED = {
    "dsbo.store": "dsbo.storage",
    "dsbo.store_postgres": "dsbo.storage.postgres",
    "dsbo.evaluation": "dsbo.runtime.evaluation",
    "dsbo.executors": "dsbo.runtime.executors",
    "dsbo.parallel": "dsbo.runtime.parallel",
    "dsbo.validation": "dsbo.campaign.validation",
    "dsbo.tracking": "dsbo.analysis.tracking",
    "dsbo.forecast_baselines": "dsbo.analysis.forecast_baselines",
    "dsbo.sparsity": "dsbo.acquisition.sparsity",
    "dsbo.retrieval": "dsbo.data.retrieval",
    "dsbo.config": "dsbo.cli.config",
    "dsbo.strict_yaml": "dsbo.cli.strict_yaml",
}


def _warn(message: str) -> None:
    """A DeprecationWarning attributed to the first frame outside importlib and this module,
    so that Python's default filters show it to the code that used the old path."""
    # warnings.warn does not count importlib's frames in ``stacklevel``; skip ours.
    level, frame = 2, sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename == __file__
        or frame.f_code.co_filename.startswith("<frozen importlib")
    ):
        level += frame.f_code.co_filename == __file__
        frame = frame.f_back
    warnings.warn(message, DeprecationWarning, stacklevel=level)


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names of :data:`MOVED` and loads them as their new modules."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> ModuleType:
        new = MOVED[spec.name]
        _warn(f"{spec.name} moved to {new}; import it from there (the old path goes in dsbo 0.3)")
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its new name."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())


def forward_attributes(module: str, target: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` that reads ``target``'s attributes, with a DeprecationWarning
    (for the ``python -m`` entry modules, whose code moved to :mod:`dsbo.cli`)."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(importlib.import_module(target), name)
        _warn(f"{module}.{name} moved to {target}.{name}; import it from there")
        return value

    return __getattr__
