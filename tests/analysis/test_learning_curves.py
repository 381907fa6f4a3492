"""Learning curves and stopped trials in a run's outputs (issue 42): a real early-stopped
campaign (``dsbo.minimize`` with ASHA, a GP, 8 trials of up to 9 steps, one trial failing after
its first report) written as a run directory, then read back: ``history.csv`` (status, last
value in the user's direction, reason, ``steps``; the best ignores stopped trials),
``summary.json``'s step counts recomputed by hand from the store, the report's learning-curve
and steps panels, the report cache's staleness check, and the W&B offline run's ``curves``
table. A run without curves keeps its outputs as they were."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import dsbo
from dsbo.analysis import report_cache
from dsbo.analysis.curves import CURVES_NAME, read_csv
from dsbo.analysis.outputs import write_outputs
from dsbo.analysis.report_data import ReportData, from_campaign
from dsbo.analysis.report_figures import CURVE_COLOURS, learning_curves, steps_vs_best
from dsbo.campaign.history import history_frame
from dsbo.space import SearchSpace

pytestmark = pytest.mark.filterwarnings("ignore")

SPACE = {"lr": dsbo.Float(1e-3, 1.0, log=True), "width": dsbo.Int(1, 8)}
FAST = {"surrogate": "gp", "dry_run": False, "n_init": 4, "outcome_warping": None, "seed": 0}
MAX_STEPS = 9


def loss_at(params, epoch):
    """A learning curve: bad learning rates stay high, every curve falls as 1/epoch."""
    return abs(math.log10(params["lr"]) + 1.5) + 1.0 / epoch + 0.01 * params["width"]


def train(params, trial):
    """Reports each epoch's loss; a learning rate above 0.5 diverges after its first epoch."""
    loss = math.inf
    for epoch in range(1, MAX_STEPS + 1):
        loss = loss_at(params, epoch)
        trial.report(epoch, loss)
        if params["lr"] > 0.5:
            raise RuntimeError("diverged")
        if trial.should_stop():
            break
    return loss


def panel_traces(page: str, panel: str) -> list[dict]:
    """The traces of the report's ``panel`` as ``Plotly.newPlot`` receives them."""
    start = page.find(f'"panel-{panel}",', page.find("Plotly.newPlot("))
    if start < 0:
        return []
    traces, _ = json.JSONDecoder().raw_decode(page, page.index("[", start))
    return traces


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The early-stopped run, its outputs written (report included) as a CLI run's would be."""
    root = tmp_path_factory.mktemp("curves")
    result = dsbo.minimize(
        train,
        SPACE,
        budget=8,
        early_stopping="asha",
        max_steps=MAX_STEPS,
        store=str(root / "trials.sqlite"),
        **FAST,
    )
    campaign = result.campaign
    out = root / "out"
    out.mkdir()
    (out / "config.yaml").write_text(
        "budget: 8\n"
    )  # so the report's data are kept (report_data.json)
    info = write_outputs(campaign, out, report=True)
    yield {
        "result": result,
        "campaign": campaign,
        "store": campaign.store,
        "out": out,
        "info": info,
        "page": (out / "report.html").read_text(),
    }
    campaign.store.close()


def test_the_run_has_completed_stopped_and_failed_trials_with_curves(run):
    store = run["store"]
    statuses = {t.status for t in store.trials()}
    assert {"completed", "stopped", "failed"} <= statuses
    assert set(store.curves()) == {t.id for t in store.trials()}  # every trial reported


def test_history_shows_stopped_trials_with_their_last_value_reason_and_steps(run):
    store, problem = run["store"], run["campaign"].problem
    curves = store.curves()
    history = pd.read_csv(run["out"] / "history.csv")
    assert list(history.columns) == list(history_frame(store.trials(), problem, curves).columns)
    columns = list(history.columns)
    assert columns.index("steps") == columns.index("cost") + 1
    for trial in store.trials():
        row = history.set_index("trial").loc[trial.id]
        assert row["status"] == trial.status
        assert row["steps"] == curves[trial.id][-1][0]
        if trial.status == "stopped":
            assert row["objective"] == pytest.approx(
                -curves[trial.id][-1][1]
            )  # the loss, not -loss
            assert row["error"] == trial.error and trial.error.startswith("asha")
    # the best so far counts the completed trials only: never a stopped trial's partial value
    done = history["status"] == "completed"
    assert history.loc[done, "best_so_far"].tolist() == pytest.approx(
        history.loc[done, "objective"].cummin().tolist()
    )
    best_partial = history.loc[history["status"] == "stopped", "objective"].min()
    best = history.loc[done, "objective"].min()
    assert history["best_so_far"].min() == pytest.approx(best)
    assert run["info"]["best_value"] == pytest.approx(best) and run[
        "result"
    ].best_value == pytest.approx(best)
    assert not math.isnan(best_partial)


