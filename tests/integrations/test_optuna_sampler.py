"""DsboSampler (dsbo.integrations.optuna) in real Optuna studies, in memory and on SQLite:
startup, distributions both ways, directions, failed and pruned trials, several objectives,
constraints, workers sharing a storage, enqueued parameters, BONSAI, bad settings, a dsbo
space with conditions (``space=``)."""

from __future__ import annotations

import json
import math
import threading
import time

import gpytorch
import pytest

optuna = pytest.importorskip("optuna")

from optuna.trial import TrialState  # noqa: E402

import dsbo  # noqa: E402
from dsbo.errors import ConfigError  # noqa: E402
from dsbo.integrations.optuna import PARAMS_KEY, DsboSampler  # noqa: E402
from dsbo.integrations.optuna_space import OptunaSpace  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
#: Small fits and acquisition searches: every test proposes a handful of points.
FAST = {"surrogate": "gp", "optimizer": {"num_restarts": 2, "raw_samples": 64, "maxiter": 50}}


def make_sampler(**options):
    return DsboSampler(**{"seed": 0, "n_startup_trials": 3, **FAST, **options})


def quadratic(trial):
    x = trial.suggest_float("x", -1.0, 1.0)
    y = trial.suggest_float("y", -1.0, 1.0)
    return (x - 0.3) ** 2 + (y + 0.2) ** 2


def test_startup_trials_are_the_independent_samplers_then_dsbo_proposes():
    sampler = make_sampler()
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=5)
    assert len(sampler.timings) == 2  # trials 3 and 4, once 3 trials were complete
    shared = [any(k.startswith(PARAMS_KEY) for k in t.system_attrs) for t in study.trials]
    assert shared == [False, False, False, True, True]
    points = {(t.params["x"], t.params["y"]) for t in study.trials}
    assert len(points) == 5
    tuner = sampler.tuner(study)
    assert tuner is not None and tuner.result().num_completed == 5
    assert all(0 <= t["dsbo"] <= t["total"] for t in sampler.timings)


def test_distributions_round_trip_with_their_types():
    choices = ("adam", None, 2.5, False)

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        frac = trial.suggest_float("frac", 0.0, 1.0, step=0.25)
        width = trial.suggest_int("width", 1, 128, log=True)
        depth = trial.suggest_int("depth", 0, 20, step=5)
        opt = trial.suggest_categorical("opt", choices)
        units = trial.suggest_int("layer 1/units", 8, 16)  # not a dsbo name: mapped
        trial.suggest_float("const", 2.0, 2.0)  # a single value: left out of the search
        return lr + frac + width / 128 + depth / 20 + units / 16 + (0.0 if opt == 2.5 else 1.0)

    sampler = make_sampler()
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=5)
    assert len(sampler.timings) == 2
    for trial in study.trials:
        for name, value in trial.params.items():
            dist = trial.distributions[name]
            assert dist._contains(dist.to_internal_repr(value)), (name, value)
        assert type(trial.params["width"]) is int and type(trial.params["depth"]) is int
        assert trial.params["depth"] % 5 == 0 and (trial.params["frac"] / 0.25).is_integer()
        assert any(
            trial.params["opt"] is c
            or (trial.params["opt"] == c and type(c) is type(trial.params["opt"]))
            for c in choices
        )
    # the Tuner holds every trial at its point: decoded back, the study's parameters
    tuner = sampler.tuner(study)
    space = OptunaSpace({k: v for k, v in study.trials[0].distributions.items() if not v.single()})
    assert "const" not in space.names and space.names["layer 1/units"] != "layer 1/units"
    stored = [
        space.to_optuna(tuner.campaign.problem.params(t.x))
        for t in tuner.campaign.store.trials("completed")
    ]
    expected = [{k: v for k, v in t.params.items() if k != "const"} for t in study.trials]

    def rounded(params):  # a log scale's value comes back to 12 significant digits
        return repr(
            sorted(
                (k, float(f"{v:.10g}") if isinstance(v, float) else v) for k, v in params.items()
            )
        )

    assert sorted(map(rounded, stored)) == sorted(map(rounded, expected))


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
def test_directions_dsbo_sees_the_studys_best(direction):
    sign = 1.0 if direction == "minimize" else -1.0
    sampler = make_sampler()
    study = optuna.create_study(direction=direction, sampler=sampler)
    study.optimize(lambda t: sign * quadratic(t), n_trials=4)
    tuner = sampler.tuner(study)
    assert tuner.direction == direction
    result = tuner.result()
    assert result.best_value == pytest.approx(study.best_value)
    assert result.best_params == pytest.approx(study.best_params)


