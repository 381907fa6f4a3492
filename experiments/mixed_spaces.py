"""dsbo on mixed search spaces (log, integer, categorical and conditional parameters) against
Optuna's TPE, Ax and quasi-random search, through one evaluation code for every arm.

Problems (minimization, each evaluation well under a second on one core):

1. ``svc-digits``: an RBF/poly/sigmoid/linear ``sklearn.svm.SVC`` on 900 rows of
   ``load_digits`` (pixels / 16), 3-fold stratified CV error on a fixed split. ``C``, ``gamma``,
   ``tol`` on a log scale, ``degree`` an integer, ``kernel``, ``shrinking`` and ``class_weight``
   categorical; ``gamma`` exists only for the rbf/poly/sigmoid kernels, ``degree`` only for poly,
   ``coef0`` only for poly/sigmoid. Library defaults = sklearn's (``gamma='scale'`` evaluated on
   the data). Optimum unknown: the best error is reported, not a regret.
2. ``branin-cat``: a CoCaBO-style mixed Branin: ``x1`` linear, ``x2`` on a log scale (mapped to
   Branin's ``[0, 15]``), a categorical ``c1`` that scales and offsets it and a categorical ``c2``
   that shifts ``x1`` and offsets it. Known optimum ``0.397887 + 0.3 = 0.697887`` (``c1=a``,
   ``c2=q``; every shift keeps a Branin minimizer inside the box).
3. ``ackley-cond``: a neural-network-training-shaped Ackley: ``optimizer`` (categorical) sets the
   best log learning rate and an offset, ``momentum`` exists only for sgd, ``layers`` is an
   integer, ``width`` a log-scale integer, ``dropout`` linear. Known optimum 0 (sgd, lr 10^-1.5,
   momentum 0.9, 4 layers, width 256, dropout 0.3). No linear constraint (TPE and random search
   would need rejection; left out so that every arm searches the same space).
4. ``cond-synthetic``: a synthetic space shaped like a tuning problem whose best category needs
   its own parameter set right: ``lr`` a log-scale float in ``[1e-5, 1]``, ``width`` a log-scale
   integer in ``[8, 1024]``, ``family`` a four-way categorical and ``shape`` a float that exists
   only for ``family=c``. The value is a bowl in log space,
   ``((log10 lr + 2) / 1.5)^2 + ((log2 width - 7) / 2)^2``, plus an offset per family: ``a`` 0.5,
   ``b`` and ``d`` 1.0, ``c`` ``1.5 (1 - exp(-(shape - 0.7)^2 / (2 * 0.08^2)))``, so that ``c`` is
   best only with ``shape`` near 0.7 (a uniform ``shape`` costs 1.2 on average, worse than ``a``).
   Known optimum 0 (``lr`` 0.01, ``width`` 128, ``family=c``, ``shape`` 0.7); library defaults
   ``lr`` 1e-3, ``width`` 64, ``family=a`` (value 1.19).
5. ``mlp-digits``: ``sklearn.neural_network.MLPClassifier`` (one hidden layer of ``width``
   units, 30 epochs, ``random_state=0``) on the 900 digits rows of ``svc-digits``, error on a
   fixed stratified holdout of 300 rows (trained on the other 600). ``learning_rate_init``,
   ``alpha``, ``width`` (integer) and ``batch_size`` (integer) on a log scale, ``activation``
   (relu/tanh/logistic) and ``solver`` (adam/sgd) categorical, ``momentum`` only for sgd.
   Library defaults = sklearn's (``batch_size='auto'`` is 200 rows here). A fit that fails
   (diverged weights) scores 1.0. Optimum unknown.
6. ``sgd-cancer``: ``sklearn.linear_model.SGDClassifier`` on standardized
   ``load_breast_cancer`` (569 rows, 30 features; the scaler fitted inside each fold),
   5-fold stratified CV error on a fixed split. ``loss`` (hinge/log_loss/modified_huber),
   ``penalty`` (l2/l1/elasticnet) with ``l1_ratio`` only for elasticnet, ``alpha`` on a log
   scale, ``learning_rate`` (optimal/constant/invscaling/adaptive) with ``eta0`` (log) only when
   it is not ``optimal``, ``average`` a boolean. Library defaults = sklearn's. A fold whose fit
   fails (overflow) counts as all wrong. Optimum unknown.

7.-10. Issue 58's ``branch-corner``, ``branch-int`` (the best category's own conditional
   parameters start badly in a uniform design), ``cat-only`` (only categoricals) and
   ``family-digits`` (a scikit-learn model family as the category, each with its own
   parameters): ``mixed_spaces_branch_problems.py``.

Arms (budget 40 evaluations each): a dsbo arm is a surrogate (``dsbo-gp``, ``dsbo-map-saas``)
followed by options: ``+winsorize`` or ``+copula`` (``outcome_warping``:
the surrogate fitted to the objective with its bad tail clipped at Tukey's fence, Ax's default
rule, or to normal scores of its ranks; compared paired with the unwarped arm too), then
``+bonsai`` (``bonsai=True``, ``default`` = the problem's library defaults; compared with the
same arm unpruned). Arms without a warping pass ``outcome_warping=None`` explicitly.
``+mixed`` fits the one-hot columns with the kernel of BoTorch's ``MixedSingleTaskGP``
(``surrogate={"name": "gp", "categorical": "mixed"}``) instead of the ARD Matern kernel;
``+md`` sets ``min_distance=0.01`` (the library default since issue 45), every other dsbo arm
``min_distance=0``; ``+explore`` sets ``stall_patience=3`` (a Thompson draw when the search
stalls, :mod:`dsbo.acquisition.exploration`; the library default since issue 45's second
slice; ``+explore5``: ``stall_patience=5``), every other dsbo arm ``stall_patience=0``; ``+warm`` starts each GP fit from the
previous fit's hyperparameters (``surrogate={"name": "gp", "warm_start": True}``, a fit from
BoTorch's initialization every 5 fits).
``dsbo-gp+copula+md+explore`` is what ``dsbo.minimize``'s defaults ran on these spaces from issue
45 to issue 58.
``+branch`` sets ``branches="thompson"`` (a design balanced over each categorical's values,
and a stalled search's draw among the incumbent's copies in every branch,
:mod:`dsbo.acquisition.branches`; the library default since issue 58), every other dsbo arm
``branches="acquisition"``; ``dsbo-gp+copula+md+explore+branch`` is what ``dsbo.minimize``'s
defaults run since issue 58 (its goals, fixed before the runs: ``mixed_spaces_goals.py``).
``smac3``: SMAC3 2.4.1's HPO facade, conditions native (``mixed_spaces_smac.py``). Then
``optuna-tpe`` (``TPESampler(seed=seed)``, conditional parameters suggested
only while active), ``ax`` (Ax 1.3.1 ``Client``, default generation strategy; a conditional
parameter whose condition is one value of one parent is an Ax ``dependent_parameters`` child, one
whose condition lists several values cannot be a child in Ax's tree and is passed always, the
evaluation dropping it while inactive) and ``random`` (dsbo ``acquisition="sobol"`` over a raw Sobol design).

Runs are appended to ``runs.jsonl`` as they finish (a restart skips finished runs); the report
(``results.json``, ``README.md``, ``best_vs_evaluations.png``) is written from whatever is there.
``results.json`` is the summary only: the runs are read from ``runs.jsonl``. The problems are in
``mixed_spaces_problems.py``, the arms in ``mixed_spaces_arms.py``, the report in
``mixed_spaces_report.py``.

    python experiments/mixed_spaces.py                          # 10 seeds, budget 40
    python experiments/mixed_spaces.py --arms dsbo-gp ax --seeds 5
    python experiments/mixed_spaces.py --report-only            # tables/plot from runs.jsonl
    python experiments/mixed_spaces.py --smoke                  # ~1 min: 1 seed, budget 6, 3 problems
    python experiments/mixed_spaces.py --problems mlp-digits sgd-cancer --seeds 3

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
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

from mixed_spaces_arms import (  # noqa: F401  (the arms' names, for the tests and the other experiments)
    ARMS,
    BASELINES,
    BONSAI_ARMS,
    DEFAULT_ARM,
    EXTERNAL,
    FIRST_ARMS,
    GOAL_ARMS,
    LATER_ARMS,
    REPORT_ONLY_ARMS,
    SMOKE_ARMS,
    WARPED_ARMS,
    run_job,
    stall_patience,
)
from mixed_spaces_problems import (  # noqa: F401  (the problems, for the other experiments)
    MixedProblem,
    Recorder,
    make_problems,
    suggest_active,
)
from mixed_spaces_report import plot, summarize, write_markdown
from results_io import read_runs, write_results
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "mixed_spaces"
BUDGET = 40
SMOKE_BUDGET = 6
#: --smoke runs two problems with conditional parameters and the one of only categoricals.
SMOKE_PROBLEMS = ("svc-digits", "ackley-cond", "cat-only")


def job_key(run: dict[str, Any]) -> tuple:
    return (run["problem"], run["arm"], run["seed"], run["budget"], run["smoke"])


def available_arms(arms: list[str], smoke: bool) -> list[str]:
    import importlib.util

    out = []
    for arm in arms:
        module = EXTERNAL.get(arm)
        if module and importlib.util.find_spec(module) is None:
            message = (
                f"{arm}: {module} is not installed (pip install -e '.[compare]'); skipping this arm"
            )
            if not smoke:
                raise SystemExit(message)
            print(message, flush=True)
            continue
        out.append(arm)
    return out


def run_all(jobs: list[dict[str, Any]], out: Path, workers: int) -> None:
    """Run the jobs not yet in ``out/runs.jsonl``, appending each as it finishes."""
    log = out / "runs.jsonl"
    done = {job_key(run): run for run in read_runs(log)}
    todo = [j for j in jobs if job_key(j) not in done]
    if len(todo) < len(jobs):
        print(f"resuming: {len(jobs) - len(todo)} of {len(jobs)} runs already in {log}", flush=True)
    started = time.perf_counter()

    def record(run: dict[str, Any], sink: Any, i: int) -> None:
        done[job_key(run)] = run
        fcntl.flock(
            sink, fcntl.LOCK_EX
        )  # two runners (e.g. GP arms and MAP-SAAS arms) may share the file
        sink.write(json.dumps(run) + "\n")
        sink.flush()
        fcntl.flock(sink, fcntl.LOCK_UN)
        print(
            f"[{i}/{len(todo)}] {run['problem']} {run['arm']} seed {run['seed']}: best {run['final_best']:.4g}, "
            f"{run['seconds']:.0f}s (elapsed {time.perf_counter() - started:.0f}s)",
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
        "--smoke",
        action="store_true",
        help="1 seed, budget 6, 3 problems, 10 arms, tiny optimizer settings",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..n-1 (default 10; smoke 1)"
    )
    parser.add_argument(
        "--budget", type=int, default=None, help=f"evaluations per run (default {BUDGET})"
    )
    parser.add_argument("--arms", nargs="*", default=None, choices=ARMS)
    parser.add_argument(
        "--problems",
        nargs="*",
        default=None,
        help=f"problem names (default all; smoke: {' '.join(SMOKE_PROBLEMS)})",
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="runs at once (processes, one thread each)"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="run nothing: report the runs in runs.jsonl"
    )
    parser.add_argument("--notes", type=Path, default=None, help="markdown appended to README.md")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else 10)
    budget = args.budget or (SMOKE_BUDGET if smoke else BUDGET)
    problems = make_problems()
    chosen = args.problems or (SMOKE_PROBLEMS if smoke else list(problems))
    unknown = sorted(set(chosen) - set(problems))
    if unknown:
        parser.error(f"unknown problems {unknown}; choose from {list(problems)}")
    problems = {k: v for k, v in problems.items() if k in chosen}
    arms = available_arms(list(args.arms or (SMOKE_ARMS if smoke else ARMS)), smoke)
    args.out.mkdir(parents=True, exist_ok=True)
    # GP/random/TPE/Ax/GP+BONSAI for every seed first, MAP-SAAS after (seed-major inside each)
    phases = [[a for a in arms if a in FIRST_ARMS], [a for a in arms if a in LATER_ARMS]]
    jobs = [
        {"problem": p, "arm": a, "seed": s, "budget": budget, "smoke": smoke}
        for phase in phases
        for s in range(seeds)
        for p in problems
        for a in phase
    ]
    if not args.report_only:
        run_all(jobs, args.out, 1 if smoke else args.workers)
    # the report covers every run recorded (other arms and seeds too), not only this call's
    runs = [
        r
        for r in read_runs(args.out)
        if r["budget"] == budget and r["smoke"] == smoke and r["problem"] in problems
    ]
    summary = summarize(runs, problems, budget, smoke)
    summary["python"] = sys.version.split()[0]
    summary["cpu_count"] = os.cpu_count()
    write_results(args.out, {"summary": summary}, runs)  # the runs themselves stay in runs.jsonl
    notes = args.notes.read_text() if args.notes and args.notes.exists() else ""
    write_markdown(summary, args.out / "README.md", notes)
    plot(runs, problems, args.out / "best_vs_evaluations.png")
    return summary


if __name__ == "__main__":
    main()
