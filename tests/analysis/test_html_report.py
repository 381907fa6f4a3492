"""The HTML run report in a real browser (headless Chromium, tests/browser.py): small real runs
of each kind (single-objective sparsity-aware with failed trials, multi-objective MOBO-RS with a
preference box, contextual, cost-aware) render every figure without JavaScript errors and show
exactly the panels that apply; ``dsbo.report(result)`` of ``dsbo.minimize`` on a mixed space;
and the command line ``python -m dsbo.report RUN_DIR`` with its one-line errors.

The runs are experiments/report_gallery.py's builders at their smoke budgets, built once per
module; each report is loaded once and read with one script (:data:`PROBE`)."""

from __future__ import annotations

import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser import open_page

import dsbo
from dsbo.analysis.html_report import ERROR_BANNER
from dsbo.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
import report_gallery as gallery  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")

#: What the page shows, in one round trip: the panels in page order, the error banner, and per
#: panel its traces (as plotly.js holds them), axis titles as drawn, legend entries, shapes.
PROBE = """
const banner = document.getElementById(arguments[0]);
const panels = Array.from(document.querySelectorAll('div[id^="panel-"]')).map(d => d.id);
const info = {};
for (const id of panels) {
  const gd = document.getElementById(id);
  const layout = gd.layout || {};
  const first = (gd.data || [])[0] || {};
  // _fullData: the traces with their arrays decoded (gd.data keeps plotly.py's base64 arrays)
  info[id] = {
    traces: (gd._fullData || []).map(t => ({name: t.name, type: t.type, n: t.x ? t.x.length : null,
                                            y0: t.y && t.y.length ? t.y[0] : null})),
    xaxis_title: layout.xaxis && layout.xaxis.title ? layout.xaxis.title.text : null,
    drawn_xtitles: Array.from(gd.querySelectorAll('.xtitle')).map(e => e.textContent),
    legend: Array.from(gd.querySelectorAll('.legendtext')).map(e => e.textContent),
    shapes: (layout.shapes || []).map(s => [s.x0, s.x1, s.y0, s.y1]),
    drawn_shapes: gd.querySelectorAll('.shapelayer path').length,
    dimensions: first.dimensions ? first.dimensions.map(d => [d.label, Array.from(d.ticktext || [])]) : null,
    clipped_labels: Array.from(gd.querySelectorAll('.xtick text, .ytick text'))
      .filter(t => t.getBoundingClientRect().left < gd.getBoundingClientRect().left - 0.5).map(t => t.textContent),
  };
}
return {banner: banner ? banner.textContent : null,
        banner_display: banner ? getComputedStyle(banner).display : null, panels: panels, info: info};
"""

#: The panels each kind of run shows, in page order (the cost-aware run is the plain one: no
#: sparsity, Pareto or contexts panel).
EXPECTED_PANELS = {
    "sparse": ["history", "parallel", "importance", "slices", "sparsity"],
    "mobo": ["history", "pareto", "parallel", "importance"],
    "contextual": ["history", "parallel", "importance", "slices", "contexts"],
    "cost": ["history", "parallel", "importance", "slices"],
}
KINDS = list(EXPECTED_PANELS)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


class Reports:
    """Each kind of run built, reported and rendered once (on first use); the mixed-space run
    (``dsbo.minimize``) is built and reported, not rendered (the gallery renders it)."""

    def __init__(self, work: Path):
        self.work = work
        self.done: dict[str, dict[str, Any]] = {}

    def __getitem__(self, kind: str) -> dict[str, Any]:
        if kind not in self.done:
            run = gallery.BUILDERS[kind](self.work / "runs", smoke=True)
            html = gallery.write(kind, run, self.work / "html")
            campaign = getattr(run, "campaign", run)
            entry = {
                "run": run,
                "campaign": campaign,
                "html": html,
                "history": campaign.result().history,
            }
            if kind in KINDS:
                # a loaded machine: time to render
                entry["page"] = page = open_page(html, wait_s=30)
                entry["probe"] = page.evaluate(PROBE, ERROR_BANNER)
                entry["shot"] = page.screenshot(self.work / "shots" / f"{kind}.png")
            self.done[kind] = entry
        return self.done[kind]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Reports:
    built = Reports(tmp_path_factory.mktemp("report"))
    yield built
    for entry in built.done.values():
        entry["campaign"].store.close()


# ------------------------------------------------------------------------------ in the browser
@pytest.mark.parametrize("kind", KINDS)
def test_every_figure_renders_without_errors_and_only_the_panels_that_apply(reports, kind):
    entry = reports[kind]
    page, probe = entry["page"], entry["probe"]
    assert page.errors == []
    assert page.unrendered_plots == []
    assert page.plotly_rendered == page.plotly_divs > 0
    assert page.plotly_divs == len(EXPECTED_PANELS[kind])
    assert probe["banner"] == "" and probe["banner_display"] == "none"
    assert probe["panels"] == [f"panel-{name}" for name in EXPECTED_PANELS[kind]]
    assert "could not be" not in page.text  # the surrogate was fitted and read
    for panel, info in probe["info"].items():
        assert info["clipped_labels"] == [], panel  # tick labels inside their figure
    width, height = png_size(entry["shot"])
    assert width == 1300 and height == page.scroll_height > 1000