def test_failed_and_pruned_trials_are_failed_and_stopped_in_dsbo():
    def objective(trial):
        x = trial.suggest_float("x", -1.0, 1.0)
        y = trial.suggest_float("y", -1.0, 1.0)
        if trial.number in (1, 6):
            raise ValueError("diverged")
        for step in range(3):  # the median of the complete trials' values is 0: 100 is pruned
            trial.report(100.0 + step if trial.number in (2, 5) else 0.0, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return x**2 + y**2

    sampler = make_sampler()
    pruner = optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=0)
    study = optuna.create_study(sampler=sampler, pruner=pruner)
    study.optimize(objective, n_trials=8, catch=(ValueError,))
    states = [t.state for t in study.trials]
    assert states == [
        TrialState.COMPLETE,
        TrialState.FAIL,
        TrialState.PRUNED,
        TrialState.COMPLETE,
        TrialState.COMPLETE,
        TrialState.PRUNED,
        TrialState.FAIL,
        TrialState.COMPLETE,
    ]
    # the startup is 3 complete or pruned trials (0, 2, 3): trials 4 to 7 were dsbo's
    assert len(sampler.timings) == 4
    tuner = sampler.tuner(study)
    store = tuner.campaign.store
    assert (store.count("completed"), store.count("failed"), store.count("stopped")) == (4, 2, 2)
    assert all(
        t.generator.startswith("qlognei") for t in store.trials() if t.generator != "imported"
    )
    curves = store.curves()
    for trial in store.trials("stopped"):
        number = 2 if trial.generator == "imported" else 5
        values = study.trials[number].intermediate_values
        assert [s for s, _ in curves[trial.id]] == sorted(values)
        assert trial.y == [-values[max(values)]]  # dsbo maximizes: the last value, negated
    assert all(t.error.startswith("failed in Optuna") for t in store.trials("failed"))
    assert tuner.campaign.remaining > 10**6  # imported trials are never charged


