"""Studies in and out (dsbo.integrations.studies, studies_optuna) with real objects: dsbo runs
written to CSV, JSON and Optuna studies (in memory and SQLite) and read back; an Optuna study
with failed, pruned, running and waiting trials continued in a dsbo Tuner; an Ax experiment
made by Ax's Client and saved by Ax's JSON store; CSV rows that do not fit refused with reasons.
"""

from __future__ import annotations

import math
import warnings

import pytest

import dsbo
from dsbo.acquisition import OptimizerSettings
from dsbo.errors import ConfigError
from dsbo.integrations.studies import from_csv, from_json, import_csv, import_json, to_csv, to_json
from dsbo.space import SearchSpace

optuna = pytest.importorskip("optuna")
from dsbo.integrations.studies_optuna import (  # noqa: E402
    from_ax,
    from_optuna,
    import_ax,
    import_optuna,
    to_optuna,
)

optuna.logging.set_verbosity(optuna.logging.ERROR)

SPACE = {
    "lr": dsbo.Float(1e-4, 1e-1, log=True),
    "width": dsbo.Int(8, 64, log=True),
    "layers": dsbo.Int(1, 4),
    "opt": dsbo.Choice(["adam", "sgd"]),
    "momentum": dsbo.Float(0.0, 0.9, when={"opt": "sgd"}),
    "flag": dsbo.Choice([True, False]),
}
FAST = dict(
    surrogate="gp",
    dry_run=False,
    seed=0,
    optimizer=OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25),
)


def loss(p):
    if p["layers"] == 4:
        raise RuntimeError("4 layers diverge")
    return (
        (math.log10(p["lr"]) + 2) ** 2
        + abs(math.log2(p["width"]) - 5) / 3
        + 0.1 * p["layers"]
        + (0.3 if p["opt"] == "adam" else abs(p["momentum"] - 0.5))
        + 0.05 * p["flag"]
    )


def records(tuner_or_result):
    """Each trial as (params, values, status, error, curve), the user's direction."""
    from dsbo.integrations.studies import trial_records

    _, rows = trial_records(tuner_or_result)
    return [(r["params"], r["values"], r["status"], r["error"], r["curve"]) for r in rows]


@pytest.fixture(scope="module")
def run():
    """A dsbo run with completed, failed and stopped trials (with curves) and a pending one."""
    tuner = dsbo.Tuner(SPACE, budget=4, n_init=2, **FAST)
    tuner.import_trials(
        [
            {
                "params": {
                    "lr": 0.01,
                    "width": 16,
                    "layers": 2,
                    "opt": "sgd",
                    "momentum": 0.4,
                    "flag": True,
                },
                "status": "stopped",
                "curve": [(1, 3.0), (2, 2.5)],
                "error": "pruned by the median rule",
            },
            {
                "params": {
                    "lr": 0.1,
                    "width": 64,
                    "layers": 4,
                    "opt": "sgd",
                    "momentum": 0.9,
                    "flag": False,
                },
                "status": "failed",
                "error": "4 layers diverge",
            },
            {
                "params": {"lr": 0.001, "width": 32, "layers": 1, "opt": "adam", "flag": False},
                "values": 1.7,
                "curve": [(1, 2.2), (3, 1.7)],
            },
        ]
    )
    tuner.tell({"lr": 0.02, "width": 8, "layers": 3, "opt": "adam", "flag": True}, 0.9)  # attached
    result = tuner.run(loss)
    tuner.import_trials(
        [
            {
                "params": {"lr": 0.05, "width": 9, "layers": 1, "opt": "adam", "flag": True},
                "status": "pending",
            }
        ]
    )
    assert {s for _, _, s, _, _ in records(tuner)} == {"completed", "failed", "stopped", "pending"}
    return tuner, result


def finished(rows):
    return [r for r in rows if r[2] != "pending"]


