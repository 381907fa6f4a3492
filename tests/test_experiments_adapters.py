"""The --smoke mode of experiments/adapters.py (issue 44: dsbo through its Tuner, the Optuna
sampler and the Ray Tune searcher) runs every route on one seed and reports each one's quality
and overhead; a second call resumes without running anything again."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


@pytest.mark.slow
def test_adapters_smoke(tmp_path):
    pytest.importorskip("optuna")
    pytest.importorskip("ray.tune")
    import adapters

    summary = adapters.main(["--smoke", "--out", str(tmp_path)])
    [problem] = summary
    rows = summary[problem]
    assert set(rows) == set(adapters.ARMS)
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 3
    for run in runs:
        assert len(run["values"]) == adapters.SMOKE_BUDGET and run["final_best"] == min(
            run["values"]
        )
        bo = (
            adapters.SMOKE_BUDGET - run["n_init"]
        )  # the proposals dsbo made (after the initial design)
        assert len(run["overheads"]) == bo and all(o > -0.5 for o in run["overheads"])
    for arm in ("optuna", "ray"):
        assert rows[arm]["paired_seeds"] == [0] and rows[arm]["median_overhead"] is not None
    for name in ("results.json", "results.md", "best_vs_evaluations.png"):
        assert (tmp_path / name).stat().st_size > 0
    again = adapters.main(["--smoke", "--out", str(tmp_path)])
    assert again == summary and len((tmp_path / "runs.jsonl").read_text().splitlines()) == 3
