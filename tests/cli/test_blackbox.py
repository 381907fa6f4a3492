"""`python -m dsbo.blackbox ask|tell|report|status`: a campaign driven from the shell, with early
stopping through `report`."""

import json

import pytest
import yaml

from dsbo.cli.blackbox import main
from dsbo.storage import open_store


def config(tmp_path):
    cfg = {
        "problem": {
            "name": "black-box",
            "options": {"parameters": {"a": [0.0, 1.0], "b": [-1.0, 1.0]}, "objectives": ["score"]},
        },
        "surrogate": {"name": "gp"},
        "acquisition": {"num_restarts": 2, "raw_samples": 32, "maxiter": 25},
        "budget": 5,
        "n_init": 3,
        "q": 2,
        "run_dir": str(tmp_path / "run"),
        "wandb": {"mode": "disabled"},
    }
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else captured.err)


def test_ask_tell_status_round_trip(tmp_path, capsys):
    path = config(tmp_path)
    told = 0
    while True:
        code, out = run(capsys, "ask", "--config", path)
        assert code == 0
        if not out["trials"]:
            break
        for trial in out["trials"]:
            p = trial["parameters"]
            if told == 1:  # one evaluation fails in the lab
                run(
                    capsys,
                    "tell",
                    "--config",
                    path,
                    "--trial",
                    str(trial["trial"]),
                    "--error",
                    "spilled",
                )
            else:
                score = -((p["a"] - 0.3) ** 2) - p["b"] ** 2
                run(
                    capsys,
                    "tell",
                    "--config",
                    path,
                    "--trial",
                    str(trial["trial"]),
                    "--values",
                    str(score),
                )
            told += 1
    assert told == 5
    code, status = run(capsys, "status", "--config", path)
    assert status["completed"] == 4 and status["failed"] == 1 and status["remaining_budget"] == 0
    assert (tmp_path / "run" / "history.csv").is_file() and (
        tmp_path / "run" / "trace.png"
    ).is_file()


def test_pending_trials_are_listed_again_and_bad_reports_are_refused(tmp_path, capsys):
    path = config(tmp_path)
    _, first = run(capsys, "ask", "--config", path, "--q", "1")
    _, again = run(capsys, "ask", "--config", path, "--q", "1")
    assert [t["trial"] for t in again["trials"]] == [1, 2]  # the pending one, then a new one
    _, told = run(capsys, "tell", "--config", path, "--trial", "1", "--values", "{score: .nan}")
    assert told["status"] == "failed" and "non-finite" in told["error"]
    code, err = run(capsys, "tell", "--config", path, "--trial", "1", "--values", "1.0")
    assert code == 2 and "already failed" in err


def test_status_before_any_ask(tmp_path, capsys):
    code, out = run(capsys, "status", "--config", config(tmp_path))
    assert code == 0 and out["completed"] == 0 and out["best_value"] is None
    assert out["remaining_budget"] == 5


def contextual_config(tmp_path):
    cfg = {
        "problem": {
            "name": "black-box",
            "options": {
                "parameters": {"temperature": [20, 80], "humidity": [0, 1], "weather": [0, 1]},
                "objectives": ["score"],
                "contexts": {"humidity": 2.0, "weather": {"cost": 0, "observe_only": True}},
            },
        },
        "surrogate": {"name": "gp"},
        "contexts": {"policy": "vbo"},
        "acquisition": {"num_restarts": 2, "raw_samples": 32, "maxiter": 25},
        "budget": 5,
        "n_init": 3,
        "run_dir": str(tmp_path / "run"),
        "wandb": {"mode": "disabled"},
    }
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_a_contextual_black_box_is_asked_with_the_contexts_it_observes(tmp_path, capsys):
    path = contextual_config(tmp_path)
    code, err = run(capsys, "ask", "--config", path)
    assert code == 2 and "--contexts" in err  # dsbo never invents the environment's values
    for i in range(5):
        code, out = run(
            capsys, "ask", "--config", path, "--contexts", "{humidity: 0.4, weather: 0.9}"
        )
        assert code == 0
        [trial] = out["trials"]
        p = trial["parameters"]
        assert p["weather"] == 0.9 and trial["contexts"]["weather"] == "observed"  # observe-only
        if i < 3:  # the initial design observes every context
            assert p["humidity"] == 0.4 and trial["cost"] == 1.0
        else:  # VBO optimizes the controllable context and pays for it
            assert trial["contexts"]["humidity"] == "optimized" and trial["cost"] == 3.0
        run(
            capsys,
            "tell",
            "--config",
            path,
            "--trial",
            str(trial["trial"]),
            "--values",
            str(p["temperature"] / 80),
        )
    code, out = run(capsys, "ask", "--config", path, "--contexts", "{humidity: 0.4, weather: 0.9}")
    assert out["trials"] == [] and out["remaining_budget"] == 0
    code, err = run(capsys, "ask", "--config", path, "--contexts", "{humidity: 3.0, weather: 0.9}")
    assert code == 0  # the budget is spent: nothing is asked, so nothing is checked