def test_dsbo_to_csv_and_back_gives_the_same_trials(run, tmp_path):
    tuner, _ = run
    path = to_csv(tuner.result(), tmp_path / "trials.csv")
    header = path.read_text().splitlines()[0].split(",")
    assert {"trial", "status", "generator", "error", "curve", *SPACE, "objective"} <= set(header)
    again = dsbo.Tuner(SPACE, budget=2, **FAST)
    result = import_csv(again, path)
    assert result.refused == []
    assert records(again) == records(tuner)  # params, values, status, error and curve, exactly
    assert {t.generator for t in result.trials} == {"imported"} and again.campaign.num_used == 0
    # dsbo's own history.csv re-imports too (no curve column there)
    from dsbo.analysis.outputs import write_outputs

    (tmp_path / "run").mkdir()
    write_outputs(tuner.campaign, tmp_path / "run")
    study = from_csv(tmp_path / "run" / "history.csv", SPACE)
    assert study.refused == [] and [r.params for r in study.rows] == [p for p, *_ in records(tuner)]
    assert [r.values for r in study.rows if r.status == "completed"] == [
        v["objective"] for _, v, s, _, _ in records(tuner) if s == "completed"
    ]


def test_dsbo_to_json_and_back_rebuilds_space_outcomes_and_rows(tmp_path):
    space = {
        "x": dsbo.Float(0.0, 1.0, step=0.25),
        "n": dsbo.Int(2, 20, step=2),
        "c": dsbo.Choice([1, 2.5, "z", None]),
        "k": dsbo.Fixed("const"),
    }
    tuner = dsbo.Tuner(
        space,
        budget=3,
        objectives={"loss": "min", "acc": ("max", 0.5)},
        constraints=["memory <= 8"],
        **FAST,
    )
    tuner.import_trials(
        [
            {
                "params": {"x": 0.25, "n": 4, "c": None},
                "values": {"loss": 1.0, "acc": 0.7, "memory": 3.0},
            },
            {
                "params": {"x": 0.5, "n": 6, "c": "z"},
                "values": {"loss": 0.5, "acc": 0.6, "memory": 9.0},
            },
            {"params": {"x": 1.0, "n": 20, "c": 2.5}, "status": "failed", "error": "out of memory"},
        ]
    )
    tuner.tell({"x": 0.0, "n": 2, "c": 1}, {"loss": 2.0, "acc": 0.9, "memory": 1.0})
    path = to_json(tuner, tmp_path / "study.json")
    study = from_json(path)
    assert (
        study.space == SearchSpace(space)
        and study.outcomes == tuner.outcomes
        and study.refused == []
    )
    again, result = study.tuner(budget=2, **FAST)
    assert (
        result.refused == [] and records(again) == records(tuner) and again.campaign.num_used == 0
    )
    other = dsbo.Tuner(
        space,
        budget=2,
        objectives={"loss": "min", "acc": ("max", 0.5)},
        constraints=["memory <= 8"],
        **FAST,
    )
    assert import_json(other, path).refused == [] and records(other) == records(tuner)
    # a trial of the document that is not a trial is refused by its position
    path.write_text(path.read_text().replace('"trials": [', '"trials": [\n  7,', 1))
    assert [i for i, _ in from_json(path).refused] == [0]
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a dsbo-trials document"):
        from_json(tmp_path / "other.json")


