"""Varying evaluation costs in a campaign: lambda(x) charged per trial, failed costs recorded,
cost budgets, and the ledger across a resume."""

from __future__ import annotations

import math
import time

import pytest
import torch

from dsbo.campaign import Campaign
from dsbo.problems import get_problem


def test_each_trial_is_charged_its_cost_and_the_ledger_survives_a_resume(tmp_path, fast_optimizer):
    problem = get_problem("cost-branin")
    store = tmp_path / "trials.sqlite"
    first = Campaign(
        problem,
        surrogate="gp",
        acquisition={"name": "cost-ids", "rho": 4.0},
        budget=7,
        n_init=4,
        store=store,
        optimizer=fast_optimizer,
    )
    for _ in range(5):
        first.step()
    trials = first.store.trials()
    X = torch.tensor([t.x for t in trials])
    assert torch.allclose(torch.tensor([t.cost for t in trials]), torch.exp(X[:, 2]))
    ledger = first.cost_used
    assert ledger == pytest.approx(float(torch.exp(X[:, 2]).sum()))
    first.store.close()
    again = Campaign(
        problem,
        surrogate="gp",
        acquisition={"name": "cost-ids", "rho": 4.0},
        budget=7,
        n_init=4,
        store=store,
        optimizer=fast_optimizer,
    )
    assert again.cost_used == pytest.approx(ledger)
    result = again.run()
    assert result.num_completed == 7
    assert result.cost_used == pytest.approx(sum(t.cost for t in again.store.trials()))
    assert result.cost_used > ledger


def test_a_failed_cost_is_a_failed_trial_that_is_never_evaluated(fast_optimizer):
    problem = get_problem("cost-branin")
    problem.cost_function = lambda X: torch.where(X[..., 0] > 2.5, torch.nan, torch.exp(X[..., 2]))
    evaluated = []

    def evaluator(x):
        evaluated.append(x)
        return problem(x)

    campaign = Campaign(
        problem, surrogate="gp", budget=6, n_init=6, evaluator=evaluator, optimizer=fast_optimizer
    )
    result = campaign.run()
    failed = campaign.store.trials("failed")
    assert failed and all(t.x[0] > 2.5 and "CostError" in t.error and t.cost == 0.0 for t in failed)
    assert (
        len(evaluated) == result.num_completed == 6 - len(failed)
    )  # counted in the budget, not evaluated


def test_a_cost_budget_ends_only_when_nothing_affordable_remains(fast_optimizer):
    """Issue 32, item 3: a cost-blind policy (UCB) is told what is left and re-optimizes under
    it, so the run spends its budget down to less than the cheapest evaluation."""
    problem = get_problem("cost-branin")
    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition="ucb",
        budget_cost=120.0,
        n_init=3,
        optimizer=fast_optimizer,
    )
    result = campaign.run()
    assert 120.0 - 1.01 < result.cost_used <= 120.0 + 1e-9  # less than the cheapest trial is left
    cheapest = campaign.ledger.cheapest(campaign.store)
    assert 1.0 <= cheapest < 1.01  # exp(l) at the smallest l of the dense Sobol set
    assert 120.0 - cheapest < result.cost_used
    assert campaign.remaining == 0
    assert campaign.ask() == []
    spent = [t.cost for t in campaign.store.trials()]
    assert math.isclose(sum(spent), result.cost_used)
    assert any("affordable" in t.metadata for t in campaign.store.trials())


def test_unaffordable_initial_points_are_skipped_for_the_next_affordable_ones():
    """Issue 32, item 3: with 80 units, seed 1's third Sobol point costs 95; before the fix the
    run ended there after 2 trials with 51.2 units left."""
    problem = get_problem("cost-branin")
    campaign = Campaign(problem, acquisition="sobol", budget_cost=80.0, n_init=4, seed=1)
    result = campaign.run()
    trials = campaign.store.trials()
    assert len(trials) > 2 and 80.0 - 1.01 < result.cost_used <= 80.0 + 1e-9
    design = campaign.design_sequence(8)
    assert float(problem.evaluation_cost(design[2:3])[0]) > 80.0 - trials[0].cost - trials[1].cost
    assert [t.metadata["design_index"] for t in trials[:4]] == [0, 1, 3, 4]  # 2 was skipped
    assert all(t.generator == "sobol-init" for t in trials[:4])
    assert torch.allclose(torch.tensor(trials[2].x), design[3])
    assert 80.0 - campaign.ledger.cheapest(campaign.store) < result.cost_used <= 80.0 + 1e-9
    assert campaign.remaining == 0 and not any(t.status == "failed" for t in trials)
    replaced = [
        t for t in trials if "unaffordable" in t.metadata
    ]  # sobol proposals it could not pay
    assert all(t.metadata["unaffordable"]["cost"] > t.cost for t in replaced)
    indices = [t.metadata["design_index"] for t in trials if "design_index" in t.metadata]
    assert len(indices) == len(set(indices))  # no point of the sequence is taken twice


