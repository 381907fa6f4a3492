"""experiments/early_stopping_peers.py and early_stopping_goals.py (issue 57): the peers' trials
stop where their scheduler or fidelity says, their configurations come back in the space's
types, a peer whose library is nowhere is left out with the reason, and the goal is met only
with the arm below every peer, paired with Wilcoxon p <= 0.1, on at least 4 of 5 problems.
Where the peers' environment exists (``.venv-peers`` or ``DSBO_PEERS_PYTHON``), each peer runs
a short job in it end to end."""

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def run(problem, arm, seed, finals):
    return {
        "problem": problem,
        "arm": arm,
        "seed": seed,
        "final_best": finals[seed],
        "full_trainings": 20,
        "smoke": False,
    }


def runs_where(ours_by_problem, peers_value=0.5):
    """Runs of the goal's arm (per problem, one final per seed) and of every peer at
    ``peers_value`` + 0.01 * seed."""
    import early_stopping_goals as goals

    out = []
    for problem, ours in ours_by_problem.items():
        theirs = [peers_value + 0.01 * s for s in goals.SEEDS]
        out += [run(problem, goals.ARM, s, ours) for s in goals.SEEDS]
        out += [run(problem, peer, s, theirs) for peer in goals.PEERS for s in goals.SEEDS]
    return out


def test_the_goal_needs_every_peer_beaten_beyond_noise_on_four_problems():
    import early_stopping_goals as goals

    assert goals.ARM == "bo+recommended" and len(goals.PROBLEMS) == 5
    clearly = [0.5 + 0.01 * s - 0.02 - 0.001 * s for s in goals.SEEDS]  # lower on every seed
    slightly = [0.5 + 0.01 * s + (-0.002 if s < 6 else 0.002) for s in goals.SEEDS]  # 6 / 4
    four = dict.fromkeys(goals.PROBLEMS[:4], clearly) | {goals.PROBLEMS[4]: slightly}
    result = goals.issue57_goals(runs_where(four))
    assert result["met"] and result["problems_met"] == list(goals.PROBLEMS[:4])
    assert {r["verdict"] for r in result["rows"] if r["problem"] == goals.PROBLEMS[4]} == {
        "within noise"
    }
    three = dict.fromkeys(goals.PROBLEMS[:3], clearly) | dict.fromkeys(goals.PROBLEMS[3:], slightly)
    assert not goals.issue57_goals(runs_where(three))["met"]
    markdown = goals.issue57_markdown(goals.issue57_goals(runs_where(three)))
    assert "**missed**" in markdown and "Wilcoxon p" in markdown


def test_the_confirmation_run_is_judged_on_its_own_fresh_seeds_only():
    import early_stopping_goals as goals

    assert goals.CONFIRMATION_ARM == "bo-ts+recommended"
    assert not set(goals.CONFIRMATION_SEEDS) & set(goals.SEEDS)
    clearly = [0.4 - 0.001 * s for s in goals.SEEDS]
    exploratory = [
        dict(r, arm=goals.CONFIRMATION_ARM) if r["arm"] == goals.ARM else r
        for r in runs_where({"mlp-cancer": clearly})
    ]
    # runs on seeds 0-9 say nothing about the confirmation
    result = goals.issue57_goals(exploratory, goals.CONFIRMATION_ARM, goals.CONFIRMATION_SEEDS)
    assert result["problems_judged"] == [] and goals.issue57_markdown(result) == ""
    fresh = [dict(r, seed=r["seed"] + 10) for r in exploratory]
    result = goals.issue57_goals(fresh, goals.CONFIRMATION_ARM, goals.CONFIRMATION_SEEDS)
    assert result["problems_met"] == ["mlp-cancer"] and not result["met"]
    assert "confirmation run" in goals.issue57_markdown(result) and "seeds 10-19" in (
        goals.issue57_markdown(result)
    )


