"""A run directory's outputs: ``history.csv``, ``trace.png`` and ``summary.json``.

Written at the end of every ``python -m dsbo.optimize`` run, after every ``blackbox ask`` and
``tell``, and by ``blackbox status`` when the outputs are stale. The summary is
:func:`dsbo.analysis.report.summary` of the campaign's result, plus what the caller adds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsbo.analysis.report import plot_trace, summary


def write_outputs(campaign: Any, run_dir: Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``history.csv``, ``trace.png`` and ``summary.json``; return the summary."""
    result = campaign.result()
    frame = result.history
    frame.to_csv(run_dir / "history.csv", index=False)
    plot_trace(frame, campaign.problem, run_dir / "trace.png")
    info = summary(result, campaign.problem, frame, campaign.timings)
    info["budget_cost"] = campaign.budget_cost
    info.update(extra or {})
    (run_dir / "summary.json").write_text(json.dumps(info, indent=2))
    return info
