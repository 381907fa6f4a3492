"""The report's panels drawn from the fitted surrogate: parameter importance and slices.

- :func:`importance`: each parameter's share of importance per outcome
  (:mod:`dsbo.analysis.importance` ranks them), the method in the title;
- :func:`slices`: the surrogate's mean +- 2 sd along the most important parameters (at most
  :data:`MAX_SLICES`) through the best trial, the best trial's value marked where the slice
  passes it (interpolated between grid points, in log space for a log scale).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dsbo.analysis.report_style import apply_layout, plotly_go

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from dsbo.analysis.report_data import ReportData

#: Parameters shown in the slice panel (the most important first).
MAX_SLICES = 6


def importance(data: ReportData) -> go.Figure | None:
    """Each parameter's share of importance per outcome, the method in the title; ``None``
    without importances."""
    if not data.importance:
        return None
    from plotly.subplots import make_subplots

    go = plotly_go()
    fig = make_subplots(
        rows=1, cols=len(data.importance), subplot_titles=[i.outcome for i in data.importance]
    )
    for col, item in enumerate(data.importance, start=1):
        names = list(item.scores)[::-1]
        fig.add_trace(
            go.Bar(
                x=[item.scores[n] for n in names],
                y=names,
                orientation="h",
                showlegend=False,
                marker_color="#1f77b4",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title="share of importance", row=1, col=col)
    methods = sorted({i.method for i in data.importance})
    height = max(300, 22 * len(data.space.searched) + 120)
    return apply_layout(
        fig,
        f"Parameter importance ({', '.join(methods)} of the {data.surrogate} surrogate)",
        height,
    )


def _mean_at(s: Any) -> float | None:
    """The slice's mean at the best trial's value: on the grid, or interpolated between its
    points (in log space for a log scale); the best value of a float is rarely on the grid."""
    if s.at in s.values:
        return s.mean[s.values.index(s.at)]
    if s.categorical or s.at is None or not s.values:
        return None
    import numpy as np

    f = math.log if s.log else float
    grid = sorted(zip([f(v) for v in s.values], s.mean, strict=True))
    return float(np.interp(f(s.at), [g for g, _ in grid], [m for _, m in grid]))


def slices(data: ReportData) -> go.Figure | None:
    """The surrogate's mean +- 2 sd along the most important parameters (at most
    :data:`MAX_SLICES`) through the best trial, marked by a star; ``None`` without slices."""
    if not data.slices:
        return None
    from plotly.subplots import make_subplots

    go = plotly_go()
    shown = data.slices[:MAX_SLICES]
    cols = min(3, len(shown))
    rows = math.ceil(len(shown) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[s.parameter for s in shown])
    for k, s in enumerate(shown):
        row, col = k // cols + 1, k % cols + 1
        upper = [m + 2 * sd for m, sd in zip(s.mean, s.sd, strict=True)]
        lower = [m - 2 * sd for m, sd in zip(s.mean, s.sd, strict=True)]
        x = [str(v) for v in s.values] if s.categorical else s.values
        if s.categorical:
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=s.mean,
                    mode="markers",
                    showlegend=False,
                    marker={"color": "#1f77b4"},
                    error_y={"type": "data", "array": [2 * sd for sd in s.sd]},
                ),
                row=row,
                col=col,
            )
        else:
            fig.add_trace(
                go.Scatter(
                    x=x + x[::-1],
                    y=upper + lower[::-1],
                    fill="toself",
                    mode="lines",
                    line={"width": 0},
                    fillcolor="rgba(31,119,180,0.2)",
                    showlegend=False,
                    hoverinfo="skip",
                ),
                row=row,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=x, y=s.mean, mode="lines", showlegend=False, line={"color": "#1f77b4"}
                ),
                row=row,
                col=col,
            )
        at = str(s.at) if s.categorical else s.at
        fig.add_trace(
            go.Scatter(
                x=[at],
                y=[_mean_at(s)],
                mode="markers",
                marker={"color": "#d62728", "size": 10, "symbol": "star"},
                showlegend=False,
                name="best trial",
            ),
            row=row,
            col=col,
        )
        if s.log:
            fig.update_xaxes(type="log", row=row, col=col)
    title = (
        f"Slices through the best trial: {data.surrogate} mean +- 2 sd of {data.objective_names[0]}"
    )
    return apply_layout(fig, title, height=300 * rows + 80)
