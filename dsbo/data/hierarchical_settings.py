r"""Window settings of a hierarchical data set, derived from its frequency and length (issue 31).

:class:`~dsbo.data.hierarchical.HierarchicalDataModule` needs a history :math:`H`, a horizon
:math:`F`, the numbers of validation and test windows and the seasonal period :math:`m` of the
seasonal naive forecast in every batch (``y_snaive``). The three data sets it was run on keep
their settings (:data:`dsbo.data.hierarchical.DATASET_DEFAULTS`); any other data get them from
:func:`data_settings`, which starts from the row of their frequency code
(:func:`dsbo.data.dates.infer_frequency`) in this table, together with the column of table 6.5
(HiReD's presets, ``dsbo_zoo.hired.PRESETS``) a model should start from:

| frequency | season :math:`m` | :math:`H` | :math:`F` | validation + test windows | preset |
|---|---|---|---|---|---|
| ``h`` hourly | 24 | 48 | 24 | 3 + 3 | ``m5`` |
| ``D`` daily | 7 | 28 | 7 | 3 + 3 | ``m5`` (table 6.5's daily columns: :math:`(H, F) = (28, 7)`) |
| ``W`` weekly | 52 | 52 | 13 | 3 + 3 | ``tourism`` |
| ``M`` monthly | 12 | 24 | 4 | 3 + 3 | ``tourism`` (table 6.5's Tourism column) |
| ``Q`` quarterly | 4 | 12 | 4 | 3 + 3 | ``tourism`` |
| ``Y`` yearly | 1 | 8 | 2 | 3 + 3 | ``tourism`` |
| unknown | 1 | 24 | 4 | 3 + 3 | ``tourism`` |

The hourly, weekly, quarterly and yearly rows are this project's choices (the thesis has no
such data): a history of one or a few seasons, a horizon of about a quarter of a season (weekly:
13 weeks, the M4 competition's weekly horizon), and the short-series Tourism column for the
coarse frequencies, whose series are a few hundred steps at most.

**Adapting to the length.** Training windows have their origin (first forecast step) :math:`s
\ge \max(H, m)` (the seasonal naive forecast needs a full season before :math:`s`) and lie in
the steps before the held-out :math:`(v + t) F`, so there are :math:`T - (v + t) F - F + 1 -
\max(H, m)` of them. When the row leaves fewer than :data:`MIN_TRAIN_WINDOWS`, the settings
that were not given are reduced, in this order, until enough remain: the windows (3 + 3, then
2 + 2, then 1 + 1), then the history (down to :math:`\min(H, F)`). If even that is too short, a
:class:`~dsbo.errors.DataError` names the fields to set. Settings given explicitly are never
changed; when all four are given, only the data module's own check (one training window)
applies.

Example:
    >>> s = data_settings("D", 400)
    >>> (s.history, s.horizon, s.val_windows, s.test_windows, s.season, s.preset)
    (28, 7, 3, 3, 7, 'm5')
    >>> data_settings("Q", 36).as_dict()["val_windows"]      # 3 + 3 windows would leave none
    2
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dsbo.errors import ConfigError, DataError

#: Seasonal period per frequency code of :func:`dsbo.data.dates.infer_frequency`.
SEASONS = {"M": 12, "Q": 4, "W": 52, "D": 7, "h": 24, "Y": 1}
#: Fewest training windows derived settings may leave (explicit settings need one).
MIN_TRAIN_WINDOWS = 4
#: Frequency code -> (history, horizon, windows, preset); see the module docstring's table.
FREQUENCY_SETTINGS: dict[str, tuple[int, int, int, str]] = {
    "h": (48, 24, 3, "m5"),
    "D": (28, 7, 3, "m5"),
    "W": (52, 13, 3, "tourism"),
    "M": (24, 4, 3, "tourism"),
    "Q": (12, 4, 3, "tourism"),
    "Y": (8, 2, 3, "tourism"),
}
UNKNOWN_SETTINGS = (24, 4, 3, "tourism")
FIELDS = ("history", "horizon", "val_windows", "test_windows")
_NAMES = {
    "h": "hourly",
    "D": "daily",
    "W": "weekly",
    "M": "monthly",
    "Q": "quarterly",
    "Y": "yearly",
}


def season_of(frequency: str) -> int:
    """Seasonal period of a frequency code (1, i.e. no season, when unknown)."""
    return SEASONS.get(frequency, 1)


def train_window_count(
    num_steps: int, history: int, horizon: int, val_windows: int, test_windows: int, season: int
) -> int:
    r"""Training windows: origins :math:`s` with :math:`\max(H, m) \le s \le T - (v + t) F - F`."""
    train_end = num_steps - (val_windows + test_windows) * horizon
    return max(0, train_end - horizon + 1 - max(history, season))


@dataclass(frozen=True)
class DataSettings:
    """Settings of a hierarchical data set (see the module docstring).

    Attributes:
        history, horizon, val_windows, test_windows: :math:`H`, :math:`F` and the held-out windows.
        season: :math:`m` of the seasonal naive forecast (``y_snaive``).
        preset: The column of table 6.5 to start a model from (``dsbo_zoo.hired.PRESETS``).
        train_windows: Training windows these settings leave.
        derived: The fields of :data:`FIELDS` that were derived (not given).
    """

    history: int
    horizon: int
    val_windows: int
    test_windows: int
    season: int
    preset: str
    train_windows: int
    derived: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def data_settings(
    frequency: str,
    num_steps: int,
    *,
    history: int | None = None,
    horizon: int | None = None,
    val_windows: int | None = None,
    test_windows: int | None = None,
    season: int | None = None,
    source: str = "data",
) -> DataSettings:
    """Settings for ``num_steps`` steps of frequency ``frequency``; given fields are kept.

    Args:
        frequency: A code of :data:`SEASONS` (anything else: the "unknown" row, season 1).
        num_steps: :math:`T`.
        history, horizon, val_windows, test_windows, season: Fixed values (``None``: derived).
        source: Names the data in errors.

    Raises:
        DataError: Derived settings would leave fewer than :data:`MIN_TRAIN_WINDOWS` training
            windows; the message names the fields to set.
    """
    for arg, value in (
        ("num_steps", num_steps),
        ("history", history),
        ("horizon", horizon),
        ("val_windows", val_windows),
        ("test_windows", test_windows),
        ("season", season),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ConfigError(f"data_settings: {arg} must be an integer >= 1, got {value!r}")
    H0, F0, W0, preset = FREQUENCY_SETTINGS.get(frequency, UNKNOWN_SETTINGS)
    m = season if season is not None else season_of(frequency)
    given = {
        "history": history,
        "horizon": horizon,
        "val_windows": val_windows,
        "test_windows": test_windows,
    }
    derived = tuple(k for k, v in given.items() if v is None)
    H = history if history is not None else H0
    F = horizon if horizon is not None else F0
    windows = [(val_windows or w, test_windows or w) for w in range(W0, 0, -1)]
    candidates = [(H, v, t) for v, t in dict.fromkeys(windows)]
    if history is None:
        v, t = candidates[-1][1:]
        candidates += [(h, v, t) for h in range(H - 1, min(H, F) - 1, -1)]
    counted = [(train_window_count(num_steps, h, F, v, t, m), h, v, t) for h, v, t in candidates]
    if not derived:
        n, h, v, t = counted[0]
        return DataSettings(h, F, v, t, m, preset, n, derived)
    for n, h, v, t in counted:
        if n >= MIN_TRAIN_WINDOWS:
            return DataSettings(h, F, v, t, m, preset, n, derived)
    n, h, v, t = counted[-1]
    raise DataError(
        f"{source}: {num_steps} {_NAMES.get(frequency, frequency)} steps are too few for settings derived from "
        f"the data ({', '.join(derived)}): even history {h}, horizon {F}, val_windows {v}, test_windows {t} "
        f"and season {m} leave {n} training window(s), fewer than {MIN_TRAIN_WINDOWS}; set history, horizon, "
        "val_windows and test_windows explicitly (and season, for a shorter seasonal period), or use longer data"
    )


__all__ = [
    "FIELDS",
    "FREQUENCY_SETTINGS",
    "MIN_TRAIN_WINDOWS",
    "SEASONS",
    "DataSettings",
    "data_settings",
    "season_of",
    "train_window_count",
]
