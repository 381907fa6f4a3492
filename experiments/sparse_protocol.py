"""The sparse-BO protocol: SEBO and BONSAI against plain qLogNEI, interleaved in one process.

One job per (part, seed) runs every arm of its part in one process, one BO iteration of each
arm in turn, so machine load hits the arms alike; the arms share the seed and so the initial
design. MAP-SAAS, one torch thread, Branin embedded in 50-D; "changed" means
``|x_i - target_i| > 1e-3`` of the range.

- **SEBO part**: target ``x^s = 0`` (the lower corner); 8 Sobol points, then 22 BO
  iterations; 4 restarts and 256 raw samples for every arm. Arms: plain qLogNEI, SEBO-L0 with
  the closed-form EHVI (the default) and SEBO-L0 with BoTorch's qLogNEHVI.
- **BONSAI part**: default = the box centre; the default point + 20 Sobol points, then 20 BO
  iterations; 8 restarts and 512 raw samples. Arms: plain qLogNEI and qLogNEI + BONSAI
  (rho = 0.2), greedy and with prefix pruning (``mode: prefix``).

Per arm and seed: whether a point changing only relevant parameters (at most 2) was
reached, the mean changed parameters of the BO points, the best value among points with at
most 2 changes, repeated proposals (a BO point whose two relevant coordinates are within
1e-3 of an earlier point's, however it differs elsewhere) and the generation time (the
acquisition step; fitting is the same for every arm) as the median over the seed's
iterations divided by plain qLogNEI's, averaged over seeds.

Writes ``experiments/results/sparse_protocol/{runs.jsonl, results.json, results.md,
protocol.png}``; finished (part, seed) jobs are kept in ``runs.jsonl`` and a rerun resumes.

**BONSAI rules** (issue 33): ``--bonsai-rule RULE[:RHO[:OUTCOME_FLOOR[:REPEAT_TOL]]]`` (repeatable) adds one
BONSAI arm (prefix mode) per rule of :class:`dsbo.acquisition.bonsai.Bonsai` (``incremental``,
the paper's; ``dense-scale``; ``outcome-floor``), ``--arms`` keeps only the named arms of the part
(by default only ``qlognei`` when rules are given), ``--problem`` swaps the problem
(``hartmann6-50d``: a sparse point then has at most 6 changes), and ``--seed-list`` runs
chosen seeds. These runs go to ``experiments/results/sparse_protocol/bonsai_rules/`` and are
keyed by problem and arm set too, so one seed can be run with more arms than the next. Extra
numbers per arm: the mean changed parameters of the BO points after the optimum was found
(the first evaluated point within ``0.1`` of the optimum) and of the last 10 BO points.

    python experiments/sparse_protocol.py --smoke       # about a minute: Branin-10d, GP, 1 seed
    python experiments/sparse_protocol.py --seeds 5     # the protocol (about 2 CPU-hours)
    python experiments/sparse_protocol.py --workers 1 --parts bonsai --seed-list 0 \
        --bonsai-rule incremental --bonsai-rule dense-scale   # -> .../bonsai_rules/

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from campaign_runs import INITIAL, mean_and_se, method_color, run_resumable  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.acquisition.sparsity import changed_mask, is_duplicate  # noqa: E402
from dsbo.campaign import Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "sparse_protocol"
RULES_RESULTS = RESULTS / "bonsai_rules"
#: A point within this of the optimum counts as "the optimum found" (changes after it).
FOUND = 0.1
#: Changes allowed for a point to count as sparse: Branin's two relevant parameters.
SPARSE = 2

#: part -> problem options, design, optimizer settings and arms (acquisition, post-processing)
PARTS: dict[str, dict[str, Any]] = {
    "sebo": {
        "problem_options": {"target": "zero"},
        "n_init": 8,
        "include_default": False,
        "iterations": 22,
        "optimizer": {"num_restarts": 4, "raw_samples": 256},
        "arms": {
            "qlognei": ({"name": "qlognei"}, None),
            "sebo-ehvi": ({"name": "sebo", "penalty": "l0"}, None),
            "sebo-qlognehvi": (
                {"name": "sebo", "penalty": "l0", "acquisition_function": "qlognehvi"},
                None,
            ),
        },
    },
    "bonsai": {
        "problem_options": {},
        "n_init": 20,
        "include_default": True,
        "iterations": 20,
        "optimizer": {"num_restarts": 8, "raw_samples": 512},
        "arms": {
            "qlognei": ({"name": "qlognei"}, None),
            "bonsai": ({"name": "qlognei"}, {"bonsai": {"rho": 0.2, "mode": "greedy"}}),
            "bonsai-prefix": ({"name": "qlognei"}, {"bonsai": {"rho": 0.2, "mode": "prefix"}}),
        },
    },
}
GOALS = {
    "sebo-ehvi": (4.0, 2.0),
    "sebo-qlognehvi": (4.0, 2.0),
    "bonsai": (6.0, 1.05),
    "bonsai-prefix": (6.0, 1.05),
}


def rule_arm(text: str) -> tuple[str, tuple[dict[str, Any], dict[str, Any]]]:
    """``RULE[:RHO[:OUTCOME_FLOOR[:REPEAT_TOL]]]`` -> (arm name, BONSAI arm): qLogNEI + BONSAI,
    prefix mode."""
    rule, *numbers = text.split(":")
    options: dict[str, Any] = {
        "rule": rule,
        "rho": float(numbers[0]) if numbers else 0.2,
        "mode": "prefix",
    }
    if len(numbers) > 1:
        options["outcome_floor"] = float(numbers[1])
    if len(numbers) > 2:
        options["repeat_tol"] = float(numbers[2])
    name = "bonsai-" + "-".join([rule, *numbers])
    return name, ({"name": "qlognei"}, {"bonsai": options})


def part_settings(
    part: str,
    smoke: bool,
    problem: str | None = None,
    arms: list[str] | None = None,
    rules: list[str] | None = None,
) -> dict[str, Any]:
    """The part's settings; ``--smoke`` shrinks everything (Branin-10d, GP, 2 iterations).

    ``arms`` keeps only those arms of the part (all by default; only ``qlognei`` when
    ``rules`` are given), ``rules`` adds a BONSAI arm per rule (:func:`rule_arm`)."""
    spec = dict(PARTS[part])
    if arms is not None or rules:
        keep = arms if arms is not None else ["qlognei"]
        spec["arms"] = {arm: spec["arms"][arm] for arm in keep}
        spec["arms"].update(rule_arm(rule) for rule in rules or [])
    spec["problem"] = "branin-10d" if smoke else (problem or "branin-50d")
    spec["surrogate"] = "gp" if smoke else "map-saas"
    spec["optimizer"] = {**spec["optimizer"], "maxiter": 200, "batch_limit": 8}
    if smoke:
        spec.update(
            n_init=4, iterations=2, optimizer={"num_restarts": 2, "raw_samples": 32, "maxiter": 25}
        )
        spec["arms"] = {
            arm: ({**acq, "num_steps": 4} if acq["name"] == "sebo" else acq, post)
            for arm, (acq, post) in spec["arms"].items()
        }
    return spec


def run_seed(job: dict[str, Any]) -> dict[str, Any]:
    """Every arm of one (part, seed), interleaved: one BO iteration of each arm in turn."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    spec = part_settings(
        job["part"], job["smoke"], job.get("problem"), job.get("arms"), job.get("rules")
    )
    if job.get("surrogate_options"):  # e.g. MAP-SAAS's fit schedule, {"restart_every": 5}
        spec["surrogate"] = {"name": spec["surrogate"], **job["surrogate_options"]}
    problem = get_problem(spec["problem"], **spec["problem_options"])
    budget = spec["n_init"] + spec["include_default"] + spec["iterations"]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        campaigns = {
            arm: Campaign(
                problem,
                surrogate=spec["surrogate"],
                acquisition=acquisition,
                budget=budget,
                n_init=spec["n_init"],
                include_default=spec["include_default"],
                seed=job["seed"],
                optimizer=OptimizerSettings(**spec["optimizer"]),
                postprocess=post,
                store=Path(tmp) / f"{arm}.sqlite",
            )
            for arm, (acquisition, post) in spec["arms"].items()
        }
        while any(c.remaining > 0 for c in campaigns.values()):
            for campaign in campaigns.values():
                if campaign.remaining > 0:
                    campaign.step()
        arms = {arm: record_arm(campaign, problem) for arm, campaign in campaigns.items()}
        for campaign in campaigns.values():
            campaign.store.close()
    return {**job, "problem": spec["problem"], "arms": arms, "seconds": time.perf_counter() - start}


