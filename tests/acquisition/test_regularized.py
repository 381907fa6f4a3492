"""IR and ER (SEBO paper, section 3): the penalty inside vs outside the improvement."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.analytic import ConstrainedExpectedImprovement, ExpectedImprovement
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.monte_carlo import qNoisyExpectedImprovement
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import History, make_policy
from dsbo.acquisition.regularized import (
    ExternalRegularization,
    InternalRegularization,
    LogPenalizedExpectedImprovement,
)
from dsbo.acquisition.sparsity import smooth_l0
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate

SMALL = dict(num_steps=4, num_restarts_homotopy=2)


@pytest.fixture(scope="module")
def branin15():
    problem = get_problem("branin-15d", target="zero")
    X = draw_sobol_samples(problem.bounds, n=8, q=1, seed=0).squeeze(1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    return problem, model, History(X, Y, seed=3, t=8)


def test_ir_penalizes_inside_the_improvement(branin15):
    problem, model, history = branin15
    policy = InternalRegularization(penalty_weight=0.1, acquisition_function="qlognei", **SMALL)
    acqf = policy.build(model, history, problem, q=1)  # exact L0 for the final choice
    assert isinstance(acqf, qLogNoisyExpectedImprovement)
    # The MC objective is g = (f - m_y) / s_y - lambda * xi: the incumbent is the best g.
    Z = torch.randn(4, 3, 5, 1)
    X = torch.rand(3, 5, 15)
    X[0, 0] = 0.0
    y = history.Y[:, 0]
    changes = (X >= 1e-3).sum(-1).to(X)
    expected = (Z[..., 0] - y.mean()) / y.std() - 0.1 * changes
    torch.testing.assert_close(acqf.objective(Z, X), expected)


def monte_carlo_ir(model, X, measure, mean, std, weight, best_g, n=200_000):
    """E[(g - g*)_+] for g = (f - mean) / std - weight * xi, by sampling the posterior (for an
    ensemble the samples of every member together are draws of the mixture)."""
    with torch.no_grad():
        f = model.posterior(X).rsample(torch.Size([n]))[..., 0, 0]  # n x batch (x members)
    xi = measure(X).squeeze(-1)
    if f.dim() == 3:
        xi = xi.unsqueeze(-1)
    improvement = ((f - mean) / std - weight * xi - best_g).clamp_min(0.0)
    return improvement.reshape(n, X.shape[0], -1).mean(dim=(0, 2))


@pytest.mark.parametrize("surrogate", ["gp", "map-saas"])
def test_closed_form_ir_equals_monte_carlo(branin15, surrogate):
    problem, _, history = branin15
    torch.manual_seed(0)
    model = fit_surrogate(surrogate, history.X, history.Y, bounds=problem.bounds)
    policy = InternalRegularization(penalty_weight=0.1, **SMALL)
    measure = policy.make_measure(problem)
    context = policy.prepare(model, history, problem, 1, measure)
    measure.a.fill_(0.1)
    acqf = policy.acquisition(model, history, problem, measure, None, context)
    assert isinstance(acqf, LogPenalizedExpectedImprovement)
    assert context["metadata"]["acquisition_function"] == "ei"
    mean, std = context["mean"], context["std"]
    y = history.Y[:, 0]
    best_g = ((y - mean) / std - 0.1 * measure(history.X)).max()
    assert acqf.best_g == pytest.approx(float(best_g))
    # candidates near the incumbents, where the improvement is not negligible
    g = torch.Generator().manual_seed(1)
    X = (history.X[:4] + 0.05 * torch.randn(4, 15, generator=g, dtype=history.X.dtype)).clamp(0, 1)
    X[:2, 5:] = 0.0  # two sparse candidates
    X = X.unsqueeze(-2)
    torch.manual_seed(2)
    expected = monte_carlo_ir(model, X, measure, mean, std, 0.1, float(best_g))
    closed = acqf(X).exp()
    torch.testing.assert_close(closed, expected, rtol=0.03, atol=1e-4)


def test_ir_uses_monte_carlo_for_batches_and_on_request(branin15):
    problem, model, history = branin15
    measure = InternalRegularization().make_measure(problem)
    for policy, q in (
        (InternalRegularization(), 2),
        (InternalRegularization(acquisition_function="qlognei"), 1),
    ):
        context = policy.prepare(model, history, problem, q, measure)
        acqf = policy.acquisition(model, history, problem, measure, None, context)
        assert isinstance(acqf, qLogNoisyExpectedImprovement)
        assert context["metadata"]["acquisition_function"] == "qlognei"
    with pytest.raises(ConfigError, match="acquisition_function"):
        InternalRegularization(acquisition_function="ucb")


def fitted_pressure_vessel(n: int):
    """A GP on ``n`` Sobol points of the constrained pressure-vessel problem."""
    problem = get_problem("pressure-vessel")
    X = draw_sobol_samples(problem.bounds, n=n, q=1, seed=1).squeeze(1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    return problem, X, Y, fit_surrogate("gp", X, Y, bounds=problem.bounds)


def test_closed_form_ir_with_constraints_adds_log_feasibility(fast_optimizer):
    problem, X, Y, model = fitted_pressure_vessel(16)
    history = History(X, Y)
    policy = InternalRegularization(optimizer=fast_optimizer)
    assert problem.is_feasible(Y).any()  # the incumbent g* is a feasible point
    acqf = policy.build(model, history, problem, q=1)
    assert isinstance(acqf, LogPenalizedExpectedImprovement)
    assert acqf.constraint_indices == [1, 2, 3, 4]
    values = acqf(X.unsqueeze(-2))
    assert torch.isfinite(values).all()
    unconstrained = LogPenalizedExpectedImprovement(
        model, acqf.sparsity, acqf.best_g, acqf.mean, acqf.std, acqf.penalty_weight
    )(X.unsqueeze(-2))
    # independent outputs: log alpha = log EI(f - lambda xi) + sum_j log Phi(mu_j / sigma_j)
    with torch.no_grad():
        posterior = model.posterior(X)
    mu, sigma = posterior.mean, posterior.variance.sqrt()
    log_feasible = torch.special.log_ndtr(mu[:, 1:5] / sigma[:, 1:5]).sum(-1)
    assert torch.allclose(values, unconstrained + log_feasible, rtol=1e-6, atol=1e-8)
    assert (log_feasible < -1e-3).any()  # some points are not surely feasible: the term matters


@pytest.mark.filterwarnings("ignore::botorch.exceptions.warnings.NumericsWarning")
def test_er_penalizes_outside_ei(branin15):
    problem, model, history = branin15
    policy = ExternalRegularization(penalty_weight=0.1, **SMALL)
    measure = policy.make_measure(problem)
    context = policy.prepare(model, history, problem, 1, measure)
    measure.a.fill_(0.05)
    acqf = policy.acquisition(model, history, problem, measure, None, context)
    assert isinstance(acqf.raw_acqf, ExpectedImprovement)
    X = torch.rand(6, 1, 15, generator=torch.Generator().manual_seed(0))
    ei = ExpectedImprovement(model, best_f=history.Y[:, 0].max())(X)
    xi = smooth_l0(X, torch.zeros(15), problem.bounds, 0.05).squeeze(-1)
    # EI / s_y - lambda xi, scaled by s_y: EI - (lambda s_y) xi.
    torch.testing.assert_close(acqf(X), ei - 0.1 * history.Y[:, 0].std() * xi)
    batch = policy.acquisition(
        model, history, problem, measure, X[0], {**context, "analytic": False}
    )
    assert isinstance(batch.raw_acqf, qNoisyExpectedImprovement)


def test_er_with_constraints_uses_constrained_ei(fast_optimizer):
    problem, X, Y, model = fitted_pressure_vessel(10)
    acqf = ExternalRegularization(optimizer=fast_optimizer).build(
        model, History(X, Y), problem, q=1
    )
    assert isinstance(acqf.raw_acqf, ConstrainedExpectedImprovement)
    assert torch.isfinite(acqf(X[:3].unsqueeze(-2))).all()


def test_l1_penalty_and_batches(branin15, fast_optimizer):
    problem, model, history = branin15
    for name in ("ir", "er"):
        policy = make_policy(name, {"penalty": "l1", "penalty_weight": 0.05}, fast_optimizer)
        proposal = policy.propose(model, history, problem, q=2)
        assert proposal.X.shape == (2, 15) and not torch.equal(proposal.X[0], proposal.X[1])
        assert all(m["penalty"] == "l1" and "a_values" not in m for m in proposal.metadata)


@pytest.mark.parametrize(
    "name, options, match",
    [
        ("ir", {"penalty": "group"}, "penalty"),
        ("er", {"penalty_weight": -1.0}, "penalty_weight"),
        ("ir", {"groups": [[0]]}, "groups"),
    ],
)
def test_options_are_checked(name, options, match):
    with pytest.raises(ConfigError, match=match):
        make_policy(name, options)


def test_multi_objective_is_refused_with_a_pointer_to_sebo():
    problem = get_problem("branin-currin")
    X = draw_sobol_samples(problem.bounds, n=4, q=1, seed=0).squeeze(1)
    policy = InternalRegularization()
    with pytest.raises(ConfigError, match="2 objectives.*sebo"):
        policy.prepare(
            None, History(X, problem.evaluate(X)), problem, 1, policy.make_measure(problem)
        )


def run(acquisition, optimizer):
    problem = get_problem("branin-15d", target="zero")
    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition=acquisition,
        budget=9,
        n_init=6,
        optimizer=optimizer,
        seed=0,
    )
    campaign.run()
    metas = [t.metadata for t in campaign.store.trials("completed")[6:]]
    return sum(m["num_changed"] for m in metas) / len(metas), metas


def test_campaign_ir_and_er_are_sparser_than_qlognei(fast_optimizer):
    dense, _ = run("qlognei", fast_optimizer)
    for name in ("ir", "er"):
        sparse, metas = run({"name": name, "penalty_weight": 0.1, **SMALL}, fast_optimizer)
        assert sparse < dense - 5, name
        assert all(m["acquisition"] == name and len(m["a_values"]) == 4 for m in metas)
