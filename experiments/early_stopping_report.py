"""The report of ``early_stopping.py``: the table per (problem, arm), the BO + early-stopping
arms against Optuna's TPE + Hyperband paired by seed, the goals and their verdicts,
``results.md`` and ``best_vs_epochs.png``, all computed from the runs in ``runs.jsonl``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from early_stopping_arms import (
    ARMS,
    BO_ES_ARMS,
    FULL_ARM,
    PREVIOUS_DEFAULT_ARM,
    RECOMMENDED_ARM,
    TPE_HB,
)
from early_stopping_problems import MAX_EPOCHS
from results_io import save_figure
from verdicts import paired_verdict

#: Goal 2's significance level (issue 59: met needs a lower mean and p <= this).
THRESHOLD_P = 0.1
GOAL_EPOCHS = "reaches bo-full's final best with <= 1/3 of bo-full's epochs (median over seeds)"
GOAL_VS_TPE = "ends below optuna-tpe+hyperband's final best (paired by seed, Wilcoxon)"


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


def summarize(
    runs: list[dict[str, Any]], problems: dict[str, Any], budget: int, smoke: bool
) -> dict[str, Any]:
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["problem"], r["arm"]), {})[r["seed"]] = r
    table, reach_rows, goals, previous = [], [], [], []
    for p in problems:
        full = by.get((p, FULL_ARM), {})
        own = {
            s: reach(r, r["final_best"]) for s, r in full.items()
        }  # bo-full's epochs to its own final best
        for arm in ARMS:
            rs = by.get((p, arm))
            if not rs:
                continue
            mean, se = mean_se([r["final_best"] for r in rs.values()])
            times = [t for r in rs.values() for t in r["proposal_times"]]
            trained = sum(r["trained_epochs"] for r in rs.values())
            row = {
                "problem": p,
                "arm": arm,
                "seeds": len(rs),
                "seed_ids": sorted(rs),
                "final_mean": mean,
                "final_se": se,
                "no_full_runs": sum(r["final_best"] is None for r in rs.values()),
                "trials_mean": mean_se([r["num_trials"] for r in rs.values()])[0],
                "full_mean": mean_se([r["num_full"] for r in rs.values()])[0],
                "epochs_mean": mean_se([r["epochs_spent"] for r in rs.values()])[0],
                "seconds_mean": mean_se([r["seconds"] for r in rs.values()])[0],
                "median_proposal_s": float(np.median(times)) if times else math.nan,
                "trained_epochs_mean": trained / len(rs),
                "s_per_full_training": sum(r["train_seconds"] for r in rs.values())
                / trained
                * MAX_EPOCHS
                if trained
                else math.nan,
            }
            paired = sorted(set(rs) & set(full))
            if paired:
                epochs = {s: reach(rs[s], full[s]["final_best"]) for s in paired}
                ratios = {
                    s: epochs[s] / own[s] if math.isfinite(own[s]) else math.nan for s in paired
                }
                row.update(
                    reach_epochs=epochs,
                    reach_ratio=ratios,
                    reached=sum(math.isfinite(e) for e in epochs.values()),
                    reach_median=float(np.median(list(epochs.values()))),
                    ratio_median=float(np.median(list(ratios.values()))),
                )
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
            reach_rows.append(
                {
                    "problem": p,
                    "arm": arm,
                    "pairs": len(seeds),
                    "diffs": diffs,
                    "mean_diff": float(np.mean(diffs)) if diffs else math.nan,
                    "wins": sum(
                        b is None and a is not None or (a is not None and b is not None and a < b)
                        for a, b in pairs
                    ),
                    "losses": sum(
                        a is None and b is not None or (a is not None and b is not None and a > b)
                        for a, b in pairs
                    ),
                    "missing": sum(a is None for a, _ in pairs),
                    "p": wilcoxon_p(diffs),
                }
            )
        goals += assess(p, rows, by, budget)
        if (regression := against_previous(p, by)) is not None:
            previous.append(regression)
    seeds_run = sorted({r["seed"] for r in runs})
    return {
        "budget": budget,
        "smoke": smoke,
        "seeds_run": seeds_run,
        "table": table,
        "vs_tpe_hyperband": reach_rows,
        "goals": goals,
        "vs_previous_default": previous,
        "problems": {
            name: {
                "space": {n: q.to_config() for n, q in pr.space.items()},
                "data": pr.data,
                "model": pr.model,
                "metric": pr.metric,
            }
            for name, pr in problems.items()
        },
    }


def against_previous(
    problem: str, by: dict[tuple[str, str], dict[int, dict[str, Any]]]
) -> dict[str, Any] | None:
    """``RECOMMENDED_ARM`` against ``PREVIOUS_DEFAULT_ARM`` on ``problem``, paired by seed
    (:func:`verdicts.paired_verdict`; "missed" here means a regression against the previous
    default), or ``None`` when the two share no seed with a fully trained run each."""
    ours, before = (
        by.get((problem, RECOMMENDED_ARM), {}),
        by.get((problem, PREVIOUS_DEFAULT_ARM), {}),
    )
    finals = {
        s: (ours[s]["final_best"], before[s]["final_best"])
        for s in sorted(set(ours) & set(before))
        if ours[s]["final_best"] is not None and before[s]["final_best"] is not None
    }
    if not finals:
        return None
    v = paired_verdict(
        {s: a for s, (a, _) in finals.items()},
        {s: b for s, (_, b) in finals.items()},
        lower_is_better=True,
        threshold_p=THRESHOLD_P,
    )
    return {
        "problem": problem,
        "arm": RECOMMENDED_ARM,
        "previous": PREVIOUS_DEFAULT_ARM,
        "pairs": len(finals),
        "mean_diff": v.mean_diff,
        "p": v.p,
        "verdict": {"met": "better", "missed": "worse (a regression)"}.get(v.verdict, v.verdict),
    }


def assess(
    problem: str,
    rows: dict[str, dict[str, Any]],
    by: dict[tuple[str, str], dict[int, dict[str, Any]]],
    budget: int,
) -> list[dict[str, Any]]:
    """The issue's two goals on one problem, judged for ``RECOMMENDED_ARM`` alone: the arm is
    named in ``early_stopping_arms.py`` before the runs, never picked among the arms after
    seeing them.

    1. It reaches bo-full's final best with <= 1/3 of bo-full's epochs (median ratio over the
       seeds; fewer than 3 seeds: inconclusive).
    2. It ends below optuna-tpe+hyperband's final best, paired by seed:
       :func:`verdicts.paired_verdict` (met: lower mean and Wilcoxon p <= 0.1; within noise:
       p > 0.1; missed otherwise). A run of ours without a fully trained trial is a loss: the
       goal is then missed."""
    arm, goals = RECOMMENDED_ARM, []
    row = rows.get(arm)
    if row is not None and "ratio_median" in row:
        n = len(row["reach_ratio"])
        met1 = row["ratio_median"] <= 1 / 3
        goals.append(
            {
                "goal": GOAL_EPOCHS,
                "problem": problem,
                "arm": arm,
                "met": met1,
                "verdict": ("met" if met1 else "missed")
                + (f" (inconclusive: {n} seed{'s' * (n != 1)})" if n < 3 else ""),
                "detail": f"median ratio {fmt(row['ratio_median'], 3)} (epochs to reach: median "
                f"{fmt(row['reach_median'])}, reached on {row['reached']} of {n} seeds); against 1/3 "
                f"of the budget ({budget // 3} epochs): "
                + ("met" if row["reach_median"] <= budget / 3 else "missed"),
            }
        )
    ours, tpe = by.get((problem, arm), {}), by.get((problem, TPE_HB), {})
    seeds = sorted(set(ours) & set(tpe))
    if not seeds:
        return goals
    without = [s for s in seeds if ours[s]["final_best"] is None]
    finals = {
        s: (ours[s]["final_best"], tpe[s]["final_best"])
        for s in seeds
        if ours[s]["final_best"] is not None and tpe[s]["final_best"] is not None
    }
    goal = {"goal": GOAL_VS_TPE, "problem": problem, "arm": arm, "pairs": len(seeds)}
    if finals:
        v = paired_verdict(
            {s: a for s, (a, _) in finals.items()},
            {s: b for s, (_, b) in finals.items()},
            lower_is_better=True,
            threshold_p=THRESHOLD_P,
        )
        goal.update(mean_diff=v.mean_diff, p=v.p, verdict=v.verdict)
        detail = f"{arm} - {TPE_HB}: {v.describe(3)}"
    else:
        goal.update(mean_diff=math.nan, p=None, verdict="missed")
        detail = f"{arm} - {TPE_HB}: no pair with two fully trained runs"
    if without:
        goal["verdict"] = "missed"
        detail += f"; no fully trained trial on seeds {without} (a loss)"
    goal.update(met=goal["verdict"] == "met", detail=detail)
    return [*goals, goal]


def write_markdown(summary: dict[str, Any], path: Path) -> None:
    seeds = summary["seeds_run"]
    budget = summary["budget"]
    lines = [
        f"# Early stopping on real learning curves (seeds run: {seed_ranges(seeds) or 'none'}; budget {budget} "
        f"epochs = {budget // MAX_EPOCHS} full trainings of {MAX_EPOCHS})"
        + (" (smoke)" if summary["smoke"] else ""),
        "",
        "Final best: the best validation value of a fully trained trial (27 epochs), mean +- standard error over "
        "the seeds run (column `seeds`; runs without any fully trained trial are left out of the mean and counted). "
        "Reach: epochs spent when the arm's best first reached bo-full's final best of the same seed (inf: never); "
        "ratio: that over the epochs bo-full itself needed for it. Times: wall seconds per run and the median "
        "proposal time (dsbo: fit + acquisition of each trial after the initial design; Optuna: ask + suggest), "
        "on a shared 2-core machine; s / full training: seconds per 27 epochs trained in the runs (cache misses).",
        "",
        "| problem | arm | seeds | final best | runs without a full training | reach: median epochs (reached) | "
        "reach: median ratio to bo-full | trials / run | full trainings / run | wall s / run | median s / proposal | "
        "epochs trained / run | s / full training |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary["table"]:
        reach_cell = (
            f"{fmt(r['reach_median'])} ({r['reached']}/{len(r['reach_epochs'])})"
            if "reach_median" in r
            else "-"
        )
        lines.append(
            f"| {r['problem']} | {r['arm']} | {r['seeds']} | {fmt(r['final_mean'])} +- {fmt(r['final_se'], 2)} | "
            f"{r['no_full_runs']} | {reach_cell} | {fmt(r.get('ratio_median'), 3)} | {r['trials_mean']:.1f} | "
            f"{r['full_mean']:.1f} | {r['seconds_mean']:.0f} | {fmt(r['median_proposal_s'], 3)} | "
            f"{r['trained_epochs_mean']:.0f} | {fmt(r['s_per_full_training'], 3)} |"
        )
    lines += [
        "",
        f"BO + early-stopping arms against {TPE_HB} (final best, paired by seed; a run without a fully trained "
        "trial counts as a loss):",
        "",
        "| problem | arm | pairs | mean difference | wins / losses | Wilcoxon p |",
        "|---|---|---|---|---|---|",
    ]
    for t in summary["vs_tpe_hyperband"]:
        lines.append(
            f"| {t['problem']} | {t['arm']} | {t['pairs']} | {fmt(t['mean_diff'], 3)} | {t['wins']} / {t['losses']} | {fmt(t['p'], 3)} |"
        )
    lines += [
        "",
        f"Goals, judged for `{RECOMMENDED_ARM}` alone (the arm named in `early_stopping_arms.py` "
        "before the runs: the setting docs/guide/early-stopping.md recommends). Goal 1: the median over seeds of "
        "the epochs to reach bo-full's final best over bo-full's own, at most 1/3 (fewer than 3 seeds: "
        f"inconclusive). Goal 2: paired by seed against {TPE_HB}, two-sided Wilcoxon signed-rank "
        f"test; met: lower mean and p <= {THRESHOLD_P}, within noise: p > {THRESHOLD_P}, missed "
        "otherwise. The other arms are in the tables above and judged by no goal.",
        "",
        "| goal | problem | arm | verdict | detail |",
        "|---|---|---|---|---|",
    ]
    for g in summary["goals"]:
        lines.append(
            f"| {g['goal']} | {g['problem']} | {g['arm']} | {g['verdict']} | {g['detail']} |"
        )
    for name, goal in (
        ("goal 1 (epochs)", GOAL_EPOCHS),
        ("goal 2 (vs TPE + Hyperband)", GOAL_VS_TPE),
    ):
        judged = [g for g in summary["goals"] if g["goal"] == goal]
        counts = {
            v: [g["problem"] for g in judged if g["verdict"].split(" (")[0] == v]
            for v in ("met", "within noise", "missed")
        }
        lines.append(
            f"\n**{name}**, `{RECOMMENDED_ARM}`: "
            + (
                "no data"
                if not judged
                else "; ".join(
                    f"{v} on {len(ps)} of {len(judged)}" + (f" ({', '.join(ps)})" if ps else "")
                    for v, ps in counts.items()
                    if ps or v == "met"
                )
            )
        )
    if summary.get("vs_previous_default"):
        lines += [
            "",
            f"`{RECOMMENDED_ARM}` against the previous default `{PREVIOUS_DEFAULT_ARM}` (final best, paired "
            f"by seed, two-sided Wilcoxon; better / worse at p <= {THRESHOLD_P}, else within noise):",
            "",
            "| problem | pairs | mean difference | Wilcoxon p | verdict |",
            "|---|---|---|---|---|",
        ]
        for r in summary["vs_previous_default"]:
            lines.append(
                f"| {r['problem']} | {r['pairs']} | {fmt(r['mean_diff'], 3)} | {fmt(r['p'], 3)} | {r['verdict']} |"
            )
    if summary.get("left_out"):
        lines += ["", "Arms left out:", ""] + [
            f"- `{a}`: {why}" for a, why in summary["left_out"].items()
        ]
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
    fig, axes = plt.subplots(
        1, max(len(names), 1), figsize=(5.5 * max(len(names), 1), 4.2), squeeze=False
    )
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
                    curves[i, int(e) - 1 :] = best
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
    save_figure(fig, path)
    plt.close(fig)
