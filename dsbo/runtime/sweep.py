"""Running a W&B sweep locally: grid and random searches, and bayes sweeps on a dsbo campaign.

:func:`run_sweep` runs each configuration of a :class:`~dsbo.runtime.sweep_config.SweepConfig`
as a subprocess (:func:`~dsbo.runtime.sweep_run.run_one`: offline W&B, its own run directory,
``SIGKILL`` if the sweep dies), ``workers`` at once, and writes ``sweep.json``, ``sweep.csv``,
``best.txt`` and ``trace.png`` into the sweep directory (:mod:`dsbo.runtime.sweep_results`;
the command line adds ``report.html``, :mod:`dsbo.runtime.sweep_report`). ``method: bayes``
goes to :func:`~dsbo.runtime.sweep_bayes.run_bayes`: the sweep's parameters become a
:class:`dsbo.space.SearchSpace` (:func:`dsbo.space.wandb_syntax.search_space`: log-uniform
values searched in their log, categoricals one-hot), the metric the objective (negated for
``goal: minimize``), and a :class:`~dsbo.campaign.Campaign` over ``<sweep dir>/trials.sqlite``
proposes each run, whose parameters are the space's decoded values (fixed ones included, in
the sweep file's order), so a killed sweep resumes where it stopped. The command line is
:mod:`dsbo.cli.sweep`.

With ``early_terminate: {type: hyperband, ...}`` each run is watched while it runs
(:class:`~dsbo.runtime.hyperband.HyperbandMonitor`: its metric history is read every ``poll``
seconds, :class:`~dsbo.runtime.run_history.MetricHistory`) and stopped by W&B's hyperband rule;
a stopped run is recorded as ``stopped`` with its last logged value as its metric, which is its
result in grid/random sweeps; in bayes sweeps it is a ``stopped`` trial of the campaign, whose
surrogate learns from every run's curve as BOHB does. A run whose history could not be read
says so in its ``error`` (and in ``hyperband``).

What lives where: one run and its record in :mod:`dsbo.runtime.sweep_run`, the files and
progress bar in :mod:`dsbo.runtime.sweep_results`, bayes sweeps in
:mod:`dsbo.runtime.sweep_bayes`; this module runs grid and random sweeps and re-exports the
names users import from it.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from dsbo.errors import ConfigError
from dsbo.runtime.sweep_bayes import (
    ENDED,
    bayes_campaign,
    bayes_problem,
    objective_name,
    record_curve,
    run_bayes,
)
from dsbo.runtime.sweep_config import SweepConfig, expand_runs
from dsbo.runtime.sweep_results import (
    best_line,
    best_run,
    plot_sweep_trace,
    run_line,
    sweep_progress,
    write_results,
)
from dsbo.runtime.sweep_run import RunRecord, cancel_runs, hyperband_monitor, run_one

__all__ = [
    "ENDED",
    "RunRecord",
    "bayes_campaign",
    "bayes_problem",
    "best_line",
    "best_run",
    "hyperband_monitor",
    "objective_name",
    "plot_sweep_trace",
    "record_curve",
    "run_bayes",
    "run_one",
    "run_sweep",
    "write_results",
]


def run_sweep(
    sweep: SweepConfig,
    sweep_dir: Path,
    count: int | None = None,
    seed: int = 0,
    timeout: float | None = None,
    console: Console | None = None,
    progress: bool = True,
    source: str = "",
    workers: int = 1,
    poll: float = 1.0,
) -> dict[str, Any]:
    """Run every configuration of ``sweep`` (``workers`` at once); returns what ``sweep.json``
    holds.

    ``method: bayes`` goes to :func:`~dsbo.runtime.sweep_bayes.run_bayes`; grid and random
    sweeps expand their configurations first (:func:`~dsbo.runtime.sweep_config.expand_runs`).
    ``poll``: seconds between two reads of a running run's metric history
    (``early_terminate`` only). Results are written after every run, in run order.
    """
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if sweep.method == "bayes":
        return run_bayes(
            sweep, sweep_dir, count, seed, timeout, console, progress, source, workers, poll
        )
    console = console or Console(stderr=True)
    monitor = hyperband_monitor(sweep, poll)
    configs = expand_runs(sweep, count, seed)
    sweep_id = uuid.uuid4().hex[:8]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {
        "sweep_id": sweep_id,
        "name": sweep.name,
        "file": source,
        "method": sweep.method,
        "metric": sweep.metric,
        "seed": seed,
        "num_runs": len(configs),
        "sweep_dir": str(sweep_dir),
    }
    (sweep_dir / "sweep.yaml").write_text(yaml.safe_dump(sweep.raw, sort_keys=False))
    records = [RunRecord(run=f"run-{i:03d}", params=p) for i, p in enumerate(configs)]
    metric_name = sweep.metric["name"] if sweep.metric else "metric"
    bar = sweep_progress(console, progress)
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsbo-sweep-run") as pool:
        task = bar.add_task(sweep.name or "sweep", total=len(records), last="", best="-")
        futures = [
            pool.submit(run_one, sweep, r, sweep_dir / r.run, sweep_id, timeout, monitor)
            for r in records
        ]
        try:
            for future in futures:  # reported in order (with one worker, as each run ends)
                record = future.result()
                best = best_run(sweep, records)
                last = run_line(record, metric_name)
                shown = "-" if best is None else f"{best.metric:.4g} ({best.run})"
                bar.update(task, advance=1, last=last, best=shown)
                if not progress:
                    console.print(last, markup=False)
                write_results(sweep_dir, info, records, best_line(sweep, best))
        except BaseException:
            cancel_runs(pool, monitor)
            raise
    best = best_run(sweep, records)
    info["best"] = None if best is None else asdict(best)
    line = best_line(sweep, best)
    write_results(sweep_dir, info, records, line)
    plot_sweep_trace(sweep, records, sweep_dir / "trace.png")
    info["runs"] = [asdict(r) for r in records]
    info["best_line"] = line
    return info
