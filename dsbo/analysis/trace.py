"""``trace.png``: a run's history at a glance, as a static image (the HTML report,
:mod:`dsbo.analysis.html_report`, is the interactive view).

A single-objective run shows the objective of every completed trial with the best feasible
value so far; a sparsity-aware run (SEBO, IR/ER, BONSAI) adds the number of parameters each
trial changes from the default and the objective-vs-sparsity Pareto front (every completed
trial against its number of changed parameters, with the best value reachable with at most
``k`` changes). A multi-objective run shows the hypervolume so far and the observed outcomes
in objective space. A contextual run (:mod:`dsbo.contexts`) shows the objective, the regret
(or best value) against the cumulative cost, and each context's role per trial (optimized,
observed or ignored). A cost-budgeted run plots against the cumulative cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.analysis.summary import value_vs_changes

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from dsbo.problems.base import Problem


def pyplot_agg() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend, imported on first use (the
    module imports no matplotlib, so a command that only summarizes never loads it)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def plot_trace(
    frame: pd.DataFrame,
    problem: Problem,
    path: str | Path,
    sparsity: bool = False,
    cost_axis: bool = False,
) -> Path:
    """Write the trace plot of a run's history to ``path`` (PNG) and return the path.

    ``sparsity`` adds the changed-parameters panels (runs of a sparsity-aware method);
    ``cost_axis`` plots against the cumulative cost (a budget in cost units) instead of the
    trial index.
    """
    path = Path(path)
    if problem.is_contextual:
        return plot_contextual_trace(frame, problem, path)
    plt = pyplot_agg()
    done = frame[frame["status"] == "completed"] if not frame.empty else frame
    single = not problem.is_multi_objective
    panels = 3 if single and sparsity else 1 if single else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False)
    axes = axes[0]
    ax = axes[0]
    step = "cumulative_cost" if cost_axis else "trial"
    if problem.is_multi_objective:
        ax.plot(done[step], done["best_so_far"], color="C3", drawstyle="steps-post")
        ax.set_ylabel("dominated hypervolume")
        ax.set_title(f"{problem.name}: hypervolume")
        front = axes[1]
        o1, o2 = problem.outcomes.objective_names[:2]
        front.scatter(done[o1], done[o2], s=14, c=done["trial"], cmap="viridis")
        front.set_xlabel(o1)
        front.set_ylabel(o2)
        front.set_title("observed outcomes (colour: trial)")
    else:
        name = problem.outcomes.objective_names[0]
        init = done["generator"].str.startswith("sobol") | (done["generator"] == "default")
        ax.scatter(
            done.loc[init, step], done.loc[init, name], s=14, c="0.6", label="initial / random"
        )
        ax.scatter(done.loc[~init, step], done.loc[~init, name], s=14, c="C0", label="BO")
        ax.plot(
            done[step], done["best_so_far"], color="C3", drawstyle="steps-post", label="best so far"
        )
        if problem.optimal_value is not None:
            ax.axhline(problem.optimal_value, color="k", ls="--", lw=0.8, label="optimum")
        ax.set_ylabel(name)
        ax.set_title(f"{problem.name}: {problem.outcomes.label(0)}")
        ax.legend(fontsize=8)
        if sparsity:
            changed = axes[1]
            changed.bar(frame["trial"], frame["num_changed"].fillna(0), color="C2")
            changed.axhline(
                len(problem.relevant_dims), color="k", ls="--", lw=0.8, label="relevant dims"
            )
            changed.set_ylabel("parameters changed from default")
            changed.set_title("sparsity: changed if |x - default| >= 1e-3 of the range")
            changed.legend(fontsize=8)
            changed.set_xlabel("trial")
            plot_sparsity_front(axes[2], frame, problem)
    failed = frame[frame["status"] == "failed"] if not frame.empty else frame
    for position in failed[step]:
        ax.axvline(position, color="r", alpha=0.2, lw=1)
    ax.set_xlabel("cumulative cost" if cost_axis else "trial")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


ROLE_CODES = {"ignored": 0, "observed": 1, "optimized": 2}


def plot_contextual_trace(frame: pd.DataFrame, problem: Problem, path: Path) -> Path:
    """Objective per trial; regret (or best value) vs cumulative cost; context roles per trial."""
    import torch

    plt = pyplot_agg()
    from matplotlib.colors import ListedColormap

    done = frame[frame["status"] == "completed"] if not frame.empty else frame
    name = problem.outcomes.objective_names[0]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4), gridspec_kw={"width_ratios": [1, 1, 1.3]})
    bo = ~done["generator"].isin(("sobol-init", "sobol-fallback", "default"))
    axes[0].scatter(
        done.loc[~bo, "trial"],
        done.loc[~bo, name],
        s=14,
        c="0.6",
        label="initial (contexts observed)",
    )
    axes[0].scatter(done.loc[bo, "trial"], done.loc[bo, name], s=14, c="C0", label="BO")
    axes[0].plot(
        done["trial"], done["best_so_far"], color="C3", drawstyle="steps-post", label="best so far"
    )
    axes[0].set(xlabel="trial", ylabel=name, title=f"{problem.name}: {problem.outcomes.label(0)}")
    axes[0].legend(fontsize=8)
    if problem.optimal_value is not None:
        axes[1].plot(
            done["cumulative_cost"],
            problem.optimal_value - done["best_so_far"],
            drawstyle="steps-post",
        )
        axes[1].set(yscale="log", ylabel="optimum - best observed")
    else:
        axes[1].plot(done["cumulative_cost"], done["best_so_far"], drawstyle="steps-post")
        axes[1].set(ylabel="best observed")
    axes[1].set(xlabel="cumulative cost", title="regret vs cost paid")
    roles = [[ROLE_CODES[role] for role in row.split()] for row in _role_rows(frame, problem)]
    if roles:
        extent = (
            frame["trial"].min() - 0.5,
            frame["trial"].max() + 0.5,
            len(problem.contexts) - 0.5,
            -0.5,
        )
        image = axes[2].imshow(
            torch.tensor(roles).T.numpy(),
            aspect="auto",
            interpolation="nearest",
            extent=extent,
            cmap=ListedColormap(["white", "C0", "C3"]),
            vmin=0,
            vmax=2,
        )
        colorbar = plt.colorbar(image, ax=axes[2], ticks=[1 / 3, 1, 5 / 3])
        colorbar.ax.set_yticklabels(list(ROLE_CODES))
    axes[2].set_yticks(range(len(problem.context_names)), problem.context_names)
    axes[2].set(xlabel="trial", title="context roles per trial")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _role_rows(frame: pd.DataFrame, problem: Problem) -> list[str]:
    """One space-separated role per context for every trial (in trial order)."""
    rows = []
    for _, row in frame.iterrows():
        optimized, observed = set(str(row["optimized"]).split()), set(str(row["observed"]).split())
        rows.append(
            " ".join(
                "optimized" if n in optimized else "observed" if n in observed else "ignored"
                for n in problem.context_names
            )
        )
    return rows


def plot_sparsity_front(ax: Axes, frame: pd.DataFrame, problem: Problem) -> None:
    """Objective vs number of changed parameters, with the value-vs-changes Pareto front."""
    plt = pyplot_agg()
    name = problem.outcomes.objective_names[0]
    done = frame[frame["status"] == "completed"] if not frame.empty else frame
    points = ax.scatter(done["num_changed"], done[name], s=14, c=done["trial"], cmap="viridis")
    front = value_vs_changes(frame, problem)
    if front:
        ks = [p["changed"] for p in front] + [problem.dim]
        values = [p["best_value"] for p in front]
        ax.step(ks, values + values[-1:], where="post", color="C3", label="Pareto front")
        ax.legend(fontsize=8)
    if problem.optimal_value is not None:
        ax.axhline(problem.optimal_value, color="k", ls="--", lw=0.8)
    if len(done):
        plt.colorbar(points, ax=ax, label="trial")
    ax.set_xlabel("parameters changed from default")
    ax.set_ylabel(name)
    ax.set_title("objective vs sparsity (best with <= k changes)")