def test_bad_context_values_are_refused(tmp_path, capsys):
    path = contextual_config(tmp_path)
    for bad, expected in (
        ("{humidity: 3.0, weather: 0.9}", "outside its bounds"),
        ("{humidity: 0.5}", "missing ['weather']"),
        ("{humidity: .nan, weather: 0.1}", "must be a finite number"),
    ):
        code, err = run(capsys, "ask", "--config", path, "--contexts", bad)
        assert code == 2 and expected in err


def test_the_hpo_example_asks_and_tells_named_typed_values(tmp_path, capsys):
    cfg = yaml.safe_load(open("configs/bo/black-box-hpo.yaml"))
    cfg.update(
        run_dir=str(tmp_path / "run"),
        budget=4,
        n_init=3,
        wandb={"mode": "disabled"},
        acquisition={"name": "qlognei", "num_restarts": 2, "raw_samples": 32, "maxiter": 25},
    )
    path = tmp_path / "hpo.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))  # the parameters keep their order
    code, out = run(
        capsys,
        "tell",
        "--config",
        str(path),
        "--parameters",
        "{lr: 0.001, warmup_lr: 0.0001, width: 128, optimizer: adam, dropout: 0.1}",
        "--values",
        "0.4",
    )
    assert code == 0 and out["parameters"]["width"] == 128
    seen = []
    while (out := run(capsys, "ask", "--config", str(path))[1])["trials"]:
        for trial in out["trials"]:
            p = trial["parameters"]
            assert isinstance(p["width"], int) and p["optimizer"] in ("adam", "sgd")
            assert ("momentum" in p) == (p["optimizer"] == "sgd")
            assert p["lr"] >= 2 * p["warmup_lr"] * (1 - 1e-9)  # the linear constraint
            assert round(p["dropout"] / 0.05, 9) == round(p["dropout"] / 0.05)
            run(
                capsys,
                "tell",
                "--config",
                str(path),
                "--trial",
                str(trial["trial"]),
                "--values",
                str(0.5 + len(seen) / 10),
            )
            seen.append(p)
    assert len(seen) == 3
    _, status = run(capsys, "status", "--config", str(path))
    assert status["best_value"] == 0.4  # the lowest val_loss told, as told
    code, err = run(
        capsys,
        "tell",
        "--config",
        str(path),
        "--parameters",
        "{lr: 0.001, warmup_lr: 0.0001, width: 12.5, optimizer: adam, dropout: 0.1}",
        "--values",
        "-1",
    )
    assert code == 2 and "parameters.width" in err
    header = (tmp_path / "run" / "history.csv").read_text().splitlines()[0].split(",")
    assert header[4:11] == [
        "lr",
        "warmup_lr",
        "width",
        "optimizer",
        "momentum",
        "dropout",
        "val_loss",
    ]


