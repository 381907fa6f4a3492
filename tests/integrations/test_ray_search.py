"""DsboSearch (dsbo.integrations.ray) against a real local Ray cluster: two CPUs, two trials
at once, one cluster for the module. Skipped only where Ray Tune is not installed; CI installs
the ``ray`` extra, so they run there. The tests without ``ray_cluster`` call the searcher's
protocol directly (as Ray's controller does) and need no cluster."""

from __future__ import annotations

import gc
import math
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip(
    "ray", reason="Ray Tune is the optional extra `ray` (pip install -e '.[ray]')"
)
tune = pytest.importorskip(
    "ray.tune", reason="Ray Tune is the optional extra `ray` (pip install -e '.[ray]')"
)

from ray.tune.schedulers import ASHAScheduler  # noqa: E402
from ray.tune.search import ConcurrencyLimiter, Searcher  # noqa: E402

import dsbo  # noqa: E402
from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.errors import ConfigError  # noqa: E402
from dsbo.integrations.ray import DsboSearch, convert_search_space  # noqa: E402

KINDS = {"a": 0.0, "b": 0.5, "c": 1.0}
#: Small acquisition optimization: the tests check the plumbing, not the optimum.
FAST = {
    "surrogate": "gp",
    "n_init": 3,
    "optimizer": OptimizerSettings(num_restarts=2, raw_samples=32),
}
SPACE = {"x": dsbo.Float(-1.0, 1.0), "n": dsbo.Int(0, 7), "kind": dsbo.Choice(list(KINDS))}
PARAM_SPACE = {
    "x": tune.uniform(-1.0, 1.0),
    "n": tune.randint(0, 8),
    "kind": tune.choice(list(KINDS)),
}
#: Spaces without the values the trainable fails on (n = 6 reports NaN, n = 7 crashes), for tests
#: that expect every trial to complete: a proposal may land on any n.
SAFE_SPACE = {**SPACE, "n": dsbo.Int(0, 5)}
SAFE_PARAM_SPACE = {**PARAM_SPACE, "n": tune.randint(0, 6)}


def loss_of(config):
    return (config["x"] - 0.3) ** 2 + 0.1 * (config["n"] - 3) ** 2 + KINDS[config["kind"]]


def quadratic(config):
    """A trainable: the loss after each of ``steps`` iterations (it falls as 1/iteration)."""
    assert (
        isinstance(config["x"], float) and isinstance(config["n"], int) and config["kind"] in KINDS
    )
    if config["n"] == 7:
        raise RuntimeError("n = 7 crashes")
    for it in range(1, config.get("steps", 1) + 1):
        loss = float("nan") if config["n"] == 6 else loss_of(config) + 1.0 / it
        tune.report({"loss": loss, "score": -loss})


