r"""Classical baselines for HiReD (Paria thesis, ch. 6; issue 18): seasonal naive and ETS, reconciled.

Every function takes the data of a :class:`~dsbo.data.hierarchical.HierarchicalDataModule` (its
:class:`~dsbo.data.hierarchical.Hierarchy`, the original-scale matrix ``values`` (``T x N``) and
the first forecast step of each window, e.g. ``dm.forecast_starts("test")``) and returns
forecasts of **every node** in original units as an array ``W x N x F`` (windows, nodes, steps),
so that :func:`score_forecasts` scores them with the same metrics as HiReD
(:mod:`dsbo_zoo.forecast_metrics`: WAPE / SMAPE per level and mean, coherence of table 6.3).
Each window is forecast from the values before its first step only (a rolling origin: for a
later test window the earlier test steps are history, never the window's own targets).

- :func:`seasonal_naive`: :math:`\hat y_{s+h} = y_{s - m + (h \bmod m)}`, the last observed
  season repeated, for all nodes (coherent, as a linear map of coherent data).
- :func:`ets_reconciled`: statsforecast's ``AutoETS`` (season ``m``) fitted per node on the
  history, then reconciled with hierarchicalforecast: ``BottomUp`` (the bottom forecasts summed
  by :math:`S`) and ``MinTrace(method="mint_shrink")`` (Wickramasuriya et al. 2019: the
  projection :math:`S (S^\top W^{-1} S)^{-1} S^\top W^{-1}` with :math:`W` the shrunk covariance
  of the in-sample one-step residuals). The base (unreconciled) ETS forecasts come along.

- :func:`mint_reconcile`: MinT of any base forecasts (HiReD's from :func:`model_forecasts`, a
  combination's) with the covariance of their in-sample residuals (:func:`insample_residuals`
  over the windows of :func:`insample_starts`), so a neural forecaster gets the same
  reconciliation as ETS.

The season :math:`m` follows the data's frequency (:data:`SEASONS`, defined with the data's window
settings in :mod:`dsbo.data.hierarchical_settings`: 12 monthly, 4 quarterly, 7 daily, 52 weekly,
24 hourly); it is the season of the ``y_snaive`` forecast in every batch of the data module. statsforecast and hierarchicalforecast are the optional extra
``forecast`` (``pip install -e ".[forecast]"``; statsforecast 2.1 pins pandas < 3). They, pandas
and the zoo's metrics (whose package imports Lightning) are imported by the functions that use
them, not with the module.

Example:
    >>> dm = HierarchicalDataModule(path=".../tourismsmall")
    >>> forecasts = baseline_forecasts(dm, split="test")        # name -> W x N x F
    >>> scores = score_forecasts(forecasts["ets_mint_shrink"], dm.Y, dm.forecast_starts("test"),
    ...                          dm.hierarchy)
    >>> scores["wape_mean"], scores["wape/level0"], scores["coherence/mean"]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from dsbo.data.hierarchical_settings import (
    SEASONS as SEASONS,  # the data side owns the seasons (re-exported)
)
from dsbo.data.hierarchical_settings import season_of
from dsbo.errors import ConfigError, DataError

if TYPE_CHECKING:
    from dsbo.data.hierarchical import Hierarchy

#: Keys of :func:`ets_reconciled` (and of :func:`baseline_forecasts` with ``seasonal_naive``).
ETS_METHODS = ("ets", "ets_bottom_up", "ets_mint_shrink")
BASELINES = ("seasonal_naive", *ETS_METHODS)


def _check(
    values: np.ndarray, starts: Sequence[int], horizon: int, need: int, what: str
) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise DataError(f"{what}: values must be a T x N matrix, got shape {values.shape}")
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ConfigError(f"{what}: horizon must be an integer >= 1, got {horizon!r}")
    if len(starts) == 0:
        raise ConfigError(f"{what}: no windows to forecast (starts is empty)")
    for s in starts:
        if int(s) < need:
            raise DataError(
                f"{what}: the window starting at step {s} has {s} steps of history; it needs at least {need}"
            )
        if int(s) > values.shape[0]:
            raise DataError(
                f"{what}: window start {s} lies past the {values.shape[0]} steps of the data"
            )
    return values


def seasonal_naive(
    values: np.ndarray, starts: Sequence[int], horizon: int, season: int
) -> np.ndarray:
    r"""Seasonal naive forecasts of every node: :math:`\hat y_{s+h} = y_{s - m + (h \bmod m)}`.

    Args:
        values: ``T x N`` original-scale data.
        starts: First forecast step of each window (``values[:s]`` is its history).
        horizon: :math:`F`.
        season: :math:`m` (1: the naive forecast, the last value repeated).

    Returns:
        ``W x N x F`` forecasts.
    """
    if isinstance(season, bool) or not isinstance(season, int) or season < 1:
        raise ConfigError(f"seasonal_naive: season must be an integer >= 1, got {season!r}")
    values = _check(values, starts, horizon, season, "seasonal_naive")
    h = np.arange(horizon)
    return np.stack([values[int(s) - season + (h % season)].T for s in starts])


def _require_forecast_extra() -> tuple[Any, Any, Any, Any, Any]:
    try:
        import pandas as pd
        from hierarchicalforecast.core import HierarchicalReconciliation
        from hierarchicalforecast.methods import BottomUp, MinTrace
        from statsforecast import StatsForecast
        from statsforecast.models import AutoETS
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ConfigError(
            'the ETS baselines need statsforecast and hierarchicalforecast: pip install -e ".[forecast]" '
            f"({exc})"
        ) from exc
    return pd, StatsForecast, AutoETS, HierarchicalReconciliation, (BottomUp, MinTrace)


def ets_reconciled(
    hierarchy: Hierarchy,
    values: np.ndarray,
    starts: Sequence[int],
    horizon: int,
    season: int,
    n_jobs: int = 1,
    insample: bool = False,
) -> dict[str, Any]:
    """AutoETS base forecasts of every node, reconciled bottom-up and by MinT (shrinkage).

    Args:
        hierarchy: The hierarchy of ``values``' columns.
        values: ``T x N`` original-scale data.
        starts: First forecast step of each window; each window is fitted on ``values[:s]``.
        horizon: :math:`F`.
        season: Seasonal period :math:`m` of ``AutoETS`` (1: non-seasonal).
        n_jobs: statsforecast's worker processes.
        insample: Also return ``"ets_insample"``: per window, the ``N x s`` one-step in-sample
            fitted values of that window's fit (what MinT's covariance is estimated from; for
            :func:`combine_and_reconcile`).

    Returns:
        ``{"ets": base, "ets_bottom_up": ..., "ets_mint_shrink": ...}``, each ``W x N x F``.
    """
    if isinstance(season, bool) or not isinstance(season, int) or season < 1:
        raise ConfigError(f"ets_reconciled: season must be an integer >= 1, got {season!r}")
    values = _check(values, starts, horizon, max(2 * season, 4), "ets_reconciled")
    if values.shape[1] != hierarchy.num_nodes:
        raise DataError(
            f"ets_reconciled: values have {values.shape[1]} columns for the {hierarchy.num_nodes} nodes of the hierarchy"
        )
    pd, StatsForecast, AutoETS, HierarchicalReconciliation, (BottomUp, MinTrace) = (
        _require_forecast_extra()
    )
    n = hierarchy.num_nodes
    ids = np.array([f"n{i:06d}" for i in range(n)])
    # hierarchicalforecast wants the bottom series last, as an identity block, in S's column order
    leaves = set(hierarchy.leaf_index.tolist())
    order = [i for i in range(n) if i not in leaves] + hierarchy.leaf_index.tolist()
    S_df = pd.DataFrame(hierarchy.S[order], columns=ids[hierarchy.leaf_index])
    S_df.insert(0, "unique_id", ids[order])
    tags = {name: ids[hierarchy.level == k] for k, name in enumerate(hierarchy.level_names)}
    names = {
        "AutoETS": "ets",
        "AutoETS/BottomUp": "ets_bottom_up",
        "AutoETS/MinTrace_method-mint_shrink": "ets_mint_shrink",
    }
    out: dict[str, Any] = {key: np.empty((len(starts), n, horizon)) for key in names.values()}
    fitted_values: list[np.ndarray] = []
    for w, s in enumerate(int(s) for s in starts):
        train = pd.DataFrame(
            {
                "unique_id": np.repeat(ids, s),
                "ds": np.tile(np.arange(s), n),
                "y": values[:s].T.reshape(-1),
            }
        )
        sf = StatsForecast(models=[AutoETS(season_length=season)], freq=1, n_jobs=n_jobs)
        base = sf.forecast(df=train, h=horizon, fitted=True)
        fitted = sf.forecast_fitted_values()
        if insample:
            table = fitted.set_index(["unique_id", "ds"])["AutoETS"].unstack("ds").reindex(ids)
            fitted_values.append(table[sorted(table.columns)].to_numpy(dtype=np.float64))
        reconciled = HierarchicalReconciliation(
            [BottomUp(), MinTrace(method="mint_shrink")]
        ).reconcile(Y_hat_df=base, Y_df=fitted, S_df=S_df, tags=tags)
        frame = reconciled.set_index(["unique_id", "ds"])
        for column, key in names.items():
            if column not in frame.columns:
                raise DataError(
                    f"ets_reconciled: hierarchicalforecast returned no column {column!r} (got {list(frame.columns)})"
                )
            table = frame[column].unstack("ds").reindex(ids)
            table = table[sorted(table.columns)]
            if table.shape != (n, horizon) or not np.isfinite(table.to_numpy()).all():
                raise DataError(
                    f"ets_reconciled: {column} forecasts of the window starting at step {s} are incomplete or not finite"
                )
            out[key][w] = table.to_numpy(dtype=np.float64)
    if insample:
        out["ets_insample"] = fitted_values
    return out


def model_forecasts(model: Any, dm: Any, starts: Sequence[int]) -> np.ndarray:
    """``W x N x F`` original-unit forecasts of a node forecaster (a zoo
    ``HierarchicalForecaster``: ``model(batch)`` in scaled units) for the windows starting at
    ``starts``, every node, in ``dm.batch_nodes`` chunks of ``dm.make_batch``."""
    chunks = torch.arange(dm.num_nodes).split(dm.batch_nodes)
    out = np.empty((len(starts), dm.num_nodes, dm.horizon))
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for w, s in enumerate(int(s) for s in starts):
            for nodes in chunks:
                batch = dm.make_batch(s, nodes)
                out[w, nodes.numpy()] = (
                    model(batch).double() * batch["scale"].double()[:, None]
                ).numpy()
    model.train(was_training)
    return out


def insample_starts(dm: Any) -> list[int]:
    """Starts of the consecutive training windows that end at the training range's end
    (``dm.ranges()["train"]``), stepping back by ``F``: each training step after the first
    window's start is forecast once (the in-sample forecasts MinT's covariance needs)."""
    first = dm.forecast_starts("train")[0]
    end = dm.ranges()["train"][1]
    return list(range(end - dm.horizon, first - 1, -dm.horizon))[::-1]


def insample_residuals(
    forecasts: np.ndarray, values: np.ndarray, starts: Sequence[int]
) -> np.ndarray:
    """``N x (W F)`` errors (target minus forecast) of ``W x N x F`` forecasts of the windows at ``starts``."""
    horizon = forecasts.shape[2]
    targets = np.stack([np.asarray(values)[int(s) : int(s) + horizon].T for s in starts])
    return (targets - forecasts).transpose(1, 0, 2).reshape(forecasts.shape[1], -1)


def mint_reconcile(
    hierarchy: Hierarchy, base: np.ndarray, residuals: np.ndarray, method: str = "mint_shrink"
) -> np.ndarray:
    r"""Reconcile ``W x N x F`` base forecasts with hierarchicalforecast's ``MinTrace``:
    :math:`\tilde y = S (S^\top W^{-1} S)^{-1} S^\top W^{-1} \hat y`, :math:`W` estimated from
    ``residuals`` (``N x M`` in-sample errors of the same forecaster; ``mint_shrink``: the
    Schäfer-Strimmer shrunk covariance, Wickramasuriya et al. 2019) or ``method="ols"`` /
    ``"wls_struct"`` (no residuals used). Any forecaster's base forecasts: HiReD's, a combination's."""
    base = np.asarray(base, dtype=np.float64)
    residuals = np.asarray(residuals, dtype=np.float64)
    n = hierarchy.num_nodes
    if base.ndim != 3 or base.shape[1] != n or residuals.ndim != 2 or residuals.shape[0] != n:
        raise DataError(
            f"mint_reconcile: base must be W x {n} x F and residuals {n} x M, got {base.shape} and {residuals.shape}"
        )
    if not (np.isfinite(base).all() and np.isfinite(residuals).all()):
        raise DataError("mint_reconcile: base forecasts or residuals are not finite")
    _, _, _, _, (_, MinTrace) = _require_forecast_extra()
    leaves = set(hierarchy.leaf_index.tolist())
    order = np.array([i for i in range(n) if i not in leaves] + hierarchy.leaf_index.tolist())
    S = np.asarray(hierarchy.S, dtype=np.float64)[order]
    out = np.empty_like(base)
    for w in range(base.shape[0]):
        found = MinTrace(method=method).fit_predict(
            S=S,
            y_hat=base[w][order],
            y_insample=residuals[order],
            y_hat_insample=np.zeros_like(residuals),
        )
        out[w][order] = found["mean"]
    return out


