"""Settings derived from the data, the name/path warning, the seasonal naive batch key and the
named synthetic sets of the hierarchical data module (issue 31)."""

import warnings

import numpy as np
import pytest
import torch

from dsbo.analysis.forecast_baselines import seasonal_naive
from dsbo.data import HierarchicalDataModule, synthetic_hierarchy, write_hierarchical
from dsbo.data.dates import infer_frequency
from dsbo.data.hierarchical import DATASET_DEFAULTS
from dsbo.data.hierarchical_settings import MIN_TRAIN_WINDOWS, data_settings, train_window_count
from dsbo.data.synthetic_hierarchies import SYNTHETIC_SETS, synthetic_set
from dsbo.errors import DataError


def fields(s):
    return (s.history, s.horizon, s.val_windows, s.test_windows, s.season, s.preset)


# ------------------------------------------------------------------------------------- settings
@pytest.mark.parametrize(
    ("frequency", "num_steps", "expected"),
    [
        ("D", 400, (28, 7, 3, 3, 7, "m5")),  # table 6.5's daily columns
        ("h", 500, (48, 24, 3, 3, 24, "m5")),
        ("W", 312, (52, 13, 3, 3, 52, "tourism")),
        ("M", 120, (24, 4, 3, 3, 12, "tourism")),  # table 6.5's Tourism column
        ("Q", 80, (12, 4, 3, 3, 4, "tourism")),
        ("Q", 36, (12, 4, 2, 2, 4, "tourism")),  # 3 + 3 windows would leave no training window
        ("Q", 26, (11, 4, 1, 1, 4, "tourism")),  # then 1 + 1, then a shorter history
        ("unknown", 100, (24, 4, 3, 3, 1, "tourism")),
    ],
)
def test_settings_follow_frequency_and_length(frequency, num_steps, expected):
    s = data_settings(frequency, num_steps)
    assert fields(s) == expected
    assert s.train_windows == train_window_count(
        num_steps, s.history, s.horizon, s.val_windows, s.test_windows, s.season
    )
    assert s.train_windows >= MIN_TRAIN_WINDOWS


def test_given_settings_are_kept_and_too_short_data_name_the_fields():
    s = data_settings("D", 400, horizon=14, val_windows=1)
    assert (s.horizon, s.val_windows, s.test_windows) == (14, 1, 3) and s.derived == (
        "history",
        "test_windows",
    )
    with pytest.raises(
        DataError,
        match=r"15 quarterly steps are too few .* set history, horizon, val_windows and test_windows",
    ):
        data_settings("Q", 15)
    # all four given: no derivation, no minimum (the data module checks for one window)
    assert data_settings("Q", 15, history=4, horizon=2, val_windows=1, test_windows=1).derived == ()


def test_datamodule_derives_daily_settings_and_keeps_the_known_sets(tmp_path):
    dm = HierarchicalDataModule(synthetic={"frequency": "D", "num_steps": 200})
    assert fields(dm.settings) == (28, 7, 3, 3, 7, "m5") and (dm.season, dm.preset) == (7, "m5")
    assert dm.settings.train_windows == len(dm.forecast_starts("train"))
    assert set(dm.settings_origin.values()) == {"derived from the data", "the frequency (D)"}
    # a folder named like a data set that was run keeps its settings (not the derived ones)
    write_hierarchical(synthetic_hierarchy(num_steps=120), tmp_path / "labour")
    dm = HierarchicalDataModule(path=str(tmp_path / "labour"), horizon=6)
    defaults = DATASET_DEFAULTS["labour"]
    assert (dm.history, dm.horizon, dm.val_windows, dm.test_windows) == (
        defaults["history"],
        6,
        3,
        1,
    )
    assert (
        dm.settings_origin["history"] == "labour defaults"
        and dm.settings_origin["horizon"] == "given"
    )
    with pytest.raises(DataError, match="too few for settings derived from the data"):
        HierarchicalDataModule(synthetic={"frequency": "Q", "num_steps": 15})


