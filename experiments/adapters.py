"""dsbo's proposals reached three ways on the mixed-space problems: dsbo's own ask/tell
(:class:`dsbo.Tuner`, what :func:`dsbo.minimize` runs), Optuna's ask/tell with
:class:`dsbo.integrations.optuna.DsboSampler`, and Ray Tune with
:class:`dsbo.integrations.ray.DsboSearch` (issue 44's goals: the same quality within one
standard error, the adapter adding at most 5% to the time per proposal).

Every arm searches the problem's space with dsbo's defaults (``surrogate="auto"``, the copula
warping, ``min_distance``) at the same seed and the same initial-design size (the Optuna
sampler's ``n_startup_trials`` = the Tuner's ``n_init``), ``budget`` evaluations each, one
trial at a time (Ray: ``ConcurrencyLimiter(max_concurrent=1)``). The problems and their
evaluation come from ``experiments/mixed_spaces.py``. Through Optuna, the objective suggests
the parameters define-by-run (a conditional parameter only while active), as in that
experiment's TPE arm, and the sampler is given the dsbo space (``DsboSampler(space=...)``,
conditions included), so dsbo proposes every active parameter; through Ray, the searcher is
given the dsbo space (conditions included).

**Time per proposal.** For each proposal the wall time of the route's call (``tuner.ask()``;
``study.ask()`` and the trial's ``suggest_*`` calls; ``DsboSearch.suggest``) and, inside it,
the time of dsbo's own proposal (``Campaign.ask``: store reads, fit, acquisition, commit). The
overhead of a route is the median over its BO proposals of ``call / inner - 1``, measured in
the same process on the same proposal (so machine load cancels); the Tuner's own row is the
baseline that every route pays.

    python experiments/adapters.py                                   # 10 seeds, 3 problems, budget 40
    python experiments/adapters.py --seeds 5 --problems branin-cat --arms tuner optuna
    python experiments/adapters.py --seeds 5 --first-seed 5                 # seeds 5-9 (e.g. a second runner)
    python experiments/adapters.py --report-only
    python experiments/adapters.py --smoke                           # 1 seed, budget 8, 1 problem

Runs are appended to ``runs.jsonl`` as they finish (a restart skips finished runs); the report
(``results.json``, ``results.md``, ``best_vs_evaluations.png``) is written from whatever is
there. ``--smoke`` without ``--out`` writes to a fresh temporary folder.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from smoke_out import add_out_argument, output_folder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed_spaces import Recorder, make_problems, suggest_active  # noqa: E402 - the experiment's problems

RESULTS = Path(__file__).resolve().parent / "results" / "adapters"
ARMS = ("tuner", "optuna", "ray")
PROBLEMS = ("branin-cat", "cond-synthetic", "ackley-cond")
BUDGET = 40
SMOKE_BUDGET = 8
#: The goal: an adapter adds at most this share to the time per proposal.
OVERHEAD_GOAL = 0.05


def n_init_of(space: dict[str, Any], budget: int) -> int:
    """The Tuner's default initial design for ``space`` and ``budget`` (what every arm uses)."""
    import dsbo

    return dsbo.Tuner(space, budget=budget, dry_run=False).campaign.n_init


def smoke_optimizer(smoke: bool) -> dict[str, Any]:
    return {"num_restarts": 2, "raw_samples": 32, "maxiter": 25} if smoke else {}


def inner_seconds(tuner: Any) -> float | None:
    """dsbo's own time of the last proposal (``Campaign.ask``), ``None`` if it made none from
    the model (an initial-design point takes no fit: it is left out of the overhead)."""
    last = getattr(tuner.campaign, "last_ask", None)
    return None if last is None or not last["acquisition"] > 0 else float(last["ask_total"])


def run_tuner(
    problem: Any, seed: int, budget: int, n_init: int, smoke: bool, f: Recorder
) -> dict[str, Any]:
    import dsbo

    options = {"optimizer": _settings(smoke)} if smoke else {}
    tuner = dsbo.Tuner(
        problem.space, budget=budget, seed=seed, n_init=n_init, dry_run=False, **options
    )
    calls, inner = [], []
    for _ in range(budget):
        tuner.campaign.last_ask = None
        t0 = time.perf_counter()
        suggestion = tuner.ask()
        calls.append(time.perf_counter() - t0)
        inner.append(inner_seconds(tuner))
        tuner.tell(suggestion.trial_id, f(suggestion.params))
    return {
        "calls": calls,
        "inner": inner,
        "generators": tuner.result().history["generator"].tolist(),
    }


def run_optuna(
    problem: Any, seed: int, budget: int, n_init: int, smoke: bool, f: Recorder
) -> dict[str, Any]:
    import optuna

    from dsbo.integrations.optuna import DsboSampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = DsboSampler(
        space=problem.space,
        seed=seed,
        n_startup_trials=n_init,
        warn_independent_sampling=False,
        **({"optimizer": smoke_optimizer(smoke)} if smoke else {}),
    )
    study = optuna.create_study(direction="minimize", sampler=sampler)
    calls, inner = [], []
    for _ in range(budget):
        tuner = sampler.tuner(study)
        if tuner is not None:
            tuner.campaign.last_ask = None
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest_active(trial, problem.space)
        calls.append(time.perf_counter() - t0)
        tuner = sampler.tuner(study)
        inner.append(None if tuner is None else inner_seconds(tuner))
        study.tell(trial, f(params))
    return {"calls": calls, "inner": inner}


