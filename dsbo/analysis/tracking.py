"""Weights & Biases tracking of a campaign, offline by default.

``mode="offline"`` writes the W&B run under the run directory (``wandb sync`` uploads it later),
so no account or network is needed; every run also writes its own CSV/JSON/PNG/HTML, so nothing
depends on a W&B server. ``mode="disabled"`` logs nothing and never imports wandb. An offline
run starts in a background thread (importing wandb and starting its service took 2.8 s of the
default ``python -m dsbo.optimize``), so the start overlaps the campaign's first fits; steps
logged before it is up are kept and logged in order.

What a run holds, and why:

- one history step per trial as it finishes, charted against its id ``trial``: its outcomes by
  name, ``best_so_far``, ``failed`` (0/1), ``num_changed`` and every numeric parameter as
  ``param/<name>``, so the run page charts the search as it goes; in a run whose trials report
  learning curves (early stopping) also ``stopped`` (0/1) and ``steps``, the trial's last
  reported step (a stopped trial's outcome is its last reported value);
- at the end, the table ``trials``: one row per trial with its status, every parameter by name
  (user values; ``None`` where a conditional parameter was inactive), every outcome, the
  number of changed parameters, cost, generator and error. W&B's table and plot panels read it
  (offline too, and after ``wandb sync``), e.g. to scatter an outcome against a parameter;
- the learning curves, when trials reported any: the table ``curves`` (``trial, status, step,
  value``: the objective in the user's direction, as the run directory's ``curves.csv``,
  :mod:`dsbo.analysis.curves`) and the line chart ``learning_curves`` drawn from it (one line
  per trial). :meth:`WandbTracker.finish` reads ``curves.csv`` from the run directory (the
  outputs write it before), else the curves given to :meth:`WandbTracker.log_trials`;
- the run summary: every entry of ``summary.json`` under the same name (see
  :meth:`WandbTracker.finish`), so runs compare by the numbers the CLI prints;
- ``trace.png`` as the image ``trace``, and the run's self-contained ``report.html`` both as
  the HTML panel ``report`` (shown on the run page) and as the artifact ``report-<run id>`` of
  type ``report`` (a file to download or compare across runs).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.errors import DsboError

if TYPE_CHECKING:
    from dsbo.problems.base import Problem
    from dsbo.storage import Trial


#: The table's columns after the parameters and outcomes.
_TRIAL_FIELDS = ("num_changed", "cost", "generator", "error")


def _is_number(value: Any) -> bool:
    """An int or float (not a bool): what a W&B chart can plot."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def flatten_summary(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``summary.json``'s entries as W&B summary keys: scalars (numbers, strings, bools,
    ``None``) as they are, nested dicts flattened with ``/`` (``seconds_per_iteration/fit``,
    ``best_params/lr``; an empty dict adds no key), lists and any other value as JSON text
    (``value_vs_changes``, ``best_x``), which ``json.loads`` reads back."""
    flat: dict[str, Any] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_summary(value, f"{name}/"))
        elif value is None or isinstance(value, int | float | str):
            flat[name] = value
        else:
            flat[name] = json.dumps(value)
    return flat


def one_type_per_column(rows: list[list[Any]]) -> list[list[Any]]:
    """The rows with a column's values turned to text where they mix types (a choice of
    ``[16, "auto"]``): a W&B table column holds one type (``None`` aside)."""
    data = [list(row) for row in rows]
    for j in range(len(data[0]) if data else 0):
        values = [row[j] for row in data if row[j] is not None]
        kinds = {"number" if _is_number(v) else type(v) for v in values}
        if len(kinds) > 1:
            for row in data:
                row[j] = None if row[j] is None else str(row[j])
    return data


class WandbTracker:
    """Logs each finished trial, then the trial table, summary, trace plot and HTML report to
    a W&B run (see the module docstring)."""

    def __init__(
        self,
        run_dir: str | Path,
        config: dict[str, Any],
        mode: str = "offline",
        project: str = "dsbo",
        entity: str | None = None,
        name: str | None = None,
        tags: list[str] | None = None,
        background: bool | None = None,
    ) -> None:
        """``background`` (default: ``mode == "offline"``) starts the run in a thread, so that
        importing wandb and starting its service (about 2-3 s) overlap the campaign's first
        fits; history steps logged meanwhile are kept and logged, in order, once it is up. An
        online run starts in the foreground, so that a login or network error stops the
        command before any evaluation."""
        self._run: Any = None
        self._starting: threading.Thread | None = None
        self._start_error: BaseException | None = None
        #: History steps logged while a background start is still running.
        self._queued: list[dict[str, Any]] = []
        #: The table's columns (set by the first :meth:`log_trials`) and one row per trial id.
        self.columns: list[str] = []
        self.rows: dict[int, list[Any]] = {}
        #: The learning curves given to :meth:`log_trials`: ``curves.csv`` rows per trial id.
        self.curves: dict[int, list[list[Any]]] = {}
        self.run_dir = Path(run_dir)
        self.enabled = mode != "disabled"
        if not self.enabled:
            return
        os.environ.setdefault("WANDB_SILENT", "true")
        settings = {
            "project": project,
            "entity": entity,
            "name": name or Path(run_dir).name,
            "tags": tags or [],
            "dir": str(run_dir),
            "mode": mode,
            "config": config,
            "reinit": "finish_previous",
        }
        if background if background is not None else mode == "offline":
            self._starting = threading.Thread(
                target=self._start, args=(settings,), name="wandb-start", daemon=True
            )
            self._starting.start()
        else:
            self._start(settings)
            self._raise_start_error()

    def _start(self, settings: dict[str, Any]) -> None:
        try:
            import wandb

            run = wandb.init(**settings)
            # charts plot against the trial id; W&B's own step only counts the log calls, since
            # trials finish out of id order (parallel workers) and W&B drops a step that goes back
            run.define_metric("trial")
            run.define_metric("*", step_metric="trial")
            self._run = run
        except BaseException as exc:  # raised in the caller's thread by ``run``
            self._start_error = exc

    def _raise_start_error(self) -> None:
        error, self._start_error = self._start_error, None
        if error is not None:
            raise DsboError(
                f"W&B could not start the run ({type(error).__name__}: {error}); "
                "set wandb.mode to offline or disabled"
            ) from error

    @property
    def run(self) -> Any:
        """The W&B run (``None`` when disabled), once its start has finished."""
        if self._starting is not None:
            self._starting.join()
            self._starting = None
            self._raise_start_error()
        return self._run

    def _log(self, step: dict[str, Any]) -> None:
        """Log a history step now, or keep it while the run is still starting."""
        if self._starting is not None and self._starting.is_alive():
            self._queued.append(step)
            return
        self._flush()
        self.run.log(step)

    def _flush(self) -> None:
        """Wait for the run to start and log the steps kept meanwhile, in order."""
        run = self.run
        for step in self._queued:
            run.log(step)
        self._queued.clear()

    def log_trials(
        self,
        trials: list[Trial],
        best_value: float | None,
        problem: Problem,
        curves: Mapping[int, Sequence[tuple[int, float]]] | None = None,
    ) -> None:
        """Log a history step per trial and keep its table row (a trial logged again, by id,
        replaces its row). ``curves``: the store's (:meth:`Store.curves
        <dsbo.storage.base.Store.curves>`, the stored sense) for these trials, when they
        report learning curves: each one's is kept for the ``curves`` table."""
        if not self.enabled:
            return
        curves = curves or {}
        names = ["trial", "status", *problem.space.names, *problem.outcomes.metrics, *_TRIAL_FIELDS]
        self.columns = list(dict.fromkeys(names))
        for t in trials:
            params = problem.params(t.x)
            outcomes = (
                problem.outcomes.to_user(t.y) if t.y is not None else {}
            )  # as the user reported them
            step: dict[str, Any] = {"trial": t.id, "failed": int(t.status == "failed"), **outcomes}
            curve = curves.get(t.id)
            if curve or t.status == "stopped":  # a run without curves logs what it always did
                step["stopped"] = int(t.status == "stopped")
            if curve:
                step["steps"] = curve[-1][0]
                self.curves[t.id] = [
                    [t.id, t.status, s, problem.outcomes.user_objective(v)] for s, v in curve
                ]
            step.update({f"param/{k}": v for k, v in params.items() if _is_number(v)})
            if best_value is not None:
                step["best_so_far"] = best_value
            if "num_changed" in t.metadata:
                step["num_changed"] = t.metadata["num_changed"]
            self._log(step)

            row = {"trial": t.id, "status": t.status, **params, **outcomes}
            num_changed = t.metadata.get("num_changed")
            row.update(num_changed=num_changed, cost=t.cost, generator=t.generator, error=t.error)
            self.rows[t.id] = [row.get(c) for c in self.columns]

    def finish(
        self,
        summary: dict[str, Any],
        trace_png: Path | None,
        report_html: Path | None = None,
        curves_csv: Path | None = None,
    ) -> None:
        """Log the ``trials`` table, the ``curves`` table and its ``learning_curves`` chart,
        ``trace_png`` and ``report_html`` (each when there is one), set the run summary to
        ``summary`` (``summary.json``'s entries by name, flattened as :func:`flatten_summary`
        says) and finish the run. The curves are read from ``curves_csv`` (default: the run
        directory's ``curves.csv``), else taken from what :meth:`log_trials` was given."""
        if not self.enabled:
            return
        self._flush()
        import wandb

        from dsbo.analysis.curves import COLUMNS, CURVES_NAME, read_csv

        media: dict[str, Any] = {}
        if self.rows:
            data = one_type_per_column([self.rows[i] for i in sorted(self.rows)])
            media["trials"] = wandb.Table(columns=self.columns, data=data)
        curve_rows = read_csv(curves_csv if curves_csv is not None else self.run_dir / CURVES_NAME)
        if not curve_rows:
            curve_rows = [row for i in sorted(self.curves) for row in self.curves[i]]
        if curve_rows:
            table = wandb.Table(columns=list(COLUMNS), data=curve_rows)
            media["curves"] = table
            media["learning_curves"] = wandb.plot.line(
                table, "step", "value", stroke="trial", title="Learning curves"
            )
        if trace_png is not None and trace_png.exists():
            media["trace"] = wandb.Image(str(trace_png))
        if report_html is not None and report_html.exists():
            media["report"] = wandb.Html(str(report_html), inject=False)
            artifact = wandb.Artifact(f"report-{self.run.id}", type="report")
            artifact.add_file(str(report_html), name="report.html")
            self.run.log_artifact(artifact)
        if media:
            self.run.log(media)
        # last, so a summary.json name that is also a history key (``failed``) keeps its value
        self.run.summary.update(flatten_summary(summary))
        self.run.finish()