def slow_starter(trial):
    """A training run: the loss after each of 8 epochs, reported every epoch and pruned when
    the pruner says so. It falls as 1/epoch toward the quadratic's value, and the best
    configurations start slowest: a median pruner prunes them, and a surrogate fitted on the
    complete trials only points right back at them (the audit of issue 57)."""
    x = trial.suggest_float("x", -1.0, 1.0)
    y = trial.suggest_float("y", -1.0, 1.0)
    final = (x - 0.3) ** 2 + (y + 0.2) ** 2
    slow = 1.0 + 3.0 * math.exp(-10.0 * final)
    for epoch in range(1, 9):
        loss = final + slow / epoch
        trial.report(loss, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return loss


def dsbo_proposals(sampler, study):
    """The study's trials whose parameters came from dsbo (not the independent sampler): the
    sampler's own trials in its Tuner's store, matched to the study's by their parameters."""
    tuner = sampler.tuner(study)
    problem = tuner.campaign.problem
    own = [problem.params(t.x) for t in tuner.campaign.store.trials() if t.generator != "imported"]
    numbers = [t.number for t in study.trials if shared_proposal(t) is not None]
    assert len(own) == len(numbers) == len(sampler.timings)
    for number, params in zip(numbers, own, strict=True):
        assert params == pytest.approx(study.trials[number].params)
    return numbers, tuner


def test_under_a_median_pruner_dsbo_proposes_and_never_repeats_a_pruned_trial():
    sampler = make_sampler(n_startup_trials=5)
    study = optuna.create_study(sampler=sampler, pruner=optuna.pruners.MedianPruner())
    study.optimize(slow_starter, n_trials=40)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    numbers, tuner = dsbo_proposals(sampler, study)
    # the startup ended after 5 complete or pruned trials: every later trial is dsbo's
    assert numbers == list(range(5, 40)) and len(pruned) >= 10
    for number in numbers:  # max-norm distance in the unit cube ([-1, 1] is 2 wide)
        point = study.trials[number].params
        earlier = [t for t in pruned if t.number < number]
        assert all(
            max(abs(point[k] - t.params[k]) / 2.0 for k in ("x", "y")) > 1e-3 for t in earlier
        ), number
    # the surrogate was fitted on the pruned trials too: each at its last reported value
    from dsbo.campaign.early_stopping import training_data

    store = tuner.campaign.store
    X, Y = training_data(store, tuner.campaign.early_stopping, tuner.campaign.problem.dim)
    assert store.count("stopped") == len(pruned) and X.shape[0] == store.count("completed") + len(
        pruned
    )
    lasts = sorted(-t.intermediate_values[max(t.intermediate_values)] for t in pruned)
    stopped = sorted(t.y[0] for t in store.trials("stopped"))
    fitted = Y[:, 0].tolist()
    assert stopped == pytest.approx(lasts) and all(
        any(abs(v - f) < 1e-9 for f in fitted) for v in lasts
    )


def test_pruned_trials_end_the_startup():
    sampler = make_sampler(n_startup_trials=5)
    study = optuna.create_study(
        sampler=sampler, pruner=optuna.pruners.ThresholdPruner(upper=-math.inf)
    )
    study.optimize(slow_starter, n_trials=8)  # every trial is pruned at its first report
    assert [t.state for t in study.trials] == [TrialState.PRUNED] * 8
    numbers, tuner = dsbo_proposals(sampler, study)
    assert numbers == [5, 6, 7]
    generators = [
        t.generator.split("+")[0]
        for t in tuner.campaign.store.trials()
        if t.generator != "imported"
    ]
    # the pruned startup trials are fitted (model "last"), so they are the whole initial
    # design: the model proposes from the first dsbo trial on
    assert generators == ["qlognei", "qlognei", "qlognei"]


def test_several_objectives_and_their_front():
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        return x**2 + y, x

    sampler = make_sampler()
    study = optuna.create_study(directions=["minimize", "maximize"], sampler=sampler)
    study.optimize(objective, n_trials=4)
    assert len(sampler.timings) == 1
    tuner = sampler.tuner(study)
    assert [(o.name, o.direction) for o in tuner.outcomes.objectives] == [
        ("objective_0", "minimize"),
        ("objective_1", "maximize"),
    ]
    front = {tuple(sorted(b.params.items())) for b in tuner.result().best_trials}
    assert front == {tuple(sorted(t.params.items())) for t in study.best_trials}


def test_constraints_func_values_are_outcome_constraints():
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        y = trial.suggest_float("y", 0.0, 1.0)
        return (x - 0.8) ** 2 + y

    sampler = make_sampler(constraints_func=lambda t: [t.params["x"] - 0.5])
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=4)
    assert len(sampler.timings) == 1
    assert all(t.system_attrs["constraints"] == (t.params["x"] - 0.5,) for t in study.trials)
    tuner = sampler.tuner(study)
    assert [c.metric for c in tuner.outcomes.constraints] == ["constraint_0"]
    feasible = [t.value for t in study.trials if t.params["x"] <= 0.5]
    result = tuner.result()
    if feasible:
        assert result.best_value == pytest.approx(min(feasible))
    else:
        assert result.best_value is None


def test_a_running_trial_of_another_worker_is_pending_then_told(tmp_path):
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'study.db'}")
    first = optuna.create_study(study_name="s", storage=storage, sampler=make_sampler())
    first.optimize(quadratic, n_trials=3)  # the startup
    worker_a, worker_b = make_sampler(), make_sampler(seed=1)
    study_a = optuna.load_study(study_name="s", storage=storage, sampler=worker_a)
    study_b = optuna.load_study(study_name="s", storage=storage, sampler=worker_b)
    running = study_a.ask()
    x_a = running.suggest_float("x", -1.0, 1.0)  # y is not suggested yet: B reads A's proposal
    trial_b = study_b.ask()
    trial_b.suggest_float("x", -1.0, 1.0)
    assert worker_b.timings[-1]["pending"] == 1
    tuner_b = worker_b.tuner(study_b)
    [imported] = [t for t in tuner_b.campaign.store.trials("pending") if t.generator == "imported"]
    assert tuner_b.campaign.problem.params(imported.x)["x"] == pytest.approx(x_a)
    y_a = running.suggest_float("y", -1.0, 1.0)
    study_a.tell(running, 0.5)
    trial_b.suggest_float("y", -1.0, 1.0)
    study_b.tell(trial_b, 0.7)
    tuner_b = worker_b.tuner(study_b)
    told = tuner_b.campaign.store.get(imported.id)
    assert told.status == "completed" and told.y == [-0.5]
    assert tuner_b.campaign.problem.params(told.x) == pytest.approx({"x": x_a, "y": y_a})