# ---------------------------------------------------------------- early stopping (issue 42)
def stopping_config(tmp_path, **overrides):
    """Three Sobol trials (no model is fitted) of up to 9 steps, 24 in all, ASHA with rungs at steps 1, 3, 9."""
    cfg = {
        "problem": {
            "name": "black-box",
            "options": {
                "parameters": {"a": [0.0, 1.0], "b": [-1.0, 1.0]},
                "objectives": {"loss": "min"},
            },
        },
        "surrogate": {"name": "gp"},
        "acquisition": {"num_restarts": 2, "raw_samples": 32, "maxiter": 25},
        "postprocess": None,
        "early_stopping": {"name": "asha", "min_resource": 1, "reduction_factor": 3},
        "max_steps": 9,
        "budget_steps": 24,
        "budget": 3,
        "n_init": 3,
        "q": 3,
        "run_dir": str(tmp_path / "run"),
        "wandb": {"mode": "disabled"},
        **overrides,
    }
    path = tmp_path / "es.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def stored(tmp_path):
    """The store's trials (status, y, cost) and curves, read without taking its lock."""
    with open_store(tmp_path / "run" / "trials.sqlite", lock=False) as store:
        return [(t.id, t.status, t.y, t.cost) for t in store.trials()], store.curves()


def test_a_shell_loop_with_early_stopping_stops_a_lagging_trial(tmp_path, capsys):
    path = stopping_config(tmp_path)
    code, asked = run(capsys, "ask", "--config", path)
    assert code == 0 and [t["max_steps"] for t in asked["trials"]] == [9, 9, 6]  # 24 steps in all
    decisions = {}
    for trial in asked[
        "trials"
    ]:  # the loop of the module docstring: report each step, stop when told
        tid = trial["trial"]
        for step in range(1, trial["max_steps"] + 1):
            loss = tid + 1 / step  # trial 1 learns best; the others lag it at every step
            code, out = run(
                capsys,
                "report",
                "--config",
                path,
                "--trial",
                str(tid),
                "--step",
                str(step),
                "--value",
                str(loss),
            )
            assert code == 0 and out["trial"] == tid and out["step"] == step and out["reason"]
            decisions[tid] = out["decision"]
            if out["decision"] == "stop":
                break
        code, told = run(
            capsys, "tell", "--config", path, "--trial", str(tid), "--values", str(loss)
        )
        assert code == 0 and told["status"] == (
            "stopped" if decisions[tid] == "stop" else "completed"
        )
    assert decisions == {1: "continue", 2: "stop", 3: "stop"}  # ASHA keeps the top third at step 1
    trials, curves = stored(tmp_path)
    assert trials[1][1:] == ("stopped", [-3.0], 1.0)  # its last value (maximized), charged 1 step
    assert curves[1] == [(s, -(1 + 1 / s)) for s in range(1, 10)] and curves[2] == [(1, -3.0)]
    code, status = run(capsys, "status", "--config", path)
    assert status["completed"] == 1 and status["stopped"] == 2 and status["pending"] == 0
    code, again = run(capsys, "status", "--config", path)  # the quick path counts them too
    assert again == status


def test_bad_reports_are_one_line_errors_and_record_nothing(tmp_path, capsys):
    path = stopping_config(tmp_path, early_stopping="median", budget_steps=None)
    code, err = run(
        capsys, "report", "--config", path, "--trial", "1", "--step", "1", "--value", "0.5"
    )
    assert (
        code == 2 and "trial 1 does not exist" in err and not (tmp_path / "run").exists()
    )  # before any ask
    run(capsys, "ask", "--config", path)
    for step, value in ((1, "0.5"), (2, "0.4")):
        assert (
            run(
                capsys,
                "report",
                "--config",
                path,
                "--trial",
                "1",
                "--step",
                str(step),
                "--value",
                value,
            )[0]
            == 0
        )
    run(capsys, "report", "--config", path, "--trial", "2", "--step", "1", "--value", "0.3")
    run(capsys, "tell", "--config", path, "--trial", "2", "--values", "0.3")
    before = stored(tmp_path)
    for (trial, step, value), expected in (
        (("1", "3", ".nan"), "must be a finite number"),
        (("1", "3", "nan"), "must be a finite number"),
        (("1", "3", "-.inf"), "must be a finite number"),
        (("1", "3", "abc"), "must be a number"),
        (("1", "3", "[0.1, 0.2]"), "must be one number"),
        (("1", "2", "0.1"), "does not come after the last reported step 2"),
        (("1", "1", "0.1"), "does not come after the last reported step 2"),
        (("1", "-1", "0.1"), "integer >= 0"),
        (("1", "3.5", "0.1"), "--step must be a decimal integer"),
        (("99", "1", "0.1"), "trial 99 does not exist"),
        (("2", "2", "0.1"), "trial 2 is completed"),
    ):
        code, err = run(
            capsys,
            "report",
            "--config",
            path,
            f"--trial={trial}",
            f"--step={step}",
            f"--value={value}",
        )
        assert (
            code == 2 and err.startswith("error: ") and expected in err and err.count("\n") == 1
        ), err
    assert stored(tmp_path) == before


