"""Continue an Optuna study in dsbo (issue 44's goal): a study of 100 TPE trials, imported from
Optuna into dsbo and continued there for 20 more trials, against the same study continued for
20 trials with Optuna's TPE, paired by seed.

Per seed: ``optuna.create_study(direction="minimize", sampler=TPESampler(seed=seed))`` runs 100
trials on a problem of ``mixed_spaces.py`` (default ``cond-synthetic``: log-scale float and
integer, a four-way categorical and a float that exists only for one category; any of its
problems with ``--problem``; conditional parameters suggested only while active, as its TPE
arm). Then

- **dsbo**: ``from_optuna(study, space=problem.space)`` + ``Tuner.import_trials`` (through
  ``ImportedStudy.tuner``): a ``dsbo.Tuner`` with dsbo's defaults (``seed=seed``, budget 20;
  the 100 imported trials are prior data, not charged to the budget) runs 20 trials;
- **tpe**: the same study (its sampler's state carried on; dsbo read a snapshot before) runs
  20 more trials with TPE.

Both arms evaluate through ``mixed_spaces.Recorder`` (one evaluation code). Reported per seed:
the best of the 100 imported trials, the best-so-far over the 20 continuation trials of each
arm, the final bests; over the seeds: mean +- standard error, paired wins (dsbo lower), a
paired two-sided Wilcoxon signed-rank p-value (``mixed_spaces_report.wilcoxon``). Runs are appended to
``runs.jsonl`` as each seed ends (a restart skips seeds done with the same settings);
``results.json`` (the summary only: the runs stay in ``runs.jsonl``), ``results.md`` and
``best_so_far.png`` are written from every run recorded.

    python experiments/continue_optuna_study.py                        # cond-synthetic, seeds 0-9, 100 + 20
    python experiments/continue_optuna_study.py --problem svc-digits --seeds 5
    python experiments/continue_optuna_study.py --report-only
    python experiments/continue_optuna_study.py --smoke                # < 1 min: 1 seed, 12 + 3 trials

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from mixed_spaces_problems import Recorder, make_problems, suggest_active
from mixed_spaces_report import mean_se, wilcoxon
from results_io import save_figure, write_results
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "continue_optuna_study"
PROBLEM = "cond-synthetic"
START, MORE, SEEDS = 100, 20, 10
SMOKE_START, SMOKE_MORE = 12, 3


def best_so_far(start: float, values: list[float]) -> list[float]:
    """The best value after each continuation trial, from the best of the imported study."""
    trace, best = [], start
    for v in values:
        best = min(best, v) if math.isfinite(v) else best
        trace.append(best)
    return trace


def run_seed(problem_name: str, seed: int, start: int, more: int, smoke: bool) -> dict[str, Any]:
    import optuna
    import torch

    from dsbo.integrations.studies_optuna import from_optuna

    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    problem = make_problems()[problem_name]
    f = Recorder(problem)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(lambda trial: f(suggest_active(trial, problem.space)), n_trials=start)
    start_best = min(f.values)

    t0 = time.perf_counter()  # dsbo: read the study, import it, continue for `more` trials
    imported = from_optuna(study, space=problem.space)
    options: dict[str, Any] = {"budget": more, "seed": seed, "direction": "minimize"}
    if smoke:
        from dsbo.acquisition import OptimizerSettings

        options.update(
            dry_run=False,
            optimizer=OptimizerSettings(
                num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
            ),
        )
    tuner, result = imported.tuner(**options)
    imported_used = tuner.campaign.num_used
    dsbo_f = Recorder(problem)
    out = tuner.run(dsbo_f)
    dsbo_seconds = time.perf_counter() - t0
    history = out.history
    generators = history.loc[history["generator"] != "imported", "generator"].tolist()

    t0 = time.perf_counter()  # TPE: the same study, `more` trials on
    n_before = len(f.values)
    study.optimize(lambda trial: f(suggest_active(trial, problem.space)), n_trials=more)
    tpe_seconds = time.perf_counter() - t0
    tpe_values = f.values[n_before:]
    return {
        "problem": problem_name,
        "seed": seed,
        "start": start,
        "more": more,
        "smoke": smoke,
        "start_best": start_best,
        "imported": len(result.trials),
        "refused": result.refused,
        "imported_charged": imported_used,
        "dsbo_used": tuner.campaign.num_used,
        "dsbo_generators": generators,
        "dsbo_values": dsbo_f.values,
        "tpe_values": tpe_values,
        "dsbo_trace": best_so_far(start_best, dsbo_f.values),
        "tpe_trace": best_so_far(start_best, tpe_values),
        "dsbo_reported_best": out.best_value,
        "dsbo_seconds": dsbo_seconds,
        "tpe_seconds": tpe_seconds,
    }


def key(run: dict[str, Any]) -> tuple:
    return run["problem"], run["seed"], run["start"], run["more"], run["smoke"]


def summarize(runs: list[dict[str, Any]], optimum: float | None) -> dict[str, Any]:
    dsbo_final = {r["seed"]: r["dsbo_trace"][-1] for r in runs}
    tpe_final = {r["seed"]: r["tpe_trace"][-1] for r in runs}
    test = wilcoxon(dsbo_final, tpe_final)
    mean_dsbo, se_dsbo = mean_se(list(dsbo_final.values()))
    mean_tpe, se_tpe = mean_se(list(tpe_final.values()))
    if test["pairs"] < 3:
        verdict = "inconclusive (fewer than 3 seeds)"
    elif test["p"] is not None and test["p"] < 0.05:
        verdict = "met" if test["wins"] > test["losses"] else "not met (TPE better)"
    else:
        verdict = f"not shown (p = {test['p']})"
    return {
        "seeds": sorted(dsbo_final),
        "dsbo_mean": mean_dsbo,
        "dsbo_se": se_dsbo,
        "tpe_mean": mean_tpe,
        "tpe_se": se_tpe,
        "start_mean": mean_se([r["start_best"] for r in runs])[0],
        "wilcoxon": test,
        "verdict": verdict,
        "optimum": optimum,
        "dsbo_seconds_mean": mean_se([r["dsbo_seconds"] for r in runs])[0],
        "tpe_seconds_mean": mean_se([r["tpe_seconds"] for r in runs])[0],
    }


def fmt(x: Any, digits: int = 4) -> str:
    return (
        "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.{digits}g}"
    )


def write_markdown(
    summary: dict[str, Any],
    runs: list[dict[str, Any]],
    path: Path,
    problem: str,
    start: int,
    more: int,
    smoke: bool,
) -> None:
    t = summary["wilcoxon"]
    lines = [
        f"# An Optuna study continued in dsbo vs with TPE ({problem}, {start} TPE trials + {more})"
        + (" (smoke)" if smoke else ""),
        "",
        f"Goal (issue 44): a study of {start} trials imported from Optuna and continued in dsbo reaches a better "
        f"value in {more} more trials than continuing it with Optuna's TPE (paired seeds). **{summary['verdict']}**: "
        f"dsbo lower on {t['wins']} of {t['pairs']} seeds, TPE lower on {t['losses']}, Wilcoxon p = {fmt(t['p'], 3)}.",
        "",
        f"| seed | best of the study | dsbo after +{more} | TPE after +{more} | dsbo first generator |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(runs, key=lambda r: r["seed"]):
        first = r["dsbo_generators"][0] if r["dsbo_generators"] else "-"
        lines.append(
            f"| {r['seed']} | {fmt(r['start_best'])} | {fmt(r['dsbo_trace'][-1])} | {fmt(r['tpe_trace'][-1])} | {first} |"
        )
    lines += [
        "",
        f"Mean +- se: dsbo {fmt(summary['dsbo_mean'])} +- {fmt(summary['dsbo_se'], 2)}, "
        f"TPE {fmt(summary['tpe_mean'])} +- {fmt(summary['tpe_se'], 2)} (study's best {fmt(summary['start_mean'])}; "
        f"optimum {fmt(summary['optimum'])}). Wall time of the {more} trials (mean, shared 2-core machine): "
        f"dsbo {fmt(summary['dsbo_seconds_mean'], 3)} s (reading and importing the study included), "
        f"TPE {fmt(summary['tpe_seconds_mean'], 3)} s.",
    ]
    path.write_text("\n".join(lines) + "\n")


def plot(runs: list[dict[str, Any]], optimum: float | None, path: Path, problem: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm, color in (("dsbo", "tab:blue"), ("tpe", "tab:orange")):
        traces = np.array([[r["start_best"], *r[f"{arm}_trace"]] for r in runs])
        if optimum is not None:
            traces = np.maximum(traces - optimum, 1e-12)
        mean = traces.mean(0)
        se = (
            traces.std(0, ddof=1) / math.sqrt(len(runs))
            if len(runs) > 1
            else np.zeros(traces.shape[1])
        )
        x = np.arange(traces.shape[1])
        ax.plot(x, mean, color=color, label=f"{arm} ({len(runs)} seeds)")
        ax.fill_between(x, mean - se, mean + se, color=color, alpha=0.2)
    ax.set_xlabel("trials after the imported study")
    ax.set_ylabel("regret (best so far)" if optimum is not None else "best so far")
    if optimum is not None:
        ax.set_yscale("log")
    ax.set_title(problem)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"1 seed, {SMOKE_START} + {SMOKE_MORE} trials, small settings",
    )
    parser.add_argument(
        "--problem", default=PROBLEM, help=f"a problem of mixed_spaces.py (default {PROBLEM})"
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help=f"seeds 0..n-1 (default {SEEDS}; smoke 1)"
    )
    parser.add_argument(
        "--start", type=int, default=None, help=f"TPE trials of the study (default {START})"
    )
    parser.add_argument(
        "--more", type=int, default=None, help=f"continuation trials (default {MORE})"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="run nothing: report the runs in runs.jsonl"
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    problems = make_problems()
    if args.problem not in problems:
        parser.error(f"unknown problem {args.problem!r}; choose from {list(problems)}")
    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else SEEDS)
    start = args.start or (SMOKE_START if smoke else START)
    more = args.more or (SMOKE_MORE if smoke else MORE)
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / "runs.jsonl"
    runs = (
        [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        if log.exists()
        else []
    )
    done = {key(r) for r in runs}
    if not args.report_only:
        for seed in range(seeds):
            if (args.problem, seed, start, more, smoke) in done:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = run_seed(args.problem, seed, start, more, smoke)
            with log.open("a") as fh:
                fh.write(json.dumps(run) + "\n")
            runs.append(run)
            print(
                f"seed {seed}: study {run['start_best']:.4g}, dsbo {run['dsbo_trace'][-1]:.4g}, "
                f"tpe {run['tpe_trace'][-1]:.4g}",
                flush=True,
            )
    runs = [
        r
        for r in runs
        if (r["problem"], r["start"], r["more"], r["smoke"]) == (args.problem, start, more, smoke)
    ]
    if not runs:
        raise SystemExit(f"no runs recorded in {log} for these settings")
    optimum = problems[args.problem].optimum
    summary = summarize(runs, optimum)
    summary.update(
        problem=args.problem,
        start=start,
        more=more,
        smoke=smoke,
        python=sys.version.split()[0],
        cpu_count=os.cpu_count(),
    )
    write_results(args.out, {"summary": summary}, runs)  # the runs themselves stay in runs.jsonl
    write_markdown(summary, runs, args.out / "results.md", args.problem, start, more, smoke)
    plot(runs, optimum, args.out / "best_so_far.png", args.problem)
    return summary


if __name__ == "__main__":
    main()
