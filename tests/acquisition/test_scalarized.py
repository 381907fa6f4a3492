"""MOBO-RS (Paria thesis ch. 2): scalarizations, weight priors, TS/UCB proposals, Bayes regret."""

from __future__ import annotations

import math

import pytest
import torch
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import History, OptimizerSettings, make_policy
from dsbo.acquisition.scalarized import (
    ObjectiveScale,
    Scalarization,
    WeightPrior,
    bayes_regret,
    chebyshev_scalarization,
    hypervolume_scalarization,
    linear_scalarization,
    ucb_beta,
)
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate

Y = torch.tensor([[0.2, 0.9], [0.6, 0.5], [1.0, 0.1]])
W = torch.tensor([0.25, 0.75])


def test_linear_scalarization_is_the_weighted_sum():
    assert torch.allclose(linear_scalarization(Y, W), 0.25 * Y[:, 0] + 0.75 * Y[:, 1])


def test_chebyshev_with_alpha_zero_is_the_thesis_definition():
    z = torch.tensor([0.1, -0.2])
    expected = torch.stack(
        [torch.min(W * (y - z)) for y in Y]
    )  # eq. 2.8: min_k lambda_k (y_k - z_k)
    assert torch.allclose(chebyshev_scalarization(Y, W, z), expected)
    augmented = chebyshev_scalarization(Y, W, z, augmentation=0.05)
    assert torch.allclose(augmented, expected + 0.05 * (W * (Y - z)).sum(-1))


def test_hypervolume_scalarization_formula_and_its_mean_is_the_dominated_area():
    z = torch.zeros(2)
    expected = torch.stack([torch.clamp((y - z) / W, min=0).min() ** 2 for y in Y])
    assert torch.allclose(hypervolume_scalarization(Y, W, z), expected)
    # Golovin & Zhang: HV(Y) = c_K E_lambda[max_y s_lambda(y)], lambda uniform on the positive
    # unit sphere, c_2 = pi / 4 for K = 2: the unit square [0, 1]^2 (y = (1, 1)) has area 1.
    g = torch.randn(200_000, 2, generator=torch.Generator().manual_seed(0)).abs()
    lam = g / g.norm(dim=-1, keepdim=True)
    estimate = math.pi / 4 * hypervolume_scalarization(torch.ones(1, 2), lam).mean()
    assert estimate == pytest.approx(1.0, rel=0.01)


def test_scalarizations_are_monotone():
    torch.manual_seed(0)
    for name in ("linear", "chebyshev", "hypervolume"):
        s = Scalarization(name)
        y = torch.rand(50, 3) + 0.1
        better = y + torch.rand(50, 3) * 0.1 + 1e-3
        w = s.flat_weights(50, 3, torch.Generator().manual_seed(1))
        assert (s(better, w) > s(y, w)).all(), name


def test_flat_prior_lies_on_the_simplex_or_sphere():
    g = torch.Generator().manual_seed(0)
    w = Scalarization("chebyshev").flat_weights(1000, 3, g)
    assert (w > 0).all() and torch.allclose(w.sum(-1), torch.ones(1000))
    assert w.mean(0) == pytest.approx(torch.full((3,), 1 / 3), abs=0.03)  # Dirichlet(1, 1, 1)
    v = Scalarization("hypervolume").flat_weights(100, 3, g)
    assert torch.allclose(v.norm(dim=-1), torch.ones(100))


def test_box_prior_follows_the_thesis_heuristic():
    scale = ObjectiveScale(torch.zeros(2), torch.ones(2))
    prior = WeightPrior.parse({"box": [[0.2, 0.4], [0.8, 1.0]]}, 2)
    g = torch.Generator().manual_seed(0)
    lin, region = prior.sample(500, Scalarization("linear"), scale, g)
    assert (region == 0).all()
    ratio = lin[:, 0] / lin[:, 1]  # u_1 / u_2 with u_k ~ U(a_k, b_k)
    assert ratio.min() >= 0.2 / 1.0 - 1e-9 and ratio.max() <= 0.4 / 0.8 + 1e-9
    tch, _ = prior.sample(500, Scalarization("chebyshev"), scale, torch.Generator().manual_seed(0))
    assert torch.allclose(
        tch, (1 / lin) / (1 / lin).sum(-1, keepdim=True)
    )  # lambda_tch = (1/lambda) / ||1/lambda||_1


