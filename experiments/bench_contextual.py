"""Cost of one SADCBO iteration against one CBO iteration, side by side (issue goal: <= 3x).

On Hartmann4D with contexts (``contextual-hartmann4``) and ``n`` evaluated points (Sobol
designs with contexts drawn from ``p(z)``), the two policies propose from the same state,
interleaved (SADCBO, CBO, SADCBO, ...) so machine load hits both alike. A SADCBO iteration
fits the full surrogate, runs the switch check (a second fit and a UCB maximization over the
box), the Q = 10 q-UCB points and feature collapsing, then fits the reduced surrogate and
maximizes UCB; a CBO iteration fits one surrogate and maximizes UCB. In a campaign SADCBO
reuses the full surrogate of the previous iteration as the "previous" model of the switch
check, so the bench fits that one before the clock starts (the steady state of a run).
GP (RBF-ARD), 4 restarts / 256 raw samples, one torch thread. Writes
``experiments/results/bench_contextual/{results.json, results.md}``.

    python experiments/bench_contextual.py --smoke     # seconds
    python experiments/bench_contextual.py             # n = 30, 60; 5 repeats

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

from dsbo.acquisition import OptimizerSettings
from dsbo.contexts import ContextState, make_context_policy
from dsbo.problems import get_problem
from dsbo.surrogates import SurrogateSpec, fit_surrogate

RESULTS = Path(__file__).resolve().parent / "results" / "bench_contextual"


def state_for(n: int, seed: int, optimizer: OptimizerSettings) -> ContextState:
    problem = get_problem("contextual-hartmann4")
    X = draw_sobol_samples(problem.bounds, n=n, q=1, seed=seed).squeeze(1)
    Y = problem.evaluate(X)[:, 0]
    low, high = problem.context_distribution()
    z = low + (high - low) * torch.rand(
        len(problem.contexts), generator=torch.Generator().manual_seed(seed), dtype=torch.double
    )
    return ContextState(
        problem=problem,
        X=X,
        Y=Y,
        z=z,
        t=n // 2,
        seed=seed,
        surrogate=SurrogateSpec("gp", {"kernel": "rbf"}),
        optimizer=optimizer,
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    sizes, repeats = ([12], 1) if args.smoke else ([30, 60], 5)
    optimizer = (
        OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, mc_samples=32)
        if args.smoke
        else OptimizerSettings(num_restarts=4, raw_samples=256, maxiter=100, mc_samples=128)
    )
    rows = []
    for n in sizes:
        times: dict[str, list[float]] = {"sadcbo": [], "cbo": []}
        for rep in range(repeats):
            state = state_for(n, rep, optimizer)
            for name in times:  # interleaved: one of each per repeat
                policy = make_context_policy(
                    name, {"q_points": 2} if args.smoke and name == "sadcbo" else {}, optimizer
                )
                if name == "sadcbo":  # the previous iteration's full model, as in a campaign
                    policy.previous_full = (
                        n - 1,
                        fit_surrogate(
                            state.surrogate,
                            state.X[:-1],
                            state.Y[:-1].unsqueeze(-1),
                            bounds=state.problem.bounds,
                        ),
                    )
                torch.manual_seed(rep)
                start = time.perf_counter()
                policy.propose(state)
                times[name].append(time.perf_counter() - start)
        ratio = statistics.median(s / c for s, c in zip(times["sadcbo"], times["cbo"], strict=True))
        rows.append(
            {
                "n": n,
                "repeats": repeats,
                "sadcbo_s": statistics.median(times["sadcbo"]),
                "cbo_s": statistics.median(times["cbo"]),
                "ratio": ratio,
                "times": times,
            }
        )
        print(
            f"n={n}: SADCBO {rows[-1]['sadcbo_s']:.2f}s, CBO {rows[-1]['cbo_s']:.2f}s, ratio {ratio:.2f}x"
        )
    result = {"smoke": args.smoke, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    lines = [
        "# One SADCBO iteration vs one CBO iteration (Hartmann4D with contexts)",
        "",
        f"Written by `python experiments/bench_contextual.py{' --smoke' if args.smoke else ''}`; the two "
        "policies propose from the same state, interleaved; GP (RBF-ARD), 4 restarts / 256 raw samples, one "
        "thread. Ratio = median over repeats of SADCBO seconds / CBO seconds (goal <= 3x).",
        "",
        "| n evaluated | repeats | SADCBO s (median) | CBO s (median) | ratio (median) |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['n']} | {r['repeats']} | {r['sadcbo_s']:.2f} | {r['cbo_s']:.2f} | {r['ratio']:.2f}x |"
        for r in rows
    ]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    return result


if __name__ == "__main__":
    main()