def test_history_of_trials_without_curves_has_no_steps_column(run):
    store, problem = run["store"], run["campaign"].problem
    assert "steps" not in history_frame(store.trials(), problem).columns
    assert "steps" not in history_frame(store.trials(), problem, {}).columns
    # a trial that reported nothing: NaN in a run where others reported
    trials = store.trials()
    some = {t.id: store.curves()[t.id] for t in trials[:2]}
    steps = history_frame(trials, problem, some)["steps"]
    assert steps.iloc[:2].notna().all() and steps.iloc[2:].isna().all()


def test_summary_counts_the_steps_used_and_saved(run):
    store, info = run["store"], run["info"]
    curves = store.curves()
    ended = [t for t in store.trials() if t.status != "pending"]
    used = sum(curves[t.id][-1][0] for t in ended)
    assert info["num_stopped"] == store.count("stopped") > 0
    assert info["steps_used"] == used
    assert info["steps_full"] == len(ended) * MAX_STEPS
    assert info["steps_saved"] == len(ended) * MAX_STEPS - used > 0
    assert (
        json.loads((run["out"] / "summary.json").read_text())["steps_saved"] == info["steps_saved"]
    )
    assert info["completed"] == store.count("completed")


def test_curves_csv_holds_every_reported_value_in_the_users_direction(run):
    store = run["store"]
    statuses = {t.id: t.status for t in store.trials()}
    expected = [
        [i, statuses[i], s, -v] for i, points in sorted(store.curves().items()) for s, v in points
    ]
    assert read_csv(run["out"] / CURVES_NAME) == expected


def test_the_report_draws_one_curve_per_trial_coloured_by_outcome(run):
    store, page = run["store"], run["page"]
    curves = store.curves()
    statuses = {t.id: t.status for t in store.trials()}
    traces = panel_traces(page, "curves")
    lines = [t for t in traces if t["mode"] == "lines"]
    assert sorted(t["meta"] for t in lines) == sorted(curves)  # one trace per trial
    for trace in lines:
        trial = trace["meta"]
        assert trace["x"] == [s for s, _ in curves[trial]]
        assert trace["y"] == pytest.approx([-v for _, v in curves[trial]], rel=1e-5)
        assert (
            trace["name"] == statuses[trial]
            and trace["line"]["color"] == CURVE_COLOURS[statuses[trial]]
        )
    assert sum(t["showlegend"] for t in lines) == len(
        set(statuses.values())
    )  # a legend entry per outcome
    [marks] = [t for t in traces if t["name"] == "stopped here"]
    stopped = sorted(i for i, s in statuses.items() if s == "stopped")
    assert marks["customdata"] == stopped and marks["marker"]["symbol"] == "x"
    assert marks["x"] == [curves[i][-1][0] for i in stopped]
    assert marks["y"] == pytest.approx([-curves[i][-1][1] for i in stopped], rel=1e-5)
    assert all(text.startswith("asha") for text in marks["text"])


def test_the_report_draws_steps_spent_against_the_best_fully_trained_value(run):
    store, page = run["store"], run["page"]
    curves = store.curves()
    history = pd.read_csv(run["out"] / "history.csv")
    spent, full = panel_traces(page, "steps")
    cumulative = list(pd.Series([curves[t][-1][0] for t in history["trial"]]).cumsum())
    assert spent["x"] == cumulative
    assert full["x"] == [MAX_STEPS * (k + 1) for k in range(len(history))]
    assert spent["y"] == pytest.approx(history["best_so_far"].tolist(), rel=1e-5, nan_ok=True)


def test_the_report_lists_the_stopped_trials_with_their_reason(run):
    page = run["page"]
    section = page[page.index("<h2>Stopped trials</h2>") :]
    section = section[: section.index("</section>")]
    for trial in run["store"].trials("stopped"):
        assert f"<td>{trial.id}</td><td>stopped</td>" in section
        assert trial.error.replace(">", "&gt;").replace("<", "&lt;") in section
    assert page.index("<h2>Best trials</h2>") < page.index("<h2>Stopped trials</h2>")