def test_a_peer_not_run_or_better_on_one_seed_set_keeps_the_problem_unmet():
    import early_stopping_goals as goals

    clearly = [0.4 - 0.001 * s for s in goals.SEEDS]
    runs = [r for r in runs_where({"mlp-cancer": clearly}) if r["arm"] != "dehb"]
    result = goals.issue57_goals(runs)
    assert result["problems_met"] == [] and not result["met"]
    assert [r["verdict"] for r in result["rows"] if r["peer"] == "dehb"] == ["not run"]
    # a peer run without a fully trained trial counts as the problem's worst final best
    runs = runs_where({"mlp-cancer": clearly})
    for r in runs:
        if r["arm"] == "dehb" and r["seed"] == 2:
            r["final_best"] = None
    [row] = [r for r in goals.issue57_goals(runs)["rows"] if r["peer"] == "dehb"]
    assert row["verdict"] == "met" and "seeds [2]" in row["detail"]
    assert goals.issue57_markdown({"problems_judged": []}) == ""


def test_fixed_budget_trials_and_configurations_come_back_in_the_space_types():
    import early_stopping_peers as peers

    import dsbo

    trial = peers.FixedBudgetTrial(3)
    for step in range(1, 4):
        assert not trial.should_stop()
        trial.report(step, 1.0 / step)
    assert trial.should_stop()

    class Problem:
        space = {
            "flag": dsbo.Choice([True, False]),
            "width": dsbo.Int(8, 64, log=True),
            "lr": dsbo.Float(1e-4, 1.0, log=True),
        }

    values = peers.dsbo_values(Problem, {"flag": "False", "width": "16", "lr": 0.01, "x": 1})
    assert values == {"flag": False, "width": 16, "lr": 0.01}
    assert type(values["width"]) is int and type(values["flag"]) is bool


def test_a_peer_whose_library_is_nowhere_is_left_out_with_the_reason(monkeypatch, tmp_path):
    import early_stopping_arms as arms
    import early_stopping_peers as peers

    assert set(peers.PEER_ARMS) <= set(arms.ARMS)
    monkeypatch.setenv("DSBO_PEERS_PYTHON", str(tmp_path / "no-python"))
    for arm in peers.PEER_ARMS:
        reason = arms.unavailable(arm)
        if peers.runs_here(arm):
            assert reason is None
        else:
            assert "DSBO_PEERS_PYTHON" in reason and str(tmp_path / "no-python") in reason


@pytest.mark.slow
@pytest.mark.parametrize("arm", ["dehb", "synetune-asha-cqr", "synetune-bohb"])
def test_each_peer_runs_a_short_job_within_its_budget(arm, tmp_path):
    """One seed of ``mlp-cancer`` on small data, 3 full trainings of budget, in the peers'
    environment where this interpreter lacks the library."""
    import early_stopping_arms as arms
    import early_stopping_peers as peers

    reason = arms.unavailable(arm)
    if reason is not None:
        pytest.skip(reason)
    budget = 3 * arms.MAX_EPOCHS
    job = {
        "problem": "mlp-cancer",
        "arm": arm,
        "seed": 0,
        "budget": budget,
        "full_trainings": 3,
        "smoke": True,
        "cache": str(tmp_path / "curves"),
    }
    result = arms.run_job(job)
    assert result["arm"] == arm and result["epochs_spent"] <= budget
    assert result["epochs_spent"] == sum(epochs for epochs, _ in result["trials"])
    assert all(1 <= e <= arms.MAX_EPOCHS and math.isfinite(v) for e, v in result["trials"])
    assert len(result["proposal_times"]) == result["num_trials"]
    assert sum(result["statuses"].values()) == result["num_trials"]
    if arm == "dehb":  # DEHB's fidelities are Hyperband's rungs: 1, 3, 9 and 27 epochs
        assert {e for e, _ in result["trials"][:-1]} <= {1, 3, 9, 27}
    assert peers.PEER_ARMS[arm] in ("dehb", "syne_tune")


def test_the_arm_against_its_earlier_runs_reports_a_regression_paired_by_seed():
    import early_stopping_goals as goals

    earlier = [0.4 + 0.01 * s for s in goals.SEEDS]
    worse = [v + 0.02 + 0.001 * s for s, v in enumerate(earlier)]  # worse on every seed
    then = [run("zoo-diabetes", goals.ARM, s, earlier) for s in goals.SEEDS]
    now = [run("zoo-diabetes", goals.ARM, s, worse) for s in goals.SEEDS]
    table = goals.against_earlier_code(now, then)
    assert "| zoo-diabetes | **regression** |" in table and "10 pairs" in table
    assert "| zoo-diabetes | better |" in goals.against_earlier_code(then, now)
    assert goals.against_earlier_code(now, []) == ""
