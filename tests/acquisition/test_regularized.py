"""IR and ER (SEBO paper, section 3): the penalty inside vs outside the improvement."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.analytic import ConstrainedExpectedImprovement, ExpectedImprovement
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.monte_carlo import qNoisyExpectedImprovement
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import History, make_policy
from dsbo.acquisition.regularized import ExternalRegularization, InternalRegularization
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.sparsity import smooth_l0
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
    policy = InternalRegularization(penalty_weight=0.1, **SMALL)
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
    problem = get_problem("pressure-vessel")
    X = draw_sobol_samples(problem.bounds, n=10, q=1, seed=1).squeeze(1)
    Y = problem.evaluate(X)
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
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
    campaign = Campaign(problem, surrogate="gp", acquisition=acquisition, budget=9, n_init=6,
                        optimizer=optimizer, seed=0)  # fmt: skip
    campaign.run()
    metas = [t.metadata for t in campaign.store.trials("completed")[6:]]
    return sum(m["num_changed"] for m in metas) / len(metas), metas


def test_campaign_ir_and_er_are_sparser_than_qlognei(fast_optimizer):
    dense, _ = run("qlognei", fast_optimizer)
    for name in ("ir", "er"):
        sparse, metas = run({"name": name, "penalty_weight": 0.1, **SMALL}, fast_optimizer)
        assert sparse < dense - 5, name
        assert all(m["acquisition"] == name and len(m["a_values"]) == 4 for m in metas)
