"""DsboSearch (dsbo.integrations.ray) over a param_space of only categoricals, on a local Ray
cluster of two CPUs (issue 58): two trials at once, each configuration run once before any is
repeated, the repeats marked in dsbo's record. Skipped only where Ray Tune is not installed."""

from __future__ import annotations

import os
import sys

import pytest

ray = pytest.importorskip(
    "ray", reason="Ray Tune is the optional extra `ray` (pip install -e '.[ray]')"
)
tune = pytest.importorskip(
    "ray.tune", reason="Ray Tune is the optional extra `ray` (pip install -e '.[ray]')"
)

from ray.tune.search import ConcurrencyLimiter  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.integrations.ray import DsboSearch  # noqa: E402

OPT = {"a": 0.0, "b": 1.0, "c": 2.0}
PARAM_SPACE = {"opt": tune.choice(list(OPT)), "act": tune.choice(["relu", "tanh"])}


def trainable(config):
    tune.report({"loss": OPT[config["opt"]] + (0.5 if config["act"] == "tanh" else 0.0)})


@pytest.fixture(scope="module")
def ray_cluster():
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers need not import dsbo
    saved = os.environ.get("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS")
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()
    if saved is None:
        os.environ.pop("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS")
    else:
        os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = saved


def test_only_categoricals_run_each_configuration_once_before_a_marked_repeat(
    ray_cluster, tmp_path
):
    optimizer = OptimizerSettings(num_restarts=2, raw_samples=32)
    searcher = DsboSearch(surrogate="gp", n_init=2, optimizer=optimizer)
    tuner = tune.Tuner(
        trainable,
        param_space=PARAM_SPACE,
        tune_config=tune.TuneConfig(
            search_alg=ConcurrencyLimiter(searcher, max_concurrent=2),
            num_samples=8,
            metric="loss",
            mode="min",
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="run", verbose=0),
    )
    results = tuner.fit()
    assert len(results) == 8 and not results.errors
    assert {(r.config["opt"], r.config["act"]) for r in results} == {
        (o, a) for o in OPT for a in ("relu", "tanh")
    }
    campaign = searcher.tuner.campaign
    trials = sorted(campaign.store.trials(), key=lambda t: t.id)
    configs = [tuple(campaign.problem.params(t.x).values()) for t in trials]
    assert len(set(configs[:6])) == 6  # running trials were pending: no repeat before all six
    assert [bool(t.metadata.get("space_exhausted")) for t in trials] == [False] * 6 + [True] * 2
    assert searcher.tuner.result().best_value == pytest.approx(0.0)
