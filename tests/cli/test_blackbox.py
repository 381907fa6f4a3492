"""`python -m dsbo.blackbox ask|tell|status`: a campaign driven from the shell."""

import json

import yaml

from dsbo.cli.blackbox import main


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
                run(capsys, "tell", "--config", path, "--trial", str(trial["trial"]), "--error", "spilled")
            else:
                score = -((p["a"] - 0.3) ** 2) - p["b"] ** 2
                run(capsys, "tell", "--config", path, "--trial", str(trial["trial"]), "--values", str(score))
            told += 1
    assert told == 5
    code, status = run(capsys, "status", "--config", path)
    assert status["completed"] == 4 and status["failed"] == 1 and status["remaining_budget"] == 0
    assert (tmp_path / "run" / "history.csv").is_file() and (tmp_path / "run" / "trace.png").is_file()


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
        "problem": {"name": "black-box", "options": {
            "parameters": {"temperature": [20, 80], "humidity": [0, 1], "weather": [0, 1]},
            "objectives": ["score"],
            "contexts": {"humidity": 2.0, "weather": {"cost": 0, "observe_only": True}},
        }},
        "surrogate": {"name": "gp"},
        "contexts": {"policy": "vbo"},
        "acquisition": {"num_restarts": 2, "raw_samples": 32, "maxiter": 25},
        "budget": 5,
        "n_init": 3,
        "run_dir": str(tmp_path / "run"),
        "wandb": {"mode": "disabled"},
    }  # fmt: skip
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_a_contextual_black_box_is_asked_with_the_contexts_it_observes(tmp_path, capsys):
    path = contextual_config(tmp_path)
    code, err = run(capsys, "ask", "--config", path)
    assert code == 2 and "--contexts" in err  # dsbo never invents the environment's values
    for i in range(5):
        code, out = run(capsys, "ask", "--config", path, "--contexts", "{humidity: 0.4, weather: 0.9}")
        assert code == 0
        [trial] = out["trials"]
        p = trial["parameters"]
        assert p["weather"] == 0.9 and trial["contexts"]["weather"] == "observed"  # observe-only
        if i < 3:  # the initial design observes every context
            assert p["humidity"] == 0.4 and trial["cost"] == 1.0
        else:  # VBO optimizes the controllable context and pays for it
            assert trial["contexts"]["humidity"] == "optimized" and trial["cost"] == 3.0
        run(capsys, "tell", "--config", path, "--trial", str(trial["trial"]), "--values", str(p["temperature"] / 80))
    code, out = run(capsys, "ask", "--config", path, "--contexts", "{humidity: 0.4, weather: 0.9}")
    assert out["trials"] == [] and out["remaining_budget"] == 0
    code, err = run(capsys, "ask", "--config", path, "--contexts", "{humidity: 3.0, weather: 0.9}")
    assert code == 0  # the budget is spent: nothing is asked, so nothing is checked


def test_bad_context_values_are_refused(tmp_path, capsys):
    path = contextual_config(tmp_path)
    for bad, expected in (("{humidity: 3.0, weather: 0.9}", "outside its bounds"),
                          ("{humidity: 0.5}", "missing ['weather']"),
                          ("{humidity: .nan, weather: 0.1}", "must be a finite number")):  # fmt: skip
        code, err = run(capsys, "ask", "--config", path, "--contexts", bad)
        assert code == 2 and expected in err


def test_the_hpo_example_asks_and_tells_named_typed_values(tmp_path, capsys):
    cfg = yaml.safe_load(open("configs/bo/black-box-hpo.yaml"))
    cfg.update(run_dir=str(tmp_path / "run"), budget=4, n_init=3, wandb={"mode": "disabled"},
               acquisition={"name": "qlognei", "num_restarts": 2, "raw_samples": 32, "maxiter": 25})  # fmt: skip
    path = tmp_path / "hpo.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))  # the parameters keep their order
    code, out = run(capsys, "tell", "--config", str(path), "--parameters",
                    "{lr: 0.001, warmup_lr: 0.0001, width: 128, optimizer: adam, dropout: 0.1}", "--values", "0.4")  # fmt: skip
    assert code == 0 and out["parameters"]["width"] == 128
    seen = []
    while (out := run(capsys, "ask", "--config", str(path))[1])["trials"]:
        for trial in out["trials"]:
            p = trial["parameters"]
            assert isinstance(p["width"], int) and p["optimizer"] in ("adam", "sgd")
            assert ("momentum" in p) == (p["optimizer"] == "sgd")
            assert p["lr"] >= 2 * p["warmup_lr"] * (1 - 1e-9)  # the linear constraint
            assert round(p["dropout"] / 0.05, 9) == round(p["dropout"] / 0.05)
            run(capsys, "tell", "--config", str(path), "--trial", str(trial["trial"]), "--values", str(0.5 + len(seen) / 10))
            seen.append(p)
    assert len(seen) == 3
    _, status = run(capsys, "status", "--config", str(path))
    assert status["best_value"] == 0.4  # the lowest val_loss told, as told
    code, err = run(capsys, "tell", "--config", str(path), "--parameters", "{lr: 0.001, warmup_lr: 0.0001, width: 12.5, optimizer: adam, dropout: 0.1}", "--values", "-1")
    assert code == 2 and "parameters.width" in err
    header = (tmp_path / "run" / "history.csv").read_text().splitlines()[0].split(",")
    assert header[4:11] == ["lr", "warmup_lr", "width", "optimizer", "momentum", "dropout", "val_loss"]
