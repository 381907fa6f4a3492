"""dsbo's multi-objective five-line API (``dsbo.minimize(..., objectives={"f1": "min", "f2": "min"})``)
against Optuna's NSGA-II and TPE samplers and random search, on problems with a known Pareto front.

Problems (minimization of both objectives, BoTorch's test functions with ``negate=False``; each
evaluation maps dsbo's unit-cube parameters ``x0..x{d-1}`` in ``[0, 1]`` to the problem's bounds):

1. ``branin-currin``: ``BraninCurrin`` (2-d, 2 objectives). Reference point ``(18, 6)``: BoTorch
   stores ``_ref_point = [18.0, 6.0]`` in the minimization sense and negates it only for
   ``negate=True``, so ``BraninCurrin(negate=False).ref_point`` is already the point to use here
   (``-ref_point`` with negated values for BoTorch's maximizing ``Hypervolume``).
   ``max_hv = 59.36011874867746`` (BoTorch: "approximated using NSGA-II"; the same number for
   either sign).
2. ``dtlz2``: ``DTLZ2(dim=6, num_objectives=2)`` (6-d). Reference point ``(1.1, 1.1)``,
   ``max_hv = 1.1^2 - pi / 4`` (exact: the front is the quarter circle of radius 1).

Arms, all with the same budget (40 evaluations per run) and the same evaluation code:

- ``dsbo``: ``dsbo.minimize(f, space, budget=budget, objectives={"f1": "min", "f2": "min"},
  seed=seed)``, every other option at its default (exact GP + qLogNEHVI, dsbo's default
  number of Sobol initial points, ``dry_run``).
- ``optuna-nsga2``: ``NSGAIISampler(seed=seed)``, Optuna's defaults: ``population_size=50``, so
  a 40-evaluation run never leaves NSGA-II's first (random) generation.
- ``optuna-nsga2-p10``: ``NSGAIISampler(seed=seed, population_size=10)``, four generations in
  40 evaluations: NSGA-II given a population that fits the budget (an extra arm).
- ``optuna-tpe``: ``TPESampler(seed=seed)``, Optuna's defaults otherwise (in Optuna 5 TPE is
  always multivariate; ``n_startup_trials=10`` random trials first).
- ``random``: ``RandomSampler(seed=seed)`` (the floor).

Optuna studies use ``directions=["minimize", "minimize"]``; every trial is asked with fixed
distributions (``study.ask({"x0": FloatDistribution(0, 1), ...})``) so that the sampler does all
its work inside ``ask()``, which is what is timed.

Metric, computed the same way for every arm from the values the shared evaluation recorded:
the hypervolume of all observed points that dominate the reference point (BoTorch's
``Hypervolume`` on negated values), reported raw and as ``log10(max_hv - HV)``; dsbo's own
``result.hypervolume`` (another reference point) is recorded but not compared. Time per
proposal: dsbo ``fit_time + acq_time`` of each BO trial of ``result.history`` (the Sobol initial
points excluded); Optuna the seconds in ``study.ask()``. The machine is a shared 2-core one, so
times are upper bounds.

Issue 58 (fixed before its run): with the reference point that never moves outward
(:mod:`dsbo.acquisition.reference_point`), the ``dsbo`` arm at seeds 0-9 on ``dtlz2``, written
to ``results/multi_objective_api/issue58/`` (the Optuna and random runs referred from the
first run, unchanged); the goal is a mean final HV at or above ``optuna-tpe``'s, with the
paired Wilcoxon p against it and against the previous ``dsbo`` runs (``results/
multi_objective_api/runs.jsonl``) reported.

Runs are appended to ``runs.jsonl`` as they finish (a rerun skips finished runs); the report
(``results.json``, ``README.md``, ``best_hv_vs_evaluations.png``) is written from whatever is there;
``results.json`` is the summary only (the runs stay in ``runs.jsonl``). The report is in
``multi_objective_report.py``.

    python experiments/multi_objective_api.py                    # seeds 0-9, budget 40
    python experiments/multi_objective_api.py --seeds 5 --arms dsbo optuna-tpe
    python experiments/multi_objective_api.py --report-only      # report from runs.jsonl
    python experiments/multi_objective_api.py --smoke            # 1 seed, budget 8, dsbo + NSGA-II

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from results_io import read_runs, write_results
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "multi_objective_api"
BUDGET = 40
SEEDS = 10
SMOKE_BUDGET = 8
ARMS = ("dsbo", "dsbo-thresholds", "optuna-nsga2", "optuna-nsga2-p10", "optuna-tpe", "random")
SMOKE_ARMS = ("dsbo", "optuna-nsga2")
OPTUNA_ARMS = ARMS[2:]
#: Arms given what the others cannot use: ``dsbo-thresholds`` is handed the reference point the
#: hypervolume is scored with (as objective thresholds). An oracle, reported, judged by no goal.
ORACLE_ARMS = ("dsbo-thresholds",)
OBJECTIVES = ("f1", "f2")


# ----------------------------------------------------------------------------- problems
@dataclass
class MOProblem:
    name: str
    dim: int
    ref_point: tuple[float, ...]  # minimization sense
    max_hv: float
    note: str

    def function(self) -> Any:
        from botorch.test_functions.multi_objective import DTLZ2, BraninCurrin

        if self.name == "branin-currin":
            return BraninCurrin(negate=False)
        return DTLZ2(dim=self.dim, num_objectives=2, negate=False)

    @property
    def space_names(self) -> list[str]:
        return [f"x{i}" for i in range(self.dim)]


def make_problems() -> dict[str, MOProblem]:
    from botorch.test_functions.multi_objective import DTLZ2, BraninCurrin

    bc, dtlz = BraninCurrin(negate=False), DTLZ2(dim=6, num_objectives=2, negate=False)
    problems = [
        MOProblem(
            "branin-currin",
            2,
            tuple(float(v) for v in bc.ref_point),
            float(bc.max_hv),
            "BoTorch BraninCurrin (2-d); max_hv approximated by BoTorch with NSGA-II",
        ),
        MOProblem(
            "dtlz2",
            6,
            tuple(float(v) for v in dtlz.ref_point),
            float(dtlz.max_hv),
            "BoTorch DTLZ2(dim=6, num_objectives=2); max_hv exact (1.1^2 - pi/4)",
        ),
    ]
    return {p.name: p for p in problems}


class Recorder:
    """The evaluation every arm calls: unit-cube parameters -> ``{"f1": float, "f2": float}``."""

    def __init__(self, problem: MOProblem):
        import torch

        self.problem = problem
        self.fn = problem.function()
        bounds = self.fn.bounds.to(torch.double)  # 2 x d
        self.low, self.high = bounds[0], bounds[1]
        self.values: list[list[float]] = []
        self.params: list[list[float]] = []

    def __call__(self, params: dict[str, Any]) -> dict[str, float]:
        import torch

        u = torch.tensor([float(params[n]) for n in self.problem.space_names], dtype=torch.double)
        x = self.low + u * (self.high - self.low)
        with torch.no_grad():
            y = self.fn(x.unsqueeze(0))[0]
        out = {name: float(v) for name, v in zip(OBJECTIVES, y.tolist(), strict=True)}
        self.values.append([out[o] for o in OBJECTIVES])
        self.params.append(u.tolist())
        return out


# ----------------------------------------------------------------------------- hypervolume
def hypervolume(Y: Any, ref_point: Any) -> float:
    """Hypervolume dominated by the points ``Y`` (n x m, minimized) up to ``ref_point``: only
    points that dominate the reference point count (none: 0). BoTorch's ``Hypervolume`` on the
    negated values and reference point."""
    import torch
    from botorch.utils.multi_objective.hypervolume import Hypervolume
    from botorch.utils.multi_objective.pareto import is_non_dominated

    Y = torch.as_tensor(np.asarray(Y, dtype=float), dtype=torch.double).reshape(-1, len(ref_point))
    ref = torch.as_tensor(np.asarray(ref_point, dtype=float), dtype=torch.double)
    Y = Y[torch.isfinite(Y).all(-1)]
    Y = Y[(Y < ref).all(-1)]
    if Y.shape[0] == 0:
        return 0.0
    Y = -Y  # maximization
    front = Y[is_non_dominated(Y)]
    return float(Hypervolume(ref_point=-ref).compute(front))


def hv_trace(values: list[list[float]], ref_point: Any) -> list[float]:
    """The hypervolume of the first 1, 2, ..., n evaluations."""
    return [hypervolume(values[: i + 1], ref_point) for i in range(len(values))]


def log_gap(max_hv: float, hv: float) -> float | None:
    """``log10(max_hv - hv)``; ``None`` when ``hv`` reaches ``max_hv`` (possible only where
    ``max_hv`` is an approximation)."""
    gap = max_hv - hv
    return math.log10(gap) if gap > 0 else None


# ----------------------------------------------------------------------------- arms
def run_dsbo(
    problem: MOProblem, seed: int, budget: int, smoke: bool, f: Recorder, thresholds: bool = False
) -> dict[str, Any]:
    import dsbo

    space = {name: dsbo.Float(0.0, 1.0) for name in problem.space_names}
    options: dict[str, Any] = {}
    if smoke:  # seconds instead of a minute
        from dsbo.acquisition import OptimizerSettings

        options["optimizer"] = OptimizerSettings(
            num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
        )
    # ``dsbo-thresholds``: the problem's reference point given as the objective thresholds
    objectives = {
        o: ("min", float(r)) if thresholds else "min"
        for o, r in zip(OBJECTIVES, problem.ref_point, strict=True)
    }
    result = dsbo.minimize(f, space, budget=budget, objectives=objectives, seed=seed, **options)
    h = result.history
    init = h["generator"].isin(["default", "sobol-init"])
    proposal = h.loc[~init, "fit_time"].fillna(0) + h.loc[~init, "acq_time"].fillna(0)
    return {
        "proposal_times": [float(t) for t in proposal],
        "generators": h["generator"].tolist(),
        "n_init": int(init.sum()),
        "statuses": h["status"].value_counts().to_dict(),
        "dsbo_pareto_size": len(result.pareto_front),
        "dsbo_reported_hypervolume": float(
            result.hypervolume
        ),  # dsbo's own reference point: not compared
    }


def run_optuna(problem: MOProblem, arm: str, seed: int, budget: int, f: Recorder) -> dict[str, Any]:
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if arm == "optuna-nsga2":
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    elif arm == "optuna-nsga2-p10":
        sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=10)
    elif arm == "optuna-tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    elif arm == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:
        raise ValueError(arm)
    study = optuna.create_study(directions=["minimize"] * len(OBJECTIVES), sampler=sampler)
    distributions = {name: FloatDistribution(0.0, 1.0) for name in problem.space_names}
    times = []
    for _ in range(budget):
        t0 = time.perf_counter()
        trial = study.ask(fixed_distributions=distributions)
        times.append(time.perf_counter() - t0)
        y = f(trial.params)
        study.tell(trial, [y[o] for o in OBJECTIVES])
    return {"proposal_times": times}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, arm, seed) run; in a worker process on one thread."""
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = make_problems()[job["problem"]]
    f = Recorder(problem)
    start = time.perf_counter()
    if job["arm"].startswith("dsbo"):
        extra = run_dsbo(
            problem,
            job["seed"],
            job["budget"],
            job["smoke"],
            f,
            thresholds=job["arm"] == "dsbo-thresholds",
        )
    else:
        extra = run_optuna(problem, job["arm"], job["seed"], job["budget"], f)
    seconds = time.perf_counter() - start
    trace = hv_trace(f.values, problem.ref_point)
    final = trace[-1] if trace else 0.0
    return {
        **job,
        "ref_point": list(problem.ref_point),
        "max_hv": problem.max_hv,
        "final_hv": final,
        "final_log10_gap": log_gap(problem.max_hv, final),
        "hv_trace": trace,
        "values": f.values,
        "params": f.params,
        "num_evaluations": len(f.values),
        "median_proposal_s": float(np.median(extra["proposal_times"]))
        if extra["proposal_times"]
        else None,
        "seconds": seconds,
        "threads": 1,
        **extra,
    }


