"""What a campaign leaves: its result, the best-so-far trace, and the history table.

:func:`best_so_far` is the running best feasible objective (single objective) or the dominated
hypervolume of the feasible points (multi-objective); :func:`history_frame` lays the trials out
as a table (one row per trial: parameters, outcomes, status, timings, cost, the last step a
trial reported, best so far), the content of a run's ``history.csv``.

A trial stopped early (status ``stopped``, :mod:`dsbo.campaign.early_stopping`) is a row like
any other: its objective column holds its last reported value (the user's direction) and
``error`` the rule's reason; but a partially trained value is not comparable with a finished
one, so it never counts towards ``best_so_far`` (nor does a failed or pending trial).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from dsbo.acquisition.sparsity import changed_mask
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.storage import Trial

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class CampaignResult:
    """Summary of a finished (or interrupted) campaign."""

    best_value: float | None
    best_x: list[float] | None
    num_completed: int
    num_failed: int
    num_changed_best: int | None
    history: pd.DataFrame
    #: What ``num_changed`` counts changes from: ``"acquisition target"`` (SEBO/IR/ER's
    #: ``target``), ``"postprocess default"`` (BONSAI's explicit ``default``) or
    #: ``"problem default"``.
    changes_from: str = "problem default"
    #: The best point's changed parameters: ``{"parameter", "from", "to"}`` each.
    changes_best: list[dict[str, Any]] | None = None
    #: The cost ledger: summed cost of every trial (abandoned ones were paid for too).
    cost_used: float = 0.0
    #: What each trial was charged (:data:`~dsbo.campaign.ledger.COST_SOURCES`): ``"design
    #: cost"``, ``"cost function"``, ``"design and context costs"`` or ``"measured seconds"``.
    cost_source: str = "design cost"
    #: Multi-objective runs: the Bayes regret (utility, and regret where the problem knows
    #: its front) of the completed points (:func:`~dsbo.acquisition.scalarized.campaign_bayes_regret`).
    bayes_regret: dict[str, Any] | None = None
    #: The best point's named parameters in their own types (:meth:`Problem.params`).
    best_params: dict[str, Any] | None = None


def best_so_far(Y: Tensor, problem: Problem) -> Tensor:
    """Running best feasible objective (or dominated hypervolume) over completed outcomes.

    Infeasible points do not count; before the first feasible point the trace is ``NaN``.
    For multi-objective problems the trace is the hypervolume of the feasible points with
    respect to the problem's reference point (or the nadir of all points, if it has none).
    """
    m = problem.num_objectives
    feasible = problem.is_feasible(Y)
    if m == 1:
        values = torch.where(feasible, Y[:, 0], torch.tensor(-math.inf, dtype=Y.dtype))
        trace = torch.cummax(values, dim=0).values
        return torch.where(torch.isinf(trace), torch.tensor(math.nan, dtype=Y.dtype), trace)
    from botorch.utils.multi_objective.hypervolume import Hypervolume
    from botorch.utils.multi_objective.pareto import is_non_dominated

    ref = reference_point(Y, problem)
    hv = Hypervolume(ref)
    trace = []
    for i in range(1, Y.shape[0] + 1):
        pts = Y[:i, :m][feasible[:i]]
        pts = pts[(pts > hv.ref_point).all(dim=-1)]
        trace.append(hv.compute(pts[is_non_dominated(pts)]) if pts.shape[0] else 0.0)
    return torch.tensor(trace, dtype=Y.dtype)


def reference_point(Y: Tensor, problem: Problem) -> Tensor:
    """The hypervolume reference point of a multi-objective problem (maximization sense): the
    problem's (its objective thresholds), each coordinate it leaves open (NaN) at the worst
    observed value of that objective."""
    m = problem.num_objectives
    worst = Y[:, :m].min(0).values if Y.shape[0] else torch.zeros(m, dtype=Y.dtype)
    if problem.ref_point is None:
        return worst
    ref = torch.as_tensor(problem.ref_point, dtype=Y.dtype).clone()
    return torch.where(torch.isnan(ref), worst, ref)


#: The history's own columns that the summaries and plots read: a parameter or outcome may
#: not take these names (:func:`check_column_names`).
CORE_COLUMNS = ("trial", "status", "generator", "num_changed", "cumulative_cost", "best_so_far")


def check_column_names(problem: Problem) -> None:
    """ConfigError for a parameter or outcome named like one of :data:`CORE_COLUMNS`."""
    for kind, names in (
        ("parameters", problem.space.names),
        ("outcomes", problem.outcomes.metrics),
    ):
        for name in names:
            if name in CORE_COLUMNS:
                raise ConfigError(
                    f"{kind}.{name}: {name!r} is a column of the run's history ({', '.join(CORE_COLUMNS)}); "
                    "rename it"
                )


def own_column(problem: Problem, name: str) -> str:
    """The history's name of a column of the trial's own (``batch``, ``cost``, ``error``,
    ``steps``, the times): ``trial_<name>`` where a parameter or outcome takes ``name``."""
    return (
        f"trial_{name}" if name in problem.space.names or name in problem.outcomes.metrics else name
    )


def add_steps(
    frame: pd.DataFrame, curves: Mapping[int, Sequence[tuple[int, float]]], problem: Problem
) -> pd.DataFrame:
    """``frame`` (:func:`history_frame`) with the column ``steps`` (:func:`own_column`) after
    ``cost``: the last step each trial reported (``NaN`` for a trial that reported nothing),
    when any trial in it reported (``curves``: :meth:`Store.curves <dsbo.storage.base.Store.curves>`);
    otherwise, or when the column is there already, ``frame`` as it is."""
    name = own_column(problem, "steps")
    if frame.empty or name in frame.columns:
        return frame
    last = {int(i): float(points[-1][0]) for i, points in curves.items() if points}
    if not any(int(t) in last for t in frame["trial"]):
        return frame
    frame = frame.copy()
    at = list(frame.columns).index(own_column(problem, "cost")) + 1
    frame.insert(at, name, [last.get(int(t), math.nan) for t in frame["trial"]])
    return frame


def history_frame(
    trials: Sequence[Trial],
    problem: Problem,
    curves: Mapping[int, Sequence[tuple[int, float]]] | None = None,
) -> pd.DataFrame:
    """The trials as a DataFrame: one row per trial, a column per named parameter holding its
    user value (empty where a conditional parameter was inactive), then the outcomes as the
    user named and reported them (:meth:`~dsbo.space.Outcomes.to_user`: a minimized loss as
    the loss, ``memory`` for ``"memory <= 8"``; a stopped trial's last reported value), and
    ``best_so_far``: the best feasible objective of the completed trials in the user's sense
    (lower is better when minimizing), or the hypervolume of their feasible points
    (multi-objective, :func:`best_so_far`). With ``curves`` (the store's, :meth:`Store.curves
    <dsbo.storage.base.Store.curves>`) in which any of the trials reported, a column ``steps``
    follows ``cost`` (:func:`add_steps`). A column of the trial's own (``batch``, ``cost``,
    ``error``, ``steps``, the times) whose name a parameter or outcome takes is named
    ``trial_<name>`` instead (a sweep over ``batch``)."""
    outcomes = problem.outcomes

    def own(name: str) -> str:
        return own_column(problem, name)

    rows = []
    for t in trials:
        row: dict[str, Any] = {
            "trial": t.id,
            own("batch"): t.batch,
            "generator": t.generator,
            "status": t.status,
        }
        row.update(problem.params(t.x))
        row.update(
            outcomes.to_user(t.y) if t.y is not None else dict.fromkeys(outcomes.metrics, math.nan)
        )
        row.update(
            {
                "num_changed": t.metadata.get("num_changed"),
                own("fit_time"): t.fit_time,
                own("acq_time"): t.acq_time,
                own("eval_time"): t.eval_time,
                own("error"): t.error,
                own("cost"): t.cost,
            }
        )
        if problem.is_contextual:
            roles = t.metadata.get("contexts", {})
            row[own("optimized")] = " ".join(n for n, r in roles.items() if r == "optimized")
            row[own("observed")] = " ".join(n for n, r in roles.items() if r == "observed")
            row[own("phase")] = t.metadata.get("phase", "")
        rows.append(row)
    columns = [
        "trial",
        own("batch"),
        "generator",
        "status",
        *problem.space.names,
        *outcomes.metrics,
        "num_changed",
        *map(own, ("fit_time", "acq_time", "eval_time", "error", "cost")),
        *(map(own, ("optimized", "observed", "phase")) if problem.is_contextual else []),
    ]
    import pandas as pd  # here: a campaign that never asks for its history needs no pandas

    frame = pd.DataFrame(rows, columns=columns)
    if curves:
        frame = add_steps(frame, curves, problem)
    frame["cumulative_cost"] = frame[own("cost")].cumsum()  # abandoned trials were paid for too
    if frame.empty:
        frame["best_so_far"] = pd.Series(dtype=float)
        return frame
    done = frame["status"] == "completed"  # not a stopped trial's partially trained value
    frame["best_so_far"] = math.nan
    if done.any():
        Y = torch.tensor([t.y for t in trials if t.status == "completed"], dtype=torch.double)
        trace = best_so_far(Y, problem)
        sign = 1.0 if problem.is_multi_objective else outcomes.signs[0]
        frame.loc[done, "best_so_far"] = (sign * trace).numpy() + 0.0
        frame["best_so_far"] = frame["best_so_far"].ffill()
    return frame


def best_trial(trials: Sequence[Trial], problem: Problem) -> tuple[float | None, Trial | None]:
    """The best feasible objective among completed ``trials`` and its trial (single
    objective), or the dominated hypervolume and ``None`` (multi-objective)."""
    if not trials:
        return None, None
    Y = torch.tensor([t.y for t in trials], dtype=torch.double)
    trace = best_so_far(Y, problem)
    if problem.is_multi_objective:
        return float(trace[-1]), None
    feasible = problem.is_feasible(Y)
    if not feasible.any():
        return None, None
    values = torch.where(feasible, Y[:, 0], torch.tensor(-math.inf, dtype=torch.double))
    i = int(values.argmax())
    return float(values[i]), trials[i]


def pareto_trials(trials: Sequence[Trial], problem: Problem) -> list[Trial]:
    """The completed, feasible ``trials`` no other one dominates in every objective (the
    observed Pareto front; single objective: the trials tied at the best value)."""
    from botorch.utils.multi_objective.pareto import is_non_dominated

    done = [t for t in trials if t.status == "completed" and t.y is not None]
    if not done:
        return []
    Y = torch.tensor([t.y for t in done], dtype=torch.double)
    feasible = problem.is_feasible(Y)
    done = [t for t, ok in zip(done, feasible.tolist(), strict=True) if ok]
    if not done:
        return []
    front = is_non_dominated(Y[feasible][:, : problem.num_objectives], deduplicate=False)
    return [t for t, keep in zip(done, front.tolist(), strict=True) if keep]


def changed_parameters(
    x: Sequence[float], reference: Tensor, problem: Problem, tol: float
) -> list[dict[str, Any]]:
    """The parameters of ``x`` that differ from ``reference`` (a column by more than ``tol`` of
    its range; a categorical when its value differs), as ``{"parameter", "from", "to"}`` in
    user values (``None`` where a conditional parameter is inactive)."""
    X = torch.as_tensor(x, dtype=torch.double).unsqueeze(0)
    mask = changed_mask(X, reference, problem.bounds, tol)[0]
    before, after = problem.params(reference), problem.params(X[0])
    space = problem.space
    return [
        {"parameter": name, "from": before.get(name), "to": after.get(name)}
        for name, columns in zip(space.searched, space.groups, strict=True)
        if bool(mask[columns].any())
    ]


def sparsity_reference(policy: Any, problem: Problem) -> tuple[str, Tensor]:
    """What changed parameters are counted from: the policy's sparsity target, else a
    post-processor's explicit default (a point, or ``{name: value}``), else the problem's
    default point; returns its name (``changes_from``) and the point."""
    target = getattr(policy, "sparsity_target", None)
    if target is not None:
        return "acquisition target", target(problem).to(torch.double)
    default = getattr(getattr(policy, "postprocessor", None), "default", None)
    if isinstance(default, Tensor):
        return "postprocess default", default.to(torch.double)
    if isinstance(default, Mapping):  # BONSAI's default by name, in user values
        point = problem.space.default(default, where="postprocess.bonsai.default")
        return "postprocess default", torch.tensor(point, dtype=torch.double)
    return "problem default", problem.default_point.to(torch.double)


def trailing_failures(trials: Sequence[Trial]) -> int:
    """How many of the finished ``trials`` (in order) failed in a row at the end: a run stops
    after ``max_consecutive_failures`` of them."""
    count = 0
    for trial in reversed(trials):
        if trial.status != "failed":
            break
        count += 1
    return count
