r"""The report's parallel-coordinates panel: every trial over the searched parameters.

One axis per searched parameter and one for the objective (Inselberg's parallel coordinates,
as Optuna and W&B draw them):

- a log-scaled parameter is drawn as :math:`\log_{10}` of its values with the values as tick
  labels, a choice by its values' names at their indices;
- a conditional parameter inactive in a trial sits on a tick of its own, :data:`INACTIVE`,
  below its range;
- the objective's axis runs from the worst value (bottom) to the best (top) in the user's
  direction; failed trials sit on a ``failed`` tick below the worst and are drawn grey, the
  others coloured by the objective, best brightest.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dsbo.analysis.report_style import apply_layout, plotly_go, rounded

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from dsbo.analysis.report_data import ReportData

#: The tick of a conditional parameter in the trials where it was inactive.
INACTIVE = "inactive"


def _choice_index(values: tuple[Any, ...], value: Any) -> int:
    """The index of ``value`` among a choice's values (a table may hold ``2`` as ``2.0``)."""
    for i, v in enumerate(values):
        if v == value or str(v) == str(value):
            return i
    return -1


def _axis(data: ReportData, name: str) -> dict[str, Any]:
    """One parcoords dimension: the parameter's values (log10 for log scales, indices for
    choices), an extra tick below the range for trials where it was inactive."""
    from dsbo.space import Choice, Float, Int

    p = data.space.parameters[name]
    column = data.frame[name]
    inactive = column.isna()
    if isinstance(p, Choice):
        labels = [str(v) for v in p.values]
        values = [
            _choice_index(p.values, v) if not missing else -1
            for v, missing in zip(column, inactive, strict=True)
        ]
        ticks, text = list(range(len(labels))), labels
        low, high = 0, len(labels) - 1
    else:
        log = isinstance(p, Float | Int) and p.log
        transform = (lambda v: math.log10(v)) if log else float  # noqa: E731
        low, high = transform(p.low), transform(p.high)
        values = [
            transform(v) if not missing else math.nan
            for v, missing in zip(column, inactive, strict=True)
        ]
        ticks = [low + (high - low) * i / 4 for i in range(5)]
        text = [f"{10**t:.3g}" if log else f"{t:.3g}" for t in ticks]
    if inactive.any():
        below = low - 0.1 * max(high - low, 1)
        values = [below if missing else v for v, missing in zip(values, inactive, strict=True)]
        ticks, text, low = [below, *ticks], [INACTIVE, *text], below
    return {
        "label": name,
        "values": rounded(values),
        "tickvals": ticks,
        "ticktext": text,
        "range": [low, high],
    }


def parallel_coordinates(data: ReportData) -> go.Figure | None:
    """Every completed or failed trial over the searched parameters and the objective
    (module docstring); ``None`` before any trial ended."""
    go = plotly_go()
    frame = data.frame[data.frame["status"].isin(("completed", "failed"))]
    if frame.empty:
        return None
    dimensions = [_axis(data.with_frame(frame), name) for name in data.space.searched]
    objective = data.objective_names[0]
    values = frame[objective]
    failed = frame["status"] == "failed"
    finite = values[~failed]
    low, high = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    span = high - low or 1.0
    maximized = (
        data.sign(0) > 0
    )  # the axis runs from the failed tick (bottom) to the best value (top)
    worse, best = (low - 0.08 * span, high) if maximized else (high + 0.08 * span, low)
    shown = values.where(~failed, worse)
    ticks, text = (
        [low, (low + high) / 2, high],
        [f"{low:.4g}", f"{(low + high) / 2:.4g}", f"{high:.4g}"],
    )
    if failed.any():  # the "failed" tick only when a trial failed
        ticks, text = [worse, *ticks], ["failed", *text]
    dimensions.append(
        {
            "label": data.label(0),
            "values": rounded(shown.tolist()),
            "range": [worse, best],
            "tickvals": ticks,
            "ticktext": text,
        }
    )
    # colour: the objective scaled to [0.1, 1], best brightest; failed trials at 0, drawn grey
    colour = (((shown - low) if maximized else (high - shown)) / span * 0.9 + 0.1).where(
        ~failed, 0.0
    )
    scale = [
        [0.0, "#bbbbbb"],
        [0.05, "#bbbbbb"],
        [0.1, "#440154"],
        [0.55, "#21918c"],
        [1.0, "#fde725"],
    ]
    fig = go.Figure(
        go.Parcoords(
            line={
                "color": rounded(colour.tolist(), 3),
                "colorscale": scale,
                "cmin": 0.0,
                "cmax": 1.0,
            },
            dimensions=dimensions,
        )
    )
    title = f"Parallel coordinates: {len(frame)} trials (colour: {objective}; failed trials grey)"
    return apply_layout(fig, title, height=500, top=120)