def test_mixture_prior_draws_each_region_by_weight():
    prior = WeightPrior.parse(
        {"mixture": [{"box": [[0, 1], [0, 1]], "weight": 3}, {"box": [[1, 2], [1, 2]]}]}, 2
    )
    scale = ObjectiveScale(torch.zeros(2), 2 * torch.ones(2))
    _, region = prior.sample(4000, Scalarization("linear"), scale, torch.Generator().manual_seed(0))
    assert (region == 0).double().mean() == pytest.approx(0.75, abs=0.03)


@pytest.mark.parametrize(
    "spec, match",
    [
        ({"box": [[1.0, 0.0], [0.0, 1.0]]}, r"box\[0\]: lower 1 > upper 0"),
        ({"box": [[0.0, 1.0]]}, "one \\[lower, upper\\] pair per objective"),
        ({"box": [[0, 1], [0, float("nan")]]}, "finite"),
        ({"mixture": []}, "non-empty list"),
        ({"mixture": [{"box": [[0, 1], [0, 1]], "weight": -1}]}, "weight must be"),
        ({"cone": 1}, "must be 'flat'"),
    ],
)
def test_bad_priors_are_named(spec, match):
    with pytest.raises(ConfigError, match=match):
        WeightPrior.parse(spec, 2)


def test_bad_policy_options_are_named():
    with pytest.raises(ConfigError, match="scalarization"):
        make_policy("mobo-rs", {"scalarization": "lexicographic"})
    with pytest.raises(ConfigError, match="strategy"):
        make_policy("mobo-rs", {"strategy": "ei"})
    with pytest.raises(ConfigError, match="augmentation"):
        make_policy("mobo-rs", {"augmentation": -0.1})
    with pytest.raises(ConfigError, match="beta"):
        make_policy("mobo-rs", {"beta": 0})
    policy = make_policy("mobo-rs", {"reference": [0.0, 0.0, 0.0]})
    with pytest.raises(ConfigError, match="reference needs 2 values"):
        policy.check(get_problem("circle-front"))
    with pytest.raises(ConfigError, match="needs >= 2 objectives"):
        make_policy("mobo-rs").check(get_problem("branin"))
    with pytest.raises(
        ConfigError, match="box"
    ):  # a wrong prior fails before anything is evaluated
        Campaign(
            get_problem("circle-front"),
            surrogate="gp",
            acquisition={"name": "mobo-rs", "prior": {"box": [[0, 1]]}},
            budget=6,
            n_init=3,
        )


def test_ucb_beta_is_the_thesis_schedule():
    assert ucb_beta(10) == pytest.approx(0.125 * math.log(21))


@pytest.fixture(scope="module")
def circle_model():
    problem = get_problem("circle-front")
    X = draw_sobol_samples(problem.bounds, n=40, q=1, seed=0).squeeze(1)
    Y = problem.evaluate_true(X)
    torch.manual_seed(0)
    return problem, fit_surrogate("gp", X, Y, bounds=problem.bounds), History(X, Y, seed=3, t=40)


