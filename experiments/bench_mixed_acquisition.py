"""Where a default proposal's time goes on mixed spaces, and the batched optimization over
category combinations against BoTorch's loop over them, side by side.

The default (exact GP, copula warping, qLogNEI, categoricals enumerated) spent 1.4-6.4 s per
proposal on ``experiments/mixed_spaces.py``'s problems, 1.6-5x Ax. Profiled here: for each
problem of that experiment and each seed, ``n`` scrambled Sobol points (the initial design and
the states of a run after 13 and 26 more evaluations: n = 13, 26, 39) are evaluated, the
default's GP is fitted as a campaign fits it, and its qLogNEI is maximized by

- ``loop``: BoTorch's ``optimize_acqf_mixed`` (the previous default): one ``optimize_acqf``
  per combination of categories, each with ``num_restarts`` starts among ``raw_samples``
  points;
- ``batched``: :func:`dsbo.acquisition.mixed_optimizer.maximize_over_combinations`: one
  batched L-BFGS-B run whose starts cover every combination.

Both use the same optimizer settings (the defaults: 10 restarts, 512 raw samples) and run in
alternating order on the same acquisition function, so load affects them alike. Reported per
problem: the fit time, each optimizer's time (median), the time ratio, and the acquisition
value each reaches (the batched one minus the loop's: >= 0 means no worse a maximizer).
Output: ``experiments/results/bench_mixed_acquisition/{results.json,results.md}``.

Usage::

    python experiments/bench_mixed_acquisition.py            # seeds 0-2, n = 13, 26, 39
    python experiments/bench_mixed_acquisition.py --smoke    # 1 seed, n = 13, ackley-cond, small settings

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into
``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from smoke_out import add_out_argument, output_folder

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mixed_spaces  # noqa: E402  (the problems of the mixed-space experiment)

OUT = Path(__file__).resolve().parent / "results" / "bench_mixed_acquisition"


def acquisition_for(
    problem: mixed_spaces.MixedProblem, n: int, seed: int, optimizer: Any = None
) -> tuple[Any, Any, dict[str, float]]:
    """The default's campaign on ``problem`` after ``n`` Sobol evaluations: its qLogNEI and
    campaign, and the fit time."""
    import dsbo
    from dsbo.acquisition.base import History
    from dsbo.campaign.outcome_warping import warp_outcomes

    tuner = dsbo.Tuner(
        problem.space, budget=n + 5, n_init=n, seed=seed, dry_run=False, optimizer=optimizer
    )
    recorder = mixed_spaces.Recorder(problem)
    for _ in range(n):
        suggestion = tuner.ask()
        tuner.tell(suggestion, recorder(suggestion.params))
    campaign = tuner.campaign
    X, Y = campaign.store.completed_data()
    Y = warp_outcomes(Y, campaign.problem.num_objectives, campaign.outcome_warping)
    t0 = time.perf_counter()
    model = campaign.fit_model(X, Y)
    fit = time.perf_counter() - t0
    history = History(X=X, Y=Y, seed=seed, t=X.shape[0])
    acqf = campaign.policy.build(model, history, campaign.problem, 1)
    return acqf, campaign, {"fit_s": fit}


def run_pair(acqf: Any, campaign: Any, seed: int, order: int) -> dict[str, float]:
    from dsbo.acquisition.mixed_optimizer import maximize_over_combinations
    from dsbo.acquisition.plain import category_combinations

    opt = campaign.optimizer
    problem = campaign.problem
    combos = category_combinations(problem, opt)
    out: dict[str, float] = {"combinations": len(combos)}

    def loop() -> None:
        t0 = time.perf_counter()
        _, value = opt.maximize(acqf, problem.bounds, 1, seed, fixed_features_list=combos)
        out["loop_s"], out["loop_value"] = time.perf_counter() - t0, float(value.reshape(-1)[0])

    def batched() -> None:
        t0 = time.perf_counter()
        _, value = maximize_over_combinations(
            acqf,
            problem.bounds,
            1,
            combos,
            num_restarts=opt.num_restarts,
            raw_samples=opt.raw_samples,
            maxiter=opt.maxiter,
            seed=seed,
        )
        out["batched_s"], out["batched_value"] = time.perf_counter() - t0, float(value[0])

    for arm in (loop, batched) if order % 2 == 0 else (batched, loop):
        arm()
    return out


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = []
    for name in dict.fromkeys(r["problem"] for r in rows):
        mine = [r for r in rows if r["problem"] == name]
        med = {k: statistics.median(r[k] for r in mine) for k in ("fit_s", "loop_s", "batched_s")}
        gaps = [r["batched_value"] - r["loop_value"] for r in mine]
        table.append(
            {
                "problem": name,
                "combinations": mine[0]["combinations"],
                "runs": len(mine),
                **med,
                "ratio": statistics.median(r["loop_s"] / r["batched_s"] for r in mine),
                "value_gap_min": min(gaps),
                "value_gap_median": statistics.median(gaps),
                "share_of_proposal_loop": med["loop_s"] / (med["loop_s"] + med["fit_s"]),
            }
        )
    return table


def write_markdown(
    table: list[dict[str, Any]], seeds: list[int], sizes: list[int], path: Path
) -> None:
    lines = [
        f"# Acquisition optimization over category combinations (seeds {seeds}, n = {sizes} Sobol evaluations)",
        "",
        "Median seconds per proposal step on a shared 2-core machine; `loop` = BoTorch's `optimize_acqf_mixed` "
        "(the previous default), `batched` = dsbo's one batched run; value gap = batched acquisition value - "
        "loop's (log-EI units; >= 0: no worse).",
        "",
        "| problem | combinations | runs | GP fit s | loop s | batched s | speed-up | value gap (min / median) "
        "| loop's share of a proposal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r['problem']} | {r['combinations']} | {r['runs']} | {r['fit_s']:.2f} | {r['loop_s']:.2f} | "
            f"{r['batched_s']:.2f} | {r['ratio']:.1f}x | {r['value_gap_min']:.3g} / {r['value_gap_median']:.3g} | "
            f"{r['share_of_proposal_loop']:.0%} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--problems", nargs="*", default=None)
    parser.add_argument("--smoke", action="store_true")
    add_out_argument(parser, OUT)
    args = parser.parse_args(argv)
    out = output_folder(args.out, args.smoke, OUT, "bench_mixed_acquisition")
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    problems = mixed_spaces.make_problems()
    names = args.problems or list(problems)
    seeds, sizes = list(range(args.seeds)), [13, 26, 39]
    if args.smoke:
        names, seeds, sizes = [n for n in names if n == "ackley-cond"], [0], [13]
    optimizer = None
    if args.smoke:
        from dsbo.acquisition import OptimizerSettings

        optimizer = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, mc_samples=32)
    rows = []
    for name in names:
        for seed in seeds:
            for i, n in enumerate(sizes):
                acqf, campaign, fit = acquisition_for(problems[name], n, seed, optimizer)
                row = {
                    "problem": name,
                    "seed": seed,
                    "n": n,
                    **fit,
                    **run_pair(acqf, campaign, seed, seed + i),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    table = summarize(rows)
    (out / "results.json").write_text(
        json.dumps({"smoke": args.smoke, "rows": rows, "table": table}, indent=1)
    )
    write_markdown(table, seeds, sizes, out / "results.md")
    print((out / "results.md").read_text())
    return {"rows": rows, "table": table}


if __name__ == "__main__":
    main()
