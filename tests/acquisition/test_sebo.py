"""SEBO: homotopy continuation on the paper's Figure 2, the re-proposal guard, fixed features,
determinism, batches, constraints, and an end-to-end campaign that is sparser than qLogNEI."""

from __future__ import annotations

import copy

import pytest
import torch
from botorch.test_functions.synthetic import SyntheticTestFunction
from botorch.utils.multi_objective.hypervolume import infer_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import History, OptimizerSettings, Proposal, make_policy
from dsbo.acquisition.sebo import SEBO, prune_restarts, snap_to_target
from dsbo.acquisition.sparse_ehvi import LogSparseExpectedHypervolumeImprovement
from dsbo.acquisition.sparsity import is_duplicate
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.problems.base import Problem
from dsbo.surrogates import fit_surrogate

FIG2_OPT = OptimizerSettings(num_restarts=4, raw_samples=16, maxiter=50, batch_limit=4)
FIG2_REF = [-1.1, 1.1]  # (r_f, r_xi): the observed min f and max xi, minus/plus 10% of the range


class NegSquare(SyntheticTestFunction):
    """``f(x) = -x^2`` on ``[0, 1]`` (Figure 2 of the SEBO paper)."""

    dim = 1
    continuous_inds = [0]
    _bounds = [(0.0, 1.0)]
    _optimal_value = 0.0

    def _evaluate_true(self, X):
        return -(X**2).squeeze(-1)


def figure2(observed):
    problem = Problem(
        "neg-square", NegSquare(), default_point=torch.tensor([0.5]), relevant_dims=(0,)
    )
    X = torch.tensor(observed).unsqueeze(-1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    return problem, model, History(X, Y, seed=0, t=X.shape[0])


def test_homotopy_finds_the_sparse_optimum_of_figure_2_where_a_fixed_small_a_fails():
    # f(x) = -x^2, xi(x) = ||x - 0.5||_0, observations {0, 0.25, 0.75, 1}: the global maximum of
    # the SEBO acquisition (EHVI with the exact L0) is the sparse point x = 0.5.
    # Both arms start from BoTorch's scored Sobol starts (starts: sobol): the sparse starts of
    # the default put some restarts on the target itself, which no a can then miss.
    problem, model, history = figure2([0.0, 0.25, 0.75, 1.0])
    policy = SEBO(ref_point=FIG2_REF, num_restarts_homotopy=4, optimizer=FIG2_OPT, starts="sobol")
    exact_acqf = policy.build(model, history, problem, q=1)
    grid = torch.cat([torch.linspace(0, 1, 1001), torch.tensor([0.5])]).reshape(-1, 1, 1)
    with torch.no_grad():
        assert grid[exact_acqf(grid).argmax()].item() == 0.5

    proposal = policy.propose(model, history, problem, q=1)
    meta = proposal.metadata[0]
    assert proposal.X.item() == 0.5 and meta["xi"] == 0.0 and meta["snapped"] == 1
    # the optimized values of a: the schedule's first and last, decreasing, at most 30 (the
    # restarts stop moving before the end and the schedule jumps to the final a)
    a_values = meta["a_values"]
    assert a_values[0] == pytest.approx(10**-0.5) and a_values[-1] == pytest.approx(1e-3)
    assert len(a_values) <= 30 and all(b < a for a, b in zip(a_values, a_values[1:], strict=False))

    # The same optimizer at a fixed a = 1e-3: the relaxation is flat almost everywhere and the
    # restarts end in a dense local optimum with a lower true acquisition value.
    fixed = SEBO(
        ref_point=FIG2_REF,
        a_start=1e-3,
        a_end=1e-3,
        num_steps=1,
        num_restarts_homotopy=4,
        optimizer=FIG2_OPT,
        starts="sobol",
    )
    stuck = fixed.propose(model, history, problem, q=1)
    assert abs(stuck.X.item() - 0.5) > 0.05 and stuck.metadata[0]["xi"] == 1.0
    assert stuck.metadata[0]["acq_value"] < meta["acq_value"] - 1.0


def test_sebo_does_not_repropose_an_evaluated_point():
    # With the sparse point 0.5 already evaluated (noiseless), the homotopy still pulls the
    # restarts onto it; without the guard SEBO proposes it again.
    problem, model, history = figure2([0.0, 0.25, 0.5, 0.75, 1.0])
    unguarded = SEBO(
        num_steps=10, num_restarts_homotopy=4, dedup_tol=0.0, repeat_tol=0.0, optimizer=FIG2_OPT
    )
    assert unguarded.propose(model, history, problem, q=1).X.item() == 0.5

    guarded = SEBO(num_steps=10, num_restarts_homotopy=4, optimizer=FIG2_OPT)
    proposal = guarded.propose(model, history, problem, q=1)
    assert not is_duplicate(proposal.X, history.X, problem.bounds, 1e-6).any()
    assert proposal.metadata[0]["duplicates_skipped"] >= 1


def test_helpers_snap_dedup_and_prune():
    bounds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 10.0, 1.0]])
    target = torch.tensor([0.0, 5.0, 1.0])
    X = torch.tensor([[0.005, 5.05, 0.5], [0.02, 5.2, 0.995]])
    snapped, count = snap_to_target(X, target, bounds, tol=0.01, fixed=[0])
    assert snapped.tolist() == [[0.005, 5.0, 0.5], [0.02, 5.2, 1.0]] and count.tolist() == [1, 1]
    seen = torch.tensor([[0.005, 5.0, 0.5]])
    assert is_duplicate(snapped, seen, bounds, 1e-6).tolist() == [True, False]
    keep = prune_restarts(torch.tensor([[0.0], [1e-5], [0.5]]), torch.tensor([1.0, 2.0, 0.0]))
    assert keep.tolist() == [1, 2]


