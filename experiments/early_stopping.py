"""Early stopping (issue 42): dsbo's stopping rules, alone and with BO, against full-training BO
and Optuna's TPE with its pruners, on learning curves of real training runs.

Problems (``early_stopping_problems.py``): ``zoo-diabetes`` (a zoo LightningModule, Lightning's
Trainer and dsbo's ReportCallback), ``mlp-cancer`` and ``cnn-digits`` (plain torch loops): 27
epochs each, mixed spaces with log floats, integers, categoricals and conditional parameters,
data that ship with scikit-learn, fixed train/validation splits, the validation loss after each
epoch as the curve. Every arm reads the curves through one cache of real training runs.

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
an ``--arms`` or ``--seeds`` subset adds to the runs there); ``results.json``, ``results.md``
and ``best_vs_epochs.png`` are written from every run recorded.

    python experiments/early_stopping.py                        # 3 problems, 13 arms, seeds 0-9 (the 12 arms
                                                                # besides bo+mf-gp: 3.3 h of run time, one process each)
    python experiments/early_stopping.py --arms bo+asha bohb --seeds 0-4
    python experiments/early_stopping.py --report-only
    python experiments/early_stopping.py --smoke                # < 1 min: 2 problems on small data, 3 arms, 1 seed

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed).
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
from pathlib import Path
from typing import Any

import numpy as np
from early_stopping_problems import MAX_EPOCHS, CurveCache, Recorder, make_problems
from mixed_spaces import suggest_active
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "early_stopping"
FULL_TRAININGS = 20
SMOKE_FULL_TRAININGS = 3
RULES: dict[str, dict[str, Any]] = {
    "median": {"name": "median"},
    "asha": {"name": "asha", "min_resource": 1, "reduction_factor": 3},
    "hyperband": {"name": "hyperband", "min_resource": 1, "reduction_factor": 3},
}
#: dsbo's ``early_stopping`` per dsbo arm (``None``: no rule, every trial trained in full).
DSBO_ARMS: dict[str, Any] = {
    "bo-full": None,
    **{f"random+{r}": RULES[r] for r in RULES},
    **{f"bo+{r}": RULES[r] for r in RULES},
    **{f"bo-last+{r}": {**RULES[r], "model": "last"} for r in ("asha", "hyperband")},
    "bohb": {**RULES["hyperband"], "model": "bohb"},
    "bo+mf-gp": {**RULES["asha"], "model": "fidelity"},
}
OPTUNA_ARMS = ("optuna-tpe+hyperband", "optuna-tpe+median")
ARMS = (*DSBO_ARMS, *OPTUNA_ARMS)
BO_ES_ARMS = ("bo+median", "bo+asha", "bo+hyperband", "bo-last+asha", "bo-last+hyperband", "bohb", "bo+mf-gp")
SMOKE_ARMS = ("bo-full", "bo+asha", "optuna-tpe+hyperband")
#: --smoke: the Lightning problem and one plain torch loop (the test trains the third apart).
SMOKE_PROBLEMS = ("zoo-diabetes", "mlp-cancer")
FULL_ARM, TPE_HB = "bo-full", "optuna-tpe+hyperband"


def parse_seeds(tokens: list[str]) -> list[int]:
    """``["0-9"]``, ``["0", "3", "5-6"]`` or ``["1,2"]`` -> the seeds, in order, once each."""
    seeds: list[int] = []
    for token in ",".join(tokens).split(","):
        if not token.strip():
            continue
        low, _, high = token.partition("-")
        seeds += range(int(low), int(high or low) + 1)
    return list(dict.fromkeys(seeds))


def n_init_for(problem: Any, full_trainings: int) -> int:
    """The initial design ``dsbo.minimize`` picks for a budget of ``full_trainings`` trials."""
    from dsbo.space import SearchSpace

    return max(2, min(full_trainings // 3, max(5, 2 * len(SearchSpace(problem.space).searched))))


def unavailable(arm: str) -> str | None:
    """Why ``arm`` cannot run here, or ``None``."""
    import importlib.util

    if arm in OPTUNA_ARMS and importlib.util.find_spec("optuna") is None:
        return "optuna is not installed (pip install -e '.[compare]')"
    if arm in DSBO_ARMS and DSBO_ARMS[arm] is not None:
        from dsbo.campaign.early_stopping import EarlyStopping
        from dsbo.errors import ConfigError

        try:
            EarlyStopping.build(DSBO_ARMS[arm], max_steps=MAX_EPOCHS)
        except ConfigError as exc:
            return f"this dsbo refuses early_stopping={DSBO_ARMS[arm]}: {exc}"
    return None


# ----------------------------------------------------------------------------- arms
def run_dsbo(problem: Any, arm: str, seed: int, budget: int, full_trainings: int, smoke: bool, rec: Recorder) -> dict[str, Any]:
    import dsbo
    from dsbo.acquisition import OptimizerSettings

    options: dict[str, Any] = {"seed": seed, "dry_run": False, "n_init": n_init_for(problem, full_trainings),
                               "early_stopping": DSBO_ARMS[arm], "max_steps": MAX_EPOCHS, "budget_steps": budget}  # fmt: skip
    if arm.startswith("random+"):
        options["acquisition"] = "sobol"
    elif smoke:
        options["optimizer"] = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)

    def train(params: dict[str, Any], trial: Any) -> float:
        return rec.evaluate(params, trial)

    result = dsbo.minimize(train, problem.space, budget=budget, **options)
    h = result.history
    # the proposals after the initial design; a BO arm's Sobol fallbacks (fewer than two fully
    # trained trials to fit) are counted in ``generators``, not timed
    skip = ["default", "sobol-init"] + ([] if arm.startswith("random+") else ["sobol-fallback"])
    timed = ~h["generator"].isin(skip)
    proposal = h.loc[timed, "fit_time"].fillna(0) + h.loc[timed, "acq_time"].fillna(0)
    return {
        "proposal_times": [float(t) for t in proposal],
        "generators": {str(k): int(v) for k, v in h["generator"].value_counts().items()},
        "statuses": {str(k): int(v) for k, v in h["status"].value_counts().items()},
        "ledger_epochs": float(h["cost"].fillna(0).sum()),
        "reported_best": result.best_value,
        "n_init": options["n_init"],
    }


class OptunaTrial:
    """An Optuna trial as the trial a training reports to; stops it at ``limit`` epochs (the
    budget's end) or when the pruner says so."""

    def __init__(self, trial: Any, limit: int):
        self.trial, self.limit, self.step = trial, limit, 0

    def report(self, step: int, value: float) -> None:
        self.trial.report(value, step)
        self.step = step

    def should_stop(self) -> bool:
        return self.step >= self.limit or self.trial.should_prune()


def run_optuna(problem: Any, arm: str, seed: int, budget: int, rec: Recorder) -> dict[str, Any]:
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = (optuna.pruners.HyperbandPruner(min_resource=1, max_resource=MAX_EPOCHS, reduction_factor=3)
              if arm.endswith("+hyperband") else optuna.pruners.MedianPruner())  # fmt: skip
    # the study's name is fixed: HyperbandPruner picks a trial's bracket from a hash of it
    study = optuna.create_study(study_name=f"{problem.name}-{arm}-seed{seed}", direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)  # fmt: skip
    times = []
    while rec.epochs < budget:
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest_active(trial, problem.space)
        times.append(time.perf_counter() - t0)
        value = rec.evaluate(params, OptunaTrial(trial, min(MAX_EPOCHS, budget - rec.epochs)))
        if rec.trials[-1]["full"]:
            study.tell(trial, value)
        else:
            study.tell(trial, state=TrialState.PRUNED)
    return {"proposal_times": times, "statuses": {"completed": sum(t["full"] for t in rec.trials),
                                                  "pruned": sum(not t["full"] for t in rec.trials)}}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, arm, seed) run; in a worker process on one thread."""
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = make_problems()[job["problem"]]
    problem.preload(job["smoke"])
    import dsbo  # noqa: F401  (imported before the timer starts, as the training's modules)

    if job["arm"] in OPTUNA_ARMS:
        import optuna  # noqa: F401
    rec = Recorder(problem, job["seed"], CurveCache(Path(job["cache"])), small=job["smoke"])
    start = time.perf_counter()
    if job["arm"] in OPTUNA_ARMS:
        extra = run_optuna(problem, job["arm"], job["seed"], job["budget"], rec)
    else:
        extra = run_dsbo(problem, job["arm"], job["seed"], job["budget"], job["full_trainings"], job["smoke"], rec)
    trace = rec.trace()
    full = [t for t in rec.trials if t["full"]]
    best = min(full, key=lambda t: t["value"]) if full else None
    return {
        **{k: v for k, v in job.items() if k != "cache"},
        "trace": trace,
        "final_best": trace[-1][1] if trace else None,
        "best_params": best["params"] if best else None,
        "epochs_spent": rec.epochs,
        "num_trials": len(rec.trials),
        "num_full": len(full),
        "trials": [[t["epochs"], t["value"]] for t in rec.trials],
        "trained_epochs": rec.trained_epochs,
        "train_seconds": rec.train_seconds,
        "seconds": time.perf_counter() - start,
        "threads": 1,
        **extra,
    }


# ----------------------------------------------------------------------------- running
def job_key(run: dict[str, Any]) -> tuple:
    return (run["problem"], run["arm"], run["seed"], run["budget"], run["smoke"])


def read_runs(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    runs = []
    for line in log.read_text().splitlines():
        try:
            runs.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a crash
            continue
    return runs


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
        print(f"[{i}/{len(todo)}] {run['problem']} {run['arm']} seed {run['seed']}: best {best}, {run['num_trials']} trials "
              f"({run['num_full']} full), {run['seconds']:.0f}s (elapsed {time.perf_counter() - started:.0f}s)", flush=True)

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


# ----------------------------------------------------------------------------- report
def mean_se(values: list[float | None]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0


def reach(run: dict[str, Any], target: float | None) -> float:
    """Epochs spent when ``run``'s best fully trained value first reached ``target`` (inf if never)."""
    if target is None:
        return math.inf
    return next((float(e) for e, best in run["trace"] if best <= target + 1e-12), math.inf)


