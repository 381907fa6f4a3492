"""An experiment's raw runs and its summary, each kept once (issue 59).

``runs.jsonl`` holds the raw runs, one JSON object a line, appended as each run finishes;
``results.json`` holds what the report computed from them and never the runs again: it names
the runs file and how many of its lines the summary covers. A reader that needs the runs reads
``runs.jsonl`` (:func:`read_runs`) and keeps the lines the experiment's report keeps (the same
budget, smoke flag and problems).

A run that two reports share is recorded once: the other ``runs.jsonl`` holds, in its place, a
reference line ``{"run_in": "../runs.jsonl", "where": {...}, "with": {...}}``: the one run of that
file (a path relative to the referring file's folder) whose fields equal ``where``, with the
fields of ``with`` (optional) replacing its own, as when a report shows a run under another arm
name. :func:`read_runs` returns the run itself, in the place of the reference line.

A finished experiment's ``runs.jsonl`` may be archived as ``runs.jsonl.gz``
(:func:`archive_runs`): :func:`read_runs` reads the archive's lines, then any appended to a new
``runs.jsonl`` since, and a reference to ``runs.jsonl`` reads through the archive.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RUNS_FILE = "runs.jsonl"
#: A finished experiment's runs, compressed (:func:`archive_runs`).
ARCHIVE_SUFFIX = ".gz"
RESULTS_FILE = "results.json"
#: The field that makes a line of ``runs.jsonl`` a reference to a run recorded in another file.
REFERENCE = "run_in"


def read_runs(path: Path) -> list[dict[str, Any]]:
    """The runs recorded in ``path`` (a ``runs.jsonl``, or the folder holding one), in file
    order, each reference line replaced by the run it names; blank lines and a last line cut by a
    crash are skipped; no file: no runs. A reference that names no run, or several, raises
    ``ValueError``."""
    return _read_runs(Path(path), {}, ())


def _read_runs(
    path: Path, cache: dict[Path, list[dict[str, Any]]], referring: tuple[Path, ...]
) -> list[dict[str, Any]]:
    if path.is_dir():
        path = path / RUNS_FILE
    path = path.resolve()
    if path in cache:
        return cache[path]
    if path in referring:
        raise ValueError(f"{path}: its runs refer back to it through {referring[-1]}")
    runs = []
    for line in run_lines(path):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a crash
            continue
        if REFERENCE in run:
            run = _resolve(path, run, cache, (*referring, path))
        runs.append(run)
    cache[path] = runs
    return runs


def archived(path: Path) -> Path:
    """The compressed archive of a ``runs.jsonl``: ``runs.jsonl.gz`` beside it."""
    return path.with_name(path.name + ARCHIVE_SUFFIX)


def run_lines(path: Path) -> list[str]:
    """The lines of a ``runs.jsonl`` (or the folder holding one) as recorded: those of its
    archive first (:func:`archive_runs`), then those appended since; none when neither exists."""
    path = Path(path)
    if path.is_dir():
        path = path / RUNS_FILE
    lines = []
    if archived(path).exists():
        lines += gzip.decompress(archived(path).read_bytes()).decode().splitlines()
    if path.exists():
        lines += path.read_text().splitlines()
    return lines


def archive_runs(folder: Path) -> Path:
    """Move the lines of ``folder/runs.jsonl`` into ``folder/runs.jsonl.gz`` (after any lines
    archived before; gzip without a timestamp, so the same lines give the same bytes) and
    remove the plain file: an experiment that is done keeps its raw runs at a fraction of the
    bytes (JSON runs compress 5-10x), and :func:`read_runs` and references read through it."""
    path = Path(folder) / RUNS_FILE
    lines = run_lines(path)
    data = ("\n".join(lines) + "\n").encode() if lines else b""
    archived(path).write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    path.unlink(missing_ok=True)
    return archived(path)


def _resolve(
    path: Path,
    reference: dict[str, Any],
    cache: dict[Path, list[dict[str, Any]]],
    referring: tuple[Path, ...],
) -> dict[str, Any]:
    """The run a reference line of ``path`` names, with its ``with`` fields."""
    target = path.parent / reference[REFERENCE]
    where = reference["where"]
    found = [
        run
        for run in _read_runs(target, cache, referring)
        if all(k in run and run[k] == v for k, v in where.items())
    ]
    if len(found) != 1:
        raise ValueError(
            f"{path}: the reference to {target} where {where} names {len(found)} runs, not one"
        )
    return {**found[0], **reference.get("with", {})}


def reference_to(
    target: Path, referring: Path, where: dict[str, Any], replace: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The reference line a ``runs.jsonl`` in folder ``referring`` holds in place of the run of
    ``target`` (a ``runs.jsonl``) whose fields equal ``where``; ``replace``: the fields the
    referring report shows differently (see the module's docstring)."""
    relative = os.path.relpath(Path(target).resolve(), Path(referring).resolve())
    return {REFERENCE: relative, "where": where, **({"with": replace} if replace else {})}


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


#: The resolution committed plots are drawn at (issue 59: dpi 110 took a fifth more bytes).
PLOT_DPI = 100


def save_figure(fig: Any, path: Path) -> None:
    """Write a matplotlib figure as a committed plot: a PNG at :data:`PLOT_DPI`, compressed
    harder than matplotlib's default (Pillow's ``optimize``); the pixels are the same."""
    fig.savefig(path, dpi=PLOT_DPI, pil_kwargs={"optimize": True})
