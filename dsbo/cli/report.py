"""``python -m dsbo.report RUN_DIR``: the HTML report of a run directory (or a sweep's).

::

    python -m dsbo.report runs/branin20-seed0                 # writes runs/branin20-seed0/report.html
    python -m dsbo.report runs/lab --out lab.html --no_model  # no surrogate fit: no importance

A run directory of ``python -m dsbo.optimize`` or ``dsbo.blackbox`` holds ``config.yaml`` and
the store; the report rebuilds the campaign from them (nothing is proposed or evaluated) and
fits its surrogate for the importance and slice panels. A sweep directory (``sweep.json``)
gets the report over its runs (:mod:`dsbo.runtime.sweep_report`). In Python,
``dsbo.report(result)`` takes the result of :func:`dsbo.minimize`, a
:class:`~dsbo.Tuner`, a :class:`~dsbo.campaign.Campaign` or a run directory.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsbo.analysis.outputs import REPORT_NAME
from dsbo.cli.optimize import STORE_NAME, build_campaign, parse_config
from dsbo.errors import ConfigError, DsboError
from dsbo.storage import is_store_url


def campaign_from_run_dir(run_dir: Path) -> tuple[Any, dict[str, Any]]:
    """The campaign a run directory holds (its store opened, nothing run) and its config.

    Raises:
        ConfigError: the directory does not exist, holds no run, or has no store.
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
    cfg, _ = parse_config(["--config", str(config_file), "--run_dir", str(run_dir), "--progress", "false"])
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
        campaign, config = campaign_from_run_dir(run_dir)
        try:
            return write_report(campaign, path or run_dir / REPORT_NAME, config, model)
        finally:
            campaign.store.close()
    campaign = getattr(run, "campaign", run)
    if not hasattr(campaign, "store") or not hasattr(campaign, "policy"):
        raise ConfigError(
            f"dsbo.report takes a run directory, a Campaign, a Tuner or a search result, not {type(run).__name__}"
        )
    if path is None:
        store_path = getattr(campaign.store, "path", None)
        if store_path is None or str(store_path) == ":memory:" or is_store_url(str(store_path)):
            raise ConfigError("this campaign has no run directory: give dsbo.report a path= for the HTML file")
        path = Path(store_path).parent / REPORT_NAME
    return write_report(campaign, path, model=model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsbo.report", description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", help="the run (or sweep) directory")
    parser.add_argument("--out", default=None, help=f"the HTML file (default: RUN_DIR/{REPORT_NAME})")
    parser.add_argument(
        "--no_model", action="store_true", help="do not fit the surrogate (no importance or slice panels)"
    )
    args = parser.parse_args(argv)
    try:
        path = write_run_report(Path(args.run_dir), args.out, model=not args.no_model)
    except DsboError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0
