"""experiments/early_stopping.py (issue 42's benchmark): the --smoke run writes consistent results,
a second call resumes, and every problem's training is deterministic, so that a run stopped at
epoch k is the first k epochs of the full run (what the curve cache relies on)."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


class StopAt:
    """A trial that records what it is told and says stop after ``epochs`` reports."""

    def __init__(self, epochs):
        self.epochs, self.values = epochs, []

    def report(self, step, value):
        assert step == len(self.values) + 1
        self.values.append(value)

    def should_stop(self):
        return len(self.values) >= self.epochs


@pytest.mark.slow
def test_early_stopping_smoke(tmp_path):
    import early_stopping as es

    summary = es.main(["--smoke", "--out", str(tmp_path)])
    budget = es.SMOKE_FULL_TRAININGS * es.MAX_EPOCHS
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    expected = {
        (p, a) for p in es.SMOKE_PROBLEMS for a in es.SMOKE_ARMS if a not in summary["left_out"]
    }
    assert {(r["problem"], r["arm"]) for r in runs} == expected
    for run in runs:
        assert run["seed"] == 0 and run["smoke"] is True and run["budget"] == budget
        assert run["epochs_spent"] <= budget  # every arm stays within the epoch budget
        assert run["epochs_spent"] == sum(epochs for epochs, _ in run["trials"])
        assert all(1 <= epochs <= es.MAX_EPOCHS and math.isfinite(v) for epochs, v in run["trials"])
        assert run["num_full"] == sum(epochs == es.MAX_EPOCHS for epochs, _ in run["trials"])
        assert run["final_best"] is not None and math.isfinite(run["final_best"])
        assert run["final_best"] == min(v for epochs, v in run["trials"] if epochs == es.MAX_EPOCHS)
        epochs = [e for e, _ in run["trace"]]
        bests = [b for _, b in run["trace"]]
        assert (
            epochs == sorted(epochs)
            and bests == sorted(bests, reverse=True)
            and epochs[-1] <= budget
        )
        assert all(t >= 0 for t in run["proposal_times"])
        if run["arm"] in es.DSBO_ARMS:  # dsbo's ledger charged what the trials trained
            assert run["ledger_epochs"] == run["epochs_spent"]
            assert run["reported_best"] == pytest.approx(run["final_best"])
    if "bo-full" in {r["arm"] for r in runs}:
        assert all(r["num_full"] == es.SMOKE_FULL_TRAININGS for r in runs if r["arm"] == "bo-full")
    rows = {(r["problem"], r["arm"]): r for r in summary["table"]}
    assert set(rows) == expected
    for row in rows.values():
        assert row["seeds"] == 1 and math.isfinite(row["final_mean"])
        assert row["reach_median"] >= 1 and row["reached"] <= 1
    assert {g["problem"] for g in summary["goals"]} <= set(es.SMOKE_PROBLEMS)
    for goal in summary["goals"]:  # judged for the recommended arm alone, on one seed
        assert goal["arm"] == es.RECOMMENDED_ARM
        if goal["goal"].startswith("reaches"):
            assert "inconclusive: 1 seed" in goal["verdict"]
        else:  # one pair: no Wilcoxon test, so no claim either way
            assert goal["pairs"] == 1 and goal["p"] is None and goal["verdict"] == "within noise"
    md = (tmp_path / "results.md").read_text()
    assert md.startswith("# Early stopping") and "seeds run: 0;" in md and "(smoke)" in md
    assert "**goal 1 (epochs)**" in md and "**goal 2 (vs TPE + Hyperband)**" in md
    results = json.loads((tmp_path / "results.json").read_text())
    assert (
        results["summary"]["smoke"] is True
        and "runs" not in results
        and results["num_runs"] == len(runs)
    )
    assert (tmp_path / "best_vs_epochs.png").stat().st_size > 0
    assert any((tmp_path / "curves").iterdir())
    # a second call resumes: nothing runs again, the report is the same
    again = es.main(["--smoke", "--out", str(tmp_path)])
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == len(runs)
    assert again["table"] == summary["table"]


def test_seeds_parse_as_ranges_and_lists():
    import early_stopping as es

    assert es.parse_seeds(["0-9"]) == list(range(10))
    assert es.parse_seeds(["0", "3", "5-6"]) == [0, 3, 5, 6]
    assert es.parse_seeds(["1,2", "2"]) == [1, 2]
    assert (
        es.seed_ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
        and es.seed_ranges(list(range(10))) == "0-9"
    )


@pytest.mark.parametrize(
    "name", ["zoo-diabetes", "mlp-cancer", "cnn-digits", "mlp-overfit", "lightning-digits"]
)
def test_each_problem_trains_deterministically_and_a_stopped_run_is_a_prefix(name):
    import early_stopping_problems as ep
    import torch

    from dsbo.space import SearchSpace

    torch.set_num_threads(1)
    problem = ep.make_problems()[name]
    space = SearchSpace(problem.space)
    params = ep.active_values(
        problem.space, space.decode([(low + high) / 2 for low, high in space.bounds])
    )
    three, again, two = StopAt(3), StopAt(3), StopAt(2)
    for trial in (three, again, two):
        problem.train(params, 0, trial, True)
    assert (
        len(three.values) == 3 and three.values == again.values and two.values == three.values[:2]
    )
    assert all(math.isfinite(v) for v in three.values)


def test_mlp_overfit_curves_cross_the_fast_starter_ends_worse():
    """The claim of ``mlp-overfit``: unregularized, the network is ahead after 3 epochs and
    behind at epoch 27 (it overfits); with weight decay and dropout it starts slower and ends
    lower."""
    import early_stopping_problems as ep
    import torch

    torch.set_num_threads(1)
    problem = ep.make_problems()["mlp-overfit"]
    base = {"optimizer": "adam", "width": 256, "layers": 2, "batch_size": 16, "lr": 1e-3}
    fast, slow = StopAt(ep.MAX_EPOCHS), StopAt(ep.MAX_EPOCHS)
    problem.train({**base, "weight_decay": 1e-6, "dropout": 0.0}, 0, fast, False)
    problem.train({**base, "weight_decay": 0.1, "dropout": 0.6}, 0, slow, False)
    assert fast.values[2] < slow.values[2] and fast.values[-1] > slow.values[-1]


def test_a_cached_curve_is_replayed_and_trained_on_only_past_its_end(tmp_path):
    """The recorder replays a cached prefix (the trial asked after every epoch) and trains from
    scratch past it, reporting each epoch once; the cache then holds the longer curve."""
    import early_stopping_problems as ep

    problem = ep.make_problems()["mlp-cancer"]
    params = {
        "lr": 0.01,
        "optimizer": "adam",
        "weight_decay": 1e-4,
        "width": 16,
        "layers": 1,
        "activation": "relu",
        "dropout": 0.0,
        "batch_size": 64,
    }
    cache = ep.CurveCache(tmp_path)
    first = ep.Recorder(problem, 0, cache, small=True)
    first.evaluate(params, StopAt(2))
    assert first.trained_epochs == 2 and first.epochs == 2
    second = ep.Recorder(problem, 0, ep.CurveCache(tmp_path), small=True)  # read back from the file
    trial = StopAt(4)
    second.evaluate(params, trial)
    assert len(trial.values) == 4 and second.epochs == 4 and second.trained_epochs == 4
    assert trial.values[:2] == cache.get("mlp-cancer", 0, next(iter(cache._table("mlp-cancer", 0))))
    third = ep.Recorder(problem, 0, ep.CurveCache(tmp_path), small=True)
    replay = StopAt(3)
    third.evaluate(params, replay)
    assert replay.values == trial.values[:3] and third.trained_epochs == 0
    assert third.trials[-1]["epochs"] == 3 and not third.trials[-1]["full"]


def test_the_goals_are_judged_for_the_recommended_arm_alone_paired_with_wilcoxon():
    """Another arm that did better is not judged in its place, and goal 2 is met only with a
    lower mean and Wilcoxon p <= 0.1 (the sign of the mean alone is within noise)."""
    import early_stopping_arms as arms
    import early_stopping_report as report
    from verdicts import paired_verdict

    recommended, tpe = arms.RECOMMENDED_ARM, arms.TPE_HB
    assert (
        recommended in arms.BO_ES_ARMS and arms.DSBO_ARMS[recommended] is True
    )  # early_stopping=True
    assert arms.PREVIOUS_DEFAULT_ARM == "bo+asha"

    def by_seed(finals):
        return {s: {"final_best": v} for s, v in enumerate(finals)}

    theirs = [0.10 + 0.01 * s for s in range(10)]
    slightly = [
        v - 0.002 if s < 6 else v + 0.002 for s, v in enumerate(theirs)
    ]  # 6 / 4, lower mean
    clearly = [v - 0.01 - 0.001 * s for s, v in enumerate(theirs)]  # lower on every seed
    row = {
        "reach_ratio": dict.fromkeys(range(10), 0.9),
        "ratio_median": 0.9,
        "reach_median": 400.0,
        "reached": 10,
    }
    better = {**row, "ratio_median": 0.2}
    for ours, expected in ((slightly, "within noise"), (clearly, "met"), (theirs[::-1], None)):
        by = {
            ("p", recommended): by_seed(ours),
            ("p", tpe): by_seed(theirs),
            ("p", "bo+hyperband"): by_seed([0.0] * 10),
        }
        goals = report.assess("p", {recommended: row, "bo+hyperband": better}, by, 540)
        assert [g["arm"] for g in goals] == [recommended, recommended]
        epochs, vs_tpe = goals
        assert epochs["verdict"] == "missed" and not epochs["met"]  # 0.9 > 1/3
        v = paired_verdict(ours, theirs, lower_is_better=True)
        assert (vs_tpe["verdict"], vs_tpe["p"], vs_tpe["mean_diff"]) == (
            v.verdict,
            v.p,
            v.mean_diff,
        )
        assert vs_tpe["met"] == (v.verdict == "met") and v.verdict == (expected or v.verdict)
    assert (
        paired_verdict(slightly, theirs, lower_is_better=True).mean_diff < 0
    )  # the old rule's "met"
    # a run of ours without a fully trained trial is a loss: the goal is missed
    by = {
        ("p", recommended): {**by_seed(clearly), 3: {"final_best": None}},
        ("p", tpe): by_seed(theirs),
    }
    [vs_tpe] = [g for g in report.assess("p", {}, by, 540) if g["goal"] == report.GOAL_VS_TPE]
    assert vs_tpe["verdict"] == "missed" and "seeds [3]" in vs_tpe["detail"]
