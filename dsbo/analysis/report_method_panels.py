"""The report's panels of particular methods: Pareto fronts, sparsity and contexts.

- :func:`pareto_front`: several objectives (qLogNEHVI, MOBO-RS): the observed outcomes, the
  non-dominated ones highlighted as the observed Pareto front, MOBO-RS's preference region (its
  weight prior's boxes, :mod:`dsbo.acquisition.weight_priors`) drawn;
- :func:`sparsity`: sparsity-aware runs (SEBO, BONSAI): the parameters each trial changes from
  the default, and the best value with at most k changes;
- :func:`contexts`: contextual runs (SADCBO): each context's role per trial
  (:data:`ROLES`: optimized and paid, observed, ignored) and the cost ledger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsbo.analysis.report_style import apply_layout, plotly_go

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from dsbo.analysis.report_data import ReportData

#: A context's role in a trial, as the contexts panel's heatmap codes it.
ROLES = {"ignored": 0, "observed": 1, "optimized": 2}


def _non_dominated(points: list[list[float]]) -> list[bool]:
    """Whether each point (maximized in every coordinate: signed by the caller) is on the
    observed Pareto front."""
    return [
        not any(all(q[k] >= p[k] for k in range(len(p))) and q != p for q in points) for p in points
    ]


def pareto_front(data: ReportData) -> go.Figure | None:
    """The completed trials' first two objectives, the non-dominated ones joined as the
    observed front, MOBO-RS's preference boxes drawn; ``None`` for one objective."""
    if not data.multi_objective:
        return None
    go = plotly_go()
    o1, o2 = data.objective_names[:2]
    done = data.completed
    points = done[[o1, o2]].to_numpy().tolist()
    front = _non_dominated([[data.sign(0) * a, data.sign(1) * b] for a, b in points])
    fig = go.Figure()
    for box in data.preference_boxes:
        (x0, x1), (y0, y1) = box[0], box[1]
        fig.add_shape(
            type="rect",
            x0=x0,
            x1=x1,
            y0=y0,
            y1=y1,
            line={"color": "#2ca02c", "dash": "dot"},
            fillcolor="rgba(44,160,44,0.12)",
        )
    if data.preference_boxes:
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name="preference region (weight prior)",
                marker={"symbol": "square", "color": "rgba(44,160,44,0.4)"},
            )
        )
    dominated = [not f for f in front]
    fig.add_trace(
        go.Scatter(
            x=done[o1][dominated],
            y=done[o2][dominated],
            mode="markers",
            name="dominated",
            marker={"color": "#bbbbbb", "size": 7},
            customdata=done["trial"][dominated],
            hovertemplate="trial %{customdata}<extra></extra>",
        )
    )
    on_front = done[front].sort_values(o1)
    fig.add_trace(
        go.Scatter(
            x=on_front[o1],
            y=on_front[o2],
            mode="lines+markers",
            name="observed Pareto front",
            line={"shape": "vh", "color": "#d62728"},
            marker={"size": 9},
            customdata=on_front["trial"],
            hovertemplate="trial %{customdata}<extra></extra>",
        )
    )
    fig.update_xaxes(title=data.label(0))
    fig.update_yaxes(title=data.label(1))
    return apply_layout(
        fig, f"Pareto front: {sum(front)} of {len(points)} completed trials non-dominated", 480
    )


def sparsity(data: ReportData) -> go.Figure | None:
    """How many parameters each trial changes from the default, and the best value with at
    most k changes; ``None`` unless the run is sparsity-aware and single-objective."""
    if not data.sparsity or data.multi_objective:
        return None
    from plotly.subplots import make_subplots

    go = plotly_go()
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=[
            f"parameters changed from the {data.changes_from}",
            "best value with at most k changes",
        ],
    )
    frame = data.frame
    fig.add_trace(
        go.Bar(
            x=frame["trial"],
            y=frame["num_changed"].fillna(0),
            marker_color="#2ca02c",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    if data.num_relevant:
        fig.add_hline(
            y=data.num_relevant, line_dash="dash", annotation_text="relevant", row=1, col=1
        )
    done = data.completed
    name = data.objective_names[0]
    fig.add_trace(
        go.Scatter(
            x=done["num_changed"],
            y=done[name],
            mode="markers",
            showlegend=False,
            marker={"color": done["trial"], "colorscale": "Viridis", "size": 7},
            customdata=done["trial"],
            hovertemplate="trial %{customdata}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    if data.value_vs_changes:
        ks = [p["changed"] for p in data.value_vs_changes] + [len(data.space.searched)]
        values = [p["best_value"] for p in data.value_vs_changes]
        fig.add_trace(
            go.Scatter(
                x=ks,
                y=values + values[-1:],
                mode="lines",
                line={"shape": "hv", "color": "#d62728"},
                name="best with <= k changes",
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(title="trial", row=1, col=1)
    fig.update_xaxes(title="parameters changed", row=1, col=2)
    fig.update_yaxes(title=name, row=1, col=2)
    return apply_layout(fig, "Sparsity: how many parameters each trial changes")


def contexts(data: ReportData) -> go.Figure | None:
    """Each context's role per trial (optimized, observed, ignored) and the cost ledger;
    ``None`` unless the run is contextual."""
    if not data.context_names:
        return None
    from plotly.subplots import make_subplots

    go = plotly_go()
    frame = data.frame
    roles = [
        [
            ROLES["optimized"]
            if c in str(o).split()
            else ROLES["observed"]
            if c in str(b).split()
            else 0
            for c in data.context_names
        ]
        for o, b in zip(frame["optimized"], frame["observed"], strict=True)
    ]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["context roles per trial", "cost ledger"],
        specs=[[{}, {"secondary_y": True}]],
    )
    scale = [
        [0, "#ffffff"],
        [0.33, "#ffffff"],
        [0.34, "#1f77b4"],
        [0.66, "#1f77b4"],
        [0.67, "#d62728"],
        [1, "#d62728"],
    ]
    fig.add_trace(
        go.Heatmap(
            z=[list(r) for r in zip(*roles, strict=True)],
            x=frame["trial"],
            y=data.context_names,
            colorscale=scale,
            zmin=0,
            zmax=2,
            xgap=1,
            ygap=1,
            colorbar={"tickvals": [1 / 3, 1, 5 / 3], "ticktext": list(ROLES), "x": 0.45},
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(x=frame["trial"], y=frame["cost"], name="cost of the trial", marker_color="#ff7f0e"),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=frame["trial"],
            y=frame["cumulative_cost"],
            name="cumulative cost",
            line={"color": "#2ca02c"},
        ),
        row=1,
        col=2,
        secondary_y=True,
    )
    fig.update_xaxes(title="trial")
    return apply_layout(
        fig, "Contexts: which were optimized (paid), observed or ignored, and what was paid", 460
    )