@pytest.mark.parametrize("storage", ["memory", "sqlite"])
def test_dsbo_to_optuna_and_back_gives_the_same_trials(run, tmp_path, storage):
    tuner, _ = run
    url = None if storage == "memory" else f"sqlite:///{tmp_path}/optuna.db"
    study = to_optuna(tuner.result(), study_name="dsbo-run", storage=url)
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    mine = finished(records(tuner))
    states = {"completed": "COMPLETE", "failed": "FAIL", "stopped": "PRUNED"}
    assert [t.state.name for t in study.trials] == [states[s] for _, _, s, _, _ in mine]
    assert [t.params for t in study.trials] == [p for p, *_ in mine]
    pruned = next(t for t in study.trials if t.state.name == "PRUNED")
    assert (
        pruned.intermediate_values == {1: 3.0, 2: 2.5}
        and pruned.user_attrs["dsbo_error"] == "pruned by the median rule"
    )
    assert study.trials[0].distributions["lr"] == optuna.distributions.FloatDistribution(
        1e-4, 1e-1, log=True
    )
    if url is not None:  # by name from the storage, as a second process would
        del study
        back = from_optuna("dsbo-run", storage=url)
    else:
        back = from_optuna(study)
    # the space read from the distributions: momentum exists only for sgd
    assert back.space.parameters["momentum"].conditions == {"opt": ("sgd",)}
    assert (
        back.space.parameters["lr"] == SPACE["lr"]
        and back.space.parameters["width"] == SPACE["width"]
    )
    again, result = back.tuner(budget=2, **FAST)
    assert result.refused == [] and records(again) == mine
    assert again.campaign.num_used == 0
    with pytest.raises(ConfigError, match="storage="):
        from_optuna("dsbo-run")


def tpe_study(n_trials=30):
    """An Optuna TPE study over a conditional mixed space, with failed, pruned, a running and
    a waiting (enqueued, never run) trial."""

    def objective(trial):
        p = {
            "lr": trial.suggest_float("lr", 1e-4, 1e-1, log=True),
            "width": trial.suggest_int("width", 8, 64, log=True),
            "layers": trial.suggest_int("layers", 1, 4),
            "opt": trial.suggest_categorical("opt", ["adam", "sgd"]),
        }
        if p["opt"] == "sgd":
            p["momentum"] = trial.suggest_float("momentum", 0.0, 0.9)
        p["flag"] = trial.suggest_categorical("flag", [True, False])
        value = loss(p)  # RuntimeError: a failed trial
        for step in (1, 2, 3):
            trial.report(value + 1.0 / step, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    pruner = optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1)
    study = optuna.create_study(
        study_name="tpe", sampler=optuna.samplers.TPESampler(seed=1), pruner=pruner
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=n_trials, catch=(RuntimeError,))
    running = study.ask(
        {
            "lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True),
            "width": optuna.distributions.IntDistribution(8, 64, log=True),
            "layers": optuna.distributions.IntDistribution(1, 4),
            "opt": optuna.distributions.CategoricalDistribution(["adam", "sgd"]),
            "flag": optuna.distributions.CategoricalDistribution([True, False]),
        }
    )
    if running.params["opt"] == "sgd":
        running.suggest_float("momentum", 0.0, 0.9)
    study.enqueue_trial({"lr": 0.01, "width": 16, "layers": 1, "opt": "adam", "flag": True})
    return study


def test_an_optuna_study_continued_in_a_tuner(tmp_path):
    study = tpe_study()
    states = [t.state.name for t in study.trials]
    assert {"COMPLETE", "FAIL", "PRUNED", "RUNNING", "WAITING"} <= set(states)
    imported = from_optuna(study, space=SPACE)
    waiting = states.index("WAITING")
    assert imported.refused == [(waiting, "state WAITING (never run) cannot be imported")]
    tuner, result = imported.tuner(budget=3, **FAST)
    assert result.refused == [(waiting, "state WAITING (never run) cannot be imported")]
    assert (
        len(result.trials) == len(states) - 1 and tuner.campaign.num_used == 0
    )  # imports never charged
    assert [t.status for t in result.trials].count("stopped") == states.count("PRUNED")
    stopped = next(t for t, s in zip(study.trials, states, strict=False) if s == "PRUNED")
    curve = dict(stopped.intermediate_values)
    assert records(tuner)[stopped.number][4] == sorted(
        curve.items()
    )  # the user's direction, as reported
    out = tuner.run(loss)
    new = out.history[out.history["generator"] != "imported"]
    assert len(new) == 3 and tuner.campaign.num_used == 3
    assert new["generator"].iloc[0] not in (
        "sobol",
        "sobol-init",
    )  # the first proposal is the model's
    best_tpe = min(t.value for t in study.trials if t.state.name == "COMPLETE")
    assert out.best_value <= best_tpe  # the imported best counts