def seed_ranges(seeds: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    spans: list[list[int]] = []
    for seed in sorted(set(seeds)):
        if spans and spans[-1][1] == seed - 1:
            spans[-1][1] = seed
        else:
            spans.append([seed, seed])
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in spans)


def fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "inf" if isinstance(x, float) and x == math.inf else "-"
    return f"{x:.{digits}g}"


def wilcoxon_p(diffs: list[float]) -> float | None:
    from scipy.stats import wilcoxon

    if len(diffs) < 2 or all(d == 0 for d in diffs):
        return None
    return float(wilcoxon(diffs).pvalue)


def summarize(runs: list[dict[str, Any]], problems: dict[str, Any], budget: int, smoke: bool) -> dict[str, Any]:
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["problem"], r["arm"]), {})[r["seed"]] = r
    table, reach_rows, goals = [], [], []
    for p in problems:
        full = by.get((p, FULL_ARM), {})
        own = {s: reach(r, r["final_best"]) for s, r in full.items()}  # bo-full's epochs to its own final best
        for arm in ARMS:
            rs = by.get((p, arm))
            if not rs:
                continue
            mean, se = mean_se([r["final_best"] for r in rs.values()])
            times = [t for r in rs.values() for t in r["proposal_times"]]
            trained = sum(r["trained_epochs"] for r in rs.values())
            row = {"problem": p, "arm": arm, "seeds": len(rs), "seed_ids": sorted(rs), "final_mean": mean, "final_se": se,
                   "no_full_runs": sum(r["final_best"] is None for r in rs.values()),
                   "trials_mean": mean_se([r["num_trials"] for r in rs.values()])[0],
                   "full_mean": mean_se([r["num_full"] for r in rs.values()])[0],
                   "epochs_mean": mean_se([r["epochs_spent"] for r in rs.values()])[0],
                   "seconds_mean": mean_se([r["seconds"] for r in rs.values()])[0],
                   "median_proposal_s": float(np.median(times)) if times else math.nan,
                   "trained_epochs_mean": trained / len(rs),
                   "s_per_full_training": sum(r["train_seconds"] for r in rs.values()) / trained * MAX_EPOCHS if trained else math.nan}  # fmt: skip
            paired = sorted(set(rs) & set(full))
            if paired:
                epochs = {s: reach(rs[s], full[s]["final_best"]) for s in paired}
                ratios = {s: epochs[s] / own[s] if math.isfinite(own[s]) else math.nan for s in paired}
                row.update(reach_epochs=epochs, reach_ratio=ratios, reached=sum(math.isfinite(e) for e in epochs.values()),
                           reach_median=float(np.median(list(epochs.values()))),
                           ratio_median=float(np.median(list(ratios.values()))))  # fmt: skip
            table.append(row)
        rows = {r["arm"]: r for r in table if r["problem"] == p}
        tpe = by.get((p, TPE_HB), {})
        for arm in BO_ES_ARMS:
            if arm not in rows:
                continue
            rs = by[(p, arm)]
            seeds = sorted(set(rs) & set(tpe))
            pairs = [(rs[s]["final_best"], tpe[s]["final_best"]) for s in seeds]
            diffs = [a - b for a, b in pairs if a is not None and b is not None]
            reach_rows.append({"problem": p, "arm": arm, "pairs": len(seeds), "diffs": diffs,
                               "mean_diff": float(np.mean(diffs)) if diffs else math.nan,
                               "wins": sum(b is None and a is not None or (a is not None and b is not None and a < b) for a, b in pairs),
                               "losses": sum(a is None and b is not None or (a is not None and b is not None and a > b) for a, b in pairs),
                               "missing": sum(a is None for a, _ in pairs), "p": wilcoxon_p(diffs)})  # fmt: skip
        goals += assess(p, rows, [r for r in reach_rows if r["problem"] == p], budget)
    seeds_run = sorted({r["seed"] for r in runs})
    return {"budget": budget, "smoke": smoke, "seeds_run": seeds_run, "table": table, "vs_tpe_hyperband": reach_rows,
            "goals": goals, "problems": {name: {"space": {n: q.to_config() for n, q in pr.space.items()}, "data": pr.data,
                                                "model": pr.model, "metric": pr.metric} for name, pr in problems.items()}}  # fmt: skip


