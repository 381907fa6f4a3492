r"""The dates of a hierarchical series: their frequency, the dates after them, calendar covariates.

HiReD (Paria thesis, ch. 6) feeds global covariates :math:`X \in \mathbb R^{T \times D}` to
both of its networks; section 6.3 defines them as time-evolving features shared by all series
(its examples: the type of holiday, the time of day) but the thesis does not list the
covariates used for its data sets. :func:`calendar_covariates` chooses them from the frequency
inferred from the dates (:func:`infer_frequency`): the position in the seasonal cycle as a
sine/cosine pair (month of year for monthly data, quarter of year for quarterly, day of week
and day of year for daily, week of year for weekly, hour of day and day of week for hourly),
plus a linear trend :math:`t/(T-1) - 1/2` over the data's steps (``trend=True``). Monthly and
quarterly data get :math:`D = 3`. :func:`extend_dates` gives the dates of the forecast steps
after the data.

Example:
    >>> dates = pd.date_range("2000-01-01", periods=4, freq="MS")
    >>> infer_frequency("example", dates), calendar_covariates(dates, "M")[1]
    ('M', ('month_sin', 'month_cos', 'trend'))
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dsbo.errors import ConfigError


def step_seconds(dates: pd.DatetimeIndex) -> np.ndarray:
    """Seconds between consecutive dates (whatever the index's time unit)."""
    return (dates[1:] - dates[:-1]).total_seconds().to_numpy(dtype=np.float64)


def infer_frequency(path: Path | str, dates: pd.DatetimeIndex) -> str:
    """``"h"``, ``"D"``, ``"W"``, ``"M"``, ``"Q"``, ``"Y"`` from the median spacing, else ``"unknown"``."""
    if len(dates) < 2:
        return "unknown"
    days = float(np.median(step_seconds(dates))) / 86400.0
    for freq, lo, hi in (
        ("h", 1 / 24 - 1e-6, 1 / 24 + 1e-6),
        ("D", 0.99, 1.01),
        ("W", 6.9, 7.1),
        ("M", 27.9, 31.1),
        ("Q", 89, 92.1),
        ("Y", 364.9, 366.1),
    ):
        if lo <= days <= hi:
            return freq
    warnings.warn(
        f"{path}: dates {days:g} days apart match no known frequency; only the trend covariate is used",
        stacklevel=3,
    )
    return "unknown"


#: Offsets to extend the dates past the data (predict on the future).
_OFFSETS = {
    "h": pd.DateOffset(hours=1),
    "D": pd.DateOffset(days=1),
    "W": pd.DateOffset(weeks=1),
    "M": pd.DateOffset(months=1),
    "Q": pd.DateOffset(months=3),
    "Y": pd.DateOffset(years=1),
}


def extend_dates(dates: pd.DatetimeIndex, frequency: str, steps: int) -> pd.DatetimeIndex:
    """The ``steps`` dates after ``dates`` (``last + k * offset``, so month ends stay month ends)."""
    if frequency not in _OFFSETS:
        spacing = (
            pd.Timedelta(seconds=float(np.median(step_seconds(dates))))
            if len(dates) > 1
            else pd.Timedelta(days=1)
        )
        return pd.DatetimeIndex([dates[-1] + spacing * k for k in range(1, steps + 1)])
    offset = _OFFSETS[frequency]
    return pd.DatetimeIndex([dates[-1] + offset * k for k in range(1, steps + 1)])


def calendar_covariates(
    dates: pd.DatetimeIndex, frequency: str, num_data_steps: int | None = None, trend: bool = True
) -> tuple[np.ndarray, tuple[str, ...]]:
    r"""``T x D`` calendar covariates and their names (see the module docstring for the choice).

    Each seasonal position :math:`\phi \in [0, m)` of period :math:`m` becomes
    :math:`(\sin 2\pi\phi/m, \cos 2\pi\phi/m)`; the trend is :math:`t/(T_{data} - 1) - 1/2` with
    ``num_data_steps`` :math:`T_{data}` (default ``len(dates)``; steps past the data exceed 1/2).
    """
    cycles: list[tuple[str, np.ndarray, float]] = []
    if frequency == "M":
        cycles.append(("month", dates.month.to_numpy() - 1.0, 12.0))
    elif frequency == "Q":
        cycles.append(("quarter", dates.quarter.to_numpy() - 1.0, 4.0))
    elif frequency == "W":
        cycles.append(("week_of_year", dates.dayofyear.to_numpy() - 1.0, 365.25))
    elif frequency == "D":
        cycles.append(("day_of_week", dates.dayofweek.to_numpy().astype(float), 7.0))
        cycles.append(("day_of_year", dates.dayofyear.to_numpy() - 1.0, 365.25))
    elif frequency == "h":
        cycles.append(("hour", dates.hour.to_numpy().astype(float), 24.0))
        cycles.append(("day_of_week", dates.dayofweek.to_numpy().astype(float), 7.0))
    columns, names = [], []
    for name, phase, period in cycles:
        angle = 2 * math.pi * phase / period
        columns += [np.sin(angle), np.cos(angle)]
        names += [f"{name}_sin", f"{name}_cos"]
    if trend:
        n = num_data_steps if num_data_steps is not None else len(dates)
        columns.append(np.arange(len(dates)) / max(n - 1, 1) - 0.5)
        names.append("trend")
    if not columns:
        raise ConfigError(f"frequency {frequency!r} gives no seasonal covariate: set trend=True")
    return np.stack(columns, axis=1).astype(np.float64), tuple(names)


__all__ = ["calendar_covariates", "extend_dates", "infer_frequency", "step_seconds"]
