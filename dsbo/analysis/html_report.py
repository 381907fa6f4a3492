"""The run report: one self-contained HTML file (``report.html``) that opens offline.

plotly.js is embedded once in the page's head (no CDN), each panel of
:mod:`dsbo.analysis.report_figures` follows as a ``<div>`` with its data, then the best
trials, the configuration and the environment as plain HTML. Panels that do not apply to the
run are left out. A small script placed before everything else shows any JavaScript error in a
banner at the top of the page, so a report that failed to draw says so instead of staying
blank (the browser tests read the same banner).

Example:
    >>> from dsbo.analysis.html_report import write_report
    >>> write_report(campaign, "runs/branin/report.html")
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dsbo.analysis import report_figures

if TYPE_CHECKING:
    from dsbo.analysis.report_data import ReportData

#: The id of the element the page writes its JavaScript errors into.
ERROR_BANNER = "dsbo-js-errors"

_ERROR_HOOK = f"""<script>
(function () {{
  function show(text) {{
    var box = document.getElementById("{ERROR_BANNER}");
    if (!box) {{ return; }}
    box.style.display = "block";
    box.textContent += text + "\\n";
  }}
  window.addEventListener("error", function (e) {{ show("JavaScript error: " + e.message); }});
  window.addEventListener("unhandledrejection", function (e) {{ show("JavaScript error: " + e.reason); }});
}})();
</script>"""

_STYLE = """<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1300px;
       padding: 0 24px 48px; color: #222; }
