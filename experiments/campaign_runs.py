"""Shared machinery of the campaign reproductions (``bonsai.py``, ``sebo.py``).

- :func:`run_resumable` runs (problem, method, seed) campaigns in spawned worker processes
  and appends each finished one to ``runs.jsonl``, so an interrupted reproduction resumes;
- :func:`record_campaign` turns a finished campaign into the numbers the reports use;
- :func:`best_with_at_most`, :func:`plot_traces`, :func:`plot_best_vs_changes`: metrics and
  plots shared by the reports.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.acquisition.sparsity import is_duplicate, num_changed  # noqa: E402
from dsbo.campaign import Campaign, best_so_far  # noqa: E402
from dsbo.problems import Problem, get_problem  # noqa: E402

KEY_FIELDS = (
    "problem",
    "method",
    "seed",
    "budget",
    "n_init",
    "surrogate",
    "smoke",
    "evaluate_target",
)
#: Key fields that runs recorded before the field existed lack, and their value then.
KEY_DEFAULTS = {"evaluate_target": True, "beta": None}
INITIAL = ("default", "sobol-init")


def optimizer_settings(smoke: bool) -> OptimizerSettings:
    """Tiny settings for ``--smoke``; otherwise moderately reduced ones (stated in reports)."""
    if smoke:
        return OptimizerSettings(
            num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
        )
    return OptimizerSettings(
        num_restarts=8, raw_samples=256, maxiter=100, batch_limit=4, mc_samples=128
    )


def record_campaign(
    campaign: Campaign, problem: Problem, job: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """The per-run numbers: best-so-far trace, values, feasibility, changed parameters,
    how many BO proposals were new points, and the proposal times."""
    trials = campaign.store.trials("completed")
    X = torch.tensor([t.x for t in trials], dtype=torch.double)
    Y = torch.tensor([t.y for t in trials], dtype=torch.double)
    bo = [i for i, t in enumerate(trials) if t.generator not in INITIAL]
    # a BO proposal is a new point when no earlier trial is within 1e-6 on every coordinate
    new = sum(not bool(is_duplicate(X[i : i + 1], X[:i], problem.bounds)) for i in bo)
    return {
        **job,
        "trace": best_so_far(Y, problem).tolist(),
        "values": Y[:, 0].tolist(),
        "feasible": problem.is_feasible(Y).tolist(),
        "changed": num_changed(X, problem.default_point, problem.bounds).tolist(),
        "num_bo": len(bo),
        "distinct_bo": new,
        "duplicate_fallbacks": sum(bool(trials[i].metadata.get("duplicate_fallback")) for i in bo),
        "acq_time": [trials[i].acq_time for i in bo if trials[i].acq_time > 0],
        "seconds": seconds,
        "default_value": next(
            (float(Y[i, 0]) for i, t in enumerate(trials) if t.generator == "default"), None
        ),
    }


def seeds_per_row(table: Sequence[dict[str, Any]], key: str = "runs") -> str:
    """``"seeds run per row: 3 or 5 (column seeds)"``: what a report's header states, from the
    rows themselves (seeds ``0..k-1`` of each row)."""
    counts = sorted({int(r[key]) for r in table})
    if not counts:
        return "no runs"
    listed = " or ".join(map(str, counts)) if len(counts) <= 3 else f"{counts[0]}-{counts[-1]}"
    return f"seeds run per row: {listed} (column `seeds`)"


def seed_ranges(seeds: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``: the seeds a report states it ran."""
    spans: list[list[int]] = []
    for seed in sorted(set(seeds)):
        if spans and seed == spans[-1][1] + 1:
            spans[-1][1] = seed
        else:
            spans.append([seed, seed])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "none"


