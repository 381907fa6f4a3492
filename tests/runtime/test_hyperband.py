"""``early_terminate: {type: hyperband}``: W&B's bracket schedule and stop rule against
hand-computed examples, the block's validation, reading a run's metric history while it grows,
and sweeps whose worse runs get stopped (grid, and bayes where a stopped run is a stopped trial)."""

import json
import math
import struct
import zlib

import pytest
import yaml

from dsbo.cli.sweep import main
from dsbo.errors import ConfigError
from dsbo.runtime.hyperband import (
    Hyperband,
    HyperbandMonitor,
    brackets,
    runs_to_stop,
    stop_rule,
    thresholds,
)
from dsbo.runtime.run_history import MetricHistory
from dsbo.runtime.sweep import run_sweep
from dsbo.runtime.sweep_config import parse_sweep


# ---------------------------------------------------------------------- the schedule
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"min_iter": 3, "eta": 3}, [3, 9, 27, 81]),  # W&B's docs: min_iter 3 -> 3, 9, 27, 81
        ({"max_iter": 27, "s": 2, "eta": 3}, [3, 9]),  # W&B's docs: 27/eta, 27/eta/eta
        ({"max_iter": 81, "s": 3, "eta": 3}, [3, 9, 27]),
        ({"max_iter": 18, "s": 2, "eta": 3}, [2, 6]),  # int(18/3), int(18/9)
        ({"max_iter": 5, "s": 2, "eta": 2}, [1, 2]),  # int(2.5), int(1.25)
        ({"max_iter": 9, "s": 5, "eta": 3}, [1, 3]),  # 9/27 < 1 ends the list early
        ({"min_iter": 3, "eta": 2.5}, [3, 7, 18, 46]),  # int(3 * 2.5**k)
    ],
)
def test_brackets_follow_wandb(kwargs, expected):
    assert brackets(**kwargs)[: len(expected)] == expected


def test_min_iter_lists_wandbs_hundred_brackets_without_overflow():
    assert len(brackets(min_iter=1, eta=2)) == 54  # 2**0 .. 2**53, then no run logs that often
    assert brackets(min_iter=1, eta=1e10) == [1, 10**10]


# ---------------------------------------------------------------------- the rule
# Histories are lower-is-better; thresholds are sorted(values at iteration b)[int(n / eta)].
RUNS = {
    "a": [10, 9],  # finished: counts toward the thresholds
    "b": [10, 10],
    "c": [10, 8, 8, 3],
    "d": [10, 7, 7, 4],
    "e": [10, 6, 6, 6],
}


def test_thresholds_hand_computed():
    # bracket 1: five 10s, index int(5/3) = 1 -> 10; bracket 3: c, d, e give [6, 7, 8], index 1 -> 7
    assert thresholds([1, 3], RUNS.values(), eta=3) == [10, 7]
    # eta 2: bracket 2 over [9, 10, 8, 7, 6] -> sorted[int(5/2) = 2] = 8; nobody reached 9
    assert thresholds([1, 2, 9], RUNS.values(), eta=2) == [10, 8, math.inf]
    assert thresholds([1], [[5.0], []], eta=3) == [5.0]  # a run without values does not count


def test_strict_judges_the_value_at_the_bracket_and_conservative_the_best_so_far():
    running = ["b", "c", "d", "e"]
    strict = runs_to_stop(RUNS, running, Hyperband((1, 3), eta=3, strict=True))
    # c is judged at bracket 3 (4 values): its 3rd value 8 > 7; b at bracket 1: 10 > 10 is false (ties survive)
    assert (
        list(strict) == ["c"]
        and strict["c"].bracket == 3
        and (strict["c"].value, strict["c"].threshold) == (8, 7)
    )
    assert strict["c"].iterations == 4
    assert (
        runs_to_stop(RUNS, running, Hyperband((1, 3), eta=3, strict=False)) == {}
    )  # c's best so far, 3, is not > 7
    # eta 2, brackets 1 and 2 (max_iter 5, s 2): b's 2nd value 10 > 8; c's 8 ties the threshold
    assert list(runs_to_stop(RUNS, running, Hyperband((1, 2), eta=2))) == ["b"]


def test_a_run_is_judged_only_once_it_reaches_a_bracket_and_alone_never_stopped():
    assert stop_rule([9.0, 9.0], [3], [1.0]) is None  # bracket 3 not reached
    assert stop_rule([9.0, 9.0, 9.0], [3], [1.0]).bracket == 3
    assert (
        runs_to_stop({"solo": [5.0, 4.0, 9.0]}, ["solo"], Hyperband((1, 3))) == {}
    )  # its own value is the threshold