@pytest.fixture(scope="module")
def branin15():
    problem = get_problem("branin-15d", target="zero")
    X = draw_sobol_samples(problem.bounds, n=8, q=1, seed=0).squeeze(1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    return problem, model, History(X, Y, seed=3, t=8)


SMALL = dict(num_steps=4, num_restarts_homotopy=2)


def test_batches_fixed_features_bounds_and_determinism(branin15, fast_optimizer):
    problem, model, history = branin15
    fast_optimizer.fixed_features = {0: 0.005, 4: 0.7}  # 0.005 is within snap_tol of the target
    proposals = [
        SEBO(optimizer=fast_optimizer, **SMALL).propose(model, history, problem, q=2)
        for _ in range(2)
    ]
    X = proposals[0].X
    assert torch.equal(X, proposals[1].X)  # same seed, same candidates
    assert X.shape == (2, 15) and not torch.equal(X[0], X[1])
    assert (X[:, 0] == 0.005).all() and (X[:, 4] == 0.7).all()
    assert ((X >= 0) & (X <= 1)).all()
    assert all(m["acquisition_function"] == "qlognehvi" for m in proposals[0].metadata)


def test_l1_and_group_penalties_need_no_homotopy(branin15, fast_optimizer):
    problem, model, history = branin15
    groups = [list(range(i, i + 3)) for i in range(0, 15, 3)]
    norms = {
        "l1": lambda x: x.abs().sum(),
        "group": lambda x: sum(len(g) ** 0.5 * x[g].norm() for g in groups),
    }
    for options in ({"penalty": "l1"}, {"penalty": "group", "groups": groups}):
        policy = SEBO(optimizer=fast_optimizer, **options)
        proposal = policy.propose(model, history, problem, q=1)
        meta, x = proposal.metadata[0], proposal.X[0]
        assert "a_values" not in meta and meta["acquisition_function"] == "ehvi"
        assert meta["num_traced"] <= fast_optimizer.num_restarts
        # the recorded xi is the penalty of the proposal (target 0, unit box: no rescaling)
        assert meta["xi"] == pytest.approx(float(norms[options["penalty"]](x)), rel=1e-9)
        # the snapped coordinates sit exactly on the target
        assert int((x == 0).sum()) >= meta["snapped"]
        # the pick maximizes the exact EHVI: above the target itself and every evaluated point
        acqf = policy.build(model, history, problem, q=1)
        with torch.no_grad():
            value = float(acqf(proposal.X.unsqueeze(-2)))
            others = acqf(torch.cat([problem.default_point[None], history.X]).unsqueeze(-2))
        assert value == pytest.approx(meta["acq_value"], rel=1e-9)
        assert value >= float(others.max())


def test_postprocessor_sees_the_exact_acquisition(branin15, fast_optimizer):
    problem, model, history = branin15
    calls = []

    def postprocessor(acqf, X, history, problem, optimizer, log_scale):
        calls.append((acqf, log_scale))
        return Proposal(X=X, metadata=[{"post": True}])

    policy = SEBO(optimizer=fast_optimizer, **SMALL)
    policy.postprocessor = postprocessor
    proposal = policy.propose(model, history, problem, q=1)
    acqf, log_scale = calls[0]
    assert isinstance(acqf, LogSparseExpectedHypervolumeImprovement) and log_scale
    assert acqf.sparsity.exact and proposal.metadata[0]["post"]


def test_constrained_problem_uses_the_slacks(fast_optimizer):
    problem = get_problem("pressure-vessel")
    X = draw_sobol_samples(problem.bounds, n=10, q=1, seed=1).squeeze(1)
    X = problem.round_to_domain(X)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    history = History(X, Y, seed=0, t=10)
    policy = SEBO(optimizer=fast_optimizer, **SMALL)
    acqf = policy.build(model, history, problem, q=1)
    assert acqf.constraint_indices == [1, 2, 3, 4]
    # log EHVI_c(x) = log EHVI(x) + sum_j log P(slack_j(x) >= 0), the slacks independent outputs
    unconstrained = copy.copy(acqf)
    unconstrained.constraint_indices = []
    with torch.no_grad():
        posterior = model.posterior(X)
        log_feasible = torch.special.log_ndtr(
            posterior.mean[:, 1:5] / posterior.variance[:, 1:5].sqrt()
        ).sum(-1)
        values, base = acqf(X.unsqueeze(-2)), unconstrained(X.unsqueeze(-2))
    assert torch.allclose(values, base + log_feasible, rtol=1e-6, atol=1e-8)
    assert (log_feasible < -1e-3).any()
    problem.validate(policy.propose(model, history, problem, q=1).X)
    # The MC path gets the slacks as BoTorch constraints (its optimization is slower: 5 GPs).
    policy = SEBO(acquisition_function="qlognehvi", optimizer=fast_optimizer, **SMALL)
    acqf = policy.build(model, history, problem, q=1)
    assert len(acqf.constraints) == 4 and torch.isfinite(acqf(X[:3].unsqueeze(-2))).all()


def test_multi_objective_falls_back_to_qlognehvi(fast_optimizer):
    problem = get_problem("branin-currin-6d", target="zero")
    X = draw_sobol_samples(problem.bounds, n=8, q=1, seed=0).squeeze(1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    proposal = SEBO(optimizer=fast_optimizer, **SMALL).propose(model, History(X, Y), problem, q=1)
    assert proposal.metadata[0]["acquisition_function"] == "qlognehvi"
    with pytest.raises(ConfigError, match="ref_point needs 3"):
        SEBO(ref_point=[0.0, 1.0]).build(model, History(X, Y), problem, q=1)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"penalty": "l2"}, "penalty"),
        ({"penalty": "group"}, "groups"),
        ({"acquisition_function": "ei"}, "acquisition_function"),
        ({"a_start": 1e-3, "a_end": 0.1}, "a_end"),
        ({"num_steps": 0}, "num_steps"),
        ({"snap_tol": -1}, "snap_tol"),
        ({"repeat_tol": 1.5}, "repeat_tol"),
        ({"homotopy_maxiter": 0}, "homotopy_maxiter"),
        ({"freeze_tol": True}, "freeze_tol"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_options_are_checked(options, match):
    with pytest.raises(ConfigError, match=match):
        make_policy("sebo", options)


def run(acquisition, optimizer, budget=9):
    problem = get_problem("branin-15d", target="zero")
    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition=acquisition,
        budget=budget,
        n_init=6,
        optimizer=optimizer,
        seed=0,
    )
    campaign.run()
    trials = campaign.store.trials("completed")
    X = torch.tensor([t.x for t in trials])
    return X, [t.metadata for t in trials[6:]]


