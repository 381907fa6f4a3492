"""Classical baselines of HiReD: seasonal naive, AutoETS reconciled bottom-up and by MinT
(statsforecast + hierarchicalforecast, the `forecast` extra), and their scoring."""

import importlib.util

import numpy as np
import pytest

from dsbo.analysis.forecast_baselines import (
    BASELINES,
    baseline_forecasts,
    ets_reconciled,
    insample_residuals,
    insample_starts,
    mint_reconcile,
    model_forecasts,
    score_forecasts,
    season_of,
    seasonal_naive,
)
from dsbo.data import HierarchicalDataModule, synthetic_hierarchy
from dsbo.errors import ConfigError, DataError

HAS_FORECAST_EXTRA = all(
    importlib.util.find_spec(m) is not None for m in ("statsforecast", "hierarchicalforecast")
)
needs_extra = pytest.mark.skipif(
    not HAS_FORECAST_EXTRA,
    reason='statsforecast/hierarchicalforecast not installed: pip install -e ".[forecast]"',
)


def test_seasonal_naive_repeats_the_last_season():
    values = np.arange(40, dtype=float)[:, None] * np.array(
        [1.0, 10.0]
    )  # T x 2, y_t = t (and 10 t)
    out = seasonal_naive(values, starts=[20, 30], horizon=6, season=4)
    assert out.shape == (2, 2, 6)
    # window at 20: steps 20..25 repeat steps 16..19 -> 16, 17, 18, 19, 16, 17
    np.testing.assert_array_equal(out[0, 0], [16, 17, 18, 19, 16, 17])
    np.testing.assert_array_equal(out[1, 1], 10 * np.array([26, 27, 28, 29, 26, 27]))
    naive = seasonal_naive(values, starts=[5], horizon=3, season=1)
    np.testing.assert_array_equal(naive[0, 0], [4, 4, 4])
    with pytest.raises(
        DataError, match="window starting at step 3 has 3 steps of history; it needs at least 4"
    ):
        seasonal_naive(values, starts=[3], horizon=2, season=4)
    with pytest.raises(ConfigError, match="season"):
        seasonal_naive(values, starts=[10], horizon=2, season=0)


def test_seasonal_naive_is_coherent_and_scores():
    dm = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 72, "noise": 0.0},
        history=12,
        horizon=6,
        val_windows=1,
        test_windows=2,
    )
    starts = dm.forecast_starts("test")
    fc = baseline_forecasts(dm, methods=["seasonal_naive"])["seasonal_naive"]
    assert fc.shape == (2, dm.num_nodes, 6)
    scores = score_forecasts(fc, dm.Y, starts, dm.hierarchy)
    assert scores["coherence/mean"] == pytest.approx(0.0, abs=1e-12)
    assert set(scores) >= {
        "wape_mean",
        "smape_mean",
        "wape/level0",
        "smape/level2",
        "coherence/level1",
    }
    # noise-free seasonal data with a slow trend: last year's values are close, never exact
    assert 0 < scores["wape_mean"] < 0.2


def test_score_forecasts_by_hand():
    h = synthetic_hierarchy(branching=(2,), num_steps=10).hierarchy  # total, n0, n1
    values = np.zeros((10, 3))
    values[:, 1], values[:, 2] = 1.0, 3.0
    values[:, 0] = 4.0
    perfect = np.stack([values[6:8].T])
    scores = score_forecasts(perfect, values, [6], h)
    assert scores["wape_mean"] == 0.0 and scores["coherence/mean"] == 0.0
    wrong = perfect.copy()
    wrong[0, 0] += 2.0  # the total off by 2 on both steps: WAPE 4/8, coherence 4/8 (c = 4)
    wrong[0, 1] += 1.0  # n0 off by 1: leaf WAPE (1 + 1) / (2 + 6), the total's reference becomes 5
    scores = score_forecasts(wrong, values, [6], h)
    assert scores["wape/level0"] == pytest.approx(0.5)
    assert scores["wape/level1"] == pytest.approx(2 / 8)
    assert scores["wape_mean"] == pytest.approx((0.5 + 0.25) / 2)
    assert scores["coherence/level0"] == pytest.approx(2 / 10)  # |6 - 5| per step over 5 per step
    assert scores["coherence/level1"] == 0.0
    with pytest.raises(DataError, match="windows x nodes x horizon"):
        score_forecasts(wrong[0], values, [6], h)
    with pytest.raises(DataError, match="runs past"):
        score_forecasts(wrong, values, [9], h)


