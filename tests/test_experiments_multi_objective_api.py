"""The --smoke mode of experiments/multi_objective_api.py runs dsbo and NSGA-II and writes its
results; the hypervolume it compares arms with, on a hand-checked example."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def test_hypervolume_of_two_points_by_hand():
    import multi_objective_api as mo

    # minimization, reference point (1, 1): [0, 1] x [0.5, 1] and [0.5, 1] x [0, 1] overlap in
    # [0.5, 1]^2, so 0.5 + 0.5 - 0.25 = 0.75
    assert mo.hypervolume([[0.0, 0.5], [0.5, 0.0]], [1.0, 1.0]) == pytest.approx(0.75)
    # a dominated point, one beyond the reference point and one on its boundary change nothing
    points = [[0.0, 0.5], [0.5, 0.0], [0.6, 0.6], [1.2, -1.0], [1.0, 0.0]]
    assert mo.hypervolume(points, [1.0, 1.0]) == pytest.approx(0.75)
    assert mo.hypervolume([[2.0, 2.0]], [1.0, 1.0]) == 0.0
    assert mo.hypervolume([], [1.0, 1.0]) == 0.0
    # the reference point is in the user's (minimization) sense, not BoTorch's negated one
    assert mo.hypervolume([[1.0, 2.0]], [18.0, 6.0]) == pytest.approx(17.0 * 4.0)
    assert mo.hv_trace([[0.5, 0.5], [0.0, 0.5], [0.5, 0.0]], [1.0, 1.0]) == pytest.approx(
        [0.25, 0.5, 0.75]
    )


def test_problems_reference_points_and_max_hv():
    import multi_objective_api as mo

    problems = mo.make_problems()
    assert problems["branin-currin"].ref_point == (18.0, 6.0)
    assert problems["branin-currin"].max_hv == pytest.approx(59.36011874867746)
    assert problems["dtlz2"].ref_point == pytest.approx((1.1, 1.1))
    assert problems["dtlz2"].max_hv == pytest.approx(1.1**2 - math.pi / 4)
    # points on DTLZ2's front (x1..x5 = 0.5) fill close to max_hv
    f = mo.Recorder(problems["dtlz2"])
    for i in range(201):
        f({"x0": i / 200, **{f"x{j}": 0.5 for j in range(1, 6)}})
    assert mo.hypervolume(f.values, problems["dtlz2"].ref_point) == pytest.approx(
        problems["dtlz2"].max_hv, rel=1e-2
    )
    assert all(
        isinstance(v, float) for v in f({"x0": 0.3, **{f"x{j}": 0.1 for j in range(1, 6)}}).values()
    )


@pytest.mark.slow
def test_multi_objective_api_smoke(tmp_path):
    import multi_objective_api as mo

    summary = mo.main(["--smoke", "--out", str(tmp_path)])
    rows = {(r["problem"], r["arm"]): r for r in summary["table"]}
    assert set(rows) == {(p, a) for p in mo.make_problems() for a in mo.SMOKE_ARMS}
    for row in rows.values():
        assert row["seeds"] == 1
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == len(rows)
    problems = mo.make_problems()
    for run in runs:
        max_hv = problems[run["problem"]].max_hv
        assert (
            run["num_evaluations"] == mo.SMOKE_BUDGET == len(run["hv_trace"])
            and run["smoke"] is True
        )
        assert all(math.isfinite(v) and 0 <= v <= max_hv for v in run["hv_trace"])
        assert all(b >= a for a, b in zip(run["hv_trace"], run["hv_trace"][1:], strict=False))
        assert math.isfinite(run["final_hv"]) and 0 <= run["final_hv"] <= max_hv
        assert run["final_hv"] == pytest.approx(
            mo.hypervolume(run["values"], problems[run["problem"]].ref_point)
        )
        assert all(t >= 0 for t in run["proposal_times"])
    assert any(t > 0 for r in runs if r["arm"] == "dsbo" for t in r["proposal_times"])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["smoke"] is True and results["num_runs"] == len(runs)
    assert "runs" not in results and results["runs_file"] == "runs.jsonl"  # the runs are kept once
    readme = (tmp_path / "README.md").read_text()
    assert (
        readme.startswith("# Multi-objective API")
        and "(seeds 0, 1 per row; budget 8 evaluations per run) (smoke)" in readme
    )
    assert (tmp_path / "best_hv_vs_evaluations.png").stat().st_size > 0
    # a second call resumes: nothing new runs
    again = mo.main(["--smoke", "--out", str(tmp_path)])
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == len(runs)
    assert again["table"] == summary["table"]