def run_ray(
    problem: Any, seed: int, budget: int, n_init: int, smoke: bool, f: Recorder
) -> dict[str, Any]:
    import ray
    from ray import tune
    from ray.tune.search import ConcurrencyLimiter

    from dsbo.integrations.ray import DsboSearch

    class TimedSearch(DsboSearch):
        """DsboSearch with each ``suggest`` timed, and dsbo's own proposal inside it."""

        calls: list[float] = []
        inner: list[float | None] = []

        def suggest(self, trial_id: str) -> Any:
            if self.tuner is not None:
                self.tuner.campaign.last_ask = None
            t0 = time.perf_counter()
            out = super().suggest(trial_id)
            if isinstance(out, dict):
                TimedSearch.calls.append(time.perf_counter() - t0)
                TimedSearch.inner.append(None if self.tuner is None else inner_seconds(self.tuner))
            return out

    evaluate = problem.evaluate

    def trainable(config: dict[str, Any]) -> dict[str, float]:
        return {"objective": float(evaluate(config))}

    search = TimedSearch(
        problem.space,
        metric="objective",
        mode="min",
        seed=seed,
        n_init=n_init,
        **({"optimizer": _settings(smoke)} if smoke else {}),
    )
    if not ray.is_initialized():
        here = str(
            Path(__file__).resolve().parent
        )  # the trainable's problem comes from mixed_spaces.py
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
        ray.init(
            num_cpus=1,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    with tempfile.TemporaryDirectory() as storage:
        tuner = tune.Tuner(
            trainable,
            tune_config=tune.TuneConfig(
                search_alg=ConcurrencyLimiter(search, max_concurrent=1), num_samples=budget
            ),
            run_config=tune.RunConfig(storage_path=storage, verbose=0),
        )
        tuner.fit()
    history = search.tuner.result().history  # in the order dsbo proposed them
    for (
        _,
        row,
    ) in history.iterrows():  # the values as Ray's trials reported them, through the Recorder
        params = {
            name: row[name] for name in problem.space if name in row and row[name] == row[name]
        }
        f.values.append(float(row["objective"]))
        f.params.append(params)
    return {"calls": list(TimedSearch.calls), "inner": list(TimedSearch.inner)}


def _settings(smoke: bool) -> Any:
    from dsbo.acquisition import OptimizerSettings

    return OptimizerSettings(**smoke_optimizer(smoke))


RUNNERS = {"tuner": run_tuner, "optuna": run_optuna, "ray": run_ray}


def run_job(problem_name: str, arm: str, seed: int, budget: int, smoke: bool) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = make_problems()[problem_name]
    f = Recorder(problem)
    n_init = n_init_of(problem.space, budget)
    start = time.perf_counter()
    extra = RUNNERS[arm](problem, seed, budget, n_init, smoke, f)
    values = [v if math.isfinite(v) else math.inf for v in f.values]
    trace = [float(t) for t in np.minimum.accumulate(values)] if values else []
    ratios = [c / i - 1.0 for c, i in zip(extra["calls"], extra["inner"], strict=True) if i]
    return {
        "problem": problem_name,
        "arm": arm,
        "seed": seed,
        "budget": budget,
        "smoke": smoke,
        "n_init": n_init,
        "values": values,
        "trace": trace,
        "final_best": trace[-1] if trace else math.nan,
        "seconds": time.perf_counter() - start,
        "overheads": ratios,
        "median_call_s": float(
            np.median([c for c, i in zip(extra["calls"], extra["inner"], strict=True) if i])
        )
        if ratios
        else math.nan,
        **extra,
    }


# ----------------------------------------------------------------------------- report
def mean_se(values: list[float]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in dict.fromkeys(r["problem"] for r in runs):
        by_arm = {
            a: {r["seed"]: r for r in runs if r["problem"] == name and r["arm"] == a} for a in ARMS
        }
        rows: dict[str, Any] = {}
        for arm, seeds in by_arm.items():
            if not seeds:
                continue
            mean, se = mean_se([r["final_best"] for r in seeds.values()])
            overheads = [o for r in seeds.values() for o in r["overheads"]]
            rows[arm] = {
                "seeds": sorted(seeds),
                "mean": mean,
                "se": se,
                "median_overhead": float(np.median(overheads)) if overheads else None,
                "median_call_s": float(np.median([r["median_call_s"] for r in seeds.values()])),
            }
            if arm != "tuner" and by_arm["tuner"]:
                paired = sorted(set(seeds) & set(by_arm["tuner"]))
                diffs = [seeds[s]["final_best"] - by_arm["tuner"][s]["final_best"] for s in paired]
                d_mean, d_se = mean_se(diffs)
                _, tuner_se = mean_se([by_arm["tuner"][s]["final_best"] for s in paired])
                rows[arm].update(
                    paired_seeds=paired,
                    diff_mean=d_mean,
                    diff_se=d_se,
                    within_one_se=bool(abs(d_mean) <= max(d_se, tuner_se)) if paired else None,
                    overhead_goal_met=None
                    if rows[arm]["median_overhead"] is None
                    else bool(rows[arm]["median_overhead"] <= OVERHEAD_GOAL),
                )
        out[name] = rows
    return out


def write_report(runs: list[dict[str, Any]], out: Path) -> None:
    summary = summarize(runs)
    (out / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    seeds = sorted({r["seed"] for r in runs})
    lines = [
        "# dsbo through its adapters (issue 44)",
        "",
        f"Budget {runs[0]['budget'] if runs else BUDGET}, seeds {seeds} (the seeds each row ran are listed); final best "
        "(lower is better), mean +- standard error; the paired difference from the Tuner's own ask/tell; the median "
        "over BO proposals of the route's call time over dsbo's own proposal time, minus 1.",
        "",
        "| problem | route | seeds | final best | diff vs tuner (paired) | within 1 SE | median call (s) | overhead |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rows in summary.items():
        for arm, row in rows.items():
            diff = (
                "" if "diff_mean" not in row else f"{row['diff_mean']:+.4g} +- {row['diff_se']:.2g}"
            )
            within = (
                ""
                if row.get("within_one_se") is None
                else ("yes" if row["within_one_se"] else "no")
            )
            overhead = (
                "" if row["median_overhead"] is None else f"{100 * row['median_overhead']:+.1f}%"
            )
            lines.append(
                f"| {name} | {arm} | {len(row['seeds'])} | {row['mean']:.4g} +- {row['se']:.2g} | {diff} | "
                f"{within} | {row['median_call_s']:.3g} | {overhead} |"
            )
    (out / "results.md").write_text("\n".join(lines) + "\n")
    plot(runs, out / "best_vs_evaluations.png")


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["problem"] for r in runs))
    fig, axes = plt.subplots(
        1, max(1, len(names)), figsize=(4.5 * max(1, len(names)), 3.6), squeeze=False
    )
    for ax, name in zip(axes[0], names, strict=False):
        for arm in ARMS:
            traces = [
                r["trace"] for r in runs if r["problem"] == name and r["arm"] == arm and r["trace"]
            ]
            if not traces:
                continue
            n = min(len(t) for t in traces)
            mean = np.mean([t[:n] for t in traces], axis=0)
            ax.plot(range(1, n + 1), mean, label=f"{arm} ({len(traces)} seeds)")
        ax.set_title(name)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("best so far (mean)")
        ax.set_yscale("symlog", linthresh=1e-2)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def load_runs(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="run seeds first-seed .. first-seed + seeds - 1"
    )
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument(
        "--smoke", action="store_true", help="1 seed, budget 8, one problem: checks the script runs"
    )
    parser.add_argument("--report-only", action="store_true")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.problems) - set(make_problems()))
    if unknown:
        parser.error(f"unknown problem(s) {unknown}; choose from {sorted(make_problems())}")
    out = output_folder(args.out, args.smoke, RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    if not args.report_only:
        budget = args.budget or (SMOKE_BUDGET if args.smoke else BUDGET)
        seeds = range(args.first_seed, args.first_seed + (1 if args.smoke else args.seeds))
        problems = args.problems[:1] if args.smoke else args.problems
        done = {
            (r["problem"], r["arm"], r["seed"], r["budget"], r["smoke"]) for r in load_runs(log)
        }
        # seed-major and the arms interleaved, so a partial run compares the arms on the same seeds
        jobs = [
            (p, a, s)
            for s in seeds
            for p in problems
            for a in args.arms
            if (p, a, s, budget, args.smoke) not in done
        ]
        started = time.perf_counter()
        for i, (problem, arm, seed) in enumerate(jobs, 1):
            run = run_job(problem, arm, seed, budget, args.smoke)
            with log.open(
                "a"
            ) as sink:  # two runners (e.g. split by --first-seed) may share the file
                fcntl.flock(sink, fcntl.LOCK_EX)
                sink.write(json.dumps(run) + "\n")
                fcntl.flock(sink, fcntl.LOCK_UN)
            print(
                f"[{i}/{len(jobs)}] {problem} {arm} seed {seed}: best {run['final_best']:.4g}, "
                f"{run['seconds']:.0f}s (elapsed {time.perf_counter() - started:.0f}s)",
                flush=True,
            )
        if "ray" in sys.modules:  # started by the first Ray run, kept for the next ones
            import ray

            ray.shutdown()
    runs = [r for r in load_runs(log) if r["smoke"] == args.smoke]
    if runs:
        write_report(runs, out)
        print((out / "results.md").read_text())
    return summarize(runs)


if __name__ == "__main__":
    main()