def record_arm(campaign: Campaign, problem) -> dict[str, Any]:
    """One arm's numbers: values, changed parameters, repeats and times per trial."""
    trials = campaign.store.trials("completed")
    X = torch.tensor([t.x for t in trials], dtype=torch.double)
    Y = torch.tensor([t.y for t in trials], dtype=torch.double)
    changed = changed_mask(X, problem.default_point, problem.bounds)
    relevant = list(problem.relevant_dims)
    is_bo = [t.generator not in INITIAL for t in trials]
    relevant_bounds = problem.bounds[:, relevant]
    repeats = [
        bool(is_duplicate(X[i : i + 1, relevant], X[:i, relevant], relevant_bounds, 1e-3))
        for i in range(len(trials))
    ]
    exact = [bool(is_duplicate(X[i : i + 1], X[:i], problem.bounds)) for i in range(len(trials))]
    return {
        "values": Y[:, 0].tolist(),
        "changed": changed.sum(-1).tolist(),
        "only_relevant": [
            bool(row.any())
            and not bool(row[[j for j in range(X.shape[1]) if j not in relevant]].any())
            for row in changed
        ],
        "is_bo": is_bo,
        "relevant_repeat": repeats,
        "exact_repeat": exact,
        "acq_time": [t.acq_time for t in trials],
        "fit_time": [t.fit_time for t in trials],
        "near_repeats_skipped": [int(t.metadata.get("near_repeats_skipped", 0)) for t in trials],
        "homotopy_values": [len(t.metadata.get("a_values", [])) for t in trials],
    }


