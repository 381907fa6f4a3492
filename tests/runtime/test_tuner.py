"""dsbo.minimize / dsbo.maximize and dsbo.Tuner: named values in, the objective's own sense out."""

import math

import numpy as np
import pytest

import dsbo
from dsbo.acquisition import OptimizerSettings
from dsbo.errors import ConfigError, OutcomeError

FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20, mc_samples=16)
SPACE = {
    "lr": dsbo.Float(1e-4, 1e-1, log=True),
    "width": dsbo.Int(16, 512, log=True),
    "optimizer": dsbo.Choice(["adam", "sgd"]),
    "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
    "activation": dsbo.Fixed("relu"),
}


def loss(p):
    assert p["activation"] == "relu" and ("momentum" in p) == (p["optimizer"] == "sgd")
    return (
        (math.log10(p["lr"]) + 2.5) ** 2
        + abs(math.log2(p["width"]) - 6) / 4
        + (p["optimizer"] == "sgd")
    )


def test_the_top_level_names_are_the_space_types_and_the_api():
    assert dsbo.Float is dsbo.space.Float and callable(dsbo.minimize) and callable(dsbo.maximize)
    assert {
        "Float",
        "Int",
        "Choice",
        "Fixed",
        "SearchSpace",
        "minimize",
        "maximize",
        "Tuner",
    } <= set(dir(dsbo))
    with pytest.raises(AttributeError):
        dsbo.no_such_name  # noqa: B018


def test_minimize_reports_the_objective_in_its_own_sense():
    result = dsbo.minimize(loss, SPACE, budget=7, n_init=5, surrogate="gp", optimizer=FAST, seed=1)
    values = result.history["objective"]
    assert result.best_value == pytest.approx(values.min())
    assert result.best_value == pytest.approx(loss(result.best_params))
    assert result.history["best_so_far"].iloc[-1] == pytest.approx(values.min())
    assert set(result.best_params) >= {"lr", "width", "optimizer", "activation"}
    assert "-objective" in result.campaign.problem.outcome_names  # stored negated: dsbo maximizes
    assert "-objective" not in result.history.columns


def test_maximize_keeps_the_sign():
    result = dsbo.maximize(
        lambda p: -loss(p), SPACE, budget=6, n_init=5, surrogate="gp", optimizer=FAST
    )
    assert result.best_value == pytest.approx(result.history["objective"].max())
    assert result.best_value <= 0


def test_a_raising_function_is_a_failed_trial_not_a_crash():
    calls = []

    def flaky(p):
        calls.append(p)
        if len(calls) == 2:
            raise RuntimeError("diverged")
        return loss(p)

    result = dsbo.minimize(flaky, SPACE, budget=6, n_init=4, surrogate="gp", optimizer=FAST)
    assert result.num_failed == 1 and result.num_completed == 5
    assert "diverged" in result.history.loc[1, "error"]


def test_a_store_resumes_with_the_same_named_values(tmp_path):
    store = tmp_path / "trials.sqlite"
    first = dsbo.minimize(
        loss, SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST, store=store
    )
    first.campaign.store.close()
    again = dsbo.minimize(
        loss, SPACE, budget=6, n_init=4, surrogate="gp", optimizer=FAST, store=store
    )
    assert len(again.history) == 6
    cols = ["lr", "width", "optimizer"]
    assert again.history[cols].iloc[:5].equals(first.history[cols])


def test_ask_tell_hands_out_named_values_and_takes_outside_observations():
    tuner = dsbo.Tuner(SPACE, budget=6, n_init=4, surrogate="gp", optimizer=FAST)
    tuner.tell({"lr": 1e-3, "width": 64, "optimizer": "adam"}, 0.5)
    told = 0
    while (suggestion := tuner.ask()) is not None:
        assert suggestion.params["activation"] == "relu"
        if told == 1:
            tuner.tell(suggestion, error="out of memory")
        else:
            tuner.tell(suggestion, {"objective": loss(suggestion.params)})
        told += 1
    result = tuner.result()
    assert told == 5 and result.num_failed == 1
    assert result.best_value <= 0.5


