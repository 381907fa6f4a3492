"""Campaigns over typed search spaces (dsbo.space): conditional parameters never reach the
evaluator, linear constraints hold for every proposal, resume keeps named values, BONSAI prunes
whole parameters, named fixed features, and bad named input refused before anything runs."""

import dataclasses
import math
import warnings

import pytest

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError, StoreMismatchError
from dsbo.problems.black_box import make_black_box
from dsbo.space import parse_constraint

TRAINING = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "optimizer": {"type": "choice", "values": ["adam", "sgd", "rmsprop"]},
    "momentum": {"type": "float", "low": 0.0, "high": 0.99, "when": {"optimizer": "sgd"}},
    "layers": {"type": "int", "low": 1, "high": 8},
}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GP jitter warnings on tiny data
        yield


def training_problem():
    return make_black_box(parameters=TRAINING)


class Trainer:
    """A stand-in for a training run: reads named values, asserts the conditional is present
    exactly when its parent says so, records what it was given."""

    def __init__(self, problem):
        self.problem = problem
        self.calls = []

    def __call__(self, x):
        values = self.problem.params(x)
        assert ("momentum" in values) == (values["optimizer"] == "sgd"), values
        self.calls.append(values)
        score = -((math.log10(values["lr"]) + 2) ** 2) - 0.05 * values["layers"]
        if values["optimizer"] == "sgd":
            score += 1.0 + values["momentum"]
        return score


def campaign(problem, fast_optimizer, **kwargs):
    options = dict(surrogate="gp", budget=7, n_init=4, seed=0, optimizer=fast_optimizer)
    options.update(kwargs)
    return Campaign(problem, **options)


def user_values(frame, names):
    """The named parameter columns of a history, NaN (an inactive parameter) as None."""
    rows = frame[names].astype(object).to_dict("records")
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in rows
    ]


# ---------------------------------------------------------------------------- conditions
def test_inactive_conditional_parameter_never_reaches_the_evaluator(fast_optimizer):
    problem = training_problem()
    trainer = Trainer(problem)
    run = campaign(problem, fast_optimizer, budget=7, n_init=5, evaluator=trainer)
    frame = run.run().history
    assert len(trainer.calls) == 7 and (frame["status"] == "completed").all()
    optimizers = {v["optimizer"] for v in trainer.calls}
    assert "sgd" in optimizers and optimizers - {"sgd"}  # both branches were evaluated
    # the history shows the user values, the conditional empty where it was inactive
    assert list(frame.columns[4:8]) == ["lr", "optimizer", "momentum", "layers"]
    assert (frame["momentum"].notna() == (frame["optimizer"] == "sgd")).all()
    assert [
        {k: v for k, v in row.items() if v is not None}
        for row in user_values(frame, list(TRAINING))
    ] == trainer.calls
    assert all(isinstance(v["layers"], int) and 1e-4 <= v["lr"] <= 1e-1 for v in trainer.calls)


# ---------------------------------------------------------------------------- constraints
CONSTRAINED = {
    "x": [0, 1],
    "y": [0, 1],
    "n": {"type": "int", "low": 0, "high": 10},
    "lr_min": {"type": "float", "low": 1e-5, "high": 1e-1, "log": True},
    "lr_max": {"type": "float", "low": 1e-5, "high": 1e-1, "log": True},
}
CONSTRAINTS = ["x + y <= 1", "lr_max >= 2 * lr_min", "n - 4 * y <= 3", "2*x - 0.5*y + 1 >= 0.1 * n"]