def test_import_optuna_maps_several_objectives_and_constraints_by_name(tmp_path):
    space = {"x": dsbo.Float(0.0, 1.0), "c": dsbo.Choice(["a", "b"]), "k": dsbo.Fixed(3)}
    options = dict(objectives={"loss": "min", "acc": "max"}, constraints=["memory <= 8"], **FAST)
    source = dsbo.Tuner(space, budget=2, **options)
    source.import_trials(
        [
            {"params": {"x": 0.1, "c": "a"}, "values": {"loss": 1.0, "acc": 0.2, "memory": 4.0}},
            {"params": {"x": 0.9, "c": "b"}, "status": "failed", "error": "boom"},
        ]
    )
    url = f"sqlite:///{tmp_path}/mo.db"
    study = to_optuna(source, study_name="mo", storage=url)
    assert [d.name for d in study.directions] == ["MINIMIZE", "MAXIMIZE"]
    assert study.trials[0].values == [1.0, 0.2] and study.trials[0].user_attrs["memory"] == 4.0
    target = dsbo.Tuner(space, budget=2, **options)
    result = import_optuna(target, "mo", storage=url)
    assert result.refused == [] and records(target) == records(source)
    assert records(target)[1][3] == "boom"
    # read without a space: a single-valued distribution is a Fixed parameter; without names
    # the objectives are numbered, and several objectives need the constrained outcome's attrs
    back = from_optuna(study, constraints=["memory <= 8"])
    assert back.space == SearchSpace(space) and back.outcomes.objective_names == (
        "objective_0",
        "objective_1",
    )
    assert back.rows[0].values == {"objective_0": 1.0, "objective_1": 0.2, "memory": 4.0}
    assert from_optuna(study, constraints=["latency <= 3"]).refused == [
        (0, "no user_attrs for the outcome(s) ['latency']")
    ]
    with pytest.raises(ConfigError, match="2 objective"):
        from_optuna(study, objectives=["loss"])