@pytest.mark.parametrize("strategy", ["ts", "ucb"])
@pytest.mark.parametrize("scalarization", ["linear", "chebyshev"])
def test_proposals_land_in_the_requested_region_of_a_known_front(
    circle_model, strategy, scalarization
):
    """On the quarter-circle front, a box around the direction (0.3, 0.95) (linear: lambda ~ u,
    optimum f ~ lambda) or its Chebyshev counterpart puts the proposals near that direction."""
    problem, model, history = circle_model
    policy = make_policy(
        "mobo-rs",
        {
            "strategy": strategy,
            "scalarization": scalarization,
            "prior": {"box": [[0.25, 0.35], [0.9, 1.0]]},
        },
        OptimizerSettings(num_restarts=4, raw_samples=128, maxiter=50),
    )
    angles = []
    for seed in range(4):
        h = History(history.X, history.Y, seed=seed, t=history.t)
        proposal = policy.propose(model, h, problem, 1)
        f = problem.evaluate_true(proposal.X)[0]
        angles.append(math.degrees(math.atan2(f[1], f[0])))
        assert len(proposal.metadata[0]["weights"]) == 2 and proposal.metadata[0]["region"] == 0
    # target directions: atan(0.9/0.35) = 68.7 deg to atan(1.0/0.25) = 76.0 deg
    assert 60 <= sum(angles) / len(angles) <= 84, angles


def test_ts_on_a_surrogate_without_sample_paths_uses_a_sobol_draw(circle_model):
    problem, _, history = circle_model
    torch.manual_seed(0)
    model = fit_surrogate("map-saas", history.X[:12], history.Y[:12], bounds=problem.bounds)
    policy = make_policy("mobo-rs", {"n_candidates": 128})
    proposal = policy.propose(
        model, History(history.X[:12], history.Y[:12], seed=1, t=12), problem, 2
    )
    assert proposal.X.shape == (2, 2)
    assert {m["maximized_on"] for m in proposal.metadata} == {"sobol set"}
    assert (
        proposal.metadata[0]["weights"] != proposal.metadata[1]["weights"]
    )  # one lambda per point


def test_bayes_regret_is_zero_on_the_front_and_positive_off_it():
    problem = get_problem("circle-front")
    front = problem.metadata["pareto_front"]()
    prior, s = WeightPrior(2), Scalarization("chebyshev")
    scale = ObjectiveScale.for_problem(problem)
    on = bayes_regret(front, prior, s, scale, front=front)
    off = bayes_regret(0.5 * front[::100], prior, s, scale, front=front)
    clustered = bayes_regret(
        front[:20], prior, s, scale, front=front
    )  # Pareto optimal but clustered
    assert on["regret"] == pytest.approx(0.0, abs=1e-12)
    assert off["regret"] > 0.05 and clustered["regret"] > 0.05  # fig. 2.2: off the front; clustered
    assert off["utility"] < on["utility"]


def test_every_multi_objective_campaign_reports_its_bayes_regret(fast_optimizer):
    problem = get_problem("circle-front")
    for acquisition in ("qparego", {"name": "mobo-rs", "strategy": "ucb"}):
        campaign = Campaign(
            problem,
            surrogate="gp",
            acquisition=acquisition,
            budget=6,
            n_init=4,
            optimizer=fast_optimizer,
        )
        result = campaign.run()
        assert result.bayes_regret["regret"] >= 0 and result.bayes_regret["num_weights"] == 1000
        assert result.bayes_regret["prior"] == "flat"
        assert "weights" in campaign.store.trials()[-1].metadata
    single = Campaign(get_problem("branin"), surrogate="gp", budget=3, n_init=3).run()
    assert single.bayes_regret is None


def test_mobo_rs_preferences_are_written_in_the_objectives_own_directions():
    """A minimized loss's box [0, 0.5] (its values) is [-0.5, 0] in the stored, maximized sense."""
    problem = get_problem(
        "black-box", parameters={"x": [0.0, 1.0]}, objectives={"loss": "min", "acc": "max"}
    )
    policy = make_policy(
        "mobo-rs", {"prior": {"box": [[0.0, 0.5], [0.8, 0.9]]}, "reference": [1.0, 0.5]}
    )
    [region] = policy.prior(problem).regions
    assert region.lower.tolist() == [-0.5, 0.8] and region.upper.tolist() == [0.0, 0.9]
    assert policy.stored_reference(problem).tolist() == [-1.0, 0.5]
