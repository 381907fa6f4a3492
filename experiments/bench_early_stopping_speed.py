"""Benchmark: the recommended early-stopping setting's own time per trial, beside Optuna's TPE +
HyperbandPruner (issue 57's speed goal: "the recommended setting's own time per trial (its
proposal plus its stop decisions) is at most 0.5 s median up to 150 trials on one CPU thread,
measured in a bench beside TPE + Hyperband").

Both searchers drive the same synthetic learning curves through ask/tell, one CPU thread, in
one process, interleaved by seed (dsbo's seed s, then Optuna's seed s):

- **dsbo**: ``dsbo.Tuner(space, early_stopping=True, max_steps=27, budget=150)`` (the
  recommended setting, :data:`dsbo.campaign.early_stopping.RECOMMENDED`), ``Tuner.ask()``,
  then per step ``Suggestion.report`` and ``Suggestion.should_stop``, and ``Tuner.tell``;
- **Optuna**: ``create_study(sampler=TPESampler(seed=s), pruner=HyperbandPruner(min_resource=1,
  max_resource=27, reduction_factor=3))``, ``study.ask()``, ``trial.report`` and
  ``trial.should_prune``, ``study.tell``.

A trial's *own time* is the wall time of those calls (the search's bookkeeping and decisions),
never the "training" (the curve's values are computed outside the timed calls). The curves:
three parameters in [0, 1]; the final loss is a quadratic bowl, each curve falls as
``1 / epoch``, and configurations near the optimum start slowly (their curves cross the
others), so the rules have real decisions to take.

The goal is fixed here, before any run: :data:`GOAL_SECONDS`, the median own time per trial of
the dsbo arm over every trial of every seed, up to :data:`TRIALS` trials, one thread. It is met
if that median is at most the goal. Optuna's figure is reported beside it, with the ratio of
the two medians (same run, same machine).

``--candidate thompson`` adds the candidate for the recommended setting of issue 57's
confirmation run (``early_stopping_goals.CONFIRMATION_ARM``: ``early_stopping=True,
acquisition="thompson"``) as a third arm, interleaved with the other two and judged by the same
goal (fixed here before its run).

Writes ``experiments/results/bench_early_stopping_speed/{results.json, results.md}``.

    python experiments/bench_early_stopping_speed.py            # 3 seeds x 150 trials
    python experiments/bench_early_stopping_speed.py --candidate thompson \
        --out experiments/results/bench_early_stopping_speed/thompson
    python experiments/bench_early_stopping_speed.py --smoke    # 1 seed x 15 trials, temporary folder
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from smoke_out import add_out_argument, output_folder

#: The goal, fixed before the run: median own seconds per trial of the recommended setting.
GOAL_SECONDS = 0.5
#: Trials per run (the goal's "up to 150 trials").
TRIALS = 150
#: Steps (epochs) of a full trial.
MAX_STEPS = 27
#: Seeds of the full run.
SEEDS = (0, 1, 2)
#: Where the full run writes.
RESULTS = Path(__file__).resolve().parent / "results" / "bench_early_stopping_speed"
NAMES = ("x", "y", "z")


def loss_at(params: dict[str, float], epoch: int) -> float:
    """The synthetic validation loss after ``epoch`` epochs (module docstring)."""
    gap = (params["x"] - 0.3) ** 2 + (params["y"] - 0.6) ** 2 + 0.5 * (params["z"] - 0.5) ** 2
    slow = 1.5 * math.exp(-10 * gap)  # good configurations start slow: crossing curves
    return gap + 1.0 / epoch + slow * math.exp(-epoch / 5)


#: The arms: label and the extra ``dsbo.Tuner`` options of each dsbo arm.
DSBO_ARMS = {
    "dsbo": ("dsbo `early_stopping=True`", {}),
    "dsbo-thompson": (
        'dsbo `early_stopping=True, acquisition="thompson"` (candidate)',
        {"acquisition": "thompson"},
    ),
}
#: ``--candidate``: the dsbo arm each adds.
CANDIDATES = {"thompson": "dsbo-thompson"}


def run_dsbo(seed: int, trials: int, arm: str = "dsbo") -> list[float]:
    """Own seconds of each trial of the recommended setting, or of a candidate ``arm``
    (:data:`DSBO_ARMS`; module docstring)."""
    import dsbo

    space = {name: dsbo.Float(0.0, 1.0) for name in NAMES}
    tuner = dsbo.Tuner(
        space,
        budget=trials,
        seed=seed,
        early_stopping=True,
        max_steps=MAX_STEPS,
        threads=1,
        **DSBO_ARMS[arm][1],
    )
    own: list[float] = []
    while True:
        t0 = time.perf_counter()
        suggestion = tuner.ask()
        spent = time.perf_counter() - t0
        if suggestion is None:
            break
        loss = math.inf
        for epoch in range(1, MAX_STEPS + 1):
            loss = loss_at(suggestion.params, epoch)
            t0 = time.perf_counter()
            suggestion.report(epoch, loss)
            stop = suggestion.should_stop()
            spent += time.perf_counter() - t0
            if stop:
                break
        t0 = time.perf_counter()
        tuner.tell(suggestion, loss)
        own.append(spent + time.perf_counter() - t0)
    return own


def run_optuna(seed: int, trials: int) -> list[float]:
    """Own seconds of each trial of TPE + HyperbandPruner (module docstring)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = optuna.pruners.HyperbandPruner(
        min_resource=1, max_resource=MAX_STEPS, reduction_factor=3
    )
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)
    own: list[float] = []
    for _ in range(trials):
        t0 = time.perf_counter()
        trial = study.ask()
        params = {name: trial.suggest_float(name, 0.0, 1.0) for name in NAMES}
        spent = time.perf_counter() - t0
        loss, state = math.inf, optuna.trial.TrialState.COMPLETE
        for epoch in range(1, MAX_STEPS + 1):
            loss = loss_at(params, epoch)
            t0 = time.perf_counter()
            trial.report(loss, epoch)
            prune = trial.should_prune()
            spent += time.perf_counter() - t0
            if prune:
                state = optuna.trial.TrialState.PRUNED
                break
        t0 = time.perf_counter()
        study.tell(trial, None if state == optuna.trial.TrialState.PRUNED else loss, state=state)
        own.append(spent + time.perf_counter() - t0)
    return own