def test_campaign_sebo_is_sparser_than_qlognei(fast_optimizer):
    _, dense = run("qlognei", fast_optimizer)
    X, sparse = run({"name": "sebo", **SMALL}, fast_optimizer, budget=10)
    mean_changed = lambda metas: sum(m["num_changed"] for m in metas) / len(metas)  # noqa: E731
    assert mean_changed(sparse) < mean_changed(dense) - 5
    for meta in sparse:
        assert meta["acquisition"] == "sebo" and meta["xi"] == meta["num_changed"]
        assert {"a_values", "restart", "snapped"} <= set(meta)
    bounds = torch.stack([torch.zeros(15), torch.ones(15)])
    for i in range(1, X.shape[0]):  # nothing was proposed twice
        assert not is_duplicate(X[i : i + 1], X[:i], bounds, 1e-6)


@pytest.fixture(scope="module")
def branin15_saas():
    problem = get_problem("branin-15d", target="zero")
    X = draw_sobol_samples(problem.bounds, n=8, q=1, seed=0).squeeze(1)
    Y = problem.evaluate(X)
    model = fit_surrogate(
        {"name": "map-saas", "num_taus": 2, "seed": 0}, X, Y, bounds=problem.bounds
    )
    return problem, model, History(X, Y, seed=1, t=8)