def test_a_trial_left_pending_by_an_earlier_session_is_handed_out_again(tmp_path):
    store = tmp_path / "trials.sqlite"
    tuner = dsbo.Tuner(SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST, store=store)
    first = tuner.ask()
    tuner.campaign.store.close()
    again = dsbo.Tuner(SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST, store=store)
    assert again.ask() == first
    assert again.ask() != first  # handed out once per session: the next ask proposes anew


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"workers": 0}, "workers must be"),
        ({"threads": 0}, "threads must be"),
        ({"bonsai": "yes"}, "bonsai must be"),
        ({"default": {"lr": 1.0}}, r"^default.lr=1.0 is outside"),
        ({"parameter_constraints": ["lr + width <= 1"]}, "log scale"),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(kwargs, match):
    calls = []
    with pytest.raises(ConfigError, match=match):
        dsbo.minimize(calls.append, SPACE, budget=5, surrogate="gp", optimizer=FAST, **kwargs)
    assert calls == []


def test_a_direction_is_minimize_or_maximize():
    with pytest.raises(ConfigError, match="direction='down'"):
        dsbo.Tuner(SPACE, direction="down")


def test_a_told_value_of_the_wrong_type_is_refused():
    tuner = dsbo.Tuner(SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST)
    suggestion = tuner.ask()
    with pytest.raises(OutcomeError):
        tuner.tell(suggestion, "0.3")
    with pytest.raises(ConfigError, match="parameters.width"):
        tuner.tell({"lr": 1e-3, "width": 64.5, "optimizer": "adam"}, 0.3)


def test_workers_evaluate_in_parallel_threads():
    result = dsbo.minimize(
        loss, SPACE, budget=6, n_init=4, surrogate="gp", optimizer=FAST, workers=2
    )
    assert result.num_completed == 6


def test_the_default_surrogate_follows_the_size_of_the_space_and_the_copula_warping_is_on():
    from dsbo.runtime.tuner import AUTO_GP_MAX_PARAMETERS, auto_surrogate

    small = dsbo.Tuner(SPACE, budget=5, dry_run=False)  # 4 searched parameters (+ a fixed one)
    assert small.campaign.surrogate.name == "gp" and small.campaign.outcome_warping == "copula"
    limit = {f"x{i}": dsbo.Float(0.0, 1.0) for i in range(AUTO_GP_MAX_PARAMETERS)}
    assert (
        auto_surrogate(dsbo.SearchSpace({**limit, "fixed": dsbo.Fixed(1.0)})) == "gp"
    )  # fixed ones do not count
    large = dsbo.Tuner(
        {**limit, "one_more": dsbo.Float(0.0, 1.0)}, budget=5, dry_run=False, outcome_warping=None
    )
    assert large.campaign.surrogate.name == "map-saas" and large.campaign.outcome_warping is None
    assert (
        dsbo.Tuner(SPACE, budget=5, dry_run=False, surrogate="map-saas").campaign.surrogate.name
        == "map-saas"
    )


# ------------------------------------------------------------------ issue 41
def test_several_open_trials_are_distinct_and_take_the_pending_ones_into_account():
    tuner = dsbo.Tuner(SPACE, budget=9, n_init=3, surrogate="gp", optimizer=FAST)
    first = tuner.ask(n=3)
    assert len({s.trial_id for s in first}) == 3
    for s in first:
        tuner.tell(s, loss(s.params))
    a, b = tuner.ask(), tuner.ask()  # two BO proposals open at once
    assert a.trial_id != b.trial_id and a.params != b.params
    pending = tuner.campaign.store.get(b.trial_id)
    assert pending.status == "pending" and tuner.campaign.store.count("pending") == 2


