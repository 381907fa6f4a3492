"""The --smoke mode of experiments/faults_early_stopping.py kills an early-stopping campaign with
SIGKILL 3 times, resumes it to its end, and finds no acknowledged report lost, no step stored
twice and no step charged twice."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["asha", "freeze-thaw"])
def test_faults_early_stopping_smoke(tmp_path, rule):
    import faults_early_stopping

    result = faults_early_stopping.main(["--smoke", "--out", str(tmp_path), "--rule", rule])
    run = result["runs"][f"sqlite {rule}"]
    assert run["kills"] == 3 and not run["crashes"] and not run["finished_before_kills"], run
    final = run["final"]
    assert final["reports_acknowledged"] > 0 and final["lost"] == 0 and final["wrong_values"] == 0
    assert (
        final["duplicate_steps"]
        == final["trials_with_non_increasing_steps"]
        == final["trials_with_gaps"]
        == 0
    )
    assert (
        final["cost_mismatches"] == 0 and final["double_counted"] == 0 and final["overspent"] == 0
    )
    assert final["by_status"].get("pending", 0) == 0 and final["cost_used"] <= final["budget_steps"]
    assert len(run["after_each_kill"]) == 3 and all(c["ok"] for c in run["after_each_kill"])
    assert run["ok"] and final["ok"]
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (tmp_path / "results.md").read_text().startswith("# faults_early_stopping")
