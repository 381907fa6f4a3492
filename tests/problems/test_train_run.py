"""The train-run problem: a real ``python -m dsbo.train fit`` per evaluation."""

import json
import math
from pathlib import Path

import pytest
import torch

from dsbo.errors import ConfigError, EvaluationError
from dsbo.problems import get_problem

CONFIG = "configs/train/simple-smb-branin.yaml"
PARAMETERS = {
    "model.lr": {"distribution": "log_uniform_values", "min": 1e-3, "max": 0.1},
    "model.width": {"distribution": "int_uniform", "min": 4, "max": 32},
    "trainer.max_epochs": {"value": 3},
}


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("WANDB_MODE", "disabled")


def make(tmp_path, **overrides):
    options = dict(
        config=CONFIG,
        parameters=PARAMETERS,
        metrics=["val_mse"],
        default={"model.lr": 0.01, "model.width": 16},
        args=["--data.num_samples=40", "--trainer.logger=false"],
        runs_dir=str(tmp_path / "runs"),
    )
    return get_problem("train-run", **{**options, **overrides})


def test_box_default_and_names_follow_the_sweep_syntax(tmp_path, in_repo):
    problem = make(tmp_path)
    assert problem.parameter_names == ("model.lr", "model.width")
    assert problem.objective_names == ("neg_val_mse",)
    lo, hi = problem.bounds.tolist()
    assert lo == pytest.approx([math.log(1e-3), 4.0]) and hi == pytest.approx([math.log(0.1), 32.0])
    assert problem.default_point.tolist() == pytest.approx(
        [math.log(0.01), 16.0]
    )  # searched in log lr
    assert problem.integer_dims == (1,)
    assert problem.space is problem.test_problem.space and problem.space.names == [
        "model.lr",
        "model.width",
        "trainer.max_epochs",
    ]
    assert problem.params(problem.default_point) == {
        "model.lr": 0.01,
        "model.width": 16,
        "trainer.max_epochs": 3,
    }
    assert problem.metadata["fixed"] == {"trainer.max_epochs": 3}
    cmd = problem.test_problem.command(
        {"model.lr": 0.01, "model.width": 16, "trainer.max_epochs": 3}
    )
    assert cmd[-3:] == ["--model.lr=0.01", "--model.width=16", "--trainer.max_epochs=3"]
    tied = make(tmp_path, tied={"model.num_samples": "model.width"}).test_problem
    assert (
        tied.command({"model.lr": 0.01, "model.width": 8, "trainer.max_epochs": 3})[-1]
        == "--model.num_samples=8"
    )


def test_one_evaluation_is_one_training_run_and_reads_its_summary(tmp_path, in_repo):
    problem = make(tmp_path)
    y = problem(problem.default_point)
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert y.tolist() == pytest.approx([-summary["val_mse"]])  # minimized -> negated
    assert json.loads((run_dir / "params.json").read_text()) == {
        "model.lr": pytest.approx(0.01),
        "model.width": 16,
        "trainer.max_epochs": 3,
    }


def test_two_metrics_make_a_multi_objective_problem(tmp_path, in_repo):
    problem = make(tmp_path, metrics=["val_mse", "train_loss"])
    assert problem.objective_names == ("neg_val_mse", "neg_train_loss")
    assert problem.ref_point.tolist() == [-1.0, -1.0]
    assert problem.is_multi_objective