@pytest.mark.slow
def test_ax_experiment_saved_by_ax_json_store_is_imported(tmp_path):
    pytest.importorskip("ax")
    from ax import ChoiceParameterConfig, Client, RangeParameterConfig
    from ax.storage.json_store.save import save_experiment

    client = Client()
    client.configure_experiment(
        name="ax-study",
        parameters=[
            RangeParameterConfig(
                name="lr", parameter_type="float", bounds=(1e-4, 1e-1), scaling="log"
            ),
            RangeParameterConfig(name="layers", parameter_type="int", bounds=(1, 4)),
            ChoiceParameterConfig(
                name="opt",
                parameter_type="str",
                values=["adam", "sgd", "rmsprop"],
                is_ordered=False,
            ),
        ],
    )
    client.configure_optimization(objective="-loss")
    done = client.attach_trial({"lr": 0.01, "layers": 2, "opt": "adam"})
    client.complete_trial(done, {"loss": 0.5})
    client.mark_trial_failed(client.attach_trial({"lr": 0.001, "layers": 3, "opt": "sgd"}))
    client.mark_trial_abandoned(client.attach_trial({"lr": 0.002, "layers": 1, "opt": "sgd"}))
    early = client.attach_trial({"lr": 0.004, "layers": 4, "opt": "rmsprop"})
    client.attach_data(early, {"loss": 1.5}, progression=1)
    client.attach_data(early, {"loss": 1.2}, progression=2)
    client.mark_trial_early_stopped(early)
    client.complete_trial(
        client.attach_trial({"lr": 0.05, "layers": 1, "opt": "sgd"}), {"loss": (0.25, 0.01)}
    )
    path = tmp_path / "experiment.json"
    save_experiment(client._experiment, str(path))

    study = from_ax(path)
    assert study.space == SearchSpace(
        {
            "lr": dsbo.Float(1e-4, 1e-1, log=True),
            "layers": dsbo.Int(1, 4),
            "opt": dsbo.Choice(["adam", "sgd", "rmsprop"]),
        }
    )
    assert [o.name for o in study.outcomes.objectives] == ["loss"] and study.outcomes.objectives[
        0
    ].direction == "minimize"
    assert [r.status for r in study.rows] == [
        "completed",
        "failed",
        "failed",
        "stopped",
        "completed",
    ]
    assert study.rows[2].error == "abandoned in Ax" and study.rows[3].curve == [(1, 1.5), (2, 1.2)]
    tuner = dsbo.Tuner(
        {
            "lr": dsbo.Float(1e-4, 1e-1, log=True),
            "layers": dsbo.Int(1, 4),
            "opt": dsbo.Choice(["adam", "sgd", "rmsprop"]),
        },
        budget=2,
        **FAST,
    )
    result = import_ax(tuner, path)
    assert result.refused == [] and tuner.campaign.num_used == 0
    history = tuner.result().history
    assert history["objective"].iloc[0] == 0.5 and history["objective"].iloc[4] == pytest.approx(
        0.25
    )
    assert history["objective"].iloc[3] == 1.2 and history["status"].tolist()[:4] == [
        "completed",
        "failed",
        "failed",
        "stopped",
    ]
    # a space without "rmsprop": the trial that used it is refused with the reason
    narrow = dsbo.Tuner(
        {
            "lr": dsbo.Float(1e-4, 1e-1, log=True),
            "layers": dsbo.Int(1, 4),
            "opt": dsbo.Choice(["adam", "sgd"]),
        },
        budget=2,
        **FAST,
    )
    refused = import_ax(narrow, path).refused
    assert [i for i, _ in refused] == [
        early
    ] and "'rmsprop' is not one of ['adam', 'sgd']" in refused[0][1]
    # several objectives and an outcome constraint; a completed trial without the constrained metric is refused
    two = Client()
    two.configure_experiment(
        name="ax-mo",
        parameters=[RangeParameterConfig(name="x", parameter_type="float", bounds=(0.0, 1.0))],
    )
    two.configure_optimization(objective="-loss, acc", outcome_constraints=["memory <= 8"])
    two.complete_trial(two.attach_trial({"x": 0.3}), {"loss": 1.0, "acc": 0.5, "memory": 3.0})
    two.complete_trial(two.attach_trial({"x": 0.6}), {"loss": 0.5, "acc": 0.7})
    save_experiment(two._experiment, str(tmp_path / "mo.json"))
    mo = from_ax(tmp_path / "mo.json")
    assert (
        mo.outcomes
        == dsbo.Tuner(
            {"x": dsbo.Float(0.0, 1.0)},
            objectives={"loss": "min", "acc": "max"},
            constraints=["memory <= 8"],
            **FAST,
        ).outcomes
    )
    assert mo.rows[0].values == {"loss": 1.0, "acc": 0.5, "memory": 3.0}
    assert mo.refused == [(1, "arm 1_0: no data for the metric(s) ['memory']")]


CSV_SPACE = {
    "lr": dsbo.Float(1e-4, 1e-1, log=True),
    "layers": dsbo.Int(1, 4),
    "opt": dsbo.Choice(["adam", "sgd"]),
    "momentum": dsbo.Float(0.0, 0.9, when={"opt": "sgd"}),
}


