"""Every surrogate and policy that works on a box works on a mixed space (log float, log int,
categorical, conditional float): one BO step each, on a problem whose evaluator checks that it
only ever receives valid named values."""

import math

import pytest

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.problems import get_problem

PARAMETERS = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "width": {"type": "int", "low": 16, "high": 512, "log": True},
    "optimizer": {"type": "choice", "values": ["adam", "sgd", "rmsprop"]},
    "momentum": {"type": "float", "low": 0.0, "high": 0.99, "when": {"optimizer": "sgd"}},
}
FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20, mc_samples=16)
NEURAL = {"width": 16, "num_members": 2, "max_epochs": 5}


def _problem(objectives=("score",)):
    return get_problem(
        "black-box",
        parameters=PARAMETERS,
        objectives=list(objectives),
        target={"lr": 1e-3, "width": 64, "optimizer": "adam"},
    )


def _evaluator(problem, m=1):
    def evaluate(x):
        p = problem.params(x)
        assert 1e-4 <= p["lr"] <= 1e-1 and isinstance(p["width"], int) and 16 <= p["width"] <= 512
        assert p["optimizer"] in ("adam", "sgd", "rmsprop")
        assert ("momentum" in p) == (p["optimizer"] == "sgd")
        base = -((math.log10(p["lr"]) + 2.5) ** 2) - abs(math.log2(p["width"]) - 6) / 4
        bonus = {"adam": 0.3, "sgd": p.get("momentum", 0.0), "rmsprop": 0.0}[p["optimizer"]]
        values = [base + bonus, -abs(math.log2(p["width"]) - 8)][:m]
        return values if m > 1 else values[0]

    return evaluate


def _one_step(problem, m=1, **kwargs):
    campaign = Campaign(
        problem, budget=5, n_init=4, optimizer=FAST, evaluator=_evaluator(problem, m), **kwargs
    )
    result = campaign.run()
    bo = [t for t in campaign.store.trials() if t.generator != "sobol-init"]
    assert result.num_completed == 5 and len(bo) == 1, campaign.store.trials("failed")
    params = problem.params(bo[0].x)
    assert problem.point(params).tolist() == bo[0].x  # recorded points are exactly their values
    return bo[0]


@pytest.mark.parametrize(
    "acquisition",
    ["qlognei", "ucb", "logei", "greedy", "thompson", "logei-per-cost", "mes", "cost-ids", "sobol"],
)
def test_every_single_objective_policy_proposes_on_a_mixed_space(acquisition):
    _one_step(_problem(), surrogate="gp", acquisition=acquisition)


@pytest.mark.parametrize("acquisition", ["qlognehvi", "qparego", "mobo-rs"])
def test_multi_objective_policies_propose_on_a_mixed_space(acquisition):
    _one_step(_problem(("score", "size")), m=2, surrogate="gp", acquisition=acquisition)


@pytest.mark.parametrize(
    "surrogate",
    [
        "gp",
        "map-saas",
        "ibnn",
        {"name": "vfe", "num_inducing": 4},
        {"name": "neural-ensemble", **NEURAL},
    ],
    ids=lambda s: s if isinstance(s, str) else s["name"],
)
def test_surrogates_fit_a_mixed_space(surrogate):
    _one_step(_problem(), surrogate=surrogate, acquisition="qlognei")


def test_bonsai_and_relaxed_categoricals_on_a_mixed_space():
    optimizer = OptimizerSettings(
        num_restarts=2, raw_samples=32, maxiter=20, mc_samples=16, categorical="relax"
    )
    problem = _problem()
    campaign = Campaign(
        problem,
        surrogate="gp",
        budget=6,
        n_init=4,
        optimizer=optimizer,
        evaluator=_evaluator(problem),
        postprocess={"bonsai": {"default": {"optimizer": "adam"}}},
    )
    campaign.run()
    for trial in campaign.store.trials()[4:]:
        assert trial.status == "completed"
        assert set(trial.metadata["pruned_parameters"]) <= {"lr", "width", "optimizer", "momentum"}


def test_no_configuration_is_evaluated_twice_with_bonsai_and_conditions():
    """Resetting a categorical makes its conditional children inactive; the pruned point is checked
    for repeats after snapping, so an evaluated configuration is never proposed again."""
    space = {
        "k": {"type": "choice", "values": ["a", "b"]},
        "g": {"type": "float", "low": 0.1, "high": 10.0, "log": True, "when": {"k": "a"}},
        "x": [0.0, 1.0],
    }
    problem = get_problem("black-box", parameters=space, target={"k": "a", "g": 1.0, "x": 0.5})

    def negated_loss(x):
        p = problem.params(x)
        if p["k"] == "b":
            return -(0.3 + 0.01 * (p["x"] - 0.5) ** 2)
        return -(0.5 + (p["x"] - 0.9) ** 2 + math.log(p["g"]) ** 2)

    campaign = Campaign(
        problem,
        surrogate="gp",
        budget=10,
        n_init=4,
        optimizer=FAST,
        evaluator=negated_loss,
        postprocess={"bonsai": {}},
    )
    campaign.run()
    points = [tuple(t.x) for t in campaign.store.trials()]
    assert len(set(points)) == len(points)


def test_a_snapped_repeat_is_replaced_by_the_best_new_point():
    import torch

    from dsbo.acquisition import History
    from dsbo.acquisition.repeats import replace_repeats

    problem = get_problem(
        "black-box", parameters={"n": {"type": "int", "low": 0, "high": 9}, "x": [0.0, 1.0]}
    )
    evaluated = torch.tensor([[3.0, 0.5]], dtype=torch.double)
    history = History(X=evaluated, Y=torch.zeros(1, 1, dtype=torch.double), seed=0, t=1)

    def acqf(X):  # largest at the evaluated point
        return -((X[..., 0] - 3.0) ** 2 + (X[..., 1] - 0.5) ** 2).min(-1).values

    X, replaced, _ = replace_repeats(acqf, evaluated.clone(), history, problem, FAST, 0.0)
    assert replaced == [True] and not torch.equal(X[0], evaluated[0])
    assert X[0, 0].item() == 3.0  # the best new point is the evaluated one's neighbour
    fresh = torch.tensor([[5.0, 0.25]], dtype=torch.double)
    X, replaced, _ = replace_repeats(acqf, fresh, history, problem, FAST, 0.0)
    assert replaced == [False] and torch.equal(X, fresh)
    near = torch.tensor([[3.0, 0.505]], dtype=torch.double)  # 0.5% of x's range away
    assert replace_repeats(acqf, near.clone(), history, problem, FAST, 0.0)[1] == [False]
    X, replaced, _ = replace_repeats(
        acqf, near.clone(), history, problem, FAST, 0.01
    )  # min_distance
    unit = (X[0] - evaluated[0]).abs() / (problem.bounds[1] - problem.bounds[0])
    assert replaced == [True] and unit.max() >= 0.01
