"""Issue 58's goals for ``mixed_spaces.py``, fixed before its runs: the arm, the peers, the
seeds, the statistic and the thresholds.

- **Quality**: on every problem, the default's mean final value is below each peer's
  (``optuna-tpe``, ``ax``, ``smac3``), paired by seed, judged by
  :func:`verdicts.paired_verdict` (two-sided Wilcoxon signed-rank, ``p <= 0.1`` and the mean
  difference in the default's favour: met; ``p > 0.1``: within noise, not met).
- **No bimodal failure**: on no problem is any seed's final value worse than random search's
  median final value there.
- **Speed**: the default's median seconds per proposal at most SMAC3's and Ax's on each
  problem (over all proposals of the seeds both ran; not interleaved unless said).
- **Against the previous default** (``dsbo-gp+copula+md+explore``: the default before issue
  58): reported with the same paired test, a regression where the previous default is better
  with ``p <= 0.1``.

``SEEDS`` and ``BUDGET`` are the run's; a goal judged on fewer seeds says how many.
"""

from __future__ import annotations

import statistics
from typing import Any

from verdicts import MISSED, finals_by_seed, paired_verdict

#: What ``dsbo.minimize``'s defaults run on these spaces since issue 58.
ISSUE58_ARM = "dsbo-gp+copula+md+explore+branch"
PREVIOUS_DEFAULT_ARM = "dsbo-gp+copula+md+explore"
PEERS = ("optuna-tpe", "ax", "smac3")
SEEDS = tuple(range(10))
BUDGET = 40
THRESHOLD_P = 0.1


def final_values(runs: list[dict[str, Any]], problem: str, arm: str) -> dict[int, float]:
    """Seed -> final best of ``arm`` on ``problem`` over ``SEEDS`` at ``BUDGET``."""
    return finals_by_seed(runs, problem, arm, SEEDS, budget=BUDGET)


def median_proposal_seconds(runs: list[dict[str, Any]], problem: str, arm: str) -> float | None:
    times = [
        t
        for r in runs
        if r["problem"] == problem and r["arm"] == arm and r["seed"] in SEEDS
        for t in r.get("proposal_times", [])
    ]
    return statistics.median(times) if times else None


def issue58_goals(runs: list[dict[str, Any]], problems: list[str]) -> list[dict[str, Any]]:
    """One row per (goal, problem): ``goal``, ``problem``, ``verdict`` and ``detail``."""
    rows: list[dict[str, Any]] = []
    for problem in problems:
        ours = final_values(runs, problem, ISSUE58_ARM)
        if not ours:
            continue
        for peer in (*PEERS, PREVIOUS_DEFAULT_ARM):
            theirs = final_values(runs, problem, peer)
            if not set(ours) & set(theirs):
                continue
            v = paired_verdict(ours, theirs, lower_is_better=True, threshold_p=THRESHOLD_P)
            verdict = v.verdict
            if peer == PREVIOUS_DEFAULT_ARM and verdict == MISSED:
                verdict = "regression"
            goal = (
                f"below {peer}"
                if peer != PREVIOUS_DEFAULT_ARM
                else "against the previous default (reported)"
            )
            rows.append(
                {"goal": goal, "problem": problem, "verdict": verdict, "detail": v.describe(3)}
            )
        random = final_values(runs, problem, "random")
        if random:
            line = statistics.median(random.values())
            worst_seed = max(ours, key=ours.get)
            met = ours[worst_seed] <= line
            rows.append(
                {
                    "goal": "no seed worse than random's median",
                    "problem": problem,
                    "verdict": "met" if met else "missed",
                    "detail": f"worst seed {worst_seed}: {ours[worst_seed]:.4g}; random's median "
                    f"{line:.4g} ({len(random)} seeds); {len(ours)} seeds",
                }
            )
        mine = median_proposal_seconds(runs, problem, ISSUE58_ARM)
        for peer in ("smac3", "ax"):
            theirs_s = median_proposal_seconds(runs, problem, peer)
            if mine is None or theirs_s is None:
                continue
            rows.append(
                {
                    "goal": f"s / proposal at most {peer}'s",
                    "problem": problem,
                    "verdict": "met" if mine <= theirs_s else "missed",
                    "detail": f"{mine:.3g} s against {theirs_s:.3g} s (median, not interleaved)",
                }
            )
    return rows


def issue58_markdown(rows: list[dict[str, Any]]) -> str:
    """The goals' table (empty when no run of the issue's arm is there)."""
    if not rows:
        return ""
    lines = [
        f"## Issue 58's goals (`{ISSUE58_ARM}`, seeds {SEEDS[0]}-{SEEDS[-1]}, budget {BUDGET}; "
        f"paired Wilcoxon, p <= {THRESHOLD_P})",
        "",
        "| goal | problem | verdict | detail |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r['goal']} | {r['problem']} | {r['verdict']} | {r['detail']} |" for r in rows]
    return "\n".join(lines) + "\n"