def test_the_report_renders_in_a_browser(run):
    from browser import open_page

    page = open_page(run["out"] / "report.html", wait_s=30)
    assert page.errors == []
    assert page.plotly_divs == page.plotly_rendered >= 4, page.unrendered_plots


def test_the_kept_report_data_hold_the_curves_and_a_new_report_makes_them_stale(run, tmp_path):
    store, out = run["store"], run["out"]
    digest = report_cache.trials_digest(store)
    cached, _ = report_cache.load(out, digest)
    assert cached is not None
    data = from_campaign(run["campaign"], model=False)
    assert cached.data.curves == data.curves and cached.data.max_steps == MAX_STEPS
    # a running trial's new report changes no trial row, yet the kept data are stale
    tuner = dsbo.Tuner(
        SPACE, max_steps=MAX_STEPS, early_stopping=None, store=str(tmp_path / "t.sqlite"), **FAST
    )
    trial = tuner.ask()
    before = report_cache.trials_digest(tuner.campaign.store)
    trial.report(1, 0.5)
    after = report_cache.trials_digest(tuner.campaign.store)
    assert before != after
    trial.report(2, 0.25)
    assert report_cache.trials_digest(tuner.campaign.store) not in (before, after)
    tuner.campaign.store.close()


def test_a_run_without_curves_keeps_its_outputs_as_they_were(tmp_path):
    result = dsbo.minimize(
        lambda p: loss_at(p, MAX_STEPS), SPACE, budget=5, store=str(tmp_path / "t.sqlite"), **FAST
    )
    out = tmp_path / "out"
    out.mkdir()
    info = write_outputs(result.campaign, out, report=True)
    page = (out / "report.html").read_text()
    assert "panel-curves" not in page and "panel-steps" not in page and "Stopped trials" not in page
    assert "panel-history" in page
    assert not {"num_stopped", "steps_used", "steps_full", "steps_saved"} & set(info)
    assert "steps" not in pd.read_csv(out / "history.csv").columns
    assert not (out / CURVES_NAME).exists()
    result.campaign.store.close()


def _data(curves, frame=None, max_steps=None) -> ReportData:
    if frame is None:
        frame = pd.DataFrame(
            {
                "trial": [c["trial"] for c in curves],
                "status": [c["status"] for c in curves],
                "best_so_far": [1.0] * len(curves),
            }
        )
    return ReportData(
        title="t",
        space=SearchSpace({"x": dsbo.Float(0.0, 1.0)}),
        frame=frame,
        objective_names=["loss"],
        signs=[-1.0],
        curves=curves,
        max_steps=max_steps,
    )


CURVES = [
    {
        "trial": 1,
        "status": "completed",
        "steps": [1, 2, 3],
        "values": [3.0, 2.0, 1.0],
        "reason": None,
    },
    {"trial": 2, "status": "stopped", "steps": [1], "values": [4.0], "reason": "median: worse"},
    {"trial": 3, "status": "failed", "steps": [1, 2], "values": [5.0, 6.0], "reason": None},
    {"trial": 4, "status": "pending", "steps": [1, 2], "values": [2.5, 1.5], "reason": None},
]


def test_every_outcome_has_its_colour_and_a_running_trial_is_running():
    fig = learning_curves(_data(CURVES, max_steps=3))
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [(t.meta, t.name, t.line.color) for t in lines] == [
        (1, "completed", CURVE_COLOURS["completed"]),
        (2, "stopped", CURVE_COLOURS["stopped"]),
        (3, "failed", CURVE_COLOURS["failed"]),
        (4, "running", CURVE_COLOURS["running"]),
    ]
    [marks] = [t for t in fig.data if t.mode == "markers"]
    assert list(marks.x) == [1] and list(marks.y) == [4.0] and list(marks.text) == ["median: worse"]
    assert "lower is better" in fig.layout.yaxis.title.text


def test_many_curves_are_drawn_as_one_trace_per_outcome(monkeypatch):
    from dsbo.analysis import report_curves

    monkeypatch.setattr(report_curves, "MAX_CURVE_TRACES", 2)
    many = [
        *CURVES,
        {"trial": 5, "status": "completed", "steps": [1, 2], "values": [9.0, 8.0], "reason": None},
    ]
    lines = [t for t in learning_curves(_data(many)).data if t.mode == "lines"]
    assert [t.name for t in lines] == ["completed", "stopped", "failed", "running"]
    assert list(lines[0].x) == [1, 2, 3, None, 1, 2] and list(lines[0].customdata) == [
        1,
        1,
        1,
        None,
        5,
        5,
    ]