def test_enqueued_configurations_are_tried_first_and_counted():
    calls = []

    def f(p):
        calls.append(dict(p))
        return loss(p)

    tuner = dsbo.Tuner(SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST)
    tuner.enqueue({"lr": 1e-3, "width": 64, "optimizer": "sgd", "momentum": 0.9})
    result = tuner.run(f)
    assert calls[0] == {
        "lr": 1e-3,
        "width": 64,
        "optimizer": "sgd",
        "momentum": 0.9,
        "activation": "relu",
    }
    assert len(calls) == 5 and result.history["generator"].iloc[0] == "enqueued"
    with pytest.raises(dsbo.errors.BudgetExhaustedError):
        tuner.enqueue({"lr": 1e-3, "width": 64, "optimizer": "adam"})


def test_fixed_holds_parameters_in_one_ask_only():
    tuner = dsbo.Tuner(SPACE, budget=8, n_init=3, surrogate="gp", optimizer=FAST)
    held = tuner.ask(n=2, fixed={"optimizer": "sgd", "width": 32})
    assert all(s.params["optimizer"] == "sgd" and s.params["width"] == 32 for s in held)
    for s in held + tuner.ask(n=1):
        tuner.tell(s, loss(s.params))
    bo = tuner.ask(fixed={"lr": 0.01})
    assert bo.params["lr"] == pytest.approx(0.01)
    assert tuner.campaign.optimizer.fixed_features is None  # nothing left behind
    with pytest.raises(ConfigError, match="fixed.nope: there is no such parameter"):
        tuner.ask(fixed={"nope": 1})


def test_a_run_stopped_by_failures_keeps_every_completed_evaluation():
    calls = []

    def breaks(p):
        calls.append(p)
        if len(calls) > 3:
            raise RuntimeError("CUDA out of memory")
        return loss(p)

    with pytest.raises(dsbo.errors.TooManyFailuresError, match="store='trials.sqlite'") as caught:
        dsbo.minimize(breaks, SPACE, budget=20, n_init=4, surrogate="gp", optimizer=FAST)
    result = caught.value.result
    assert result.num_completed == 3 and result.num_failed == 10
    assert result.best_value == pytest.approx(min(loss(p) for p in calls[:3]))


def test_a_run_whose_every_evaluation_failed_warns_with_the_first_error():
    def broken(p):
        raise ValueError("no such file: data.csv")

    with pytest.warns(
        dsbo.errors.AllEvaluationsFailedWarning,
        match="all 5 evaluations failed.*no such file: data.csv",
    ):
        result = dsbo.minimize(broken, SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST)
    assert result.best_value is None and result.num_failed == 5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"default": {"zz": 1.0}}, r"^default.zz: there is no such parameter"),
        ({"budget": 1}, r"^budget=1 is too small: the initial design alone takes 2 evaluations"),
        ({"budgt": 10}, r"minimize\(\) has no option 'budgt'; did you mean 'budget'\?"),
        ({"direction": "maximize"}, r"call dsbo.maximize"),
        ({"constraints": ["memory < 8"]}, r"constraints: 'memory < 8': write one comparison"),
        ({"constraints": ["a + b <= 1"]}, r"bounds one outcome"),
        ({"objectives": {"loss": "down"}}, r"objectives.loss.direction='down'"),
        ({"objectives": ["lr"]}, r"'lr' names both a parameter and an outcome"),
    ],
)
def test_bad_input_is_answered_in_the_users_words(kwargs, match):
    calls = []
    options = {"surrogate": "gp", "optimizer": FAST, **kwargs}
    budget = options.pop("budget", 5)
    with pytest.raises(ConfigError, match=match):
        dsbo.minimize(calls.append, SPACE, budget=budget, **options)
    assert calls == []


def test_a_parameter_constraint_string_is_one_constraint():
    space = {"x": dsbo.Float(0, 1), "y": dsbo.Float(0, 1)}
    result = dsbo.minimize(
        lambda p: (p["x"] - 1) ** 2 + (p["y"] - 1) ** 2,
        space,
        budget=6,
        n_init=5,
        parameter_constraints="x + y <= 1",
        surrogate="gp",
        optimizer=FAST,
    )
    assert len(result.campaign.problem.space.constraints) == 1
    assert (result.history["x"] + result.history["y"] <= 1 + 1e-9).all()


