"""dsbo.minimize / dsbo.maximize and dsbo.Tuner: named values in, the objective's own sense out."""

import math

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
    return (math.log10(p["lr"]) + 2.5) ** 2 + abs(math.log2(p["width"]) - 6) / 4 + (p["optimizer"] == "sgd")


def test_the_top_level_names_are_the_space_types_and_the_api():
    assert dsbo.Float is dsbo.space.Float and callable(dsbo.minimize) and callable(dsbo.maximize)
    assert {"Float", "Int", "Choice", "Fixed", "SearchSpace", "minimize", "maximize", "Tuner"} <= set(dir(dsbo))
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
    result = dsbo.maximize(lambda p: -loss(p), SPACE, budget=6, n_init=5, surrogate="gp", optimizer=FAST)
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
    first = dsbo.minimize(loss, SPACE, budget=5, n_init=4, surrogate="gp", optimizer=FAST, store=store)
    first.campaign.store.close()
    again = dsbo.minimize(loss, SPACE, budget=6, n_init=4, surrogate="gp", optimizer=FAST, store=store)
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
    result = dsbo.minimize(loss, SPACE, budget=6, n_init=4, surrogate="gp", optimizer=FAST, workers=2)
    assert result.num_completed == 6


def test_the_default_surrogate_follows_the_size_of_the_space_and_the_copula_warping_is_on():
    from dsbo.runtime.tuner import AUTO_GP_MAX_PARAMETERS, auto_surrogate

    small = dsbo.Tuner(SPACE, budget=5, dry_run=False)  # 4 searched parameters (+ a fixed one)
    assert small.campaign.surrogate.name == "gp" and small.campaign.outcome_warping == "copula"
    limit = {f"x{i}": dsbo.Float(0.0, 1.0) for i in range(AUTO_GP_MAX_PARAMETERS)}
    assert auto_surrogate(dsbo.SearchSpace({**limit, "fixed": dsbo.Fixed(1.0)})) == "gp"  # fixed ones do not count
    large = dsbo.Tuner({**limit, "one_more": dsbo.Float(0.0, 1.0)}, budget=5, dry_run=False, outcome_warping=None)
    assert large.campaign.surrogate.name == "map-saas" and large.campaign.outcome_warping is None
    assert dsbo.Tuner(SPACE, budget=5, dry_run=False, surrogate="map-saas").campaign.surrogate.name == "map-saas"
