"""The report of ``freeze_thaw.py``: a row per (problem, arm) with its route (the simulated
policy or the shipped route through a campaign) and its seeds, every freeze-thaw arm against
early stopping's rule-based and Optuna arms paired by seed with a Wilcoxon verdict
(:func:`verdicts.paired_verdict`), ``results.md``, ``results.json`` and ``best_vs_epochs.png``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from freeze_thaw import ARMS, BASELINES, BUDGET
from results_io import save_figure
from verdicts import paired_verdict

#: The two routes of a freeze-thaw arm (:func:`route`).
SIMULATED, SHIPPED = "simulated policy", "shipped route (campaign)"


def _mean_se(values: list[float]) -> str:
    if not values:
        return "-"
    se = np.std(values, ddof=1) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{np.mean(values):.4g} +- {se:.2g}"


def route(arm: str) -> str:
    """How an arm's runs were made: the simulated policy (this script's loop, ``run``), the
    shipped route (``early_stopping="freeze-thaw"`` through a campaign, ``run_campaign``), or an
    arm of early stopping's runs."""
    if arm in ARMS:
        return SHIPPED if arm.endswith("-campaign") else SIMULATED
    return "early stopping's runs"


def _paired(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]], arm: str, other: str
) -> dict[str, Any] | None:
    """``arm`` against ``other`` paired by seed; a run of ours without a fully trained trial
    counts as a loss (left out of the mean difference and of the Wilcoxon test, and the verdict
    is then missed)."""
    pairs = {
        r["seed"]: (r["final_best"], b["final_best"])
        for r in ours
        if r["arm"] == arm
        for b in theirs
        if b["arm"] == other and b["seed"] == r["seed"] and b["final_best"] is not None
    }
    if not pairs:
        return None
    finite = {s: ab for s, ab in pairs.items() if ab[0] is not None}
    diff = [math.inf if a is None else a - b for a, b in pairs.values()]
    out = {
        "arm": arm,
        "against": other,
        "pairs": len(pairs),
        "seeds": sorted(pairs),
        "wins": sum(d < 0 for d in diff),
        "losses": sum(d > 0 for d in diff),
        "mean_difference": None,
        "p": None,
        "verdict": "missed",
    }
    if finite:
        v = paired_verdict(
            {s: a for s, (a, _) in finite.items()},
            {s: b for s, (_, b) in finite.items()},
            lower_is_better=True,
        )
        out.update(
            mean_difference=v.mean_diff,
            p=v.p,
            verdict=v.verdict if len(finite) == len(pairs) else "missed",
        )
    return out


