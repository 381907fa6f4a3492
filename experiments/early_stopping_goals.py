"""Issue 57's quality goal for ``early_stopping.py``, fixed before its runs: the arm, the peers,
the problems, the seeds, the statistic and the threshold.

- **The arm**: ``bo+recommended`` (``early_stopping=True``, the setting the guide names first),
  on this commit's code.
- **The peers**: Optuna TPE + ``HyperbandPruner``, random + ASHA (dsbo's Sobol proposals with
  its ASHA rule), DEHB, Syne Tune's ASHA-CQR and BOHB (``early_stopping_peers.py``).
- **The problems**: the five of ``early_stopping_problems.py`` (``zoo-diabetes``,
  ``mlp-cancer``, ``cnn-digits``, and issue 57's ``mlp-overfit`` and ``lightning-digits``);
  seeds 0-9; the budget of 20 full trainings (540 epochs).
- **The statistic**: per problem and peer, the final best (the best validation value of a
  fully trained trial) paired by seed, :func:`verdicts.paired_verdict` (two-sided Wilcoxon
  signed-rank; met: the arm's mean lower and ``p <= 0.1``; ``p > 0.1``: within noise, not
  met). A run without a fully trained trial counts as the worst final best any run reached on
  that problem (the ranks stay honest; its count is printed).
- **The goal**: the arm is below every peer (met against each) on at least 4 of the 5
  problems.

**Exploratory arm** (named here before its runs, judged by the same rule and reported beside
the goal's arm, never in its place): ``bo-ts+recommended``, the recommended setting with
Thompson sampling (``acquisition="thompson"``) instead of qLogNEI's maximizer. Its reason: the
first seeds showed ``bo+recommended`` spending most of a zoo-diabetes run on small moves around
its incumbent that ASHA stopped at the first rung, where Syne Tune's ASHA-CQR, fitted on the
same last values, draws its proposals over the whole space.

**Confirmation run** (fixed after the exploratory arm's 10 seeds, before any run on these
seeds): ``bo-ts+recommended`` is the candidate for the recommended setting (at seeds 0-9 it was
lower than ``bo+recommended`` on all five problems, p 0.027-0.43, a comparison made after the
runs). It is judged by the same rule on fresh seeds 10-19 against the same five peers run on
those seeds; only a met verdict there would switch the recommended setting.

The runs are in ``results/early_stopping/issue57/``; each verdict is printed with its p-value.
"""

from __future__ import annotations

from typing import Any

from verdicts import MET, finals_by_seed, paired_verdict

ARM = "bo+recommended"
EXPLORATORY_ARMS = ("bo-ts+recommended",)
PEERS = (
    "optuna-tpe+hyperband",
    "random+asha",
    "dehb",
    "synetune-asha-cqr",
    "synetune-bohb",
)
PROBLEMS = ("zoo-diabetes", "mlp-cancer", "cnn-digits", "mlp-overfit", "lightning-digits")
SEEDS = tuple(range(10))
CONFIRMATION_ARM = "bo-ts+recommended"
CONFIRMATION_SEEDS = tuple(range(10, 20))
FULL_TRAININGS = 20
THRESHOLD_P = 0.1
PROBLEMS_NEEDED = 4


def final_bests(
    runs: list[dict[str, Any]], problem: str, arm: str, seeds: tuple[int, ...] = SEEDS
) -> dict[int, float | None]:
    """Seed -> final best of ``arm`` on ``problem`` over ``seeds`` (``None``: no full training)."""
    return finals_by_seed(runs, problem, arm, seeds, full_trainings=FULL_TRAININGS)


def filled(values: dict[int, float | None], seeds: list[int], worst: float) -> dict[int, float]:
    """``values`` on ``seeds``, a run without a full training counted as ``worst``."""
    return {s: worst if values[s] is None else values[s] for s in seeds}


