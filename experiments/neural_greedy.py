"""Neural greedy BO (Paria thesis ch. 3, section 3.5): SimpleSMB/PosteriorSMB vs GP-EI and the
neural baselines, on Branin, Hartmann6 and Ackley, noiseless and noisy.

Every method runs in dsbo's campaign loop: the surrogate is a registered ``dsbo.surrogates``
name (the Lightning-trained zoo of ``models/`` through the BoTorch bridge) and the proposal a
registered policy:

============== ============================================ ==================================
method         surrogate                                    acquisition
============== ============================================ ==================================
simple-smb-gG  SimpleSMB (1 network, width ``--width``,     ``greedy``: maximize the network
               gamma ``G`` in ``--gammas``)                 (Alg. 3.1; 10 restarts)
simple-smb-    SimpleSMB, gamma ``--warm-gamma``, warm      ``greedy`` (the thesis' ablation:
warm           started from the previous fit (no fresh      warm starts collapse the
               init, no theta_0 resample)                   exploration of a fresh init)
posterior-smb- PosteriorSMB, gamma ``G`` in ``--gammas``    ``greedy``
gG
gp-ei          exact GP, RBF ARD kernel                     analytic LogEI
neural-ens     NeuralEnsemble (10 members, warm-started)    qLogNEI over the members (EI)
neural-lints   NeuralLinTS (BLR on last-layer features)     ``thompson`` (sampled on Sobol set)
neural-ucb     NeuralUCB (2 x 20 network)                   ``ucb``
random         -                                            Sobol
============== ============================================ ==================================

The acquisition optimizer is ``--optimizer lbfgsb`` (BoTorch's L-BFGS-B from 10 of 256
scored Sobol starts) or ``--optimizer thesis`` (section 3.7.1: 10 uniform random starts x 500
plain gradient-ascent steps at lr 0.01, :meth:`dsbo.acquisition.OptimizerSettings.thesis`);
GP-EI always uses L-BFGS-B. Each SMB family reports its own best gamma.

The exploration phase is the thesis' ``T_e = clip(5 d, 0.025 T, 0.075 T)`` Sobol points.
The thesis minimizes; dsbo maximizes the negated functions, and the reported regret is
``f(x_best) - f*`` in the thesis' (minimization) units, always of the *noise-free* value of
the observed points. Writes ``experiments/results/neural_greedy/{results.json, results.md,
runs.jsonl, regret_vs_evaluations.png}``; finished campaigns are kept in ``runs.jsonl`` so
an interrupted run resumes.

    python experiments/neural_greedy.py --smoke     # seconds: tiny networks, 1 seed
    python experiments/neural_greedy.py             # the reduced budget stated in the report
    python experiments/neural_greedy.py --width 5000 --optimizer thesis --seeds 5 \
        --problems branin hartmann6 --gammas 2 4 5 --methods-like smb gp-ei \
        --out experiments/results/neural_greedy_thesis     # the thesis' width and optimizer

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from campaign_runs import mean_and_se, plot_traces, run_resumable, seeds_per_row
from smoke_out import add_out_argument, output_folder

from dsbo.acquisition import OptimizerSettings
from dsbo.acquisition.plain import neural_greedy_exploration
from dsbo.campaign import Campaign
from dsbo.problems import get_problem

RESULTS = Path(__file__).resolve().parent / "results" / "neural_greedy"
GAMMAS = (0.5, 1.0, 2.0, 4.0)
FAMILIES = ("simple-smb-g", "posterior-smb-g")

#: name -> (registered problem, options, budget T of the thesis' setup or the issue)
PROBLEMS: dict[str, tuple[str, dict[str, Any], int]] = {
    "branin": ("branin", {}, 50),
    "hartmann6": ("hartmann6", {}, 80),
    "ackley-2": ("ackley-2d", {}, 50),
    "ackley-5": ("ackley-5d", {}, 80),
    "branin-noisy": ("branin", {"noise_std": 1.0}, 50),
    "hartmann6-noisy": ("hartmann6", {"noise_std": 0.1}, 80),
    "ackley-2-noisy": ("ackley-2d", {"noise_std": 1.0}, 50),
    "ackley-5-noisy": ("ackley-5d", {"noise_std": 1.0}, 80),
}


def method_specs(
    width: int, gammas: tuple[float, ...], warm_gamma: float, max_epochs: int
) -> dict[str, tuple[Any, Any]]:
    """method -> (surrogate spec, acquisition spec)."""
    smb = {"width": width, "max_epochs": max_epochs}
    # the baselines keep their thesis widths (ensemble 1000, LinTS 500, UCB 2 x 20) capped by
    # --width, and train for the same number of steps as the SMBs
    baseline = {"max_epochs": max_epochs}
    capped = {"ensemble": {"width": min(width, 1000)}, "lints": {"width": min(width, 500)}}
    specs: dict[str, tuple[Any, Any]] = {
        f"simple-smb-g{g:g}": ({"name": "simple-smb", "gamma": g, **smb}, {"name": "greedy"})
        for g in gammas
    }
    specs["simple-smb-warm"] = (
        {"name": "simple-smb", "gamma": warm_gamma, "warm_start": True, **smb},
        {"name": "greedy"},
    )
    for g in gammas:
        specs[f"posterior-smb-g{g:g}"] = (
            {"name": "posterior-smb", "gamma": g, **smb},
            {"name": "greedy"},
        )
    specs["gp-ei"] = ({"name": "gp", "kernel": "rbf"}, {"name": "logei"})
    specs["neural-ens"] = (
        {"name": "neural-ensemble", **capped["ensemble"], **baseline},
        {"name": "qlognei"},
    )
    specs["neural-lints"] = (
        {"name": "neural-lints", **capped["lints"], **baseline},
        {"name": "thompson"},
    )
    specs["neural-ucb"] = ({"name": "neural-ucb", **baseline}, {"name": "ucb"})
    specs["random"] = ("gp", {"name": "sobol"})
    return specs


def optimizer_settings(smoke: bool, optimizer: str, method: str) -> OptimizerSettings:
    """L-BFGS-B from scored starts, or the thesis' 10 uniform starts x 500 gradient steps
    (``greedy`` methods only; GP-EI and the baselines keep L-BFGS-B)."""
    if optimizer == "thesis" and "smb" in method:
        return OptimizerSettings.thesis(
            maxiter=20 if smoke else 500, num_restarts=2 if smoke else 10
        )
    if smoke:
        return OptimizerSettings(
            num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
        )
    return OptimizerSettings(
        num_restarts=10, raw_samples=256, maxiter=100, batch_limit=10, mc_samples=128
    )


def run_campaign(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, method, seed) campaign on one thread; regret uses noise-free values."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    name, options, _ = PROBLEMS[job["problem"]]
    problem = get_problem(name, **options)
    specs = method_specs(job["width"], tuple(job["gammas"]), job["warm_gamma"], job["max_epochs"])
    surrogate, acquisition = specs[job["method"]]
    campaign = Campaign(
        problem,
        surrogate=surrogate,
        acquisition=acquisition,
        budget=job["budget"],
        n_init=job["n_init"],
        seed=job["seed"],
        optimizer=optimizer_settings(job["smoke"], job["optimizer"], job["method"]),
    )
    start = time.perf_counter()
    campaign.run()
    seconds = time.perf_counter() - start
    trials = campaign.store.trials("completed")
    X = torch.tensor([t.x for t in trials], dtype=torch.double)
    true = problem.evaluate_true(X)[:, 0]
    optimum = problem.optimal_value
    regret = (optimum - torch.cummax(true, dim=0).values).tolist()
    step_times = [t.fit_time + t.acq_time for t in trials if t.acq_time > 0]
    return {
        **job,
        "trace": regret,
        "final_regret": regret[-1],
        "num_completed": len(trials),
        "seconds": seconds,
        "step_time": float(np.mean(step_times)) if step_times else math.nan,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--problems", nargs="*", default=None, choices=sorted(PROBLEMS))
    parser.add_argument("--methods", nargs="*", default=None)
    parser.add_argument(
        "--budget", type=int, default=None, help="T for every problem (default: per problem)"
    )
    parser.add_argument(
        "--width", type=int, default=None, help="SMB width (thesis 5000; default 500)"
    )
    parser.add_argument(
        "--max-epochs", type=int, default=None, help="full-batch training steps per fit"
    )
    parser.add_argument(
        "--gammas",
        type=float,
        nargs="+",
        default=list(GAMMAS),
        help="gammas of the SimpleSMB and PosteriorSMB methods (thesis range 0.5-5)",
    )
    parser.add_argument("--warm-gamma", type=float, default=4.0, help="gamma of simple-smb-warm")
    parser.add_argument(
        "--optimizer",
        choices=("lbfgsb", "thesis"),
        default="lbfgsb",
        help="acquisition optimizer of the SMB methods",
    )
    parser.add_argument(
        "--methods-like",
        nargs="*",
        default=None,
        help="run the methods whose name contains one of these strings",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--only-existing",
        action="store_true",
        help="run nothing new: report the campaigns already in runs.jsonl",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else 2)
    width = args.width or (32 if smoke else 500)
    max_epochs = args.max_epochs or (20 if smoke else 500)
    problems = args.problems or (
        ["branin", "ackley-2-noisy"]
        if smoke
        else ["branin", "hartmann6", "ackley-2", "ackley-2-noisy"]
    )
    gammas = tuple(args.gammas)
    all_methods = list(method_specs(width, gammas, args.warm_gamma, max_epochs))
    methods = args.methods or all_methods
    if args.methods_like:
        methods = [m for m in methods if any(s in m for s in args.methods_like)]
    unknown = sorted(set(methods) - set(all_methods))
    if unknown:
        parser.error(f"unknown --methods {unknown}; choose from {all_methods}")
    args.out.mkdir(parents=True, exist_ok=True)

    jobs = []
    for s in range(seeds):
        for p in problems:
            name, options, budget = PROBLEMS[p]
            budget = 6 if smoke else (args.budget or budget)
            dim = get_problem(name, **options).dim
            n_init = 3 if smoke else neural_greedy_exploration(dim, budget)
            jobs += [
                {
                    "problem": p,
                    "method": m,
                    "seed": s,
                    "budget": budget,
                    "n_init": n_init,
                    "surrogate": m,
                    "smoke": smoke,
                    "width": width,
                    "max_epochs": max_epochs,
                    "gammas": list(gammas),
                    "warm_gamma": args.warm_gamma,
                    "optimizer": args.optimizer,
                }
                for m in methods
            ]
    runs = run_resumable(run_campaign, jobs, args.out, args.workers, args.only_existing)
    result = summarize(runs, problems, methods, width, max_epochs, args.optimizer, smoke)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    plot_traces(
        runs,
        problems,
        methods,
        args.out / "regret_vs_evaluations.png",
        "simple regret (log10, noise-free)",
        transform=lambda p, t: np.log10(np.maximum(t, 1e-8)),
    )
    return result


def summarize(runs, problems, methods, width, max_epochs, optimizer, smoke) -> dict[str, Any]:
    table = []
    for p in problems:
        for m in methods:
            rs = [r for r in runs if r["problem"] == p and r["method"] == m]
            if not rs:
                continue
            regret, se = mean_and_se([r["final_regret"] for r in rs])
            table.append(
                {
                    "problem": p,
                    "method": m,
                    "runs": len(rs),
                    "budget": rs[0]["budget"],
                    "n_init": rs[0]["n_init"],
                    "regret": regret,
                    "regret_se": se,
                    "step_time": float(np.mean(steps))
                    if (steps := [r["step_time"] for r in rs if not math.isnan(r["step_time"])])
                    else math.nan,
                }
            )
    best_gamma: dict[str, dict[str, str]] = {}
    for family in FAMILIES:
        for p in problems:
            rows = [r for r in table if r["problem"] == p and r["method"].startswith(family)]
            if rows:
                best_gamma.setdefault(family.removesuffix("-g"), {})[p] = min(
                    rows, key=lambda r: r["regret"]
                )["method"]
    runs_per_row = sorted({r["runs"] for r in table})
    return {
        "seeds_per_row": runs_per_row,
        "width": width,
        "max_epochs": max_epochs,
        "optimizer": optimizer,
        "smoke": smoke,
        "table": table,
        "best_gamma": best_gamma,
    }


OPTIMIZER_TEXT = {
    "lbfgsb": "L-BFGS-B, 10 restarts from 256 scored Sobol points, 100 iterations",
    "thesis": "the thesis' 10 uniform starts x 500 gradient-ascent steps at lr 0.01 (GP-EI: L-BFGS-B)",
}


def write_markdown(result: dict[str, Any], path: Path) -> None:
    lines = [
        f"# Neural greedy ({seeds_per_row(result['table'])}; "
        f"SMB width {result['width']}, {result['max_epochs']} full-batch Adam steps per fit; "
        f"acquisition optimizer: {OPTIMIZER_TEXT[result['optimizer']]})"
        + (" (smoke)" if result["smoke"] else ""),
        "",
        "Final simple regret f(x_best) - f* of the noise-free values (thesis units, minimization), "
        "mean +- standard error over the `seeds` seeds of each row (seeds 0..seeds-1).",
        "",
        "| problem | method | seeds | T | T_e | regret | s per BO step |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["table"]:
        lines.append(
            f"| {r['problem']} | {r['method']} | {r['runs']} | {r['budget']} | {r['n_init']} | "
            f"{r['regret']:.4g} +- {r['regret_se']:.2g} | {r['step_time']:.2f} |"
        )
    if "posterior_gamma" in result:  # reports written before PosteriorSMB got its own gamma sweep
        lines += [
            "",
            f"`posterior-smb` ran at gamma {result['posterior_gamma']:g} only; "
            f"`simple-smb-warm` at gamma {result['posterior_gamma']:g}.",
        ]
    for family, best in result["best_gamma"].items():
        lines += [
            "",
            f"Best {family} gamma per problem: "
            + ", ".join(f"{p}: {m.removeprefix(family + '-g')}" for p, m in best.items()),
        ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
