"""The figures of the HTML report (plotly), one function per panel.

Each takes the :class:`~dsbo.analysis.report_data.ReportData` of a run and returns a plotly
figure, or ``None`` when the panel does not apply to the run (the report leaves it out):

- :func:`history` — every trial's value and the best so far (the hypervolume for several
  objectives), against the cumulative cost when the budget is in cost units; failed trials
  marked;
- :func:`learning_curves` — runs whose trials reported intermediate values (early stopping):
  each trial's curve over its steps in the user's direction, coloured by how the trial ended
  (completed, stopped, failed, running), a trial stopped early marked at its last point;
- :func:`steps_vs_best` — the same runs: the cumulative steps spent against the best value of
  the fully trained (completed) trials so far, beside what training every trial to
  ``max_steps`` would have spent;
- :func:`parallel_coordinates` — all trials over the named parameters (log scales as log10
  with the values as ticks, choices by name, inactive conditional parameters at their own
  tick), coloured by the objective, failed trials grey;
- :func:`importance` — each parameter's share of importance, the method in the title;
- :func:`slices` — the surrogate's mean +- 2 sd along the most important parameters through
  the best trial;
- :func:`pareto_front` — several objectives: the observed outcomes, the non-dominated ones
  highlighted, MOBO-RS's preference region drawn;
- :func:`sparsity` — sparsity-aware runs: changes from the default per trial and the best
  value with at most k changes;
- :func:`contexts` — contextual runs: each context's role per trial and the cost ledger.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from dsbo.analysis.report_data import ReportData

#: Parameters shown in the slice panel (the most important first).
MAX_SLICES = 6
FAILED_COLOUR = "#d62728"
INACTIVE = "inactive"
#: A learning curve's colour by how its trial ended (:func:`dsbo.analysis.curves.outcome`), in
#: legend order.
CURVE_COLOURS = {"completed": "#1f77b4", "stopped": "#ff7f0e", "paused": "#9467bd", "failed": FAILED_COLOUR,
                 "running": "#2ca02c", "abandoned": "#999999"}  # fmt: skip
#: Above this many curves, each outcome's curves are one trace (separated by gaps), so a
#: large run's page stays light; below it, one trace per trial.
MAX_CURVE_TRACES = 300


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _layout(fig: go.Figure, title: str, height: int = 420, top: int = 60) -> go.Figure:
    """Title, size and a light style (the empty template: plotly's own templates add ~7 kB of
    JSON to every figure)."""
    fig.update_layout(title=title, height=height, template="none", margin={"l": 70, "r": 30, "t": top, "b": 50},
                      font={"family": "system-ui, sans-serif", "size": 12}, hovermode="closest")  # fmt: skip
    # automargin: long tick labels (parameter names on the importance bars) are not clipped
    fig.update_xaxes(showgrid=True, gridcolor="#eeeeee", zeroline=False, linecolor="#888888", automargin=True)
    fig.update_yaxes(showgrid=True, gridcolor="#eeeeee", zeroline=False, linecolor="#888888", automargin=True)
    return fig


def _rounded(values: Any, digits: int = 6) -> list[Any]:
    """``values`` to ``digits`` significant digits (the page carries every number as text)."""
    return [float(f"{v:.{digits}g}") if isinstance(v, float) and math.isfinite(v) else v for v in list(values)]


def history(data: ReportData) -> go.Figure:
    go = _go()
    frame, done = data.frame, data.completed
    step = "cumulative_cost" if data.cost_budget else "trial"
    xlabel = "cumulative cost" if data.cost_budget else "trial"
    fig = go.Figure()
    if data.multi_objective:
        fig.add_trace(go.Scatter(x=done[step], y=done["best_so_far"], mode="lines+markers", name="hypervolume",
                                 line={"shape": "hv"}))  # fmt: skip
        ylabel = "dominated hypervolume"
    else:
        name = data.objective_names[0]
        initial = done["generator"].str.startswith("sobol") | (done["generator"] == "default")
        for mask, label, colour in ((initial, "initial / random", "#999999"), (~initial, "BO", "#1f77b4")):
            part = done[mask]
            fig.add_trace(go.Scatter(x=_rounded(part[step]), y=_rounded(part[name]), mode="markers", name=label,
                                     marker={"color": colour, "size": 7}, customdata=part["trial"],
                                     hovertemplate="trial %{customdata}<br>%{y:.5g}<extra></extra>"))  # fmt: skip
        fig.add_trace(go.Scatter(x=done[step], y=done["best_so_far"], mode="lines", name="best so far",
                                 line={"shape": "hv", "color": "#d62728"}))  # fmt: skip
        if data.optimal_value is not None:
            fig.add_hline(y=data.optimal_value, line_dash="dash", line_color="black", annotation_text="optimum")
        ylabel = data.label(0)
    failed = frame[frame["status"] == "failed"]
    if len(failed):  # drawn at the worst value seen
        worst = done[data.objective_names[0]].max() if data.sign(0) < 0 else done[data.objective_names[0]].min()
        y = [worst if len(done) and not data.multi_objective else 0.0] * len(failed)
        fig.add_trace(go.Scatter(x=failed[step], y=y, mode="markers", name="failed",
                                 marker={"symbol": "x", "color": FAILED_COLOUR, "size": 9},
                                 text=failed["error"].astype(str),
                                 hovertemplate="failed: %{text}<extra></extra>"))  # fmt: skip
    fig.update_xaxes(title=xlabel)
    fig.update_yaxes(title=ylabel)
    title = "Optimization history" + (" (hypervolume of the feasible points)" if data.multi_objective else "")
    return _layout(fig, title)


def learning_curves(data: ReportData) -> go.Figure | None:
    if not data.curves:
        return None
    from dsbo.analysis.curves import outcome

    go = _go()
    fig = go.Figure()
    by_outcome: dict[str, list[dict[str, Any]]] = {}
    for curve in data.curves:
        by_outcome.setdefault(outcome(curve["status"]), []).append(curve)
    order = [o for o in CURVE_COLOURS if o in by_outcome] + sorted(set(by_outcome) - set(CURVE_COLOURS))
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
                y += _rounded(curve["values"])
                ids += [curve["trial"]] * len(curve["steps"])
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name, legendgroup=name, showlegend=k == 0,
                                     line={"color": colour, "width": 1.5}, opacity=0.8, customdata=ids,
                                     meta=None if merged else group[0]["trial"],
                                     hovertemplate=f"trial %{{customdata}} ({name})<br>step %{{x}}: %{{y:.5g}}<extra></extra>"))  # fmt: skip
    stopped = [c for c in data.curves if c["status"] == "stopped" and c["steps"]]
    if stopped:
        fig.add_trace(go.Scatter(x=[c["steps"][-1] for c in stopped], y=_rounded([c["values"][-1] for c in stopped]),
                                 mode="markers", name="stopped here", legendgroup="stopped",
                                 marker={"symbol": "x", "color": CURVE_COLOURS["stopped"], "size": 9},
                                 customdata=[c["trial"] for c in stopped], text=[str(c.get("reason") or "") for c in stopped],
                                 hovertemplate="trial %{customdata} stopped at step %{x}: %{y:.5g}<br>%{text}<extra></extra>"))  # fmt: skip
    if data.max_steps is not None:
        fig.add_vline(x=data.max_steps, line_dash="dot", line_color="#888888", annotation_text="max_steps")
    fig.update_xaxes(title="step")
    fig.update_yaxes(title=data.label(0))
    title = f"Learning curves: {len(data.curves)} trial(s), {len(stopped)} stopped early"
    return _layout(fig, title)


def steps_vs_best(data: ReportData) -> go.Figure | None:
    if not data.curves or data.frame.empty:
        return None
    from dsbo.analysis.curves import last_steps

    go = _go()
    frame = data.frame
    last = last_steps(data.curves)
    full = data.max_steps
    # what each trial spent: its last step; a completed trial that reported nothing ran in full
    spent = [last.get(t, full if full is not None and s == "completed" else 0)
             for t, s in zip(frame["trial"], frame["status"], strict=True)]  # fmt: skip
    cumulative = list(itertools.accumulate(spent))
    best = _rounded(frame["best_so_far"].tolist())
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=cumulative, y=best, mode="lines+markers", name="steps spent",
                             line={"shape": "hv", "color": "#d62728"}, marker={"size": 5}, customdata=frame["trial"],
                             hovertemplate="after trial %{customdata}: %{x} steps<br>best %{y:.5g}<extra></extra>"))  # fmt: skip
    if full is not None:
        ended = [0 if s in ("pending",) else full for s in frame["status"]]
        fig.add_trace(go.Scatter(x=list(itertools.accumulate(ended)), y=best, mode="lines", name=f"every trial to {full} steps",
                                 line={"shape": "hv", "color": "#999999", "dash": "dash"}, customdata=frame["trial"],
                                 hovertemplate="after trial %{customdata}: %{x} steps<extra></extra>"))  # fmt: skip
    fig.update_xaxes(title="cumulative steps")
    fig.update_yaxes(title="dominated hypervolume" if data.multi_objective else f"best {data.label(0)}")
    return _layout(fig, "Steps spent vs best value (of the fully trained trials)", height=340)


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
        values = [_choice_index(p.values, v) if not missing else -1 for v, missing in zip(column, inactive, strict=True)]
        ticks, text = list(range(len(labels))), labels
        low, high = 0, len(labels) - 1
    else:
        log = isinstance(p, Float | Int) and p.log
        transform = (lambda v: math.log10(v)) if log else float  # noqa: E731
        low, high = transform(p.low), transform(p.high)
        values = [transform(v) if not missing else math.nan for v, missing in zip(column, inactive, strict=True)]
        ticks = [low + (high - low) * i / 4 for i in range(5)]
        text = [f"{10**t:.3g}" if log else f"{t:.3g}" for t in ticks]
    if inactive.any():
        below = low - 0.1 * max(high - low, 1)
        values = [below if missing else v for v, missing in zip(values, inactive, strict=True)]
        ticks, text, low = [below, *ticks], [INACTIVE, *text], below
    return {"label": name, "values": _rounded(values), "tickvals": ticks, "ticktext": text, "range": [low, high]}


def parallel_coordinates(data: ReportData) -> go.Figure | None:
    go = _go()
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
    maximized = data.sign(0) > 0  # the axis runs from the failed tick (bottom) to the best value (top)
    worse, best = (low - 0.08 * span, high) if maximized else (high + 0.08 * span, low)
    shown = values.where(~failed, worse)
    ticks, text = [low, (low + high) / 2, high], [f"{low:.4g}", f"{(low + high) / 2:.4g}", f"{high:.4g}"]
    if failed.any():  # the "failed" tick only when a trial failed
        ticks, text = [worse, *ticks], ["failed", *text]
    dimensions.append({"label": data.label(0), "values": _rounded(shown.tolist()), "range": [worse, best],
                       "tickvals": ticks, "ticktext": text})  # fmt: skip
    # colour: the objective scaled to [0.1, 1], best brightest; failed trials at 0, drawn grey
    colour = (((shown - low) if maximized else (high - shown)) / span * 0.9 + 0.1).where(~failed, 0.0)
    scale = [[0.0, "#bbbbbb"], [0.05, "#bbbbbb"], [0.1, "#440154"], [0.55, "#21918c"], [1.0, "#fde725"]]
    fig = go.Figure(go.Parcoords(line={"color": _rounded(colour.tolist(), 3), "colorscale": scale, "cmin": 0.0, "cmax": 1.0},
                                 dimensions=dimensions))  # fmt: skip
    title = f"Parallel coordinates: {len(frame)} trials (colour: {objective}; failed trials grey)"
    return _layout(fig, title, height=500, top=120)


def importance(data: ReportData) -> go.Figure | None:
    if not data.importance:
        return None
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(rows=1, cols=len(data.importance), subplot_titles=[i.outcome for i in data.importance])
    for col, item in enumerate(data.importance, start=1):
        names = list(item.scores)[::-1]
        fig.add_trace(go.Bar(x=[item.scores[n] for n in names], y=names, orientation="h", showlegend=False,
                             marker_color="#1f77b4"), row=1, col=col)  # fmt: skip
        fig.update_xaxes(title="share of importance", row=1, col=col)
    methods = sorted({i.method for i in data.importance})
    height = max(300, 22 * len(data.space.searched) + 120)
    return _layout(fig, f"Parameter importance ({', '.join(methods)} of the {data.surrogate} surrogate)", height)


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
    if not data.slices:
        return None
    from plotly.subplots import make_subplots

    go = _go()
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
            fig.add_trace(go.Scatter(x=x, y=s.mean, mode="markers", showlegend=False, marker={"color": "#1f77b4"},
                                     error_y={"type": "data", "array": [2 * sd for sd in s.sd]}),
                          row=row, col=col)  # fmt: skip
        else:
            fig.add_trace(go.Scatter(x=x + x[::-1], y=upper + lower[::-1], fill="toself", mode="lines", line={"width": 0},
                                     fillcolor="rgba(31,119,180,0.2)", showlegend=False, hoverinfo="skip"),
                          row=row, col=col)  # fmt: skip
            fig.add_trace(go.Scatter(x=x, y=s.mean, mode="lines", showlegend=False, line={"color": "#1f77b4"}),
                          row=row, col=col)  # fmt: skip
        at = str(s.at) if s.categorical else s.at
        fig.add_trace(go.Scatter(x=[at], y=[_mean_at(s)],
                                 mode="markers", marker={"color": "#d62728", "size": 10, "symbol": "star"},
                                 showlegend=False, name="best trial"), row=row, col=col)  # fmt: skip
        if s.log:
            fig.update_xaxes(type="log", row=row, col=col)
    title = f"Slices through the best trial: {data.surrogate} mean +- 2 sd of {data.objective_names[0]}"
    return _layout(fig, title, height=300 * rows + 80)


def _non_dominated(points: list[list[float]]) -> list[bool]:
    """Whether each point (maximized in every coordinate: signed by the caller) is on the
    observed Pareto front."""
    return [
        not any(all(q[k] >= p[k] for k in range(len(p))) and q != p for q in points)
        for p in points
    ]


def pareto_front(data: ReportData) -> go.Figure | None:
    if not data.multi_objective:
        return None
    go = _go()
    o1, o2 = data.objective_names[:2]
    done = data.completed
    points = done[[o1, o2]].to_numpy().tolist()
    front = _non_dominated([[data.sign(0) * a, data.sign(1) * b] for a, b in points])
    fig = go.Figure()
    for box in data.preference_boxes:
        (x0, x1), (y0, y1) = box[0], box[1]
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=y0, y1=y1, line={"color": "#2ca02c", "dash": "dot"},
                      fillcolor="rgba(44,160,44,0.12)")  # fmt: skip
    if data.preference_boxes:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="preference region (weight prior)",
                                 marker={"symbol": "square", "color": "rgba(44,160,44,0.4)"}))  # fmt: skip
    dominated = [not f for f in front]
    fig.add_trace(go.Scatter(x=done[o1][dominated], y=done[o2][dominated], mode="markers", name="dominated",
                             marker={"color": "#bbbbbb", "size": 7}, customdata=done["trial"][dominated],
                             hovertemplate="trial %{customdata}<extra></extra>"))  # fmt: skip
    on_front = done[front].sort_values(o1)
    fig.add_trace(go.Scatter(x=on_front[o1], y=on_front[o2], mode="lines+markers", name="observed Pareto front",
                             line={"shape": "vh", "color": "#d62728"}, marker={"size": 9},
                             customdata=on_front["trial"], hovertemplate="trial %{customdata}<extra></extra>"))  # fmt: skip
    fig.update_xaxes(title=data.label(0))
    fig.update_yaxes(title=data.label(1))
    return _layout(fig, f"Pareto front: {sum(front)} of {len(points)} completed trials non-dominated", 480)


def sparsity(data: ReportData) -> go.Figure | None:
    if not data.sparsity or data.multi_objective:
        return None
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"parameters changed from the {data.changes_from}",
                                                        "best value with at most k changes"])  # fmt: skip
    frame = data.frame
    fig.add_trace(go.Bar(x=frame["trial"], y=frame["num_changed"].fillna(0), marker_color="#2ca02c",
                         showlegend=False), row=1, col=1)  # fmt: skip
    if data.num_relevant:
        fig.add_hline(y=data.num_relevant, line_dash="dash", annotation_text="relevant", row=1, col=1)
    done = data.completed
    name = data.objective_names[0]
    fig.add_trace(go.Scatter(x=done["num_changed"], y=done[name], mode="markers", showlegend=False,
                             marker={"color": done["trial"], "colorscale": "Viridis", "size": 7},
                             customdata=done["trial"], hovertemplate="trial %{customdata}<extra></extra>"),
                  row=1, col=2)  # fmt: skip
    if data.value_vs_changes:
        ks = [p["changed"] for p in data.value_vs_changes] + [len(data.space.searched)]
        values = [p["best_value"] for p in data.value_vs_changes]
        fig.add_trace(go.Scatter(x=ks, y=values + values[-1:], mode="lines", line={"shape": "hv", "color": "#d62728"},
                                 name="best with <= k changes"), row=1, col=2)  # fmt: skip
    fig.update_xaxes(title="trial", row=1, col=1)
    fig.update_xaxes(title="parameters changed", row=1, col=2)
    fig.update_yaxes(title=name, row=1, col=2)
    return _layout(fig, "Sparsity: how many parameters each trial changes")


ROLES = {"ignored": 0, "observed": 1, "optimized": 2}


def contexts(data: ReportData) -> go.Figure | None:
    if not data.context_names:
        return None
    from plotly.subplots import make_subplots

    go = _go()
    frame = data.frame
    roles = [[ROLES["optimized"] if c in str(o).split() else ROLES["observed"] if c in str(b).split() else 0
              for c in data.context_names] for o, b in zip(frame["optimized"], frame["observed"], strict=True)]  # fmt: skip
    fig = make_subplots(rows=1, cols=2, subplot_titles=["context roles per trial", "cost ledger"],
                        specs=[[{}, {"secondary_y": True}]])
    scale = [[0, "#ffffff"], [0.33, "#ffffff"], [0.34, "#1f77b4"], [0.66, "#1f77b4"], [0.67, "#d62728"], [1, "#d62728"]]
    fig.add_trace(go.Heatmap(z=[list(r) for r in zip(*roles, strict=True)], x=frame["trial"], y=data.context_names,
                             colorscale=scale, zmin=0, zmax=2, xgap=1, ygap=1,
                             colorbar={"tickvals": [1 / 3, 1, 5 / 3], "ticktext": list(ROLES), "x": 0.45}),
                  row=1, col=1)  # fmt: skip
    fig.add_trace(go.Bar(x=frame["trial"], y=frame["cost"], name="cost of the trial", marker_color="#ff7f0e"),
                  row=1, col=2)  # fmt: skip
    fig.add_trace(go.Scatter(x=frame["trial"], y=frame["cumulative_cost"], name="cumulative cost",
                             line={"color": "#2ca02c"}), row=1, col=2, secondary_y=True)  # fmt: skip
    fig.update_xaxes(title="trial")
    return _layout(fig, "Contexts: which were optimized (paid), observed or ignored, and what was paid", 460)