@pytest.mark.parametrize(
    "kind, title",
    [
        ("sparse", "trial"),
        ("mobo", "trial"),
        ("cost", "cumulative cost"),
        ("contextual", "cumulative cost"),
    ],
)
def test_history_axis_is_the_trial_or_the_cumulative_cost(reports, kind, title):
    history = reports[kind]["probe"]["info"]["panel-history"]
    assert history["xaxis_title"] == title
    assert history["drawn_xtitles"] == [title]  # as drawn, not only as data


def test_failed_trials_are_marked(reports):
    entry = reports["sparse"]
    failed = int((entry["history"]["status"] == "failed").sum())
    assert failed >= 1  # x0 > 0.75 raises
    info = entry["probe"]["info"]
    [marks] = [t for t in info["panel-history"]["traces"] if t["name"] == "failed"]
    assert marks["n"] == failed
    assert "failed" in info["panel-history"]["legend"]
    assert "failed" in info["panel-parallel"]["dimensions"][-1][1]  # the objective axis' tick
    assert f"{failed} failed" in entry["page"].text
    # a run without failures has no failed marks and no "failed" tick
    cost = reports["cost"]["probe"]["info"]
    assert "failed" not in [t["name"] for t in cost["panel-history"]["traces"]]
    assert "failed" not in cost["panel-parallel"]["dimensions"][-1][1]


def test_mobo_rs_draws_the_preference_region_and_the_pareto_front(reports):
    info = reports["mobo"]["probe"]["info"]
    pareto = info["panel-pareto"]
    (x0, x1), (y0, y1) = gallery.PREFERENCE_BOX
    assert pareto["shapes"] == [[x0, x1, y0, y1]]
    assert pareto["drawn_shapes"] == 1
    assert "preference region (weight prior)" in pareto["legend"]
    assert "observed Pareto front" in pareto["legend"]
    assert info["panel-history"]["traces"][0]["name"] == "hypervolume"


def test_slices_mark_the_best_trial(reports):
    """Every slice has its best-trial star on the curve (a float's best value is interpolated
    between grid points, where it rarely falls)."""
    for kind in ("sparse", "cost", "contextual"):
        traces = reports[kind]["probe"]["info"]["panel-slices"]["traces"]
        stars = [t for t in traces if t["name"] == "best trial"]
        assert stars and all(t["y0"] is not None for t in stars), (kind, stars)


def test_contexts_and_sparsity_panels(reports):
    contexts = reports["contextual"]["probe"]["info"]["panel-contexts"]["traces"]
    assert [t["type"] for t in contexts] == ["heatmap", "bar", "scatter"]
    # the configuration names the policy
    assert "contexts: sadcbo" in reports["contextual"]["page"].text
    sparsity = reports["sparse"]["probe"]["info"]["panel-sparsity"]["traces"]
    assert sparsity[0]["type"] == "bar" and sparsity[0]["n"] == len(reports["sparse"]["history"])


# ------------------------------------------------------------------------------ dsbo.report
def test_report_of_a_minimize_result_goes_next_to_its_store(reports, tmp_path):
    entry = reports["mixed"]  # the gallery wrote it with dsbo.report(result)
    store = Path(entry["campaign"].store.path)
    assert store.name == "trials.sqlite"
    assert (store.parent / "report.html").read_bytes() == entry["html"].read_bytes()
    assert int((entry["history"]["status"] == "failed").sum()) >= 1  # the function raised
    assert (
        dsbo.report(entry["run"], tmp_path / "elsewhere.html", model=False)
        == tmp_path / "elsewhere.html"
    )
    no_store = dsbo.minimize(
        gallery.mixed_objective,
        gallery.mixed_space(),
        budget=2,
        n_init=2,
        surrogate="gp",
        optimizer=gallery.FAST,
    )
    with pytest.raises(ConfigError, match="path="):
        dsbo.report(no_store)


def test_mixed_space_axes(reports):
    """Parallel coordinates of the mixed space: the log scale ticked in values, the inactive
    conditional parameter at its own tick, the choices by name, the failed trials' tick."""
    from dsbo.analysis.report_data import from_campaign
    from dsbo.analysis.report_figures import parallel_coordinates

    figure = parallel_coordinates(from_campaign(reports["mixed"]["campaign"], model=False))
    ticks = {d.label: list(d.ticktext) for d in figure.data[0].dimensions}
    assert ticks["lr"][0] == "0.0001" and ticks["lr"][-1] == "0.1"
    assert ticks["momentum"][0] == "inactive"
    assert ticks["optimizer"] == ["adam", "sgd", "rmsprop"]
    assert ticks["objective (lower is better)"][0] == "failed"  # the user's name and direction
    objective = next(d for d in figure.data[0].dimensions if d.label.startswith("objective"))
    # minimized: failed at the bottom, the best at the top
    assert objective.range[0] > objective.range[1]


