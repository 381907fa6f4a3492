"""``python -m dsbo.sweep``: W&B sweep schema, grid/random expansion, macros, failures, and a
real two-run sweep of the train CLI; every file in configs/sweeps is validated end to end."""

import json
import math
import os
import sys
from pathlib import Path

import pytest
import yaml
from tiny_zoo import TinyEnsemble

from dsbo.cli.sweep import main
from dsbo.cli.train import build_cli
from dsbo.errors import ConfigError
from dsbo.problems.run_summary import read_metric
from dsbo.runtime.run_history import MetricHistory
from dsbo.runtime.sweep import run_sweep
from dsbo.runtime.sweep_config import build_command, expand_runs, load_sweep, parse_sweep

ROOT = Path(__file__).resolve().parents[2]


def sweep(**overrides):
    raw = {"program": "train.py", "method": "grid", "parameters": {"lr": {"values": [0.1, 0.01]}}}
    raw.update(overrides)
    return parse_sweep(raw)


def test_grid_expansion_count_and_order():
    s = sweep(
        parameters={
            "a": {"values": [1, 2, 3]},
            "b": {"min": 1, "max": 2},
            "c": {"value": "x"},
            "d": {"distribution": "q_uniform", "min": 0, "max": 1, "q": 0.5},
        }
    )
    runs = expand_runs(s)
    assert len(runs) == 3 * 2 * 1 * 3
    assert runs[0] == {"a": 1, "b": 1, "c": "x", "d": 0.0} and runs[-1] == {
        "a": 3,
        "b": 2,
        "c": "x",
        "d": 1.0,
    }
    assert len(expand_runs(s, count=4)) == 4
    assert len(expand_runs(sweep(run_cap=1))) == 1


def test_random_is_seeded_and_in_range():
    s = sweep(
        method="random",
        parameters={
            "lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1},
            "gamma": {"min": 0.5, "max": 5.0},
            "width": {"values": [8, 16]},
            "layers": {"min": 1, "max": 3},
            "q": {"distribution": "q_uniform", "min": 0, "max": 10, "q": 2},
            "p": {"values": ["a", "b"], "probabilities": [1.0, 0.0]},
        },
    )
    a, b, c = (
        expand_runs(s, count=20, seed=1),
        expand_runs(s, count=20, seed=1),
        expand_runs(s, count=20, seed=2),
    )
    assert a == b and a != c
    for run in a:
        assert 1e-4 <= run["lr"] <= 1e-1 and 0.5 <= run["gamma"] <= 5
        assert (
            run["width"] in (8, 16)
            and run["layers"] in (1, 2, 3)
            and isinstance(run["layers"], int)
        )
        assert run["q"] % 2 == 0 and run["p"] == "a"
    assert len({round(math.log10(r["lr"])) for r in a}) >= 2  # spread over decades
    with pytest.raises(ConfigError, match="--count"):
        expand_runs(s)


