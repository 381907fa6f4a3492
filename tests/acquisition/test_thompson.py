"""The ``thompson`` policy: maximizers of joint posterior draws over a Sobol candidate set."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.synthetic import Branin, ConstrainedGramacy
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import History, OptimizerSettings, make_policy
from dsbo.acquisition.thompson import ThompsonSampling, default_n_candidates, thompson_objective
from dsbo.errors import ConfigError
from dsbo.problems import Problem, get_problem
from dsbo.surrogates import fit_surrogate

CENTER = torch.tensor([0.7, 0.2], dtype=torch.double)


def bump(X):
    """A single smooth peak at CENTER (unit-cube coordinates of Branin's box)."""
    problem = get_problem("branin")
    U = (X - problem.bounds[0]) / (problem.bounds[1] - problem.bounds[0])
    return -((U - CENTER) ** 2).sum(-1, keepdim=True) * 10


@pytest.fixture(scope="module")
def fitted():
    problem = get_problem("branin")
    X = draw_sobol_samples(problem.bounds, n=25, q=1, seed=0).squeeze(1)
    Y = bump(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    return problem, model, History(X, Y, seed=11, t=25)


def propose(problem, model, history, q=1, **options):
    return make_policy("thompson", options).propose(model, history, problem, q)


def test_registered_with_its_options():
    policy = make_policy("thompson", {"n_candidates": 64})
    assert isinstance(policy, ThompsonSampling) and policy.n_candidates == 64
    assert default_n_candidates(2) == 500 and default_n_candidates(6) == 1200
    assert default_n_candidates(100) == 5000
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ConfigError, match="n_candidates"):
            make_policy("thompson", {"n_candidates": bad})


def test_same_seed_same_proposal_and_global_rng_untouched(fitted):
    problem, model, history = fitted
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    X1 = propose(problem, model, history, q=3, n_candidates=256).X
    assert torch.equal(torch.random.get_rng_state(), before)
    X2 = propose(problem, model, history, q=3, n_candidates=256).X
    other = History(history.X, history.Y, seed=12, t=25)
    X3 = propose(problem, model, other, q=3, n_candidates=256).X
    assert torch.equal(X1, X2)
    assert not torch.equal(X1, X3)


def test_batch_is_distinct_candidates_within_bounds(fitted):
    problem, model, history = fitted
    proposal = propose(problem, model, history, q=4, n_candidates=300)
    X = proposal.X
    assert X.shape == (4, 2)
    assert torch.unique(X, dim=0).shape[0] == 4
    assert (X >= problem.bounds[0]).all() and (X <= problem.bounds[1]).all()
    candidates = ThompsonSampling(n_candidates=300).candidates(problem, history.seed)
    for x in X:
        assert (candidates == x).all(-1).any()  # every proposal is a Sobol candidate
    assert [m["acquisition"] for m in proposal.metadata] == ["thompson"] * 4
    assert all(m["n_candidates"] == 300 for m in proposal.metadata)


def test_proposals_concentrate_at_the_posterior_maximum(fitted):
    """25 noiseless points of a single peak pin the posterior down: most draws' maximizers are
    near the peak, where a uniform candidate lands with probability ~3%."""
    problem, model, history = fitted
    X = propose(problem, model, history, q=8, n_candidates=1000).X
    U = (X - problem.bounds[0]) / (problem.bounds[1] - problem.bounds[0])
    distance = (U - CENTER).norm(dim=-1)
    assert (distance < 0.1).sum() >= 6, distance


def test_fixed_features_hold_on_every_candidate(fitted):
    problem, model, history = fitted
    policy = make_policy(
        "thompson", {"n_candidates": 200}, OptimizerSettings(fixed_features={1: 3.25})
    )
    X = policy.propose(model, history, problem, 3).X
    assert (X[:, 1] == 3.25).all()
    # with x1 fixed the best reachable point is the peak's x0 coordinate
    U0 = (X[:, 0] - problem.bounds[0, 0]) / (problem.bounds[1, 0] - problem.bounds[0, 0])
    assert (U0 - CENTER[0]).abs().max() < 0.2


def test_integer_dimensions_are_rounded():
    problem = Problem(
        "branin-int",
        Branin(negate=True),
        default_point=[0.0, 5.0],
        relevant_dims=(0, 1),
        integer_dims=(1,),
    )
    X = draw_sobol_samples(problem.bounds, n=10, q=1, seed=1).squeeze(1)
    X = problem.round_to_domain(X)
    model = fit_surrogate("gp", X, problem.evaluate(X), bounds=problem.bounds)
    proposal = propose(problem, model, History(X, problem.evaluate(X), seed=5, t=10), q=2)
    assert torch.equal(proposal.X[:, 1], proposal.X[:, 1].round())


def test_constraint_aware_ranking():
    # 1 objective + 2 slacks, 4 candidates, 1 draw
    samples = torch.tensor(
        [[[5.0, -1.0, 1.0], [1.0, 0.5, 0.5], [3.0, 0.1, 0.0], [9.0, -0.2, -0.1]]]
    )
    score = thompson_objective(samples, num_objectives=1, num_constraints=2)
    # feasible: candidates 1 and 2 (scores 1 and 3); infeasible below min(objective) - 1 = 0,
    # ordered by violation (0.3 for candidate 3, 1.0 for candidate 0)
    assert score[0, 2] == 3.0 and score[0, 1] == 1.0
    assert torch.allclose(score[0, [0, 3]], torch.tensor([-1.0, -0.3]))
    assert score.argsort(dim=-1, descending=True).tolist() == [[2, 1, 3, 0]]
    assert torch.equal(thompson_objective(samples, 1, 0), samples[..., 0])


def test_constrained_problem_proposes_sampled_feasible_points():
    problem = Problem(
        "gramacy", ConstrainedGramacy(negate=True), default_point=[0.5, 0.5], relevant_dims=(0, 1)
    )
    X = draw_sobol_samples(problem.bounds, n=20, q=1, seed=2).squeeze(1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    proposal = propose(problem, model, History(X, Y, seed=3, t=20), q=2, n_candidates=256)
    assert proposal.X.shape == (2, 2)
    # a feasible sampled maximizer exists here: the chosen scores are sampled objectives
    for meta in proposal.metadata:
        assert meta["sample_score"] == pytest.approx(meta["sample_value"])


def test_ensemble_model_and_multi_objective_errors(fitted):
    problem, _, history = fitted
    torch.manual_seed(0)
    ensemble = fit_surrogate(
        {"name": "map-saas", "num_taus": 3}, history.X, history.Y, bounds=problem.bounds
    )
    X = propose(problem, ensemble, history, q=2, n_candidates=128).X
    assert X.shape == (2, 2)
    mo = get_problem("branin-currin")
    with pytest.raises(ConfigError, match="single-objective"):
        propose(mo, ensemble, history)
    with pytest.raises(ConfigError, match="n_candidates=4 is smaller than q=5"):
        propose(problem, ensemble, history, q=5, n_candidates=4)


def test_a_small_discrete_space_is_never_repeated_until_it_is_exhausted():
    """Two integers of 3 values each: 9 configurations. Every draw's maximizer over the
    snapped Sobol set is an evaluated point once the posterior peaks there; the policy passes
    over evaluated and pending ones and says when none is left."""
    import dsbo

    space = {"a": dsbo.Int(1, 3), "b": dsbo.Int(1, 3)}
    result = dsbo.minimize(
        lambda p: (p["a"] - 2) ** 2 + (p["b"] - 3) ** 2,
        space,
        budget=11,
        seed=0,
        acquisition="thompson",
        dry_run=False,
    )
    rows = result.history
    configs = list(zip(rows["a"], rows["b"], strict=True))
    assert len(set(configs[:9])) == 9
    exhausted = [t.metadata.get("space_exhausted", False) for t in result.campaign.store.trials()]
    assert exhausted[9:] == [True, True]
