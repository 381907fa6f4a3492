"""Tests of the SEBO ranking sourcing simulation (appendix F.1)."""

from __future__ import annotations

import math
from functools import cache

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError, ProblemError
from dsbo.problems.base import Problem
from dsbo.problems.sourcing import SourcingSimulation, make_sourcing_problem

S = 25


@cache
def cached_problem(**options) -> Problem:
    return make_sourcing_problem(**options)


def random_policies(n: int, seed: int, high: int = 50, density: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    X = torch.randint(0, high + 1, (n, S), generator=g).double()
    mask = torch.rand(n, S, generator=g) < density
    return X * mask


PARAMS = ("theta", "phi", "Q", "m", "q", "c")


# ------------------------------------------------------------------ the generative model
def test_same_seed_same_parameters_and_values():
    a, b = make_sourcing_problem(seed=0), make_sourcing_problem(seed=0)
    for name in PARAMS:
        assert torch.equal(getattr(a.test_problem, name), getattr(b.test_problem, name)), name
    X = random_policies(3, seed=1)
    assert torch.equal(a.evaluate(X), b.evaluate(X))


def test_different_seed_different_parameters_and_values():
    a, b = cached_problem(seed=0), cached_problem(seed=1)
    for name in PARAMS:
        assert not torch.equal(getattr(a.test_problem, name), getattr(b.test_problem, name)), name
    X = random_policies(3, seed=1)
    assert not torch.equal(a.evaluate(X), b.evaluate(X))


def test_parameters_follow_the_model():
    tp = cached_problem().test_problem
    assert tp.theta.shape == (25, 8) and tp.phi.shape == (8, 1000)
    assert tp.Q.shape == (8,) and tp.m.shape == (1000,) and tp.q.shape == (25,)
    assert tp.c.shape == (25,)
    torch.testing.assert_close(tp.theta.sum(-1), torch.ones(25, dtype=torch.double))
    torch.testing.assert_close(tp.phi.sum(-1), torch.ones(8, dtype=torch.double))
    assert (tp.Q > 0).all()
    torch.testing.assert_close(tp.m, tp.Q @ tp.phi)
    torch.testing.assert_close(tp.q, tp.theta @ tp.Q)
    torch.testing.assert_close(tp.p, tp.theta @ tp.phi)
    # clipped at 0 by default; the raw draws are kept
    assert (tp.c >= 0).all()
    torch.testing.assert_close(tp.c, tp.cost_unclipped.clamp_min(0))


def test_clip_negative_cost_false_keeps_raw_costs():
    tp = SourcingSimulation(clip_negative_cost=False, mode="expected")
    assert torch.equal(tp.c, tp.cost_unclipped)
    assert (tp.c < 0).any()  # with the paper's numbers some raw costs are negative


def test_relevance_lognormal_moments_conversion():
    tp = SourcingSimulation(relevance_lognormal="moments", mode="expected")
    mu, sigma = tp.relevance_mu, tp.relevance_sigma
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(0.25)
    assert math.sqrt((math.exp(sigma**2) - 1) * math.exp(2 * mu + sigma**2)) == pytest.approx(1.5)
    log_tp = SourcingSimulation(relevance_lognormal="log", mode="expected")
    assert (log_tp.relevance_mu, log_tp.relevance_sigma) == (0.25, 1.5)
    # same standard normals, different transform
    z_moments = (torch.log(tp.Q) - mu) / sigma
    z_log = (torch.log(log_tp.Q) - 0.25) / 1.5
    torch.testing.assert_close(z_moments, z_log)


# ------------------------------------------------------------------ evaluation
def test_same_x_twice_same_value_and_batch_independent():
    problem = cached_problem(n_repeats=200)
    X = random_policies(4, seed=2)
    y1 = problem.evaluate(X)
    y2 = problem.evaluate(X)
    assert torch.equal(y1, y2)
    # a point's value does not depend on the batch it is evaluated in (the draws are the
    # same; only the rounding of the final matrix product may differ in the last bit)
    alone = problem.evaluate(X[2:3])
    reordered = problem.evaluate(X.flip(0))
    torch.testing.assert_close(alone[0], y1[2], rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(reordered.flip(0), y1, rtol=1e-13, atol=1e-13)
    # ... while another point, or another seed, changes the draws
    other_seed = cached_problem(n_repeats=200, seed=1).test_problem
    assert other_seed.point_seed(X[0]) != problem.test_problem.point_seed(X[0])
    assert problem.test_problem.point_seed(X[0]) != problem.test_problem.point_seed(X[1])


@pytest.mark.parametrize("mode", ["monte-carlo", "expected"])
def test_zero_policy_has_zero_quality(mode):
    problem = cached_problem(mode=mode)
    y = problem.evaluate(problem.default_point.unsqueeze(0))
    assert y.shape == (1, 1)
    assert y.item() == 0.0


def test_monte_carlo_mean_agrees_with_closed_form():
    tp = cached_problem().test_problem
    X = torch.cat(
        [
            random_policies(3, seed=3),
            random_policies(3, seed=4, density=0.2),
            random_policies(2, seed=5, high=3),
        ]
    )
    mean, sem = tp.mean_and_sem(X)
    expected = tp.expected_quality(X)
    assert (sem > 0).all()
    z = (mean - expected) / sem
    assert z.abs().max() < 4.0, z
    # evaluate() returns exactly the Monte-Carlo mean
    torch.testing.assert_close(tp(X), mean)


def test_monte_carlo_item_draws_follow_source_distribution():
    # One source fetching one item: RS = m_k of the drawn item, so the values reveal
    # which item was drawn; their frequencies must match p_s = theta_s @ phi.
    tp = SourcingSimulation(num_sources=2, num_items=4, num_topics=2, n_repeats=20000, seed=3)
    assert len(set(tp.m.tolist())) == 4
    x = torch.tensor([[1.0, 0.0]])
    sims = tp.simulate(x)[0] + tp.cost_weight * tp.c[0]
    item = (sims.unsqueeze(-1) - tp.m).abs().argmin(-1)
    freq = torch.bincount(item, minlength=4).double() / 20000
    p = tp.p[0]
    assert ((freq - p).abs() <= 4 * (p * (1 - p) / 20000).sqrt() + 1e-12).all(), (freq, p)


def test_closed_form_matches_the_product_formula():
    tp = cached_problem(mode="expected").test_problem
    X = random_policies(5, seed=6)
    miss = torch.stack([((1 - tp.p) ** x.unsqueeze(-1)).prod(0) for x in X])
    direct = ((1 - miss) * tp.m).sum(-1) - 0.6 * (X * tp.c).sum(-1)
    torch.testing.assert_close(tp.expected_quality(X), direct)
    torch.testing.assert_close(tp(X), direct)


def test_batch_shapes():
    X = random_policies(6, seed=7).reshape(2, 3, S)
    for mode in ("monte-carlo", "expected"):
        tp = cached_problem(mode=mode, n_repeats=200).test_problem
        y = tp(X)
        assert y.shape == (2, 3)
        torch.testing.assert_close(y.reshape(-1), tp(X.reshape(6, S)))
    assert tp.simulate(X).shape == (2, 3, 200)


@settings(max_examples=40, deadline=None)
@given(
    x=st.lists(st.integers(0, 49), min_size=S, max_size=S),
    source=st.integers(0, S - 1),
)
def test_closed_form_monotone_without_cost(x, source):
    tp = cached_problem(mode="expected", cost_weight=0.0).test_problem
    X = torch.tensor([x], dtype=torch.double)
    X_more = X.clone()
    X_more[0, source] += 1
    assert tp(X_more).item() >= tp(X).item()


@settings(max_examples=20, deadline=None)
@given(x=st.lists(st.integers(0, 49), min_size=S, max_size=S))
def test_closed_form_monotone_in_zero_cost_sources(x):
    tp = cached_problem(mode="expected").test_problem
    free = torch.nonzero(tp.c == 0).flatten().tolist()
    assert free, "with the paper's numbers some clipped costs are exactly zero"
    X = torch.tensor([x], dtype=torch.double)
    for s in free:
        X_more = X.clone()
        X_more[0, s] += 1
        assert tp(X_more).item() >= tp(X).item()


def test_closed_form_is_differentiable_and_accepts_non_integer_x():
    tp = cached_problem(mode="expected").test_problem
    X = torch.full((1, S), 2.5, dtype=torch.double, requires_grad=True)
    tp.expected_quality(X).sum().backward()
    assert torch.isfinite(X.grad).all() and (X.grad != 0).any()


# ------------------------------------------------------------------ domain
def test_bounds_and_integer_domain():
    problem = cached_problem()
    tp = problem.test_problem
    assert problem.dim == 25
    torch.testing.assert_close(problem.bounds[0], torch.zeros(S, dtype=torch.double))
    torch.testing.assert_close(problem.bounds[1], torch.full((S,), 50.0, dtype=torch.double))
    assert tp.discrete_inds == list(range(S)) and tp.continuous_inds == []
    assert problem.integer_dims == tuple(range(S))
    assert problem.relevant_dims == tuple(range(S))
    assert problem.objective_names == ("quality",)
    assert not tp.is_minimization_problem and not tp.negate
    assert torch.equal(problem.default_point, torch.zeros(S, dtype=torch.double))

    x = torch.zeros(1, S, dtype=torch.double)
    x[0, 3] = 1.5
    with pytest.raises(ProblemError, match="integer"):
        problem.evaluate(x)
    with pytest.raises(ValueError, match="integer"):
        tp(x)  # BoTorch's own validation
    with pytest.raises(ProblemError, match="integer"):
        tp.simulate(x)
    x[0, 3] = 51
    with pytest.raises(ProblemError, match="outside the bounds"):
        problem.evaluate(x)
    # the expected mode keeps the integer domain too
    with pytest.raises(ProblemError, match="integer"):
        cached_problem(mode="expected").evaluate(torch.full((1, S), 0.5))


def test_round_to_domain_then_evaluate():
    problem = cached_problem(mode="expected")
    x = problem.round_to_domain(torch.full((1, S), 60.4))
    assert torch.equal(x, torch.full((1, S), 50.0, dtype=torch.double))
    assert torch.isfinite(problem.evaluate(x)).all()


def test_metadata_records_choices():
    problem = cached_problem()
    md = problem.metadata
    assert md["relevance_lognormal"] == "log"
    assert md["clip_negative_cost"] is True
    assert md["mode"] == "monte-carlo"
    assert md["n_repeats"] == 1000
    assert md["cost_weight"] == 0.6
    other = cached_problem(mode="expected", relevance_lognormal="moments", n_repeats=10)
    assert other.metadata["mode"] == "expected"
    assert other.metadata["relevance_lognormal"] == "moments"
    assert other.metadata["n_repeats"] == 10


# ------------------------------------------------------------------ options
@pytest.mark.parametrize(
    "option, value",
    [
        ("mode", "foo"),
        ("relevance_lognormal", "bar"),
        ("num_sources", 0),
        ("num_items", 2.5),
        ("n_repeats", 0),
        ("seed", -1),
        ("alpha", 0.0),
        ("beta", -1.0),
        ("cost_std", -0.1),
        ("cost_weight", float("nan")),
        ("clip_negative_cost", "yes"),
        ("max_retrievals", True),
        ("noise_std", -1.0),
    ],
)
def test_invalid_option_raises_config_error(option, value):
    with pytest.raises(ConfigError, match=option):
        make_sourcing_problem(**{option: value})


def test_unknown_option_raises_config_error():
    with pytest.raises(ConfigError, match="colour"):
        make_sourcing_problem(colour="red")


def test_moments_needs_positive_mean():
    with pytest.raises(ConfigError, match="relevance_mean"):
        make_sourcing_problem(relevance_lognormal="moments", relevance_mean=0.0)


def test_small_sizes_and_name():
    problem = make_sourcing_problem(
        num_sources=3, num_items=20, num_topics=2, max_retrievals=5, n_repeats=50, name="tiny"
    )
    assert problem.name == "tiny" and problem.dim == 3
    y = problem.evaluate(torch.tensor([[5.0, 0.0, 2.0]]))
    assert y.shape == (1, 1) and torch.isfinite(y).all()