def test_args_macros_substituted():
    s = sweep(
        command=[
            "${env}",
            "${interpreter}",
            "-m",
            "dsbo.train",
            "fit",
            "${args}",
            "--tag=${envvar:TAG}",
            "${args_json}",
        ]
    )
    cmd = build_command(s, {"model.gamma": 0.5, "flag": True}, environ={"TAG": "t1"})
    assert cmd[1:] == [
        sys.executable,
        "-m",
        "dsbo.train",
        "fit",
        "--model.gamma=0.5",
        "--flag=True",
        "--tag=t1",
        '{"model.gamma": 0.5, "flag": true}',
    ]
    default = build_command(sweep(), {"lr": 0.1})
    assert default[-2:] == ["train.py", "--lr=0.1"]
    hyphenless = build_command(
        sweep(command=["${program}", "${args_no_hyphens}", "${args_no_boolean_flags}"]),
        {"a": 1, "b": False, "c": True},
    )
    assert hyphenless == ["train.py", "a=1", "b=False", "c=True", "--a=1", "--c"]
    with pytest.raises(ConfigError, match="environment variable MISSING"):
        build_command(sweep(command=["${envvar:MISSING}"]), {}, environ={})


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"method": "hyperband"}, "method='hyperband'"),
        ({"metrics": {"name": "x"}}, r"unknown top-level keys \['metrics'\]"),
        ({"program": None}, "program must be"),
        ({"metric": {"name": "loss", "goal": "lower"}}, "metric.goal"),
        (
            {"parameters": {"lr": {"min": 0.1, "max": 1.0}}},
            "grid cannot enumerate distribution 'uniform'",
        ),
        (
            {"parameters": {"lr": {"distribution": "uniform", "min": 0, "max": 1, "q": 2}}},
            r"keys \['q'\] do not belong",
        ),
        (
            {"parameters": {"lr": {"distribution": "log_uniform_values", "min": 0, "max": 1}}},
            "needs min > 0",
        ),
        ({"parameters": {"model": {"parameters": {"gamma": {"value": 1}}}}}, "dots"),
        ({"parameters": {"bad name": {"value": 1}}}, "must match"),
        ({"command": ["${nope}"]}, r"macro \$\{nope\}"),
        ({"run_cap": 0}, "run_cap=0"),
        (
            {"parameters": {"model.width": {"valeus": [32, 64]}}},
            r"parameters.model.width: unknown key\(s\) \['valeus'\] \(did you mean 'values'",
        ),
    ],
)
def test_schema_errors_name_the_key(overrides, match):
    with pytest.raises(ConfigError, match=match):
        sweep(**overrides)


def test_missing_required_keys_and_file(tmp_path):
    with pytest.raises(ConfigError, match=r"missing required keys \['program'\]"):
        parse_sweep({"method": "grid", "parameters": {"a": {"value": 1}}})
    with pytest.raises(ConfigError, match="no such file"):
        load_sweep(tmp_path / "none.yaml")
    assert main([str(tmp_path / "none.yaml")]) == 2


SCRIPT = """
import json, os, sys
x = float(sys.argv[1].split("=")[1])
if x < 0:
    sys.exit(3)
if x > 1:
    sys.exit(0)  # finishes without reporting the metric
json.dump({"loss": (x - 0.3) ** 2}, open(os.path.join(os.environ["DSBO_RUN_DIR"], "summary.json"), "w"))
"""


def test_failures_are_recorded_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    s = parse_sweep(
        {
            "program": "inline",
            "method": "grid",
            "metric": {"name": "loss", "goal": "minimize"},
            "parameters": {"x": {"values": [-1, 0.25, 0.9, 2]}},
            "command": ["${interpreter}", "-c", SCRIPT, "${args}"],
        }
    )
    info = run_sweep(s, tmp_path / "sw", progress=False)
    status = [r["status"] for r in info["runs"]]
    assert status == ["failed", "finished", "finished", "no_metric"]
    assert "exit code 3" in info["runs"][0]["error"]
    assert info["best"]["run"] == "run-001" and info["best"]["metric"] == pytest.approx(0.05**2)
    saved = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert [r["status"] for r in saved["runs"]] == status
    rows = (tmp_path / "sw" / "sweep.csv").read_text().splitlines()
    assert rows[0].startswith("run,status,metric,seconds,x") and len(rows) == 5
    assert (tmp_path / "sw" / "best.txt").read_text().startswith("best: run-001 loss=0.0025")
    assert (tmp_path / "sw" / "trace.png").stat().st_size > 0
    # the report over the runs (python -m dsbo.sweep writes it when the sweep ends)
    from dsbo.report import report

    page = report(tmp_path / "sw", tmp_path / "sweep.html").read_text()
    assert "panel-history" in page and "panel-parallel" in page and "neg_loss" in page
    again = report(tmp_path / "sw", tmp_path / "again.html", model=False)
    assert "panel-history" in again.read_text() and "panel-importance" not in again.read_text()


