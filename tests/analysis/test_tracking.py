"""W&B tracking on real offline runs: the trials table, the summary under summary.json's names,
the HTML report as panel and artifact; ``mode="disabled"`` never imports wandb.

An offline run keeps its media under ``files/media`` and everything else (history, summary,
artifacts) as protobuf records in ``run-<id>.wandb``, what ``wandb sync`` uploads; the tests
read both.
"""

import dataclasses
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

import dsbo
from dsbo.analysis.tracking import WandbTracker, flatten_summary, one_type_per_column
from dsbo.campaign import Campaign
from dsbo.problems import get_problem
from dsbo.space import SearchSpace

SPACE = {
    "lr": dsbo.Float(1e-4, 1e-1, log=True),
    "width": dsbo.Int(16, 512, log=True),
    "optimizer": dsbo.Choice(["adam", "sgd"]),
    "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
    "activation": dsbo.Fixed("relu"),
}
COLUMNS = [
    "trial",
    "status",
    "lr",
    "width",
    "optimizer",
    "momentum",
    "activation",
    "accuracy",
    "num_changed",
    "cost",
    "generator",
    "error",
]
#: Shaped like summary.json: scalars, nested dicts, lists, None.
SUMMARY = {
    "problem": "black-box",
    "best_value": 0.5,
    "optimal_value": None,
    "best_params": {"lr": 0.01, "optimizer": "sgd", "momentum": 0.8},
    "best_x": [-4.6, 1.0],
    "value_vs_changes": [{"changed": 2, "best_value": 0.1}, {"changed": 4, "best_value": 0.5}],
    "completed": 4,
    "failed": 1,
    "seconds_per_iteration": {"fit": 0.25, "acquisition": 0.5, "other": 0.125, "iterations": 0},
    "contexts": None,
}
REPORT = "<!doctype html><html><body><h1>dsbo report</h1></body></html>"


@pytest.fixture(scope="module")
def campaign():
    """Five Sobol trials of a named mixed space (seed 1 draws both optimizers); trial 3 fails."""
    problem = get_problem("black-box", parameters=SearchSpace(SPACE), objectives=["accuracy"])
    campaign = Campaign(problem, surrogate="gp", budget=5, n_init=5, seed=1)
    for trial in campaign.ask(5):
        if trial.id == 3:
            campaign.tell(trial.id, error="out of memory")
        else:
            campaign.tell(trial.id, {"accuracy": trial.id / 10})
    return campaign


def offline_env(mp: pytest.MonkeyPatch, root: Path) -> None:
    """Offline, silent W&B writing everything (runs, artifact staging, cache) under ``root``."""
    mp.setenv("WANDB_MODE", "offline")
    mp.setenv("WANDB_SILENT", "true")
    for var, sub in [
        ("WANDB_DIR", ""),
        ("WANDB_DATA_DIR", "data"),
        ("WANDB_CACHE_DIR", "cache"),
        ("WANDB_ARTIFACT_DIR", "artifacts"),
        ("WANDB_CONFIG_DIR", "config"),
    ]:
        (root / sub).mkdir(exist_ok=True)
        mp.setenv(var, str(root / sub))


def offline_run(run_dir: Path) -> Path:
    """The one offline run under ``run_dir``."""
    [path] = (run_dir / "wandb").glob("offline-run-*")
    return path


