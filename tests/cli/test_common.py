"""The shared command-line convention (dsbo.cli.common): one spelling per concept across
optimize, blackbox, sweep and train; old spellings still work, with a deprecation message;
blackbox status answers from the store and a current summary."""

import json
from pathlib import Path

import pytest
import yaml

from dsbo.cli import blackbox, optimize, sweep, train
from dsbo.cli.common import PROGRAM_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
GRID = str(ROOT / "configs" / "sweeps" / "simple-smb-gamma.yaml")


def help_text(program, capsys) -> str:
    with pytest.raises(SystemExit):
        {"optimize": optimize.main, "sweep": sweep.main}[program](["--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("program", ["optimize", "sweep"])
def test_every_shared_option_is_spelled_the_same(program, capsys):
    text = help_text(program, capsys)
    for option in PROGRAM_OPTIONS[program]:
        assert option in text, f"dsbo.{program} --help does not list {option}"


@pytest.mark.parametrize("command", ["ask", "tell", "status"])
def test_blackbox_and_train_take_their_shared_options(command, capsys):
    with pytest.raises(SystemExit):
        blackbox.main([command, "--help"])
    text = capsys.readouterr().out
    assert all(option in text for option in PROGRAM_OPTIONS["blackbox"]), text
    args, dry = train.shared_spellings(["fit", "--seed", "3", "--dry_run", "--seed=4"])
    assert args == ["fit", "--seed_everything", "3", "--seed_everything=4"] and dry


def test_old_sweep_spellings_work_and_warn(capsys):
    assert sweep.main([GRID, "--dry-run", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "--dry-run is deprecated; use --dry_run" in err
    assert "--config FILE" in err and "--no-progress is deprecated" in err
    assert sweep.main(["--config", GRID, "--dry_run", "--progress", "false"]) == 0
    assert "deprecated" not in capsys.readouterr().err


def test_sweep_dir_is_run_dir(tmp_path, capsys):
    parser = sweep.build_parser()
    new = parser.parse_args(["--config", GRID, "--run_dir", str(tmp_path)])
    old = parser.parse_args(["--config", GRID, "--sweep-dir", str(tmp_path)])
    assert new.run_dir == old.run_dir == str(tmp_path)
    assert "--sweep-dir is deprecated" in capsys.readouterr().err


def test_optimize_dry_run_checks_and_writes_nothing(tmp_path, capsys):
    run_dir = tmp_path / "run"
    argv = [
        "--problem.name",
        "branin",
        "--surrogate.name",
        "gp",
        "--run_dir",
        str(run_dir),
        "--dry_run",
    ]
    assert optimize.main(argv) == 0
    assert "nothing was evaluated or written" in capsys.readouterr().err
    assert not run_dir.exists()
    assert optimize.main([*argv, "--surrogate.name", "nope"]) == 2


def test_optimize_workers_is_executor_workers():
    cfg, _ = optimize.parse_config(["--workers", "3"])
    assert cfg.executor is not None and cfg.executor.workers == 3 and cfg.executor.kind == "process"


def test_errors_keep_text_in_brackets(capsys):
    assert (
        optimize.main(
            ["--problem.name", "black-box", "--problem.options", "{parameters: {a: [1]}}"]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "[" in err and "]" in err, err


def black_box_config(tmp_path) -> Path:
    cfg = {
        "problem": {
            "name": "black-box",
            "options": {"parameters": {"a": [0.0, 1.0]}, "objectives": ["y"]},
        },
        "surrogate": {"name": "gp"},
        "acquisition": {"num_restarts": 2, "raw_samples": 16},
        "postprocess": None,
        "budget": 4,
        "n_init": 2,
        "run_dir": str(tmp_path / "run"),
        "wandb": {"mode": "disabled"},
    }
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_status_is_answered_from_the_store_while_the_outputs_are_current(
    tmp_path, capsys, monkeypatch
):
    config = str(black_box_config(tmp_path))
    assert blackbox.main(["ask", "--config", config]) == 0
    [trial] = json.loads(capsys.readouterr().out)["trials"]
    assert (
        blackbox.main(
            ["tell", "--config", config, "--trial", str(trial["trial"]), "--values", "0.5"]
        )
        == 0
    )
    capsys.readouterr()
    rebuilt = []
    monkeypatch.setattr(
        blackbox, "build_campaign", lambda *a, **k: rebuilt.append(1) or pytest.fail("rebuilt")
    )
    assert blackbox.main(["status", "--config", config]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (
        status["completed"] == 1 and status["best_value"] == 0.5 and status["remaining_budget"] == 3
    )
    assert not rebuilt


def test_status_rebuilds_outputs_that_are_stale(tmp_path, capsys):
    config = str(black_box_config(tmp_path))
    assert blackbox.main(["ask", "--config", config]) == 0
    [trial] = json.loads(capsys.readouterr().out)["trials"]
    from dsbo.storage import open_store

    with open_store(tmp_path / "run" / "trials.sqlite") as store:  # a tell from elsewhere
        store.complete(trial["trial"], [0.25])
    assert blackbox.main(["status", "--config", config]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["completed"] == 1 and status["best_value"] == 0.25
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["best_value"] == 0.25


def test_list_keeps_text_in_brackets(capsys):
    from rich.console import Console

    console = Console(width=300, record=True)
    optimize.print_registries(console)
    text = console.export_text()
    assert "[saas]" in text and "[x, z]" in text


def test_optimize_refuses_a_problem_evaluated_outside_python(tmp_path, capsys):
    config = str(ROOT / "configs" / "bo" / "black-box-example.yaml")
    assert optimize.main(["--config", config, "--run_dir", str(tmp_path / "run")]) == 2
    assert "python -m dsbo.blackbox" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