def test_every_proposal_satisfies_the_parameter_constraints(fast_optimizer):
    problem = make_black_box(parameters=CONSTRAINED, parameter_constraints=CONSTRAINTS)

    def evaluate(x):  # pushes against every constraint
        v = problem.params(x)
        return v["x"] + v["y"] + 0.2 * v["n"] + 0.1 * math.log(v["lr_max"] / v["lr_min"])

    # dry_run=False: BoTorch's hit-and-run start points under constraints cost ~1.5 s a step
    run = campaign(problem, fast_optimizer, evaluator=evaluate, budget=6, n_init=3, dry_run=False)
    frame = run.run().history
    assert list(frame["generator"]) == ["sobol-init"] * 3 + ["qlognei"] * 3
    constraints = [parse_constraint(c) for c in CONSTRAINTS]
    for row in user_values(frame, list(CONSTRAINED)):
        assert isinstance(row["n"], int)
        for c in constraints:
            assert c.holds(row, tol=1e-6), (c.text, row)


# ---------------------------------------------------------------------------- bad named input
def one_line(match, fn, *args, **kwargs):
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and match in message, message
    return message


def test_black_box_target_is_checked_by_name():
    problem = make_black_box(parameters=TRAINING, target={"optimizer": "sgd", "momentum": 0.9})
    assert problem.params(problem.default_point) == {
        "lr": pytest.approx(10**-2.5),
        "optimizer": "sgd",
        "momentum": 0.9,
        "layers": 5,
    }
    one_line(
        "target.lr=1.0 is outside [0.0001, 0.1]",
        make_black_box,
        parameters=TRAINING,
        target={"lr": 1.0},
    )
    one_line(
        "target.epochs: there is no such parameter",
        make_black_box,
        parameters=TRAINING,
        target={"epochs": 3},
    )
    one_line(
        "target.layers=2.5 must be an integer",
        make_black_box,
        parameters=TRAINING,
        target={"layers": 2.5},
    )
    one_line(
        "target.momentum: momentum is inactive",
        make_black_box,
        parameters=TRAINING,
        target={"momentum": 0.9},
    )
    one_line(
        "parameters.lr: a log scale needs low > 0",
        make_black_box,
        parameters={**TRAINING, "lr": {"type": "float", "low": 0, "high": 1, "log": True}},
    )
    one_line(
        "parameters.optimizer: values repeat 'sgd'",
        make_black_box,
        parameters={**TRAINING, "optimizer": {"type": "choice", "values": ["sgd", "adam", "sgd"]}},
    )


def test_bonsai_default_is_checked_by_name(fast_optimizer):
    problem = training_problem()
    for default, words in [
        ({"lr": 1.0}, "postprocess.bonsai.default.lr=1.0 is outside"),
        ({"epochs": 3}, "postprocess.bonsai.default.epochs: there is no such parameter"),
        ({"optimizer": "nag"}, "postprocess.bonsai.default.optimizer='nag' is not one of"),
    ]:
        one_line(
            words, campaign, problem, fast_optimizer, postprocess={"bonsai": {"default": default}}
        )


def test_attach_named_values_of_the_wrong_type_is_refused(fast_optimizer):
    problem = training_problem()
    run = campaign(problem, fast_optimizer)
    good = {"lr": 1e-3, "optimizer": "sgd", "momentum": 0.9, "layers": 3}
    for bad, words in [
        ({**good, "lr": "0.001"}, "parameters.lr='0.001' must be a number"),
        ({**good, "layers": 2.5}, "parameters.layers=2.5 must be an integer"),
        ({**good, "layers": True}, "parameters.layers=True must be an integer"),
        ({**good, "optimizer": 1}, "parameters.optimizer=1 is not one of"),
        ({**good, "optimizer": "adam"}, "parameters.momentum: momentum is inactive"),
        ({**good, "epochs": 3}, "parameters.epochs: there is no such parameter"),
        ({"lr": 1e-3, "optimizer": "sgd", "layers": 3}, "no value for momentum"),
    ]:
        one_line(words, run.attach, bad, 1.0)
    assert run.store.count() == 0
    trial = run.attach(good, 1.0)
    assert problem.params(trial.x) == good
    assert user_values(run.history(), list(TRAINING)) == [good]


