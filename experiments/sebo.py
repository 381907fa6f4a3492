"""SEBO (Liu et al.): sparsity-exploring BO vs regularized and unregularized baselines.

Reproduces, at a stated budget, the paper's section 6 benchmarks:

1. **Campaigns** on Branin embedded in 50D (8 Sobol points; the paper: 50 trials), Hartmann6
   embedded in 50D (20 Sobol; the paper: 100 trials) and the sourcing simulation (25D, 8 Sobol;
   the paper: 100 trials), target ``x^s = 0``. Methods: Sobol, GP-EI, MAP-SAAS + qLogNEI, IR-L0
   and ER-L0 with lambda 1e-3 and 1e-2, SEBO-L1, SEBO-L0, and the ablation SEBO-L0 at a fixed
   small ``a`` (no homotopy). Metrics: simple regret among points with at most the true number
   of active parameters (2 or 6) vs evaluations; best value at each sparsity level after the
   budget; new (not repeated) proposals.
2. **Generation time** of SEBO-L0, IR-L0 (closed form; and its MC qLogNEI version) and ER-L0 relative to plain qLogNEI on the same
   model and data, side by side (the BONSAI paper reports SEBO at 13.9x plain BO on average).

Writes ``experiments/results/sebo/{results.json, results.md, runs.jsonl, *.png}``; finished
campaigns are kept in ``runs.jsonl`` and an interrupted run resumes from it.

    python experiments/sebo.py --smoke            # seconds: 1 seed, tiny budget
    python experiments/sebo.py --seeds 5          # the stated reduced budgets below

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from campaign_runs import (
    best_with_at_most,
    mean_and_se,
    optimizer_settings,
    plot_best_vs_changes,
    plot_traces,
    record_campaign,
    run_resumable,
    seeds_per_row,
)
from smoke_out import add_out_argument, output_folder

from dsbo.acquisition import History, make_policy
from dsbo.campaign import Campaign
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate

RESULTS = Path(__file__).resolve().parent / "results" / "sebo"

#: method -> (surrogate or None for the job's, acquisition spec)
METHODS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "sobol": ("gp", {"name": "sobol"}),
    "gp-ei": ("gp", {"name": "logei"}),
    "map-saas": (None, {"name": "qlognei"}),
    "ir-l0-1e-3": (None, {"name": "ir", "penalty": "l0", "penalty_weight": 1e-3}),
    "ir-l0-1e-2": (None, {"name": "ir", "penalty": "l0", "penalty_weight": 1e-2}),
    # IR through BoTorch's MC qLogNEI on the penalized objective instead of the closed form
    "ir-qlognei-l0-1e-3": (
        None,
        {"name": "ir", "penalty": "l0", "penalty_weight": 1e-3, "acquisition_function": "qlognei"},
    ),
    "ir-qlognei-l0-1e-2": (
        None,
        {"name": "ir", "penalty": "l0", "penalty_weight": 1e-2, "acquisition_function": "qlognei"},
    ),
    "er-l0-1e-3": (None, {"name": "er", "penalty": "l0", "penalty_weight": 1e-3}),
    "er-l0-1e-2": (None, {"name": "er", "penalty": "l0", "penalty_weight": 1e-2}),
    "sebo-l1": (None, {"name": "sebo", "penalty": "l1"}),
    "sebo-l0": (None, {"name": "sebo", "penalty": "l0"}),
    # SEBO-L0 through BoTorch's MC qLogNEHVI on (f, -xi) instead of the closed-form EHVI
    "sebo-l0-qlognehvi": (
        None,
        {"name": "sebo", "penalty": "l0", "acquisition_function": "qlognehvi"},
    ),
    "sebo-l0-fixed-a": (
        None,
        {"name": "sebo", "penalty": "l0", "a_start": 1e-3, "a_end": 1e-3, "num_steps": 1},
    ),
}

#: the methods of a full run; the MC versions of IR and SEBO (qLogNEI, qLogNEHVI instead of
#: the closed forms) are ablations that ``--methods`` adds
DEFAULT_METHODS = [m for m in METHODS if "qlogne" not in m]

#: problem -> (problem options, n_init, the reduced budget reported in docs/results.md; the
#: paper's budgets are 50, 100 and 100 evaluations: ``--budget`` sets any other)
PROBLEMS: dict[str, tuple[dict[str, Any], int, int]] = {
    "branin-50d": ({"target": "zero"}, 8, 30),
    "hartmann6-50d": ({"target": "zero"}, 20, 40),
    "sourcing": ({"mode": "monte-carlo", "n_repeats": 1000, "seed": 0}, 8, 30),
}


def homotopy_options(smoke: bool) -> dict[str, Any]:
    return {"num_steps": 4, "num_restarts_homotopy": 2} if smoke else {}


def run_campaign(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, method, seed) campaign; runs in a worker process on one thread."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    options, _, _ = PROBLEMS[job["problem"]]
    problem = get_problem(job["problem"], **options)
    surrogate, acquisition = METHODS[job["method"]]
    acquisition = dict(acquisition)
    if acquisition["name"] in ("sebo", "ir", "er"):
        acquisition = {**homotopy_options(job["smoke"]), **acquisition}
        if acquisition.get("num_steps") == 1:
            acquisition.pop("num_restarts_homotopy", None)
    campaign = Campaign(
        problem,
        surrogate=surrogate or job["surrogate"],
        acquisition=acquisition,
        budget=job["budget"],
        n_init=job["n_init"] + 1 if job["evaluate_target"] else job["n_init"],
        seed=job["seed"],
        optimizer=optimizer_settings(job["smoke"]),
    )
    if job["evaluate_target"]:  # x^s first (not in the paper; --evaluate-target)
        default = problem.default_point
        campaign.attach(default, problem(default), generator="default")
    start = time.perf_counter()
    campaign.run()
    return record_campaign(campaign, problem, job, time.perf_counter() - start)


def sparse_regret_trace(run: dict[str, Any], optimum: float, k: int) -> list[float]:
    """optimum - best value so far among points changing at most ``k`` parameters."""
    best, trace = -math.inf, []
    for v, c, f in zip(run["values"], run["changed"], run["feasible"], strict=True):
        if f and c <= k:
            best = max(best, v)
        trace.append(optimum - best if best > -math.inf else math.nan)
    return trace


def generation_time(
    problem_name: str, seed: int, n_init: int, surrogate: str, smoke: bool, repeats: int
) -> dict[str, Any]:
    """Seconds per proposal of qLogNEI, SEBO-L0, IR-L0 (closed form and MC qLogNEI) and ER-L0
    on the same model and data."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    options, _, _ = PROBLEMS[problem_name]
    problem = get_problem(problem_name, **options)
    campaign = Campaign(problem, acquisition="sobol", budget=n_init, n_init=n_init, seed=seed)
    campaign.run()
    X, Y = campaign.store.completed_data()
    torch.manual_seed(seed)
    model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
    history = History(X=X, Y=Y, seed=seed, t=X.shape[0])
    opt = optimizer_settings(smoke)
    extra = homotopy_options(smoke)
    policies = {
        "qlognei": make_policy("qlognei", {}, opt),
        "sebo-l0": make_policy("sebo", {"penalty": "l0", **extra}, opt),
        "ir-l0": make_policy("ir", {"penalty": "l0", "penalty_weight": 1e-2, **extra}, opt),
        "ir-l0-qlognei": make_policy(
            "ir",
            {"penalty": "l0", "penalty_weight": 1e-2, "acquisition_function": "qlognei", **extra},
            opt,
        ),
        "sebo-l0-qlognehvi": make_policy(
            "sebo", {"penalty": "l0", "acquisition_function": "qlognehvi", **extra}, opt
        ),
        "er-l0": make_policy("er", {"penalty": "l0", "penalty_weight": 1e-2, **extra}, opt),
    }
    times: dict[str, list[float]] = {name: [] for name in policies}
    for _ in range(repeats):
        for name, policy in policies.items():
            t0 = time.perf_counter()
            policy.propose(model, history, problem, 1)
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["qlognei"])
    return {
        "problem": problem_name,
        "seed": seed,
        "times": times,
        "ratio": {name: statistics.median(t) / base for name, t in times.items()},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--problems", nargs="*", default=None, choices=sorted(PROBLEMS))
    parser.add_argument("--methods", nargs="*", default=None, choices=sorted(METHODS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--budget", type=int, default=None, help="evaluations per campaign (default: per problem)"
    )
    parser.add_argument("--surrogate", default=None, help="default: map-saas (gp with --smoke)")
    parser.add_argument("--timing-only", action="store_true", help="only the generation-time bench")
    parser.add_argument(
        "--skip-timing", action="store_true", help="campaigns only, no generation-time bench"
    )
    parser.add_argument(
        "--only-existing",
        action="store_true",
        help="run no new campaign: report the ones already in runs.jsonl",
    )
    parser.add_argument(
        "--evaluate-target",
        action="store_true",
        help="evaluate x^s before the Sobol points (the paper does not; the recorded "
        "results in experiments/results/sebo did)",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else 5)
    surrogate = args.surrogate or ("gp" if smoke else "map-saas")
    problems = args.problems or (["branin-50d"] if smoke else list(PROBLEMS))
    methods = args.methods or (
        ["sobol", "map-saas", "ir-l0-1e-2", "er-l0-1e-2", "sebo-l0"] if smoke else DEFAULT_METHODS
    )
    args.out.mkdir(parents=True, exist_ok=True)

    runs: list[dict[str, Any]] = []
    if not args.timing_only:
        jobs = []
        for s in range(seeds):
            for p in problems:
                _, n_init, budget = PROBLEMS[p]
                n_init, budget = (3, 6) if smoke else (n_init, args.budget or budget)
                jobs += [
                    {
                        "problem": p,
                        "method": m,
                        "seed": s,
                        "budget": budget,
                        "n_init": n_init,
                        "surrogate": surrogate,
                        "smoke": smoke,
                        "evaluate_target": args.evaluate_target,
                    }
                    for m in methods
                ]
        runs = run_resumable(run_campaign, jobs, args.out, args.workers, args.only_existing)

    timing_problems = ["branin-50d"] if smoke else ["branin-50d", "hartmann6-50d"]
    timing = (
        []
        if args.skip_timing
        else [
            generation_time(
                p, s, 4 if smoke else PROBLEMS[p][1], surrogate, smoke, 1 if smoke else 3
            )
            for p in timing_problems
            for s in range(1 if smoke else 2)
        ]
    )
    result = summarize(runs, timing, problems, methods, seeds, surrogate, smoke)
    (args.out / "results.json").write_text(
        json.dumps({"summary": result, "timing": timing}, indent=1)
    )
    write_markdown(result, args.out / "results.md")
    if runs:
        plot_best_vs_changes(runs, problems, methods, args.out / "best_vs_changes.png")
        plot_traces(
            [
                dict(
                    r,
                    trace=sparse_regret_trace(
                        r,
                        get_problem(r["problem"]).optimal_value,
                        len(get_problem(r["problem"]).relevant_dims),
                    ),
                )
                for r in runs
                if get_problem(r["problem"]).optimal_value is not None
            ],
            [p for p in problems if get_problem(p).optimal_value is not None],
            methods,
            args.out / "sparse_regret.png",
            "regret among points with <= true #active changes",
        )
    return result


def summarize(runs, timing, problems, methods, seeds, surrogate, smoke) -> dict[str, Any]:
    table = []
    for p in problems:
        options, _, _ = PROBLEMS[p]
        problem = get_problem(p, **options)
        k_true = len(problem.relevant_dims)
        for m in methods:
            rs = [r for r in runs if r["problem"] == p and r["method"] == m]
            if not rs:
                continue
            best, best_se = mean_and_se(
                [max(v for v, f in zip(r["values"], r["feasible"], strict=True) if f) for r in rs]
            )
            row = {
                "problem": p,
                "method": m,
                "runs": len(rs),
                "budget": rs[0]["budget"],
                "best": best,
                "best_se": best_se,
                "new_points": sum(r["distinct_bo"] for r in rs),
                "num_bo": sum(r["num_bo"] for r in rs),
            }
            if problem.optimal_value is not None and k_true < problem.dim:
                regret = [sparse_regret_trace(r, problem.optimal_value, k_true)[-1] for r in rs]
                row["sparse_regret"], row["sparse_regret_se"] = mean_and_se(
                    regret
                )  # seeds that got one
                row["sparse_seeds"] = sum(not math.isnan(v) for v in regret)
            for k in (2, 5, 10):
                row[f"best_at_most_{k}"] = mean_and_se([best_with_at_most(r, k) for r in rs])[0]
            if any(r["acq_time"] for r in rs):
                row["s_per_proposal"] = statistics.mean(t for r in rs for t in r["acq_time"])
            table.append(row)
    names = [name for name in timing[0]["ratio"] if name != "qlognei"] if timing else []
    ratios = {name: statistics.median(t["ratio"][name] for t in timing) for name in names}
    return {
        "seeds": seeds,
        "surrogate": surrogate,
        "smoke": smoke,
        "table": table,
        "generation_time_ratio": ratios,
        "timing_problems": sorted({t["problem"] for t in timing}),
    }


def write_markdown(result: dict[str, Any], path: Path) -> None:
    scope = (
        seeds_per_row(result["table"])
        if result["table"]
        else "generation-time bench only, no campaigns"
    )
    lines = [
        f"# SEBO reproduction ({scope}; {result['surrogate']} surrogate for the model-based "
        "sparse methods, GP for GP-EI)" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| problem | method | seeds | budget | best value | regret with <= true #active changes | "
        "best with <= 2 / 5 / 10 changes | new BO points | s per proposal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["table"]:
        if "sparse_regret" not in r:
            regret = "-"
        elif not r.get("sparse_seeds", 1):
            regret = "never sparse"
        else:
            regret = f"{r['sparse_regret']:.3g} +- {r['sparse_regret_se']:.2g}"
            if r.get("sparse_seeds", r["runs"]) < r["runs"]:
                regret += f" (the {r['sparse_seeds']} of {r['runs']} seeds with a sparse point)"
        at_most = " / ".join(
            "none" if math.isnan(r[f"best_at_most_{k}"]) else f"{r[f'best_at_most_{k}']:.3g}"
            for k in (2, 5, 10)
        )
        seconds = f"{r['s_per_proposal']:.2f}" if "s_per_proposal" in r else "-"
        lines.append(
            f"| {r['problem']} | {r['method']} | {r['runs']} | {r['budget']} | {r['best']:.4g} +- {r['best_se']:.2g} | "
            f"{regret} | {at_most} | {r['new_points']}/{r['num_bo']} | {seconds} |"
        )
    if result["timing_problems"]:
        lines += [
            "",
            "Generation time relative to plain qLogNEI, same model and data (the problem's "
            "Sobol initial design; default homotopy: 30 values of a, the optimizer's 8 restarts), median over "
            + ", ".join(result["timing_problems"])
            + ": "
            + ", ".join(f"{k}: {v:.2f}x" for k, v in result["generation_time_ratio"].items())
            + " (BONSAI paper: SEBO 13.9x plain BO on average).",
        ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