def arm_summary(
    runs: list[dict[str, Any]], arm: str, optimum: float, sparse: int = SPARSE
) -> dict[str, Any]:
    """Per-seed numbers of one arm (the seeds that ran it) and their mean over seeds."""
    per_seed = []
    for run in runs:
        if arm not in run["arms"] or any(p["seed"] == run["seed"] for p in per_seed):
            continue
        a, plain = run["arms"][arm], run["arms"]["qlognei"]
        bo = [i for i, b in enumerate(a["is_bo"]) if b]
        sparse_values = [v for v, c in zip(a["values"], a["changed"], strict=True) if c <= sparse]
        found = next((i for i, v in enumerate(a["values"]) if optimum - v <= FOUND), None)
        after = [a["changed"][i] for i in bo if found is not None and i > found]
        plain_bo = [i for i, b in enumerate(plain["is_bo"]) if b]
        per_seed.append(
            {
                "seed": run["seed"],
                "reached_only_relevant": any(a["only_relevant"][i] for i in bo),
                "mean_changed_bo": statistics.fmean(a["changed"][i] for i in bo),
                "found_at_bo": None if found is None else sum(1 for i in bo if i <= found),
                "mean_changed_after_found": statistics.fmean(after) if after else math.nan,
                "mean_changed_last10": statistics.fmean(a["changed"][i] for i in bo[-10:]),
                "best_sparse_gap": optimum - max(sparse_values) if sparse_values else math.nan,
                "best_value": max(a["values"]),
                "relevant_repeats": sum(a["relevant_repeat"][i] for i in bo),
                "exact_repeats": sum(a["exact_repeat"][i] for i in bo),
                "near_repeats_skipped": sum(a["near_repeats_skipped"][i] for i in bo),
                "time_ratio": statistics.median(a["acq_time"][i] for i in bo)
                / statistics.median(plain["acq_time"][i] for i in plain_bo),
                "median_acq_seconds": statistics.median(a["acq_time"][i] for i in bo),
                "median_fit_seconds": statistics.median(a["fit_time"][i] for i in bo),
            }
        )
    mean = {
        key: mean_and_se([math.nan if s[key] is None else s[key] for s in per_seed])
        for key in per_seed[0]
        if key != "seed"
    }
    return {"arm": arm, "seeds": len(per_seed), "per_seed": per_seed, "mean": mean}


