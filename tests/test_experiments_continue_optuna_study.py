"""The --smoke mode of experiments/continue_optuna_study.py (issue 44's goal: an Optuna study
continued in dsbo vs with TPE) runs one seed and writes consistent results; a second call
resumes without running the seed again."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


@pytest.mark.slow
def test_continue_optuna_study_smoke(tmp_path):
    pytest.importorskip("optuna")
    import continue_optuna_study as cos

    summary = cos.main(["--smoke", "--out", str(tmp_path)])
    assert summary["smoke"] is True and summary["seeds"] == [0]
    assert (summary["start"], summary["more"]) == (cos.SMOKE_START, cos.SMOKE_MORE)
    [run] = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert run["imported"] == cos.SMOKE_START and run["refused"] == []
    assert (
        run["imported_charged"] == 0 and run["dsbo_used"] == cos.SMOKE_MORE
    )  # imports are never charged
    assert len(run["dsbo_values"]) == len(run["tpe_values"]) == cos.SMOKE_MORE
    assert run["dsbo_generators"][0] not in ("sobol", "sobol-init")  # the model proposes at once
    for arm in ("dsbo", "tpe"):
        trace = run[f"{arm}_trace"]
        assert trace == sorted(trace, reverse=True) and trace[0] <= run["start_best"]
        assert trace[-1] == min([run["start_best"], *run[f"{arm}_values"]])
    assert run["dsbo_reported_best"] == pytest.approx(run["dsbo_trace"][-1])
    assert math.isfinite(summary["dsbo_mean"]) and summary["wilcoxon"]["pairs"] == 1
    assert summary["verdict"].startswith("inconclusive")
    md = (tmp_path / "results.md").read_text()
    assert (
        md.startswith("# An Optuna study continued in dsbo") and "(smoke)" in md and "| 0 |" in md
    )
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["smoke"] is True
    assert (tmp_path / "best_so_far.png").stat().st_size > 0
    again = cos.main(["--smoke", "--out", str(tmp_path)])  # resumes: nothing runs again
    assert (
        len((tmp_path / "runs.jsonl").read_text().splitlines()) == 1
        and again["dsbo_mean"] == summary["dsbo_mean"]
    )


def test_best_so_far_starts_from_the_study_and_skips_failures():
    import continue_optuna_study as cos

    assert cos.best_so_far(1.0, [2.0, 0.5, math.nan, 0.7, 0.1]) == [1.0, 0.5, 0.5, 0.5, 0.1]