def test_a_failing_run_or_a_missing_metric_is_an_evaluation_error(tmp_path, in_repo):
    problem = make(tmp_path, args=["--model.no_such_option=1"])
    with pytest.raises(EvaluationError, match="exited with"):
        problem.evaluate(problem.default_point.unsqueeze(0))
    problem = make(tmp_path, metrics=["val_wape"])
    with pytest.raises(EvaluationError, match="val_wape"):
        problem.evaluate(problem.default_point.unsqueeze(0))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"config": "configs/train/nope.yaml"}, "is not a file"),
        ({"parameters": {}}, "parameters must map"),
        ({"metrics": []}, "metrics must be a non-empty list"),
        ({"metrics": ["a", "a"]}, "repeat a name"),
        ({"goal": "lower"}, "goal='lower'"),
        (
            {"default": {"model.lr": 0.5, "model.width": 16}},
            r"default.model.lr=0.5 is outside \[0.001, 0.1\]",
        ),
        ({"default": {"model.lr": 0.01}}, "train-run: default: no value for model.width"),
        (
            {"default": {"model.lr": 0.01, "model.width": 16, "model.depth": 2}},
            "default.model.depth: there is no such parameter",
        ),
        (
            {"parameters": {"model.lr": {"distribution": "normal", "mu": 0, "sigma": 1}}},
            "bounded box",
        ),
        ({"timeout": 0}, "timeout=0"),
        ({"tied": {"data.x": "model.nope"}}, "tied must map"),
        ({"tied": {"model.lr": "model.width"}}, "are parameters themselves"),
        ({"metrics": ["a", "b"], "ref_point": [-1.0]}, "ref_point has 1 entries"),
    ],
)
def test_bad_options_are_config_errors_before_any_run(tmp_path, in_repo, overrides, message):
    with pytest.raises(ConfigError, match=message):
        make(tmp_path, **overrides)
    assert not (tmp_path / "runs").exists()


def test_rows_are_evaluated_one_run_each(tmp_path, in_repo):
    problem = make(tmp_path)
    X = torch.stack([problem.default_point, problem.bounds[0]])
    Y = problem.evaluate(X)
    assert Y.shape == (2, 1) and len(list((tmp_path / "runs").iterdir())) == 2


def test_a_categorical_is_one_hot_and_the_history_shows_the_values_the_run_received(
    tmp_path, in_repo
):
    from dsbo.campaign.history import history_frame
    from dsbo.storage import Trial

    parameters = {
        **PARAMETERS,
        "model.activation": {"values": ["relu", "tanh"]},
        "model.batch": {"distribution": "q_log_uniform_values", "min": 8, "max": 64, "q": 8},
    }
    problem = make(tmp_path, parameters=parameters, default=None)
    assert problem.parameter_names == (
        "model.lr",
        "model.width",
        "model.activation=relu",
        "model.activation=tanh",
        "model.batch",
    )
    assert problem.test_problem.bounds.T.tolist() == [list(b) for b in problem.space.bounds]
    assert problem.test_problem.discrete_inds == [1] and problem.integer_dims == (1,)
    default = problem.params(problem.default_point)
    assert (
        default["model.activation"] == "relu"
        and default["model.width"] == 18
        and default["model.batch"] in (16, 24)
    )
    x = problem.space.encode(
        {"model.lr": 0.002, "model.width": 8, "model.activation": "tanh", "model.batch": 64}
    )
    frame = history_frame(
        [Trial(id=0, batch=0, generator="sobol-init", status="completed", x=x, y=[-1.0])], problem
    )
    row = frame.iloc[0]
    assert (
        row["model.lr"] == 0.002 and row["model.activation"] == "tanh" and row["model.batch"] == 64
    )
    assert row["trainer.max_epochs"] == 3
    with pytest.raises(ConfigError, match="mix types"):
        make(tmp_path, parameters={**PARAMETERS, "model.activation": {"values": ["relu", 1]}})


class StopAt:
    """A running trial's protocol (report, should_stop) that says stop at ``step``."""

    def __init__(self, step, refuse=False):
        self.step, self.refuse, self.reports = step, refuse, []

    def report(self, step, value):
        if self.refuse:
            raise ValueError("refused")
        self.reports.append((step, value))

    def should_stop(self):
        return self.reports[-1][0] >= self.step


