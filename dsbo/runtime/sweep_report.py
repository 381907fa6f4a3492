"""The HTML report of a sweep directory, over its runs.

A bayes sweep is a dsbo campaign on ``<sweep dir>/trials.sqlite``: its report is the
campaign's (:func:`dsbo.analysis.html_report.write_report`), rebuilt here from ``sweep.yaml``
when ``python -m dsbo.report`` is pointed at the directory. A grid or random sweep has no
campaign: its runs (``sweep.json``) become the report's history over the sweep's search space
(:func:`dsbo.space.wandb_syntax.search_space`; a space the W&B syntax cannot bound, e.g. a
``normal`` distribution, is read from the values the runs took), and a GP fitted on the
finished runs gives the importance and slice panels. The metric is shown in the maximized
sense, like every dsbo objective: a minimized metric as ``neg_<name>``.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import yaml

from dsbo.analysis.html_report import write_page, write_report
from dsbo.analysis.report_data import ReportData, environment
from dsbo.errors import ConfigError, DsboError
from dsbo.runtime.sweep import bayes_campaign
from dsbo.runtime.sweep_config import SweepConfig, parse_sweep
from dsbo.space import Choice, Float, SearchSpace
from dsbo.space.wandb_syntax import search_space

#: A sweep run's status -> the report's trial status.
STATUS = {"finished": "completed", "running": "pending", "pending": "pending"}


def write_sweep_report(sweep_dir: Path, path: str | Path, model: bool = True) -> Path:
    """Write the report of the sweep in ``sweep_dir`` to ``path``."""
    sweep_dir = Path(sweep_dir)
    try:
        payload = json.loads((sweep_dir / "sweep.json").read_text())
        raw = yaml.safe_load((sweep_dir / "sweep.yaml").read_text())
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"{sweep_dir} is not a readable sweep directory: {exc}") from None
    sweep = parse_sweep(raw, source=str(sweep_dir / "sweep.yaml"))
    if sweep.method == "bayes":
        store = sweep_dir / "trials.sqlite"
        if not store.is_file():
            raise ConfigError(
                f"{sweep_dir} has no store (trials.sqlite): the bayes sweep never ran"
            )
        campaign = bayes_campaign(
            sweep, sweep_dir, int(payload["num_runs"]), int(payload.get("seed", 0))
        )
        try:
            return write_report(campaign, path, sweep.raw, model)
        finally:
            campaign.store.close()
    return write_page(sweep_report_data(sweep, payload["runs"], payload.get("seed"), model), path)


def _space(sweep: SweepConfig, runs: list[dict[str, Any]]) -> SearchSpace:
    """The sweep's search space; where the W&B syntax cannot bound it, the values the runs
    took (numbers as a float range, anything else as choices)."""
    try:
        return search_space(sweep.parameters, "sweep")
    except DsboError:
        pass
    parameters: dict[str, Any] = {}
    for p in sweep.parameters:
        seen = [r["params"][p.name] for r in runs if p.name in r["params"]]
        numbers = [float(v) for v in seen if isinstance(v, int | float) and not isinstance(v, bool)]
        if seen and len(numbers) == len(seen) and min(numbers) < max(numbers):
            parameters[p.name] = Float(min(numbers), max(numbers))
        elif seen:
            parameters[p.name] = Choice(list(dict.fromkeys(seen)))
    return SearchSpace(parameters)


def sweep_report_data(
    sweep: SweepConfig, runs: list[dict[str, Any]], seed: int | None = None, model: bool = True
) -> ReportData:
    """The report of a grid or random sweep's ``runs`` (the records of ``sweep.json``)."""
    import pandas as pd

    metric = (sweep.metric or {}).get("name", "metric")
    sign, name = (1.0, metric) if sweep.goal == "maximize" else (-1.0, f"neg_{metric}")
    space = _space(sweep, runs)
    rows, best = [], -math.inf
    for i, run in enumerate(runs, start=1):
        value = run.get("metric")
        # a run hyperband stopped early counts with its last logged value (as W&B reports it)
        ok = (
            run.get("status") in ("finished", "stopped")
            and value is not None
            and math.isfinite(value)
        )
        status = "completed" if ok else STATUS.get(run.get("status"), "failed")
        if ok:
            best = max(best, sign * value)
        rows.append(
            {
                "trial": i,
                "generator": sweep.method,
                "status": status,
                **{n: run["params"].get(n) for n in space.names},
                name: sign * value if ok else math.nan,
                "num_changed": math.nan,
                "error": run.get("error"),
                "cost": run.get("seconds", 0.0),
                "best_so_far": best if best > -math.inf else math.nan,
            }
        )
    frame = pd.DataFrame(rows)
    frame["cumulative_cost"] = frame["cost"].cumsum() if len(frame) else []
    data = ReportData(
        title=sweep.name or "sweep",
        space=space,
        frame=frame,
        objective_names=[name],
        surrogate="gp",
        config=sweep.raw,
        environment=environment(seed),
    )
    if model:
        _add_gp_panels(data)
    return data


def _add_gp_panels(data: ReportData) -> None:
    """Fit a GP on the finished runs (encoded in the sweep's space) for importance and slices."""
    import torch

    from dsbo.analysis.importance import parameter_importance, slices
    from dsbo.analysis.report_figures import MAX_SLICES
    from dsbo.surrogates import fit_surrogate

    done = data.completed
    if len(done) < 3:
        data.model_note = "fewer than three finished runs: no surrogate to read importance from"
        return
    name = data.objective_names[0]
    try:
        X = torch.tensor(
            [data.space.encode(_present(row, data.space)) for _, row in done.iterrows()],
            dtype=torch.double,
        )
        Y = torch.tensor(done[name].to_numpy(), dtype=torch.double).unsqueeze(-1)
        bounds = torch.tensor(data.space.bounds, dtype=torch.double).T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            model = fit_surrogate("gp", X, Y, bounds=bounds)
    except Exception as exc:  # a report never fails because the surrogate does
        data.model_note = f"no GP could be fitted on the runs: {type(exc).__name__}: {exc}"
        return
    data.importance = parameter_importance(model, data.space, [name])
    best = X[int(torch.argmax(Y))].tolist()
    data.slices = slices(model, data.space, best, data.importance[0].ranking[:MAX_SLICES])


def _present(row: Any, space: SearchSpace) -> dict[str, Any]:
    """A run's values of the space's parameters (an inactive conditional one left out)."""
    out = {}
    for n in space.names:
        value = row[n]
        if not (isinstance(value, float) and math.isnan(value)):
            out[n] = value
    return out