# ---------------------------------------------------------------------------- resume
def test_resume_on_a_sqlite_store_shows_the_same_named_values(fast_optimizer, tmp_path):
    store = tmp_path / "trials.sqlite"
    problem = training_problem()
    first = campaign(
        problem, fast_optimizer, budget=5, n_init=4, store=store, evaluator=Trainer(problem)
    )
    first.run()
    before = user_values(first.history(), list(TRAINING))
    first.store.close()

    problem = training_problem()  # rebuilt from the same config, as a new process would
    again = campaign(
        problem, fast_optimizer, budget=6, n_init=4, store=store, evaluator=Trainer(problem)
    )
    assert user_values(again.history(), list(TRAINING)) == before
    again.run()
    after = user_values(again.history(), list(TRAINING))
    assert after[:5] == before and len(after) == 6
    again.store.close()

    for changed in (
        {**TRAINING, "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True}},
        {**TRAINING, "optimizer": {"type": "choice", "values": ["adam", "sgd", "nag"]}},
        {**TRAINING, "momentum": {"type": "float", "low": 0.0, "high": 0.99}},
        {**TRAINING, "layers": {"type": "int", "low": 1, "high": 8, "step": 1, "log": True}},
    ):
        with pytest.raises(StoreMismatchError, match="space"):
            campaign(make_black_box(parameters=changed), fast_optimizer, store=store)


# ---------------------------------------------------------------------------- BONSAI, SEBO
MIXED = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "width": {"type": "int", "low": 8, "high": 512, "log": True},
    "optimizer": {"type": "choice", "values": ["adam", "sgd", "rmsprop"]},
}
DEFAULT = {"lr": 1e-3, "width": 64, "optimizer": "sgd"}


def test_bonsai_prunes_whole_parameters_of_a_mixed_space(fast_optimizer):
    problem = make_black_box(parameters=MIXED)

    def evaluate(x):  # the optimizer does not matter: pruning it back to the default is free
        v = problem.params(x)
        return -((math.log10(v["lr"]) + 2) ** 2) - 0.1 * (math.log2(v["width"]) - 5) ** 2

    run = campaign(
        problem,
        fast_optimizer,
        seed=1,
        evaluator=evaluate,
        postprocess={"bonsai": {"default": DEFAULT, "rho": 1.0}},
    )
    run.run()
    assert run.changes_from == "postprocess default"
    assert problem.params(run.reference_point) == DEFAULT
    pruned_optimizer = 0
    for trial in run.store.trials():
        values = problem.params(trial.x)
        changed = [n for n in MIXED if values[n] != DEFAULT[n]]
        # a categorical counts once, however many of its one-hot columns changed
        assert trial.metadata["num_changed"] == len(changed), (values, trial.metadata)
        assert [c["parameter"] for c in run.changes(trial.x)] == changed
        if trial.generator == "sobol-init":
            continue
        pruned = trial.metadata["pruned_parameters"]
        assert set(pruned) <= set(MIXED), pruned
        for name in pruned:  # a pruned parameter is reset to its default value exactly
            assert values[name] == DEFAULT[name], (name, values)
        pruned_optimizer += "optimizer" in pruned
        # pruned_dims are the pruned parameters' columns: the whole one-hot group at once
        columns = {j for n in pruned for j in range(problem.dim)[problem.space.slices[n]]}
        assert set(trial.metadata["pruned_dims"]) == columns
    assert pruned_optimizer >= 1  # the categorical was reset at least once


@pytest.mark.parametrize("policy", ["sebo", "ir", "er"])
def test_sparsity_policies_refuse_categoricals_before_any_evaluation(
    fast_optimizer, tmp_path, policy
):
    problem = make_black_box(parameters=MIXED)
    calls = []
    store = tmp_path / "trials.sqlite"
    with pytest.raises(
        ConfigError, match=f"acquisition '{policy}'.*categorical \\(optimizer\\)"
    ) as info:
        campaign(problem, fast_optimizer, acquisition=policy, evaluator=calls.append, store=store)
    assert "\n" not in str(info.value)
    assert calls == [] and not store.exists()


