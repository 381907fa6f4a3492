"""Categories and conditional branches as arms (dsbo.acquisition.branches): the balanced
initial design, and the stalled search's draw among branches."""

import collections

import pytest
import torch
from botorch.models import SingleTaskGP

from dsbo.acquisition import History, OptimizerSettings
from dsbo.acquisition.branches import (
    balanced_categories,
    category_combinations,
    draw_branch,
    incumbent,
    incumbent_copies,
    matching,
)
from dsbo.campaign import Campaign
from dsbo.campaign.ledger import design_sequence
from dsbo.errors import ConfigError
from dsbo.problems import get_problem

PARAMETERS = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "family": {"type": "choice", "values": ["a", "b", "c", "d"]},
    "shape": {"type": "float", "low": 0.0, "high": 1.0, "when": {"family": "c"}},
    "act": {"type": "choice", "values": ["relu", "tanh", "gelu"]},
}
FAST = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20, "mc_samples": 16}


def _problem():
    return get_problem("black-box", parameters=PARAMETERS, objectives=["score"])


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_every_prefix_of_the_design_holds_each_category_floor_or_ceil_of_n_over_k_times(seed):
    problem = _problem()
    design = design_sequence(problem, OptimizerSettings(), seed, include_default=False, n=23)
    values = [problem.params(x) for x in design]
    for name, k in (("family", 4), ("act", 3)):
        for n in range(1, len(values) + 1):
            counts = collections.Counter(v[name] for v in values[:n])
            assert len(counts) == min(n, k) or n < k
            assert max(counts.values()) - min(counts.values()) <= 1 if n >= k else True
            assert all(n // k <= c <= -(-n // k) for c in counts.values())
    # each design is a prefix of the next; a conditional parameter only where it is active
    shorter = design_sequence(problem, OptimizerSettings(), seed, include_default=False, n=9)
    assert torch.equal(shorter, design[:9])
    assert all(("shape" in v) == (v["family"] == "c") for v in values)


def test_the_design_balances_nothing_with_branches_acquisition():
    problem = _problem()
    settings = OptimizerSettings(branches="acquisition")
    raw = problem.sobol_design(12, 3, settings.apply_fixed_features)
    assert torch.equal(balanced_categories(problem, raw, 3, settings), raw)
    assert torch.equal(
        design_sequence(problem, settings, 3, False, 12), problem.round_to_domain(raw)
    )


def test_a_pinned_categorical_is_left_as_it_is():
    problem = _problem()
    columns = list(range(problem.dim))[problem.space.slices["act"]]
    settings = OptimizerSettings(fixed_features={columns[0]: 1.0, columns[1]: 0.0, columns[2]: 0.0})
    design = design_sequence(problem, settings, 0, False, 8)
    assert {problem.params(x)["act"] for x in design} == {"relu"}
    assert len({problem.params(x)["family"] for x in design}) == 4


def test_branches_is_validated():
    with pytest.raises(ConfigError, match="acquisition.branches='both': choose one of"):
        OptimizerSettings(branches="both").validate()


def _fitted_history(seed):
    """A GP on 8 balanced design points of a function where family c at shape ~0.7 is best."""
    problem = _problem()
    X = design_sequence(problem, OptimizerSettings(), seed, include_default=False, n=8)
    values = []
    for x in X:
        p = problem.params(x)
        values.append(-abs(p.get("shape", 0.0) - 0.7) - 0.3 * (p["family"] == "a"))
    Y = torch.tensor(values, dtype=torch.double).reshape(-1, 1)
    model = SingleTaskGP(X, Y)
    return problem, model, History(X=X, Y=Y, n_design=8, seed=seed)


def test_the_incumbent_copies_keep_the_shared_parameters_and_vary_the_branch_own_ones():
    problem, _, history = _fitted_history(0)
    combinations = category_combinations(problem, OptimizerSettings())
    best = incumbent(history, problem)
    copies = incumbent_copies(problem, history, OptimizerSettings(), combinations, seed=5)
    lr = problem.space.slices["lr"]
    assert torch.allclose(copies[:, lr], best[lr].expand_as(copies[:, lr]))
    assert len(matching(combinations, copies)) == len(combinations)  # every branch
    shapes = {problem.params(x)["shape"] for x in copies if problem.params(x)["family"] == "c"}
    assert len(shapes) > 10  # the branch's own parameter is varied


def test_a_drawn_branch_is_another_branch_than_the_incumbent_with_its_shared_values():
    moved = 0
    for seed in range(12):
        problem, model, history = _fitted_history(seed)
        combinations = category_combinations(problem, OptimizerSettings())
        best = incumbent(history, problem)
        found = draw_branch(model, history, problem, OptimizerSettings(), combinations)
        if found is None:
            continue
        moved += 1
        x, branch = found
        assert matching(combinations, x) != matching(combinations, best.reshape(1, -1))
        assert branch == {k: problem.params(x[0])[k] for k in ("family", "act")}
        lr = problem.space.slices["lr"]
        assert torch.allclose(x[0, lr], best[lr])
    assert moved > 0


def test_a_stalled_campaign_over_categories_tries_other_branches_of_its_incumbent():
    problem = get_problem("black-box", parameters=PARAMETERS, objectives=["score"])
    campaign = Campaign(
        problem,
        budget=14,
        n_init=4,
        evaluator=lambda x: 1.0,  # a plateau: every proposal past the design is stalled
        optimizer=OptimizerSettings(stall_patience=2, **FAST),
    )
    campaign.run()
    branched = [t for t in campaign.store.trials() if "branch" in t.metadata]
    assert branched, "no exploration drew another branch"
    assert all(t.metadata["explore"] and t.generator == "qlognei+explore" for t in branched)