def test_the_monitor_negates_a_maximized_metric_and_reports_its_units():
    monitor = HyperbandMonitor(Hyperband((2,), eta=3), goal="maximize", poll=0.1)
    monitor.observe("good", [0.5, 0.9, 0.95])
    monitor.observe("bad", [0.1, 0.2])
    assert monitor.decide("good") is None
    stop = monitor.decide("bad")
    assert (stop.bracket, stop.value, stop.threshold) == (
        2,
        0.2,
        0.9,
    )  # accuracy 0.2 < the better 0.9


# ---------------------------------------------------------------------- the sweep file
def hb_sweep(early, metric=None, **extra):
    raw = {
        "program": "p.py",
        "method": "grid",
        "parameters": {"x": {"values": [1, 2]}},
        "early_terminate": early,
    }
    raw["metric"] = metric if metric is not None else {"name": "loss", "goal": "minimize"}
    return parse_sweep({**raw, **extra})


def test_a_valid_block_gives_brackets_eta_and_strict():
    s = hb_sweep({"type": "hyperband", "max_iter": 27, "s": 2})
    assert s.early_terminate == Hyperband((3, 9), 3.0, True)
    assert (
        hb_sweep(
            {"type": "hyperband", "min_iter": 2, "eta": 2, "strict": False}
        ).early_terminate.strict
        is False
    )
    assert (
        parse_sweep(
            {"program": "p.py", "method": "grid", "parameters": {"x": {"value": 1}}}
        ).early_terminate
        is None
    )


@pytest.mark.parametrize(
    ("early", "match"),
    [
        ({"type": "hyperband", "min_iter": 3, "max_iters": 9}, r"unknown key\(s\) \['max_iters'\]"),
        ({"type": "median", "min_iter": 3}, "type: hyperband"),
        ({"min_iter": 3}, "type: hyperband"),
        ("hyperband", "type: hyperband"),
        ({"type": "hyperband"}, "missing min_iter"),
        (
            {"type": "hyperband", "min_iter": 0},
            r"early_terminate.min_iter=0 must be an integer >= 1",
        ),
        ({"type": "hyperband", "min_iter": -3}, r"early_terminate.min_iter=-3"),
        ({"type": "hyperband", "min_iter": 2.5}, r"early_terminate.min_iter=2.5"),
        ({"type": "hyperband", "max_iter": 0, "s": 2}, r"early_terminate.max_iter=0"),
        ({"type": "hyperband", "max_iter": 27, "s": 0}, r"early_terminate.s=0"),
        ({"type": "hyperband", "max_iter": 27}, "max_iter needs s"),
        ({"type": "hyperband", "min_iter": 3, "s": 2}, r"early_terminate.s counts brackets"),
        ({"type": "hyperband", "min_iter": 3, "max_iter": 27, "s": 2}, "not both"),
        ({"type": "hyperband", "max_iter": 2, "s": 1}, "max_iter=2 / eta=3.0 is below 1"),
        (
            {"type": "hyperband", "min_iter": 3, "eta": 1},
            r"early_terminate.eta=1 must be a number > 1",
        ),
        ({"type": "hyperband", "min_iter": 3, "eta": -2}, r"early_terminate.eta=-2"),
        ({"type": "hyperband", "min_iter": 3, "eta": True}, r"early_terminate.eta=True"),
        ({"type": "hyperband", "min_iter": 3, "strict": "yes"}, r"early_terminate.strict='yes'"),
    ],
)
def test_a_bad_block_is_a_config_error_naming_the_key(early, match):
    with pytest.raises(ConfigError, match=match):
        hb_sweep(early)


def test_hyperband_needs_a_metric():
    raw = {
        "program": "p.py",
        "method": "grid",
        "parameters": {"x": {"values": [1]}},
        "early_terminate": {"type": "hyperband", "min_iter": 1},
    }
    with pytest.raises(ConfigError, match="early_terminate: hyperband compares the runs' metric"):
        parse_sweep(raw)


def test_a_bad_kill_delay_is_refused(monkeypatch):
    monkeypatch.setenv("WANDB_AGENT_KILL_DELAY", "soon")
    with pytest.raises(ConfigError, match="WANDB_AGENT_KILL_DELAY='soon'"):
        HyperbandMonitor(Hyperband((1,)))


# ---------------------------------------------------------------------- reading a history
def test_history_jsonl_is_read_as_it_grows(tmp_path):
    history = MetricHistory(tmp_path, "loss")
    assert (
        history.read() == []
        and "neither history.jsonl nor a W&B transaction log" in history.problem()
    )
    path = tmp_path / "history.jsonl"
    path.write_text(
        '{"loss": 3}\n{"acc": 0.1}\n{"loss": NaN}\n{"loss": true}\n{"loss": 2.5'
    )  # the last line is unfinished
    assert history.read() == [
        3.0
    ]  # rows without a finite loss are no iteration (W&B's filter_invalid)
    with path.open("a") as fh:
        fh.write(', "step": 9}\n\n{"loss": 1}\n')
    assert history.read() == [3.0, 2.5, 1.0] and history.problem() is None
    with path.open("a") as fh:
        fh.write("not json\n")
    assert history.read() == [3.0, 2.5, 1.0] and "not JSON" in history.problem()


