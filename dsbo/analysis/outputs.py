"""A run directory's outputs: ``history.csv``, ``trace.png``, ``summary.json`` and
``report.html``, and ``curves.csv`` when the trials reported learning curves
(:mod:`dsbo.analysis.curves`; ``history.csv`` then has a ``steps`` column and ``summary.json``
the steps used and saved, :func:`dsbo.analysis.summary.steps_summary`).

Written at the end of every ``python -m dsbo.optimize`` run (the report included), after every
``blackbox ask`` and ``tell`` (no report: ``python -m dsbo.report`` writes it on demand), and
by ``blackbox status`` when the outputs are stale. The summary is
:func:`dsbo.analysis.summary.summary` of the campaign's result, plus what the caller adds.
With them goes ``report_data.json``, the report's data (:mod:`dsbo.analysis.report_cache`),
so that ``python -m dsbo.report`` need not rebuild the campaign.
"""

from __future__ import annotations

import importlib
import json
import threading
from pathlib import Path
from typing import Any

from dsbo.analysis.summary import summary
from dsbo.analysis.trace import plot_trace, pyplot_agg

REPORT_NAME = "report.html"

#: What :func:`write_outputs` imports on first use besides matplotlib (pandas, plotly through
#: the report's modules); with matplotlib about 3 s on the 2-core machine.
OUTPUT_MODULES = (
    "pandas",
    "dsbo.analysis.report_cache",
    "dsbo.analysis.report_data",
    "dsbo.analysis.html_report",
    "dsbo.campaign.history",
)


def prefetch_output_modules() -> threading.Thread:
    """Import matplotlib's pyplot (Agg, :func:`~dsbo.analysis.trace.pyplot_agg`) and
    :data:`OUTPUT_MODULES` in a daemon thread, so that a command importing them at the
    end (``python -m dsbo.optimize``) does so while its campaign runs: on 2 cores the import
    overlaps the time the campaign spends in torch's kernels, which release the GIL. An import
    that fails here is left to fail again, with its message, where the module is used."""

    def load() -> None:
        try:
            pyplot_agg()
            for name in OUTPUT_MODULES:
                importlib.import_module(name)
        except Exception:  # noqa: BLE001 (reported where the module is used)
            return

    thread = threading.Thread(target=load, name="dsbo-prefetch", daemon=True)
    thread.start()
    return thread


def write_outputs(
    campaign: Any,
    run_dir: Path,
    extra: dict[str, Any] | None = None,
    report: bool = False,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``history.csv``, ``trace.png``, ``summary.json``, ``report_data.json`` and, when
    trials reported, ``curves.csv`` (and with ``report``, ``report.html``, showing ``config``);
    return the summary."""
    from dsbo.analysis import report_cache
    from dsbo.analysis.curves import CURVES_NAME, write_csv
    from dsbo.analysis.report_data import is_sparsity_aware
    from dsbo.campaign.history import add_steps

    digest = report_cache.trials_digest(campaign.store)
    result = campaign.result()
    curves = campaign.store.curves()
    frame = result.history = add_steps(result.history, curves, campaign.problem)
    frame.to_csv(run_dir / "history.csv", index=False)
    plot_trace(
        frame,
        campaign.problem,
        run_dir / "trace.png",
        sparsity=is_sparsity_aware(campaign.policy),
        cost_axis=campaign.budget_cost is not None,
    )
    max_steps = getattr(getattr(campaign, "early_stopping", None), "max_steps", None)
    info = summary(result, campaign.problem, frame, campaign.timings, max_steps=max_steps)
    info["budget_cost"] = campaign.budget_cost
    info.update(extra or {})
    (run_dir / "summary.json").write_text(json.dumps(info, indent=2))
    from dsbo.analysis.html_report import drawn_parts, panel_html, write_page
    from dsbo.analysis.report_data import add_model_panels, from_campaign

    data = from_campaign(campaign, config, model=False, result=result)
    write_csv(data.curves, run_dir / CURVES_NAME)
    kept: dict[str, Any] = {}
    if report:
        drawn = kept["drawn"] = drawn_parts(data)
        if add_model_panels(data, campaign, result.best_x):
            kept["panels"] = (report_cache.model_key(campaign.store), data)
        model_html = kept["model_html"] = panel_html(data)
        write_page(data, run_dir / REPORT_NAME, drawn, model_html)
    report_cache.save(
        run_dir,
        digest,
        data,
        campaign.seed,
        result.best_x,
        report_cache.model_inputs(campaign),
        **kept,
    )
    return info
