"""``python -m dsbo.report RUN_DIR`` and ``dsbo.report(result)``: a run's HTML report.

The program lives in :mod:`dsbo.cli.report`. The module itself is callable, so that
``dsbo.report(result)`` works whether or not ``dsbo.report`` was imported as a module first::

    result = dsbo.minimize(f, space, budget=40, store="runs/f/trials.sqlite")
    dsbo.report(result)                        # runs/f/report.html
    dsbo.report(result, "elsewhere.html")      # or any path
"""

import sys
import types
from pathlib import Path
from typing import Any


def report(run: Any, path: str | Path | None = None, model: bool = True) -> Path:
    """Write the HTML report of ``run`` (the result of :func:`dsbo.minimize`, a
    :class:`dsbo.Tuner`, a :class:`dsbo.campaign.Campaign`, or a run or sweep directory) and
    return its path (default: ``report.html`` in the run directory). ``model=False`` skips
    fitting the surrogate (no importance or slice panels)."""
    from dsbo.cli.report import write_run_report

    return write_run_report(run, path, model)


class _CallableModule(types.ModuleType):
    """``dsbo.report(...)`` calls :func:`report` (the module and the function share a name)."""

    def __call__(self, run: Any, path: str | Path | None = None, model: bool = True) -> Path:
        return report(run, path, model)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    from dsbo.cli.report import main

    sys.exit(main())