@pytest.fixture(scope="module")
def ray_cluster():
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import dsbo
    saved = os.environ.get("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS")
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = (
        "1"  # no CSV/JSON/TensorBoard files per trial
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()
    if saved is None:
        os.environ.pop("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS")
    else:
        os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = saved


def fit(tmp_path, search_alg, num_samples, param_space=None, metric=None, mode=None, **config):
    tuner = tune.Tuner(
        quadratic,
        param_space=param_space or {},
        tune_config=tune.TuneConfig(
            search_alg=search_alg,
            num_samples=num_samples,
            metric=metric,
            mode=mode,
            reuse_actors=True,
            **config,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="run", verbose=0),
    )
    return tuner.fit()


def record(searcher):
    """dsbo's trials of the search: ``{ray trial id: trial}``."""
    return {t.metadata["ray_trial_id"]: t for t in searcher.tuner.campaign.store.trials()}


def test_a_param_space_searched_in_min_mode_points_to_evaluate_first(ray_cluster, tmp_path):
    first = {"x": 0.3, "n": 3, "kind": "a", "steps": 2}
    searcher = DsboSearch(points_to_evaluate=[first], **FAST)
    results = fit(
        tmp_path,
        ConcurrencyLimiter(searcher, max_concurrent=2),
        8,
        param_space={**SAFE_PARAM_SPACE, "steps": 2},
        metric="loss",
        mode="min",
    )
    assert len(results) == 8 and not results.errors
    for result in results:  # inside the space, of the right types, the constant merged in
        config = result.config
        assert -1.0 <= config["x"] <= 1.0 and 0 <= config["n"] <= 5 and config["steps"] == 2
        assert (
            isinstance(config["x"], float)
            and isinstance(config["n"], int)
            and config["kind"] in KINDS
        )
    trials = record(searcher)
    assert len(trials) == 8
    assert all(t.status == "completed" for t in trials.values()), [
        (t.id, t.status, t.error) for t in trials.values() if t.status != "completed"
    ]
    enqueued = min(trials.values(), key=lambda t: t.id)
    assert enqueued.generator == "enqueued" and searcher.tuner.campaign.problem.params(
        enqueued.x
    ) == {k: first[k] for k in ("x", "n", "kind")}
    # Ray's first trial ran it (a trial's directory is <trainable>_<id>_<counter>_<values>)
    ran_first = next(r for r in results if Path(r.path).name.split("_")[2] == "1")
    assert ran_first.metrics["trial_id"] == enqueued.metadata["ray_trial_id"]
    assert any(
        t.generator == "qlognei" for t in trials.values()
    )  # the model proposed after the design
    for result in results:  # each Ray trial's last loss is its dsbo value
        assert trials[result.metrics["trial_id"]].y == [pytest.approx(-result.metrics["loss"])]
    best = searcher.tuner.result()
    assert best.best_value == pytest.approx(results.get_best_result().metrics["loss"])
    assert best.best_value == pytest.approx(min(r.metrics["loss"] for r in results))
    assert (
        len({tuple(r.config.values()) for r in results}) == 8
    )  # running trials were pending: no repeats


def test_max_mode_failed_trials_and_the_dsbo_budget(ray_cluster, tmp_path):
    crash, nan = {"x": 0.0, "n": 7, "kind": "a"}, {"x": 0.0, "n": 6, "kind": "b"}
    searcher = DsboSearch(
        SPACE, metric="score", mode="max", points_to_evaluate=[crash, nan], budget=5, **FAST
    )
    results = fit(
        tmp_path, ConcurrencyLimiter(searcher, max_concurrent=2), 9
    )  # the budget ends it first
    assert len(results) == 5 and len(results.errors) == 1
    trials = record(searcher)
    failed = sorted((t for t in trials.values() if t.status == "failed"), key=lambda t: t.id)
    assert [searcher.tuner.campaign.problem.params(t.x)["n"] for t in failed] == [7, 6]
    assert "raised an error" in failed[0].error and "non-finite" in failed[1].error
    finished = [
        r.metrics["score"]
        for r in results
        if r.error is None and not math.isnan(r.metrics["score"])
    ]
    assert len(finished) == 3 and searcher.tuner.result().num_completed == 3
    assert searcher.tuner.direction == "maximize"
    assert searcher.tuner.result().best_value == pytest.approx(
        max(finished)
    )  # the user's direction
    assert searcher.suggest("one-more") == Searcher.FINISHED


def test_trials_asha_stops_early_are_stopped_with_their_curve_and_fitted(ray_cluster, tmp_path):
    searcher = DsboSearch(max_t=9, **FAST)
    asha = ASHAScheduler(
        time_attr="training_iteration", max_t=9, grace_period=1, reduction_factor=3
    )
    results = fit(
        tmp_path,
        ConcurrencyLimiter(searcher, max_concurrent=2),
        8,
        param_space={
            "x": tune.uniform(-1.0, 1.0),
            "n": tune.randint(0, 6),
            "kind": tune.choice(["a", "b"]),
            "steps": 9,
        },
        metric="loss",
        mode="min",
        scheduler=asha,
    )
    trials, store = record(searcher), searcher.tuner.campaign.store
    curves = store.curves()
    iterations = {r.metrics["trial_id"]: r.metrics["training_iteration"] for r in results}
    assert (
        len(results) == 8 and len(trials) == 8 and min(iterations.values()) < 9
    )  # ASHA stopped some early
    assert 9 in iterations.values()
    for result in results:  # none lost: each Ray trial is in the store, with its whole curve
        trial = trials[result.metrics["trial_id"]]
        iteration = result.metrics["training_iteration"]
        assert trial.status == ("completed" if iteration == 9 else "stopped"), (
            iteration,
            trial.status,
        )
        assert trial.y == [pytest.approx(-result.metrics["loss"])]
        assert [step for step, _ in curves[trial.id]] == list(range(1, iteration + 1))
        assert curves[trial.id][-1][1] == pytest.approx(trial.y[0])
    stopped = store.trials("stopped")
    assert stopped and all("Ray stopped trial" in t.error for t in stopped)
    # stopped trials take their place in the initial design (n_init=3) and are fitted at their
    # last value: every trial after the design is the model's
    from dsbo.campaign.early_stopping import training_data

    ordered = sorted(trials.values(), key=lambda t: t.id)
    assert [t.generator.split("+")[0] for t in ordered] == ["sobol-init"] * 3 + ["qlognei"] * 5
    X, _ = training_data(
        store, searcher.tuner.campaign.early_stopping, searcher.tuner.campaign.problem.dim
    )
    assert X.shape[0] == 8
    best = searcher.tuner.result()  # the best is a fully trained trial's
    assert best.best_value == pytest.approx(
        min(r.metrics["loss"] for r in results if r.metrics["training_iteration"] == 9)
    )


def test_save_and_restore_continue_the_search(ray_cluster, tmp_path):
    searcher = DsboSearch(SAFE_SPACE, metric="loss", mode="min", **FAST)
    fit(tmp_path / "first", ConcurrencyLimiter(searcher, max_concurrent=2), 3)
    assert list((tmp_path / "first" / "run").glob("searcher-state-*.pkl"))  # Ray saved it as it ran
    searcher.save(str(tmp_path / "searcher.pkl"))
    earlier = record(searcher)

    restored = DsboSearch()
    restored.restore(str(tmp_path / "searcher.pkl"))
    assert {k: (t.x, t.y) for k, t in record(restored).items()} == {
        k: (t.x, t.y) for k, t in earlier.items()
    }
    results = fit(tmp_path / "second", ConcurrencyLimiter(restored, max_concurrent=2), 3)
    assert len(results) == 3 and not results.errors
    trials = record(restored)
    assert len(trials) == 6 and set(earlier) < set(trials)
    later = [t for k, t in trials.items() if k not in earlier]
    assert all(t.generator == "qlognei" for t in later)  # the design was done before the save
    best = min(searcher.tuner.result().best_value, *(r.metrics["loss"] for r in results))
    assert restored.tuner.result().best_value == pytest.approx(best)  # it knows the earlier trials


# ---------------------------------------------------------------- without a cluster
def test_the_configuration_is_nested_as_the_param_space_and_constants_stay_rays():
    searcher = DsboSearch(metric="loss", mode="min", seed=3, **FAST)
    assert searcher.set_search_properties(
        None,
        None,
        {"model": {"lr": tune.loguniform(1e-3, 1.0)}, "kind": tune.choice(["a", "b"]), "epochs": 3},
    )
    config = searcher.suggest("t1")
    assert set(config) == {"model", "kind"} and set(config["model"]) == {"lr"}
    assert 1e-3 <= config["model"]["lr"] <= 1.0 and config["kind"] in ("a", "b")
    searcher.on_trial_complete("t1", {"loss": 0.5, "model/lr": config["model"]["lr"]})
    assert searcher.tuner.campaign.store.get(1).y == [-0.5]
    assert searcher.suggest("t1") == config  # asked again: the same trial
    # a searcher given a space refuses other domains (Ray then refuses the run), but not its own
    assert not DsboSearch(SPACE).set_search_properties("loss", "min", {"x": tune.uniform(0, 1)})
    assert DsboSearch(PARAM_SPACE).set_search_properties("loss", "min", {**PARAM_SPACE, "steps": 2})


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ({"a": tune.grid_search([1, 2])}, "'a': grid_search"),
        ({"m": {"b": tune.sample_from(lambda _: 1)}}, "'m/b': Function"),
        ({"c": tune.randn(0, 1)}, "'c': Normal"),
        ({"d": [tune.uniform(0, 1), 2]}, "'d': a list"),
        ({"e": tune.qrandint(1, 3, 5)}, "'e':"),
    ],
)
def test_domains_dsbo_cannot_search_are_refused_by_name(spec, named):
    with pytest.raises(ConfigError, match=named):
        convert_search_space(spec)
    with pytest.raises(ConfigError, match=named):
        DsboSearch().set_search_properties("loss", "min", spec)


