"""The report of ``mixed_spaces.py``: the table per (problem, arm), the paired Wilcoxon tests,
the goals and their verdicts, ``README.md`` and ``best_vs_evaluations.png``, all computed from
the runs in ``runs.jsonl``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from mixed_spaces_arms import (
    ARMS,
    BASELINES,
    BONSAI_ARMS,
    DEFAULT_ARM,
    GOAL_ARMS,
    REPORT_ONLY_ARMS,
    WARPED_ARMS,
)
from mixed_spaces_goals import issue58_goals, issue58_markdown
from mixed_spaces_problems import MixedProblem
from results_io import save_figure


def mean_se(values: list[float]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0


def wilcoxon(a: dict[int, float], b: dict[int, float]) -> dict[str, Any]:
    """Paired two-sided Wilcoxon signed-rank test over the seeds both arms ran."""
    from scipy.stats import wilcoxon as test

    seeds = sorted(set(a) & set(b))
    diffs = [a[s] - b[s] for s in seeds]
    out: dict[str, Any] = {
        "pairs": len(seeds),
        "wins": sum(d < 0 for d in diffs),
        "losses": sum(d > 0 for d in diffs),
    }
    if len(seeds) < 2 or all(d == 0 for d in diffs):
        out["p"] = None
    else:
        out["p"] = float(test([a[s] for s in seeds], [b[s] for s in seeds]).pvalue)
    return out


def summarize(
    runs: list[dict[str, Any]], problems: dict[str, MixedProblem], budget: int, smoke: bool
) -> dict[str, Any]:
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["problem"], r["arm"]), {})[r["seed"]] = r
    table = []
    for p in problems.values():
        for arm in ARMS + REPORT_ONLY_ARMS:
            rs = by.get((p.name, arm))
            if not rs:
                continue
            finals = [r["final_best"] for r in rs.values()]
            mean, se = mean_se(finals)
            times = [t for r in rs.values() for t in r["proposal_times"]]
            row: dict[str, Any] = {
                "problem": p.name,
                "arm": arm,
                "seeds": len(rs),
                "seed_ids": sorted(rs),
                "final_mean": mean,
                "final_se": se,
                "median_proposal_s": float(np.median(times)) if times else math.nan,
                "median_eval_s": float(np.median([r["median_eval_s"] for r in rs.values()])),
            }
            recorded = [r for r in rs.values() if "params" in r]
            if recorded:  # evaluations of a configuration already evaluated in the same run
                row["repeats_mean"] = float(
                    np.mean(
                        [
                            len(r["params"])
                            - len({json.dumps(q, sort_keys=True) for q in r["params"]})
                            for r in recorded
                        ]
                    )
                )
                row["repeats_runs"] = len(recorded)
            near = [r["near_repeats"] for r in rs.values() if "near_repeats" in r]
            if near:  # dsbo arms: BO proposals within 1% of an earlier trial
                bo = [
                    sum(g not in ("default", "sobol-init") for g in r["generators"])
                    for r in rs.values()
                    if "near_repeats" in r
                ]
                row["near_share_max"] = max(n / max(b, 1) for n, b in zip(near, bo, strict=True))
                row["near_mean"] = float(np.mean(near))
            if p.optimum is not None:
                row["regret_mean"], row["regret_se"] = mean_se([v - p.optimum for v in finals])
            if arm in BONSAI_ARMS:
                plain = by.get((p.name, BONSAI_ARMS[arm]), {})
                row["changed_best_mean"] = mean_se([r["num_changed_best"] for r in rs.values()])[0]
                row["changed_best_max"] = max(r["num_changed_best"] for r in rs.values())
                ratios = {
                    s: r["final_best"] / plain[s]["final_best"]
                    for s, r in rs.items()
                    if s in plain and plain[s]["final_best"] > 0
                }
                row["ratio_to_unpruned"] = ratios
                row["ratio_mean"] = mean_se(list(ratios.values()))[0] if ratios else math.nan
                row["ratio_pairs"] = len(ratios)
                row["dsbo_num_changed_best"] = [r.get("dsbo_num_changed_best") for r in rs.values()]
            table.append(row)

    tests = []
    for p in problems.values():
        for mine in GOAL_ARMS:
            a = {s: r["final_best"] for s, r in by.get((p.name, mine), {}).items()}
            for other in BASELINES + ((WARPED_ARMS[mine],) if mine in WARPED_ARMS else ()):
                b = {s: r["final_best"] for s, r in by.get((p.name, other), {}).items()}
                if a and b:
                    tests.append({"problem": p.name, "arm": mine, "vs": other, **wilcoxon(a, b)})
    _RUNS_BY.clear()
    _RUNS_BY.update({k: {s: r["final_best"] for s, r in v.items()} for k, v in by.items()})
    goals = assess(table, problems)
    return {
        "issue58": issue58_goals(runs, list(problems)),
        "budget": budget,
        "smoke": smoke,
        "table": table,
        "wilcoxon": tests,
        "goals": goals,
        "problems": {
            p.name: {
                "optimum": p.optimum,
                "default": p.default,
                "note": p.note,
                "space": {n: q.to_config() for n, q in p.space.items()},
            }
            for p in problems.values()
        },
    }


def assess(table: list[dict[str, Any]], problems: dict[str, MixedProblem]) -> list[dict[str, Any]]:
    """The stated goals, each on the seeds both arms ran (paired); a verdict on fewer than
    three pairs is marked inconclusive."""
    rows = {(r["problem"], r["arm"]): r for r in table}
    runs = _RUNS_BY
    goals = []

    def verdict(met: bool, pairs: int) -> str:
        return ("met" if met else "MISSED") + (
            f" (inconclusive: {pairs} pair{'s' * (pairs != 1)})" if pairs < 3 else ""
        )

    for p in problems:
        for mine in GOAL_ARMS:
            a = runs.get((p, mine), {})
            if not a:
                continue
            before = REPORT_ONLY_ARMS if mine == DEFAULT_ARM else ()
            for other in ("random", "optuna-tpe", "ax", *before):
                b = runs.get((p, other), {})
                seeds = sorted(set(a) & set(b))
                if not seeds:
                    continue
                ma, sa = mean_se([a[s] for s in seeds])
                mb, sb = mean_se([b[s] for s in seeds])
                if other == "ax":
                    goal, met = f"{mine} within 1 se of ax or better", ma <= mb + max(sa, sb)
                else:
                    goal, met = f"{mine} beats {other}", ma < mb
                goals.append(
                    {
                        "goal": goal,
                        "problem": p,
                        "met": met,
                        "pairs": len(seeds),
                        "verdict": verdict(met, len(seeds)),
                        "detail": f"{ma:.4g} +- {sa:.2g} vs {mb:.4g} +- {sb:.2g} on seeds {seeds}",
                    }
                )
        for arm in BONSAI_ARMS:
            b = rows.get((p, arm))
            if b is None or not b["ratio_pairs"]:
                continue
            met = b["ratio_mean"] <= 1.01 and b["changed_best_max"] <= 3
            goals.append(
                {
                    "goal": f"{arm} within 1% of unpruned, <= 3 changes",
                    "problem": p,
                    "met": met,
                    "pairs": b["ratio_pairs"],
                    "verdict": verdict(met, b["ratio_pairs"]),
                    "detail": f"best/unpruned {b['ratio_mean']:.3f} over {b['ratio_pairs']} seeds, "
                    f"changed parameters of the best point mean {b['changed_best_mean']:.1f} max {b['changed_best_max']}",
                }
            )
    return goals


_RUNS_BY: dict[tuple[str, str], dict[int, float]] = {}


def seeds_header(table: list[dict[str, Any]]) -> str:
    counts = sorted({r["seeds"] for r in table})
    return (
        "seeds run per row: "
        + (" or ".join(map(str, counts)) if counts else "none")
        + " (column `seeds`)"
    )


def fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}"


def write_markdown(summary: dict[str, Any], path: Path, notes: str = "") -> None:
    table, budget = summary["table"], summary["budget"]
    lines = [
        f"# Mixed search spaces: dsbo vs Optuna TPE, Ax, SMAC3, random ({seeds_header(table)}; "
        f"budget {budget} evaluations per run)" + (" (smoke)" if summary["smoke"] else ""),
        "",
        "Final best (lower is better) and regret: mean +- standard error over the seeds run. "
        "Time per proposal: median over all proposals of all seeds (dsbo: fit + acquisition time of "
        "each BO trial; Optuna: ask + suggest; Ax: get_next_trials), on a shared 2-core machine "
        "(upper bounds).",
        "",
        "| problem | arm | seeds | final best | regret | median s / proposal | repeated evaluations per run (runs recorded) | BO proposals within 1% of an earlier trial (mean per run / worst run's share) | BONSAI: changed params of best (mean / max) | BONSAI: best / unpruned best (mean, pairs) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        bonsai = r["arm"] in BONSAI_ARMS
        lines.append(
            f"| {r['problem']} | {r['arm']} | {r['seeds']} | {fmt(r['final_mean'])} +- {fmt(r['final_se'], 2)} | "
            + (
                f"{fmt(r['regret_mean'])} +- {fmt(r['regret_se'], 2)}"
                if "regret_mean" in r
                else "unknown optimum"
            )
            + f" | {fmt(r['median_proposal_s'], 3)} | "
            + (f"{r['repeats_mean']:.1f} ({r['repeats_runs']})" if "repeats_mean" in r else "-")
            + " | "
            + (f"{r['near_mean']:.1f} / {r['near_share_max']:.0%}" if "near_mean" in r else "-")
            + " | "
            + (f"{fmt(r['changed_best_mean'], 2)} / {r['changed_best_max']}" if bonsai else "")
            + " | "
            + (f"{fmt(r['ratio_mean'])} ({r['ratio_pairs']})" if bonsai else "")
            + " |"
        )
    lines += [
        "",
        "Paired two-sided Wilcoxon signed-rank tests on the final best, over the seeds both arms ran "
        "(wins = seeds where the dsbo arm is lower):",
        "",
        "| problem | dsbo arm | vs | pairs | wins / losses | p |",
        "|---|---|---|---|---|---|",
    ]
    for t in summary["wilcoxon"]:
        lines.append(
            f"| {t['problem']} | {t['arm']} | {t['vs']} | {t['pairs']} | {t['wins']} / {t['losses']} | {fmt(t['p'], 3)} |"
        )
    lines += [
        "",
        "Goals, on the seeds both arms ran (paired means +- se; fewer than 3 pairs: inconclusive):",
        "",
        "| goal | problem | met | detail |",
        "|---|---|---|---|",
    ]
    for g in summary["goals"]:
        lines.append(f"| {g['goal']} | {g['problem']} | {g['verdict']} | {g['detail']} |")
    lines += ["", "Problems:", ""]
    for name, p in summary["problems"].items():
        lines.append(
            f"- `{name}`: {p['note']}; optimum {fmt(p['optimum'], 7) if p['optimum'] is not None else 'unknown'}; "
            f"library defaults {p['default']}"
        )
    goals58 = issue58_markdown(summary.get("issue58", []))
    if goals58:
        lines += ["", goals58]
    if notes:
        lines += ["", notes.strip()]
    path.write_text("\n".join(lines) + "\n")


def plot(runs: list[dict[str, Any]], problems: dict[str, MixedProblem], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [p for p in problems if any(r["problem"] == p for r in runs)]
    fig, axes = plt.subplots(
        1, max(len(names), 1), figsize=(5 * max(len(names), 1), 4), squeeze=False
    )
    colors = plt.get_cmap("tab20")
    for ax, name in zip(axes[0], names, strict=False):
        optimum = problems[name].optimum
        for j, arm in enumerate(ARMS):
            rs = [r for r in runs if r["problem"] == name and r["arm"] == arm and r["trace"]]
            if not rs:
                continue
            n = min(len(r["trace"]) for r in rs)
            traces = np.array([r["trace"][:n] for r in rs])
            if optimum is not None:
                traces = np.maximum(traces - optimum, 1e-12)
            mean = traces.mean(0)
            se = traces.std(0, ddof=1) / math.sqrt(len(rs)) if len(rs) > 1 else np.zeros(n)
            x = np.arange(1, n + 1)
            style = "--" if "bonsai" in arm else "-"
            ax.plot(x, mean, style, color=colors(j), label=f"{arm} ({len(rs)})")
            ax.fill_between(x, mean - se, mean + se, color=colors(j), alpha=0.15)
        ax.set_title(name)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("regret" if optimum is not None else "best CV error")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