def test_several_objectives_and_outcome_constraints_in_five_lines(tmp_path):
    space = {"x": dsbo.Float(0, 1), "y": dsbo.Float(0, 1)}

    def f(p):  # two conflicting losses, and a memory that must stay <= 8
        return {
            "loss": p["x"] ** 2 + p["y"],
            "latency": np.float32((1 - p["x"]) ** 2 * 100),
            "memory": 10 * p["y"],
        }

    result = dsbo.minimize(
        f,
        space,
        budget=10,
        n_init=6,
        objectives={"loss": "min", "latency": ("min", 80.0)},
        constraints=["memory <= 8"],
        optimizer=FAST,
    )
    problem = result.campaign.problem
    assert result.campaign.policy.name == "qlognehvi"
    assert (
        math.isnan(problem.ref_point[0]) and problem.ref_point[1] == -80.0
    )  # the threshold, stored maximized
    assert result.best_value is None and result.hypervolume is not None and result.hypervolume >= 0
    front = result.pareto_front
    assert len(front) == len(result.best_trials) >= 1 and (front["memory"] <= 8).all()
    done = result.history[result.history["status"] == "completed"]
    feasible = done[done["memory"] <= 8]
    for _, row in front.iterrows():  # nothing feasible beats a front point in both losses
        assert not ((feasible["loss"] < row["loss"]) & (feasible["latency"] < row["latency"])).any()
    assert set(result.best_trials[0].values) == {"loss", "latency", "memory"}


def test_a_minimized_runs_outputs_show_the_users_names(tmp_path):
    tuner = dsbo.Tuner(
        SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST, objective="val_loss"
    )
    tuner.run(loss)
    summary = tuner.write(tmp_path)
    header = (tmp_path / "history.csv").read_text().splitlines()[0]
    assert "val_loss" in header.split(",") and "-val_loss" not in header
    assert summary["objectives"] == {"val_loss": "minimize"}
    assert summary["best_value"] == pytest.approx(tuner.result().history["val_loss"].min())
    page = (tmp_path / "report.html").read_text()
    assert "val_loss (lower is better)" in page and "(maximized)" not in page


def test_optimizer_settings_may_be_a_mapping_and_a_bad_one_names_the_field():
    tuner = dsbo.Tuner(
        {"x": dsbo.Float(0, 1)}, optimizer={"num_restarts": 3, "raw_samples": 16}, dry_run=False
    )
    assert tuner.campaign.optimizer.num_restarts == 3 and tuner.campaign.optimizer.raw_samples == 16
    with pytest.raises(ConfigError, match="optimizer.num_restart is not a setting"):
        dsbo.Tuner({"x": dsbo.Float(0, 1)}, optimizer={"num_restart": 3}, dry_run=False)
    with pytest.raises(ConfigError, match="optimizer must be OptimizerSettings or a mapping"):
        dsbo.Tuner({"x": dsbo.Float(0, 1)}, optimizer=3, dry_run=False)


def test_ask_design_point_gives_design_point_k_for_any_k_and_is_handed_out():
    space = {"x": dsbo.Float(0, 1), "c": dsbo.Choice(["a", "b"])}
    asked = dsbo.Tuner(space, budget=6, n_init=4, seed=3, dry_run=False)
    in_order = [asked.ask().params for _ in range(4)]
    numbered = dsbo.Tuner(space, budget=6, n_init=4, seed=3, dry_run=False)
    out_of_order = {k: numbered.ask_design_point(k) for k in (2, 0, 3, 1)}
    assert [out_of_order[k].params for k in range(4)] == in_order
    trials = numbered.campaign.store.trials()
    assert {t.generator for t in trials} == {"sobol-init"} and sorted(
        t.metadata["design_index"] for t in trials
    ) == [0, 1, 2, 3]
    assert numbered.campaign.num_used == 4 and numbered.ask().trial_id not in {
        s.trial_id for s in out_of_order.values()
    }
    with pytest.raises(ConfigError, match="integer >= 0"):
        numbered.ask_design_point(-1)
