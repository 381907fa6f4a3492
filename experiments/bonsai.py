"""BONSAI (Daulton et al.): sparse, default-aware candidates at little extra cost.

Reproduces, at a reduced budget, the synthetic part of the paper's Figure 2 / Table 1:

1. **Campaigns** on Branin-50d, Hartmann6-50d, PressureVessel-50d and DTLZ2-50d (default =
   box centre; 20 Sobol points plus the default, then BO), for BONSAI (qLogNEI or qLogNEHVI
   + greedy pruning, rho = 0.2), the same acquisition without pruning, and Sobol; MAP-SAAS
   (4-member ensemble) surrogate. Metrics: best value (hypervolume) vs evaluations; best value
   using at most k changed parameters; changed parameters needed to be within
   epsilon = 0.2 of the default-to-optimum improvement; distinct proposals.
2. **Greedy vs exact pruning** of the first BO candidate on Branin-15d and Hartmann6-15d
   (the paper: 85.7% identical first candidates).
3. **Generation time** BONSAI / plain on the same model and data, side by side, on
   Branin-50d and Hartmann6-50d (the paper: 1.0x and 1.5x; 1.6x averaged over problems).

Writes ``experiments/results/bonsai/{results.json, results.md, *.png}`` (``results.json``: the
summary; the runs stay in ``runs.jsonl``).

    python experiments/bonsai.py                 # 5 seeds, 35 evaluations (stated budget)
    python experiments/bonsai.py --smoke         # seconds: 1 seed, 2 problems, tiny budget

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

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import torch  # noqa: E402
from botorch.optim import optimize_acqf  # noqa: E402
from campaign_runs import (  # noqa: E402
    best_with_at_most,
    optimizer_settings,
    plot_best_vs_changes,
    plot_traces,
    record_campaign,
    run_resumable,
    seeds_per_row,
)
from results_io import write_results  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import History, OptimizerSettings, make_policy, make_postprocessor  # noqa: E402
from dsbo.acquisition.sparsity import num_changed  # noqa: E402
from dsbo.campaign import Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402
from dsbo.surrogates import fit_surrogate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bonsai"
METHODS = ("bonsai", "plain", "sobol")
PROBLEMS = ("branin-50d", "hartmann6-50d", "pressure-vessel-50d", "dtlz2-50d")
EPSILON = 0.2


# ----------------------------------------------------------------------------- campaigns
def run_campaign(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, method, seed) campaign; runs in a worker process on one thread."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = get_problem(job["problem"])
    acquisition = "sobol" if job["method"] == "sobol" else "auto"
    postprocess = {"bonsai": {"rho": 0.2, "mode": "greedy"}} if job["method"] == "bonsai" else None
    campaign = Campaign(
        problem,
        surrogate=job["surrogate"],
        acquisition=acquisition,
        budget=job["budget"],
        n_init=job["n_init"] + 1,
        seed=job["seed"],
        optimizer=optimizer_settings(job["smoke"]),
        postprocess=postprocess,
    )
    default = problem.default_point
    campaign.attach(default, problem(default), generator="default")
    start = time.perf_counter()
    campaign.run()
    return record_campaign(campaign, problem, job, time.perf_counter() - start)


def changes_within_epsilon(run: dict[str, Any], optimum: float) -> float:
    """Fewest changed parameters among feasible points within epsilon of the optimum:
    f(x) >= f* - epsilon (f* - f(x_def)) (BONSAI's relative epsilon objective)."""
    threshold = optimum - EPSILON * (optimum - run["default_value"])
    counts = [
        c
        for v, c, f in zip(run["values"], run["changed"], run["feasible"], strict=True)
        if f and v >= threshold
    ]
    return min(counts) if counts else math.nan


# ----------------------------------------------------------------------------- greedy vs exact, timing
def state(problem_name: str, seed: int, n_init: int, surrogate: str):
    problem = get_problem(problem_name)
    campaign = Campaign(
        problem,
        surrogate=surrogate,
        acquisition="sobol",
        budget=n_init + 1,
        n_init=n_init + 1,
        seed=seed,
    )
    campaign.attach(problem.default_point, problem(problem.default_point), generator="default")
    campaign.run()
    X, Y = campaign.store.completed_data()
    torch.manual_seed(seed)
    model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
    return problem, model, History(X=X, Y=Y, seed=seed, t=X.shape[0])


def greedy_vs_exact(
    problem_name: str, seed: int, n_init: int, surrogate: str, opt: OptimizerSettings
) -> dict[str, Any]:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem, model, history = state(problem_name, seed, n_init, surrogate)
    policy = make_policy("qlognei", {}, opt)
    acqf = policy.build(model, history, problem, 1)
    X, _ = optimize_acqf(
        acqf,
        problem.bounds,
        q=1,
        num_restarts=opt.num_restarts,
        raw_samples=opt.raw_samples,
        options={"maxiter": opt.maxiter, "seed": seed},
    )
    X = problem.round_to_domain(X.detach())
    out = {}
    for mode in ("greedy", "exact"):
        pruner = make_postprocessor("bonsai", {"rho": 0.2, "mode": mode})
        t0 = time.perf_counter()
        proposal = pruner(acqf, X, history, problem, opt, True)
        out[mode] = {
            "x": proposal.X[0].tolist(),
            "changed": int(num_changed(proposal.X, problem.default_point, problem.bounds)[0]),
            "seconds": time.perf_counter() - t0,
            "evaluations": proposal.metadata[0].get("acq_evaluations"),
        }
    same = bool(np.allclose(out["greedy"]["x"], out["exact"]["x"], atol=1e-9))
    return {"problem": problem_name, "seed": seed, "identical": same, **out}


def generation_time(
    problem_name: str, seed: int, n_init: int, surrogate: str, opt: OptimizerSettings, repeats: int
) -> dict[str, Any]:
    """Plain vs BONSAI proposal time on the same model and data, alternating."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem, model, history = state(problem_name, seed, n_init, surrogate)
    plain = make_policy("qlognei", {}, opt)
    bonsai = make_policy("qlognei", {}, opt)
    bonsai.postprocessor = make_postprocessor("bonsai", {"rho": 0.2})
    times: dict[str, list[float]] = {"plain": [], "bonsai": []}
    for _ in range(repeats):
        for name, policy in (("plain", plain), ("bonsai", bonsai)):
            t0 = time.perf_counter()
            policy.propose(model, history, problem, 1)
            times[name].append(time.perf_counter() - t0)
    ratio = statistics.median(times["bonsai"]) / statistics.median(times["plain"])
    return {"problem": problem_name, "seed": seed, "times": times, "ratio": ratio}


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument(
        "--budget", type=int, default=None, help="evaluations incl. 20 Sobol + default"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--surrogate", default=None)
    parser.add_argument("--problems", nargs="*", default=None, choices=PROBLEMS)
    parser.add_argument(
        "--campaigns-only",
        action="store_true",
        help="reuse the cached greedy-vs-exact and timing runs when present",
    )
    parser.add_argument(
        "--only-existing",
        action="store_true",
        help="run no new campaign: report the ones in runs.jsonl (and cached side runs)",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else 5)
    n_init = 4 if smoke else 20
    budget = args.budget or (n_init + 3 if smoke else 35)
    surrogate = args.surrogate or ("gp" if smoke else "map-saas")
    problems = args.problems or (["branin-50d", "dtlz2-50d"] if smoke else list(PROBLEMS))
    opt = optimizer_settings(smoke)
    args.out.mkdir(parents=True, exist_ok=True)

    jobs = [
        {
            "problem": p,
            "method": m,
            "seed": s,
            "budget": budget,
            "n_init": n_init,
            "surrogate": surrogate,
            "smoke": smoke,
        }
        for s in range(seeds)
        for p in problems
        for m in METHODS
    ]
    runs = run_resumable(run_campaign, jobs, args.out, args.workers, args.only_existing)
    problems = [p for p in problems if any(r["problem"] == p for r in runs)]

    side = args.out / "side_runs.json"
    if (args.only_existing or args.campaigns_only) and side.exists():
        cached = json.loads(side.read_text())
        agreement, timing = cached["agreement"], cached["timing"]
    else:
        agreement_problems = ["branin-15d"] if smoke else ["branin-15d", "hartmann6-15d"]
        agreement = [
            greedy_vs_exact(p, s, n_init, surrogate, opt)
            for p in agreement_problems
            for s in range(seeds)
        ]
        timing_problems = ["branin-50d"] if smoke else ["branin-50d", "hartmann6-50d"]
        timing = [
            generation_time(p, s, n_init, surrogate, opt, 1 if smoke else 3)
            for p in timing_problems
            for s in range(min(seeds, 3))
        ]
        side.write_text(json.dumps({"agreement": agreement, "timing": timing}))

    result = summarize(runs, agreement, timing, problems, budget, n_init, seeds, surrogate, smoke)
    # the runs themselves stay in runs.jsonl
    write_results(args.out, {"summary": result, "agreement": agreement, "timing": timing}, runs)
    write_markdown(result, args.out / "results.md")
    plot(runs, problems, args.out)
    return result


def summarize(
    runs, agreement, timing, problems, budget, n_init, seeds, surrogate, smoke
) -> dict[str, Any]:
    table = []
    for p in problems:
        problem = get_problem(p)
        for m in METHODS:
            rs = [r for r in runs if r["problem"] == p and r["method"] == m]
            if not rs:
                continue
            final = [r["trace"][-1] for r in rs]
            row = {
                "problem": p,
                "method": m,
                "runs": len(rs),
                "final_mean": statistics.mean(final),
                "final_se": statistics.stdev(final) / math.sqrt(len(final))
                if len(final) > 1
                else 0.0,
                "distinct_bo": sum(r["distinct_bo"] for r in rs),
                "num_bo": sum(r["num_bo"] for r in rs),
                "duplicate_fallbacks": sum(r["duplicate_fallbacks"] for r in rs),
                "relevant": len(problem.relevant_dims),
            }
            if not problem.is_multi_objective:
                k = len(problem.relevant_dims)
                row["best_at_true_k"] = statistics.mean(best_with_at_most(r, k) for r in rs)
                if problem.optimal_value is not None:
                    counts = [changes_within_epsilon(r, problem.optimal_value) for r in rs]
                    row["changes_at_epsilon"] = [None if math.isnan(c) else c for c in counts]
            if m != "sobol" and any(r["acq_time"] for r in rs):
                row["mean_generation_s"] = statistics.mean(t for r in rs for t in r["acq_time"])
            table.append(row)
    identical = [a["identical"] for a in agreement]
    ratios = {
        p: statistics.median(t["ratio"] for t in timing if t["problem"] == p)
        for p in {t["problem"] for t in timing}
    }
    return {
        "budget": budget,
        "n_init": n_init,
        "seeds": seeds,
        "surrogate": surrogate,
        "smoke": smoke,
        "table": table,
        "greedy_exact_identical": sum(identical) / len(identical) if identical else None,
        "greedy_exact_cases": len(identical),
        "generation_time_ratio": ratios,
    }


def write_markdown(result: dict[str, Any], path: Path) -> None:
    lines = [
        f"# BONSAI reproduction ({seeds_per_row(result['table'])}; {result['budget']} evaluations = "
        f"{result['n_init']} Sobol + default + {result['budget'] - result['n_init'] - 1} BO; "
        f"{result['surrogate']} surrogate)" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| problem | method | seeds | final best (HV) mean +- se | best with <= true #relevant changes | "
        "changes needed at eps=0.2 (per seed) | BO proposals that are new points | duplicate fallbacks | s per proposal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["table"]:
        eps = r.get("changes_at_epsilon")
        lines.append(
            f"| {r['problem']} | {r['method']} | {r['runs']} | {r['final_mean']:.4g} +- {r['final_se']:.2g} | "
            f"{r.get('best_at_true_k', float('nan')):.4g} | {eps if eps is not None else '-'} | "
            f"{r['distinct_bo']}/{r['num_bo']} | {r['duplicate_fallbacks']} | "
            f"{r.get('mean_generation_s', float('nan')):.2f} |"
        )
    lines += [
        "",
        f"Greedy vs exact pruning, first BO candidate: {result['greedy_exact_identical']:.0%} identical "
        f"over {result['greedy_exact_cases']} cases (paper: 85.7%).",
        "",
        "Generation time BONSAI / plain qLogNEI, same model and data, alternating, median: "
        + ", ".join(f"{p}: {r:.2f}x" for p, r in sorted(result["generation_time_ratio"].items()))
        + " (paper: 1.0x Branin-50d, 1.5x Hartmann6-50d).",
    ]
    path.write_text("\n".join(lines) + "\n")


def plot(runs, problems, out: Path) -> None:
    plot_traces(
        runs,
        problems,
        METHODS,
        out / "best_vs_evaluations.png",
        "best value (hypervolume for DTLZ2)",
    )
    plot_best_vs_changes(runs, problems, METHODS, out / "best_vs_changes.png")


if __name__ == "__main__":
    main()