def assess(problem: str, rows: dict[str, dict[str, Any]], vs_tpe: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The issue's two goals on one problem, for the best BO + early-stopping arm (the lowest
    median ratio of epochs to reach bo-full's final best; ties: the lower mean final best) among
    the arms run on the most seeds (an arm run on fewer seeds is in the tables, but a mean over
    fewer seeds is not compared with the others')."""
    candidates = [rows[a] for a in BO_ES_ARMS if a in rows and "ratio_median" in rows[a]]
    if not candidates:
        return []
    most = max(len(r["reach_ratio"]) for r in candidates)
    candidates = [r for r in candidates if len(r["reach_ratio"]) == most]
    best = min(candidates, key=lambda r: (r["ratio_median"] if math.isfinite(r["ratio_median"]) else math.inf,
                                          r["final_mean"] if math.isfinite(r["final_mean"]) else math.inf))  # fmt: skip
    n = len(best["reach_ratio"])
    note = f" (inconclusive: {n} seed{'s' * (n != 1)})" if n < 3 else ""
    met1 = best["ratio_median"] <= 1 / 3
    goals = [{"goal": "best BO+ES arm reaches bo-full's final best with <= 1/3 of bo-full's epochs (median over seeds)",
              "problem": problem, "arm": best["arm"], "met": met1, "verdict": ("met" if met1 else "MISSED") + note,
              "detail": f"{best['arm']}: median ratio {fmt(best['ratio_median'], 3)} (epochs to reach: median "
                        f"{fmt(best['reach_median'])}, reached on {best['reached']} of {n} seeds); against 1/3 of the "
                        f"budget ({budget // 3} epochs): {'met' if best['reach_median'] <= budget / 3 else 'missed'}"}]  # fmt: skip
    t = next((r for r in vs_tpe if r["arm"] == best["arm"]), None)
    if t is not None and t["pairs"]:
        met2 = t["mean_diff"] < 0 and not t["missing"]
        note = f" (inconclusive: {t['pairs']} pair{'s' * (t['pairs'] != 1)})" if t["pairs"] < 3 else ""
        goals.append({"goal": "the same arm ends below optuna-tpe+hyperband's final best (paired by seed)", "problem": problem,
                      "arm": best["arm"], "met": met2, "verdict": ("met" if met2 else "MISSED") + note,
                      "detail": f"{best['arm']} - {TPE_HB}: mean {fmt(t['mean_diff'], 3)} over {len(t['diffs'])} pairs, "
                                f"{t['wins']} wins / {t['losses']} losses, Wilcoxon p {fmt(t['p'], 3)}"})  # fmt: skip
    return goals


def write_markdown(summary: dict[str, Any], path: Path) -> None:
    seeds = summary["seeds_run"]
    budget = summary["budget"]
    lines = [f"# Early stopping on real learning curves (seeds run: {seed_ranges(seeds) or 'none'}; budget {budget} "
             f"epochs = {budget // MAX_EPOCHS} full trainings of {MAX_EPOCHS})" + (" (smoke)" if summary["smoke"] else ""), "",
             "Final best: the best validation value of a fully trained trial (27 epochs), mean +- standard error over "
             "the seeds run (column `seeds`; runs without any fully trained trial are left out of the mean and counted). "
             "Reach: epochs spent when the arm's best first reached bo-full's final best of the same seed (inf: never); "
             "ratio: that over the epochs bo-full itself needed for it. Times: wall seconds per run and the median "
             "proposal time (dsbo: fit + acquisition of each trial after the initial design; Optuna: ask + suggest), "
             "on a shared 2-core machine; s / full training: seconds per 27 epochs trained in the runs (cache misses).", "",
             "| problem | arm | seeds | final best | runs without a full training | reach: median epochs (reached) | "
             "reach: median ratio to bo-full | trials / run | full trainings / run | wall s / run | median s / proposal | "
             "epochs trained / run | s / full training |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in summary["table"]:
        reach_cell = f"{fmt(r['reach_median'])} ({r['reached']}/{len(r['reach_epochs'])})" if "reach_median" in r else "-"
        lines.append(f"| {r['problem']} | {r['arm']} | {r['seeds']} | {fmt(r['final_mean'])} +- {fmt(r['final_se'], 2)} | "
                     f"{r['no_full_runs']} | {reach_cell} | {fmt(r.get('ratio_median'), 3)} | {r['trials_mean']:.1f} | "
                     f"{r['full_mean']:.1f} | {r['seconds_mean']:.0f} | {fmt(r['median_proposal_s'], 3)} | "
                     f"{r['trained_epochs_mean']:.0f} | {fmt(r['s_per_full_training'], 3)} |")  # fmt: skip
    lines += ["", f"BO + early-stopping arms against {TPE_HB} (final best, paired by seed; a run without a fully trained "
              "trial counts as a loss):", "", "| problem | arm | pairs | mean difference | wins / losses | Wilcoxon p |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for t in summary["vs_tpe_hyperband"]:
        lines.append(f"| {t['problem']} | {t['arm']} | {t['pairs']} | {fmt(t['mean_diff'], 3)} | {t['wins']} / {t['losses']} | {fmt(t['p'], 3)} |")
    lines += ["", "Goals (the best BO + early-stopping arm among those run on the most seeds; fewer than 3 seeds: inconclusive):", "", "| goal | problem | arm | verdict | detail |", "|---|---|---|---|---|"]
    for g in summary["goals"]:
        lines.append(f"| {g['goal']} | {g['problem']} | {g['arm']} | {g['verdict']} | {g['detail']} |")
    for k, name in enumerate(("goal 1 (epochs)", "goal 2 (vs TPE + Hyperband)")):
        verdicts = [g for g in summary["goals"] if g["goal"].startswith(("best BO+ES", "the same arm")[k])]
        missed = [g["problem"] for g in verdicts if not g["met"]]
        lines.append(f"\n**{name}**: " + ("no data" if not verdicts else f"met on {len(verdicts) - len(missed)} of {len(verdicts)} problems"
                                          + (f"; MISSED on {', '.join(missed)}" if missed else "")))  # fmt: skip
    if summary.get("left_out"):
        lines += ["", "Arms left out:", ""] + [f"- `{a}`: {why}" for a, why in summary["left_out"].items()]
    lines += ["", "Problems:", ""]
    for name, p in summary["problems"].items():
        space = ", ".join(f"{n} {q}" for n, q in p["space"].items())
        lines.append(f"- `{name}`: {p['model']}; {p['data']}; value: {p['metric']}; space: {space}")
    path.write_text("\n".join(lines) + "\n")


def plot(runs: list[dict[str, Any]], problems: dict[str, Any], budget: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [p for p in problems if any(r["problem"] == p for r in runs)]
    fig, axes = plt.subplots(1, max(len(names), 1), figsize=(5.5 * max(len(names), 1), 4.2), squeeze=False)
    colors = plt.get_cmap("tab20")
    grid = np.arange(1, budget + 1)
    for ax, name in zip(axes[0], names, strict=False):
        for j, arm in enumerate(ARMS):
            rs = [r for r in runs if r["problem"] == name and r["arm"] == arm]
            if not rs:
                continue
            curves = np.full((len(rs), len(grid)), np.nan)
            for i, r in enumerate(rs):
                for e, best in r["trace"]:
                    curves[i, int(e) - 1:] = best
            mean = curves.mean(0)  # NaN until every seed has a fully trained trial
            se = curves.std(0, ddof=1) / math.sqrt(len(rs)) if len(rs) > 1 else np.zeros(len(grid))
            style = "--" if arm.startswith(("random", "optuna")) else "-"
            ax.plot(grid, mean, style, color=colors(j), label=f"{arm} ({len(rs)})")
            ax.fill_between(grid, mean - se, mean + se, color=colors(j), alpha=0.15)
        ax.axvline(budget / 3, color="gray", lw=0.8, ls=":")
        ax.set_title(name)
        ax.set_xlabel("epochs spent")
        ax.set_ylabel("best fully trained validation value")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="small data, 3 arms, 1 seed, 3 full trainings")
    parser.add_argument("--seeds", nargs="+", default=None, help="e.g. 0-9 (default), 0 3 5-6; smoke: 0")
    parser.add_argument("--arms", nargs="+", default=None, choices=ARMS)
    parser.add_argument("--problems", nargs="+", default=None, help=f"problem names (default all; smoke: {' '.join(SMOKE_PROBLEMS)})")
    parser.add_argument("--full-trainings", type=int, default=None,
                        help=f"budget in full trainings of {MAX_EPOCHS} epochs (default {FULL_TRAININGS}; smoke {SMOKE_FULL_TRAININGS})")
    parser.add_argument("--workers", type=int, default=2, help="runs at once (processes, one thread each)")
    parser.add_argument("--report-only", action="store_true", help="run nothing: report the runs in runs.jsonl")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

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
    jobs = [{"problem": p, "arm": a, "seed": s, "budget": budget, "full_trainings": full_trainings, "smoke": smoke,
             "cache": str(args.out / "curves")} for s in seeds for p in problems for a in arms]  # fmt: skip
    started = time.perf_counter()
    if not args.report_only:
        run_all(jobs, args.out, 1 if smoke else args.workers)
    # the report covers every problem recorded at this budget, not only this call's
    runs = [r for r in read_runs(args.out / "runs.jsonl")
            if r["budget"] == budget and r["smoke"] == smoke and r["problem"] in every_problem]  # fmt: skip
    recorded = {r["problem"] for r in runs}
    problems = {k: v for k, v in every_problem.items() if k in problems or k in recorded}
    summary = summarize(runs, problems, budget, smoke)
    summary.update(left_out=left_out, python=sys.version.split()[0], cpu_count=os.cpu_count(),
                   seconds_this_call=time.perf_counter() - started)  # fmt: skip
    (args.out / "results.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1, default=str))
    write_markdown(summary, args.out / "results.md")
    plot(runs, problems, budget, args.out / "best_vs_epochs.png")
    return summary


if __name__ == "__main__":
    main()