def test_grid_runs_in_parallel_keep_their_order_and_results(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    s = parse_sweep(
        {
            "program": "inline",
            "method": "grid",
            "metric": {"name": "loss", "goal": "minimize"},
            "parameters": {"x": {"values": [-1, 0.25, 0.9, 2]}},
            "command": ["${interpreter}", "-c", SCRIPT, "${args}"],
        }
    )
    info = run_sweep(s, tmp_path / "par", progress=False, workers=3)
    assert [r["status"] for r in info["runs"]] == ["failed", "finished", "finished", "no_metric"]
    assert [r["params"]["x"] for r in info["runs"]] == [-1, 0.25, 0.9, 2]
    assert info["best"]["run"] == "run-001"
    with pytest.raises(ConfigError, match="--workers must be >= 1"):
        run_sweep(s, tmp_path / "none", progress=False, workers=0)


def test_metric_from_the_offline_wandb_summary(tmp_path):
    files = tmp_path / "wandb" / "offline-run-20250101_000000-abc" / "files"
    files.mkdir(parents=True)
    (files / "wandb-summary.json").write_text(json.dumps({"val_mse": 0.5, "_step": 3}))
    assert read_metric(tmp_path, "val_mse") == 0.5
    assert read_metric(tmp_path, "other") is None


@pytest.mark.parametrize(
    "path", sorted((ROOT / "configs/sweeps").glob("*.yaml")), ids=lambda p: p.name
)
def test_every_sweep_config_is_valid_and_its_runs_parse(path, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    raw = yaml.safe_load(path.read_text())
    assert set(raw) <= {
        "program",
        "entity",
        "project",
        "description",
        "name",
        "method",
        "metric",
        "parameters",
        "early_terminate",
        "command",
        "run_cap",
        "dsbo",
    }
    assert "dsbo" not in raw or raw["method"] == "bayes"
    s = load_sweep(path)
    if s.method == "bayes":  # the campaign's first proposals are the runs' parameters
        from dsbo.runtime.sweep import bayes_problem

        problem, space, _ = bayes_problem(s)
        runs = [space.decode(x) for x in get_problem_design(problem)]
    else:
        runs = expand_runs(s, count=2 if s.method == "random" else None)
    assert runs
    cmd = build_command(s, runs[-1])
    assert cmd[:4] == ["/usr/bin/env", sys.executable, "-m", "dsbo.train"] and cmd[4] == "fit"
    # the expanded arguments are valid for the train CLI (parsed and instantiated, not run)
    cli = build_cli([*cmd[5:], "--run_dir", str(tmp_path), "--trainer.logger", "false"], run=False)
    for key, value in runs[-1].items():
        group, name = key.split(".", 1)
        if group == "model":
            assert cli.model.hparams[name] == value
        else:
            assert getattr(cli.trainer, name) == value


def get_problem_design(problem):
    from botorch.utils.sampling import draw_sobol_samples

    return problem.round_to_domain(
        draw_sobol_samples(problem.bounds, n=2, q=1, seed=0).squeeze(1)
    ).tolist()


def test_real_two_run_sweep_of_the_train_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    monkeypatch.chdir(tmp_path)
    train = {
        "seed_everything": 0,
        "trainer": {"max_epochs": 2, "enable_progress_bar": False, "enable_model_summary": False},
        "model": {
            "class_path": f"{TinyEnsemble.__module__}.TinyEnsemble",
            "init_args": {"width": 8},
        },
        "data": {"problem": "branin", "num_samples": 30},
    }
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(train))
    sweep_file = tmp_path / "gamma.yaml"
    sweep_file.write_text(
        yaml.safe_dump(
            {
                "program": "dsbo/train.py",
                "name": "tiny-gamma",
                "method": "grid",
                "metric": {"name": "val_mse", "goal": "minimize"},
                # watched through the runs' W&B transaction logs; 2 epochs never reach bracket 5
                "early_terminate": {"type": "hyperband", "min_iter": 5},
                "parameters": {"model.gamma": {"values": [0.5, 2.0]}},
                "command": [
                    "${env}",
                    "${interpreter}",
                    "-m",
                    "dsbo.train",
                    "fit",
                    "--config",
                    "tiny.yaml",
                    "${args}",
                ],
            }
        )
    )
    # an absolute sweep dir: the best line ends in "[/...]", which must not be read as markup
    assert main([str(sweep_file), "--sweep-dir", str(tmp_path / "out"), "--no-progress"]) == 0
    info = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert [r["status"] for r in info["runs"]] == ["finished", "finished"], info["runs"]
    assert [r["params"] for r in info["runs"]] == [{"model.gamma": 0.5}, {"model.gamma": 2.0}]
    for run in info["runs"]:
        run_dir = Path(run["run_dir"])
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["val_mse"] == run["metric"]
        assert list((run_dir / "wandb").glob("offline-run-*")), "each run is an offline W&B run"
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        assert config["model"]["init_args"]["gamma"] == run["params"]["model.gamma"]
        # the per-epoch history hyperband reads: the offline W&B transaction log, also in pieces
        assert run["hyperband"] == {"iterations": 2} and run["error"] is None
        [log] = run_dir.glob("wandb/offline-run-*/run-*.wandb")
        history = MetricHistory(run_dir, "val_mse").read()
        assert len(history) == 2 and history[-1] == pytest.approx(summary["val_mse"])
        data, copy = log.read_bytes(), tmp_path / "copy" / run["run"]
        (copy / log.parent.relative_to(run_dir)).mkdir(parents=True)
        growing = MetricHistory(copy, "val_mse")
        for end in range(0, len(data) + 500, 500):
            (copy / log.relative_to(run_dir)).write_bytes(data[:end])
            assert growing.read() == history[: len(growing.values)]
        assert growing.values == history
    best = min(info["runs"], key=lambda r: r["metric"])
    assert info["best"]["run"] == best["run"]


# ---------------------------------------------------------------------- method: bayes
def bayes(parameters, **overrides):
    raw = {
        "program": "train.py",
        "method": "bayes",
        "metric": {"name": "loss", "goal": "minimize"},
        "parameters": parameters,
    }
    raw.update(overrides)
    return parse_sweep(raw)


def test_bayes_search_space_maps_wandb_distributions_to_a_box():
    from dsbo.runtime.sweep import bayes_problem
    from dsbo.space import Choice, Fixed, Float, Int

    s = bayes(
        {
            "lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1},
            "gamma": {"min": 0.5, "max": 5.0},
            "layers": {"min": 1, "max": 3},
            "step": {"distribution": "q_uniform", "min": 0, "max": 1, "q": 0.25},
            "width": {"values": [32, 64, 128]},
            "act": {"values": ["relu", "tanh"]},
            "epochs": {"value": 10},
        },
        dsbo={
            "default": {
                "lr": 1e-3,
                "gamma": 1.0,
                "layers": 2,
                "step": 0.5,
                "width": 64,
                "act": "relu",
            }
        },
    )
    problem, space, options = bayes_problem(s)
    assert problem.space is space and space.names == [
        "lr",
        "gamma",
        "layers",
        "step",
        "width",
        "act",
        "epochs",
    ]
    assert space.parameters == {
        "lr": Float(1e-4, 1e-1, log=True),
        "gamma": Float(0.5, 5.0),
        "layers": Int(1, 3),
        "step": Float(0.0, 1.0, step=0.25),
        "width": Choice([32, 64, 128]),
        "act": Choice(["relu", "tanh"]),
        "epochs": Fixed(10),
    }
    assert problem.parameter_names == (
        "lr",
        "gamma",
        "layers",
        "step",
        "width=32",
        "width=64",
        "width=128",
        "act=relu",
        "act=tanh",
    )
    assert problem.bounds[0].tolist() == pytest.approx([math.log(1e-4), 0.5, 1, 0, 0, 0, 0, 0, 0])
    assert problem.bounds[1].tolist() == pytest.approx([math.log(1e-1), 5.0, 3, 1, 1, 1, 1, 1, 1])
    assert [problem.parameter_names[j] for j in problem.integer_dims] == ["layers"]
    assert problem.objective_names == ("neg_loss",), "minimized metrics are negated once"
    # the default point is the program's defaults, and BONSAI prunes toward it
    assert problem.params(problem.default_point) == {
        "lr": 1e-3,
        "gamma": 1.0,
        "layers": 2,
        "step": 0.5,
        "width": 64,
        "act": "relu",
        "epochs": 10,
    }
    assert options["postprocess"] == {"bonsai": {"rho": 0.2}} and options["surrogate"] == "map-saas"
    params = space.decode([math.log(0.01), 2.2, 2.6, 0.3, 0.1, 0.2, 0.7, 0.4, 0.6])
    assert params == {
        "lr": 0.01,
        "gamma": 2.2,
        "layers": 3,
        "step": 0.25,
        "width": 128,
        "act": "tanh",
        "epochs": 10,
    }
    assert list(params) == ["lr", "gamma", "layers", "step", "width", "act", "epochs"], (
        "the sweep's order"
    )
    assert type(params["layers"]) is int and type(params["width"]) is int


def sweep_space(**parameters):
    from dsbo.space.wandb_syntax import parse_parameter, search_space

    return search_space([parse_parameter(name, spec) for name, spec in parameters.items()])


def test_a_categorical_sweep_parameter_is_one_hot_and_decodes_to_its_value():
    space = sweep_space(opt={"values": ["adam", "sgd"]}, x={"min": 0.0, "max": 1.0})
    assert space.column_names == ["opt=adam", "opt=sgd", "x"] and space.bounds[:2] == [
        (0.0, 1.0),
        (0.0, 1.0),
    ]
    assert space.integer_columns == [], (
        "no index column: the surrogate reads no order into the values"
    )
    assert space.encode({"opt": "sgd", "x": 0.5}) == [0.0, 1.0, 0.5]
    assert space.decode([0.2, 0.7, 0.5]) == {"opt": "sgd", "x": 0.5}
    assert space.decode([0.9, 0.7, 0.5])["opt"] == "adam"
    assert sweep_space(opt={"values": ["adam"]}, x={"min": 0.0, "max": 1.0}).decode([0.5]) == {
        "opt": "adam",
        "x": 0.5,
    }
    with pytest.raises(ConfigError, match=r"opt=.*'rmsprop'.*is not one of"):
        space.encode({"opt": "rmsprop", "x": 0.5}, where="opt")


@pytest.mark.parametrize("distribution", ["log_uniform_values", "inv_log_uniform_values"])
def test_a_log_uniform_values_parameter_round_trips_on_a_log_scale(distribution):
    space = sweep_space(lr={"distribution": distribution, "min": 1e-5, "max": 0.1})
    assert space.bounds == [pytest.approx((math.log(1e-5), math.log(0.1)))]
    for lr in (1e-5, 3e-4, 0.001, 0.02, 0.1):
        assert space.decode(space.encode({"lr": lr})) == {"lr": lr}
    assert space.decode([math.log(1e-3)]) == {
        "lr": 0.001
    }  # the value the user wrote, not 0.0010000000000000002
    # log_uniform gives natural logs: the same space
    assert (
        sweep_space(
            lr={"distribution": "log_uniform", "min": math.log(1e-5), "max": math.log(0.1)}
        ).bounds
        == space.bounds
    )


@pytest.mark.parametrize(
    ("spec", "values"),
    [
        (
            {"distribution": "q_log_uniform_values", "min": 10, "max": 1000, "q": 8},
            range(16, 1001, 8),
        ),
        ({"distribution": "q_log_uniform_values", "min": 2, "max": 100, "q": 1}, range(2, 101)),
        (
            {"distribution": "q_log_uniform_values", "min": 1e-3, "max": 0.0105, "q": 1e-3},
            [k / 1000 for k in range(1, 11)],
        ),
        ({"distribution": "q_uniform", "min": 1, "max": 11, "q": 3}, [3, 6, 9]),
        (
            {"distribution": "q_uniform", "min": 0.05, "max": 1.02, "q": 0.1},
            [k / 10 for k in range(1, 11)],
        ),
    ],
)
def test_a_quantized_value_is_a_multiple_of_q_that_never_exceeds_max(spec, values):
    import numpy as np

    space = sweep_space(v=spec)
    [(low, high)] = space.bounds
    decoded = [space.decode([u])["v"] for u in np.linspace(low, high, 401)]
    assert (
        set(decoded) <= set(values)
        and max(decoded) == max(values) <= spec["max"]
        and min(decoded) >= spec["min"]
    )
    assert {type(v) for v in decoded} == ({int} if float(spec["q"]).is_integer() else {float}), (
        "W&B passes ints for a whole q"
    )
    for v in values:
        assert space.decode(space.encode({"v": v})) == {"v": v}


def test_a_quantized_range_without_two_multiples_of_q_is_refused():
    with pytest.raises(
        ConfigError,
        match=r"parameters.v: the multiples of q=0.5 in \[min=0.1, max=0.4\] are no value",
    ):
        sweep_space(v={"distribution": "q_uniform", "min": 0.1, "max": 0.4, "q": 0.5})
    with pytest.raises(ConfigError, match="only one value"):
        sweep_space(v={"distribution": "q_log_uniform_values", "min": 5, "max": 12, "q": 8})


@pytest.mark.parametrize(
    ("parameters", "extra", "match"),
    [
        ({"x": {"values": [1, "a"]}}, {}, r"parameters.x.values \[1, 'a'\] mix types"),
        ({"x": {"values": [True, 2]}}, {}, "mix types"),
        (
            {"x": {"distribution": "normal", "mu": 0, "sigma": 1}},
            {},
            "distribution 'normal' cannot be one",
        ),
        ({"x": {"values": [1, 2], "probabilities": [0.5, 0.5]}}, {}, "drop probabilities"),
        ({"x": {"value": 3}}, {}, "every parameter is fixed"),
        ({"x": {"min": 1.0, "max": 1.0}}, {}, "leave nothing to search"),
        ({"x": {"min": 0.0, "max": 1.0}}, {"metric": None}, "bayes needs a metric"),
        (
            {"x": {"min": 0.0, "max": 1.0}},
            {"dsbo": {"surogate": "gp"}},
            r"unknown option\(s\) \['surogate'\]",
        ),
        ({"x": {"min": 0.0, "max": 1.0}}, {"dsbo": {"n_init": 0}}, "dsbo.n_init"),
    ],
)
def test_bayes_parameters_that_cannot_form_a_search_space_are_named(parameters, extra, match):
    raw = {
        "program": "p.py",
        "method": "bayes",
        "metric": {"name": "loss"},
        "parameters": parameters,
        **extra,
    }
    if raw.get("metric") is None:
        raw.pop("metric")
    with pytest.raises(ConfigError, match=match):
        parse_sweep(raw)


def test_dsbo_options_belong_to_bayes_and_defaults_are_checked():
    with pytest.raises(ConfigError, match="configure method: bayes"):
        sweep(dsbo={"surrogate": "gp"})
    from dsbo.runtime.sweep import bayes_problem

    with pytest.raises(ConfigError, match=r"dsbo.default.x=2.0 is outside \[0.0, 1.0\]"):
        bayes_problem(bayes({"x": {"min": 0.0, "max": 1.0}}, dsbo={"default": {"x": 2.0}}))
    with pytest.raises(ConfigError, match="dsbo.default: no value for y"):
        bayes_problem(
            bayes(
                {"x": {"min": 0.0, "max": 1.0}, "y": {"values": ["a", "b"]}},
                dsbo={"default": {"x": 0.5}},
            )
        )
    # without a default, the middle of every range (an int rounded, a categorical's first value)
    problem, _, _ = bayes_problem(bayes({"n": {"min": 1, "max": 12}, "y": {"values": ["a", "b"]}}))
    default = problem.params(problem.default_point)
    assert default["n"] in (6, 7) and default["y"] == "a"


BAYES_SCRIPT = """
import json, os, sys, time
x = float(sys.argv[1].split("=")[1])
log = os.environ["SWEEP_LOG"]
run = os.path.basename(os.environ["DSBO_RUN_DIR"])
open(log, "a").write(f"start {run}\\n")
time.sleep(float(os.environ.get("SWEEP_SLEEP", "0")))
if x < 0:
    sys.exit(3)
json.dump({"loss": (x - 0.3) ** 2}, open(os.path.join(os.environ["DSBO_RUN_DIR"], "summary.json"), "w"))
open(log, "a").write(f"end {run}\\n")
"""


def bayes_file(tmp_path):
    path = tmp_path / "bayes.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "program": "inline",
                "name": "quad",
                "method": "bayes",
                "metric": {"name": "loss", "goal": "minimize"},
                "parameters": {"x": {"min": -0.4, "max": 1.0}},
                "command": ["${interpreter}", "-c", BAYES_SCRIPT, "${args}"],
                "dsbo": {"surrogate": "gp", "n_init": 3},
            }
        )
    )
    return path