def test_a_run_reports_each_epoch_through_the_channel_and_stops_when_told(tmp_path, in_repo):
    problem = make(tmp_path, parameters={**PARAMETERS, "trainer.max_epochs": {"value": 5}})
    trial = StopAt(2)
    y = problem(problem.default_point, trial)
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert [s for s, _ in trial.reports] == [
        1,
        2,
    ]  # epochs trained so far; stopped after the second
    decisions = [
        json.loads(line)
        for line in (run_dir / "trial" / "decisions.jsonl").read_text().splitlines()
    ]
    assert decisions == [{"step": 1, "stop": False}, {"step": 2, "stop": True}]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert all(v < 0 for _, v in trial.reports)  # -val_mse: the objective's direction
    assert y.tolist() == pytest.approx([-summary["val_mse"]])


def test_a_refused_report_stops_the_run_and_fails_the_evaluation(tmp_path, in_repo):
    problem = make(tmp_path)
    with pytest.raises(ValueError, match="refused"):
        problem(problem.default_point, StopAt(99, refuse=True))
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (run_dir / "trial" / "decisions.jsonl").read_text().count(
        "\n"
    ) == 1  # told to stop at once


def test_a_campaign_stops_training_runs_early(tmp_path, in_repo):
    from dsbo.campaign import Campaign

    problem = make(tmp_path, parameters={**PARAMETERS, "trainer.max_epochs": {"value": 4}})
    campaign = Campaign(
        problem,
        surrogate="gp",
        budget=3,
        n_init=3,
        dry_run=False,
        max_steps=4,
        budget_steps=12,
        early_stopping={"name": "percentile", "percentile": 1.0, "n_startup_trials": 1},
    )
    campaign.run()
    store = campaign.store
    curves = store.curves()
    assert sorted(curves) == [t.id for t in store.trials()]
    for trial in store.trials():
        steps = [s for s, _ in curves[trial.id]]
        assert steps == list(range(1, len(steps) + 1)) and trial.cost == steps[-1]
        assert trial.status in ("completed", "stopped") and (trial.status == "stopped") == (
            steps[-1] < 4
        )


def test_a_freeze_thaw_campaign_resumes_paused_runs_from_their_checkpoints(tmp_path, in_repo):
    from dsbo.campaign import Campaign

    problem = make(tmp_path, parameters={**PARAMETERS, "trainer.max_epochs": {"value": 4}})
    campaign = Campaign(
        problem,
        surrogate="gp",
        budget=20,
        n_init=2,
        dry_run=False,
        max_steps=4,
        budget_steps=10,
        early_stopping={
            "name": "freeze-thaw",
            "curve_model": "power-law-ensemble",
            "steps_per_thaw": 2,
            "epochs": 30,
            "warm_epochs": 5,
            "candidates": 32,
        },
    )
    campaign.run()
    store = campaign.store
    trials, curves = store.trials(), store.curves()
    assert store.cost_used() == 10 and {t.status for t in trials} <= {"paused", "completed"}
    thawed = [t for t in trials if t.metadata.get("thaws")]
    assert thawed, "a paused run was continued"
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == len(trials), "a thawed trial goes on in its own run directory"
    for trial in trials:
        steps = [s for s, _ in curves[trial.id]]
        assert steps == list(range(1, len(steps) + 1)) and trial.cost == steps[-1]
        run_dir = Path(trial.metadata["user_attrs"]["run_dir"])
        assert run_dir in [r.resolve() for r in runs]
    for trial in thawed:  # Lightning restored the checkpoint and trained the next epochs only
        run_dir = Path(trial.metadata["user_attrs"]["run_dir"])
        log = (run_dir / "output.log").read_text()
        assert (
            "Restoring states from the checkpoint" in log
            or "Restored all states from the checkpoint" in log
        )
        decisions = [
            json.loads(line)
            for line in (run_dir / "trial" / "decisions.jsonl").read_text().splitlines()
        ]
        assert decisions[0]["step"] == 3, "the thawed run reported from the epoch after its pause"