def test_csv_rows_that_do_not_fit_are_refused_with_the_reason(tmp_path):
    path = tmp_path / "other_tool.csv"
    path.write_text(
        "lr,layers,opt,momentum,loss,status,error,notes\n"
        "0.01,2,adam,,0.5,,,fine\n"  # 0 fine (momentum inactive)
        "0.01,2.5,adam,,0.5,completed,,\n"  # 1 an integer column holding 2.5
        "0.5,2,adam,,0.5,completed,,\n"  # 2 lr outside its bounds
        "0.01,2,nadam,,0.5,completed,,\n"  # 3 not a choice
        "0.01,2,sgd,,0.5,completed,,\n"  # 4 momentum active but empty
        "0.01,3,sgd,0.4,,completed,,\n"  # 5 a completed trial without its value
        "0.01,3,sgd,0.4,,failed,diverged,\n"  # 6 fine: failed, with its error
        "0.01,3.0,sgd,0.5,0.7,stopped,,\n"  # 7 fine: 3.0 is the integer 3 (pandas writes ints so)
        "abc,3,sgd,0.5,0.7,,,\n"  # 8 not a number
        "0.01,3,sgd,0.5,0.7,abandoned,,\n"  # 9 a status that cannot be imported
    )
    study = from_csv(path, CSV_SPACE, "loss")
    assert [r.params for r in study.rows[:1]] == [{"lr": 0.01, "layers": 2, "opt": "adam"}]
    assert study.rows[-1].params["layers"] == 3 and isinstance(study.rows[-1].params["layers"], int)
    tuner = dsbo.Tuner(CSV_SPACE, budget=2, objective="loss", **FAST)
    result = study.import_into(tuner)
    reasons = dict(result.refused)
    assert sorted(reasons) == [1, 2, 3, 4, 5, 8, 9]
    assert reasons[1] == "layers='2.5' is not an integer"
    assert "lr=0.5 is outside [0.0001, 0.1]" in reasons[2]
    assert reasons[3] == "opt='nadam' is not one of ['adam', 'sgd']"
    assert "no value for momentum" in reasons[4]
    assert "completed trial needs its value" in reasons[5]
    assert reasons[8] == "lr='abc' is not a number" and "abandoned" in reasons[9]
    assert [t.status for t in result.trials] == ["completed", "failed", "stopped"]
    assert result.trials[1].error == "diverged" and tuner.campaign.num_used == 0
    with pytest.raises(ConfigError, match="row 1: layers='2.5' is not an integer"):
        study.import_into(dsbo.Tuner(CSV_SPACE, budget=2, objective="loss", **FAST), strict=True)
    (tmp_path / "bounds.csv").write_text("lr,layers,opt,loss\n0.01,2,adam,0.5\n0.5,2,adam,0.5\n")
    strict = dsbo.Tuner(CSV_SPACE, budget=2, objective="loss", **FAST)
    with pytest.raises(
        ConfigError, match=r"row 1: .*lr=0.5 is outside"
    ):  # refused by the space, numbered as in the file
        from_csv(tmp_path / "bounds.csv", CSV_SPACE, "loss").import_into(strict, strict=True)
    assert strict.campaign.store.trials() == []  # nothing imported
    # a column of the space or the outcomes missing: said at once, naming it
    (tmp_path / "no_layers.csv").write_text("lr,opt,loss\n0.01,adam,0.5\n")
    with pytest.raises(ConfigError, match="no column 'layers'"):
        from_csv(tmp_path / "no_layers.csv", CSV_SPACE, "loss")
    with pytest.raises(ConfigError, match="no column 'accuracy'"):
        from_csv(path, CSV_SPACE, "accuracy")
    # other column names, through columns=
    (tmp_path / "renamed.csv").write_text("learning_rate,layers,opt,val_loss\n0.01,1,adam,0.3\n")
    renamed = from_csv(
        tmp_path / "renamed.csv",
        CSV_SPACE,
        "loss",
        columns={"learning_rate": "lr", "val_loss": "loss"},
    )
    assert renamed.refused == [] and renamed.rows[0].params == {
        "lr": 0.01,
        "layers": 1,
        "opt": "adam",
    }