def goal_verdicts(summary: dict[str, Any], sparse: int = SPARSE) -> list[str]:
    """The protocol's goals, each met or missed, from the measured means."""
    lines = []
    goals = {
        **GOALS,
        **{arm: (6.0, 1.05) for arm in summary if arm.startswith("bonsai-") and arm not in GOALS},
    }
    for arm, (max_changed, max_ratio) in goals.items():
        s = summary.get(arm)
        if s is None:
            continue
        m, seeds = s["mean"], s["seeds"]
        reached = sum(p["reached_only_relevant"] for p in s["per_seed"])
        checks = [
            (
                f"mean changed per BO point {m['mean_changed_bo'][0]:.2f} <= {max_changed:g}",
                m["mean_changed_bo"][0] <= max_changed,
            ),
            (
                f"best value with <= {sparse} changes within 1.0 of the optimum on average "
                f"(gap {m['best_sparse_gap'][0]:.3g})",
                m["best_sparse_gap"][0] <= 1.0,
            ),
            (
                f"repeated proposals {sum(p['relevant_repeats'] for p in s['per_seed'])} = 0",
                all(p["relevant_repeats"] == 0 for p in s["per_seed"]),
            ),
            (
                f"generation time {m['time_ratio'][0]:.2f}x plain (mean over seeds; median of per-seed ratios "
                f"{statistics.median(p['time_ratio'] for p in s['per_seed']):.2f}x) <= {max_ratio:g}x",
                m["time_ratio"][0] <= max_ratio,
            ),
        ]
        if arm.startswith("sebo"):
            checks.insert(
                0,
                (
                    f"reached a point changing only relevant parameters in {reached} of {seeds} seeds",
                    reached == seeds,
                ),
            )
        lines += [f"- {arm}: {text}: **{'met' if ok else 'missed'}**" for text, ok in checks]
    return lines


