"""The numbers a run leaves: ``summary.json``'s content.

:func:`summary` is what the CLIs print and write; :func:`value_vs_changes` is the best value
reachable with at most ``k`` changed parameters (the front SEBO and BONSAI trade along);
:func:`timing_summary` splits a BO iteration's seconds into fit / acquisition / other;
:func:`context_summary` lists a contextual run's context roles; :func:`steps_summary` counts
the steps of a run whose trials reported learning curves (early stopping, issue 42).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from dsbo.problems.base import Problem


def context_summary(frame: pd.DataFrame, problem: Problem) -> dict[str, Any] | None:
    """For a contextual run: each context's inclusion frequency (share of BO iterations whose
    surrogate kept it, observed or optimized), the last BO iteration's roles and the trial at
    which the phase switched to optimization (``None`` if it never did)."""
    if not problem.is_contextual or frame.empty:
        return None
    bo = frame[~frame["generator"].isin(("sobol-init", "sobol-fallback", "default"))]
    inclusion = {}
    for name in problem.context_names:
        kept = [name in f"{row['optimized']} {row['observed']}".split() for _, row in bo.iterrows()]
        inclusion[name] = sum(kept) / len(kept) if kept else 0.0
    last = {}
    if len(bo):
        row = bo.iloc[-1]
        last = {
            n: "optimized"
            if n in str(row["optimized"]).split()
            else "observed"
            if n in str(row["observed"]).split()
            else "ignored"
            for n in problem.context_names
        }
    switched = bo[bo["phase"] == "optimization"]
    return {
        "inclusion": inclusion,
        "last_roles": last,
        "switch_trial": None if switched.empty else int(switched["trial"].iloc[0]),
    }


def timing_summary(frame: pd.DataFrame, timings: list[dict[str, float]]) -> dict[str, float]:
    """Mean seconds per BO iteration split into fit / acquisition / other.

    ``timings`` are the in-memory iteration timings of this process (:attr:`Campaign.timings`);
    a resumed run without them falls back on the stored per-batch times.
    """
    model_steps = [t for t in timings if t["fit"] > 0 or t["acquisition"] > 0]
    if model_steps:
        n = len(model_steps)
        fit = sum(t["fit"] for t in model_steps) / n
        acq = sum(t["acquisition"] for t in model_steps) / n
        total = sum(t["total"] for t in model_steps) / n
    else:
        bo = frame[frame["fit_time"] > 0] if not frame.empty else frame
        n = len(bo)
        if n == 0:
            return {"iterations": 0, "fit": math.nan, "acquisition": math.nan, "other": math.nan}
        fit, acq = bo["fit_time"].mean(), bo["acq_time"].mean()
        total = fit + acq + frame["eval_time"].fillna(0).sum() / max(len(frame), 1)
    return {"iterations": n, "fit": fit, "acquisition": acq, "other": max(total - fit - acq, 0.0)}


def value_vs_changes(frame: pd.DataFrame, problem: Problem) -> list[dict[str, float]]:
    """The value-vs-changes front: for each number of changed parameters ``k`` at which it
    improves, the best feasible objective (in the user's direction) among completed points
    changing at most ``k``.

    Empty for multi-objective problems (their front is in objective space).
    """
    if frame.empty or problem.is_multi_objective:
        return []
    done = frame[frame["status"] == "completed"]
    if done.empty:
        return []
    import torch

    outcomes = problem.outcomes
    Y = torch.tensor(
        [
            outcomes.to_stored(dict(zip(outcomes.metrics, row, strict=True)))
            for row in done[list(outcomes.metrics)].to_numpy().tolist()
        ],
        dtype=torch.double,
    )
    feasible = done[problem.is_feasible(Y).numpy()]
    sign = outcomes.signs[0]  # the front in the user's direction: lower is better when minimizing
    front: list[dict[str, float]] = []
    best = -math.inf
    for k in sorted(feasible["num_changed"].dropna().unique()):
        score = (
            feasible.loc[feasible["num_changed"] <= k, outcomes.objective_names[0]].mul(sign).max()
        )
        if score > best:  # compared in the maximization sense, reported in the user's
            best = score
            front.append({"changed": int(k), "best_value": float(sign * score)})
    return front


#: Trial statuses that never end: their steps so far are not what they will use.
_RUNNING = ("pending",)


def steps_summary(
    frame: pd.DataFrame, problem: Problem, max_steps: int | None = None
) -> dict[str, Any] | None:
    """The steps of a run whose trials reported intermediate values (``frame`` has the column
    ``steps``, :func:`~dsbo.campaign.history.add_steps`), ``None`` otherwise.

    Over the trials that reported and have ended (every status but ``pending``):
    ``num_stopped`` the trials stopped early, ``num_paused`` those paused by freeze-thaw, ``steps_used`` the sum of their last steps,
    ``steps_full`` what the same trials would have used trained to ``max_steps`` each
    (``n_trials * max_steps``; ``None`` without ``max_steps``), and ``steps_saved`` the
    difference (``None`` likewise)."""
    from dsbo.campaign.history import own_column

    name = own_column(problem, "steps")
    if frame.empty or name not in frame.columns:
        return None
    ended = frame[~frame["status"].isin(_RUNNING) & frame[name].notna()]
    used = int(ended[name].sum())  # steps are integers (NaN only where a trial reported nothing)
    full = None if max_steps is None else len(ended) * int(max_steps)
    return {
        "num_stopped": int((frame["status"] == "stopped").sum()),
        "num_paused": int((frame["status"] == "paused").sum()),
        "steps_used": used,
        "steps_full": full,
        "steps_saved": None if full is None else full - used,
    }


def summary(
    result: Any,
    problem: Problem,
    frame: pd.DataFrame,
    timings: list[dict[str, float]],
    max_steps: int | None = None,
) -> dict[str, Any]:
    """The numbers the CLI prints and writes to ``summary.json``, in the user's direction
    (``best_value``: lower is better for a minimized objective; ``objectives`` says which;
    a trial stopped early never counts as a finished result). When trials reported learning
    curves, :func:`steps_summary`'s entries follow (``max_steps``: a full trial's steps)."""
    times = timing_summary(frame, timings)
    info = {
        "problem": problem.name,
        "objectives": problem.outcomes.to_config()["objectives"],
        "best_value": result.best_value,
        "optimal_value": problem.optimal_value,
        "best_params": getattr(result, "best_params", None),
        "best_x": result.best_x,
        "num_changed_best": result.num_changed_best,
        "changes_from": getattr(result, "changes_from", "problem default"),
        "changes_best": getattr(result, "changes_best", None),
        "num_relevant_dims": len(problem.relevant_dims),
        "value_vs_changes": value_vs_changes(frame, problem),
        "dim": problem.dim,
        "num_parameters": len(problem.space.searched),
        "completed": result.num_completed,
        "failed": result.num_failed,
        "seconds_per_iteration": times,
        "cost_used": getattr(result, "cost_used", None),
        "cost_source": getattr(result, "cost_source", None),
        "bayes_regret": getattr(result, "bayes_regret", None),
        "contexts": context_summary(frame, problem),
    }
    info.update(steps_summary(frame, problem, max_steps) or {})
    return info
