"""BONSAI pruning time: the paper's greedy rounds vs the prefix speed-up, side by side.

For each seed, MAP-SAAS is fitted to ``--points`` Sobol points of Branin-50d, qLogNEI is
maximized once, and the same dense candidate is pruned by ``mode: greedy`` (BONSAI's
Algorithm 1: one acquisition call per round) and ``mode: prefix`` (the first round's order,
the longest within-tau prefix in one more call, then greedy rounds), interleaved
``--repeats`` times. Reports the median pruning seconds, acquisition evaluations, and whether
both modes reset the same coordinates (and their gaps, which both keep <= rho alpha~).
Writes ``experiments/results/bench_bonsai_prune/{results.json, results.md}``.

    python experiments/bench_bonsai_prune.py --smoke
    python experiments/bench_bonsai_prune.py            # 5 seeds x 3 repeats

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from botorch.utils.sampling import draw_sobol_samples
from smoke_out import add_out_argument, output_folder

from dsbo.acquisition import History, OptimizerSettings, make_policy
from dsbo.acquisition.bonsai import Bonsai
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate

RESULTS = Path(__file__).resolve().parent / "results" / "bench_bonsai_prune"
MODES = ("greedy", "prefix")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--points", type=int, default=None, help="Sobol points the model is fitted to"
    )
    parser.add_argument("--problem", default=None)
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    smoke = args.smoke
    seeds, repeats = args.seeds or (1 if smoke else 5), args.repeats or (1 if smoke else 3)
    points = args.points or (8 if smoke else 20)
    problem = get_problem(args.problem or ("branin-15d" if smoke else "branin-50d"))
    surrogate = "gp" if smoke else "map-saas"
    opt = (
        OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2)
        if smoke
        else OptimizerSettings(num_restarts=4, raw_samples=256, maxiter=100, batch_limit=4)
    )
    rows = []
    for seed in range(seeds):
        X = draw_sobol_samples(problem.bounds, n=points, q=1, seed=seed).squeeze(1)
        Y = problem.evaluate(X)
        model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
        history = History(X=X, Y=Y, seed=seed, t=points)
        acqf = make_policy("qlognei", {}, opt).build(model, history, problem, 1)
        x_star, _ = opt.maximize(acqf, problem.bounds, 1, seed)
        times: dict[str, list[float]] = {m: [] for m in MODES}
        meta: dict[str, dict[str, Any]] = {}
        for _ in range(repeats):
            for mode in MODES:
                start = time.perf_counter()
                proposal = Bonsai(mode=mode)(acqf, x_star, history, problem, opt, True)
                times[mode].append(time.perf_counter() - start)
                meta[mode] = proposal.metadata[0]
        rows.append(
            {
                "seed": seed,
                **{f"{m}_seconds": statistics.median(times[m]) for m in MODES},
                **{f"{m}_evaluations": meta[m]["acq_evaluations"] for m in MODES},
                **{f"{m}_pruned": len(meta[m]["pruned_dims"]) for m in MODES},
                **{f"{m}_relative_gap": meta[m]["relative_gap"] for m in MODES},
                "num_active": meta["greedy"]["num_active"],
                "same_resets": sorted(meta["greedy"]["pruned_dims"])
                == sorted(meta["prefix"]["pruned_dims"]),
            }
        )
        r = rows[-1]
        print(
            f"seed {seed}: greedy {r['greedy_seconds']:.3f}s ({r['greedy_evaluations']} evaluations, "
            f"{r['greedy_pruned']} reset), prefix {r['prefix_seconds']:.3f}s ({r['prefix_evaluations']}, "
            f"{r['prefix_pruned']} reset)",
            flush=True,
        )
    speedup = statistics.median(r["greedy_seconds"] / r["prefix_seconds"] for r in rows)
    result = {
        "smoke": smoke,
        "problem": problem.name,
        "surrogate": surrogate,
        "points": points,
        "seeds": seeds,
        "repeats": repeats,
        "rows": rows,
        "median_speedup": speedup,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    return result


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_markdown(result: dict[str, Any], path: Path) -> None:
    lines = [
        f"# BONSAI pruning: greedy rounds vs the prefix speed-up ({result['problem']}, {result['surrogate']} on "
        f"{result['points']} Sobol points, qLogNEI; seeds run: {result['seeds']}, median of {result['repeats']} "
        "interleaved repeats each, one thread)" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| seed | active | greedy s | prefix s | greedy evaluations | prefix evaluations | reset (greedy / prefix) "
        "| same resets | relative gap (greedy / prefix, <= rho = 0.2) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['seed']} | {r['num_active']} | {r['greedy_seconds']:.3f} | {r['prefix_seconds']:.3f} | "
            f"{r['greedy_evaluations']} | {r['prefix_evaluations']} | {r['greedy_pruned']} / {r['prefix_pruned']} | "
            f"{'yes' if r['same_resets'] else 'no'} | {_num(r['greedy_relative_gap'])} / {_num(r['prefix_relative_gap'])} |"
        )
    lines += [
        "",
        f"Median speed-up of pruning (greedy / prefix, per seed): {result['median_speedup']:.1f}x.",
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