# ---------------------------------------------------------------------------- fixed features
def test_named_fixed_features_keep_every_proposal_at_the_value(fast_optimizer):
    problem = training_problem()
    trainer = Trainer(problem)
    optimizer = dataclasses.replace(
        fast_optimizer, fixed_features={"optimizer": "adam", "layers": 2}
    )
    run = campaign(problem, optimizer, evaluator=trainer)
    assert run.optimizer.fixed_features == {1: 1.0, 2: 0.0, 3: 0.0, 5: 2.0}
    frame = run.run().history
    assert set(frame["generator"]) == {"sobol-init", "qlognei"}
    assert [v["optimizer"] for v in trainer.calls] == ["adam"] * 7
    assert [v["layers"] for v in trainer.calls] == [2] * 7
    assert len({v["lr"] for v in trainer.calls}) == 7  # the free parameter is still searched


def test_named_fixed_features_are_checked_by_name(fast_optimizer):
    problem = training_problem()
    for fixed, words in [
        ({"optimizer": "nag"}, "acquisition.fixed_features.optimizer='nag' is not one of"),
        ({"optimiser": "adam"}, "acquisition.fixed_features.optimiser: there is no such parameter"),
        ({"momentum": 0.9}, "acquisition.fixed_features.momentum: momentum is conditional"),
        ({"layers": 2.5}, "acquisition.fixed_features.layers=2.5 must be an integer"),
    ]:
        optimizer = OptimizerSettings(
            **{**dataclasses.asdict(fast_optimizer), "fixed_features": fixed}
        )
        one_line(words, campaign, problem, optimizer)


def test_a_parameter_named_like_a_history_column_keeps_its_name():
    """A sweep over ``batch`` and an outcome called ``cost``: the trial's own columns step aside
    (``trial_batch``, ``trial_cost``) so every column of the history is one thing."""
    problem = make_black_box(
        parameters={"batch": {"type": "int", "low": 16, "high": 64}},
        objectives=["cost"],
        target={"batch": 32},
    )
    campaign = Campaign(problem, acquisition="sobol", budget=3, n_init=3, seed=0, dry_run=False)
    for x in campaign.initial_design()[:2]:
        campaign.attach(x.tolist(), [1.5])
    frame = campaign.history()
    assert frame.columns.is_unique
    assert {"batch", "cost", "trial_batch", "trial_cost"} <= set(frame.columns)
    assert frame["batch"].between(16, 64).all() and (frame["cost"] == 1.5).all()
    assert (frame["cumulative_cost"] == frame["trial_cost"].cumsum()).all()


@pytest.mark.parametrize("name", ["status", "trial", "best_so_far"])
def test_a_parameter_may_not_take_a_core_history_column_name(name):
    problem = make_black_box(
        parameters={name: {"type": "float", "low": 0, "high": 1}}, objectives=["y"]
    )
    with pytest.raises(
        ConfigError, match=f"parameters.{name}: .* is a column of the run's history"
    ):
        Campaign(problem, acquisition="sobol", budget=3)


def test_the_initial_design_of_only_categoricals_tries_distinct_configurations():
    """Raw Sobol points of a six-configuration space repeat one as often as not (issue 58's
    follow-up): the design takes the sequence's untried configurations, each design a prefix of
    the next."""
    import torch

    import dsbo
    from dsbo.campaign.ledger import design_sequence
    from dsbo.problems import get_problem

    space = dsbo.SearchSpace(
        {"opt": dsbo.Choice(["a", "b", "c"]), "act": dsbo.Choice(["relu", "tanh"])}
    )
    problem = get_problem("black-box", parameters=space, objectives={"loss": ("min", None)})
    for seed in range(4):
        design = design_sequence(problem, OptimizerSettings(), seed, False, 6)
        assert len({tuple(row.tolist()) for row in design}) == 6
        shorter = design_sequence(problem, OptimizerSettings(), seed, False, 4)
        assert torch.equal(shorter, design[:4])