@pytest.mark.parametrize("name", ["sebo", "ir", "er"])
def test_ensemble_surrogate(name, branin15_saas, fast_optimizer):
    # MAP-SAAS: the posterior has an extra ensemble dimension, averaged by the acquisitions.
    problem, model, history = branin15_saas
    policy = make_policy(name, SMALL, fast_optimizer)
    acqf = policy.build(model, history, problem, q=1)
    assert acqf(history.X[:5].unsqueeze(-2)).shape == (5,)
    proposal = policy.propose(model, history, problem, q=1)
    assert proposal.X.shape == (1, 15)
    # the pick is scored by the exact acquisition averaged over the members, and beats the
    # target and every evaluated point under it
    with torch.no_grad():
        value = float(acqf(proposal.X.unsqueeze(-2)))
        others = acqf(torch.cat([problem.default_point[None], history.X]).unsqueeze(-2))
    assert acqf.model.batch_shape == torch.Size([2])  # num_taus members, averaged over
    assert value == pytest.approx(proposal.metadata[0]["acq_value"], rel=1e-9)
    assert value >= float(others.max())


def test_reference_point_takes_the_largest_sparsity_and_infers_only_r_f(branin15, fast_optimizer):
    """SEBO paper: r_xi is the largest possible xi. L0 on branin-15d: 15 changed coordinates;
    with dimension 0 fixed at the target and dimension 4 fixed elsewhere, 13 + 1 = 14."""
    problem, model, history = branin15
    measure = SEBO().make_measure(problem)
    observed_xi = measure.exact_value(history.X)
    for options, fixed, expected in (
        ({}, None, 15.0),
        ({}, {0: 0.0, 4: 0.7}, 14.0),
        ({"penalty": "l1"}, None, 15.0),  # target 0 in the unit box: every coordinate at 1
    ):
        fast_optimizer.fixed_features = fixed
        policy = SEBO(optimizer=fast_optimizer, **SMALL, **options)
        ref = policy.reference_point(history, problem, policy.make_measure(problem))
        assert ref[1] == pytest.approx(expected)
    # r_f is still inferred: BoTorch's nadir-minus-10% on the observed (f, -xi) front
    Yxi = torch.cat([history.Y[:, :1], -observed_xi.unsqueeze(-1)], dim=-1)
    assert ref[0] == pytest.approx(float(infer_reference_point(Yxi[is_non_dominated(Yxi)])[0]))
    fast_optimizer.fixed_features = None
    proposal = SEBO(optimizer=fast_optimizer, **SMALL).propose(model, history, problem, q=1)
    assert proposal.metadata[0]["ref_point"][1] == 15.0


