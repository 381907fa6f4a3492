"""experiments/bench_early_stopping_speed.py --smoke: both arms run, the goal fixed in code is
judged on the measured medians."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def test_smoke_times_both_arms_and_judges_the_fixed_goal(tmp_path):
    import bench_early_stopping_speed as bench

    assert bench.main(["--smoke", "--trials", "6", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    assert record["goal_seconds"] == bench.GOAL_SECONDS == 0.5
    for arm in ("dsbo", "optuna"):
        assert len(record["seconds"][arm][0]) == 6 and record["summary"][arm]["median"] > 0
    expected = "met" if record["summary"]["dsbo"]["median"] <= bench.GOAL_SECONDS else "missed"
    assert record["verdict"] == expected
    assert f"**{expected}**" in (tmp_path / "results.md").read_text()