def run_resumable(
    worker: Callable[[dict[str, Any]], dict[str, Any]],
    jobs: Sequence[dict[str, Any]],
    out: Path,
    workers: int,
    only_existing: bool = False,
    key_fields: Sequence[str] = KEY_FIELDS,
) -> list[dict[str, Any]]:
    """Run ``worker(job)`` for every job not yet in ``out/runs.jsonl``; returns all runs in
    job order. Finished runs are appended as they end (delete the file to start over).
    With ``only_existing`` nothing new runs: the runs already recorded are returned. A run
    is identified by its ``key_fields``."""

    def job_key(job: dict[str, Any]) -> tuple:
        # a field a run was recorded without (an older run, another option set) keys as its default or None
        return tuple(job[k] if k in job else KEY_DEFAULTS.get(k) for k in key_fields)

    log = out / "runs.jsonl"
    done: dict[tuple, dict[str, Any]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            run = json.loads(line)
            done[job_key(run)] = run
    todo = [] if only_existing else [j for j in jobs if job_key(j) not in done]
    if only_existing:
        return [done[job_key(j)] for j in jobs if job_key(j) in done]
    if len(todo) < len(jobs):
        print(
            f"resuming: {len(jobs) - len(todo)} of {len(jobs)} campaigns already in {log}",
            flush=True,
        )
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool, log.open("a") as sink:
        for i, run in enumerate(pool.map(worker, todo), len(jobs) - len(todo) + 1):
            done[job_key(run)] = run
            sink.write(json.dumps(run) + "\n")
            sink.flush()
            what = " ".join(
                f"{k} {run[k]}" if k == "beta" else f"{run[k]}"
                for k in key_fields
                if k in ("problem", "method", "part") or k == "beta" and run.get(k) is not None
            )
            print(
                f"[{i}/{len(jobs)}] {what} seed {run['seed']}: "
                + (f"last trace value {run['trace'][-1]:.4g}, " if "trace" in run else "")
                + (
                    f"new points {run['distinct_bo']}/{run['num_bo']}, "
                    if "distinct_bo" in run
                    else ""
                )
                + f"{run['seconds']:.0f}s  (elapsed {time.perf_counter() - started:.0f}s)",
                flush=True,
            )
    return [done[job_key(j)] for j in jobs]


def best_with_at_most(run: dict[str, Any], k: int) -> float:
    """Best feasible value among the run's points that change at most ``k`` parameters."""
    values = [
        v
        for v, c, f in zip(run["values"], run["changed"], run["feasible"], strict=True)
        if c <= k and f
    ]
    return max(values) if values else math.nan


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return math.nan, math.nan
    se = float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0
    return float(arr.mean()), se


def method_color(j: int, num_methods: int) -> Any:
    """A distinct colour per method: matplotlib's 10-colour cycle, or tab20 beyond 10."""
    return f"C{j}" if num_methods <= 10 else plt.get_cmap("tab20")(j % 20)


def panel_grid(num_panels: int, max_columns: int = 4) -> tuple[Any, list[Any]]:
    """A figure with ``num_panels`` panels in rows of at most ``max_columns``; extra axes hidden."""
    columns = min(num_panels, max_columns)
    rows = math.ceil(num_panels / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.6 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[num_panels:]:
        ax.set_visible(False)
    return fig, flat[:num_panels]


def plot_traces(runs, problems, methods, path: Path, ylabel: str, transform=None) -> None:
    """Mean +- standard error of each method's best-so-far trace, one panel per problem."""
    fig, axes = panel_grid(len(problems))
    for ax, p in zip(axes, problems, strict=True):
        for j, m in enumerate(methods):
            traces = np.array(
                [r["trace"] for r in runs if r["problem"] == p and r["method"] == m], dtype=float
            )
            if traces.size == 0:
                continue
            if transform is not None:
                traces = transform(p, traces)
            mean = np.nanmean(traces, axis=0)
            se = np.nanstd(traces, axis=0) / math.sqrt(len(traces))
            x = np.arange(1, traces.shape[1] + 1)
            color = method_color(j, len(methods))
            ax.plot(x, mean, color=color, label=m)
            ax.fill_between(x, mean - se, mean + se, color=color, alpha=0.2)
        ax.set_title(p)
        ax.set_xlabel("evaluations")
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_best_vs_changes(runs, problems, methods, path: Path) -> None:
    """Mean best value using at most k changed parameters, after the budget."""
    single = [p for p in problems if not get_problem(p).is_multi_objective]
    if not single:
        return
    fig, axes = panel_grid(len(single))
    for ax, p in zip(axes, single, strict=True):
        problem = get_problem(p)
        ks = np.arange(0, problem.dim + 1)
        for j, m in enumerate(methods):
            rs = [r for r in runs if r["problem"] == p and r["method"] == m]
            if not rs:
                continue
            curve = [np.nanmean([best_with_at_most(r, int(k)) for r in rs]) for k in ks]
            ax.step(ks, curve, where="post", color=method_color(j, len(methods)), label=m)
        ax.axvline(len(problem.relevant_dims), color="k", ls="--", lw=0.8)
        ax.set_title(p)
        ax.set_xlabel("changed parameters k")
        ax.set_ylabel("best value with <= k changes")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
