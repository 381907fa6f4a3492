"""What a sweep writes and shows: its best run, ``sweep.json``/``sweep.csv``, ``best.txt``,
``trace.png`` and the progress bar.

Grid, random (:mod:`dsbo.runtime.sweep`) and bayes sweeps (:mod:`dsbo.runtime.sweep_bayes`)
write the same files after every run, so that an interrupted sweep leaves its results so far:
``sweep.json`` holds everything (the sweep's information and one
:class:`~dsbo.runtime.sweep_run.RunRecord` per run), ``sweep.csv`` one row per run,
``best.txt`` the line :func:`best_line` prints. The best run is W&B's: the one with the best
finite metric by ``metric.goal`` (:func:`best_run`).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dsbo.runtime.sweep_config import SweepConfig
from dsbo.runtime.sweep_run import RunRecord


def best_run(sweep: SweepConfig, records: list[RunRecord]) -> RunRecord | None:
    """The finished run with the best metric (by ``metric.goal``), if any."""
    scored = [r for r in records if r.metric is not None and math.isfinite(r.metric)]
    if not scored:
        return None
    pick = max if sweep.goal == "maximize" else min
    return pick(scored, key=lambda r: r.metric)


def best_line(sweep: SweepConfig, best: RunRecord | None) -> str:
    """The line ``best.txt`` holds: the best run, its metric, parameters and directory."""
    if sweep.metric is None:
        return "best: no metric in the sweep file"
    if best is None:
        return f"best: no run reported {sweep.metric['name']}"
    params = " ".join(f"{k}={v}" for k, v in best.params.items())
    metric = f"{sweep.metric['name']}={best.metric:.6g} ({sweep.goal})"
    return f"best: {best.run} {metric} {params} [{best.run_dir}]"


def run_line(record: RunRecord, metric_name: str) -> str:
    """A run as the progress bar (or, without one, the console) shows it when it ends."""
    value = "" if record.metric is None else f" {metric_name}={record.metric:.4g}"
    return f"{record.run} {record.status}{value}"


def write_results(
    sweep_dir: Path, info: dict[str, Any], records: list[RunRecord], line: str
) -> None:
    """``sweep.json`` (everything), ``sweep.csv`` (one row per run) and ``best.txt``."""
    payload = {**info, "runs": [asdict(r) for r in records]}
    (sweep_dir / "sweep.json").write_text(json.dumps(payload, indent=2))
    names = list(dict.fromkeys(k for r in records for k in r.params))
    with (sweep_dir / "sweep.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", "status", "metric", "seconds", *names, "error"])
        for r in records:
            metric = "" if r.metric is None else r.metric
            params = [r.params.get(n, "") for n in names]
            writer.writerow([r.run, r.status, metric, r.seconds, *params, r.error or ""])
    (sweep_dir / "best.txt").write_text(line + "\n")


def plot_sweep_trace(sweep: SweepConfig, records: list[RunRecord], path: Path) -> None:
    """``trace.png``: each run's metric and the best so far, in run order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if sweep.metric is None:
        return
    scored = [
        (i + 1, r.metric)
        for i, r in enumerate(records)
        if r.metric is not None and math.isfinite(r.metric)
    ]
    if not scored:
        return
    pick = max if sweep.goal == "maximize" else min
    best, trace = None, []
    for _, value in scored:
        best = value if best is None else pick(best, value)
        trace.append(best)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter([i for i, _ in scored], [v for _, v in scored], s=14, c="C0", label="run")
    ax.plot([i for i, _ in scored], trace, color="C3", drawstyle="steps-post", label="best so far")
    ax.set_xlabel("run")
    ax.set_ylabel(sweep.metric["name"])
    ax.set_title(f"{sweep.name or 'sweep'} ({sweep.method}, {sweep.goal})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def sweep_progress(console: Console, progress: bool) -> Progress:
    """The sweep's progress bar: runs ended, the last run's line, the best metric so far."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}", markup=False),
        TextColumn("best {task.fields[best]}", markup=False),
        TimeElapsedColumn(),
        console=console,
        disable=not progress,
    )
