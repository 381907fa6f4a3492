"""The --smoke mode of experiments/mixed_spaces.py runs one arm of each kind and writes its results (kept
apart from tests/test_experiments.py, which other work edits)."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


@pytest.mark.slow
def test_mixed_spaces_smoke(tmp_path):
    import mixed_spaces

    summary = mixed_spaces.main(["--smoke", "--out", str(tmp_path)])
    expected = set(mixed_spaces.SMOKE_ARMS)
    assert expected <= set(mixed_spaces.ARMS)
    for arm, module in mixed_spaces.EXTERNAL.items():  # skipped with a message when missing
        if importlib.util.find_spec(module) is None:
            expected.discard(arm)
    rows = {(r["problem"], r["arm"]): r for r in summary["table"]}
    assert {arm for _, arm in rows} == expected
    assert {problem for problem, _ in rows} == set(mixed_spaces.SMOKE_PROBLEMS)
    for row in rows.values():
        assert row["seeds"] == 1 and math.isfinite(row["final_mean"])
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == len(rows)
    for run in runs:
        assert run["num_evaluations"] == mixed_spaces.SMOKE_BUDGET and run["smoke"] is True
        assert all(math.isfinite(v) for v in run["trace"])
        assert all(t >= 0 for t in run["proposal_times"])
    for row in summary["table"]:
        if row["arm"] in mixed_spaces.BONSAI_ARMS:
            assert (
                0
                <= row["changed_best_mean"]
                <= len(mixed_spaces.make_problems()[row["problem"]].space)
            )
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["smoke"] is True
    assert (tmp_path / "README.md").read_text().startswith("# Mixed search spaces")
    assert "seeds run per row: 1" in (tmp_path / "README.md").read_text()
    assert (tmp_path / "best_vs_evaluations.png").stat().st_size > 0
    # a second call resumes: nothing new runs
    again = mixed_spaces.main(["--smoke", "--out", str(tmp_path)])
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == len(runs)
    assert again["table"] == summary["table"]


def test_the_default_arm_is_what_dsbo_minimize_runs_on_these_spaces():
    import inspect

    import mixed_spaces

    from dsbo.acquisition import OptimizerSettings
    from dsbo.runtime.tuner import Tuner, auto_surrogate
    from dsbo.space import SearchSpace
    from dsbo.surrogates.gp import fit_gp

    warping = inspect.signature(Tuner).parameters["outcome_warping"].default
    assert OptimizerSettings().min_distance == 0.01  # the arm's +md
    assert (
        OptimizerSettings().stall_patience
        == mixed_spaces.stall_patience(mixed_spaces.DEFAULT_ARM)
        == 3
    )  # +explore
    assert (
        inspect.signature(fit_gp).parameters["warm_start"].default is None
    )  # not +warm: off for the ARD GP
    assert inspect.signature(fit_gp).parameters["categorical"].default == "ard"  # not +mixed
    assert OptimizerSettings().branches == "thompson"  # +branch
    for problem in mixed_spaces.make_problems().values():
        assert (
            mixed_spaces.DEFAULT_ARM
            == f"dsbo-{auto_surrogate(SearchSpace(problem.space))}+{warping}+md+explore+branch"
        )