def test_the_closed_form_front_is_the_posterior_mean_on_noisy_data(fast_optimizer):
    problem = get_problem("branin-15d", target="zero", noise_std=5.0)
    X = draw_sobol_samples(problem.bounds, n=10, q=1, seed=0).squeeze(1)
    X[:5, ::2] = 0.0  # half the points change only 7 of 15 coordinates: below r_xi = 15
    torch.manual_seed(0)
    Y = problem.evaluate(X)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    history = History(X, Y, seed=0, t=10)
    with torch.no_grad():
        mean = model.posterior(X).mean[:, 0]
    assert not torch.allclose(mean, Y[:, 0], atol=0.5)  # the GP smooths the noise
    fronts = {}
    for front in ("posterior_mean", "observed"):
        policy = SEBO(front=front, optimizer=fast_optimizer, **SMALL)
        acqf = policy.build(model, history, problem, q=1)
        source = mean if front == "posterior_mean" else Y[:, 0]
        heights = acqf.heights[1:]  # the front's objective values (after r_f)
        assert heights.numel() >= 1
        assert all(torch.isclose(source, h, atol=1e-9).any() for h in heights)
        fronts[front] = heights
    assert not torch.equal(fronts["posterior_mean"], fronts["observed"])
    with pytest.raises(ConfigError, match="front"):
        SEBO(front="best")


def test_homotopy_starts_are_sparse_and_near_the_front(branin15, fast_optimizer):
    """Half Sobol points with a random subset at the target, half perturbed front points."""
    problem, model, history = branin15
    policy = SEBO(optimizer=fast_optimizer, num_restarts_homotopy=20)
    measure = policy.make_measure(problem)
    starts = policy.homotopy_starts(history, problem, measure, seed=0)
    assert starts.shape == (20, 1, 15)
    X = starts.squeeze(1)
    assert ((X >= problem.bounds[0]) & (X <= problem.bounds[1])).all()
    at_target = (X == measure.target).sum(-1)
    assert (
        at_target > 0
    ).sum() >= 10 and at_target.float().mean() < 12  # sparse, mostly not all target
    assert torch.equal(starts, policy.homotopy_starts(history, problem, measure, seed=0))
    # the second half lies within a few percent of the range of observed points (or on the target)
    near = (X[10:, None, :] - history.X[None]).abs() <= 0.25
    on_target = X[10:, None, :] == measure.target
    assert ((near | on_target).all(-1)).any(-1).all()
    proposal = policy.propose(model, history, problem, q=1)
    assert 1 <= proposal.metadata[0]["num_traced"] <= 20  # restarts alive at the end
    with pytest.raises(ConfigError, match="starts"):
        SEBO(starts="grid")


def test_cheap_homotopy_freezes_still_restarts_and_lands_where_the_full_one_does():
    # Figure 2: the full homotopy optimizes all 30 values of a; the cheap one (default)
    # stops re-optimizing restarts that no longer move, jumps to the final a and polishes
    # there, and proposes the same sparse optimum x = 0.5.
    problem, model, history = figure2([0.0, 0.25, 0.75, 1.0])
    common = dict(ref_point=FIG2_REF, optimizer=FIG2_OPT, starts="sobol")
    full = SEBO(freeze_tol=0.0, homotopy_maxiter=None, **common).propose(
        model, history, problem, q=1
    )
    cheap = SEBO(**common).propose(model, history, problem, q=1)
    assert len(full.metadata[0]["a_values"]) == 30
    assert len(cheap.metadata[0]["a_values"]) < 30
    assert (
        cheap.metadata[0]["a_values"][-1] == full.metadata[0]["a_values"][-1] == pytest.approx(1e-3)
    )
    assert cheap.X.item() == full.X.item() == 0.5
    assert cheap.metadata[0]["acq_value"] == pytest.approx(full.metadata[0]["acq_value"])