# ------------------------------------------------------------------------------ the command line
class Commands:
    """``python -m dsbo.report`` subprocesses, started together; each one's outcome on demand."""

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs
        self.running = {
            name: subprocess.Popen(
                [sys.executable, "-m", "dsbo.report", str(d)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            for name, d in dirs.items()
        }
        self.done: dict[str, dict[str, Any]] = {}

    def __getitem__(self, name: str) -> dict[str, Any]:
        if name not in self.done:
            out, err = self.running[name].communicate(timeout=300)
            self.done[name] = {
                "dir": self.dirs[name],
                "code": self.running[name].returncode,
                "out": out,
                "err": err,
            }
        return self.done[name]

    def stop(self) -> None:
        for process in self.running.values():
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.fixture(scope="module")
def commands(tmp_path_factory) -> Commands:
    """A tiny plain run of ``python -m dsbo.optimize`` (GP on Branin, no BONSAI; run in-process
    through its ``main``), then ``python -m dsbo.report`` on it and on the bad inputs: a missing
    directory, one with no run, a run without its store (the four at once), and a store of
    another schema version (made here; read in-process by the test)."""
    from dsbo.cli import optimize

    tmp = tmp_path_factory.mktemp("cli")
    run_dir = tmp / "branin"
    argv = [
        "--problem.name",
        "branin",
        "--surrogate.name",
        "gp",
        "--budget",
        "6",
        "--n_init",
        "4",
        "--postprocess",
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
        "--run_dir",
        str(run_dir),
    ]
    assert optimize.main(argv) == 0
    # the optimize run wrote one: the command must write it again
    (run_dir / "report.html").unlink()
    (tmp / "empty").mkdir()
    for name in ("no_store", "other_schema"):
        shutil.copytree(run_dir, tmp / name, ignore=shutil.ignore_patterns("report.html"))
    for f in (tmp / "no_store").glob("trials.sqlite*"):
        f.unlink()
    db = sqlite3.connect(tmp / "other_schema" / "trials.sqlite")
    with db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.close()
    started = Commands({name: tmp / name for name in ("branin", "missing", "empty", "no_store")})
    started.dirs["other_schema"] = tmp / "other_schema"
    yield started
    started.stop()


def test_report_command_writes_the_run_dirs_report(commands):
    done = commands["branin"]
    report = done["dir"] / "report.html"
    assert done["code"] == 0, done["err"]
    assert done["out"].strip() == str(report)
    page = report.read_text()
    assert 'id="panel-history"' in page and 'id="panel-importance"' in page
    for absent in ("sparsity", "pareto", "contexts"):  # a plain run
        assert f'id="panel-{absent}"' not in page


@pytest.mark.parametrize(
    "name, message",
    [
        ("missing", "no such run directory"),
        ("empty", "no config.yaml"),
        ("no_store", "no store"),
        ("other_schema", "schema 99"),
    ],
)
def test_report_command_bad_inputs_give_one_line_errors(commands, name, message, capsys):
    if name in commands.running:
        done = commands[name]
    else:  # the program's main in-process: a subprocess would import torch (4+ s) before failing
        from dsbo.cli.report import main

        code = main([str(commands.dirs[name])])
        out, err = capsys.readouterr()
        done = {"dir": commands.dirs[name], "code": code, "out": out, "err": err}
    assert done["code"] == 2, done["err"]
    assert done["out"] == ""
    lines = done["err"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], done["err"]
    assert not (done["dir"] / "report.html").exists()


# ------------------------------------------------------------------------------ the subtitle
def _data(names: list[str], signs: list[float]) -> Any:
    import pandas as pd

    from dsbo.analysis.report_data import ReportData
    from dsbo.space import SearchSpace

    frame = pd.DataFrame({"trial": [0], "status": ["completed"], "x": [0.5]})
    space = SearchSpace({"x": dsbo.Float(0.0, 1.0)})
    return ReportData("run", space, frame, names, multi_objective=len(names) > 1, signs=signs)


@pytest.mark.parametrize(
    "names, signs, expected",
    [
        (["objective"], [1.0], "objective (higher is better)"),
        (["objective"], [-1.0], "objective (lower is better)"),
        (["loss"], [-1.0], "objective loss (lower is better)"),
        (["f1", "f2"], [-1.0, 1.0], "objectives f1 (lower is better), f2 (higher is better)"),
    ],
)
def test_the_subtitle_names_each_objective_once(names, signs, expected):
    from dsbo.analysis.html_report import objectives_text, render

    data = _data(names, signs)
    assert objectives_text(data) == expected
    drawn = {"panels": {}, "counts": {"completed": 1}, "best": "", "stopped": ""}
    page = render(data, drawn=drawn, model={})
    subtitle = page.split("<p class='meta'>")[1].split("</p>")[0]
    assert subtitle.endswith(f"; {expected}")
    assert "objective objective" not in page
