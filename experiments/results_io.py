"""An experiment's raw runs and its summary, each kept once (issue 59).

``runs.jsonl`` holds the raw runs, one JSON object a line, appended as each run finishes;
``results.json`` holds what the report computed from them and never the runs again: it names
the runs file and how many of its lines the summary covers. A reader that needs the runs reads
``runs.jsonl`` (:func:`read_runs`) and keeps the lines the experiment's report keeps (the same
budget, smoke flag and problems).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RUNS_FILE = "runs.jsonl"
RESULTS_FILE = "results.json"


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The runs recorded in ``path`` (a ``runs.jsonl``, or the folder holding one), in file
    order; blank lines and a last line cut by a crash are skipped; no file: no runs."""
    path = Path(path)
    if path.is_dir():
        path = path / RUNS_FILE
    if not path.exists():
        return []
    runs = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            runs.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a crash
            continue
    return runs


def write_results(
    out: Path, summary: dict[str, Any], runs: Sequence[dict[str, Any]], indent: int = 1
) -> dict[str, Any]:
    """Write ``out/results.json``: ``summary`` (its other keys as they are), the name of the runs
    file and the number of runs the summary covers; returns what was written. The runs
    themselves stay in ``out/runs.jsonl`` only."""
    if "runs" in summary:
        raise ValueError("results.json does not repeat the runs: they are in runs.jsonl")
    payload = {**summary, "runs_file": RUNS_FILE, "num_runs": len(runs)}
    (Path(out) / RESULTS_FILE).write_text(json.dumps(payload, indent=indent, default=str))
    return payload