def test_bad_settings_are_refused():
    with pytest.raises(ConfigError, match="mode"):
        DsboSearch(SPACE, metric="loss", mode="minimize")
    with pytest.raises(ConfigError, match="workers, early_stopping"):
        DsboSearch(SPACE, workers=2, early_stopping="asha")
    with pytest.raises(ConfigError, match="metric"):
        DsboSearch(SPACE).suggest("t1")
    with pytest.raises(ConfigError, match="points_to_evaluate.*'n'"):
        DsboSearch(SPACE, metric="loss", mode="min", points_to_evaluate=[{"x": 0.0, "kind": "a"}])


def test_evaluated_points_are_prior_data_and_the_state_pickles():
    searcher = DsboSearch(SPACE, metric="loss", mode="min", budget=4, **FAST)
    points = [
        {"x": -0.5, "n": 1, "kind": "a"},
        {"x": 0.5, "n": 5, "kind": "b"},
        {"x": 0.1, "n": 3, "kind": "c"},
    ]
    for point in points:
        searcher.add_evaluated_point(
            point, np.float32(loss_of(point))
        )  # any number Ray's results hold
    searcher.add_evaluated_point({"x": 0.9, "n": 0, "kind": "a"}, np.float32(1.5), error=True)
    searcher.add_evaluated_point(
        {"x": 0.8, "n": 2, "kind": "b"}, 2.0, pruned=True, intermediate_values=[3.0, 2.0]
    )
    store = searcher.tuner.campaign.store
    assert [t.status for t in store.trials()] == ["completed"] * 3 + ["failed", "stopped"]
    assert store.curves()[5] == [(1, -3.0), (2, -2.0)]
    config = searcher.suggest("t1")  # three completed imports replace the three design points
    assert store.get(6).generator == "qlognei" and set(config) == {"x", "n", "kind"}
    searcher.on_trial_result("t1", {"loss": 3.0, "training_iteration": 1})
    copy = pickle.loads(pickle.dumps(searcher))  # as Ray pickles it into tuner.pkl
    assert (
        copy.tuner.campaign.store.path != store.path
        and len(copy.tuner.campaign.store.trials()) == 6
    )
    copy.on_trial_result("t1", {"loss": 2.0, "training_iteration": 2})
    copy.on_trial_complete("t1", {"loss": 2.0, "training_iteration": 2})
    assert copy.tuner.campaign.store.curves()[6] == [(1, -3.0), (2, -2.0)]
    assert (
        copy.tuner.campaign.store.get(6).status == "completed" and store.get(6).status == "pending"
    )
    assert [copy.suggest(f"t{k}") is not Searcher.FINISHED for k in (2, 3, 4, 5, 6)] == [
        True
    ] * 3 + [False] * 2
    with pytest.raises(ConfigError, match="no value for 'kind'"):
        searcher.add_evaluated_point({"x": 0.0, "n": 1}, 1.0)