def _leveldb_log(messages):
    """A W&B transaction log by LevelDB's log format (header ':W&B' 0xBEE1 0, 32 KiB blocks)."""
    out = bytearray(struct.pack("<4sHB", b":W&B", 0xBEE1, 0))
    for message in messages:
        rest, first = message, True
        while True:
            left = 32768 - len(out) % 32768
            if left < 7:
                out += b"\0" * left
                continue
            chunk, rest = rest[: left - 7], rest[left - 7 :]
            kind = (1 if not rest else 2) if first else (4 if not rest else 3)
            out += (
                struct.pack("<IHB", zlib.crc32(chunk, zlib.crc32(bytes([kind]))), len(chunk), kind)
                + chunk
            )
            first = False
            if not rest:
                break
    return bytes(out)


def test_a_wandb_transaction_log_is_read_in_pieces_across_blocks(tmp_path):
    from wandb.proto.wandb_internal_pb2 import Record

    def row(**items):
        record = Record()
        for key, value in items.items():
            item = record.history.item.add()
            item.key, item.value_json = key, json.dumps(value)
        return record.SerializeToString()

    messages = [
        row(loss=3.0, _step=0),
        row(note="x" * 40000),
        row(loss=2.0, _step=1),
        row(acc=0.5),
        row(loss=1.0),
    ]
    log = _leveldb_log(messages)
    assert len(log) > 32768  # the long row is split over two blocks (FIRST, LAST)
    path = tmp_path / "wandb" / "offline-run-20260101_000000-abc" / "run-abc.wandb"
    path.parent.mkdir(parents=True)
    history = MetricHistory(tmp_path, "loss")
    seen = []
    for end in (3, 20, 1000, 32770, 33000, len(log) - 5, len(log)):  # as wandb-core flushes it
        path.write_bytes(log[:end])
        seen.append(history.read())
    # the first row (29 bytes after a 7-byte header) is whole from byte 43 on; the long one from 32768 + 7 + ...
    assert seen == [[], [], [3.0], [3.0], [3.0], [3.0, 2.0], [3.0, 2.0, 1.0]]
    path.write_bytes(log[:20] + b"\xff" + log[21:])  # a corrupted record is reported, not guessed
    broken = MetricHistory(tmp_path, "loss")
    broken.read()
    assert "checksum" in broken.problem()


# ---------------------------------------------------------------------- sweeps
HISTORY_SCRIPT = """
import json, os, sys, time
x = float(sys.argv[1].split("=")[1])
run_dir = os.environ["DSBO_RUN_DIR"]
if x < 0:  # no per-step history, only the final summary
    json.dump({"loss": 5.0}, open(os.path.join(run_dir, "summary.json"), "w"))
    sys.exit(0)
if x > 10:
    time.sleep(30)
for step in range(1, 9):
    time.sleep(0.15)
    with open(os.path.join(run_dir, "history.jsonl"), "a") as fh:
        fh.write(json.dumps({"loss": x + 1.0 / step, "step": step}) + "\\n")
open(os.path.join(run_dir, "done"), "w").write("ran to the end")
"""