def test_no_curves_no_panels():
    assert learning_curves(_data([])) is None and steps_vs_best(_data([])) is None


def test_a_trial_that_reported_nothing_counts_its_full_steps_when_completed():
    frame = pd.DataFrame(
        {
            "trial": [1, 2, 3],
            "status": ["completed", "completed", "stopped"],
            "best_so_far": [2.0, 1.0, 1.0],
        }
    )
    curves = [
        {
            "trial": 1,
            "status": "completed",
            "steps": [1, 2, 4],
            "values": [3.0, 2.0, 2.0],
            "reason": None,
        },
        {"trial": 3, "status": "stopped", "steps": [1], "values": [5.0], "reason": "r"},
    ]
    spent, full = steps_vs_best(_data(curves, frame, max_steps=4)).data
    assert list(spent.x) == [4, 8, 9] and list(full.x) == [4, 8, 12]


def test_wandb_offline_run_logs_the_curve_table_and_the_stopped_status(run, tmp_path, monkeypatch):
    from test_tracking import final_summary, offline_env, offline_run, records

    from dsbo.analysis.tracking import WandbTracker

    store, problem, out = run["store"], run["campaign"].problem, run["out"]
    curves = store.curves()
    offline_env(monkeypatch, tmp_path)
    tracker = WandbTracker(out, {"seed": 0})
    tracker.log_trials(store.trials(), run["info"]["best_value"], problem, curves=curves)
    kept = [row for i in sorted(tracker.curves) for row in tracker.curves[i]]
    tracker.finish(run["info"], None, None)
    wandb_run = offline_run(out)
    [path] = (wandb_run / "files" / "media" / "table").glob("curves_*.table.json")
    table = json.loads(path.read_text())
    assert table["columns"] == ["trial", "status", "step", "value"]
    assert table["data"] == read_csv(out / CURVES_NAME)
    assert table["data"] == kept  # what log_trials was given, read back from curves.csv
    assert len(table["data"]) == sum(len(points) for points in curves.values())
    steps = {}
    for record in records(wandb_run):
        if record.WhichOneof("record_type") == "history":
            items = {
                "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                for i in record.history.item
            }
            steps.setdefault(items.get("trial"), {}).update(items)
    for trial in store.trials():
        assert steps[trial.id]["stopped"] == int(trial.status == "stopped")
        assert steps[trial.id]["steps"] == curves[trial.id][-1][0]
    # the line chart over the table: W&B keeps its spec in the run's config
    charts = {}
    for record in records(wandb_run):
        if record.WhichOneof("record_type") == "config":
            for item in record.config.update:
                if list(item.nested_key[:2]) == ["_wandb", "visualize"]:
                    charts[item.nested_key[2]] = json.loads(item.value_json)
    fields = charts["learning_curves"]["panel_config"]["fieldSettings"]
    assert fields == {"x": "step", "y": "value", "stroke": "trial"}
    summary_keys = {"num_stopped", "steps_used", "steps_full", "steps_saved"}
    assert {k: final_summary(wandb_run)[k] for k in summary_keys} == {
        k: run["info"][k] for k in summary_keys
    }


def test_wandb_takes_the_curves_given_to_log_trials_without_a_curves_csv(
    run, tmp_path, monkeypatch
):
    from test_tracking import offline_env, offline_run

    from dsbo.analysis.tracking import WandbTracker

    store, problem = run["store"], run["campaign"].problem
    offline_env(monkeypatch, tmp_path)
    tracker = WandbTracker(tmp_path, {})
    tracker.log_trials(store.trials(), None, problem, curves=store.curves())
    tracker.finish({"best_value": None}, None, None)
    [path] = (offline_run(tmp_path) / "files" / "media" / "table").glob("curves_*.table.json")
    assert json.loads(path.read_text())["data"] == read_csv(run["out"] / CURVES_NAME)


def test_read_csv_of_no_file_or_another_file_is_empty(tmp_path):
    assert read_csv(tmp_path / "missing.csv") == []
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert read_csv(tmp_path / "other.csv") == []
