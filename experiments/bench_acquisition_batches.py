"""How the acquisition's raw points are scored and its restarts batched: before and after.

The profile of ``python -m dsbo.optimize`` (py-spy, 62 s end to end) put 17.7 s of its 33 s of
acquisition optimization in BoTorch's ``gen_batch_initial_conditions``: the 512 raw points were
scored ``init_batch_limit`` at a time, which BoTorch takes from ``batch_limit`` (5), so each
proposal called the MAP-SAAS ensemble's qLogNEI 103 times on 5 points. dsbo now scores them 512 at
a time (``OptimizerSettings.maximize``) and optimizes 10 restarts per batch (``batch_limit``
10): BoTorch's batched L-BFGS-B keeps every restart its own problem, so neither should change the
optimum's value (``value change`` against ``before``); in coordinates where the acquisition is
flat (the 18 irrelevant ones) the maximizer may move (``largest x change``).

Arms, interleaved per repeat on the same acquisition function (``optimize_acqf``, 10 restarts,
512 raw samples, 200 iterations, the same seed):

- ``before``: ``batch_limit=5``, raw points scored 5 at a time (BoTorch's default);
- ``raw 512``: ``batch_limit=5``, raw points scored 512 at a time;
- ``after``: ``batch_limit=10``, raw points scored 512 at a time (dsbo's default).

Problems: the default campaign's model (MAP-SAAS ensemble of 4 GPs, qLogNEI, Branin embedded in
20-D, 30 points) and an exact GP on the same data.

    python experiments/bench_acquisition_batches.py            # 5 repeats
    python experiments/bench_acquisition_batches.py --smoke    # 1 repeat, 10 raw points per restart

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into
``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

from smoke_out import add_out_argument, output_folder

OUT = Path(__file__).resolve().parent / "results" / "bench_acquisition_batches"
#: (name, batch_limit, init_batch_limit)
ARMS = (("before", 5, 5), ("raw 512", 5, 512), ("after", 10, 512))


def acquisition(surrogate: str, n: int, seed: int) -> tuple[Any, Any]:
    """qLogNEI of ``surrogate`` fitted to ``n`` Sobol points of Branin in 20-D (maximized)."""
    import torch
    from botorch.acquisition.logei import qLogNoisyExpectedImprovement
    from botorch.sampling import SobolQMCNormalSampler

    from dsbo.problems import get_problem
    from dsbo.surrogates import fit_surrogate

    problem = get_problem("branin-20d")
    X = (
        problem.bounds[0]
        + (problem.bounds[1] - problem.bounds[0])
        * torch.quasirandom.SobolEngine(problem.dim, scramble=True, seed=seed).draw(n).double()
    )
    Y = problem.evaluate(X)
    model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
    sampler = SobolQMCNormalSampler(torch.Size([128]), seed=seed)
    return qLogNoisyExpectedImprovement(
        model, X_baseline=X, sampler=sampler, prune_baseline=True
    ), problem.bounds


def run(repeats: int, raw_samples: int, n: int) -> list[dict[str, Any]]:
    import torch
    from botorch.optim import optimize_acqf

    torch.set_num_threads(1)
    rows = []
    for surrogate in ("map-saas", "gp"):
        acqf, bounds = acquisition(surrogate, n, seed=0)
        times: dict[str, list[float]] = {name: [] for name, _, _ in ARMS}
        found: dict[str, tuple[Any, float]] = {}
        for _ in range(repeats):
            for name, batch_limit, init_batch_limit in ARMS:  # interleaved
                options = {
                    "batch_limit": batch_limit,
                    "init_batch_limit": init_batch_limit,
                    "maxiter": 200,
                    "seed": 3,
                }
                start = time.perf_counter()
                X, value = optimize_acqf(
                    acqf, bounds, q=1, num_restarts=10, raw_samples=raw_samples, options=options
                )
                times[name].append(time.perf_counter() - start)
                found[name] = (X, float(value))
        X0, v0 = found["before"]
        for name, batch_limit, init_batch_limit in ARMS:
            X, v = found[name]
            rows.append(
                {
                    "surrogate": surrogate,
                    "arm": name,
                    "batch_limit": batch_limit,
                    "init_batch_limit": init_batch_limit,
                    "median_s": statistics.median(times[name]),
                    "times": times[name],
                    "speedup": statistics.median(times["before"]) / statistics.median(times[name]),
                    "value": v,
                    "value_diff": abs(v - v0),
                    "x_diff": float((X - X0).abs().max()),
                }
            )
    return rows


def write_markdown(rows: list[dict[str, Any]], repeats: int, path: Path) -> None:
    lines = [
        "# Acquisition optimization: raw-point scoring and restart batches",
        "",
        f"`optimize_acqf` on qLogNEI, Branin in 20-D with 30 points, 10 restarts, {repeats} repeat(s) "
        "interleaved, one thread. Speed-up: the `before` arm's median time over the arm's.",
        "",
        "| surrogate | arm | batch_limit | raw points per call | median s | speed-up | acq value | value change | largest x change |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['surrogate']} | {r['arm']} | {r['batch_limit']} | {r['init_batch_limit']} | "
            f"{r['median_s']:.3f} | {r['speedup']:.2f}x | {r['value']:.6g} | {r['value_diff']:.1e} | "
            f"{r['x_diff']:.1e} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    add_out_argument(parser, OUT)
    args = parser.parse_args(argv)
    out = output_folder(args.out, args.smoke, OUT)
    out.mkdir(parents=True, exist_ok=True)
    repeats = 1 if args.smoke else args.repeats
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = run(repeats, raw_samples=100 if args.smoke else 512, n=12 if args.smoke else 30)
    (out / "results.json").write_text(
        json.dumps({"smoke": args.smoke, "repeats": repeats, "rows": rows}, indent=1)
    )
    write_markdown(rows, repeats, out / "results.md")
    print((out / "results.md").read_text())
    return {"rows": rows}


if __name__ == "__main__":
    main()
