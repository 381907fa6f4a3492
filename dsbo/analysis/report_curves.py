"""The report's panels of runs whose trials reported intermediate values (early stopping).

- :func:`learning_curves`: each trial's curve over its steps in the user's direction,
  coloured by how the trial ended (:func:`dsbo.analysis.curves.outcome`: completed, stopped,
  paused, failed, running, abandoned), a trial stopped early marked at its last point. Above
  :data:`MAX_CURVE_TRACES` curves, each outcome's curves are one trace separated by gaps, so a
  large run's page stays light.
- :func:`steps_vs_best`: the cumulative steps spent against the best value of the fully trained
  (completed) trials so far, beside what training every trial to ``max_steps`` would have
  spent: what early stopping saved, and at what cost in the best value found.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from dsbo.analysis.report_style import FAILED_COLOUR, apply_layout, plotly_go, rounded

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from dsbo.analysis.report_data import ReportData

#: A learning curve's colour by how its trial ended (:func:`dsbo.analysis.curves.outcome`), in
#: legend order.
CURVE_COLOURS = {
    "completed": "#1f77b4",
    "stopped": "#ff7f0e",
    "paused": "#9467bd",
    "failed": FAILED_COLOUR,
    "running": "#2ca02c",
    "abandoned": "#999999",
}
#: Above this many curves, each outcome's curves are one trace (separated by gaps), so a
#: large run's page stays light; below it, one trace per trial.
MAX_CURVE_TRACES = 300


def learning_curves(data: ReportData) -> go.Figure | None:
    """Each trial's reported values over its steps, coloured by how the trial ended; a trial
    stopped early marked at its last point; ``None`` without curves."""
    if not data.curves:
        return None
    from dsbo.analysis.curves import outcome

    go = plotly_go()
    fig = go.Figure()
    by_outcome: dict[str, list[dict[str, Any]]] = {}
    for curve in data.curves:
        by_outcome.setdefault(outcome(curve["status"]), []).append(curve)
    order = [o for o in CURVE_COLOURS if o in by_outcome] + sorted(
        set(by_outcome) - set(CURVE_COLOURS)
    )
    merged = len(data.curves) > MAX_CURVE_TRACES
    for name in order:
        colour = CURVE_COLOURS.get(name, "#999999")
        groups = [by_outcome[name]] if merged else [[c] for c in by_outcome[name]]
        for k, group in enumerate(groups):
            x: list[Any] = []
            y: list[Any] = []
            ids: list[Any] = []
            for curve in group:  # one line per trial; merged: separated by gaps
                if x:
                    x, y, ids = [*x, None], [*y, None], [*ids, None]
                x += curve["steps"]
                y += rounded(curve["values"])
                ids += [curve["trial"]] * len(curve["steps"])
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name=name,
                    legendgroup=name,
                    showlegend=k == 0,
                    line={"color": colour, "width": 1.5},
                    opacity=0.8,
                    customdata=ids,
                    meta=None if merged else group[0]["trial"],
                    hovertemplate=f"trial %{{customdata}} ({name})<br>step %{{x}}: %{{y:.5g}}<extra></extra>",
                )
            )
    stopped = [c for c in data.curves if c["status"] == "stopped" and c["steps"]]
    if stopped:
        fig.add_trace(
            go.Scatter(
                x=[c["steps"][-1] for c in stopped],
                y=rounded([c["values"][-1] for c in stopped]),
                mode="markers",
                name="stopped here",
                legendgroup="stopped",
                marker={"symbol": "x", "color": CURVE_COLOURS["stopped"], "size": 9},
                customdata=[c["trial"] for c in stopped],
                text=[str(c.get("reason") or "") for c in stopped],
                hovertemplate="trial %{customdata} stopped at step %{x}: %{y:.5g}<br>%{text}<extra></extra>",
            )
        )
    if data.max_steps is not None:
        fig.add_vline(
            x=data.max_steps, line_dash="dot", line_color="#888888", annotation_text="max_steps"
        )
    fig.update_xaxes(title="step")
    fig.update_yaxes(title=data.label(0))
    title = f"Learning curves: {len(data.curves)} trial(s), {len(stopped)} stopped early"
    return apply_layout(fig, title)


def steps_vs_best(data: ReportData) -> go.Figure | None:
    """The cumulative steps spent against the best value so far, beside what training every
    trial to ``max_steps`` would have spent; ``None`` without curves."""
    if not data.curves or data.frame.empty:
        return None
    from dsbo.analysis.curves import last_steps

    go = plotly_go()
    frame = data.frame
    last = last_steps(data.curves)
    full = data.max_steps
    # what each trial spent: its last step; a completed trial that reported nothing ran in full
    spent = [
        last.get(t, full if full is not None and s == "completed" else 0)
        for t, s in zip(frame["trial"], frame["status"], strict=True)
    ]
    cumulative = list(itertools.accumulate(spent))
    best = rounded(frame["best_so_far"].tolist())
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=cumulative,
            y=best,
            mode="lines+markers",
            name="steps spent",
            line={"shape": "hv", "color": "#d62728"},
            marker={"size": 5},
            customdata=frame["trial"],
            hovertemplate="after trial %{customdata}: %{x} steps<br>best %{y:.5g}<extra></extra>",
        )
    )
    if full is not None:
        ended = [0 if s in ("pending",) else full for s in frame["status"]]
        fig.add_trace(
            go.Scatter(
                x=list(itertools.accumulate(ended)),
                y=best,
                mode="lines",
                name=f"every trial to {full} steps",
                line={"shape": "hv", "color": "#999999", "dash": "dash"},
                customdata=frame["trial"],
                hovertemplate="after trial %{customdata}: %{x} steps<extra></extra>",
            )
        )
    fig.update_xaxes(title="cumulative steps")
    fig.update_yaxes(
        title="dominated hypervolume" if data.multi_objective else f"best {data.label(0)}"
    )
    return apply_layout(fig, "Steps spent vs best value (of the fully trained trials)", height=340)