def records(run: Path) -> list:
    """The protobuf records of an offline run's ``.wandb`` file (a LevelDB-style log: a 7-byte
    file header, then 32 KiB blocks of chunks, each ``crc32, length, type`` then data; type 1
    is a whole record, 2/3/4 its first/middle/last part)."""
    [path] = run.glob("run-*.wandb")
    deadline = time.monotonic() + 60
    while True:  # wandb's service may still be writing the file's tail after ``finish`` returns
        found = parse_records(path.read_bytes())
        if any(r.WhichOneof("record_type") == "exit" for r in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def parse_records(data: bytes) -> list:
    """The whole records of a ``.wandb`` log's bytes (see :func:`records`)."""
    from wandb.proto.wandb_internal_pb2 import Record

    assert data[:4] == b":W&B"
    block, pos, parts, found = 32768, 7, [], []
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if pos + 7 + length > len(data):  # a chunk still being written
            break
        parts.append(data[pos + 7 : pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):
            record = Record()
            record.ParseFromString(b"".join(parts))
            found.append(record)
            parts = []
    return found


def final_summary(run: Path) -> dict:
    """The run summary the records leave: every update in order, later ones winning."""
    summary = {}
    for record in records(run):
        if record.WhichOneof("record_type") == "summary":
            for item in record.summary.update:
                summary[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return summary


@pytest.fixture(scope="module")
def full_run(campaign, tmp_path_factory):
    """One offline run: trials logged in two batches (trial 5 first while pending, then done),
    then finished with the summary, a trace image and the HTML report."""
    root = tmp_path_factory.mktemp("wandb")
    trials = campaign.store.trials()
    report, trace = root / "report.html", root / "trace.png"
    report.write_text(REPORT)
    Image.new("RGB", (4, 3)).save(trace)
    with pytest.MonkeyPatch.context() as mp:
        offline_env(mp, root)
        tracker = WandbTracker(root, {"seed": 1})
        run_id = tracker.run.id
        pending = dataclasses.replace(trials[4], status="pending", y=None)
        tracker.log_trials([*trials[:3], pending], 0.2, campaign.problem)
        tracker.log_trials(trials[3:], 0.5, campaign.problem)
        tracker.finish(SUMMARY, trace, report)
    return offline_run(root), run_id, trials


def test_the_trials_table_has_a_row_per_trial_with_named_parameters(full_run, campaign):
    run, _, trials = full_run
    [path] = (run / "files" / "media" / "table").glob("trials_*.table.json")
    table = json.loads(path.read_text())
    assert table["columns"] == COLUMNS
    rows = [dict(zip(COLUMNS, row, strict=True)) for row in table["data"]]
    assert [r["trial"] for r in rows] == [1, 2, 3, 4, 5]  # trial 5 logged twice: one row
    for row, trial in zip(rows, trials, strict=True):
        params = campaign.problem.params(trial.x)
        assert {n: row[n] for n in SPACE} == {n: params.get(n) for n in SPACE}  # None: inactive
        assert row["status"] == trial.status and row["generator"] == "sobol-init"
        assert row["num_changed"] == trial.metadata["num_changed"] and row["cost"] == 1.0
        assert isinstance(row["width"], int) and row["activation"] == "relu"
    assert {r["optimizer"] for r in rows} == {"adam", "sgd"}
    assert all((r["momentum"] is None) == (r["optimizer"] == "adam") for r in rows)
    assert [r["accuracy"] for r in rows] == [0.1, 0.2, None, 0.4, 0.5]
    assert rows[2]["status"] == "failed" and rows[2]["error"] == "out of memory"
    assert rows[4]["status"] == "completed"


def test_each_trial_is_a_history_step_with_its_numeric_parameters(full_run, campaign):
    run, _, trials = full_run
    steps = {}
    for record in records(run):
        if record.WhichOneof("record_type") == "history":
            items = {
                "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                for i in record.history.item
            }
            steps.setdefault(items["trial"], {}).update(items)
    for trial in trials:
        step = steps[trial.id]
        assert step["trial"] == trial.id and step["failed"] == int(trial.status == "failed")
        assert {"param/lr", "param/width"} <= set(step) and "param/optimizer" not in step
        assert ("param/momentum" in step) == ("momentum" in campaign.problem.params(trial.x))
    assert steps[5]["accuracy"] == 0.5 and steps[5]["best_so_far"] == 0.5
    assert "accuracy" not in steps[3]
    # trial 4 came after trial 5 and is kept; the charts' x-axis is the trial id
    metrics = [r.metric for r in records(run) if r.WhichOneof("record_type") == "metric"]
    assert any(m.glob_name == "*" and m.step_metric == "trial" for m in metrics)


def test_the_summary_has_summary_json_names(full_run):
    run, _, _ = full_run
    summary = final_summary(run)
    flat = flatten_summary(SUMMARY)
    assert {k: summary[k] for k in flat} == flat
    assert (
        summary["seconds_per_iteration/fit"] == 0.25 and summary["best_params/optimizer"] == "sgd"
    )
    assert json.loads(summary["value_vs_changes"]) == SUMMARY["value_vs_changes"]
    assert summary["contexts"] is None and "seconds_per_iteration" not in summary
    assert summary["failed"] == 1  # summary.json's count, not the last step's 0/1 flag


def test_the_report_is_an_html_panel_and_an_artifact(full_run):
    run, run_id, _ = full_run
    [html] = (run / "files" / "media" / "html").glob("report_*.html")
    assert html.read_text() == REPORT  # not injected with W&B's stylesheet
    assert list((run / "files" / "media" / "images").glob("trace_*.png"))
    artifacts = [r.artifact for r in records(run) if r.WhichOneof("record_type") == "artifact"]
    [report] = [a for a in artifacts if a.type == "report"]
    assert report.name == f"report-{run_id}"
    assert [c.path for c in report.manifest.contents] == ["report.html"]


def test_without_trials_or_report_only_the_summary_is_logged(tmp_path, monkeypatch):
    offline_env(monkeypatch, tmp_path)
    tracker = WandbTracker(tmp_path, {})
    tracker.finish(
        {"best_value": None, "seconds_per_iteration": {"fit": 1.5}}, None, tmp_path / "missing.html"
    )
    run = offline_run(tmp_path)
    assert not (run / "files" / "media").exists()
    assert not [r for r in records(run) if r.WhichOneof("record_type") == "artifact"]
    summary = final_summary(run)
    assert summary["seconds_per_iteration/fit"] == 1.5 and summary["best_value"] is None


def test_flatten_summary_nests_with_slashes_and_encodes_lists():
    assert flatten_summary({"a": {"b": {"c": 1}, "d": []}, "e": True, "f": {}}) == {
        "a/b/c": 1,
        "a/d": "[]",
        "e": True,
    }


def test_a_column_of_mixed_types_becomes_text():
    """A W&B table refuses a column mixing types (a choice of ``[16, "auto"]``)."""
    rows = [[1, 16, 0.5, True], [2, "auto", 1, None], [3, None, None, False]]
    assert one_type_per_column(rows) == [
        [1, "16", 0.5, True],
        [2, "auto", 1, None],
        [3, None, None, False],
    ]
    assert one_type_per_column([]) == []


def test_disabled_mode_never_imports_wandb(tmp_path):
    code = (
        "import sys\n"
        "from dsbo.analysis.tracking import WandbTracker\n"
        "from dsbo.problems import get_problem\n"
        f"tracker = WandbTracker({str(tmp_path)!r}, {{}}, mode='disabled')\n"
        "tracker.log_trials([], None, get_problem('branin'))\n"
        "tracker.finish({'best_value': 1.0}, None, None)\n"
        "assert 'wandb' not in sys.modules, 'wandb was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not (tmp_path / "wandb").exists()


def history_trials(run: Path) -> list[int]:
    """The ``trial`` of every history step, in the order they were logged."""
    ids = []
    for record in records(run):
        if record.WhichOneof("record_type") == "history":
            items = {
                "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                for i in record.history.item
            }
            if "trial" in items:
                ids.append(items["trial"])
    return ids


def test_steps_logged_while_the_run_starts_are_kept_in_order(campaign, tmp_path, monkeypatch):
    """An offline run starts in a thread; the campaign does not wait for it."""
    import threading

    import wandb

    offline_env(monkeypatch, tmp_path)
    release = threading.Event()
    real_init = wandb.init

    def slow_init(**kwargs):
        release.wait(30)
        return real_init(**kwargs)

    monkeypatch.setattr(wandb, "init", slow_init)
    trials = campaign.store.trials()
    tracker = WandbTracker(tmp_path, {"seed": 1})
    tracker.log_trials(trials[:2], 0.2, campaign.problem)  # returns at once: the run is not up
    tracker.log_trials(trials[2:4], 0.4, campaign.problem)
    assert len(tracker._queued) == 4 and tracker._starting.is_alive()
    release.set()
    assert tracker.run is not None  # waits for the start
    tracker.log_trials(trials[4:], 0.5, campaign.problem)  # logs the kept steps first
    assert not tracker._queued
    tracker.finish(SUMMARY, None)
    logged = history_trials(offline_run(tmp_path))
    assert logged[: len(trials)] == [t.id for t in trials]  # then the media step, at the last trial
    assert set(logged[len(trials) :]) <= {trials[-1].id}


def test_a_run_that_cannot_start_says_so_where_it_is_used(tmp_path, monkeypatch):
    import wandb

    offline_env(monkeypatch, tmp_path)

    def broken_init(**kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr(wandb, "init", broken_init)
    tracker = WandbTracker(tmp_path, {})
    with pytest.raises(
        dsbo.errors.DsboError, match="W&B could not start the run .*no space left.*wandb.mode"
    ):
        tracker.finish({"best_value": None}, None)
    # an online run starts before the command goes on: its error comes from the constructor
    with pytest.raises(dsbo.errors.DsboError, match="no space left"):
        WandbTracker(tmp_path, {}, mode="online")