def report(
    runs: list[dict[str, Any]], baselines: list[dict[str, Any]], out: Path
) -> dict[str, Any]:
    """results.json, results.md and best_vs_epochs.png from every run recorded."""
    rows, goals = [], []
    for problem in sorted({r["problem"] for r in runs}):
        ours = [r for r in runs if r["problem"] == problem]
        seeds = sorted({r["seed"] for r in ours})
        theirs = [
            b
            for b in baselines
            if b["problem"] == problem and b["seed"] in seeds and not b.get("smoke")
        ]
        for arm in [*ARMS, *BASELINES]:
            arm_runs = [r for r in (ours if arm in ARMS else theirs) if r["arm"] == arm]
            if not arm_runs:
                continue
            finals = [r["final_best"] for r in arm_runs if r["final_best"] is not None]
            decision = [t for r in arm_runs for t in r.get("decision_seconds", [])]
            rows.append(
                {
                    "problem": problem,
                    "arm": arm,
                    "route": route(arm),
                    "seeds": sorted(r["seed"] for r in arm_runs),
                    "final_best": _mean_se(finals),
                    "mean": float(np.mean(finals)) if finals else None,
                    "without_full": len(arm_runs) - len(finals),
                    "trials": float(np.mean([r["num_trials"] for r in arm_runs])),
                    "full": float(np.mean([r["num_full"] for r in arm_runs])),
                    "median_decision_s": float(np.median(decision)) if decision else None,
                }
            )
        for arm in ARMS:
            for other in (
                "optuna-tpe+hyperband",
                *[b for b in BASELINES if b.startswith(("bo+", "random+", "bohb"))],
            ):
                pair = _paired(ours, theirs, arm, other)
                if pair is not None:
                    goals.append({"problem": problem, "route": route(arm), **pair})
    seeds_run = sorted({r["seed"] for r in runs})
    unequal = sorted({(r["problem"], tuple(r["seeds"])) for r in rows})
    lines = [
        f"# Freeze-thaw BO with curve models (seeds run: {', '.join(map(str, seeds_run))}; budget "
        f"{runs[0]['budget'] if runs else BUDGET} epochs)",
        "",
        "Final best: the best validation value of a trial trained to epoch 27, mean +- standard error over "
        "the seeds run (column `seeds`). Early stopping's arms are read from its runs.jsonl for the same "
        "problem and seeds. Decision: seconds per freeze-thaw decision (warm-started model fit + choice "
        "among the paused trials and 256 candidates), on a shared 2-core CPU.",
        "",
        f"Route: **{SIMULATED}** rows come from this script's own loop over the curve cache (`run`), "
        f"which stands in for a campaign; **{SHIPPED}** rows make the same choice through "
        '`dsbo.minimize(..., early_stopping="freeze-thaw")`, the route users get (`run_campaign`); '
        "the other rows are early stopping's arms.",
        "",
        "| problem | arm | route | seeds | final best | runs without a full training | trials / run | full trainings / run | median decision s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        decision = "-" if r["median_decision_s"] is None else f"{r['median_decision_s']:.2f}"
        lines.append(
            f"| {r['problem']} | {r['arm']} | {r['route']} | {','.join(map(str, r['seeds']))} | {r['final_best']} | "
            f"{r['without_full']} | {r['trials']:.1f} | {r['full']:.1f} | {decision} |"
        )
    if len({seeds for _, seeds in unequal}) > 1:
        lines += [
            "",
            "Unequal seeds: "
            + "; ".join(f"{r['problem']} {r['arm']} {','.join(map(str, r['seeds']))}" for r in rows)
            + ".",
        ]
    lines += [
        "",
        "Paired by seed (final best; negative: the freeze-thaw arm is better; a run of ours without a fully "
        "trained trial counts as a loss and is left out of the mean difference). Verdict: "
        "`verdicts.paired_verdict`, two-sided Wilcoxon signed-rank test; met: lower mean and p <= 0.1, "
        "within noise: p > 0.1, missed otherwise:",
        "",
        "| problem | arm | route | against | pairs | mean difference | wins / losses | Wilcoxon p | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for g in goals:
        mean = "-" if g["mean_difference"] is None else f"{g['mean_difference']:.4g}"
        p = "-" if g["p"] is None else f"{g['p']:.3g}"
        lines.append(
            f"| {g['problem']} | {g['arm']} | {g['route']} | {g['against']} | {g['pairs']} | {mean} | "
            f"{g['wins']} / {g['losses']} | {p} | {g['verdict']} |"
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text("\n".join(lines) + "\n")
    summary = {"rows": rows, "pairs": goals, "seeds": seeds_run}
    (out / "results.json").write_text(json.dumps(summary, indent=1))
    _plot(runs, out)
    return summary


def _plot(runs: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = sorted({r["problem"] for r in runs})
    fig, axes = plt.subplots(
        1, max(1, len(problems)), figsize=(5 * max(1, len(problems)), 3.5), squeeze=False
    )
    for ax, problem in zip(axes[0], problems, strict=False):
        for arm in ARMS:
            for r in (r for r in runs if r["problem"] == problem and r["arm"] == arm):
                if r["trace"]:
                    xs, ys = zip(*r["trace"], strict=True)
                    ax.step(
                        list(xs) + [r["budget"]],
                        list(ys) + [ys[-1]],
                        where="post",
                        alpha=0.7,
                        color=f"C{list(ARMS).index(arm)}",
                        label=arm if r["seed"] == min(x["seed"] for x in runs) else None,
                    )
        ax.set_title(problem)
        ax.set_xlabel("epochs spent")
        ax.set_ylabel("best fully trained validation loss")
        ax.legend()
    fig.tight_layout()
    save_figure(fig, out / "best_vs_epochs.png")
    plt.close(fig)
