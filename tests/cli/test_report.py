"""`python -m dsbo.report RUN_DIR` from the data kept with the run (``report_data.json``) and
the campaign's last fit: the same page as the campaign's path, no torch without the model,
and the campaign's path (refitting as before) whenever the kept data or the fit state do not
apply. The browser checks of the page are in tests/analysis/test_html_report.py."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dsbo.analysis import report_cache
from dsbo.analysis.importance import parameter_importance
from dsbo.analysis.report_data import fit_campaign_model
from dsbo.cli import report
from dsbo.storage import open_store

pytestmark = pytest.mark.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[2]
SURROGATES = ("map-saas", "gp")


def _run(run_dir: Path, surrogate: str) -> Path:
    from dsbo.cli import optimize

    argv = [
        "--problem.name",
        "branin",
        "--surrogate.name",
        surrogate,
        "--budget",
        "7",
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
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A tiny run per surrogate that keeps fit states (3 BO steps after 4 Sobol points)."""
    tmp = tmp_path_factory.mktemp("report")
    return {s: _run(tmp / s, s) for s in SURROGATES}


def _copy(run_dir: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run_dir, to, ignore=shutil.ignore_patterns("report.html", "*.lock"))
    return to


def _page(path: Path) -> str:
    """The page without the time it was written."""
    return re.sub(r"written \d{4}-\d\d-\d\d \d\d:\d\d", "written <time>", path.read_text())


def test_the_run_keeps_the_reports_data(runs):
    cache = json.loads((runs["map-saas"] / report_cache.CACHE_NAME).read_text())
    assert cache["format"] == report_cache.FORMAT and cache["data"]["title"] == "branin"
    assert cache["model"]["surrogate"]["name"] == "map-saas" and len(cache["best_x"]) == 2
    assert report.STORE_NAME == __import__("dsbo.cli.optimize", fromlist=["STORE_NAME"]).STORE_NAME


def _drop_panels(run_dir: Path) -> None:
    cache_file = run_dir / report_cache.CACHE_NAME
    cache = json.loads(cache_file.read_text())
    assert cache.pop("panels")["importance"]
    cache_file.write_text(json.dumps(cache))


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_kept_data_and_last_fit_give_the_campaigns_page(runs, surrogate, tmp_path):
    """The page from what the run kept (data and model panels), from the kept data with the
    surrogate fitted from the campaign's last fit, and from the campaign (its path, fitted
    the same way) are one page; that fit is a warm one."""
    run_dir = _copy(runs[surrogate], tmp_path / "run")
    config_file = run_dir / "config.yaml"
    assert (
        report.report_from_cache(run_dir, config_file, tmp_path / "kept.html")
        == tmp_path / "kept.html"
    )
    _drop_panels(run_dir)
    assert (
        report.report_from_cache(run_dir, config_file, tmp_path / "fitted.html")
        == tmp_path / "fitted.html"
    )
    assert json.loads((run_dir / report_cache.CACHE_NAME).read_text())["panels"]  # kept again
    assert (
        report.report_from_campaign(run_dir, tmp_path / "campaign.html")
        == tmp_path / "campaign.html"
    )
    kept = _page(tmp_path / "kept.html")
    assert kept == _page(tmp_path / "fitted.html") == _page(tmp_path / "campaign.html")
    assert 'id="panel-importance"' in kept and 'id="panel-slices"' in kept
    # without the model too
    assert report.report_from_cache(run_dir, config_file, tmp_path / "cached-nm.html", model=False)
    report.report_from_campaign(run_dir, tmp_path / "campaign-nm.html", model=False)
    assert _page(tmp_path / "cached-nm.html") == _page(tmp_path / "campaign-nm.html")
    # the fit: one warm fit from the kept state
    with open_store(run_dir / "trials.sqlite") as store:
        cached, config = report_cache.load(
            run_dir,
            report_cache.trials_digest(store),
            report_cache.config_key(config_file, run_dir),
        )
        assert (
            config is not None and config["run_dir"] == str(run_dir) and config["progress"] is False
        )
        assert cached.panels["model_fit"] == ["warm"]
        model = fit_campaign_model(cached.campaign(store), from_last_fit=True)
    assert [s.start for s in model.fit_states] == ["warm"]
    assert (
        report_cache.FIT_META_KEY
        == __import__("dsbo.surrogates.warm_start", fromlist=["META_KEY"]).META_KEY
    )


