"""Early stopping (issue 42): dsbo's stopping rules, alone and with BO, against full-training BO
and Optuna's TPE with its pruners, on learning curves of real training runs.

Problems (``early_stopping_problems.py``): ``zoo-diabetes`` (a zoo LightningModule, Lightning's
Trainer and dsbo's ReportCallback), ``mlp-cancer`` and ``cnn-digits`` (plain torch loops): 27
epochs each, mixed spaces with log floats, integers, categoricals and conditional parameters,
data that ship with scikit-learn, fixed train/validation splits, the validation loss after each
epoch as the curve. Every arm reads the curves through one cache of real training runs.

Issue 57 added ``mlp-overfit`` (curves that cross: 120 training rows of polynomial diabetes
features, where an unregularized network leads early and overfits, a regularized one starts
slower and ends lower) and ``lightning-digits`` (a user's ``LightningModule`` fitted by the
``lightning`` package's Trainer through ``ReportCallback``): ``early_stopping_more_problems.py``.

Budget: 20 full trainings counted in epochs (``budget_steps=540, max_steps=27``); a trial is
charged the epochs it trained. A trial that reached epoch 27 is *fully trained*; the rule is
not asked after its last epoch (a rung at 27 would otherwise stop fully trained trials).

Arms:

- ``bo-full``: ``dsbo.minimize``'s defaults, every trial trained to 27 epochs.
- ``random+median``, ``random+asha``, ``random+hyperband``: quasi-random proposals
  (``acquisition="sobol"``) with the rule.
- ``bo+median``, ``bo+asha``, ``bo+hyperband``: dsbo's default BO (the surrogate fitted on the
  fully trained trials) with the rule; ``bo-last+asha``, ``bo-last+hyperband``: the same with
  ``model: "last"`` (also fitted on the stopped trials at their last value); ``bohb``: Hyperband
  with ``model: "bohb"`` (fitted on the
  highest rung with enough trials); ``bo+mf-gp``: ASHA with ``model: "fidelity"``, run only if
  this dsbo accepts it (else left out, with the reason in results.md).
- ``bo-ts+recommended``: ``early_stopping=True`` with ``acquisition="thompson"`` (issue 57's
  exploratory arm, ``early_stopping_goals.py``).
- ``dehb``, ``synetune-asha-cqr``, ``synetune-bohb``: DEHB 0.1.2 and Syne Tune 0.16's ASHA-CQR
  and BOHB, asked and told in-process (``early_stopping_peers.py``; DEHB pins numpy < 2, so they
  run in the ``.venv-peers`` environment that file describes, left out with the reason when
  it is missing).
- ``optuna-tpe+hyperband``, ``optuna-tpe+median``: ``TPESampler(seed=seed)`` with
  ``HyperbandPruner(min_resource=1, max_resource=27, reduction_factor=3)`` / ``MedianPruner()``;
  conditional parameters suggested only while active; a trial the budget ends early is pruned.

Rules: ``median`` (dsbo's defaults = ``MedianPruner()``'s), ``asha`` and ``hyperband`` with
``min_resource=1, reduction_factor=3`` (as the Optuna arm). The dsbo arms all start from the
initial design ``dsbo.minimize`` picks for a budget of 20 trials (``n_init`` 6 here); the trial
cap is the epoch budget (a trial costs at least one epoch).

Per run: the trace of (epochs spent, best fully trained value so far), the final best, the
epochs at which the arm first reaches ``bo-full``'s final best of the same seed, wall and
proposal times. Runs are appended to ``runs.jsonl`` as they end (a restart skips finished runs;
an ``--arms`` or ``--seeds`` subset adds to the runs there); ``results.json`` (the summary only:
the runs stay in ``runs.jsonl``), ``results.md`` and ``best_vs_epochs.png`` are written from
every run recorded. The arms are in ``early_stopping_arms.py``, the report in
``early_stopping_report.py``.

    python experiments/early_stopping.py                        # 3 problems, 13 arms, seeds 0-9 (the 12 arms
                                                                # besides bo+mf-gp: 3.3 h of run time, one process each)
    python experiments/early_stopping.py --arms bo+asha bohb --seeds 0-4
    python experiments/early_stopping.py --report-only
    python experiments/early_stopping.py --out experiments/results/early_stopping/issue57 \
        --cache experiments/results/early_stopping/curves --arms bo+recommended \
        optuna-tpe+hyperband random+asha dehb synetune-asha-cqr synetune-bohb
                                                                # issue 57's goal: 5 problems, 6 arms, seeds 0-9
    python experiments/early_stopping.py --out experiments/results/early_stopping/issue57 \
        --cache experiments/results/early_stopping/curves --seeds 10-19 --arms bo-ts+recommended \
        optuna-tpe+hyperband random+asha dehb synetune-asha-cqr synetune-bohb
                                                                # its confirmation (fresh seeds)
    python experiments/early_stopping.py --smoke                # < 1 min: 2 problems on small data, 3 arms, 1 seed

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from early_stopping_arms import (  # noqa: F401  (the arms, for the tests and freeze_thaw.py)
    ARMS,
    BO_ES_ARMS,
    DSBO_ARMS,
    OPTUNA_ARMS,
    RECOMMENDED_ARM,
    n_init_for,
    run_job,
    unavailable,
)
from early_stopping_goals import (
    ARM,
    CONFIRMATION_ARM,
    CONFIRMATION_SEEDS,
    EXPLORATORY_ARMS,
    against_earlier_code,
    issue57_goals,
    issue57_markdown,
)
from early_stopping_problems import MAX_EPOCHS, make_problems
from early_stopping_report import plot, seed_ranges, summarize, write_markdown  # noqa: F401
from results_io import read_runs, write_results
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "early_stopping"
FULL_TRAININGS = 20
SMOKE_FULL_TRAININGS = 3
SMOKE_ARMS = ("bo-full", "bo+asha", "optuna-tpe+hyperband")
#: --smoke: the Lightning problem and one plain torch loop (the test trains the third apart).
SMOKE_PROBLEMS = ("zoo-diabetes", "mlp-cancer")


def parse_seeds(tokens: list[str]) -> list[int]:
    """``["0-9"]``, ``["0", "3", "5-6"]`` or ``["1,2"]`` -> the seeds, in order, once each."""
    seeds: list[int] = []
    for token in ",".join(tokens).split(","):
        if not token.strip():
            continue
        low, _, high = token.partition("-")
        seeds += range(int(low), int(high or low) + 1)
    return list(dict.fromkeys(seeds))


def job_key(run: dict[str, Any]) -> tuple:
    return (run["problem"], run["arm"], run["seed"], run["budget"], run["smoke"])


def run_all(jobs: list[dict[str, Any]], out: Path, workers: int) -> None:
    """Run the jobs not yet in ``out/runs.jsonl``, appending each as it ends."""
    log = out / "runs.jsonl"
    done = {job_key(r) for r in read_runs(log)}
    todo = [j for j in jobs if job_key(j) not in done]
    if len(todo) < len(jobs):
        print(f"resuming: {len(jobs) - len(todo)} of {len(jobs)} runs already in {log}", flush=True)
    started = time.perf_counter()

    def record(run: dict[str, Any], sink: Any, i: int) -> None:
        fcntl.flock(sink, fcntl.LOCK_EX)
        sink.write(json.dumps(run) + "\n")
        sink.flush()
        fcntl.flock(sink, fcntl.LOCK_UN)
        best = "none fully trained" if run["final_best"] is None else f"{run['final_best']:.4g}"
        print(
            f"[{i}/{len(todo)}] {run['problem']} {run['arm']} seed {run['seed']}: best {best}, {run['num_trials']} trials "
            f"({run['num_full']} full), {run['seconds']:.0f}s (elapsed {time.perf_counter() - started:.0f}s)",
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--smoke", action="store_true", help="small data, 3 arms, 1 seed, 3 full trainings"
    )
    parser.add_argument(
        "--seeds", nargs="+", default=None, help="e.g. 0-9 (default), 0 3 5-6; smoke: 0"
    )
    parser.add_argument("--arms", nargs="+", default=None, choices=ARMS)
    parser.add_argument(
        "--problems",
        nargs="+",
        default=None,
        help=f"problem names (default all; smoke: {' '.join(SMOKE_PROBLEMS)})",
    )
    parser.add_argument(
        "--full-trainings",
        type=int,
        default=None,
        help=f"budget in full trainings of {MAX_EPOCHS} epochs (default {FULL_TRAININGS}; smoke {SMOKE_FULL_TRAININGS})",
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="runs at once (processes, one thread each)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="run nothing: report the runs in runs.jsonl"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="the folder of cached training curves (default: OUT/curves); another folder's "
        "cache replays the same trainings",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    cache = args.cache or args.out / "curves"

    smoke = args.smoke
    seeds = parse_seeds(args.seeds) if args.seeds else ([0] if smoke else list(range(10)))
    full_trainings = args.full_trainings or (SMOKE_FULL_TRAININGS if smoke else FULL_TRAININGS)
    budget = full_trainings * MAX_EPOCHS
    problems = make_problems()
    chosen = args.problems or (SMOKE_PROBLEMS if smoke else list(problems))
    unknown = sorted(set(chosen) - set(problems))
    if unknown:
        parser.error(f"unknown problems {unknown}; choose from {list(problems)}")
    every_problem, problems = problems, {k: v for k, v in problems.items() if k in chosen}
    args.out.mkdir(parents=True, exist_ok=True)
    left_out = {}
    arms = []
    for arm in args.arms or (SMOKE_ARMS if smoke else ARMS):
        reason = unavailable(arm)
        if reason is None:
            arms.append(arm)
        else:
            left_out[arm] = reason
            print(f"{arm}: left out: {reason}", flush=True)
    jobs = [
        {
            "problem": p,
            "arm": a,
            "seed": s,
            "budget": budget,
            "full_trainings": full_trainings,
            "smoke": smoke,
            "cache": str(cache),
        }
        for s in seeds
        for p in problems
        for a in arms
    ]
    started = time.perf_counter()
    if not args.report_only:
        run_all(jobs, args.out, 1 if smoke else args.workers)
    # the report covers every problem recorded at this budget, not only this call's
    runs = [
        r
        for r in read_runs(args.out / "runs.jsonl")
        if r["budget"] == budget and r["smoke"] == smoke and r["problem"] in every_problem
    ]
    recorded = {r["problem"] for r in runs}
    problems = {k: v for k, v in every_problem.items() if k in problems or k in recorded}
    summary = summarize(runs, problems, budget, smoke)
    goals = {arm: issue57_goals(runs, arm) for arm in (ARM, *EXPLORATORY_ARMS)}
    goals["confirmation"] = issue57_goals(runs, CONFIRMATION_ARM, CONFIRMATION_SEEDS)
    summary.update(
        issue57=goals,
        left_out=left_out,
        python=sys.version.split()[0],
        cpu_count=os.cpu_count(),
        seconds_this_call=time.perf_counter() - started,
    )
    write_results(args.out, {"summary": summary}, runs)  # the runs themselves stay in runs.jsonl
    write_markdown(summary, args.out / "results.md")
    with (args.out / "results.md").open("a") as md:
        for section in filter(None, map(issue57_markdown, goals.values())):
            md.write("\n" + section)
        if args.out.resolve() != RESULTS.resolve():  # e.g. issue57/: the same arm's earlier runs
            earlier = against_earlier_code(runs, read_runs(RESULTS / "runs.jsonl"))
            md.write("\n" + earlier if earlier else "")
    plot(runs, problems, budget, args.out / "best_vs_epochs.png")
    return summary


if __name__ == "__main__":
    main()
