r"""Which windows a :class:`~dsbo.data.hierarchical.HierarchicalDataModule` uses, and why.

**Settings per data set.** ``None`` arguments among ``history``, ``horizon``, ``val_windows``
and ``test_windows`` resolve through :data:`DATASET_DEFAULTS` for the three data sets that were
run (by the folder name of ``path``, else ``name``): labour :math:`(H, F) = (24, 8)`;
tourismlarge :math:`(24, 12)`; tourismsmall has only 36 quarterly steps, so with the
literature's horizon 8 and one validation and one test window 20 steps remain for training:
:math:`H = 8` (two years) leaves 5 training windows (:math:`H = 12` would leave one). Any other
data get them from their frequency and length
(:func:`~dsbo.data.hierarchical_settings.data_settings`):

| frequency | season :math:`m` | :math:`(H, F)` | windows | preset (``settings.preset``) |
|---|---|---|---|---|
| hourly | 24 | (48, 24) | 3 + 3 | ``m5`` |
| daily | 7 | (28, 7) | 3 + 3 | ``m5`` |
| weekly | 52 | (52, 13) | 3 + 3 | ``tourism`` |
| monthly | 12 | (24, 4) | 3 + 3 | ``tourism`` |
| quarterly | 4 | (12, 4) | 3 + 3 | ``tourism`` |

reduced (windows first, then the history) when the data are too short for
:data:`~dsbo.data.hierarchical_settings.MIN_TRAIN_WINDOWS` training windows, and a
:class:`~dsbo.errors.DataError` naming the fields when even that is too short. The data
module's ``settings`` (:class:`~dsbo.data.hierarchical_settings.DataSettings`), ``season``,
``preset`` (the table 6.5 column a HiReD should start from, ``dsbo_zoo.hired.PRESETS``) and
``settings_origin`` (each field: ``"given"``, ``"<name> defaults"`` or ``"derived from the
data"``, :func:`resolve_settings`) say what was chosen. When both ``name`` and ``path`` are
given and ``name`` is not the folder name of ``path``, the data are read from ``path`` and the
defaults follow them (not ``name``), with a warning saying which setting came from where
(:func:`name_path_message`).

Example:
    >>> from dsbo.data.synthetic_hierarchies import synthetic_set
    >>> settings, origin = resolve_settings(
    ...     synthetic_set("synthetic-daily"), {k: None for k in FIELDS}, None, None
    ... )
    >>> settings.history, settings.horizon, origin["history"], origin["season"]
    (28, 7, 'derived from the data', 'the frequency (D)')
"""

from __future__ import annotations

from dsbo.data.hierarchical_settings import FIELDS, DataSettings, data_settings
from dsbo.data.hierarchy import HierarchicalSeries

#: Per data set (folder name) defaults: history H, horizon F, validation and test windows.
DATASET_DEFAULTS: dict[str, dict[str, int]] = {
    "labour": {"history": 24, "horizon": 8, "val_windows": 3, "test_windows": 1},
    "tourismsmall": {"history": 8, "horizon": 8, "val_windows": 1, "test_windows": 1},
    "tourismlarge": {"history": 24, "horizon": 12, "val_windows": 3, "test_windows": 1},
}
#: Table 6.5, Tourism column: (H, F) = (24, 4), 3 rolling validation / test windows (the monthly
#: row of the settings derived from the data; it was the fallback of every other data set).
PAPER_DEFAULTS: dict[str, int] = {"history": 24, "horizon": 4, "val_windows": 3, "test_windows": 3}


def resolve_settings(
    series: HierarchicalSeries,
    given: dict[str, int | None],
    season: int | None,
    defaults_name: str | None,
) -> tuple[DataSettings, dict[str, str]]:
    """The settings of ``series`` and where each field came from.

    ``given`` holds the four fields of :data:`~dsbo.data.hierarchical_settings.FIELDS`
    (``None``: not given). A field not given takes the :data:`DATASET_DEFAULTS` of
    ``defaults_name`` when it names one of them, else is derived from the data
    (:func:`~dsbo.data.hierarchical_settings.data_settings`).
    """
    known = DATASET_DEFAULTS.get(defaults_name or "")
    fixed = {k: v if v is not None or known is None else known[k] for k, v in given.items()}
    settings = data_settings(
        series.frequency, series.values.shape[0], season=season, source=str(series.source), **fixed
    )
    if known:
        not_given = f"{defaults_name} defaults"
    else:
        not_given = "derived from the data"
    origin = {k: "given" if given[k] is not None else not_given for k in FIELDS}
    origin["season"] = "given" if season is not None else f"the frequency ({series.frequency})"
    return settings, origin


def not_given(origin: dict[str, str]) -> list[str]:
    """The fields of :data:`~dsbo.data.hierarchical_settings.FIELDS` that were not given."""
    return [k for k in FIELDS if origin[k] != "given"]


def name_path_message(
    name: str, folder_name: str, settings: DataSettings, origin: dict[str, str]
) -> str:
    """The warning when ``name`` is not the folder name of ``path``: what each setting followed."""
    parts = ", ".join(f"{k}={getattr(settings, k)} ({origin[k]})" for k in (*FIELDS, "season"))
    return (
        f"HierarchicalDataModule: name={name!r} is not the folder name {folder_name!r} of path: "
        f"the data are read from path and the settings not given follow them, not {name}'s: "
        f"{parts}. To fix: drop name (with path it only selected defaults), or set "
        f"{', '.join(not_given(origin))} explicitly"
    )