@pytest.mark.parametrize("surrogate", SURROGATES)
def test_without_a_usable_fit_state_the_report_refits_as_before(runs, surrogate, tmp_path):
    run_dir = _copy(runs[surrogate], tmp_path / "run")
    db = sqlite3.connect(run_dir / "trials.sqlite")
    with db:
        db.execute("DELETE FROM meta WHERE key = 'surrogate_fit'")
    db.close()
    campaign, _ = report.campaign_from_run_dir(run_dir)
    try:
        refit = fit_campaign_model(
            campaign
        )  # the campaign's own next fit, as the report made it before
        from_last = fit_campaign_model(campaign, from_last_fit=True)
        names = list(campaign.problem.outcomes.objective_names)
        assert [s.start for s in from_last.fit_states] == ["no previous fit"]
        assert parameter_importance(
            from_last, campaign.problem.space, names
        ) == parameter_importance(refit, campaign.problem.space, names)
        X = torch.rand(5, 2, dtype=torch.double) * (
            campaign.problem.bounds[1] - campaign.problem.bounds[0]
        )
        assert torch.equal(from_last.posterior(X).mean, refit.posterior(X).mean)
    finally:
        campaign.store.close()
    assert (
        report.main([str(run_dir), "--out", str(tmp_path / "r.html")]) == 0
    )  # the kept data, a full fit
    assert 'id="panel-importance"' in (tmp_path / "r.html").read_text()


def test_stale_data_are_gathered_again(runs, tmp_path):
    run_dir = _copy(runs["gp"], tmp_path / "run")
    config_file = run_dir / "config.yaml"
    config_file.write_text(config_file.read_text() + "# edited\n")
    assert report.report_from_cache(run_dir, config_file, tmp_path / "a.html") is None
    assert (
        report.write_run_report(run_dir, tmp_path / "b.html") == tmp_path / "b.html"
    )  # the campaign's path
    assert (
        report.report_from_cache(run_dir, config_file, tmp_path / "c.html") == tmp_path / "c.html"
    )  # kept again
    with open_store(run_dir / "trials.sqlite") as store:  # one more trial: stale again
        store.add_trials(torch.tensor([[0.5, 0.5]], dtype=torch.double), "manual")
    assert report.report_from_cache(run_dir, config_file, tmp_path / "d.html") is None
    assert report.write_run_report(run_dir, tmp_path / "e.html", model=False) == tmp_path / "e.html"
    assert "pending" in (tmp_path / "e.html").read_text()


@pytest.mark.parametrize("mode", ["--no_model", "model"])
def test_a_report_from_what_the_run_kept_imports_no_torch_nor_pandas(runs, mode, tmp_path):
    run_dir = _copy(runs["map-saas"], tmp_path / "run")
    flags = [mode] if mode != "model" else []
    assert (
        report.main([str(run_dir), *flags, "--out", str(tmp_path / "first.html")]) == 0
    )  # keeps the config
    code = (
        "import sys, json\nfrom dsbo.cli.report import main\n"
        f"assert main([{str(run_dir)!r}, *{flags!r}, '--out', {str(tmp_path / 'second.html')!r}]) == 0\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} | {m for m in sys.modules if 'graph_obj' in m})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    heavy = {
        "torch",
        "botorch",
        "gpytorch",
        "jax",
        "scipy",
        "matplotlib",
        "wandb",
        "jsonargparse",
        "rich",
        "pandas",
        "numpy",
        "plotly.graph_objs",
    }
    assert not loaded & heavy, sorted(
        loaded & heavy
    )  # the page from its kept parts: plotly.js only
    assert _page(tmp_path / "second.html") == _page(tmp_path / "first.html")
    assert ('id="panel-importance"' in _page(tmp_path / "second.html")) == (mode == "model")


def test_kept_panels_follow_the_fit_state(runs, tmp_path):
    """Model panels are kept per fit state: a store whose state changed fits again."""
    run_dir = _copy(runs["gp"], tmp_path / "run")
    with open_store(run_dir / "trials.sqlite") as store:
        before = report_cache.model_key(store)
        state = store.get_meta(report_cache.FIT_META_KEY)
        state[0]["fits_since_restart"] += 1
        store.set_meta(report_cache.FIT_META_KEY, state)
        cached, _ = report_cache.load(run_dir, report_cache.trials_digest(store))
        assert report_cache.model_key(store) != before and not cached.fill_panels(
            report_cache.model_key(store)
        )
    assert report.main([str(run_dir), "--out", str(tmp_path / "r.html")]) == 0
    with open_store(run_dir / "trials.sqlite") as store:
        cached, _ = report_cache.load(run_dir, report_cache.trials_digest(store))
        assert cached.fill_panels(report_cache.model_key(store))
