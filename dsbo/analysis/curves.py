"""Learning curves as a run's outputs show them (early stopping, issue 42).

The store keeps each trial's reported ``(step, value)`` pairs in its own maximization sense
(:meth:`Store.curves <dsbo.storage.base.Store.curves>`); the outputs show them in the user's
direction (a minimized loss as the loss), with the trial's status and, for a trial stopped
early, the rule's reason. :func:`user_curves` reads them so (the report's
:attr:`~dsbo.analysis.report_data.ReportData.curves`); :func:`write_csv` writes them as the run
directory's ``curves.csv``, one row per trial and step (``trial, status, step, value``), which
:class:`~dsbo.analysis.tracking.WandbTracker` logs as its ``curves`` table and which anyone can
read back with :func:`read_csv` (or pandas).

Kept free of torch and pandas at import.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dsbo.problems.base import Problem
    from dsbo.storage import Store

#: The run directory's learning curves (written only when a trial reported).
CURVES_NAME = "curves.csv"
#: ``curves.csv``'s columns (``value``: the objective in the user's direction).
COLUMNS = ("trial", "status", "step", "value")
#: What a curve's trial status is called in the outputs (a pending trial is still running).
OUTCOMES = {"pending": "running"}


def outcome(status: str) -> str:
    """A trial's status as the curves show it: ``running`` for a pending trial, else itself."""
    return OUTCOMES.get(status, status)


def user_curves(store: Store, problem: Problem) -> list[dict[str, Any]]:
    """Every trial that reported, in id order, as ``{"trial", "status", "steps", "values",
    "reason"}``: its steps, its values of the (first) objective in the user's direction, its
    status in the store and, for a stopped trial, the rule's reason (else ``None``)."""
    curves = store.curves()
    if not curves:
        return []
    trials = {t.id: t for t in store.trials()}
    outcomes = problem.outcomes
    out = []
    for trial_id in sorted(curves):
        trial = trials.get(trial_id)
        status = trial.status if trial is not None else "pending"
        points = curves[trial_id]
        out.append(
            {
                "trial": int(trial_id),
                "status": status,
                "steps": [int(s) for s, _ in points],
                "values": [outcomes.user_objective(float(v)) for _, v in points],
                "reason": trial.error if trial is not None and status == "stopped" else None,
            }
        )
    return out


def curve_rows(curves: list[dict[str, Any]]) -> list[list[Any]]:
    """The curves as rows ``[trial, status, step, value]`` (:data:`COLUMNS`), trial by trial."""
    return [
        [c["trial"], c["status"], s, v]
        for c in curves
        for s, v in zip(c["steps"], c["values"], strict=True)
    ]


def last_steps(curves: list[dict[str, Any]]) -> dict[int, int]:
    """Each trial's last reported step by trial id."""
    return {c["trial"]: c["steps"][-1] for c in curves if c["steps"]}


def write_csv(curves: list[dict[str, Any]], path: str | Path) -> Path | None:
    """Write ``curves`` (:func:`user_curves`) to ``path`` as :data:`COLUMNS`; nothing (and
    ``None``) when no trial reported."""
    if not curves:
        return None
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows([t, s, step, repr(float(v))] for t, s, step, v in curve_rows(curves))
    return path


def read_csv(path: str | Path) -> list[list[Any]]:
    """The rows of a ``curves.csv`` (:func:`write_csv`): ``[trial, status, step, value]`` with
    ``trial`` and ``step`` as ints and ``value`` as a float; ``[]`` when there is no such file
    or it is not one."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError:
        return []
    if not rows or tuple(rows[0]) != COLUMNS:
        return []
    out = []
    for row in rows[1:]:
        try:
            trial, status, step, value = row
            number = float(value)
            out.append([int(trial), status, int(step), number if math.isfinite(number) else None])
        except ValueError:
            continue
    return out


__all__ = [
    "COLUMNS",
    "CURVES_NAME",
    "curve_rows",
    "last_steps",
    "outcome",
    "read_csv",
    "user_curves",
    "write_csv",
]