def test_a_grid_sweep_stops_the_runs_that_are_worse_at_a_bracket(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    raw = {
        "program": "inline",
        "name": "hb",
        "method": "grid",
        "metric": {"name": "loss", "goal": "minimize"},
        "early_terminate": {"type": "hyperband", "min_iter": 2, "eta": 3},
        "parameters": {"x": {"values": [0.0, 1.0, 2.0, -1.0]}},
        "command": ["${interpreter}", "-c", HISTORY_SCRIPT, "${args}"],
    }
    path = tmp_path / "hb.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["--config", str(path), "--dry_run"]) == 0
    assert "hyperband brackets at iterations 2, 6, 18" in capsys.readouterr().err
    info = run_sweep(parse_sweep(raw), tmp_path / "sw", progress=False, poll=0.1)
    runs = {r["run"]: r for r in info["runs"]}
    assert [r["status"] for r in info["runs"]] == ["finished", "stopped", "stopped", "finished"]
    lines = {
        name: (tmp_path / "sw" / name / "history.jsonl").read_text().splitlines()
        for name in ("run-000", "run-001", "run-002")
    }
    good = runs["run-000"]
    assert len(lines["run-000"]) == 8 and (tmp_path / "sw/run-000/done").exists()
    assert (
        good["metric"] == pytest.approx(1 / 8)
        and good["hyperband"] == {"iterations": 8}
        and good["error"] is None
    )
    for name, x, threshold in (("run-001", 1.0, 0.5), ("run-002", 2.0, 1.5)):
        run = runs[name]
        assert not (tmp_path / "sw" / name / "done").exists() and len(lines[name]) < 8, (
            "stopped before the end"
        )
        assert run["hyperband"]["bracket"] == 2 and run["hyperband"]["value"] == pytest.approx(
            x + 0.5
        )
        assert run["hyperband"]["threshold"] == pytest.approx(
            threshold
        )  # run-002: sorted[0.5, 1.5, 2.5][int(3/3)]
        assert run["metric"] == json.loads(lines[name][-1])["loss"], (
            "a stopped run's result is its last value"
        )
        assert run["error"].startswith("stopped by hyperband at iteration 2: loss=")
    unwatched = runs["run-003"]  # wrote no history: said so, and its summary is its result
    assert (
        unwatched["metric"] == 5.0
        and "could not watch this run: no per-step history" in unwatched["error"]
    )
    assert info["best"]["run"] == "run-000"
    rows = (tmp_path / "sw" / "sweep.csv").read_text().splitlines()
    assert rows[2].startswith("run-001,stopped,")


def test_a_watched_run_past_its_timeout_is_killed(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    s = parse_sweep(
        {
            "program": "inline",
            "method": "grid",
            "metric": {"name": "loss"},
            "early_terminate": {"type": "hyperband", "min_iter": 1},
            "parameters": {"x": {"value": 20.0}},
            "command": ["${interpreter}", "-c", HISTORY_SCRIPT, "${args}"],
        }
    )
    info = run_sweep(s, tmp_path / "sw", progress=False, poll=0.1, timeout=0.5)
    assert info["runs"][0]["status"] == "timeout" and info["runs"][0]["seconds"] < 5


BAYES_HISTORY_SCRIPT = """
import json, os, sys, time
x = float(sys.argv[1].split("=")[1])
for step in range(1, 5):
    time.sleep(0.1)
    with open(os.path.join(os.environ["DSBO_RUN_DIR"], "history.jsonl"), "a") as fh:
        fh.write(json.dumps({"acc": 1.0 - abs(x - 0.3) - 1.0 / step}) + "\\n")
"""


BAYES_SWEEP = {
    "program": "inline",
    "method": "bayes",
    "metric": {"name": "acc", "goal": "maximize"},
    "early_terminate": {"type": "hyperband", "min_iter": 2, "eta": 2},
    "parameters": {"x": {"min": 0.0, "max": 1.0}},
    "command": ["${interpreter}", "-c", BAYES_HISTORY_SCRIPT, "${args}"],
    "dsbo": {"surrogate": "gp", "n_init": 3},
}


def test_in_a_bayes_sweep_a_stopped_run_is_a_stopped_trial_with_its_curve(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    s = parse_sweep(BAYES_SWEEP)
    info = run_sweep(s, tmp_path / "sw", count=3, progress=False, poll=0.05)
    runs = info["runs"]
    stopped = [r for r in runs if r["status"] == "stopped"]
    assert stopped and {r["status"] for r in runs} <= {"finished", "stopped"}, runs
    from dsbo.storage import TrialStore

    with TrialStore(tmp_path / "sw" / "trials.sqlite", lock=False) as store:
        trials = {f"run-{t.id:03d}": t for t in store.trials()}
        curves = store.curves()
    for r in runs:
        values = [
            json.loads(line)["acc"]
            for line in (tmp_path / "sw" / r["run"] / "history.jsonl").read_text().splitlines()
        ]
        trial = trials[r["run"]]
        assert trial.status == ("stopped" if r["status"] == "stopped" else "completed")
        assert trial.y[0] == pytest.approx(values[-1]) and r["metric"] == pytest.approx(values[-1])
        assert curves[trial.id] == [
            (i, pytest.approx(v)) for i, v in enumerate(values, start=1)
        ]  # maximized: as logged
        if r["status"] == "stopped":
            assert (
                len(values) < 4 and r["hyperband"]["value"] < r["hyperband"]["threshold"]
            )  # maximized: lower is worse
            assert r["error"].startswith("stopped by hyperband")


def test_a_bayes_sweep_with_early_terminate_fits_its_model_as_bohb_on_the_brackets(tmp_path):
    from dsbo.runtime.sweep import bayes_campaign

    s = parse_sweep(BAYES_SWEEP)
    campaign = bayes_campaign(s, tmp_path, 5)
    settings = campaign.early_stopping
    assert settings.rule is None and settings.model == "bohb" and settings.rungs()[:3] == [2, 4, 8]
    campaign.store.close()