def test_two_threads_share_a_sqlite_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="s", storage=optuna.storages.RDBStorage(url))
    samplers = [make_sampler(seed=i, n_startup_trials=2) for i in range(2)]
    errors = []

    def objective(trial):
        value = quadratic(trial)
        time.sleep(0.3)
        return value

    def work(sampler):
        try:
            storage = optuna.storages.RDBStorage(
                url, engine_kwargs={"connect_args": {"timeout": 30}}
            )
            optuna.load_study(study_name="s", storage=storage, sampler=sampler).optimize(
                objective, n_trials=3
            )
        except Exception as exc:  # surfaced below, with the thread's error
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in samplers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    study = optuna.load_study(study_name="s", storage=url)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 6
    points = [(t.params["x"], t.params["y"]) for t in study.trials]
    assert len(set(points)) == 6
    assert sum(len(s.timings) for s in samplers) >= 3
    # the two samplers' proposals took turns (Campaign's MODEL_LOCK): GPyTorch's process-wide
    # settings are back at their defaults (interleaved, a thread could leave lazy kernels off)
    assert gpytorch.settings.lazily_evaluate_kernels._state is None
    assert gpytorch.settings.fast_pred_var._state is None


def test_an_enqueued_parameter_is_held_and_the_rest_proposed():
    sampler = make_sampler()
    study = optuna.create_study(sampler=sampler)
    study.optimize(quadratic, n_trials=3)
    study.enqueue_trial({"x": 0.25})
    study.optimize(quadratic, n_trials=1)
    assert study.trials[-1].params["x"] == 0.25 and len(sampler.timings) == 1
    tuner = sampler.tuner(study)
    last = tuner.campaign.store.trials("completed")[-1]
    assert tuner.campaign.problem.params(last.x) == pytest.approx(study.trials[-1].params)


def test_bonsai_proposals_change_few_parameters_from_the_default():
    names = [f"x{i}" for i in range(8)]
    default = {n: 0.5 for n in names}

    def objective(trial):
        params = {n: trial.suggest_float(n, 0.0, 1.0) for n in names}
        return (params["x0"] - 0.9) ** 2

    sampler = make_sampler(default=default, bonsai=True, n_startup_trials=5)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=8)
    changed = [sum(t.params[n] != 0.5 for n in names) for t in study.trials]
    assert changed[:5] == [8] * 5  # the startup's quasi-random points change everything
    # (dsbo without BONSAI changes all 8 too: a continuous maximizer never lands on 0.5)
    assert len(sampler.timings) == 3 and max(changed[5:]) <= 4, changed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget": 10}, "set by the study's n_trials"),
        ({"direction": "maximize"}, "set by the study's direction"),
        ({"store": "x.db"}, "set by the study's storage"),
        ({"early_stopping": "median"}, "an Optuna pruner"),
        ({"surogate": "gp"}, "did you mean 'surrogate'"),
        ({"n_startup_trials": -1}, "n_startup_trials must be an integer >= 0"),
        ({"seed": "0"}, "seed must be None or an integer"),
        ({"independent_sampler": "random"}, "independent_sampler must be an Optuna sampler"),
        ({"default": [0.5]}, "default must be a mapping"),
        ({"bonsai": "yes"}, "bonsai must be true, false or a mapping"),
        ({"acquisition": "nope"}, "is not registered"),
        ({"outcome_warping": "log"}, "outcome_warping='log'"),
        ({"space": [0.0, 1.0]}, "space must be a mapping"),
        (
            {"space": {"x": dsbo.Float(1e-3, 1.0, log=True, step=0.1)}},
            "space= parameter 'x' has no Optuna distribution",
        ),
        (
            {"space": {"x": dsbo.Float(0.0, 1.0)}, "default": {"y": 0.5}},
            "default.y: there is no such parameter",
        ),
    ],
)
def test_bad_settings_are_config_errors_at_once(options, message):
    with pytest.raises(ConfigError, match=message):
        DsboSampler(**options)