h1 { margin-bottom: 4px; } .meta { color: #666; margin-top: 0; }
section { margin-top: 28px; } .note { background: #fff6e0; padding: 8px 12px; border-radius: 4px; }
#dsbo-js-errors { display: none; background: #fde2e2; color: #8a1111; padding: 8px 12px; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 13px; } td, th { padding: 3px 10px; border-bottom: 1px solid #ddd;
        text-align: right; } th { background: #f4f4f4; }
pre { background: #f7f7f7; padding: 10px; overflow-x: auto; font-size: 12px; }
</style>"""

#: The panels in page order: (title, figure function).
PANELS = (
    ("history", report_figures.history),
    ("curves", report_figures.learning_curves),
    ("steps", report_figures.steps_vs_best),
    ("pareto", report_figures.pareto_front),
    ("parallel", report_figures.parallel_coordinates),
    ("importance", report_figures.importance),
    ("slices", report_figures.slices),
    ("sparsity", report_figures.sparsity),
    ("contexts", report_figures.contexts),
)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.5g}"  # NaN: an inactive parameter
    return "" if value is None else html.escape(str(value))


def _table(frame: Any) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


#: The panels drawn from the surrogate (kept per fit state, :mod:`dsbo.analysis.report_cache`).
MODEL_PANELS = ("importance", "slices")
#: The stopped trials the page lists (``history.csv`` lists them all).
MAX_STOPPED_ROWS = 50


def drawn_parts(data: ReportData) -> dict[str, Any]:
    """What the page draws from the run's history (pandas, plotly): the trials per status,
    the best-trials table, the table of trials stopped early (``""`` when none was) and each
    panel but the model's (``None`` where it does not apply)."""
    frame = data.frame
    best = data.best_trials()
    return {
        "counts": frame["status"].value_counts().to_dict() if not frame.empty else {},
        "best": f"<section><h2>Best trials</h2>{_table(best)}</section>" if len(best) else "",
        "stopped": _stopped_section(data),
        "panels": panel_html(data, [name for name, _ in PANELS if name not in MODEL_PANELS]),
    }


def _stopped_section(data: ReportData) -> str:
    """The trials stopped early: parameters, last value, last step and the rule's reason."""
    table = data.stopped_trials(MAX_STOPPED_ROWS)
    if table.empty:
        return ""
    total = int((data.frame["status"] == "stopped").sum())
    more = (
        f"<p class='meta'>and {total - len(table)} more (history.csv lists them all)</p>"
        if total > len(table)
        else ""
    )
    note = (
        "<p class='meta'>Their values are the last reported, after fewer steps than a full trial: "
        "they do not count as results (best trials, best so far).</p>"
    )
    return (
        f"<section id='stopped-trials'><h2>Stopped trials</h2>{note}{_table(table)}{more}</section>"
    )


def panel_html(
    data: ReportData, names: list[str] | tuple[str, ...] = MODEL_PANELS
) -> dict[str, str | None]:
    """Each named panel as the page's HTML section, ``None`` where it does not apply."""
    out: dict[str, str | None] = {}
    for name, panel in PANELS:
        if name not in names:
            continue
        fig = panel(data)
        if fig is None:
            out[name] = None
            continue
        body = fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=f"panel-{name}",
            config={"displaylogo": False, "responsive": True},
        )
        out[name] = f"<section class='panel'>{body}</section>"
    return out


def objectives_text(data: ReportData) -> str:
    """What the page's subtitle says of the objectives, each named once:
    ``"objective loss (lower is better)"``, ``"objectives f1 (lower is better), f2 (...)"``; an
    objective named ``objective`` (the default name) is not introduced by the same word again:
    ``"objective (higher is better)"``."""
    labels = ", ".join(data.label(i) for i in range(len(data.objective_names)))
    first = data.objective_names[0].strip().lower() if data.objective_names else ""
    if first in ("objective", "objectives"):
        return labels
    return f"objective{'s' if data.multi_objective else ''} {labels}"


def render(
    data: ReportData,
    drawn: dict[str, Any] | None = None,
    model: dict[str, str | None] | None = None,
) -> str:
    """The report page of ``data`` as one HTML string; ``drawn`` (:func:`drawn_parts`) and
    ``model`` (:func:`panel_html` of the model panels) when the caller has them already."""
    from plotly.offline import get_plotlyjs

    drawn = drawn if drawn is not None else drawn_parts(data)
    panels = {**drawn["panels"], **(model if model is not None else panel_html(data))}
    counts = drawn["counts"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>dsbo report: {html.escape(data.title)}</title>",
        _ERROR_HOOK,
        _STYLE,
        f"<script type='text/javascript'>{get_plotlyjs()}</script>",
        "</head><body>",
        f"<div id='{ERROR_BANNER}'></div>",
        f"<h1>{html.escape(data.title)}</h1>",
        "<p class='meta'>"
        + ", ".join(f"{v} {k}" for k, v in counts.items())
        + f" trial(s); written "
        f"{time.strftime('%Y-%m-%d %H:%M')}; {html.escape(objectives_text(data))}</p>",
    ]
    if drawn["best"]:
        parts.append(drawn["best"])
    if drawn.get("stopped"):
        parts.append(drawn["stopped"])
    if data.model_note:
        parts.append(f"<p class='note'>{html.escape(data.model_note)}</p>")
    parts += [panels[name] for name, _ in PANELS if panels.get(name)]
    config = yaml.safe_dump(json.loads(json.dumps(data.config, default=str)), sort_keys=False)
    env = yaml.safe_dump(data.environment, sort_keys=False)
    parts += [
        f"<section><h2>Configuration</h2><pre>{html.escape(config)}</pre></section>",
        f"<section><h2>Environment</h2><pre>{html.escape(env)}</pre></section>",
        "</body></html>",
    ]
    return "\n".join(parts)


def write_report(
    campaign: Any, path: str | Path, config: dict[str, Any] | None = None, model: bool = True
) -> Path:
    """Write the report of ``campaign`` to ``path`` and return the path.

    Args:
        campaign: A :class:`~dsbo.campaign.Campaign` (finished or not).
        path: Where the HTML file goes (its folder is created).
        config: The run's configuration as written (shown in the report).
        model: Fit the campaign's surrogate for importance and slices (``False``: leave them
            out, e.g. to write a report quickly).
    """
    from dsbo.analysis.report_data import from_campaign

    return write_page(from_campaign(campaign, config, model), path)


def write_page(
    data: ReportData,
    path: str | Path,
    drawn: dict[str, Any] | None = None,
    model: dict[str, str | None] | None = None,
) -> Path:
    """Render ``data`` (with the parts given, :func:`render`) and write it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(data, drawn, model), encoding="utf-8")
    return path
