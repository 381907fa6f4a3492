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

This module draws the history and gathers the others, which live by what they show:
:mod:`dsbo.analysis.report_curves` (learning curves, steps), :mod:`dsbo.analysis.report_parallel`
(parallel coordinates), :mod:`dsbo.analysis.report_model_panels` (importance, slices) and
:mod:`dsbo.analysis.report_method_panels` (Pareto front, sparsity, contexts), all in the style
of :mod:`dsbo.analysis.report_style`; :data:`FIGURE_MODULES` lists them, the code the drawn
page depends on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsbo.analysis import (
    report_curves,
    report_method_panels,
    report_model_panels,
    report_parallel,
    report_style,
)
from dsbo.analysis.report_curves import (
    CURVE_COLOURS,
    MAX_CURVE_TRACES,
    learning_curves,
    steps_vs_best,
)
from dsbo.analysis.report_method_panels import ROLES, contexts, pareto_front, sparsity
from dsbo.analysis.report_model_panels import MAX_SLICES, importance, slices
from dsbo.analysis.report_parallel import INACTIVE, parallel_coordinates
from dsbo.analysis.report_style import FAILED_COLOUR, apply_layout, plotly_go, rounded

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from dsbo.analysis.report_data import ReportData

#: The modules that draw the report's panels besides this one: with it, what the drawn page
#: depends on besides the data and plotly.
FIGURE_MODULES = (
    report_style,
    report_curves,
    report_parallel,
    report_model_panels,
    report_method_panels,
)

__all__ = [
    "CURVE_COLOURS",
    "FAILED_COLOUR",
    "FIGURE_MODULES",
    "INACTIVE",
    "MAX_CURVE_TRACES",
    "MAX_SLICES",
    "ROLES",
    "contexts",
    "history",
    "importance",
    "learning_curves",
    "parallel_coordinates",
    "pareto_front",
    "slices",
    "sparsity",
    "steps_vs_best",
]


def history(data: ReportData) -> go.Figure:
    """Every trial's value and the best so far (the hypervolume for several objectives),
    against the cumulative cost when the budget is in cost units; failed trials marked at the
    worst value seen."""
    go = plotly_go()
    frame, done = data.frame, data.completed
    step = "cumulative_cost" if data.cost_budget else "trial"
    xlabel = "cumulative cost" if data.cost_budget else "trial"
    fig = go.Figure()
    if data.multi_objective:
        fig.add_trace(
            go.Scatter(
                x=done[step],
                y=done["best_so_far"],
                mode="lines+markers",
                name="hypervolume",
                line={"shape": "hv"},
            )
        )
        ylabel = "dominated hypervolume"
    else:
        name = data.objective_names[0]
        initial = done["generator"].str.startswith("sobol") | (done["generator"] == "default")
        for mask, label, colour in (
            (initial, "initial / random", "#999999"),
            (~initial, "BO", "#1f77b4"),
        ):
            part = done[mask]
            fig.add_trace(
                go.Scatter(
                    x=rounded(part[step]),
                    y=rounded(part[name]),
                    mode="markers",
                    name=label,
                    marker={"color": colour, "size": 7},
                    customdata=part["trial"],
                    hovertemplate="trial %{customdata}<br>%{y:.5g}<extra></extra>",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=done[step],
                y=done["best_so_far"],
                mode="lines",
                name="best so far",
                line={"shape": "hv", "color": "#d62728"},
            )
        )
        if data.optimal_value is not None:
            fig.add_hline(
                y=data.optimal_value,
                line_dash="dash",
                line_color="black",
                annotation_text="optimum",
            )
        ylabel = data.label(0)
    failed = frame[frame["status"] == "failed"]
    if len(failed):  # drawn at the worst value seen
        worst = (
            done[data.objective_names[0]].max()
            if data.sign(0) < 0
            else done[data.objective_names[0]].min()
        )
        y = [worst if len(done) and not data.multi_objective else 0.0] * len(failed)
        fig.add_trace(
            go.Scatter(
                x=failed[step],
                y=y,
                mode="markers",
                name="failed",
                marker={"symbol": "x", "color": FAILED_COLOUR, "size": 9},
                text=failed["error"].astype(str),
                hovertemplate="failed: %{text}<extra></extra>",
            )
        )
    fig.update_xaxes(title=xlabel)
    fig.update_yaxes(title=ylabel)
    title = "Optimization history" + (
        " (hypervolume of the feasible points)" if data.multi_objective else ""
    )
    return apply_layout(fig, title)