def test_a_learned_cost_campaign_is_charged_its_measured_seconds(fast_optimizer):
    """Issue 32, item 1: CostIDS with cost: learned on a problem without a cost function
    charges each trial the seconds its evaluation took (before the fix: design_cost = 1 each,
    so a 0.3 s budget was 0 trials and a 6 s one 6 trials of 0.7 s in all)."""
    from dsbo.analysis.summary import summary

    problem = get_problem("branin")
    low, high = problem.bounds

    def timed(x):
        time.sleep(0.01 + 0.05 * float((x[0] - low[0]) / (high[0] - low[0])))
        return problem(x)

    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition={"name": "cost-ids", "cost": "learned", "rho": 4.0},
        budget_cost=0.3,
        n_init=3,
        evaluator=timed,
        optimizer=fast_optimizer,
    )
    result = campaign.run()
    trials = campaign.store.trials()
    assert len(trials) >= 5 and all(t.status == "completed" for t in trials)
    assert all(t.cost == t.eval_time for t in trials)  # settled to what was measured
    assert campaign.ledger.source == "measured seconds" and campaign.budget == 1000
    assert result.cost_used == pytest.approx(sum(t.eval_time for t in trials))
    # the run ends once what is left is less than the cheapest measured evaluation; the last
    # evaluation can pass the budget by what it took beyond its estimate
    assert (
        0.3 - min(t.eval_time for t in trials)
        < result.cost_used
        < 0.3 + max(t.eval_time for t in trials)
    )
    bo = [t for t in trials if t.generator == "cost-ids"]
    assert bo and all(
        t.metadata["cost_reserved"] == pytest.approx(t.metadata["predicted_cost"]) for t in bo
    )
    info = summary(result, campaign.problem, result.history, campaign.timings)
    assert info["cost_source"] == "measured seconds"
    assert (
        Campaign(get_problem("cost-branin"), acquisition="sobol", budget_cost=5.0)
        .result()
        .cost_source
        == "cost function"
    )
    assert Campaign(problem, acquisition="sobol", budget=3).result().cost_source == "design cost"


def test_remaining_before_any_measured_seconds_is_at_most_one():
    """A budget in measured seconds has no cheapest cost before the first measurement: what is
    left cannot be divided by it, so remaining is 1 while cost units are left (before the
    fix: the trial cap, 1000 for 0.001 s), then what the cheapest measured evaluation affords."""
    from dsbo.campaign.ledger import MEASURED_SECONDS, MEASURED_TRIAL_CAP, Ledger
    from dsbo.storage import open_store

    store = open_store(None)
    ledger = Ledger(budget=None, budget_cost=0.001, design_cost=1.0, source=MEASURED_SECONDS)
    assert ledger.trials == MEASURED_TRIAL_CAP == 1000
    assert ledger.remaining(store) == 1
    [tid] = store.add_trials([[0.5, 0.5]], "sobol", cost=0.0)  # reserved at 0: nothing measured
    assert ledger.remaining(store) == 1
    store.complete(tid, [1.0], eval_time=0.0002, cost=0.0002)  # measured: 0.0008 s left
    assert ledger.remaining(store) == 4
    [tid] = store.add_trials([[0.1, 0.1]], "sobol", cost=0.0002)
    store.complete(tid, [1.0], eval_time=0.0009, cost=0.0009)  # past the budget
    assert ledger.remaining(store) == 0
    assert (
        Ledger(budget=3, budget_cost=5.0, design_cost=1.0, source=MEASURED_SECONDS).remaining(
            open_store(None)
        )
        == 1
    )
    # a campaign asks one point at a time until a time is measured
    campaign = Campaign(
        get_problem("branin"),
        acquisition={"name": "cost-ids", "cost": "learned"},
        budget_cost=10.0,
        n_init=4,
        dry_run=False,
    )
    assert campaign.remaining == 1 and len(campaign.ask(q=3)) == 1
    [trial] = campaign.ask(q=3)
    campaign.tell(trial.id, values=[1.0], eval_time=2.0)
    assert (
        campaign.remaining == 4 and len(campaign.ask(q=3)) == 2
    )  # (10 - 2) / 2 s; 2 design points left


