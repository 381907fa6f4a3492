"""A run directory's outputs: ``history.csv``, ``trace.png``, ``summary.json`` and
``report.html``.

Written at the end of every ``python -m dsbo.optimize`` run (the report included), after every
``blackbox ask`` and ``tell`` (no report: ``python -m dsbo.report`` writes it on demand), and
by ``blackbox status`` when the outputs are stale. The summary is
:func:`dsbo.analysis.summary.summary` of the campaign's result, plus what the caller adds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsbo.analysis.summary import summary
from dsbo.analysis.trace import plot_trace

REPORT_NAME = "report.html"


def write_outputs(
    campaign: Any,
    run_dir: Path,
    extra: dict[str, Any] | None = None,
    report: bool = False,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``history.csv``, ``trace.png`` and ``summary.json`` (and with ``report``,
    ``report.html``, showing ``config``); return the summary."""
    from dsbo.analysis.report_data import is_sparsity_aware

    result = campaign.result()
    frame = result.history
    frame.to_csv(run_dir / "history.csv", index=False)
    plot_trace(frame, campaign.problem, run_dir / "trace.png", sparsity=is_sparsity_aware(campaign.policy),
               cost_axis=campaign.budget_cost is not None)  # fmt: skip
    info = summary(result, campaign.problem, frame, campaign.timings)
    info["budget_cost"] = campaign.budget_cost
    info.update(extra or {})
    (run_dir / "summary.json").write_text(json.dumps(info, indent=2))
    if report:
        from dsbo.analysis.html_report import write_report

        write_report(campaign, run_dir / REPORT_NAME, config)
    return info
