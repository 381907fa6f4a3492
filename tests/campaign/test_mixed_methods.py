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
    return get_problem("black-box", parameters=PARAMETERS, objectives=list(objectives),
                       target={"lr": 1e-3, "width": 64, "optimizer": "adam"})  # fmt: skip


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
    campaign = Campaign(problem, budget=5, n_init=4, optimizer=FAST, evaluator=_evaluator(problem, m), **kwargs)
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
    ["gp", "map-saas", "ibnn", {"name": "vfe", "num_inducing": 4}, {"name": "neural-ensemble", **NEURAL}],
    ids=lambda s: s if isinstance(s, str) else s["name"],
)
def test_surrogates_fit_a_mixed_space(surrogate):
    _one_step(_problem(), surrogate=surrogate, acquisition="qlognei")


def test_bonsai_and_relaxed_categoricals_on_a_mixed_space():
    optimizer = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20, mc_samples=16, categorical="relax")
    problem = _problem()
    campaign = Campaign(problem, surrogate="gp", budget=6, n_init=4, optimizer=optimizer,
                        evaluator=_evaluator(problem), postprocess={"bonsai": {"default": {"optimizer": "adam"}}})  # fmt: skip
    campaign.run()
    for trial in campaign.store.trials()[4:]:
        assert trial.status == "completed"
        assert set(trial.metadata["pruned_parameters"]) <= {"lr", "width", "optimizer", "momentum"}
