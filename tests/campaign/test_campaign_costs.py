"""Varying evaluation costs in a campaign: lambda(x) charged per trial, failed costs recorded,
cost budgets, and the ledger across a resume."""

from __future__ import annotations

import math

import pytest
import torch

from dsbo.campaign import Campaign
from dsbo.problems import get_problem


def test_each_trial_is_charged_its_cost_and_the_ledger_survives_a_resume(tmp_path, fast_optimizer):
    problem = get_problem("cost-branin")
    store = tmp_path / "trials.sqlite"
    first = Campaign(problem, surrogate="gp", acquisition={"name": "cost-ids", "rho": 4.0}, budget=7, n_init=4,
                     store=store, optimizer=fast_optimizer)  # fmt: skip
    for _ in range(5):
        first.step()
    trials = first.store.trials()
    X = torch.tensor([t.x for t in trials])
    assert torch.allclose(torch.tensor([t.cost for t in trials]), torch.exp(X[:, 2]))
    ledger = first.cost_used
    assert ledger == pytest.approx(float(torch.exp(X[:, 2]).sum()))
    first.store.close()
    again = Campaign(problem, surrogate="gp", acquisition={"name": "cost-ids", "rho": 4.0}, budget=7, n_init=4,
                     store=store, optimizer=fast_optimizer)  # fmt: skip
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

    campaign = Campaign(problem, surrogate="gp", budget=6, n_init=6, evaluator=evaluator, optimizer=fast_optimizer)
    result = campaign.run()
    failed = campaign.store.trials("failed")
    assert failed and all(t.x[0] > 2.5 and "CostError" in t.error and t.cost == 0.0 for t in failed)
    assert len(evaluated) == result.num_completed == 6 - len(failed)  # counted in the budget, not evaluated


def test_a_cost_budget_ends_at_the_first_proposal_it_cannot_pay(fast_optimizer):
    problem = get_problem("cost-branin")
    campaign = Campaign(problem, surrogate="gp", acquisition="ucb", budget_cost=120.0, n_init=3,
                        optimizer=fast_optimizer)  # fmt: skip
    result = campaign.run()
    assert result.cost_used <= 120.0 + 1e-9
    assert campaign.remaining == 0
    assert campaign.ask() == []
    spent = [t.cost for t in campaign.store.trials()]
    assert math.isclose(sum(spent), result.cost_used)


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