def test_a_stopped_trial_takes_no_more_reports(tmp_path, capsys):
    path = stopping_config(tmp_path)
    run(capsys, "ask", "--config", path)
    _, out = run(
        capsys, "report", "--config", path, "--trial", "1", "--step", "1", "--value", "0.1"
    )
    assert (
        out["decision"] == "continue" and " 0.1 is in the top" in out["reason"]
    )  # as reported, not -0.1
    code, out = run(
        capsys, "report", "--config", path, "--trial", "2", "--step", "1", "--value", "5"
    )
    assert code == 0 and out["decision"] == "stop" and " 5 is outside the top" in out["reason"]
    before = stored(tmp_path)
    code, err = run(
        capsys, "report", "--config", path, "--trial", "2", "--step", "2", "--value", "0.1"
    )
    assert code == 2 and err.startswith("error: ") and "was stopped" in err and err.count("\n") == 1
    assert stored(tmp_path) == before
    _, told = run(capsys, "tell", "--config", path, "--trial", "2", "--values", "0.01")  # ignored
    assert told["status"] == "stopped" and stored(tmp_path)[0][1][2] == [-5.0]


def test_report_fits_no_model_and_writes_no_outputs(tmp_path, capsys, monkeypatch):
    import dsbo.cli.blackbox as blackbox

    path = stopping_config(tmp_path)
    run(capsys, "ask", "--config", path)
    csv = tmp_path / "run" / "history.csv"
    mtime = csv.stat().st_mtime_ns

    def forbidden(*args, **kwargs):
        raise AssertionError("report must not fit a model or write the run's outputs")

    monkeypatch.setattr(blackbox, "write_run_outputs", forbidden)
    monkeypatch.setattr("dsbo.campaign.campaign.fit_surrogate", forbidden)
    code, out = run(
        capsys, "report", "--config", path, "--trial", "1", "--step", "1", "--value", "0.5"
    )
    assert code == 0 and out["decision"] == "continue" and csv.stat().st_mtime_ns == mtime


def test_without_early_stopping_a_report_is_recorded_and_continues(tmp_path, capsys):
    path = config(tmp_path)
    run(capsys, "ask", "--config", path)
    code, out = run(
        capsys, "report", "--config", path, "--trial", "1", "--step", "1", "--value", "0.2"
    )
    assert code == 0 and out == {
        "trial": 1,
        "step": 1,
        "decision": "continue",
        "reason": "no early stopping in the config",
    }
    _, asked = run(capsys, "ask", "--config", path)
    assert "max_steps" not in asked["trials"][0]