def test_a_restored_searcher_tells_a_stopped_trial_from_a_finished_one():
    searcher = DsboSearch(SPACE, metric="loss", mode="min", max_t=9, **FAST)
    for trial_id in ("t1", "t2"):
        searcher.suggest(trial_id)
        searcher.on_trial_result(trial_id, {"loss": 0.5, "training_iteration": 1})
    copy = pickle.loads(pickle.dumps(searcher))  # its running trials' curves come from the store
    copy.on_trial_complete("t1", {"loss": 0.5, "training_iteration": 1})  # repeated: it returned
    copy.on_trial_complete("t2", {"loss": 0.4, "training_iteration": 2})  # stopped at step 2 < 9
    trials = record(copy)
    assert (trials["t1"].status, trials["t2"].status) == ("completed", "stopped")
    with pytest.raises(ConfigError, match="max_t"):
        DsboSearch(SPACE, max_t=0)


def test_a_store_file_of_the_users_is_kept_and_reopened_by_restore(tmp_path):
    searcher = DsboSearch(SPACE, metric="loss", mode="min", store=tmp_path / "dsbo.db", **FAST)
    config = searcher.suggest("t1")
    searcher.on_trial_complete("t1", {"loss": loss_of(config)})
    searcher.suggest("t2")  # running when saved
    searcher.save(str(tmp_path / "searcher.pkl"))
    del searcher
    gc.collect()  # the store is closed with the searcher (one writer at a time); the file stays
    assert (tmp_path / "dsbo.db").is_file()
    restored = DsboSearch()
    restored.restore(str(tmp_path / "searcher.pkl"))
    store = restored.tuner.campaign.store
    assert store.path == str(tmp_path / "dsbo.db") and [t.status for t in store.trials()] == [
        "completed",
        "pending",
    ]
    restored.on_trial_complete(
        "t2", {"loss": 0.25}
    )  # Ray's restored trial ends in the restored searcher
    assert store.get(2).y == [-0.25] and set(restored.suggest("t3")) == {"x", "n", "kind"}
    assert store.get(3).metadata["ray_trial_id"] == "t3" and store.get(3).status == "pending"
