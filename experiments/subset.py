"""Training-set subset selection (RS, KCS, SCS) against the exact GP and sparse GPs (VFE, FITC).

Mao & Li, *Are all training data useful? An empirical revisit of subset selection in Bayesian
optimization* (tables 1-4, appendix C). Every method is BO with an RBF-ARD GP and analytic
LogEI (the paper: EI on GPy); the subset methods fit the exact GP on the rows their selector
picks (``alpha = 20``, from ``30 n`` evaluations, refreshed every ``5 n``); VFE and FITC use
``5 n`` inducing points (uniform initialization) from ``30 n`` evaluations, the exact GP
before, their fits capped at 200 L-BFGS-B iterations. GPyTorch's ``max_cholesky_size`` is raised so the exact GP stays exact; one torch
thread; CPU (process) seconds and wall seconds are both recorded.

Parts (``--parts``):

- ``step``: the cost of one BO step (fit + LogEI optimization) against ``N`` in
  {250, 500, 1000, 2000} evaluated points of Ackley-10, every method, interleaved, 3 repeats;
  the per-step saving ``1 - t / t_GP`` (CPU seconds).
- ``campaign``: Ackley, Levy, Schwefel, Rastrigin and Griewank in ``n`` dimensions (the
  classic boxes, as the paper's), ``budget`` evaluations of which ``20 n`` are Sobol; the
  final best value, the model CPU seconds and ROI = ``(t_GP - t) / t_GP``; the Wilcoxon
  signed-rank test (scipy, paired by seed) and Cliff's delta against the exact GP.
- ``alpha``: RS, KCS and SCS with ``alpha`` in {5, 10, 15} against 20 (Cliff's delta).
- ``svm``: the SVM HPO stand-in (``svm-hpo`` on scikit-learn's digits).

Writes ``experiments/results/subset/{runs.jsonl, step.json, results.json, results.md, *.png}``;
finished campaigns are kept in ``runs.jsonl`` and a rerun resumes.

    python experiments/subset.py --smoke
    python experiments/subset.py --n 4 --budget 200 --seeds 3     # what was run (docs/results.md)

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import gpytorch  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from botorch.acquisition.analytic import LogExpectedImprovement  # noqa: E402
from botorch.utils.sampling import draw_sobol_samples  # noqa: E402
from campaign_runs import mean_and_se, method_color, run_resumable  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.campaign import EXACT_CHOLESKY_SIZE, Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402
from dsbo.surrogates import SurrogateSpec, fit_surrogate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "subset"
FUNCTIONS = ("ackley", "levy", "schwefel", "rastrigin", "griewank")
METHODS = ("gp", "rs", "kcs", "scs", "vfe", "fitc")
KEY = ("part", "problem", "method", "seed", "budget", "alpha", "smoke")
#: L-BFGS-B iterations per VFE / FITC fit: learning m x d inducing coordinates to convergence
#: takes thousands (minutes per fit at N = 1000), so the baselines are capped (stated).
SPARSE_MAXITER = 200


def surrogate_for(method: str, alpha: float = 20.0) -> dict[str, Any]:
    """The surrogate spec of a method (RBF-ARD GPs throughout)."""
    if method in ("rs", "kcs", "scs"):
        return {"name": "gp", "kernel": "rbf", "selector": {"name": method, "alpha": alpha}}
    if method in ("vfe", "fitc"):
        return {"name": method, "maxiter": SPARSE_MAXITER}
    return {"name": "gp", "kernel": "rbf"}


def optimizer(smoke: bool) -> OptimizerSettings:
    if smoke:
        return OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25)
    return OptimizerSettings(num_restarts=4, raw_samples=256, maxiter=100)


# ---------------------------------------------------------------------- one BO step vs N
def step_times(sizes: list[int], repeats: int, smoke: bool, dim: int = 10) -> list[dict[str, Any]]:
    """CPU and wall seconds of fit + LogEI optimization at each N, methods interleaved."""
    problem = get_problem(f"ackley-{dim}d")
    rows = []
    for n in sizes:
        times: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
        for rep in range(repeats):
            X = draw_sobol_samples(problem.bounds, n=n, q=1, seed=rep).squeeze(1)
            Y = problem.evaluate(X)
            for method in METHODS:
                torch.manual_seed(rep)
                spec = SurrogateSpec.coerce(surrogate_for(method))
                if method in ("rs", "kcs", "scs"):  # select at N as if a refresh happened now
                    spec.selector = type(spec.selector)(
                        spec.selector.name, spec.selector.alpha, start=n / dim
                    )
                c0, w0 = time.process_time(), time.perf_counter()
                with gpytorch.settings.max_cholesky_size(EXACT_CHOLESKY_SIZE):
                    model = fit_surrogate(spec, X, Y, bounds=problem.bounds, selection_seed=rep)
                    acqf = LogExpectedImprovement(model, best_f=float(Y.max()))
                    optimizer(smoke).maximize(acqf, problem.bounds, q=1, seed=rep)
                times[method].append((time.process_time() - c0, time.perf_counter() - w0))
        gp_cpu = statistics.median(t[0] for t in times["gp"])
        for method, ts in times.items():
            cpu, wall = statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)
            rows.append(
                {
                    "n_points": n,
                    "method": method,
                    "repeats": repeats,
                    "cpu_s": cpu,
                    "wall_s": wall,
                    "saving": 1 - cpu / gp_cpu,
                }
            )
            print(
                f"N={n} {method}: cpu {cpu:.2f}s wall {wall:.2f}s saving {rows[-1]['saving']:.1%}",
                flush=True,
            )
    return rows


# ---------------------------------------------------------------------- campaigns
def run_job(job: dict[str, Any]) -> dict[str, Any]:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = get_problem(job["problem"])
    n = problem.dim
    exact = surrogate_for("gp")
    sparse = job["method"] in ("vfe", "fitc")
    campaign = Campaign(
        problem,
        surrogate=exact if sparse else surrogate_for(job["method"], job["alpha"]),
        acquisition="logei",
        budget=job["budget"],
        n_init=min(20 * n, job["budget"] - 1),
        seed=job["seed"],
        optimizer=optimizer(job["smoke"]),
        dry_run=False,
    )
    start = time.perf_counter()
    while (
        campaign.remaining > 0
    ):  # VFE / FITC only from 30 n evaluations (appendix C.3), the exact GP before
        if sparse and campaign.store.count("completed") >= 30 * n:
            campaign.surrogate = SurrogateSpec.coerce(surrogate_for(job["method"]))
        campaign.step()
    trials = campaign.store.trials("completed")
    Y = [t.y[0] for t in trials]
    model_cpu = sum(
        t.metadata.get("fit_cpu_time", 0.0) + t.metadata.get("acq_cpu_time", 0.0) for t in trials
    )
    model_wall = sum(t.fit_time + t.acq_time for t in trials)
    return {
        **job,
        "best": max(Y),
        "trace": np.maximum.accumulate(Y).tolist(),
        "model_cpu_s": model_cpu,
        "model_wall_s": model_wall,
        "seconds": time.perf_counter() - start,
    }


def cliffs_delta(a: list[float], b: list[float]) -> float:
    """Cliff's delta: P(a > b) - P(a < b) over all pairs."""
    pairs = list(itertools.product(a, b))
    return (
        (sum(x > y for x, y in pairs) - sum(x < y for x, y in pairs)) / len(pairs)
        if pairs
        else math.nan
    )


