"""SADCBO and its six baselines on the paper's four synthetic contextual problems.

Martinelli et al., *Learning relevant contextual variables within Bayesian optimization*
(UAI 2024), section 5 and appendix D. Protocol (the paper's, at a reduced number of seeds and
optimizer restarts): problems ``contextual-{hartmann4, hartmann6, ackley, eggholder}`` (inputs
in the unit cube, output in ``[0, 1]``, noise variance 0.001, ``p(z)`` uniform); every design
evaluation costs 1 and every optimized context ``lambda_j`` (1 in the main runs); the budget is
``20 x`` the relevant dimensions in cost units, of which the initial design (``5 x`` the
relevant dimensions, contexts observed) is part; a GP with an RBF-ARD kernel (the paper's
squared-exponential) for every method; UCB with the Srinivas schedule (the paper's;
``--beta 0.2`` for the authors' code); 4 restarts and 256 raw samples. Regret is
``1 - max f(v)`` over the evaluated points, from noiseless values.

Parts (``--parts``): ``main`` (the seven methods), ``cost`` (context costs 0.1, 1, 3, 10 on
Hartmann4D: SADCBO, CBO, VBO, CaBO) and ``eta`` (SADCBO with eta 0.3 on Hartmann4D and
Hartmann6D; eta 0.8 is the main run). Writes ``experiments/results/contextual/{runs.jsonl,
results.json, results.md, regret_vs_cost.png, inclusion.png}``; finished runs are kept in
``runs.jsonl`` and a rerun resumes.

Part ``paired`` (not run by default; issue 32): SADCBO against CBO, paired by seed, on
Hartmann4D and Ackley (or ``--problems``), seeds ``0..N-1`` (``--seeds``, 10 by default for
this part), each with UCB's Srinivas schedule (the paper's; ``beta`` null in ``runs.jsonl``)
and the authors' constant ``beta = 0.2``. Each SADCBO run keeps, per BO iteration, the
regret-bound switch check (``switch_checks``: ``delta_r``, ``threshold``, ``rule``, ``fired``,
``kappa``, ``kl``; null where no check ran, i.e. the first iteration and after the switch) and
the BO iteration of the switch (``switch_iteration``, null if it never switched). Writes
``paired.json``, ``paired.md`` (per problem and beta: mean +- SE regret over the seeds run,
the seeds where SADCBO is better, the paired two-sided Wilcoxon signed-rank p-value, the runs
that switched and at what share of the budget) and ``paired_switch.png`` (``dR`` and the
threshold against the BO iteration, one faint line per seed), next to the main part's files,
which it leaves alone; its runs go to the same ``runs.jsonl`` (keyed by part and beta).

    python experiments/contextual.py --smoke            # a minute: Hartmann4D, tiny budget, 1 seed
    python experiments/contextual.py --seeds 5 --ablation-seeds 3    # what was run
    python experiments/contextual.py --smoke --parts paired           # the paired part, 1 seed
    python experiments/contextual.py --parts paired --seeds 10        # the paired part (80 runs)
    python experiments/contextual.py --seeds 5 --ablation-seeds 3 --report-only   # tables, plots
    python experiments/contextual.py --parts paired --seeds 10 --report-only

``runs.jsonl`` codes each run's per-trial roles, phases, BO flags and switch checks
(:data:`ROLE_CODES` and below); :func:`decode_run` reads a line back. The report is in
``contextual_report.py``.

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from campaign_runs import run_resumable
from contextual_report import (  # noqa: F401  (the report's names, for the tests)
    BURN_IN,
    METHODS,
    PAIRED_BETAS,
    PAIRED_METHODS,
    PAIRED_PROBLEMS,
    PROBLEMS,
    closest_approach,
    final_regret,
    inclusion,
    plot,
    plot_paired,
    summarize,
    summarize_paired,
    switch_fraction,
    write_markdown,
    write_paired_markdown,
)
from smoke_out import add_out_argument, output_folder

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.problems import get_problem

RESULTS = Path(__file__).resolve().parent / "results" / "contextual"
KEY = ("part", "problem", "method", "seed", "cost", "eta", "beta", "smoke")
PARTS = ("main", "cost", "eta", "paired")
INITIAL = ("sobol-init", "sobol-fallback", "default")
#: How ``runs.jsonl`` codes a run's per-trial fields (issue 59: the role names took half the
#: file). ``roles``: one string per trial, one character per context (``context_names`` order),
#: the codes of :data:`dsbo.analysis.trace.ROLE_CODES`; ``phase``: one string, a character per
#: trial; ``is_bo``: one string of 0 and 1; ``switch_checks``: each check the list of its
#: :data:`SWITCH_CHECK_FIELDS` values (null where none ran). :func:`decode_run` restores the
#: run, :func:`encode_run` codes it; a field with a value outside its codes stays as it is.
ROLE_CODES = {"ignored": "0", "observed": "1", "optimized": "2"}
PHASE_CODES = {"": "-", "observational": "1", "optimization": "2"}
SWITCH_CHECK_FIELDS = ("delta_r", "threshold", "rule", "fired", "kappa", "kl")


def jobs_for(
    parts: list[str],
    seeds: int,
    smoke: bool,
    problems: list[str],
    ablation_seeds: int | None = None,
    paired_seeds: int = 0,
    paired_problems: list[str] | None = None,
) -> list[dict[str, Any]]:
    jobs = []
    for seed in range(seeds):
        ablate = seed < (seeds if ablation_seeds is None else ablation_seeds)
        if "main" in parts:
            jobs += [
                {
                    "part": "main",
                    "problem": p,
                    "method": m,
                    "seed": seed,
                    "cost": 1.0,
                    "eta": 0.8,
                    "smoke": smoke,
                }
                for p in problems
                for m in METHODS
            ]
        if "cost" in parts and ablate:
            jobs += [
                {
                    "part": "cost",
                    "problem": "hartmann4",
                    "method": m,
                    "seed": seed,
                    "cost": c,
                    "eta": 0.8,
                    "smoke": smoke,
                }
                for c in (0.1, 3.0, 10.0)
                for m in ("sadcbo", "cbo", "vbo", "cabo")
            ]
        if "eta" in parts and ablate:
            jobs += [
                {
                    "part": "eta",
                    "problem": p,
                    "method": "sadcbo",
                    "seed": seed,
                    "cost": 1.0,
                    "eta": 0.3,
                    "smoke": smoke,
                }
                for p in ("hartmann4", "hartmann6")
            ]
    if "paired" in parts:
        jobs += [
            {
                "part": "paired",
                "problem": p,
                "method": m,
                "seed": seed,
                "cost": 1.0,
                "eta": 0.8,
                "beta": beta,
                "smoke": smoke,
            }
            for seed in range(paired_seeds)
            for p in (paired_problems or PAIRED_PROBLEMS)
            for beta in PAIRED_BETAS
            for m in PAIRED_METHODS
        ]
    return jobs


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One campaign; the numbers the report needs."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = get_problem(f"contextual-{job['problem']}", context_cost=job["cost"])
    relevant = len(problem.relevant_dims)
    if job["smoke"]:
        n_init, budget_cost = 6, 10.0
        optimizer = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, mc_samples=32)
        options = {"q_points": 2} if job["method"] == "sadcbo" else {}
    else:
        n_init, budget_cost = 5 * relevant, 20.0 * relevant
        optimizer = OptimizerSettings(num_restarts=4, raw_samples=256, maxiter=100, mc_samples=128)
        options = {}
    if job["method"] in ("sadcbo", "mmdbo"):
        options["eta"] = job["eta"]
    if job.get("beta") is not None:
        options["beta"] = job["beta"]
    campaign = Campaign(
        problem,
        surrogate={"name": "gp", "kernel": "rbf"},
        contexts={"policy": job["method"], "options": options},
        budget_cost=budget_cost,
        n_init=n_init,
        seed=job["seed"],
        optimizer=optimizer,
        dry_run=False,
    )
    start = time.perf_counter()
    campaign.run()
    seconds = time.perf_counter() - start
    trials = campaign.store.trials(("completed", "failed"))
    X = torch.tensor([t.x for t in trials], dtype=torch.double)
    true = problem.evaluate_true(X)[:, 0]
    bo = [t.generator not in INITIAL for t in trials]
    bo_trials = [t for t, b in zip(trials, bo, strict=True) if b]
    switched = [i for i, t in enumerate(bo_trials, 1) if t.metadata.get("phase") == "optimization"]
    run = {
        **job,
        "true_values": true.tolist(),
        "costs": [t.cost for t in trials],
        "is_bo": bo,
        "roles": [
            [t.metadata.get("contexts", {}).get(n, "observed") for n in problem.context_names]
            for t in trials
        ],
        "phase": [t.metadata.get("phase", "") for t in trials],
        # per BO iteration (1, 2, ...): SADCBO's switch check (None where none ran) and the
        # iteration whose proposal was the first of the optimization phase (None: no switch)
        "switch_checks": [t.metadata.get("switch_check") for t in bo_trials],
        "switch_iteration": switched[0] if switched else None,
        "acq_time": [t.acq_time for t in trials],
        "context_names": list(problem.context_names),
        "relevant_contexts": problem.metadata["relevant_contexts"],
        "budget_cost": budget_cost,
        "seconds": seconds,
    }
    return encode_run(run)  # as runs.jsonl holds it


def encode_run(run: dict[str, Any]) -> dict[str, Any]:
    """The run as ``runs.jsonl`` holds it (the codes above); its fields in the same order."""
    out = dict(run)
    if all(isinstance(row, list) and set(row) <= set(ROLE_CODES) for row in run["roles"]):
        out["roles"] = ["".join(ROLE_CODES[role] for role in row) for row in run["roles"]]
    if isinstance(run["phase"], list) and set(run["phase"]) <= set(PHASE_CODES):
        out["phase"] = "".join(PHASE_CODES[phase] for phase in run["phase"])
    if isinstance(run["is_bo"], list) and all(isinstance(b, bool) for b in run["is_bo"]):
        out["is_bo"] = "".join("1" if b else "0" for b in run["is_bo"])
    out["switch_checks"] = [
        list(c.values()) if isinstance(c, dict) and tuple(c) == SWITCH_CHECK_FIELDS else c
        for c in run["switch_checks"]
    ]
    return out


def decode_run(run: dict[str, Any]) -> dict[str, Any]:
    """The run with its per-trial fields as :func:`run_job` measured them: ``roles`` a list of
    role names per trial, ``phase`` a name per trial, ``is_bo`` booleans, each switch check a
    dict (or None); a run recorded uncoded is returned as it is."""
    out = dict(run)
    roles = {code: role for role, code in ROLE_CODES.items()}
    phases = {code: phase for phase, code in PHASE_CODES.items()}
    out["roles"] = [
        [roles[c] for c in row] if isinstance(row, str) else row for row in run["roles"]
    ]
    if isinstance(run["phase"], str):
        out["phase"] = [phases[c] for c in run["phase"]]
    if isinstance(run["is_bo"], str):
        out["is_bo"] = [c == "1" for c in run["is_bo"]]
    out["switch_checks"] = [
        dict(zip(SWITCH_CHECK_FIELDS, c, strict=True)) if isinstance(c, list) else c
        for c in run["switch_checks"]
    ]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default 5; 10 for the paired part)"
    )
    parser.add_argument(
        "--ablation-seeds", type=int, default=None, help="seeds of the cost and eta parts"
    )
    parser.add_argument("--parts", nargs="*", default=["main", "cost", "eta"], choices=PARTS)
    parser.add_argument("--problems", nargs="*", default=None, choices=PROBLEMS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: report the runs of these parts and seeds that runs.jsonl holds",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    seeds = args.seeds or (1 if args.smoke else 5)
    problems = args.problems or (["hartmann4"] if args.smoke else list(PROBLEMS))
    parts = ["main"] if args.smoke and args.parts == ["main", "cost", "eta"] else args.parts
    paired_seeds = args.seeds or (1 if args.smoke else 10)
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = jobs_for(
        parts,
        seeds,
        args.smoke,
        problems,
        args.ablation_seeds,
        paired_seeds,
        args.problems or list(PAIRED_PROBLEMS),
    )
    recorded = run_resumable(
        run_job, jobs, args.out, args.workers, only_existing=args.report_only, key_fields=KEY
    )
    runs = [decode_run(run) for run in recorded]
    result: dict[str, Any] = {}
    if {"main", "cost", "eta"} & set(parts):  # the paired part alone leaves these files alone
        result = summarize(runs, args.smoke)
        (args.out / "results.json").write_text(json.dumps(result, indent=1))
        write_markdown(result, args.out / "results.md")
        plot(runs, args.out)
        print("\n".join(result["pass_marks"]))
    if "paired" in parts:
        result["paired"] = summarize_paired(runs, args.smoke)
        (args.out / "paired.json").write_text(json.dumps(result["paired"], indent=1))
        write_paired_markdown(result["paired"], args.out / "paired.md")
        plot_paired(runs, args.out)
        print((args.out / "paired.md").read_text())
    return result


if __name__ == "__main__":
    main()