def test_a_conditional_parameter_is_sampled_independently_with_a_warning(caplog):
    def objective(trial):
        value = quadratic(trial)
        if trial.number >= 3:  # a parameter the intersection search space does not hold
            value += trial.suggest_float("extra", 0.0, 1.0)
        return value

    sampler = make_sampler()
    study = optuna.create_study(sampler=sampler)
    with caplog.at_level("WARNING", logger="dsbo.integrations.optuna"):
        study.optimize(objective, n_trials=4, n_jobs=1)
    assert len(sampler.timings) == 1 and 0.0 <= study.trials[3].params["extra"] <= 1.0
    assert (
        "The parameter `extra` in Trial#3 is sampled independently using `QMCSampler`"
        in caplog.text
    )


#: A conditional space: ``momentum`` exists only with ``optimizer="sgd"``; ``act`` mixes types.
CONDITIONAL = {
    "optimizer": dsbo.Choice(["adam", "sgd"]),
    "lr": dsbo.Float(1e-4, 1e-1, log=True),
    "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
    "layers": dsbo.Int(1, 4),
    "act": dsbo.Choice(["relu", None, 2.5, False]),
    "width": dsbo.Fixed(64),
}


def conditional_objective(trial):
    """Define-by-run: ``momentum`` suggested only for sgd; ``extra`` is not in the space."""
    optimizer = trial.suggest_categorical("optimizer", ["adam", "sgd"])
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    value = (lr - 3e-3) ** 2 + 0.1 * trial.suggest_int("layers", 1, 4)
    value += 0.0 if trial.suggest_categorical("act", ["relu", None, 2.5, False]) is None else 0.2
    if optimizer == "sgd":
        value += (trial.suggest_float("momentum", 0.0, 0.99) - 0.9) ** 2
    if trial.number == 5:
        value += trial.suggest_float("extra", 0.0, 1.0)
    return value


def shared_proposal(trial):
    chunks = [v for k, v in sorted(trial.system_attrs.items()) if k.startswith(PARAMS_KEY)]
    return json.loads("".join(chunks)) if chunks else None


def test_a_dsbo_space_with_conditions_is_proposed_whole_by_dsbo(caplog):
    sampler = make_sampler(space=CONDITIONAL)
    study = optuna.create_study(sampler=sampler)
    with caplog.at_level("WARNING"):
        study.optimize(conditional_objective, n_trials=5)
        study.enqueue_trial({"optimizer": "sgd"})  # dsbo proposes the rest, momentum included
        study.enqueue_trial({"optimizer": "adam"})  # momentum inactive: never proposed
        study.optimize(conditional_objective, n_trials=2)
    assert (
        len(sampler.timings) == 7
    )  # the 3 startup trials (dsbo's initial design), then trials 3 to 6
    assert [t.params["optimizer"] for t in study.trials[5:]] == ["sgd", "adam"]
    tuner = sampler.tuner(study)
    store, problem = tuner.campaign.store, tuner.campaign.problem
    proposed = [t for t in store.trials() if t.generator != "imported"]
    assert [t.generator for t in proposed] == ["sobol-init"] * 3 + ["qlognei"] * 4
    assert [t.metadata["design_index"] for t in proposed[:3]] == [0, 1, 2]  # by trial number
    for trial, stored in zip(study.trials[3:], proposed[3:], strict=True):
        point = problem.params(stored.x)
        searched = {k: v for k, v in trial.params.items() if k != "extra"}
        # every parameter the trial suggested (and only those) came from dsbo's proposal
        assert set(shared_proposal(trial)) == set(searched) == set(point) - {"width"}
        assert ("momentum" in point) == (point["optimizer"] == "sgd") and point["width"] == 64
        assert {k: point[k] for k in searched} == pytest.approx(searched)
    for trial in study.trials:
        params = trial.params
        assert type(params["lr"]) is float and type(params["layers"]) is int
        assert params["optimizer"] in ("adam", "sgd") and "width" not in params
        assert any(
            params["act"] is c or (params["act"] == c and type(params["act"]) is type(c))
            for c in CONDITIONAL["act"].values
        )
        assert ("momentum" in params) == (params["optimizer"] == "sgd")
    assert (
        "`extra` in Trial#5 is sampled independently" in caplog.text
        and "not in DsboSampler's space=" in caplog.text
    )
    assert "`momentum`" not in caplog.text and "refused" not in caplog.text
    assert store.count("completed") == 7