def compare(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per problem and method: best value, model CPU, ROI, and the tests against the exact GP."""
    table = []
    for problem in sorted({r["problem"] for r in runs}):
        gp = {r["seed"]: r for r in runs if r["problem"] == problem and r["method"] == "gp"}
        for method in METHODS:
            rs = {r["seed"]: r for r in runs if r["problem"] == problem and r["method"] == method}
            if not rs:
                continue
            seeds = sorted(set(rs) & set(gp))
            row = {
                "problem": problem,
                "method": method,
                "seeds": len(rs),
                "best": mean_and_se([-r["best"] for r in rs.values()]),
                "model_cpu_s": mean_and_se([r["model_cpu_s"] for r in rs.values()]),
            }
            if method != "gp" and seeds:
                a = [-rs[s]["best"] for s in seeds]  # minimization sense, as the paper
                b = [-gp[s]["best"] for s in seeds]
                row["roi"] = statistics.fmean(
                    1 - rs[s]["model_cpu_s"] / gp[s]["model_cpu_s"] for s in seeds
                )
                row["cliffs_delta"] = cliffs_delta(a, b)
                diff = [x - y for x, y in zip(a, b, strict=True)]
                row["wilcoxon_p"] = (
                    float(wilcoxon(a, b).pvalue) if len(seeds) >= 2 and any(diff) else math.nan
                )
                row["significantly_worse"] = bool(
                    row["wilcoxon_p"] < 0.05 and statistics.fmean(diff) > 0
                )
            table.append(row)
    return table


def alpha_table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for problem in sorted({r["problem"] for r in runs if r["alpha"] != 20}):
        for method in ("rs", "kcs", "scs"):
            ref = [
                -r["best"]
                for r in runs
                if (r["problem"], r["method"], r["alpha"]) == (problem, method, 20)
            ]
            for alpha in (5, 10, 15):
                other = [
                    -r["best"]
                    for r in runs
                    if (r["problem"], r["method"], r["alpha"]) == (problem, method, alpha)
                ]
                if ref and other:
                    rows.append(
                        {
                            "problem": problem,
                            "method": method,
                            "alpha": alpha,
                            "seeds": len(other),
                            "cliffs_delta": cliffs_delta(ref, other),
                        }
                    )
    return rows


def fmt(pair: tuple[float, float]) -> str:
    return f"{pair[0]:.4g} +- {pair[1]:.2g}"


def write(result: dict[str, Any], out: Path) -> None:
    cmd = "python experiments/subset.py" + (" --smoke" if result["smoke"] else f" {result['args']}")
    lines = ["# Subset selection vs the exact GP and sparse GPs", "", f"Written by `{cmd}`.", ""]
    if result["step"]:
        reps = result["step"][0]["repeats"]
        lines += [
            f"## One BO step (fit + LogEI) vs N, Ackley-10 (median of {reps} interleaved repeats, one thread)",
            "",
            "| N | method | CPU s | wall s | CPU saving vs exact GP |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['n_points']} | {r['method']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['saving']:.1%} |"
            for r in result["step"]
        ]
    if result["table"]:
        seeds = sorted({r["seeds"] for r in result["table"]})
        lines += [
            "",
            f"## Campaigns (seeds run per row: {' or '.join(map(str, seeds))})",
            "",
            "Best = the minimum found (the paper's sense), mean +- SE; model CPU = seconds of fitting and "
            "acquisition over the campaign; ROI = 1 - CPU / exact GP's CPU (same seed); Wilcoxon "
            "signed-rank p and Cliff's delta against the exact GP (positive: worse than the GP).",
            "",
            "| problem | method | seeds | best | model CPU s | ROI | Wilcoxon p | Cliff's delta | significantly worse |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in result["table"]:
            lines.append(
                f"| {r['problem']} | {r['method']} | {r['seeds']} | {fmt(r['best'])} | {fmt(r['model_cpu_s'])} "
                f"| {r.get('roi', math.nan):.1%} | {r.get('wilcoxon_p', math.nan):.3g} "
                f"| {r.get('cliffs_delta', math.nan):.2f} | {r.get('significantly_worse', '-')} |"
            )
    if result["alpha"]:
        lines += [
            "",
            "## Alpha sensitivity: Cliff's delta of alpha = 20 against alpha in {5, 10, 15}",
            "",
            "| problem | method | alpha | seeds | Cliff's delta |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['problem']} | {r['method']} | {r['alpha']} | {r['seeds']} | {r['cliffs_delta']:.2f} |"
            for r in result["alpha"]
        ]
    lines += ["", "## Pass marks", "", *result["pass_marks"], "", "![step time](step.png)", ""]
    (out / "results.md").write_text("\n".join(lines))
    if result["step"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for j, method in enumerate(METHODS):
            rows = [r for r in result["step"] if r["method"] == method]
            ax.plot(
                [r["n_points"] for r in rows],
                [r["cpu_s"] for r in rows],
                marker="o",
                label=method,
                color=method_color(j, len(METHODS)),
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="evaluated points N",
            ylabel="CPU s per BO step",
            title="one BO step (fit + LogEI), Ackley-10",
        )
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "step.png", dpi=110)
        plt.close(fig)


def pass_marks(
    step: list[dict[str, Any]], table: list[dict[str, Any]], alpha: list[dict[str, Any]]
) -> list[str]:
    lines = []
    at_1000 = [r for r in step if r["n_points"] == 1000 and r["method"] in ("kcs", "scs")]
    if at_1000:
        saving = min(r["saving"] for r in at_1000)
        lines.append(
            f"- per-step saving of KCS/SCS at N = 1000, n = 10: {saving:.1%} (>= 90%: "
            f"**{'met' if saving >= 0.9 else 'missed'}**)"
        )
    for method in ("kcs", "scs"):
        rows = [r for r in table if r["method"] == method]
        if rows:
            fine = sum(not r.get("significantly_worse", False) for r in rows)
            roi = statistics.fmean(r["roi"] for r in rows if "roi" in r)
            lines.append(
                f"- {method.upper()}: not significantly worse than the exact GP on {fine} of {len(rows)} "
                f"functions (>= 3 of 5: **{'met' if fine >= 3 else 'missed'}**); campaign ROI {roi:.1%} "
                f"(>= 50%: **{'met' if roi >= 0.5 else 'missed'}**)"
            )
    rs = {r["problem"]: r["model_cpu_s"][0] for r in table if r["method"] == "rs"}
    clustered = {
        (r["problem"], r["method"]): r["model_cpu_s"][0]
        for r in table
        if r["method"] in ("kcs", "scs")
    }
    if rs and clustered:
        more = sum(rs[p] >= max(v for (q, _), v in clustered.items() if q == p) for p in rs)
        lines.append(
            f"- RS CPU time >= KCS and SCS on {more} of {len(rs)} problems (the paper: most)"
        )
    if alpha:
        small = sum(abs(r["cliffs_delta"]) <= 0.33 for r in alpha)
        lines.append(
            f"- |Cliff's delta| <= 0.33 for alpha = 20 vs the others in {small} of {len(alpha)} comparisons "
            f"(>= 80%: **{'met' if small >= 0.8 * len(alpha) else 'missed'}**)"
        )
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--parts",
        nargs="*",
        default=["step", "campaign", "alpha", "svm"],
        choices=["step", "campaign", "alpha", "svm"],
    )
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--functions", nargs="*", default=None, choices=FUNCTIONS)
    parser.add_argument("--alpha-functions", nargs="*", default=None, choices=FUNCTIONS)
    parser.add_argument("--workers", type=int, default=2)
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    smoke = args.smoke
    n = 2 if smoke else args.n
    budget = args.budget or (24 if smoke else 100 * n)
    seeds = args.seeds or (1 if smoke else 3)
    functions = args.functions or (["ackley"] if smoke else list(FUNCTIONS))
    alpha_functions = args.alpha_functions or functions[:2]
    step: list[dict[str, Any]] = []
    step_path = args.out / "step.json"
    if "step" in args.parts:
        step = step_times(
            [40, 80] if smoke else [250, 500, 1000, 2000],
            1 if smoke else 3,
            smoke,
            3 if smoke else 10,
        )
        step_path.write_text(json.dumps(step, indent=1))
    elif step_path.exists():
        step = json.loads(step_path.read_text())
    jobs = []
    for seed in range(seeds):
        if "campaign" in args.parts:
            jobs += [
                {
                    "part": "campaign",
                    "problem": f"{f}-{n}d",
                    "method": m,
                    "seed": seed,
                    "budget": budget,
                    "alpha": 20,
                    "smoke": smoke,
                }
                for f in functions
                for m in METHODS
            ]
        if "alpha" in args.parts:
            jobs += [
                {
                    "part": "campaign",
                    "problem": f"{f}-{n}d",
                    "method": m,
                    "seed": seed,
                    "budget": budget,
                    "alpha": a,
                    "smoke": smoke,
                }
                for f in alpha_functions
                for m in ("rs", "kcs", "scs")
                for a in (5, 10, 15)
            ]
        if "svm" in args.parts:
            jobs += [
                {
                    "part": "svm",
                    "problem": "svm-hpo",
                    "method": m,
                    "seed": seed,
                    "budget": 12 if smoke else 100,
                    "alpha": 20,
                    "smoke": smoke,
                }
                for m in METHODS
            ]
    runs = run_resumable(run_job, jobs, args.out, args.workers, key_fields=KEY) if jobs else []
    main_runs = [r for r in runs if r["alpha"] == 20]
    table = compare(main_runs)
    alphas = alpha_table(runs)
    result = {
        "smoke": smoke,
        "args": " ".join(argv or []),
        "step": step,
        "table": table,
        "alpha": alphas,
        "pass_marks": pass_marks(step, [r for r in table if r["problem"] != "svm-hpo"], alphas),
    }
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write(result, args.out)
    print("\n".join(result["pass_marks"]))
    return result


if __name__ == "__main__":
    main()