def summarize(runs: dict[str, list[list[float]]]) -> dict[str, Any]:
    """Medians over every trial of every seed, and by trial number (1-50, 51-100, 101-150)."""
    out: dict[str, Any] = {}
    for arm, per_seed in runs.items():
        every = [s for seed in per_seed for s in seed]
        windows = {}
        for lo in range(0, max(len(s) for s in per_seed), 50):
            chunk = [s for seed in per_seed for s in seed[lo : lo + 50]]
            if chunk:
                windows[f"{lo + 1}-{lo + 50}"] = statistics.median(chunk)
        out[arm] = {
            "median": statistics.median(every),
            "max": max(every),
            "trials": len(every),
            "by_trial": windows,
        }
    return out


def write(
    out: Path,
    summary: dict[str, Any],
    runs: dict[str, list[list[float]]],
    seeds: list[int],
    trials: int,
) -> None:
    """``results.json`` (summary and the per-trial seconds) and ``results.md``."""
    import torch

    theirs = summary["optuna"]["median"]
    verdicts = {
        arm: "met" if summary[arm]["median"] <= GOAL_SECONDS else "missed"
        for arm in summary
        if arm in DSBO_ARMS
    }
    record = {
        "goal_seconds": GOAL_SECONDS,
        "verdict": verdicts["dsbo"],
        "verdicts": verdicts,
        "seeds": seeds,
        "trials": trials,
        "summary": summary,
        "seconds": runs,
        "torch_threads": torch.get_num_threads(),
        "machine": platform.platform(),
        "python": platform.python_version(),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(record, indent=1))
    lines = [
        "# The recommended early-stopping setting's own time per trial",
        "",
        f"`python experiments/bench_early_stopping_speed.py`: seeds {seeds}, {trials} trials each, "
        f"{MAX_STEPS}-step curves, one CPU thread, both arms in one process, interleaved by seed.",
        "",
        "| arm | median s / trial | by trial number (median s) | max s |",
        "|---|---|---|---|",
    ]
    labels = {arm: label for arm, (label, _) in DSBO_ARMS.items()}
    labels["optuna"] = "Optuna TPE + HyperbandPruner"
    for arm, row in summary.items():
        windows = ", ".join(f"{k}: {v:.3f}" for k, v in row["by_trial"].items())
        lines.append(f"| {labels[arm]} | {row['median']:.3f} | {windows} | {row['max']:.2f} |")
    lines.append("")
    for arm, verdict in verdicts.items():
        ours = summary[arm]["median"]
        lines.append(
            f"Goal (fixed before the run) for {labels[arm]}: median at most {GOAL_SECONDS} s: "
            f"**{verdict}** ({ours:.3f} s; {ours / theirs:.1f}x Optuna's {theirs:.4f} s on the "
            "same machine, same run)."
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke", action="store_true", help="1 seed x 15 trials, into a temporary folder"
    )
    parser.add_argument(
        "--trials", type=int, default=None, help=f"trials per run (default {TRIALS})"
    )
    parser.add_argument(
        "--candidate",
        nargs="*",
        choices=tuple(CANDIDATES),
        default=[],
        help="candidate settings timed beside the recommended one (module docstring)",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    seeds = [0] if args.smoke else list(SEEDS)
    trials = args.trials or (15 if args.smoke else TRIALS)
    out = output_folder(args.out, args.smoke, RESULTS)
    arms = ["dsbo", *(CANDIDATES[c] for c in args.candidate), "optuna"]
    runs: dict[str, list[list[float]]] = {arm: [] for arm in arms}
    for seed in seeds:
        for arm in arms:
            run = run_optuna(seed, trials) if arm == "optuna" else run_dsbo(seed, trials, arm)
            runs[arm].append(run)
            print(
                f"seed {seed} {arm}: median {statistics.median(runs[arm][-1]):.4f} s / trial",
                flush=True,
            )
    summary = summarize(runs)
    write(out, summary, runs, seeds, trials)
    print((out / "results.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
