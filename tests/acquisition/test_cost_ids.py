"""CostIDS (Paria thesis ch. 4), the cost models and the cost-aware baselines."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import History, OptimizerSettings, make_policy
from dsbo.acquisition.cost_aware import CostModel
from dsbo.acquisition.cost_ids import ObjectiveUCB, information_ratio
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.problems.cost_aware import training_cost
from dsbo.surrogates import fit_surrogate

OPT = OptimizerSettings(num_restarts=4, raw_samples=256, maxiter=50)
#: For the tests of invalid costs and budgets (each polishing step calls the cost function).
SMALL = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=25)


@pytest.fixture(scope="module")
def fitted():
    problem = get_problem("cost-branin")
    X = draw_sobol_samples(problem.bounds, n=24, q=1, seed=0).squeeze(1)
    Y = problem.evaluate_true(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    return problem, model, History(X, Y, seed=5, t=24, eval_times=torch.full((24,), 0.5))


def propose(fitted, **options):
    problem, model, history = fitted
    return make_policy("cost-ids", options, OPT).propose(model, history, problem, 1)


def test_information_ratio_is_at_least_beta_and_beta_at_the_ucb_maximizer(fitted):
    problem, model, history = fitted
    beta = 0.4
    x_ucb, U = OPT.maximize(ObjectiveUCB(model, beta), problem.bounds, 1, 0)
    X = draw_sobol_samples(problem.bounds, n=512, q=1, seed=1).squeeze(1)
    with torch.no_grad():
        U = max(float(U), float(ObjectiveUCB(model, beta)(X.unsqueeze(1)).max()))
        R = information_ratio(model, X, U)
        # R_t(x) = (U - mu)^2 / sigma^2 >= beta since U >= mu + sqrt(beta) sigma everywhere
        assert (R >= beta * (1 - 1e-6)).all()
        r_star = information_ratio(
            model, x_ucb.reshape(1, -1), float(ObjectiveUCB(model, beta)(x_ucb.reshape(1, 1, -1)))
        )
    assert float(r_star) == pytest.approx(beta, rel=1e-9)


def test_rho_one_is_the_ucb_maximizer(fitted):
    problem, model, history = fitted
    proposal = propose(fitted, rho=1.0)
    beta = proposal.metadata[0]["beta"]
    x_ucb, _ = OPT.maximize(ObjectiveUCB(model, beta), problem.bounds, 1, history.seed)
    assert proposal.metadata[0]["chose_ucb_maximizer"]
    assert torch.allclose(proposal.X, x_ucb.reshape(1, -1))
    assert proposal.metadata[0]["information_ratio"] == pytest.approx(beta, rel=1e-6)


def test_constant_cost_is_the_ucb_maximizer(fitted):
    """With lambda constant the objective is R_t, minimized (R*_t = beta_t) at the UCB maximizer."""
    problem, model, history = fitted
    flat = get_problem("cost-branin")
    flat.cost_function = lambda X: torch.full(X.shape[:-1], 3.0, dtype=X.dtype)
    policy = make_policy("cost-ids", {"rho": 4.0}, OPT)
    ucb = make_policy("cost-ids", {"rho": 1.0}, OPT).propose(model, history, flat, 1)
    proposal = policy.propose(model, history, flat, 1)
    assert proposal.metadata[0]["chose_ucb_maximizer"]
    assert torch.allclose(proposal.X, ucb.X)


def test_larger_rho_picks_cheaper_points_within_its_ratio(fitted):
    costs = []
    for rho in (1.0, 2.0, 8.0, 32.0):
        meta = propose(fitted, rho=rho).metadata[0]
        assert meta["information_ratio"] <= rho * meta["beta"] * (
            1 + 1e-6
        )  # the constraint of eq. 4.5
        costs.append(meta["predicted_cost"])
    assert all(
        a >= b - 1e-9 for a, b in zip(costs, costs[1:], strict=False)
    )  # non-increasing in rho
    assert costs[0] == pytest.approx(100.0) and costs[-1] == pytest.approx(
        1.0
    )  # UCB pays the most, rho 32 the least


def test_learned_cost_model_fits_log_times(fitted):
    problem, _, history = fitted
    times = training_cost(history.X) / 10  # times proportional to the true cost
    model = CostModel("learned", problem, History(history.X, history.Y, eval_times=times))
    X = draw_sobol_samples(problem.bounds, n=64, q=1, seed=3).squeeze(1)
    predicted = model.log_cost(X).detach()
    truth = (training_cost(X) / 10).log()
    assert torch.corrcoef(torch.stack([predicted, truth]))[0, 1] > 0.95
    unknown = CostModel("learned", problem, History(history.X, history.Y))
    assert unknown.description.startswith("learned (constant")
    assert torch.allclose(unknown.cost(X), torch.ones(64, dtype=torch.double))


def test_cost_aware_baselines_propose(fitted, fast_optimizer):
    """Each baseline proposes one new point in the box, reports its acquisition value there,
    beats every evaluated point on it; the cost-aware ones (EI and MES per unit cost) pick a
    far cheaper point than their cost-blind counterparts (cost-branin's cost exp(l) spans
    1 to 100)."""
    problem, model, history = fitted
    cost = {}
    for name in ("logei", "logei-per-cost", "mes", "cost-mes"):
        policy = make_policy(name, {}, fast_optimizer)
        proposal = policy.propose(model, history, problem, 1)
        X = proposal.X
        assert X.shape == (1, 3) and torch.isfinite(X).all(), name
        problem.validate(X)
        assert ((problem.bounds[0] <= X) & (X <= problem.bounds[1])).all(), name
        assert not any(torch.allclose(X[0], x) for x in history.X), name  # a new point
        [meta] = proposal.metadata
        assert meta["acquisition"] == name
        acqf = policy.build(model, history, problem, 1)  # seeded by history.seed: the same function
        with torch.no_grad():
            at_x, at_observed = float(acqf(X.unsqueeze(0))), acqf(history.X.unsqueeze(1))
        assert math.isfinite(at_x) and meta["acq_value"] == pytest.approx(
            at_x, rel=1e-6, abs=1e-9
        ), name
        assert at_x > float(at_observed.max()), name
        cost[name] = float(training_cost(X)[0])
    assert all(1.0 - 1e-9 <= c <= 100.0 + 1e-9 for c in cost.values())
    assert cost["logei-per-cost"] < cost["logei"] / 10 and cost["cost-mes"] < cost["mes"] / 10, cost


def test_bad_options_are_named():
    with pytest.raises(ConfigError, match="rho must be a finite number >= 1"):
        make_policy("cost-ids", {"rho": 0.5})
    with pytest.raises(ConfigError, match="beta"):
        make_policy("cost-ids", {"beta": -1})
    with pytest.raises(ConfigError, match="cost="):
        make_policy("cost-ids", {"cost": "guess"})
    with pytest.raises(ConfigError, match="no cost function"):
        make_policy("cost-ids", {"cost": "known"}).check(get_problem("branin"))
    with pytest.raises(ConfigError, match="one point at a time"):
        make_policy("cost-ids").check(get_problem("cost-branin"), q=2)
    with pytest.raises(ConfigError, match="one objective"):
        make_policy("cost-ids").check(get_problem("branin-currin"))


def test_beta_schedule_and_metadata(fitted):
    meta = propose(fitted, rho=2.0, beta=0.5).metadata[0]
    assert meta["beta"] == 0.5 and meta["rho"] == 2.0 and meta["cost_model"] == "known"
    assert propose(fitted).metadata[0]["beta"] == pytest.approx(0.125 * math.log(49))


@pytest.mark.parametrize(
    "surrogate",
    [
        {"name": "neural-ensemble", "width": 32, "max_epochs": 30},
        {"name": "neural-lints", "width": 32, "max_epochs": 30},
    ],
)
def test_cost_ids_and_mobo_rs_run_on_neural_surrogates(fitted, surrogate, fast_optimizer):
    """Any Gaussian (or moment-matched ensemble) posterior serves CostIDS; MOBO-RS's TS draws
    one ensemble member (one network) per proposal."""
    problem, _, history = fitted
    name, options = surrogate["name"], {k: v for k, v in surrogate.items() if k != "name"}
    torch.manual_seed(0)
    model = fit_surrogate({"name": name, **options}, history.X, history.Y, bounds=problem.bounds)
    meta = (
        make_policy("cost-ids", {"rho": 4.0}, fast_optimizer)
        .propose(model, history, problem, 1)
        .metadata[0]
    )
    assert meta["information_ratio"] <= 4.0 * meta["beta"] * (1 + 1e-6)
    mo = get_problem("circle-front")
    X = draw_sobol_samples(mo.bounds, n=12, q=1, seed=0).squeeze(1)
    Y = mo.evaluate_true(X)
    torch.manual_seed(0)
    model = fit_surrogate({"name": name, **options}, X, Y, bounds=mo.bounds)
    proposal = make_policy("mobo-rs", {"n_candidates": 256}, fast_optimizer).propose(
        model, History(X, Y, seed=2, t=12), mo, 1
    )
    assert proposal.metadata[0]["maximized_on"] == "sobol set"
    mo.validate(proposal.X)


def _with_cost(cost_function):
    problem = get_problem("cost-branin")
    problem.cost_function = cost_function
    return problem


@pytest.mark.parametrize("rho", [2.0, 8.0])
def test_candidates_whose_cost_is_invalid_are_infeasible(fitted, rho):
    """Issue 32, item 2: a cost of 0 (log 0 = -inf) or NaN on part of the box is never the
    argmin; before the fix every proposal landed there."""
    _, model, history = fitted
    zero = _with_cost(
        lambda X: torch.where(X[..., 0] > 2.5, torch.zeros_like(X[..., 0]), torch.exp(X[..., 2]))
    )
    nan = _with_cost(
        lambda X: torch.where(
            X[..., 1] < 7.5, torch.full_like(X[..., 0], torch.nan), torch.exp(X[..., 2])
        )
    )
    for problem in (zero, nan):
        proposal = make_policy("cost-ids", {"rho": rho}, SMALL).propose(model, history, problem, 1)
        cost = float(problem.evaluation_cost(proposal.X)[0])  # raises CostError on an invalid cost
        meta = proposal.metadata[0]
        assert meta["predicted_cost"] == pytest.approx(cost) and meta["invalid_costs"] > 0


def test_a_raising_cost_function_never_escapes_the_policy(fitted):
    """Issue 32, item 2: rows where the cost function raises are infeasible; if it raises
    everywhere the policy still proposes (the campaign records the failed cost)."""
    _, model, history = fitted

    def partly(X):
        if (X[..., 0] > 2.5).any():
            raise RuntimeError("no cost model there")
        return torch.exp(X[..., 2])

    proposal = make_policy("cost-ids", {"rho": 8.0}, SMALL).propose(
        model, history, _with_cost(partly), 1
    )
    assert (
        float(proposal.X[0, 0]) <= 2.5
        and "no cost model there" in proposal.metadata[0]["cost_error"]
    )

    def broken(X):
        raise RuntimeError("cost service down")

    proposal = make_policy("cost-ids", {"rho": 8.0}, SMALL).propose(
        model, history, _with_cost(broken), 1
    )
    meta = proposal.metadata[0]
    assert (
        meta["chose_ucb_maximizer"]
        and meta["predicted_cost"] is None
        and "cost service down" in meta["cost_error"]
    )


@pytest.mark.parametrize("rho", [1.0, 8.0])
def test_cost_ids_proposes_only_what_the_budget_has_left(fitted, rho):
    """Issue 32, item 3: with History.cost_left the proposal's cost fits what is left (eq. 4.5
    on the affordable set), where the unrestricted UCB maximizer costs 100."""
    problem, model, history = fitted
    if rho == 1.0:
        assert propose(fitted, rho=rho).metadata[0]["predicted_cost"] == pytest.approx(100.0)
    poor = History(history.X, history.Y, seed=history.seed, t=history.t, cost_left=3.0)
    proposal = make_policy("cost-ids", {"rho": rho}, SMALL).propose(model, poor, problem, 1)
    meta = proposal.metadata[0]
    assert float(training_cost(proposal.X)[0]) <= 3.0 * (1 + 1e-9)
    assert meta["cost_left"] == 3.0 and meta["predicted_cost"] <= 3.0 * (1 + 1e-9)


def test_an_optimized_policy_reoptimizes_an_unaffordable_candidate(fitted, fast_optimizer):
    """Issue 32, item 3: a cost-blind policy (UCB) maximizes its acquisition over the
    affordable set when its optimum costs more than is left."""
    problem, model, history = fitted
    free = make_policy("ucb", {}, fast_optimizer).propose(model, history, problem, 1)
    assert float(training_cost(free.X)[0]) > 3.0
    poor = History(history.X, history.Y, seed=history.seed, t=history.t, cost_left=3.0)
    for name in ("ucb", "logei-per-cost"):
        proposal = make_policy(name, {}, fast_optimizer).propose(model, poor, problem, 1)
        cost = float(training_cost(proposal.X)[0])
        meta = proposal.metadata[0]
        assert cost <= 3.0 * (1 + 1e-9), name
        assert name == "logei-per-cost" or meta["affordable"] in ("polished", "raw sample")