def baseline_forecasts(
    dm: Any,
    split: str = "test",
    methods: Sequence[str] = BASELINES,
    season: int | None = None,
    n_jobs: int = 1,
) -> dict[str, np.ndarray]:
    """Forecasts of the baselines for the windows of ``split`` of a ``HierarchicalDataModule``.

    Args:
        dm: The datamodule (uses ``dm.hierarchy``, ``dm.Y``, ``dm.forecast_starts(split)``,
            ``dm.horizon`` and the frequency of ``dm.series``).
        split: ``"val"`` or ``"test"``.
        methods: Any of :data:`BASELINES`.
        season: Seasonal period (default: the data module's ``season``, else from the data's
            frequency, :data:`SEASONS`).

    Returns:
        ``name -> W x N x F`` original-scale forecasts.
    """
    unknown = [m for m in methods if m not in BASELINES]
    if unknown:
        raise ConfigError(f"baseline_forecasts: unknown methods {unknown}; choose from {BASELINES}")
    if split not in ("val", "test"):
        raise ConfigError(f"baseline_forecasts: split must be 'val' or 'test', got {split!r}")
    m = (
        season
        if season is not None
        else (getattr(dm, "season", None) or season_of(dm.series.frequency))
    )
    starts = dm.forecast_starts(split)
    out: dict[str, np.ndarray] = {}
    if "seasonal_naive" in methods:
        out["seasonal_naive"] = seasonal_naive(dm.Y, starts, dm.horizon, m)
    if any(x in methods for x in ETS_METHODS):
        ets = ets_reconciled(dm.hierarchy, dm.Y, starts, dm.horizon, m, n_jobs=n_jobs)
        out.update({k: v for k, v in ets.items() if k in methods})
    return out