@needs_extra
@pytest.mark.parametrize(("branching", "groups"), [((2, 2), 0), ((2,), 2)])
def test_ets_reconciled_bottom_up_and_mint(branching, groups):
    series = synthetic_hierarchy(branching=branching, groups=groups, num_steps=60, seed=5)
    dm = HierarchicalDataModule.from_series(
        series, history=12, horizon=4, val_windows=1, test_windows=2
    )
    starts = dm.forecast_starts("test")
    h = dm.hierarchy
    out = ets_reconciled(h, dm.Y, starts, dm.horizon, season_of(dm.series.frequency))
    assert set(out) == {"ets", "ets_bottom_up", "ets_mint_shrink"}
    for fc in out.values():
        assert fc.shape == (2, h.num_nodes, 4) and np.isfinite(fc).all()
    # bottom-up = S @ the base forecasts of the bottom series, exactly
    base_leaves = out["ets"][:, h.leaf_index]  # W x L x F
    np.testing.assert_allclose(
        out["ets_bottom_up"], np.einsum("nl,wlf->wnf", h.S, base_leaves), rtol=1e-9
    )
    np.testing.assert_allclose(out["ets_bottom_up"][:, h.leaf_index], base_leaves, rtol=1e-12)
    scores = {k: score_forecasts(v, dm.Y, starts, h) for k, v in out.items()}
    # both reconciliations are coherent; MinT moves the bottom series (it is not bottom-up)
    assert scores["ets_bottom_up"]["coherence/mean"] < 1e-9
    assert scores["ets_mint_shrink"]["coherence/mean"] < 1e-6
    assert not np.allclose(out["ets_mint_shrink"][:, h.leaf_index], base_leaves)
    # seasonal data, low noise: ETS is accurate at every level
    for k, s in scores.items():
        assert s["wape_mean"] < 0.05, (k, s)


@needs_extra
def test_baseline_forecasts_all_methods_and_errors():
    dm = HierarchicalDataModule(
        synthetic={"branching": [3], "num_steps": 48, "frequency": "Q", "season": 4},
        history=8,
        horizon=4,
        val_windows=1,
        test_windows=1,
        num_representatives=2,
    )
    out = baseline_forecasts(dm, split="val")
    assert set(out) == set(BASELINES)
    assert all(v.shape == (1, 4, 4) for v in out.values())
    with pytest.raises(ConfigError, match="unknown methods"):
        baseline_forecasts(dm, methods=["arima"])
    with pytest.raises(ConfigError, match="split"):
        baseline_forecasts(dm, split="train")


@needs_extra
@pytest.mark.parametrize(("branching", "groups"), [((2, 2), 0), ((2,), 2)])
def test_mint_reconcile_reproduces_ets_mint_from_its_residuals(branching, groups):
    """mint_reconcile of the ETS base forecasts with the ETS fit's in-sample residuals is the
    ets_mint_shrink of hierarchicalforecast's data-frame path (node order, the grouped case);
    its output is coherent, and OLS needs no residuals."""
    series = synthetic_hierarchy(branching=branching, groups=groups, num_steps=60, seed=5)
    dm = HierarchicalDataModule.from_series(
        series, history=12, horizon=4, val_windows=1, test_windows=2
    )
    starts, h = dm.forecast_starts("test"), dm.hierarchy
    out = ets_reconciled(h, dm.Y, starts, dm.horizon, season_of(dm.series.frequency), insample=True)
    assert [f.shape for f in out["ets_insample"]] == [(h.num_nodes, s) for s in starts]
    for w, s in enumerate(starts):
        residuals = dm.Y[:s].T - out["ets_insample"][w]
        mine = mint_reconcile(h, out["ets"][w : w + 1], residuals)
        np.testing.assert_allclose(
            mine[0], out["ets_mint_shrink"][w], rtol=1e-6, atol=1e-8 * np.abs(dm.Y).max()
        )
    ols = mint_reconcile(h, out["ets"], np.zeros((h.num_nodes, 1)), method="ols")
    assert score_forecasts(ols, dm.Y, starts, h)["coherence/mean"] < 1e-9
    with pytest.raises(DataError, match="mint_reconcile"):
        mint_reconcile(h, out["ets"], np.zeros((3, 5)))


def test_model_forecasts_and_insample_windows():
    """model_forecasts of the seasonal naive forecaster are forecast_baselines.seasonal_naive (in
    node chunks); the in-sample windows tile the training range up to its end, and their
    residuals are target minus forecast."""
    from dsbo_zoo.hired import SeasonalNaiveForecaster

    dm = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 72, "seed": 0},
        history=12,
        horizon=4,
        val_windows=1,
        test_windows=2,
        num_representatives=3,
        batch_nodes=4,
    )
    starts = dm.forecast_starts("test")
    got = model_forecasts(SeasonalNaiveForecaster(), dm, starts)
    np.testing.assert_allclose(got, seasonal_naive(dm.Y, starts, dm.horizon, dm.season), rtol=1e-6)
    ins = insample_starts(dm)
    assert ins[-1] + dm.horizon == dm.ranges()["train"][1] and np.all(np.diff(ins) == dm.horizon)
    assert (
        ins[0] >= dm.forecast_starts("train")[0]
        and ins[0] - dm.horizon < dm.forecast_starts("train")[0]
    )
    fc = seasonal_naive(dm.Y, ins, dm.horizon, dm.season)
    res = insample_residuals(fc, dm.Y, ins)
    assert res.shape == (dm.num_nodes, len(ins) * dm.horizon)
    np.testing.assert_allclose(res[:, : dm.horizon], dm.Y[ins[0] : ins[0] + dm.horizon].T - fc[0])
