"""``report_data.json`` (:mod:`dsbo.analysis.report_cache`): the report's data read back
exactly, or not kept; handed back only for the same trials, config.yaml and format."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from dsbo.analysis import report_cache
from dsbo.analysis.report_data import ReportData
from dsbo.space import Choice, Float, Int, SearchSpace


def _data(frame: pd.DataFrame | None = None) -> ReportData:
    space = SearchSpace(
        {
            "lr": Float(1e-4, 0.1, log=True),
            "n": Int(1, 8),
            "opt": Choice(["adam", "sgd"]),
            "momentum": Float(0.0, 0.9, when={"opt": "sgd"}),
        }
    )
    if frame is None:
        frame = pd.DataFrame(
            {
                "trial": [0, 1, 2],
                "generator": ["sobol-init", "qlognei", "qlognei"],
                "status": ["completed", "failed", "pending"],
                "lr": [1e-3, 0.05, 2e-4],
                "n": [3, 8, 1],
                "opt": ["sgd", "adam", "sgd"],
                "momentum": [0.5, math.nan, 0.1],
                "loss": [0.25, math.nan, math.nan],
                "num_changed": [None, 2, 1],
                "error": [None, "diverged", None],
                "flag": [True, False, True],
            }
        )
    return ReportData(
        title="t",
        space=space,
        frame=frame,
        objective_names=["loss"],
        signs=[-1.0],
        optimal_value=None,
        sparsity=True,
        value_vs_changes=[{"changed": 1, "best_value": 0.25}],
        surrogate="gp",
    )


def test_frame_round_trip_is_exact():
    frame = _data().frame
    back = report_cache.decode_frame(json.loads(json.dumps(report_cache.encode_frame(frame))))
    pd.testing.assert_frame_equal(back, frame, check_exact=True)


def test_saved_data_load_back_for_the_same_trials_and_config(tmp_path):
    (tmp_path / "config.yaml").write_text("budget: 3\n")
    data = _data()
    model = {
        "surrogate": {"name": "gp", "options": {}},
        "seed": 0,
        "outcome_warping": None,
        "bounds": [[0.0], [1.0]],
        "num_objectives": 1,
    }
    assert report_cache.save(tmp_path, "abc", data, seed=3, best_x=[0.1, 0.2], model=model)
    cached, config = report_cache.load(tmp_path, "abc")
    assert config is None and cached is not None
    cached.decode_frame()
    pd.testing.assert_frame_equal(cached.data.frame, data.frame, check_exact=True)
    assert cached.data.space == data.space and cached.best_x == [0.1, 0.2] and cached.model == model
    for name in report_cache.PLAIN_FIELDS:
        assert getattr(cached.data, name) == getattr(data, name), name
    assert cached.data.environment["seed"] == 3
    # a configuration for the command, kept beside the data
    key = report_cache.config_key(tmp_path / "config.yaml", tmp_path)
    report_cache.save(tmp_path, "abc", config=(key, {"budget": 3}))
    cached, config = report_cache.load(tmp_path, "abc", key)
    assert cached is not None and config == {"budget": 3}
    # other trials, another config.yaml or another format: not handed back
    assert report_cache.load(tmp_path, "abd")[0] is None
    (tmp_path / "config.yaml").write_text("budget: 4\n")
    cached, config = report_cache.load(tmp_path, "abc", key)
    assert cached is None and config == {
        "budget": 3
    }  # the old key still names the old file's config
    (tmp_path / "config.yaml").write_text("budget: 3\n")
    assert report_cache.load(tmp_path, "abc")[0] is not None
    raw = json.loads((tmp_path / report_cache.CACHE_NAME).read_text())
    (tmp_path / report_cache.CACHE_NAME).write_text(
        json.dumps({**raw, "format": report_cache.FORMAT + 1})
    )
    assert report_cache.load(tmp_path, "abc") == (None, None)


@pytest.mark.parametrize("column", [[(1, 2), (3, 4)], [{1, 2}, {3}]])
def test_data_that_do_not_read_back_equal_are_not_kept(tmp_path, column):
    (tmp_path / "config.yaml").write_text("budget: 3\n")
    frame = pd.DataFrame({"trial": [0, 1], "odd": column})
    assert not report_cache.save(tmp_path, "abc", _data(frame))
    assert report_cache.load(tmp_path, "abc")[0] is None


def test_no_config_file_no_cache(tmp_path):
    assert not report_cache.save(tmp_path, "abc", _data())
    assert not (tmp_path / report_cache.CACHE_NAME).exists()


def test_drawn_parts_are_kept_for_the_code_that_drew_them(tmp_path, monkeypatch):
    (tmp_path / "config.yaml").write_text("budget: 3\n")
    drawn = {
        "counts": {"completed": 2, "failed": 1},
        "best": "<section>best</section>",
        "panels": {"history": "<section>h</section>", "pareto": None},
    }
    assert report_cache.save(tmp_path, "abc", _data(), drawn=drawn)
    cached, _ = report_cache.load(tmp_path, "abc")
    assert cached.drawn == drawn and cached.data.frame is None  # the frame is decoded on demand
    cached.decode_frame()
    pd.testing.assert_frame_equal(cached.data.frame, _data().frame, check_exact=True)
    monkeypatch.setattr(report_cache, "figures_key", lambda: "other code")
    assert report_cache.load(tmp_path, "abc")[0].drawn is None
    monkeypatch.undo()
    report_cache.save(tmp_path, "abd", _data())  # other trials: the parts go with the data
    assert report_cache.load(tmp_path, "abd")[0].drawn is None
