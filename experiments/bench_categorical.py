"""How to optimize over unordered categorical parameters: measured, to choose the default.

Three representations of a ``Choice`` in the same loop (``dsbo.minimize``, exact GP, qLogNEI,
budget 25 with 8 Sobol points), on two mixed benchmarks with known optima:

- ``relax``: one-hot columns, the acquisition maximized over them as continuous values in
  ``[0, 1]``, the maximizer projected to its largest column (one ``optimize_acqf``);
- ``enumerate``: one-hot columns, one continuous optimization per combination of categories
  (BoTorch's ``optimize_acqf_mixed``), the best kept;
- ``ordinal``: an index column (``Choice(ordered=True)``), which tells the kernel an order the
  values do not have.

Problems (minimized; regret = value - optimum):

- ``branin-cat``: Branin over ``(x1, x2)``, plus a categorical ``shift`` of 4 values that
  moves the function along ``x1`` and adds an offset, and a categorical ``scale`` of 3 values
  that multiplies it, listed in an order unrelated to their effect (optimum: the best
  combination's minimum, found numerically).
- ``ackley-cat``: Ackley in 5 dimensions whose last two coordinates are set by two categoricals
  of 5 values each (``{-2, -1, 0, 1, 2}`` in shuffled order, as CoCaBO's Ackley-cC);
  optimum 0.

Arms run interleaved per seed, so machine load affects them alike. Output:
``experiments/results/bench_categorical/{results.json,results.md}``.

Usage::

    python experiments/bench_categorical.py            # 5 seeds
    python experiments/bench_categorical.py --smoke    # 1 seed, budget 7, cheap optimizer settings

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize as scipy_minimize
from smoke_out import add_out_argument, output_folder

import dsbo
from dsbo.acquisition import OptimizerSettings

OUT = Path(__file__).resolve().parent / "results" / "bench_categorical"
# (x1 shift, offset) and scale per category, in an order unrelated to their effect: a list order
# that sorted them would flatter the ordinal encoding
SHIFTS = {"a": (-3.0, 4.0), "b": (0.0, 0.0), "c": (1.0, 8.0), "d": (2.0, 1.5)}
SCALES = {"p": 1.0, "q": 2.0, "r": 0.5}
ACKLEY_LEVELS = ["v1", "v2", "v3", "v4", "v5"]
ACKLEY_VALUES = {"v1": 1.0, "v2": -2.0, "v3": 0.0, "v4": 2.0, "v5": -1.0}


def branin(x1: float, x2: float) -> float:
    b, c, r, s, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def branin_cat(p: dict) -> float:
    shift, offset = SHIFTS[p["shift"]]
    return SCALES[p["scale"]] * branin(p["x1"] + shift, p["x2"]) + offset


def ackley(x: np.ndarray) -> float:
    d = len(x)
    return float(
        -20 * math.exp(-0.2 * math.sqrt(np.sum(x**2) / d))
        - math.exp(np.sum(np.cos(2 * math.pi * x)) / d)
        + 20
        + math.e
    )


def ackley_cat(p: dict) -> float:
    x = np.array([p["x1"], p["x2"], p["x3"], ACKLEY_VALUES[p["c1"]], ACKLEY_VALUES[p["c2"]]])
    return ackley(x)


def branin_optimum() -> float:
    best = math.inf
    for dx, offset in SHIFTS.values():
        for scale in SCALES.values():
            for start in ([-3, 12], [3, 2], [9, 2], [0, 5], [5, 10]):
                res = scipy_minimize(
                    lambda z, dx=dx, scale=scale, offset=offset: (
                        scale * branin(z[0] + dx, z[1]) + offset
                    ),
                    start,
                    bounds=[(-5, 10), (0, 15)],
                    method="L-BFGS-B",
                )
                best = min(best, float(res.fun))
    return best


def problems() -> dict[str, tuple]:
    def branin_space(ordered: bool) -> dict:
        return {
            "x1": dsbo.Float(-5, 10),
            "x2": dsbo.Float(0, 15),
            "shift": dsbo.Choice(list(SHIFTS), ordered=ordered),
            "scale": dsbo.Choice(list(SCALES), ordered=ordered),
        }

    def ackley_space(ordered: bool) -> dict:
        space = {f"x{i}": dsbo.Float(-2, 2) for i in (1, 2, 3)}
        space["c1"] = dsbo.Choice(ACKLEY_LEVELS, ordered=ordered)
        space["c2"] = dsbo.Choice(ACKLEY_LEVELS, ordered=ordered)
        return space

    return {
        "branin-cat": (branin_cat, branin_space, branin_optimum()),
        "ackley-cat": (ackley_cat, ackley_space, 0.0),
    }


ARMS = {
    "relax": (False, "relax"),
    "enumerate": (False, "enumerate"),
    "ordinal": (True, "relax"),
}


def run_arm(
    fn, make_space, arm: str, seed: int, budget: int, n_init: int, smoke: bool = False
) -> dict:
    ordered, categorical = ARMS[arm]
    optimizer = OptimizerSettings(categorical=categorical, max_enumerate=32)
    if smoke:  # checks the script runs: two restarts, a cheap acquisition
        optimizer = OptimizerSettings(
            categorical=categorical,
            max_enumerate=32,
            num_restarts=2,
            raw_samples=32,
            maxiter=20,
            mc_samples=16,
        )
    start = time.perf_counter()
    result = dsbo.minimize(
        fn,
        make_space(ordered),
        budget=budget,
        surrogate="gp",
        n_init=n_init,
        seed=seed,
        optimizer=optimizer,
        outcome_warping=None,
    )  # (as measured)
    wall = time.perf_counter() - start
    bo = result.history[~result.history["generator"].str.startswith("sobol")]
    per_proposal = (bo["fit_time"] + bo["acq_time"]).tolist()
    return {
        "best": float(result.best_value),
        "curve": result.history["best_so_far"].tolist(),
        "seconds_per_proposal": statistics.median(per_proposal) if per_proposal else None,
        "wall": wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=25)
    parser.add_argument("--n_init", type=int, default=8)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 seed, budget 7, cheap optimizer: checks the script runs",
    )
    add_out_argument(parser, OUT)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, OUT)
    if args.smoke:
        args.seeds, args.budget, args.n_init = 1, 7, 6
    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, list[dict]]] = {}
    for name, (fn, make_space, optimum) in problems().items():
        runs[name] = {arm: [] for arm in ARMS}
        for seed in range(args.seeds):
            for arm in ARMS:  # interleaved: every arm of a seed before the next seed
                record = run_arm(fn, make_space, arm, seed, args.budget, args.n_init, args.smoke)
                record["regret"] = record["best"] - optimum
                runs[name][arm].append(record)
                print(
                    f"{name} seed {seed} {arm}: regret {record['regret']:.4g}, "
                    f"{record['seconds_per_proposal']:.2f} s/proposal",
                    flush=True,
                )
    summary = {}
    lines = [
        f"# Categorical representations ({args.seeds} seeds, budget {args.budget}, {args.n_init} Sobol points, exact GP + qLogNEI)",
        "",
        "| problem | arm | final regret (mean +- s.e.) | median regret | s / proposal (median) |",
        "|---|---|---|---|---|",
    ]
    for name, arms in runs.items():
        summary[name] = {}
        for arm, records in arms.items():
            regrets = [r["regret"] for r in records]
            times = [
                r["seconds_per_proposal"] for r in records if r["seconds_per_proposal"] is not None
            ]
            se = (
                statistics.stdev(regrets) / math.sqrt(len(regrets))
                if len(regrets) > 1
                else float("nan")
            )
            summary[name][arm] = {
                "mean_regret": statistics.fmean(regrets),
                "se": se,
                "median_regret": statistics.median(regrets),
                "seconds_per_proposal": statistics.median(times) if times else None,
            }
            s = summary[name][arm]
            lines.append(
                f"| {name} | {arm} | {s['mean_regret']:.4g} +- {s['se']:.2g} | {s['median_regret']:.4g} | "
                f"{s['seconds_per_proposal']:.3g} |"
            )
    (args.out / "results.json").write_text(
        json.dumps(
            {"settings": vars(args) | {"out": str(args.out)}, "summary": summary, "runs": runs},
            indent=1,
        )
    )
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