def test_config_errors_of_the_early_stopping_keys_name_the_field(tmp_path, capsys):
    for overrides, expected in (
        ({"max_steps": 0}, "max_steps must be an integer >= 1"),
        ({"max_steps": None}, "budget_steps needs max_steps"),
        (
            {"early_stopping": "ashaa"},
            "early_stopping.name='ashaa' is not a stopping rule; did you mean 'asha'?",
        ),
        (
            {"early_stopping": {"name": "asha", "reduction_factr": 3}},
            "early_stopping.reduction_factr is not an option",
        ),
        (
            {"early_stopping": {"name": "asha", "reduction_factor": 1}},
            "early_stopping.reduction_factor must be",
        ),
        ({"early_stopping": {"name": "asha", "model": "gp"}}, "early_stopping model='gp'"),
        (
            {"early_stopping": "hyperband", "max_steps": None, "budget_steps": None},
            "early_stopping: the hyperband rule needs max_steps",
        ),
        ({"budget_cost": 10.0}, "budget_steps and budget_cost"),
        ({"early_stoping": "asha"}, "early_stoping"),
    ):
        path = stopping_config(tmp_path, **overrides)
        for command in (["ask"], ["report", "--trial", "1", "--step", "1", "--value", "1"]):
            code, err = run(capsys, *command, "--config", path)
            assert (
                code == 2 and err.startswith("error: ") and expected in err and err.count("\n") == 1
            ), err
        assert not (tmp_path / "run").exists()  # refused before anything was written


def test_report_builds_no_campaign_and_decides_as_the_campaign(tmp_path, capsys, monkeypatch):
    """``report`` takes the quick path (dsbo.cli.blackbox_report: no torch, no campaign); its
    decisions, reasons and store rows are the campaign path's on the same reports."""
    import subprocess
    import sys

    import dsbo.cli.blackbox as blackbox

    outputs = []
    for quick in (True, False):
        folder = tmp_path / ("quick" if quick else "campaign")
        folder.mkdir()
        path = stopping_config(folder)
        run(capsys, "ask", "--config", path)
        if quick:  # in a fresh interpreter: nothing of torch is imported
            code = (
                "import sys; from dsbo.cli.blackbox import main; "
                f"main(['report', '--config', {path!r}, '--trial', '1', '--step', '1', '--value', '0.5']); "
                "print('torch' in sys.modules)"
            )
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
            assert out.strip().endswith("False") and '"decision": "continue"' in out
        else:
            monkeypatch.setattr(blackbox, "quick_view", lambda cfg: None)
            run(capsys, "report", "--config", path, "--trial", "1", "--step", "1", "--value", "0.5")
        answers = [
            run(
                capsys,
                "report",
                "--config",
                path,
                "--trial",
                str(t),
                "--step",
                str(s),
                "--value",
                str(t + 1 / s),
            )
            for t, s in ((1, 2), (1, 3), (2, 1), (3, 1), (2, 2))
        ]
        outputs.append((answers, stored(folder)))
    assert outputs[0] == outputs[1]
    decisions = [out["decision"] if code == 0 else out.strip() for code, out in outputs[0][0]]
    assert decisions == [
        "continue",
        "continue",
        "stop",
        "stop",
        "error: trial 2 was stopped (asha: at rung 0 (step 1) "
        "3 is outside the top 1 of 2 trials (cutoff 0.5)); it takes no more values",
    ]


def test_report_on_a_config_the_quick_path_cannot_read_goes_through_the_campaign(
    tmp_path, capsys, monkeypatch
):
    from dsbo.cli import blackbox_report

    path = config(tmp_path)
    run(capsys, "ask", "--config", path)
    cfg = yaml.safe_load(open(path))
    cfg["problem"]["options"]["parameters"]["b"] = [-2.0, 1.0]  # not the store's space
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(cfg))
    code, err = run(
        capsys, "report", "--config", str(other), "--trial", "1", "--step", "1", "--value", "0.2"
    )
    assert code == 2 and "belongs to another problem or search space" in err
    from dsbo.cli.optimize import parse_config

    parsed, _ = parse_config(["--config", str(other), "--progress", "false"])
    assert blackbox_report.quick_view(parsed) is None
    parsed, _ = parse_config(["--config", path, "--progress", "false"])
    view = blackbox_report.quick_view(parsed)
    assert view is not None and view.budget == 5
    view.store.close()