def issue57_goals(
    runs: list[dict[str, Any]], arm: str = ARM, seeds: tuple[int, ...] = SEEDS
) -> dict[str, Any]:
    """Per problem, ``arm`` (the goal's, an exploratory one, or the confirmation's) against each
    peer over ``seeds``, and the goal's verdict for it."""
    rows, problems_met, judged = [], [], []
    for problem in PROBLEMS:
        ours = final_bests(runs, problem, arm, seeds)
        if not ours:
            continue
        judged.append(problem)
        reached = [
            v for r in runs if r["problem"] == problem and (v := r["final_best"]) is not None
        ]
        worst = max(reached)
        below_all = True
        for peer in PEERS:
            theirs = final_bests(runs, problem, peer, seeds)
            paired = sorted(set(ours) & set(theirs))
            if not paired:
                below_all = False
                rows.append({"problem": problem, "peer": peer, "verdict": "not run", "detail": ""})
                continue
            empty = [s for s in paired if ours[s] is None or theirs[s] is None]
            v = paired_verdict(
                filled(ours, paired, worst), filled(theirs, paired, worst), True, THRESHOLD_P
            )
            below_all &= v.verdict == MET
            detail = v.describe(3)
            if empty:
                detail += f"; no full training on seeds {empty} (counted as {worst:.4g})"
            rows.append({"problem": problem, "peer": peer, "verdict": v.verdict, "detail": detail})
        if below_all:
            problems_met.append(problem)
    return {
        "arm": arm,
        "seeds": list(seeds),
        "rows": rows,
        "problems_judged": judged,
        "problems_met": problems_met,
        "met": len(problems_met) >= PROBLEMS_NEEDED,
    }


def issue57_markdown(goals: dict[str, Any]) -> str:
    """The goal's section of ``results.md`` (empty when the arm has no run here)."""
    if not goals["problems_judged"]:
        return ""
    arm = goals["arm"]
    seeds = goals.get("seeds", SEEDS)
    verdict = "met" if goals["met"] else "**missed**"
    if arm == ARM:
        title = "Issue 57's goal"
    elif seeds[0] == CONFIRMATION_SEEDS[0]:
        title = "Issue 57's confirmation run (the candidate recommended setting, fresh seeds)"
    else:
        title = "Issue 57's rule applied to an exploratory arm (reported, not the goal's arm)"
    lines = [
        f"## {title}: `{arm}` below every peer on at least {PROBLEMS_NEEDED} of "
        f"{len(PROBLEMS)} problems (seeds {seeds[0]}-{seeds[-1]}, paired Wilcoxon, "
        f"p <= {THRESHOLD_P}; fixed in `early_stopping_goals.py` before the runs)",
        "",
        f"Below every peer on {len(goals['problems_met'])} of {len(goals['problems_judged'])} "
        f"problems run ({', '.join(goals['problems_met']) or 'none'}): {verdict}.",
        "",
        f"| problem | peer | verdict | {arm} - peer |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['problem']} | {r['peer']} | {r['verdict']} | {r['detail']} |" for r in goals["rows"]
    ]
    return "\n".join(lines) + "\n"


def against_earlier_code(runs: list[dict[str, Any]], earlier: list[dict[str, Any]]) -> str:
    """``ARM`` on this code against its runs on the code of an earlier stop (``earlier``:
    ``results/early_stopping/runs.jsonl``), paired by seed per problem both ran: a regression
    is reported where the earlier runs are better with ``p <= THRESHOLD_P``."""
    lines = []
    for problem in PROBLEMS:
        now, before = final_bests(runs, problem, ARM), final_bests(earlier, problem, ARM)
        seeds = sorted(
            s for s in set(now) & set(before) if now[s] is not None and before[s] is not None
        )
        if not seeds:
            continue
        v = paired_verdict(
            {s: now[s] for s in seeds}, {s: before[s] for s in seeds}, True, THRESHOLD_P
        )
        verdict = {"met": "better", "missed": "**regression**"}.get(v.verdict, v.verdict)
        lines.append(f"| {problem} | {verdict} | {v.describe(3)} |")
    if not lines:
        return ""
    return (
        "\n".join(
            [
                f"## `{ARM}` on this code against its runs of the earlier stop "
                "(`results/early_stopping/runs.jsonl`, before issue 58's balanced initial design)",
                "",
                "| problem | verdict | now - earlier |",
                "|---|---|---|",
                *lines,
            ]
        )
        + "\n"
    )
