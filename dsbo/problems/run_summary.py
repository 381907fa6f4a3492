"""What a training run leaves in its directory: the metric it reports and its log.

A ``python -m dsbo.train`` run writes ``summary.json`` into its run directory; a program run
by a sweep may instead leave an offline W&B summary. :func:`read_metric` reads a metric from
either, :func:`log_tail` the end of a run's log for an error message. The training-run problem
(:mod:`dsbo.problems.train_run`) and the sweep runner (:mod:`dsbo.runtime.sweep`) read runs
through them; neither needs torch.
"""

from __future__ import annotations

import json
from pathlib import Path

from dsbo.space.wandb_syntax import is_number

RUN_SUMMARY = "summary.json"
WANDB_SUMMARY_GLOB = "wandb/*run-*/files/wandb-summary.json"


def read_metric(run_dir: Path, name: str) -> float | None:
    """``name`` from the run's ``summary.json`` (dsbo.train) or its offline W&B summary."""
    candidates = [
        run_dir / RUN_SUMMARY,
        *sorted(run_dir.glob(WANDB_SUMMARY_GLOB), key=lambda p: p.stat().st_mtime, reverse=True),
    ]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            summary = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        value = summary.get(name) if isinstance(summary, dict) else None
        if is_number(value):
            return float(value)
    return None


def log_tail(path: Path, lines: int = 3) -> str:
    """The last ``lines`` lines of a run's log joined by `` | `` (for an error message)."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
