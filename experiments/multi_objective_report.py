"""The report of ``multi_objective_api.py``: the table per (problem, arm), dsbo paired by seed
against every other arm, ``README.md`` and ``best_hv_vs_evaluations.png``, all computed from the
runs in ``runs.jsonl``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from multi_objective_api import ARMS, ORACLE_ARMS, MOProblem
from results_io import save_figure


def mean_se(values: list[float | None]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), (
        float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0
    )


def median(values: list[float | None]) -> float:
    arr = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.median(arr)) if arr else math.nan


def seed_ranges(seeds: list[int]) -> str:
    if not seeds:
        return "none"
    parts, start = [], seeds[0]
    for a, b in zip(seeds, seeds[1:] + [None], strict=True):
        if b != a + 1:
            parts.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ", ".join(parts)


def summarize(
    runs: list[dict[str, Any]], problems: dict[str, MOProblem], budget: int, smoke: bool
) -> dict[str, Any]:
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["problem"], r["arm"]), {})[r["seed"]] = r
    table = []
    for p in problems.values():
        mine = by.get((p.name, "dsbo"), {})
        for arm in ARMS:
            rs = by.get((p.name, arm))
            if not rs:
                continue
            hv = [r["final_hv"] for r in rs.values()]
            gaps = [r["final_log10_gap"] for r in rs.values()]
            times = [t for r in rs.values() for t in r["proposal_times"]]
            row: dict[str, Any] = {
                "problem": p.name,
                "arm": arm,
                "seeds": len(rs),
                "seed_ids": sorted(rs),
                "hv_mean": mean_se(hv)[0],
                "hv_se": mean_se(hv)[1],
                "hv_median": median(hv),
                "log10_gap_mean": mean_se(gaps)[0],
                "log10_gap_se": mean_se(gaps)[1],
                "log10_gap_median": median(gaps),
                "gap_undefined": sum(g is None for g in gaps),
                "median_proposal_s": float(np.median(times)) if times else math.nan,
                "proposals": len(times),
                "median_run_s": median([r["seconds"] for r in rs.values()]),
            }
            row["oracle"] = arm in ORACLE_ARMS
            if arm.startswith("dsbo"):
                row["n_init"] = sorted({r["n_init"] for r in rs.values()})
            if arm != "dsbo" and mine:
                seeds = sorted(set(mine) & set(rs))
                row["dsbo_pairs"] = len(seeds)
                row["dsbo_at_least"] = sum(mine[s]["final_hv"] >= rs[s]["final_hv"] for s in seeds)
                row["dsbo_strictly_above"] = sum(
                    mine[s]["final_hv"] > rs[s]["final_hv"] for s in seeds
                )
            table.append(row)
    return {
        "budget": budget,
        "smoke": smoke,
        "table": table,
        "problems": {
            p.name: {
                "dim": p.dim,
                "ref_point": list(p.ref_point),
                "max_hv": p.max_hv,
                "note": p.note,
            }
            for p in problems.values()
        },
    }


def fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}"


def write_markdown(
    summary: dict[str, Any], path: Path, versions: dict[str, str], notes: str = ""
) -> None:
    table, budget = summary["table"], summary["budget"]
    seeds = sorted({s for r in table for s in r["seed_ids"]})
    counts = sorted({r["seeds"] for r in table})
    lines = [
        f"# Multi-objective API: dsbo vs Optuna NSGA-II, TPE, random (seeds {seed_ranges(seeds)}, "
        f"{' or '.join(map(str, counts)) or 'none'} per row; budget {budget} evaluations per run)"
        + (" (smoke)" if summary["smoke"] else ""),
        "",
        "`dsbo.minimize(f, space, budget=..., objectives={'f1': 'min', 'f2': 'min'}, seed=s)` with every "
        "other option at its default, against Optuna samplers on the same evaluation code. Final HV: "
        "hypervolume of all evaluated points w.r.t. the problem's standard reference point (higher is "
        "better), mean +- standard error and median over seeds; log10 HV gap: `log10(max_hv - HV)` "
        "(lower is better). dsbo >= arm: seeds where dsbo's final HV is at least the arm's (paired by "
        "seed; strictly above in brackets). Time per proposal: median over all proposals of all seeds "
        "(dsbo: `fit_time + acq_time` of each BO trial, the Sobol initial points excluded; Optuna: "
        "seconds in `study.ask()`), one torch thread per run, two runs at a time on a shared 2-core "
        "machine (upper bounds).",
        "",
        "| problem | arm | seeds | final HV mean +- se | final HV median | log10 HV gap mean +- se | log10 HV gap median | dsbo >= arm (strictly) | median s / proposal | median s / run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        wins = (
            f"{r['dsbo_at_least']}/{r['dsbo_pairs']} ({r['dsbo_strictly_above']})"
            if "dsbo_pairs" in r
            else "-"
        )
        arm = f"{r['arm']} (oracle)" if r.get("oracle") else r["arm"]
        lines.append(
            f"| {r['problem']} | {arm} | {r['seeds']} | {fmt(r['hv_mean'])} +- {fmt(r['hv_se'], 2)} | "
            f"{fmt(r['hv_median'])} | {fmt(r['log10_gap_mean'], 3)} +- {fmt(r['log10_gap_se'], 2)} | "
            f"{fmt(r['log10_gap_median'], 3)} | {wins} | {fmt(r['median_proposal_s'], 3)} | {fmt(r['median_run_s'], 3)} |"
        )
    undefined = [r for r in table if r["gap_undefined"]]
    if undefined:
        lines += [
            "",
            "Runs whose HV reached max_hv (log10 gap undefined, left out of the gap columns): "
            + ", ".join(f"{r['problem']} {r['arm']}: {r['gap_undefined']}" for r in undefined),
        ]
    lines += ["", "Problems (minimization; the unit cube mapped to the problem's bounds):", ""]
    for name, p in summary["problems"].items():
        lines.append(
            f"- `{name}`: {p['note']}; {p['dim']} parameters; reference point {p['ref_point']}; "
            f"max_hv {p['max_hv']:.10g}"
        )
    lines += [
        "",
        "Arms:",
        "",
        "- `dsbo`: `dsbo.minimize` defaults (exact GP, qLogNEHVI, dsbo's default number of Sobol initial "
        "points, `max(2, min(budget // 3, max(5, 2 * dim)))`: "
        + (
            ", ".join(
                f"{r['problem']} {'/'.join(map(str, r['n_init']))}"
                for r in table
                if r["arm"] == "dsbo"
            )
            or "-"
        )
        + ").",
        "- `optuna-nsga2`: `NSGAIISampler(seed=s)`, Optuna's default `population_size=50`: with 40 "
        "evaluations every trial is in the first generation, which NSGA-II samples at random.",
        "- `dsbo-thresholds` (**oracle**): the same, given the reference point the hypervolume is scored "
        "with as the objective thresholds (`objectives={'f1': ('min', r1), 'f2': ('min', r2)}`), which "
        "the other tools are not given and a user does not know in general; it shows what the inferred "
        "reference point costs and is judged by no goal. Its `dsbo >= arm` column pairs the default "
        "`dsbo` against it.",
        "- `optuna-nsga2-p10`: `NSGAIISampler(seed=s, population_size=10)` (4 generations in 40 evaluations).",
        "- `optuna-tpe`: `TPESampler(seed=s)`, Optuna's defaults otherwise (multivariate in Optuna 5, "
        "`n_startup_trials=10`).",
        "- `random`: `RandomSampler(seed=s)`.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        "",
        "Files: `runs.jsonl` (one line per run, appended as it finished: HV trace per evaluation, "
        "values, parameters, proposal times), `results.json` (the summary above; the runs are read from "
        "`runs.jsonl`), `best_hv_vs_evaluations.png` (log10 HV gap vs evaluations, mean +- se over seeds).",
    ]
    if notes:
        lines += ["", notes.strip()]
    path.write_text("\n".join(lines) + "\n")


def plot(runs: list[dict[str, Any]], problems: dict[str, MOProblem], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [p for p in problems if any(r["problem"] == p for r in runs)]
    fig, axes = plt.subplots(
        1, max(len(names), 1), figsize=(5.5 * max(len(names), 1), 4), squeeze=False
    )
    colors = plt.get_cmap("tab10")
    for ax, name in zip(axes[0], names, strict=False):
        max_hv = problems[name].max_hv
        for j, arm in enumerate(ARMS):
            rs = [r for r in runs if r["problem"] == name and r["arm"] == arm and r["hv_trace"]]
            if not rs:
                continue
            n = min(len(r["hv_trace"]) for r in rs)
            gaps = np.log10(np.maximum(max_hv - np.array([r["hv_trace"][:n] for r in rs]), 1e-12))
            mean = gaps.mean(0)
            se = gaps.std(0, ddof=1) / math.sqrt(len(rs)) if len(rs) > 1 else np.zeros(n)
            x = np.arange(1, n + 1)
            ax.plot(
                x,
                mean,
                "--" if arm == "optuna-nsga2" else "-",
                color=colors(j),
                label=f"{arm} ({len(rs)} seeds)",
                lw=2 if arm == "dsbo" else 1.2,
            )
            ax.fill_between(x, mean - se, mean + se, color=colors(j), alpha=0.15)
        ax.set_title(f"{name} (max_hv {max_hv:.4g})")
        ax.set_xlabel("evaluations")
        ax.set_ylabel("log10(max_hv - HV of evaluated points)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