# ----------------------------------------------------------------------------- running
def job_key(run: dict[str, Any]) -> tuple:
    return (run["problem"], run["arm"], run["seed"], run["budget"], run["smoke"])


def run_all(jobs: list[dict[str, Any]], out: Path, workers: int) -> None:
    """Run the jobs not yet in ``out/runs.jsonl``, appending each as it finishes."""
    log = out / "runs.jsonl"
    done = {job_key(run) for run in read_runs(log)}  # reference lines resolved
    todo = [j for j in jobs if job_key(j) not in done]
    if len(todo) < len(jobs):
        print(f"resuming: {len(jobs) - len(todo)} of {len(jobs)} runs already in {log}", flush=True)
    started = time.perf_counter()

    def record(run: dict[str, Any], sink: Any, i: int) -> None:
        fcntl.flock(sink, fcntl.LOCK_EX)
        sink.write(json.dumps(run) + "\n")
        sink.flush()
        fcntl.flock(sink, fcntl.LOCK_UN)
        gap = run["final_log10_gap"]
        print(
            f"[{i}/{len(todo)}] {run['problem']} {run['arm']} seed {run['seed']}: HV {run['final_hv']:.5g} "
            f"(log10 gap {gap if gap is None else round(gap, 3)}), {run['seconds']:.0f}s "
            f"(elapsed {time.perf_counter() - started:.0f}s)",
            flush=True,
        )

    with log.open("a") as sink:
        if workers <= 1:
            for i, job in enumerate(todo, 1):
                record(run_job(job), sink, i)
        else:
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                futures = [pool.submit(run_job, j) for j in todo]
                for i, future in enumerate(as_completed(futures), 1):
                    record(future.result(), sink, i)


