"""experiments/contextual.py: its --smoke modes run and write their results, and runs.jsonl codes
each run's per-trial roles, phases, BO flags and switch checks (issue 59) losslessly: the
committed runs decode to what the committed report was computed from."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "contextual"
sys.path.insert(0, str(ROOT / "experiments"))


def recorded_runs(folder: Path) -> list[dict]:
    """The runs of ``folder/runs.jsonl``, each coded (as recorded) and decoded."""
    import contextual

    coded = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    for run in coded:
        assert all(isinstance(row, str) for row in run["roles"]), "roles are coded"
        assert isinstance(run["phase"], str) and isinstance(run["is_bo"], str)
        assert not any(isinstance(c, dict) for c in run["switch_checks"])
    return [contextual.decode_run(run) for run in coded]


def test_a_run_is_coded_and_decoded_losslessly_in_its_field_order():
    import contextual

    check = {"delta_r": 0.42, "threshold": 0.24, "rule": "regret-bound", "fired": False}
    check.update(kappa=0.59, kl=0.88)
    run = {
        "part": "paired",
        "is_bo": [False, False, True, True],
        "roles": [["observed"] * 3] * 2 + [["optimized", "ignored", "observed"], ["ignored"] * 3],
        "phase": ["", "", "observational", "optimization"],
        "switch_checks": [None, check],
        "seconds": 1.5,
    }
    coded = contextual.encode_run(run)
    assert coded["roles"] == ["111", "111", "201", "000"] and coded["phase"] == "--12"
    assert coded["is_bo"] == "0011" and coded["switch_checks"] == [None, list(check.values())]
    line = json.dumps(coded)
    assert json.dumps(contextual.decode_run(json.loads(line))) == json.dumps(run)
    assert len(line) < len(json.dumps(run)) / 2
    # a run recorded before the codes, or with a value outside them, is read as it is
    assert contextual.decode_run(run) == run
    odd = {**run, "roles": [["observed", "unknown"]], "switch_checks": [{"delta_r": 1.0}]}
    assert contextual.decode_run(contextual.encode_run(odd)) == odd


def test_the_committed_runs_are_coded_and_rebuild_the_committed_report(tmp_path):
    import contextual

    runs = recorded_runs(RESULTS)
    assert len(runs) == 262
    assert {role for r in runs for row in r["roles"] for role in row} == set(contextual.ROLE_CODES)
    (tmp_path / "runs.jsonl").write_bytes((RESULTS / "runs.jsonl").read_bytes())
    contextual.main(
        ["--seeds", "5", "--ablation-seeds", "3", "--report-only", "--out", str(tmp_path)]
    )
    contextual.main(["--parts", "paired", "--seeds", "10", "--report-only", "--out", str(tmp_path)])
    for name in ("results.md", "results.json", "paired.md", "paired.json"):
        assert (tmp_path / name).read_text() == (RESULTS / name).read_text(), name
    assert (tmp_path / "runs.jsonl").read_bytes() == (RESULTS / "runs.jsonl").read_bytes()


def test_contextual_smoke(tmp_path):
    import contextual

    result = contextual.main(["--smoke", "--workers", "1", "--out", str(tmp_path)])
    assert set(result["table"]["hartmann4"]) == set(contextual.METHODS)
    runs = recorded_runs(tmp_path)
    for run in runs:  # every run spends its cost budget exactly and never more
        assert (
            abs(sum(run["costs"]) - run["budget_cost"]) < 1e-9
            or sum(run["costs"]) + 1 > run["budget_cost"]
        )
        assert sum(run["costs"]) <= run["budget_cost"] + 1e-9
    vbo = next(r for r in runs if r["method"] == "vbo")
    # after 6 observed initial points (cost 6) of a budget of 10, VBO can afford 3 of its 5 contexts
    assert vbo["costs"][6] == 1 + 3 and sum(role == "optimized" for role in vbo["roles"][6]) == 3
    for name in ("results.json", "results.md", "regret_vs_cost.png", "inclusion.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_contextual_paired_smoke(tmp_path):
    import contextual

    argv = [
        "--smoke",
        "--parts",
        "paired",
        "--problems",
        "hartmann4",
        "--workers",
        "1",
        "--out",
        str(tmp_path),
    ]
    result = contextual.main(argv)
    rows = result["paired"]["rows"]
    assert [(r["problem"], r["beta"]) for r in rows] == [("hartmann4", None), ("hartmann4", 0.2)]
    for row in rows:
        assert row["seeds"] == [0] and 0 <= row["wilcoxon_p"] <= 1 and row["switched"] in (0, 1)
    runs = recorded_runs(tmp_path)
    # beta is part of the run key: four distinct runs
    assert {(r["method"], r["beta"]) for r in runs} == {
        (m, b) for m in ("sadcbo", "cbo") for b in (None, 0.2)
    }
    for run in runs:
        checks = run["switch_checks"]
        assert len(checks) == sum(run["is_bo"])
        if run["method"] == "cbo":
            assert not any(checks) and run["switch_iteration"] is None
            continue
        assert checks[0] is None and any(checks)  # no check at the first BO iteration
        for c in filter(None, checks):
            assert {"delta_r", "threshold", "rule", "fired"} <= set(c) and c["threshold"] > 0
        fired = [i for i, c in enumerate(checks, 1) if c and c["fired"]]
        assert run["switch_iteration"] == (fired[0] if fired else None)
    assert not (tmp_path / "results.md").exists()  # the main part's files are left alone
    md = (tmp_path / "paired.md").read_text()
    assert (
        "Seeds 0: 1 per row" in md
        and "| hartmann4 | Srinivas | 1 |" in md
        and "| hartmann4 | 0.2 | 1 |" in md
    )
    for name in ("paired.json", "paired_switch.png"):
        assert (tmp_path / name).stat().st_size > 0
    again = contextual.main(argv)["paired"]["rows"]  # resumed from runs.jsonl
    assert [(r["sadcbo"], r["cbo"], r["switch_iterations"]) for r in again] == [
        (r["sadcbo"], r["cbo"], r["switch_iterations"]) for r in rows
    ]
    # the summary of a switched run and of two seeds, from the recorded runs
    sad = next(r for r in runs if r["method"] == "sadcbo" and r["beta"] is None)
    cbo = next(r for r in runs if r["method"] == "cbo" and r["beta"] is None)
    k = next(i for i, c in enumerate(sad["switch_checks"], 1) if c)
    switched = {
        **sad,
        "seed": 1,
        "switch_iteration": k,
        "switch_checks": [
            {**c, "fired": i == k} if c else c for i, c in enumerate(sad["switch_checks"], 1)
        ],
    }
    first_bo = sad["is_bo"].index(True)
    switched["phase"] = [
        *sad["phase"][: first_bo + k - 1],
        *["optimization"] * (len(sad["phase"]) - first_bo - k + 1),
    ]
    [row] = contextual.summarize_paired([sad, cbo, switched, {**cbo, "seed": 1}], smoke=True)[
        "rows"
    ]
    assert row["seeds"] == [0, 1] and row["switched"] == 1 and row["switch_iterations"] == [None, k]
    assert 0 < row["switch_fraction"][0] < 1
    contextual.plot_paired([sad, switched], tmp_path)