def test_a_measured_seconds_budget_runs_to_its_budget_with_parallel_trials(fast_optimizer):
    """parallel = 2 on a budget in measured seconds: each slot asks for one point, so both
    slots fill before the first measurement too, and the run spends its budget."""
    from concurrent.futures import ThreadPoolExecutor

    problem = get_problem("branin")
    low, high = problem.bounds

    def timed(x):
        time.sleep(0.02 + 0.03 * float((x[0] - low[0]) / (high[0] - low[0])))
        return problem(x)

    with ThreadPoolExecutor(2) as pool:
        campaign = Campaign(
            problem,
            surrogate="gp",
            acquisition={"name": "cost-ids", "cost": "learned", "rho": 4.0},
            budget_cost=0.3,
            n_init=3,
            evaluator=timed,
            executor=pool,
            parallel=2,
            optimizer=fast_optimizer,
        )
        result = campaign.run()
    trials = campaign.store.trials()
    assert len(trials) >= 6 and all(t.status == "completed" for t in trials)
    assert all(t.cost == t.eval_time for t in trials)
    assert result.cost_used == pytest.approx(sum(t.eval_time for t in trials))
    assert campaign.remaining == 0 and result.cost_used < 0.3 + 2 * max(t.eval_time for t in trials)
    assert result.cost_used > 0.3 - 2 * max(t.eval_time for t in trials)


def test_a_told_trial_without_a_time_keeps_its_reservation():
    """Measured seconds through ask/tell (a black box's tell gives no time): the reservation,
    the smallest cost measured so far, is what the trial is charged."""
    problem = get_problem("branin")
    campaign = Campaign(
        problem,
        acquisition={"name": "cost-ids", "cost": "learned"},
        budget_cost=10.0,
        n_init=3,
        dry_run=False,
    )
    first, second, third = (campaign.ask()[0] for _ in range(3))
    assert first.cost == 0.0 and first.metadata["cost_reserved"] == 0.0  # nothing measured yet
    campaign.tell(first.id, values=[1.0], eval_time=0.5)
    campaign.tell(second.id, values=[2.0])
    assert campaign.store.get(first.id).cost == 0.5 and campaign.store.get(second.id).cost == 0.0
    assert third.cost == 0.0


def test_a_raising_cost_function_is_a_failed_trial_not_a_traceback(fast_optimizer):
    """Issue 32, item 2: a cost function that starts raising mid-run; before the fix the
    RuntimeError escaped Campaign.run() at the first BO step after it broke."""
    problem = get_problem("cost-branin")
    calls = {"n": 0}

    def flaky(X):
        calls["n"] += 1
        if calls["n"] > 6:
            raise RuntimeError("cost service down")
        return torch.exp(X[..., 2])

    problem.cost_function = flaky
    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition={"name": "cost-ids", "rho": 4.0},
        budget=7,
        n_init=4,
        optimizer=fast_optimizer,
        dry_run=False,
    )
    result = campaign.run()
    failed = campaign.store.trials("failed")
    assert result.num_completed == 4 and len(failed) == 3
    assert all(
        "CostError" in t.error and "cost service down" in t.error and t.cost == 0.0 for t in failed
    )


def test_an_abandoned_trials_cost_stays_in_the_ledger(tmp_path):
    """Issue 32, item 4: budget_cost 20 at 3 units a trial; two trials asked, lost in a crash
    and abandoned. Before the fix their 6 units left the ledger and 24 were committed."""
    problem = get_problem("branin")
    problem.design_cost = 3.0
    path = tmp_path / "trials.sqlite"
    first = Campaign(
        problem, acquisition="sobol", budget_cost=20.0, n_init=2, q=2, store=path, dry_run=False
    )
    lost = first.ask()
    first.store.close()
    again = Campaign(
        problem,
        acquisition="sobol",
        budget_cost=20.0,
        n_init=2,
        store=path,
        on_pending="abandon",
        dry_run=False,
    )
    result = again.run()
    trials = again.store.trials()
    assert [t.status for t in trials[:2]] == ["abandoned"] * 2 and [t.id for t in lost] == [1, 2]
    assert result.cost_used == sum(t.cost for t in trials) == 18.0 <= 20.0
    assert result.num_completed == 4 and again.remaining == 0
    assert result.history["cumulative_cost"].iloc[-1] == 18.0


def test_remaining_is_what_the_cost_budget_still_affords():
    """Issue 32, item 5: a trial budget of 30 with 19 cost units left (design cost 2 here)
    leaves 9 evaluations, not 29."""
    from dsbo.campaign.ledger import Ledger
    from dsbo.storage import open_store

    store = open_store(None)
    ledger = Ledger(budget=30, budget_cost=21.0, design_cost=2.0)
    [tid] = store.add_trials([[0.5, 0.5]], "sobol", cost=2.0)
    store.complete(tid, [1.0])
    assert ledger.remaining(store) == min(30 - 1, 19 // 2) == 9
    assert Ledger(budget=3, budget_cost=21.0, design_cost=2.0).remaining(store) == 2
    assert Ledger(budget=30, budget_cost=None, design_cost=2.0).remaining(store) == 29