# ----------------------------------------------------------------------------- main
def versions() -> dict[str, str]:
    import botorch
    import optuna
    import torch

    import dsbo

    return {
        "python": sys.version.split()[0],
        "dsbo": getattr(dsbo, "__version__", "?"),
        "botorch": botorch.__version__,
        "torch": torch.__version__,
        "optuna": optuna.__version__,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    # the report module reads this one's arms and problems: imported here, not at the top
    from multi_objective_report import plot, summarize, write_markdown

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 seed, budget 8, dsbo + optuna-nsga2, tiny optimizer settings",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help=f"seeds 0..n-1 (default {SEEDS}; smoke 1)"
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        help=f"evaluations per run (default {BUDGET}; smoke {SMOKE_BUDGET})",
    )
    parser.add_argument("--arms", nargs="*", default=None, choices=ARMS)
    parser.add_argument("--problems", nargs="*", default=None, choices=list(make_problems()))
    parser.add_argument(
        "--workers", type=int, default=2, help="runs at once (processes, one torch thread each)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="run nothing: report the runs in runs.jsonl"
    )
    parser.add_argument("--notes", type=Path, default=None, help="markdown appended to README.md")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else SEEDS)
    budget = args.budget or (SMOKE_BUDGET if smoke else BUDGET)
    problems = make_problems()
    problems = {k: v for k, v in problems.items() if k in (args.problems or list(problems))}
    arms = list(args.arms or (SMOKE_ARMS if smoke else ARMS))
    args.out.mkdir(parents=True, exist_ok=True)
    # seed-major: an interrupted run leaves complete seeds behind
    jobs = [
        {"problem": p, "arm": a, "seed": s, "budget": budget, "smoke": smoke}
        for s in range(seeds)
        for p in problems
        for a in arms
    ]
    if not args.report_only:
        run_all(jobs, args.out, 1 if smoke else args.workers)
    # the report covers every run recorded at this budget (other arms and seeds too)
    log = args.out / "runs.jsonl"
    runs = read_runs(log)
    runs = [
        r
        for r in runs
        if r["budget"] == budget and r["smoke"] == smoke and r["problem"] in problems
    ]
    previous = args.out / "results.json"
    recorded = json.loads(previous.read_text())["summary"] if previous.exists() else {}
    summary = summarize(runs, problems, budget, smoke)
    # --report-only keeps the versions and machine the runs were recorded with
    keep = args.report_only and "versions" in recorded
    summary["versions"] = recorded["versions"] if keep else versions()
    summary["cpu_count"] = recorded.get("cpu_count") if keep else os.cpu_count()
    write_results(args.out, {"summary": summary}, runs)  # the runs themselves stay in runs.jsonl
    notes = args.notes.read_text() if args.notes and args.notes.exists() else ""
    write_markdown(summary, args.out / "README.md", summary["versions"], notes)
    plot(runs, problems, args.out / "best_hv_vs_evaluations.png")
    return summary


if __name__ == "__main__":
    main()