def test_a_freeze_thaw_shell_loop_pauses_trials_and_lists_thawed_ones_with_their_step(
    tmp_path, capsys
):
    path = stopping_config(
        tmp_path,
        early_stopping={
            "name": "freeze-thaw",
            "curve_model": "power-law-ensemble",
            "steps_per_thaw": 3,
            "epochs": 30,
            "warm_epochs": 5,
            "candidates": 32,
        },
        budget_steps=18,
        budget=None,
        q=1,
    )
    decisions, segments = [], []
    for _ in range(40):  # 18 steps in segments of 3 take at most 6 asks with a trial
        code, asked = run(capsys, "ask", "--config", path)
        assert code == 0
        if not asked["trials"]:
            break
        for trial in asked["trials"]:
            tid, start = trial["trial"], trial.get("from_step", 0)
            segments.append((tid, start, trial["max_steps"]))
            assert trial["max_steps"] > start, f"a listed trial has steps to train: {trial}"
            for step in range(start + 1, trial["max_steps"] + 1):
                loss = tid + 1 / step
                code, out = run(
                    capsys,
                    "report",
                    "--config",
                    path,
                    "--trial",
                    str(tid),
                    "--step",
                    str(step),
                    "--value",
                    str(loss),
                )
                assert code == 0
            decisions.append(out["decision"])
            if out["decision"] == "continue":  # trained to max_steps: told as usual
                run(capsys, "tell", "--config", path, "--trial", str(tid), "--values", str(loss))
    assert not asked["trials"], "the budget in steps ran out"
    assert "pause" in decisions and segments[:3] == [(1, 0, 3), (2, 0, 3), (3, 0, 3)]
    thawed = [s for s in segments if s[1] > 0]
    # a thaw trains 3 more steps, or to the end when the budget's end is near (the endgame of FreezeThaw.choose)
    assert thawed and all(end in (start + 3, 9) for _, start, end in thawed), (
        "a thaw resumes where it paused"
    )
    trials, curves = stored(tmp_path)
    assert sum(cost for _, _, _, cost in trials) == 18 == sum(len(c) for c in curves.values())
    code, status = run(capsys, "status", "--config", path)
    assert status["paused"] == sum(1 for t in trials if t[1] == "paused") > 0


def test_a_late_shell_tell_of_an_ended_segment_leaves_the_thawed_trial_alone(tmp_path, capsys):
    """``ask`` prints each trial's segment; ``tell --segment`` of a segment that has ended (the
    trial was paused and thawed since) changes nothing (issue 57)."""
    path = stopping_config(
        tmp_path,
        early_stopping={
            "name": "freeze-thaw",
            "curve_model": "power-law-ensemble",
            "steps_per_thaw": 3,
            "epochs": 30,
            "warm_epochs": 5,
            "candidates": 32,
        },
        budget_steps=27,
        budget=None,
        q=1,
    )
    first: dict[int, int] = {}
    for _ in range(12):
        code, asked = run(capsys, "ask", "--config", path)
        assert code == 0 and asked["trials"]
        trial = asked["trials"][0]
        tid, start = trial["trial"], trial.get("from_step", 0)
        if tid in first:  # thawed: its first segment's result comes in late
            assert trial["segment"] == 1 and start == 3
            code, told = run(
                capsys,
                "tell",
                "--config",
                path,
                "--trial",
                str(tid),
                "--values",
                "0.5",
                "--segment",
                str(first[tid]),
            )
            assert code == 0 and told["status"] == "pending"
            code, out = run(
                capsys,
                "report",
                "--config",
                path,
                "--trial",
                str(tid),
                "--step",
                str(start + 1),
                "--value",
                "0.4",
                "--segment",
                "1",
            )
            assert code == 0, out
            return
        first[tid] = trial["segment"]
        for step in range(start + 1, trial["max_steps"] + 1):
            code, out = run(
                capsys,
                "report",
                "--config",
                path,
                "--trial",
                str(tid),
                "--step",
                str(step),
                "--value",
                str(tid + 1 / step),
            )
        assert out["decision"] == "pause"
    pytest.fail("no trial was thawed")