def score_forecasts(
    forecasts: np.ndarray, values: np.ndarray, starts: Sequence[int], hierarchy: Hierarchy
) -> dict[str, float]:
    """WAPE / SMAPE per level and mean, and coherence (table 6.3), of ``W x N x F`` forecasts.

    The targets are ``values[s : s + F]`` of each window; every window and step of a node is
    pooled into its level's sums (:class:`dsbo_zoo.forecast_metrics.LevelMetrics`).

    Returns:
        ``wape/level{k}``, ``smape/level{k}``, ``wape_mean``, ``smape_mean``, ``coherence/level{k}``
        and ``coherence/mean`` as floats.
    """
    from dsbo_zoo.forecast_metrics import (  # the zoo package imports Lightning
        LevelMetrics,
        coherence_wape,
    )

    forecasts = np.asarray(forecasts, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if forecasts.ndim != 3 or forecasts.shape[:2] != (len(starts), hierarchy.num_nodes):
        raise DataError(
            f"score_forecasts: forecasts must be windows x nodes x horizon = ({len(starts)}, {hierarchy.num_nodes}, F), "
            f"got {forecasts.shape}"
        )
    horizon = forecasts.shape[2]
    if any(int(s) + horizon > values.shape[0] for s in starts):
        raise DataError(
            f"score_forecasts: a window runs past the {values.shape[0]} steps of the data (no targets)"
        )
    targets = np.stack([values[int(s) : int(s) + horizon].T for s in starts])
    # nodes first, windows and steps pooled: N x (W * F)
    pred = torch.as_tensor(forecasts.transpose(1, 0, 2).reshape(hierarchy.num_nodes, -1))
    target = torch.as_tensor(targets.transpose(1, 0, 2).reshape(hierarchy.num_nodes, -1))
    level = torch.as_tensor(hierarchy.level, dtype=torch.long)
    metrics = LevelMetrics(num_levels=hierarchy.num_levels)
    metrics.update(pred, target, level)
    out = {k: float(v) for k, v in metrics.compute().items()}
    coherence = coherence_wape(
        pred, torch.as_tensor(hierarchy.S), level, torch.as_tensor(hierarchy.leaf_index)
    )
    out.update({k: float(v) for k, v in coherence.items()})
    return out
