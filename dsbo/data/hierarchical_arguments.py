"""A :class:`~dsbo.data.hierarchical.HierarchicalDataModule`'s arguments, checked before any
I/O, and the series they point to.

The data module is built from a configuration (``dsbo.train``'s ``--data``), so every argument
is checked first, with a :class:`~dsbo.errors.ConfigError` naming it (:func:`check_arguments`),
and only then are the data read (:func:`load_series`). The data come from exactly one of:

- ``path``: a folder in the common format (``data.csv``, ``agg_mat.csv``, ``tags.csv``,
  :func:`~dsbo.data.hierarchical_io.read_hierarchical`);
- ``name``: a data set under ``$DSBO_DATA`` (``$DSBO_DATA/<name>``, else
  ``$DSBO_DATA/hierarchical/<name>``, :func:`data_folder`);
- ``synthetic``: the keyword arguments of
  :func:`~dsbo.data.synthetic_hierarchies.synthetic_hierarchy`, or the name of one of
  :data:`~dsbo.data.synthetic_hierarchies.SYNTHETIC_SETS`;
- an in-memory :class:`~dsbo.data.hierarchy.HierarchicalSeries`
  (:meth:`~dsbo.data.hierarchical.HierarchicalDataModule.from_series`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from dsbo.data.hierarchical_io import read_hierarchical
from dsbo.data.hierarchy import HierarchicalSeries
from dsbo.data.synthetic_hierarchies import SYNTHETIC_SETS, synthetic_hierarchy, synthetic_set
from dsbo.errors import ConfigError

#: What ``predict_dataloader`` predicts: the test windows, or the steps after the data.
PREDICT_SPLITS = ("test", "future")
#: The prefix of every message.
WHERE = "HierarchicalDataModule"


def check_int(name: str, value: Any, minimum: int, allow_none: bool = False) -> None:
    """``value`` is an integer ``>= minimum`` (or ``None`` when allowed); booleans are not."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = f"an integer >= {minimum}{' or None' if allow_none else ''}"
        raise ConfigError(f"{WHERE}: {name} must be {what}, got {value!r}")


def check_arguments(
    *,
    path: str | None,
    name: str | None,
    synthetic: dict[str, Any] | str | None,
    series: HierarchicalSeries | None,
    windows: dict[str, int | None],
    batch_nodes: int,
    num_representatives: int,
    seed: int,
    alpha: float,
    predict_split: str,
    coherence_rtol: float,
) -> None:
    """Check the data module's arguments; ``windows``: ``history`` ... ``windows_per_epoch``
    (each an integer >= 1 or ``None``)."""
    sources = sum(x is not None for x in (path, synthetic, series))
    sources += name is not None and path is None
    if sources != 1 or (synthetic is not None and name is not None):
        raise ConfigError(
            f"{WHERE}: set exactly one of path (a folder in the common format), name (a data "
            "set under $DSBO_DATA) or synthetic (arguments of synthetic_hierarchy)"
        )
    if isinstance(synthetic, str) and synthetic not in SYNTHETIC_SETS:
        raise ConfigError(
            f"{WHERE}: synthetic={synthetic!r} names no set; choose one of "
            f"{', '.join(SYNTHETIC_SETS)}"
        )
    if synthetic is not None and not isinstance(synthetic, dict | str):
        raise ConfigError(
            f"{WHERE}: synthetic must be a dict of synthetic_hierarchy arguments or a set's "
            f"name, got {synthetic!r}"
        )
    for arg, value in windows.items():
        check_int(arg, value, 1, allow_none=True)
    check_int("batch_nodes", batch_nodes, 1)
    check_int("num_representatives", num_representatives, 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"{WHERE}: seed must be an integer, got {seed!r}")
    number = not isinstance(alpha, bool) and isinstance(alpha, int | float)
    if not (number and math.isfinite(alpha) and alpha > 0):
        raise ConfigError(f"{WHERE}: alpha must be a finite number > 0, got {alpha!r}")
    if predict_split not in PREDICT_SPLITS:
        raise ConfigError(
            f"{WHERE}: predict_split must be one of {PREDICT_SPLITS}, got {predict_split!r}"
        )
    if not (isinstance(coherence_rtol, int | float) and coherence_rtol >= 0):
        raise ConfigError(f"{WHERE}: coherence_rtol must be a number >= 0, got {coherence_rtol!r}")


def data_folder(path: str | None, name: str | None) -> Path | None:
    """The folder the data are read from: ``path``, or ``name`` under ``$DSBO_DATA``
    (``$DSBO_DATA/<name>``, else ``$DSBO_DATA/hierarchical/<name>``); ``None`` for neither."""
    if path is not None:
        return Path(path)
    if name is None:
        return None
    root = os.environ.get("DSBO_DATA")
    if not root:
        raise ConfigError(
            f"{WHERE}: name={name!r} needs the environment variable DSBO_DATA (or set path)"
        )
    candidates = (Path(root) / name, Path(root) / "hierarchical" / name)
    return next((c for c in candidates if c.is_dir()), Path(root) / name)


def load_series(
    folder: Path | None,
    synthetic: dict[str, Any] | str | None,
    series: HierarchicalSeries | None,
    coherence_rtol: float,
) -> HierarchicalSeries:
    """The series the (checked) arguments point to: given, synthetic, or read from ``folder``."""
    if series is not None:
        return series
    if isinstance(synthetic, str):
        return synthetic_set(synthetic)
    if synthetic is not None:
        try:
            return synthetic_hierarchy(**synthetic)
        except TypeError as exc:
            raise ConfigError(f"{WHERE}: synthetic={synthetic!r}: {exc}") from None
    return read_hierarchical(folder, coherence_rtol=coherence_rtol)
