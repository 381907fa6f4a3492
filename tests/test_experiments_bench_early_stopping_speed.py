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


def test_the_thompson_candidate_runs_beside_the_others_and_is_judged_by_the_same_goal(tmp_path):
    import bench_early_stopping_speed as bench
    import early_stopping_goals as goals

    assert goals.CONFIRMATION_ARM == "bo-ts+recommended"  # the arm the candidate times
    assert bench.DSBO_ARMS["dsbo-thompson"][1] == {"acquisition": "thompson"}
    args = ["--smoke", "--trials", "4", "--candidate", "thompson", "--out", str(tmp_path)]
    assert bench.main(args) == 0
    record = json.loads((tmp_path / "results.json").read_text())
    assert list(record["seconds"]) == ["dsbo", "dsbo-thompson", "optuna"]
    assert len(record["seconds"]["dsbo-thompson"][0]) == 4
    median = record["summary"]["dsbo-thompson"]["median"]
    expected = "met" if median <= bench.GOAL_SECONDS else "missed"
    assert record["verdicts"]["dsbo-thompson"] == expected
    assert (
        'acquisition="thompson"` (candidate): median at most 0.5 s'
        in (tmp_path / "results.md").read_text()
    )
