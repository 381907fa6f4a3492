"""The common style of the HTML report's figures: plotly on first use, the layout, rounding.

Every panel of the report (:mod:`dsbo.analysis.report_figures` and its siblings) is drawn with
the empty plotly template and the same light style (:func:`apply_layout`: plotly's own templates
add about 7 kB of JSON to every figure), and carries its numbers rounded to six significant
digits (:func:`rounded`), since the page holds every number as text. plotly is imported only
when a figure is drawn (:func:`plotly_go`), so importing the report's modules stays cheap.

Example:
    >>> rounded([1.23456789, "a"], digits=3)
    [1.23, 'a']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: The colour of failed trials in every panel.
FAILED_COLOUR = "#d62728"


def plotly_go() -> Any:
    """``plotly.graph_objects``, imported on first use (plotly is heavy: the report only)."""
    import plotly.graph_objects as go

    return go


def apply_layout(fig: go.Figure, title: str, height: int = 420, top: int = 60) -> go.Figure:
    """Title, size and a light style (the empty template: plotly's own templates add ~7 kB of
    JSON to every figure)."""
    fig.update_layout(
        title=title,
        height=height,
        template="none",
        margin={"l": 70, "r": 30, "t": top, "b": 50},
        font={"family": "system-ui, sans-serif", "size": 12},
        hovermode="closest",
    )
    # automargin: long tick labels (parameter names on the importance bars) are not clipped
    fig.update_xaxes(
        showgrid=True, gridcolor="#eeeeee", zeroline=False, linecolor="#888888", automargin=True
    )
    fig.update_yaxes(
        showgrid=True, gridcolor="#eeeeee", zeroline=False, linecolor="#888888", automargin=True
    )
    return fig


def rounded(values: Any, digits: int = 6) -> list[Any]:
    """``values`` to ``digits`` significant digits (the page carries every number as text)."""
    return [
        float(f"{v:.{digits}g}") if isinstance(v, float) and math.isfinite(v) else v
        for v in list(values)
    ]