def test_name_that_is_not_the_folder_warns_and_defaults_follow_the_folder(tmp_path):
    folder = write_hierarchical(synthetic_hierarchy(num_steps=60), tmp_path / "toy")
    with pytest.warns(UserWarning, match=r"name='labour' is not the folder name 'toy'") as record:
        dm = HierarchicalDataModule(path=str(folder), name="labour", history=12)
    message = str(record[0].message)
    assert "history=12 (given)" in message and "horizon=4 (derived from the data)" in message
    assert "drop name" in message and "set horizon, val_windows, test_windows explicitly" in message
    # labour's defaults would be horizon 8 and one test window; the data read are toy's
    assert (dm.horizon, dm.val_windows, dm.test_windows) == (4, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HierarchicalDataModule(path=str(folder), name="toy", history=12)  # the same name
        HierarchicalDataModule(
            path=str(folder), name="labour", history=12, horizon=4, val_windows=1, test_windows=1
        )
    # a folder named like a known set: its defaults, and the other name warns too
    known = write_hierarchical(synthetic_hierarchy(num_steps=60), tmp_path / "tourismsmall")
    with pytest.warns(UserWarning, match=r"val_windows=1 \(tourismsmall defaults\)"):
        HierarchicalDataModule(path=str(known), name="labour")


# ------------------------------------------------------------------------------------- y_snaive
@pytest.mark.parametrize("season", [None, 3])
def test_y_snaive_is_the_scaled_seasonal_naive_forecast(season):
    dm = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 70, "frequency": "D", "seed": 3},
        history=5,
        horizon=9,
        val_windows=1,
        test_windows=1,
        batch_nodes=4,
        season=season,
    )
    m = season or 7
    assert dm.season == m
    batches = [*dm.val_dataloader(), *dm.test_dataloader(), *dm.train_dataloader()]
    for batch in batches:
        start, nodes = int(batch["t_fut"][0]), batch["nodes"].numpy()
        expected = (
            seasonal_naive(dm.Y, [start], dm.horizon, m)[0][nodes] / dm.scale.numpy()[nodes, None]
        )
        assert (
            batch["y_snaive"].dtype == torch.float32
            and batch["y_snaive"].shape == batch["y_fut"].shape
        )
        np.testing.assert_allclose(
            batch["y_snaive"].double().numpy(), expected, rtol=1e-5, atol=1e-6
        )
    # horizon 9 > season: the last season repeats (h mod m)
    b = batches[0]
    torch.testing.assert_close(b["y_snaive"][:, m:], b["y_snaive"][:, : 9 - m])
    # training origins have a full season before them: from max(H, m), not from H = 5
    assert dm.forecast_starts("train")[0] == max(5, m)
    assert min(int(b["t_fut"][0]) for b in dm.train_dataloader()) >= m


def test_y_snaive_past_the_data_and_a_season_longer_than_the_data_allow():
    dm = HierarchicalDataModule(
        synthetic={"num_steps": 50}, history=8, horizon=4, predict_split="future"
    )
    (batch,) = list(dm.predict_dataloader())
    expected = seasonal_naive(dm.Y, [50], 4, 12)[0] / dm.scale.numpy()[:, None]
    np.testing.assert_allclose(batch["y_snaive"].double().numpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(DataError, match=r"22 steps are too few for season 12 \(> history 4"):
        HierarchicalDataModule(
            synthetic={"num_steps": 22}, history=4, horizon=4, val_windows=1, test_windows=1
        )


# ------------------------------------------------------------------------------------- synthetic
def test_synthetic_weekly_daily_seasons_and_the_named_sets():
    weekly = synthetic_hierarchy(num_steps=60, frequency="W")
    assert infer_frequency("w", weekly.dates) == "W" and weekly.frequency == "W"
    daily = synthetic_hierarchy(num_steps=60, frequency="D")
    np.testing.assert_array_equal(
        daily.values, synthetic_hierarchy(num_steps=60, frequency="D", season=7).values
    )
    assert not np.allclose(
        daily.values, synthetic_hierarchy(num_steps=60, frequency="D", season=12).values
    )
    # the default call is unchanged (monthly, season 12)
    np.testing.assert_array_equal(
        synthetic_hierarchy().values, synthetic_hierarchy(season=12).values
    )
    for name, expected in (
        ("synthetic-daily", ("D", 7, "m5")),
        ("synthetic-weekly", ("W", 52, "tourism")),
    ):
        series = synthetic_set(name)
        assert series.name == name and 50 <= series.hierarchy.num_nodes <= 200
        dm = HierarchicalDataModule(synthetic=name)
        assert (dm.series.frequency, dm.season, dm.preset) == expected
        assert len(dm.forecast_starts("train")) >= 100 and dm.val_windows == dm.test_windows == 3
    assert set(SYNTHETIC_SETS) == {"synthetic-daily", "synthetic-weekly"}
