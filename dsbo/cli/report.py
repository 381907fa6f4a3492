"""``python -m dsbo.report RUN_DIR``: the HTML report of a run directory (or a sweep's).

::

    python -m dsbo.report runs/branin20-seed0                 # writes runs/branin20-seed0/report.html
    python -m dsbo.report runs/lab --out lab.html --no_model  # no surrogate fit: no importance

A run directory of ``python -m dsbo.optimize`` or ``dsbo.blackbox`` holds ``config.yaml`` and
the store. The report's data (everything but the model panels) are kept with the run in
``report_data.json`` (:mod:`dsbo.analysis.report_cache`) while its trials and config stay as
they were; otherwise the report rebuilds the campaign from the config and the store (nothing
is proposed or evaluated) and gathers them afresh. The importance and slice panels are
kept too, per fit state of the campaign, and the page's parts drawn from all of them;
otherwise the report fits the run's surrogate,
starting from the campaign's last fit kept in the store
(:func:`dsbo.analysis.report_data.fit_campaign_model`). So a report imports torch and
BoTorch only to fit the model, and builds the campaign only when the data must be gathered
again or the surrogate cannot be fitted without it. A sweep directory (``sweep.json``) gets
the report over its runs (:mod:`dsbo.runtime.sweep_report`). In Python,
``dsbo.report(result)`` takes the result of :func:`dsbo.minimize`, a
:class:`~dsbo.Tuner`, a :class:`~dsbo.campaign.Campaign` or a run directory.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsbo.analysis.outputs import REPORT_NAME
from dsbo.errors import ConfigError, DsboError
from dsbo.storage import is_store_url

#: The store's file name in a run directory (:data:`dsbo.cli.optimize.STORE_NAME`; not
#: imported from there, which loads the option parser).
STORE_NAME = "trials.sqlite"


def config_file_of(run_dir: Path) -> Path:
    """The run directory's ``config.yaml``.

    Raises:
        ConfigError: the directory does not exist or holds no run.
    """
    if not run_dir.exists():
        raise ConfigError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir} is a file, not a run directory")
    config_file = run_dir / "config.yaml"
    if not config_file.is_file():
        raise ConfigError(
            f"{run_dir} holds no dsbo run (no config.yaml); give the directory python -m dsbo.optimize, "
            "dsbo.blackbox or dsbo.sweep wrote"
        )
    return config_file


def _parse(config_file: Path, run_dir: Path) -> Any:
    from dsbo.cli.optimize import parse_config

    cfg, _ = parse_config(
        ["--config", str(config_file), "--run_dir", str(run_dir), "--progress", "false"]
    )
    return cfg


def campaign_from_run_dir(run_dir: Path) -> tuple[Any, dict[str, Any]]:
    """The campaign a run directory holds (its store opened, nothing run) and its config.

    Raises:
        ConfigError: the directory does not exist, holds no run, or has no store.
    """
    from dsbo.cli.optimize import build_campaign

    cfg = _parse(config_file_of(run_dir), run_dir)
    if not is_store_url(cfg.store):
        store = Path(cfg.store) if cfg.store is not None else run_dir / STORE_NAME
        if not store.is_file():
            raise ConfigError(f"{run_dir} has no store ({store.name}): nothing ran there yet")
    campaign, _, _ = build_campaign(cfg, dry_run=False, ask_tell=True)
    return campaign, cfg.to_dict()


def write_run_report(run: Any, path: str | Path | None = None, model: bool = True) -> Path:
    """Write the report of ``run`` (a run or sweep directory, a campaign, a tuner or the
    result of :func:`dsbo.minimize`) to ``path`` (default: ``report.html`` in the run
    directory) and return the path."""
    from dsbo.analysis.html_report import write_report

    if isinstance(run, str | Path):
        run_dir = Path(run)
        if (run_dir / "sweep.json").is_file():
            from dsbo.runtime.sweep_report import write_sweep_report

            return write_sweep_report(run_dir, path or run_dir / REPORT_NAME, model)
        config_file = config_file_of(run_dir)
        out = Path(path or run_dir / REPORT_NAME)
        return report_from_cache(run_dir, config_file, out, model) or report_from_campaign(
            run_dir, out, model
        )
    campaign = getattr(run, "campaign", run)
    if not hasattr(campaign, "store") or not hasattr(campaign, "policy"):
        raise ConfigError(
            f"dsbo.report takes a run directory, a Campaign, a Tuner or a search result, not {type(run).__name__}"
        )
    if path is None:
        store_path = getattr(campaign.store, "path", None)
        if store_path is None or str(store_path) == ":memory:" or is_store_url(str(store_path)):
            raise ConfigError(
                "this campaign has no run directory: give dsbo.report a path= for the HTML file"
            )
        path = Path(store_path).parent / REPORT_NAME
    return write_report(campaign, path, model=model)


def _store_target(run_dir: Path, config_file: Path) -> str | Path | None:
    """The store ``config.yaml`` names (``store``, default the run directory's file); ``None``
    when the file cannot be read that simply (the campaign's path says what is wrong)."""
    import yaml

    try:
        raw = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    store = raw.get("store") if isinstance(raw, dict) else None
    if is_store_url(store):
        return store
    if store is not None and not isinstance(store, str):
        return None
    target = Path(store) if store is not None else run_dir / STORE_NAME
    return target if target.is_file() else None


def report_from_cache(
    run_dir: Path, config_file: Path, out: Path, model: bool = True
) -> Path | None:
    """Write the report from the data kept in ``run_dir`` (:mod:`dsbo.analysis.report_cache`)
    and return its path; ``None`` when they are missing or stale, or the surrogate cannot be
    fitted without the campaign (the caller then builds it: :func:`report_from_campaign`).
    What this report computes (the configuration, the model panels, the drawn parts) is kept
    for the next one."""
    from dsbo.analysis import report_cache
    from dsbo.analysis.html_report import drawn_parts, panel_html, write_page
    from dsbo.analysis.report_data import fill_model_panels, fit_campaign_model
    from dsbo.storage import open_store

    target = _store_target(run_dir, config_file)
    if target is None:
        return None
    key = report_cache.config_key(config_file, run_dir)
    store = open_store(
        target
    )  # a store another process holds: StoreLockedError, as the campaign's path
    try:
        digest = report_cache.trials_digest(store)
        cached, config = report_cache.load(run_dir, digest, key)
        if cached is None:
            return None
        new: dict[str, Any] = {}
        if config is None:
            config = _parse(config_file, run_dir).to_dict()
            new["config"] = (key, config) if key else None
        data = cached.data
        data.config = config
        model_html: dict[str, str | None] = {}
        if model:
            model_key = report_cache.model_key(store)
            kept_panels = cached.fill_panels(model_key)
            if kept_panels:
                model_html = cached.model_html or {}
            else:
                campaign = cached.campaign(store)
                if campaign is None:
                    return None
                _set_threads(config.get("threads"))
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        fitted = fit_campaign_model(campaign, from_last_fit=True)
                except Exception:  # noqa: BLE001 - the campaign's path fits it again, or says why not
                    return None
                if fill_model_panels(data, lambda: fitted, cached.best_x):
                    new["panels"] = (model_key, data)
            if not model_html:
                model_html = panel_html(data)
                if kept_panels or "panels" in new:  # drawn from the panels kept under model_key
                    new["model_html"] = model_html
        drawn = cached.drawn
        if drawn is None:
            cached.decode_frame()
            drawn = new["drawn"] = drawn_parts(data)
        if new:
            report_cache.save(run_dir, digest, **new)
        return write_page(data, out, drawn, model_html)
    finally:
        store.close()


def _set_threads(threads: Any) -> None:
    """torch's threads as the run's config sets them (``build_campaign`` does the same)."""
    if isinstance(threads, int) and not isinstance(threads, bool) and threads > 0:
        import torch

        torch.set_num_threads(threads)


def report_from_campaign(run_dir: Path, out: Path, model: bool = True) -> Path:
    """Build the run's campaign, gather the report's data, keep them in ``run_dir`` for the
    next report, and write the report to ``out``."""
    from dsbo.analysis import report_cache
    from dsbo.analysis.html_report import drawn_parts, panel_html, write_page
    from dsbo.analysis.report_data import add_model_panels, from_campaign

    campaign, config = campaign_from_run_dir(run_dir)
    try:
        digest = report_cache.trials_digest(campaign.store)
        result = campaign.result()
        data = from_campaign(campaign, config, model=False, result=result)
        key = report_cache.config_key(run_dir / "config.yaml", run_dir)
        drawn, model_html = drawn_parts(data), {}
        kept: dict[str, Any] = {"drawn": drawn, "config": (key, config) if key else None}
        if model:
            if add_model_panels(data, campaign, result.best_x):
                kept["panels"] = (report_cache.model_key(campaign.store), data)
            model_html = kept["model_html"] = panel_html(data)
        report_cache.save(
            run_dir,
            digest,
            data,
            campaign.seed,
            result.best_x,
            report_cache.model_inputs(campaign),
            **kept,
        )
        return write_page(data, out, drawn, model_html)
    finally:
        campaign.store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dsbo.report", description=__doc__.split("\n")[0]
    )
    parser.add_argument("run_dir", help="the run (or sweep) directory")
    parser.add_argument(
        "--out", default=None, help=f"the HTML file (default: RUN_DIR/{REPORT_NAME})"
    )
    parser.add_argument(
        "--no_model",
        action="store_true",
        help="do not fit the surrogate (no importance or slice panels)",
    )
    args = parser.parse_args(argv)
    try:
        path = write_run_report(Path(args.run_dir), args.out, model=not args.no_model)
    except DsboError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0