def test_bayes_sweep_runs_records_failures_and_writes_its_outputs(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("SWEEP_LOG", str(tmp_path / "log"))
    out = tmp_path / "out"
    assert (
        main(
            [
                str(bayes_file(tmp_path)),
                "--count",
                "7",
                "--workers",
                "2",
                "--sweep-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    info = json.loads((out / "sweep.json").read_text())
    runs = info["runs"]
    assert len(runs) == 7 and info["method"] == "bayes" and info["workers"] == 2
    for r in runs:
        assert (r["status"] == "failed") == (r["params"]["x"] < 0), (
            r
        )  # a failed run is a failed trial
        if r["status"] == "finished":
            assert r["metric"] == pytest.approx((r["params"]["x"] - 0.3) ** 2)
    from dsbo.storage import TrialStore

    with TrialStore(out / "trials.sqlite", lock=False) as store:
        assert (
            store.count("failed") == sum(r["status"] == "failed" for r in runs)
            and store.count() == 7
        )
        assert [t.generator for t in store.trials()][:3] == ["sobol-init"] * 3
    assert (out / "trace.png").is_file() and len((out / "sweep.csv").read_text().splitlines()) == 8
    assert (out / "best.txt").read_text().startswith(f"best: {info['best']['run']} loss=")
    assert info["best"]["metric"] == min(r["metric"] for r in runs if r["metric"] is not None)
    assert "panel-importance" in (out / "report.html").read_text()  # the campaign's report
    from dsbo.report import report

    assert (
        "panel-slices" in report(out, tmp_path / "bayes.html").read_text()
    )  # rebuilt from the directory


def _sweep_main(argv):
    os._exit(main(argv))


def test_a_killed_bayes_sweep_resumes_with_each_run_exactly_once(tmp_path, monkeypatch):
    import multiprocessing
    import signal
    import time

    log, out = tmp_path / "log", tmp_path / "out"
    for name, value in (
        ("WANDB_MODE", "disabled"),
        ("SWEEP_LOG", str(log)),
        ("SWEEP_SLEEP", "0.5"),
    ):
        monkeypatch.setenv(name, value)
    argv = [str(bayes_file(tmp_path)), "--count", "5", "--sweep-dir", str(out), "--no-progress"]
    first = multiprocessing.get_context("fork").Process(
        target=_sweep_main, args=(argv,)
    )  # the sweep's own process
    first.start()
    deadline = time.monotonic() + 120
    while not (
        log.exists() and log.read_text().count("end") >= 2 and log.read_text().count("start") >= 3
    ):
        assert time.monotonic() < deadline and first.is_alive(), "the first sweep did not get going"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)  # kill -9 while a run is in flight
    first.join(30)
    time.sleep(1.0)  # the run in flight died with the sweep: it never ends
    interrupted = log.read_text().splitlines()
    assert main(argv) == 0  # the same command resumes
    lines = log.read_text().splitlines()
    assert lines[: len(interrupted)] == interrupted
    ends = [line.split()[1] for line in lines if line.startswith("end")]
    starts = [line.split()[1] for line in lines if line.startswith("start")]
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    finished = [r for r in runs if r["status"] == "finished"]
    assert sorted(ends) == sorted(r["run"] for r in finished), (
        "every finished run ended exactly once"
    )
    assert len(set(starts)) == 5 and len(starts) - 5 <= 1, "only the run in flight ran again"
    assert len(runs) == 5


def test_a_bayes_sweep_dir_of_another_search_space_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("SWEEP_LOG", str(tmp_path / "log"))
    path = bayes_file(tmp_path)
    assert (
        main([str(path), "--count", "3", "--sweep-dir", str(tmp_path / "out"), "--no-progress"])
        == 0
    )
    raw = yaml.safe_load(path.read_text())
    raw["parameters"]["x"]["max"] = 2.0
    path.write_text(yaml.safe_dump(raw))
    from dsbo.errors import StoreMismatchError
    from dsbo.runtime.sweep_config import load_sweep as load

    with pytest.raises(StoreMismatchError, match="differs in bounds"):
        run_sweep(load(path), tmp_path / "out", count=4, progress=False)


def test_a_log_uniform_value_never_exceeds_its_maximum():
    space = sweep_space(lr={"distribution": "log_uniform_values", "min": 1e-4, "max": 0.05})
    [(low, high)] = space.bounds
    assert space.decode([high])["lr"] <= 0.05 and space.decode([low])["lr"] >= 1e-4
    assert space.decode(space.encode({"lr": 0.05}))["lr"] == 0.05


CATEGORICAL_SCRIPT = """
import json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
assert args["opt"] in ("adam", "sgd") and args["epochs"] == "3" and args["batch"] in ("16", "32", "48", "64"), args
loss = (float(args["x"]) - 0.3) ** 2 + (0.0 if args["opt"] == "sgd" else 1.0)
json.dump({"loss": loss}, open(os.path.join(os.environ["DSBO_RUN_DIR"], "summary.json"), "w"))
"""


def test_a_bayes_sweep_over_a_categorical_runs_with_the_values_themselves(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    path = tmp_path / "categorical.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "program": "inline",
                "name": "cat",
                "method": "bayes",
                "metric": {"name": "loss", "goal": "minimize"},
                "parameters": {
                    "opt": {"values": ["adam", "sgd"]},
                    "x": {"min": 0.0, "max": 1.0},
                    "epochs": {"value": 3},
                    "batch": {
                        "distribution": "q_log_uniform_values",
                        "min": 16,
                        "max": 64,
                        "q": 16,
                    },
                },
                "command": ["${interpreter}", "-c", CATEGORICAL_SCRIPT, "${args}"],
                "dsbo": {
                    "surrogate": "gp",
                    "n_init": 3,
                    "default": {"opt": "adam", "x": 0.5, "batch": 32},
                },
            },
            sort_keys=False,
        )
    )
    assert main(["--config", str(path), "--dry_run"]) == 0
    out = tmp_path / "out"
    assert (
        main(["--config", str(path), "--count", "5", "--run_dir", str(out), "--progress", "false"])
        == 0
    )
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert [r["status"] for r in runs] == ["finished"] * 5, runs
    for r in runs:
        assert list(r["params"]) == ["opt", "x", "epochs", "batch"], (
            "the sweep file's order, fixed values included"
        )
        assert r["params"]["opt"] in ("adam", "sgd") and r["params"]["batch"] in (16, 32, 48, 64)
        assert f"--opt={r['params']['opt']}" in r["command"]
        assert r["metric"] == pytest.approx(
            (r["params"]["x"] - 0.3) ** 2 + (r["params"]["opt"] != "sgd")
        )
    assert (out / "sweep.csv").read_text().splitlines()[
        0
    ] == "run,status,metric,seconds,opt,x,epochs,batch,error"