def write_markdown(result: dict[str, Any], path: Path, image: str = "protocol.png") -> None:
    seeds = sorted({s["seeds"] for part in result["parts"].values() for s in part["arms"].values()})
    lines = [
        "# Sparse-BO protocol: SEBO and BONSAI vs plain qLogNEI, interleaved",
        "",
        f"Written by `python experiments/sparse_protocol.py{' --smoke' if result['smoke'] else ''}`. "
        f"Seeds run per row: {' or '.join(map(str, seeds))} (column `seeds`). Mean +- standard error over seeds; "
        "time ratio = median acquisition seconds of the seed's BO iterations / plain qLogNEI's, "
        "then the mean over seeds.",
        "",
    ]
    for part, data in result["parts"].items():
        lines += [
            f"## {part} part ({data['problem']}, {data['design']})",
            "",
            "| arm | seeds | reached only-relevant | mean changed per BO point "
            f"| gap of best with <= {data.get('sparse', SPARSE)} changes "
            "| best value | repeated proposals | near-repeats skipped | acq s (median) | fit s (median) | time vs plain |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for arm, s in data["arms"].items():
            m = s["mean"]
            reached = sum(p["reached_only_relevant"] for p in s["per_seed"])

            def pm(key: str, fmt: str = ".3g", m: dict = m) -> str:
                return f"{m[key][0]:{fmt}} +- {m[key][1]:{fmt}}"

            lines.append(
                f"| {arm} | {s['seeds']} | {reached}/{s['seeds']} | {pm('mean_changed_bo')} | {pm('best_sparse_gap')} "
                f"| {pm('best_value')} | {sum(p['relevant_repeats'] for p in s['per_seed'])} "
                f"| {sum(p['near_repeats_skipped'] for p in s['per_seed'])} | {m['median_acq_seconds'][0]:.2f} "
                f"| {m['median_fit_seconds'][0]:.2f} | {m['time_ratio'][0]:.2f}x |"
            )
        lines += [
            "",
            f"Per seed ({data['problem']}; 'found' = the first point within {FOUND} of the optimum, "
            "counted in BO points; changed = mean changed parameters per BO point):",
            "",
            "| arm | seed | changed (all BO) | found at BO | changed after found | changed last 10 "
            "| sparse-best gap | best value | time vs plain |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for arm, s in data["arms"].items():
            for p in s["per_seed"]:
                lines.append(
                    f"| {arm} | {p['seed']} | {p['mean_changed_bo']:.2f} | {p.get('found_at_bo')} "
                    f"| {p.get('mean_changed_after_found', math.nan):.2f} | {p.get('mean_changed_last10', math.nan):.2f} "
                    f"| {p['best_sparse_gap']:.3g} | {p['best_value']:.4g} | {p['time_ratio']:.2f}x |"
                )
        lines.append("")
    lines += ["## Goals", "", *result["goals"], "", f"![protocol]({image})", ""]
    path.write_text("\n".join(lines))


def plot(runs: list[dict[str, Any]], result: dict[str, Any], path: Path) -> None:
    """Per part: the gap of the best sparse value vs evaluations and changed per BO point."""
    parts = list(result["parts"])
    fig, axes = plt.subplots(len(parts), 2, figsize=(10, 3.6 * len(parts)), squeeze=False)
    for row, part in enumerate(parts):
        optimum = result["parts"][part]["optimum"]
        part_runs = [r for r in runs if r["part"] == part]
        arms = list(result["parts"][part]["arms"])
        for j, arm in enumerate(arms):
            color = method_color(j, len(arms))
            gaps, changed = [], []
            for run in part_runs:
                if arm not in run["arms"]:
                    continue
                a = run["arms"][arm]
                best, trace = -math.inf, []
                for v, c in zip(a["values"], a["changed"], strict=True):
                    best = (
                        max(best, v) if c <= result["parts"][part].get("sparse", SPARSE) else best
                    )
                    trace.append(optimum - best if best > -math.inf else math.nan)
                gaps.append(trace)
                changed.append([c for c, b in zip(a["changed"], a["is_bo"], strict=True) if b])
            mean_gap = [
                statistics.fmean(g[i] for g in gaps if not math.isnan(g[i]))
                if any(not math.isnan(g[i]) for g in gaps)
                else math.nan
                for i in range(len(gaps[0]))
            ]
            axes[row][0].plot(range(1, len(mean_gap) + 1), mean_gap, label=arm, color=color)
            axes[row][1].plot(
                range(1, len(changed[0]) + 1),
                [statistics.fmean(c[i] for c in changed) for i in range(len(changed[0]))],
                label=arm,
                color=color,
                marker=".",
            )
        axes[row][0].set(
            title=f"{part}: optimum - best value with <= {result['parts'][part].get('sparse', SPARSE)} changes",
            xlabel="evaluations",
            yscale="log",
        )
        axes[row][1].set(
            title=f"{part}: changed parameters per BO point (mean over seeds)",
            xlabel="BO iteration",
        )
        axes[row][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--parts", nargs="*", default=list(PARTS), choices=list(PARTS))
    parser.add_argument("--workers", type=int, default=2)
    add_out_argument(
        parser,
        RESULTS,
        help=f"default {RESULTS} ({RULES_RESULTS} with rules); with --smoke a fresh temporary folder",
    )
    parser.add_argument(
        "--seed-list", type=int, nargs="*", default=None, help="run these seeds (not 0..seeds-1)"
    )
    parser.add_argument("--problem", default=None, help="e.g. hartmann6-50d (default branin-50d)")
    parser.add_argument("--arms", nargs="*", default=None, help="keep only these arms of the part")
    parser.add_argument(
        "--bonsai-rule",
        action="append",
        default=None,
        metavar="RULE[:RHO[:OUTCOME_FLOOR[:REPEAT_TOL]]]",
        help="add a qLogNEI + BONSAI arm with this rule (repeatable)",
    )
    parser.add_argument(
        "--surrogate-options",
        type=json.loads,
        default=None,
        help="JSON options of the surrogate, e.g. '{\"restart_every\": 5}' (needs --out)",
    )
    args = parser.parse_args(argv)
    seeds = (
        args.seed_list
        if args.seed_list is not None
        else range(args.seeds or (1 if args.smoke else 5))
    )
    custom = args.arms is not None or bool(args.bonsai_rule) or args.problem is not None
    out = output_folder(
        args.out, args.smoke, RULES_RESULTS if custom else RESULTS, name="sparse_protocol"
    )
    out.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = (
        {"problem": args.problem, "arms": args.arms, "rules": args.bonsai_rule} if custom else {}
    )
    if args.surrogate_options:
        extra["surrogate_options"] = args.surrogate_options
    jobs = [
        {"part": part, "seed": seed, "smoke": args.smoke, **extra}
        for seed in seeds
        for part in args.parts
    ]
    for job in jobs:
        job.update(
            {"problem": part_settings(job["part"], args.smoke, args.problem)["problem"]}
            if custom
            else {}
        )
        job.update(
            {
                "arm_set": ",".join(
                    part_settings(
                        job["part"], args.smoke, args.problem, args.arms, args.bonsai_rule
                    )["arms"]
                )
            }
            if custom
            else {}
        )
    keys = ("part", "seed", "smoke", "problem", "arm_set") if custom else ("part", "seed", "smoke")
    runs = run_resumable(run_seed, jobs, out, args.workers, key_fields=keys)
    if custom:  # summarize every seed of this problem recorded in the folder, whatever its arm set
        recorded = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
        runs = [
            r
            for r in recorded
            if r["smoke"] == args.smoke
            and r.get("problem") == part_settings(r["part"], args.smoke, args.problem)["problem"]
        ]
    result: dict[str, Any] = {"smoke": args.smoke, "parts": {}}
    for part in args.parts:
        spec = part_settings(part, args.smoke, args.problem, args.arms, args.bonsai_rule)
        problem = get_problem(spec["problem"], **spec["problem_options"])
        part_runs = [r for r in runs if r["part"] == part]
        arm_names = list(dict.fromkeys(arm for r in part_runs for arm in r["arms"]))
        sparse = len(problem.relevant_dims)
        design = (
            ("the default + " if spec["include_default"] else "") + f"{spec['n_init']} Sobol + "
            f"{spec['iterations']} BO, {spec['optimizer']['num_restarts']} restarts / "
            f"{spec['optimizer']['raw_samples']} raw samples, {spec['surrogate']}"
        )
        result["parts"][part] = {
            "problem": spec["problem"],
            "design": design,
            "optimum": problem.optimal_value,
            "sparse": sparse,
            "arms": {
                arm: arm_summary(part_runs, arm, problem.optimal_value, sparse) for arm in arm_names
            },
        }
    result["goals"] = [
        line
        for part in result["parts"].values()
        for line in goal_verdicts(part["arms"], part["sparse"])
    ]
    name = part_settings(args.parts[0], args.smoke, args.problem)["problem"]
    stem = f"results_{name}" if custom else "results"
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    image = f"protocol_{name}.png" if custom else "protocol.png"
    write_markdown(result, out / f"{stem}.md", image)
    plot(runs, result, out / image)
    print("\n".join(result["goals"]))
    return result


if __name__ == "__main__":
    main()