def test_homotopy_restarts_follow_the_optimizer_and_a_different_count_warns(recwarn):
    policy = SEBO(optimizer=OptimizerSettings(num_restarts=4))
    assert policy.num_restarts_homotopy == 4 and not recwarn.list
    with pytest.warns(UserWarning, match="num_restarts_homotopy=20 .* num_restarts=4"):
        SEBO(num_restarts_homotopy=20, optimizer=OptimizerSettings(num_restarts=4))
    SEBO(
        penalty="l1", num_restarts_homotopy=20, optimizer=OptimizerSettings(num_restarts=4)
    )  # no homotopy
    assert not recwarn.list


class FirstCoordinateOnly(SyntheticTestFunction):
    """``f(x) = -(x_0 - 0.3)^2`` on ``[0, 1]^3``: the last two inputs are irrelevant."""

    dim = 3
    continuous_inds = [0, 1, 2]
    _bounds = [(0.0, 1.0)] * 3
    _optimal_value = 0.0

    def _evaluate_true(self, X):
        return -((X[..., 0] - 0.3) ** 2)


def test_near_repeats_differ_only_where_the_surrogate_sees_no_effect():
    problem = Problem(
        "first-only", FirstCoordinateOnly(), default_point=torch.zeros(3), relevant_dims=(0,)
    )
    X = draw_sobol_samples(problem.bounds, n=16, q=1, seed=0).squeeze(1)
    torch.manual_seed(0)
    model = fit_surrogate("map-saas", X, problem.evaluate(X), bounds=problem.bounds)
    seen = X[:1]
    candidates = torch.stack(
        [
            seen[0],  # the same point
            torch.cat([seen[0, :1], 1 - seen[0, 1:]]),  # same x_0, irrelevant inputs moved
            torch.cat([seen[0, :1] + 0.2, seen[0, 1:]]),  # x_0 moved
        ]
    ).clamp(0, 1)
    policy = SEBO()
    duplicate, near = policy.repeats(candidates, seen, problem, model)
    assert duplicate.tolist() == [True, False, False]
    assert near.tolist() == [True, True, False]
    duplicate, near = SEBO(repeat_tol=0.0).repeats(candidates, seen, problem, model)
    assert near.tolist() == [False, False, False]
    assert SEBO().repeats(candidates, seen, problem, None)[1].tolist() == [False, False, False]


def test_homotopy_jumps_to_the_final_a_when_pruning_leaves_only_frozen_restarts(monkeypatch):
    """A restart that moved onto a frozen one is pruned; if that leaves only frozen restarts
    the trace jumps to the final a (it used to call the optimizer with zero restarts)."""
    import dsbo.acquisition.sparsity_policy as sebo_module

    problem, model, history = figure2([0.0, 0.25, 0.75, 1.0])
    policy = SEBO(ref_point=FIG2_REF, optimizer=FIG2_OPT, starts="sobol")
    calls = {"n": 0}

    def keep_only_frozen(U, values, tol=1e-4):
        calls["n"] += 1  # from the second value of a on, keep only the frozen restart 0
        return torch.arange(U.shape[0]) if calls["n"] == 1 else torch.tensor([0])

    monkeypatch.setattr(sebo_module, "prune_restarts", keep_only_frozen)
    original = OptimizerSettings.maximize

    def maximize(self, acqf, bounds, q, seed, **kwargs):
        X, values = original(self, acqf, bounds, q, seed, **kwargs)
        starts = kwargs.get("batch_initial_conditions")
        if starts is not None and calls["n"] == 1:  # first homotopy step: restart 0 stays put
            X = X.clone()
            X[0] = starts[0]
        return X, values

    monkeypatch.setattr(OptimizerSettings, "maximize", maximize)
    proposal = policy.propose(model, history, problem, q=1)
    a_values = proposal.metadata[0]["a_values"]
    assert a_values[-1] == pytest.approx(1e-3) and len(a_values) == 4  # start, steps 1-2, final
    assert proposal.metadata[0]["num_traced"] == 1
