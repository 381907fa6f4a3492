"""experiments/results_io.py (issue 59): an experiment's raw runs are kept once, in runs.jsonl;
results.json is the summary, and every committed one beside a runs.jsonl holds no runs."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
sys.path.insert(0, str(ROOT / "experiments"))


def test_read_runs_skips_blank_and_cut_lines_and_takes_a_folder(tmp_path):
    from results_io import read_runs

    assert read_runs(tmp_path) == [] and read_runs(tmp_path / "runs.jsonl") == []
    (tmp_path / "runs.jsonl").write_text('{"seed": 0}\n\n{"seed": 1}\n{"seed": 2, "tr')
    assert read_runs(tmp_path) == [{"seed": 0}, {"seed": 1}]
    assert read_runs(tmp_path / "runs.jsonl") == read_runs(tmp_path)


def test_write_results_names_the_runs_file_and_refuses_to_repeat_the_runs(tmp_path):
    from results_io import read_runs, write_results

    runs = [{"seed": 0, "values": [1.0, 0.5]}, {"seed": 1, "values": [2.0]}]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    written = write_results(tmp_path, {"summary": {"mean": 0.75}}, runs)
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert (
        on_disk == written == {"summary": {"mean": 0.75}, "runs_file": "runs.jsonl", "num_runs": 2}
    )
    assert read_runs(tmp_path / on_disk["runs_file"]) == runs
    with pytest.raises(ValueError, match="runs.jsonl"):
        write_results(tmp_path, {"summary": {}, "runs": runs}, runs)


def committed_results_beside_runs():
    return sorted(p for p in RESULTS.rglob("results.json") if (p.parent / "runs.jsonl").exists())


@pytest.mark.parametrize(
    "path", committed_results_beside_runs(), ids=lambda p: str(p.parent.relative_to(RESULTS))
)
def test_no_committed_results_json_repeats_the_runs_beside_it(path):
    from results_io import read_runs

    data = json.loads(path.read_text())
    assert "runs" not in data, f"{path} repeats the runs of runs.jsonl"
    if "num_runs" in data:  # written by results_io: the summary covers that many recorded runs
        assert data["runs_file"] == "runs.jsonl"
        assert 0 < data["num_runs"] <= len(read_runs(path.parent))
