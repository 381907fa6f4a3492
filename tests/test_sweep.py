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

from dsbo.errors import ConfigError
from dsbo.sweep import (
    build_command,
    expand_runs,
    load_sweep,
    main,
    parse_sweep,
    read_metric,
    run_sweep,
)
from dsbo.train import build_cli

ROOT = Path(__file__).resolve().parents[1]


def sweep(**overrides):
    raw = {"program": "train.py", "method": "grid", "parameters": {"lr": {"values": [0.1, 0.01]}}}
    raw.update(overrides)
    return parse_sweep(raw)


def test_grid_expansion_count_and_order():
    s = sweep(parameters={"a": {"values": [1, 2, 3]}, "b": {"min": 1, "max": 2}, "c": {"value": "x"}, "d": {"distribution": "q_uniform", "min": 0, "max": 1, "q": 0.5}})
    runs = expand_runs(s)
    assert len(runs) == 3 * 2 * 1 * 3
    assert runs[0] == {"a": 1, "b": 1, "c": "x", "d": 0.0} and runs[-1] == {"a": 3, "b": 2, "c": "x", "d": 1.0}
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
    a, b, c = expand_runs(s, count=20, seed=1), expand_runs(s, count=20, seed=1), expand_runs(s, count=20, seed=2)
    assert a == b and a != c
    for run in a:
        assert 1e-4 <= run["lr"] <= 1e-1 and 0.5 <= run["gamma"] <= 5
        assert run["width"] in (8, 16) and run["layers"] in (1, 2, 3) and isinstance(run["layers"], int)
        assert run["q"] % 2 == 0 and run["p"] == "a"
    assert len({round(math.log10(r["lr"])) for r in a}) >= 2  # spread over decades
    with pytest.raises(ConfigError, match="--count"):
        expand_runs(s)


def test_args_macros_substituted():
    s = sweep(command=["${env}", "${interpreter}", "-m", "dsbo.train", "fit", "${args}", "--tag=${envvar:TAG}", "${args_json}"])
    cmd = build_command(s, {"model.gamma": 0.5, "flag": True}, environ={"TAG": "t1"})
    assert cmd[1:] == [sys.executable, "-m", "dsbo.train", "fit", "--model.gamma=0.5", "--flag=True", "--tag=t1", '{"model.gamma": 0.5, "flag": true}']
    default = build_command(sweep(), {"lr": 0.1})
    assert default[-2:] == ["train.py", "--lr=0.1"]
    hyphenless = build_command(sweep(command=["${program}", "${args_no_hyphens}", "${args_no_boolean_flags}"]), {"a": 1, "b": False, "c": True})
    assert hyphenless == ["train.py", "a=1", "b=False", "c=True", "--a=1", "--c"]
    with pytest.raises(ConfigError, match="environment variable MISSING"):
        build_command(sweep(command=["${envvar:MISSING}"]), {}, environ={})


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"method": "bayes"}, "needs|W&B's server"),
        ({"method": "hyperband"}, "method='hyperband'"),
        ({"metrics": {"name": "x"}}, r"unknown top-level keys \['metrics'\]"),
        ({"program": None}, "program must be"),
        ({"metric": {"name": "loss", "goal": "lower"}}, "metric.goal"),
        ({"parameters": {"lr": {"min": 0.1, "max": 1.0}}}, "grid cannot enumerate distribution 'uniform'"),
        ({"parameters": {"lr": {"distribution": "uniform", "min": 0, "max": 1, "q": 2}}}, r"keys \['q'\] do not belong"),
        ({"parameters": {"lr": {"distribution": "log_uniform_values", "min": 0, "max": 1}}}, "needs min > 0"),
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


def test_metric_from_the_offline_wandb_summary(tmp_path):
    files = tmp_path / "wandb" / "offline-run-20250101_000000-abc" / "files"
    files.mkdir(parents=True)
    (files / "wandb-summary.json").write_text(json.dumps({"val_mse": 0.5, "_step": 3}))
    assert read_metric(tmp_path, "val_mse") == 0.5
    assert read_metric(tmp_path, "other") is None


@pytest.mark.parametrize("path", sorted((ROOT / "configs/sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_every_sweep_config_is_valid_and_its_runs_parse(path, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    raw = yaml.safe_load(path.read_text())
    assert set(raw) <= {"program", "entity", "project", "description", "name", "method", "metric", "parameters", "early_terminate", "command", "run_cap"}
    s = load_sweep(path)
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


def test_real_two_run_sweep_of_the_train_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    monkeypatch.chdir(tmp_path)
    train = {
        "seed_everything": 0,
        "trainer": {"max_epochs": 2, "enable_progress_bar": False, "enable_model_summary": False},
        "model": {"class_path": f"{TinyEnsemble.__module__}.TinyEnsemble", "init_args": {"width": 8}},
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
                "parameters": {"model.gamma": {"values": [0.5, 2.0]}},
                "command": ["${env}", "${interpreter}", "-m", "dsbo.train", "fit", "--config", "tiny.yaml", "${args}"],
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
    best = min(info["runs"], key=lambda r: r["metric"])
    assert info["best"]["run"] == best["run"]