def test_a_study_trial_that_does_not_fit_the_space_is_left_out(caplog):
    sampler = make_sampler(space=CONDITIONAL)
    study = optuna.create_study(sampler=sampler)
    study.optimize(conditional_objective, n_trials=3)
    distributions = {k: v for k, v in study.trials[0].distributions.items() if k != "momentum"}
    unfit = {"optimizer": "sgd", "lr": 0.01, "layers": 2, "act": "relu"}  # sgd without its momentum
    study.add_trial(
        optuna.trial.create_trial(
            params=unfit, distributions={k: distributions[k] for k in unfit}, value=0.0
        )
    )
    with caplog.at_level("WARNING", logger="dsbo.campaign.given_points"):
        study.optimize(conditional_objective, n_trials=1)
    assert (
        len(sampler.timings) == 4
        and "1 imported row(s) refused" in caplog.text
        and "momentum" in caplog.text
    )
    assert (
        sampler.tuner(study).campaign.store.count("completed") == 4
    )  # the 3 startup trials and dsbo's


@pytest.mark.parametrize(
    ("suggest", "startup", "raised_in"),
    [  # other choices: the first (startup) trial's independent sample raises, before it runs (with
        # an independent sampler given; dsbo's own startup design meets Optuna's ValueError first)
        (
            lambda t: t.suggest_categorical("optimizer", ["adam", "sgd", "rmsprop"]) == "adam",
            3,
            "suggest",
        ),
        # wider bounds: dsbo's value fits them, so Optuna takes it; the trial raises when told
        (lambda t: t.suggest_float("lr", 1e-4, 1.0, log=True) > 0.5, 0, "tell"),
    ],
)
def test_an_objective_distribution_other_than_the_spaces_is_a_config_error(
    suggest, startup, raised_in
):
    space = {"optimizer": dsbo.Choice(["adam", "sgd"]), "lr": dsbo.Float(1e-4, 1e-1, log=True)}

    def objective(trial):
        other = suggest(trial)
        if "optimizer" not in trial.params:  # the other parameter, from the space's distribution
            trial.suggest_categorical("optimizer", ["adam", "sgd"])
        if "lr" not in trial.params:
            trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        return float(other)

    independent = {"independent_sampler": optuna.samplers.RandomSampler(seed=0)} if startup else {}
    study = optuna.create_study(
        sampler=make_sampler(space=space, n_startup_trials=startup, **independent)
    )
    with pytest.raises(
        ConfigError, match=r"trial 0 suggests '(optimizer|lr)' from .* but space= has"
    ):
        study.optimize(objective, n_trials=3)
    [trial] = study.trials
    assert trial.state == (TrialState.FAIL if raised_in == "suggest" else TrialState.COMPLETE)


def test_with_a_dsbo_space_the_study_is_dsbo_minimize_trial_for_trial():
    """With space= the startup trials are dsbo's initial design by trial number, and every
    later trial dsbo's proposal on the same data: the study's values equal a Tuner's run."""
    import dsbo

    space = {
        "opt": dsbo.Choice(["adam", "sgd"]),
        "lr": dsbo.Float(1e-4, 1e-1, log=True),
        "momentum": dsbo.Float(0.0, 0.99, when={"opt": "sgd"}),
    }

    def loss(p):
        return (math.log10(p["lr"]) + 2) ** 2 + (
            0.3 if p["opt"] == "adam" else abs(p["momentum"] - 0.9)
        )

    def objective(trial):
        p = {
            "opt": trial.suggest_categorical("opt", ["adam", "sgd"]),
            "lr": trial.suggest_float("lr", 1e-4, 1e-1, log=True),
        }
        if p["opt"] == "sgd":
            p["momentum"] = trial.suggest_float("momentum", 0.0, 0.99)
        return loss(p)

    options = {"surrogate": "gp", "seed": 3, "optimizer": {"num_restarts": 2, "raw_samples": 32}}
    sampler = DsboSampler(space=space, n_startup_trials=3, **options)
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=6)
    tuner = dsbo.Tuner(space, budget=6, n_init=3, dry_run=False, **options)
    values = []
    for _ in range(6):
        s = tuner.ask()
        values.append(loss(s.params))
        tuner.tell(s.trial_id, values[-1])
    assert [t.value for t in study.trials] == values
    generators = sampler.tuner(study).result().history["generator"].tolist()
    assert generators[:3] == ["sobol-init"] * 3 and "sobol-init" not in generators[3:]
