"""`python -m dsbo.optimize`: end to end with a tiny budget, resume, config errors."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dsbo.cli.config import OptimizeConfig
from dsbo.cli.optimize import main, parse_config
from dsbo.problems import get_problem

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "bo"
FAST = [
    "--problem.name",
    "branin",
    "--surrogate.name",
    "gp",
    "--n_init",
    "3",
    "--acquisition.num_restarts",
    "2",
    "--acquisition.raw_samples",
    "32",
    "--acquisition.maxiter",
    "25",
    "--progress",
    "false",
]


def test_end_to_end_run_writes_the_run_directory_and_resumes(tmp_path):
    run_dir = tmp_path / "run"
    assert main([*FAST, "--budget", "5", "--run_dir", str(run_dir), "--wandb.mode", "offline"]) == 0
    for name in ("trials.sqlite", "history.csv", "config.yaml", "trace.png", "summary.json"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "wandb").glob("offline-run-*")), "an offline W&B run is written"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["completed"] == 5 and summary["best_value"] <= summary["optimal_value"] + 1e-9
    assert set(summary["seconds_per_iteration"]) == {"iterations", "fit", "acquisition", "other"}

    # the same command with a larger budget resumes: the 5 trials are kept, 2 are added
    before = pd.read_csv(run_dir / "history.csv")
    assert (
        main([*FAST, "--budget", "7", "--run_dir", str(run_dir), "--wandb.mode", "disabled"]) == 0
    )
    after = pd.read_csv(run_dir / "history.csv")
    assert len(after) == 7 and after["trial"].is_unique
    pd.testing.assert_frame_equal(
        after.iloc[:5][["x0", "x1", "objective"]], before[["x0", "x1", "objective"]]
    )


def test_builtin_default_matches_configs_bo_default_yaml():
    from_file, _ = parse_config(["--config", str(CONFIGS / "default.yaml")])
    builtin, _ = parse_config([])
    assert from_file == builtin == OptimizeConfig()


def test_the_builtin_default_prunes_with_bonsai_and_plain_is_one_flag_away(tmp_path, capsys):
    builtin, _ = parse_config([])
    assert builtin.postprocess == {"bonsai": {"rho": 0.2}}
    plain, _ = parse_config(["--postprocess", "null"])
    assert plain.postprocess is None
    common = [*FAST, "--problem.name", "branin-6d", "--budget", "6", "--wandb.mode", "disabled"]
    assert main([*common, "--run_dir", str(tmp_path / "bonsai")]) == 0
    out = capsys.readouterr().err  # the summary table goes to stderr
    frame = pd.read_csv(tmp_path / "bonsai" / "history.csv")
    summary = json.loads((tmp_path / "bonsai" / "summary.json").read_text())
    assert frame["num_changed"].iloc[3:].max() < 6, "BONSAI resets some of the 6 coordinates"
    names = [c["parameter"] for c in summary["changes_best"]]
    assert len(names) == summary["num_changed_best"] and all(f"{name}: " in out for name in names)
    assert main([*common, "--postprocess", "null", "--run_dir", str(tmp_path / "plain")]) == 0
    plain_frame = pd.read_csv(tmp_path / "plain" / "history.csv")
    assert (plain_frame["num_changed"].iloc[3:] == 6).all(), "plain qLogNEI changes everything"
    assert main([*common, "--acquisition.name", "sobol", "--run_dir", str(tmp_path / "sobol")]) != 0
    assert "postprocess: null" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_parses_and_builds_its_problem(path):
    cfg, _ = parse_config(["--config", str(path)])
    problem = get_problem(cfg.problem.name, **cfg.problem.options)
    assert problem.dim >= 2


@pytest.mark.parametrize(
    "yaml_text, expected",
    [
        ("budget: abc\n", "budget"),
        ("budgett: 10\n", "budgett"),
        ("wandb:\n  mode: sometimes\n", "wandb.mode"),
        ("n_init: 50\nbudget: 10\n", "n_init must be between 1 and budget=10"),
        ("surrogate:\n  name: forest\n", "surrogate.name='forest' is not registered"),
        ("acquisition:\n  name: pi\n", "acquisition.name='pi' is not registered"),
        ("problem:\n  name: brannin\n", "brannin"),
        ("problem:\n  name: branin\n  options: {target: [1, 2, 3]}\n", "target"),
        ("surrogate:\n  name: gp\n  options: {kernel: cubic}\n", "kernel"),
        ("outcome_warping: rank\n", "outcome_warping"),
        ("max_steps: 0\n", "max_steps must be an integer >= 1"),
        ("max_steps: 0x1b\n", "max_steps must be a decimal integer"),
        ("budget_steps: 270\n", "budget_steps needs max_steps"),
        ("early_stopping: ashaa\n", "early_stopping.name='ashaa' is not a stopping rule"),
        ("early_stopping: {name: median, warmup: 3}\n", "early_stopping.warmup is not an option"),
    ],
)
def test_a_malformed_config_gets_an_error_naming_the_field(tmp_path, capsys, yaml_text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    args = ["--config", str(path), "--run_dir", str(tmp_path / "run"), "--wandb.mode", "disabled"]
    args += ["--budget", "3", "--n_init", "2"] if "budget" not in yaml_text else []
    try:
        code = main(args)
    except SystemExit as exc:  # jsonargparse reports type errors and exits
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err


def test_list_shows_the_registries():
    out = subprocess.run(
        [sys.executable, "-m", "dsbo.optimize", "--list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in ("branin-{D}d", "sourcing", "map-saas", "qlognei", "qlognehvi", "sobol"):
        assert name in out


def test_initial_design_with_the_default_point_from_the_command_line(tmp_path):
    run_dir = tmp_path / "run"
    args = [
        *FAST,
        "--problem.name",
        "branin-4d",
        "--budget",
        "5",
        "--n_init",
        "3",
        "--initial_design.include_default",
        "true",
        "--run_dir",
        str(run_dir),
        "--wandb.mode",
        "disabled",
    ]
    assert main(args) == 0
    frame = pd.read_csv(run_dir / "history.csv")
    assert list(frame["generator"][:4]) == ["default", "sobol-init", "sobol-init", "sobol-init"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["changes_from"] == "problem default" and summary["completed"] == 5
    assert len(summary["changes_best"]) == summary["num_changed_best"]


def test_outcome_warping_from_the_config_reaches_the_campaign(tmp_path):
    from dsbo.cli.optimize import build_campaign

    cfg, _ = parse_config(
        [
            *FAST,
            "--problem.name",
            "branin",
            "--outcome_warping",
            "copula",
            "--run_dir",
            str(tmp_path / "run"),
            "--wandb.mode",
            "disabled",
        ]
    )
    campaign, _, _ = build_campaign(cfg, dry_run=False, write=False)
    assert campaign.outcome_warping == "copula"
    assert parse_config([])[0].outcome_warping is None


CONTEXTUAL = [
    "--problem.name",
    "contextual-hartmann4",
    "--surrogate.name",
    "gp",
    "--n_init",
    "6",
    "--budget",
    "null",
    "--acquisition.num_restarts",
    "2",
    "--acquisition.raw_samples",
    "32",
    "--acquisition.maxiter",
    "25",
    "--progress",
    "false",
    "--wandb.mode",
    "disabled",
]


def test_a_contextual_run_spends_its_cost_budget_and_reports_the_contexts(tmp_path, capsys):
    run_dir = tmp_path / "run"
    args = [
        *CONTEXTUAL,
        "--contexts.policy",
        "vbo",
        "--budget_cost",
        "14",
        "--run_dir",
        str(run_dir),
    ]
    assert main(args) == 0
    frame = pd.read_csv(run_dir / "history.csv")
    summary = json.loads((run_dir / "summary.json").read_text())
    # 6 observed initial points cost 1 each; VBO then optimizes the 5 contexts (1 + 5 = 6),
    # and the last iteration can afford one context only (1 + 1 = 2)
    assert list(frame["cost"]) == [1.0] * 6 + [6.0, 2.0]
    assert (
        frame["cumulative_cost"].iloc[-1] == summary["cost_used"] == 14.0 == summary["budget_cost"]
    )
    assert frame["optimized"].iloc[-2].split() == ["z2", "z3", "n1", "n2", "n3"]
    assert len(frame["optimized"].iloc[-1].split()) == 1
    assert summary["contexts"]["last_roles"]["z2"] == "optimized"
    err = capsys.readouterr().err
    assert "cost spent" in err and "14 of 14" in err
    assert (run_dir / "trace.png").stat().st_size > 0


def test_the_sadcbo_config_runs_with_its_default_policy(tmp_path):
    run_dir = tmp_path / "run"
    args = [
        "--config",
        str(CONFIGS / "sadcbo-hartmann6.yaml"),
        *CONTEXTUAL[2:],
        "--budget_cost",
        "9",
        "--contexts.options",
        "{q_points: 2}",
        "--run_dir",
        str(run_dir),
    ]
    assert main(args) == 0
    frame = pd.read_csv(run_dir / "history.csv")
    assert list(frame["generator"]) == ["sobol-init"] * 6 + ["sadcbo"] * 3
    assert (frame["observed"].iloc[:6] == "z1 z3 z4 n1 n2 n3 n4 n5 n6").all()


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--contexts.policy", "magic"], "contexts.policy.name='magic' is not registered"),
        (["--contexts.costs", "{z9: 1.0}"], "contexts.costs: ['z9'] are not contexts"),
        (["--contexts.costs", "{z2: -1.0}"], "contexts.costs.z2 must be a finite number >= 0"),
        (["--contexts.fixed", "[z2]", "--contexts.observed", "[z2]"], "cannot be both fixed"),
        (["--contexts.options", "{eta: 0}"], "eta=0 must be in (0, 1]"),
        (["--contexts.options", "{eta: 1.5}"], "eta=1.5 must be in (0, 1]"),
        (["--budget_cost", "0"], "budget_cost must be a number > 0"),
        (["--budget_cost", "null"], "budget is null"),
    ],
)
def test_bad_contexts_settings_fail_before_anything_is_evaluated(tmp_path, capsys, extra, expected):
    run_dir = tmp_path / "run"
    args = [*CONTEXTUAL, "--budget_cost", "10", *extra, "--run_dir", str(run_dir)]
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    assert expected in capsys.readouterr().err
    assert not (run_dir / "trials.sqlite").exists() or pd.read_csv(run_dir / "history.csv").empty


# ---------------------------------------------------------------------- scaling out
from pg_helpers import postgres_server, postgres_url  # noqa: E402, F401 - fixtures

PLAIN = [*FAST, "--postprocess", "null", "--wandb.mode", "disabled"]


def test_dask_local_cluster_executor_runs_the_campaign(tmp_path):
    pytest.importorskip("dask.distributed", reason="the `scale` extra (dask) is not installed")
    run_dir = tmp_path / "dask"
    args = [
        *PLAIN,
        "--budget",
        "6",
        "--executor.kind",
        "dask",
        "--executor.workers",
        "2",
        "--run_dir",
        str(run_dir),
    ]
    assert main(args) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    history = pd.read_csv(run_dir / "history.csv")
    assert summary["completed"] == 6 and len(history) == 6 and history["trial"].is_unique
    assert len(history[["x0", "x1"]].drop_duplicates()) == 6


def test_dask_executor_at_a_scheduler_address(tmp_path):
    distributed = pytest.importorskip(
        "dask.distributed", reason="the `scale` extra (dask) is not installed"
    )
    # a cluster started elsewhere (here: in this process, workers as threads); the campaign
    # only gets its scheduler's address
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        args = [
            *PLAIN,
            "--budget",
            "4",
            "--executor.kind",
            "dask",
            "--executor.address",
            cluster.scheduler_address,
            "--run_dir",
            str(tmp_path / "addr"),
        ]
        assert main(args) == 0
    assert json.loads((tmp_path / "addr" / "summary.json").read_text())["completed"] == 4


def test_a_worker_joins_a_postgres_campaign_from_its_stored_config(postgres_url, tmp_path, capsys):  # noqa: F811
    assert (
        main(
            [*PLAIN, "--budget", "5", "--store", postgres_url, "--run_dir", str(tmp_path / "first")]
        )
        == 0
    )
    assert not (tmp_path / "first" / "trials.sqlite").exists(), "the trials live in PostgreSQL"
    # the worker gives only the store: problem, budget and settings come from the database
    assert (
        main(
            [
                "--store",
                postgres_url,
                "--worker",
                "--run_dir",
                str(tmp_path / "w"),
                "--progress",
                "false",
            ]
        )
        == 0
    )
    [worker_dir] = (tmp_path / "w").glob("worker-*")
    summary = json.loads((worker_dir / "summary.json").read_text())
    assert summary["completed"] == 5 and summary["problem"] == "branin"
    assert "joins postgresql://postgres@" in " ".join(capsys.readouterr().err.split())


def test_worker_and_store_errors_are_named_before_anything_runs(postgres_server, tmp_path, capsys):  # noqa: F811
    run_dir = tmp_path / "never"
    assert (
        main(
            [*PLAIN, "--store", "postgresql://dsbo:secret@127.0.0.1:1/c", "--run_dir", str(run_dir)]
        )
        == 2
    )
    err = " ".join(capsys.readouterr().err.split())
    assert "cannot open the store postgresql://dsbo@127.0.0.1:1/c" in err and "secret" not in err
    assert not (run_dir / "config.yaml").exists()
    assert main(["--worker", "--run_dir", str(run_dir)]) == 2
    assert "give --store postgresql://" in " ".join(capsys.readouterr().err.split())
    from pg_helpers import fresh_database

    with fresh_database(postgres_server) as empty:
        assert main(["--worker", "--store", empty, "--run_dir", str(run_dir)]) == 2
        assert "holds no campaign yet" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            ["--executor.kind", "process", "--executor.address", "tcp://x:1"],
            "executor.address is a Dask",
        ),
        (["--executor.workers", "0"], "executor.workers must be >= 1"),
        (["--executor.workers", "2", "--q", "2"], "set q: 1"),
        (["--store", "mysql://u@h/db"], "only postgresql://"),
        (["--lease", "0"], "lease must be"),
    ],
)
def test_scale_out_settings_are_validated(args, match):
    with pytest.raises(Exception, match=match):
        parse_config(args)


def test_the_early_stopping_keys_parse_and_reach_the_campaign():
    from dsbo.cli.optimize import build_campaign
    from dsbo.stopping import ASHARule, MedianRule

    cfg, _ = parse_config(["--config", str(CONFIGS / "black-box-early-stopping.yaml")])
    assert cfg.early_stopping == {
        "name": "asha",
        "min_resource": 1,
        "reduction_factor": 3,
        "model": "bohb",
    }
    assert (cfg.max_steps, cfg.budget_steps, cfg.budget) == (27, 270, None)
    campaign, _, _ = build_campaign(cfg, dry_run=False, write=False, ask_tell=True)
    settings = campaign.early_stopping
    assert (
        settings.rule == ASHARule(min_resource=1, reduction_factor=3) and settings.model == "bohb"
    )
    assert (
        settings.max_steps == 27
        and campaign.ledger.source == "steps"
        and campaign.budget_cost == 270
    )
    # the command line overrides them, as any key
    cfg, _ = parse_config(
        [
            "--config",
            str(CONFIGS / "black-box-early-stopping.yaml"),
            "--early_stopping",
            "{name: median, n_warmup_steps: 2}",
            "--max_steps",
            "9",
            "--budget_steps",
            "null",
            "--budget",
            "20",
        ]
    )
    campaign, _, _ = build_campaign(cfg, dry_run=False, write=False, ask_tell=True)
    assert (
        campaign.early_stopping.rule == MedianRule(n_warmup_steps=2)
        and campaign.early_stopping.max_steps == 9
    )
    assert campaign.ledger.source != "steps"
    assert parse_config([])[0].early_stopping is None  # off unless asked for


def test_early_stopping_of_a_problem_that_reports_nothing_is_refused(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(
        [
            *FAST,
            "--budget",
            "4",
            "--early_stopping",
            "asha",
            "--run_dir",
            str(run_dir),
            "--wandb.mode",
            "disabled",
        ]
    )
    assert (
        code == 2
        and "early_stopping: problem.name='branin' reports no intermediate values"
        in capsys.readouterr().err
    )
    assert not run_dir.exists()
