"""Benchmark: where the time of one BO iteration goes, at 20, 100 and 300 observations.

For each number of observations N the store is pre-filled with N completed Sobol trials of the
problem, then a few BO iterations run; each iteration is split into surrogate fit, acquisition
optimization, store (SQLite reads and durable commits) and the rest. The same iterations run
with 1 and with 2 torch intra-op threads, side by side, to pick the CLI's ``threads`` default
from a measurement.

Writes ``experiments/results/bench_loop/{results.json, results.md, bench_loop.png}``.

    python experiments/bench_loop.py            # N in {20, 100, 300}, MAP-SAAS, branin-20d
    python experiments/bench_loop.py --smoke    # seconds: N in {10, 20}, GP, 1 iteration

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from botorch.utils.sampling import draw_sobol_samples  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.campaign import Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402
from dsbo.storage import TrialStore  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bench_loop"


def prefilled_store(path: Path, problem, n: int, seed: int) -> TrialStore:
    """A store holding ``n`` completed Sobol trials of ``problem``."""
    store = TrialStore(path)
    X = problem.round_to_domain(draw_sobol_samples(problem.bounds, n=n, q=1, seed=seed).squeeze(1))
    Y = problem.evaluate_true(X)
    ids = store.add_trials(X, "sobol-init")
    for tid, y in zip(ids, Y.tolist(), strict=True):
        store.complete(tid, y, eval_time=0.0)
    return store


def measure(
    problem_name: str,
    surrogate: str,
    n: int,
    iterations: int,
    threads: int,
    workdir: Path,
    optimizer: OptimizerSettings,
) -> list[dict[str, float]]:
    torch.set_num_threads(threads)
    problem = get_problem(problem_name)
    path = workdir / f"{surrogate}-{n}-{threads}.sqlite"
    store = prefilled_store(path, problem, n, seed=0)
    campaign = Campaign(
        problem,
        surrogate=surrogate,
        budget=n + iterations,
        n_init=min(n, 10),
        seed=0,
        store=store,
        optimizer=optimizer,
    )
    for _ in range(iterations):
        campaign.step()
    store.close()
    return campaign.timings


def summarize(timings: list[dict[str, float]]) -> dict[str, float]:
    keys = ("fit", "acquisition", "store", "evaluate", "total")
    out = {k: statistics.mean(t[k] for t in timings) for k in keys}
    out["other"] = out["total"] - out["fit"] - out["acquisition"] - out["store"]
    out["store_fraction"] = out["store"] / out["total"]
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds")
    parser.add_argument("--problem", default="branin-20d")
    parser.add_argument("--surrogate", default=None, help="default: map-saas (gp with --smoke)")
    parser.add_argument("--iterations", type=int, default=None)
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    sizes = [10, 20] if args.smoke else [20, 100, 300]
    surrogate = args.surrogate or ("gp" if args.smoke else "map-saas")
    iterations = args.iterations or (1 if args.smoke else 3)
    optimizer = (
        OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)
        if args.smoke
        else OptimizerSettings()
    )
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = args.out / "stores"
    workdir.mkdir(exist_ok=True)
    for old in workdir.glob("*.sqlite*"):
        old.unlink()

    rows = []
    for n in sizes:
        for threads in (1, 2):
            start = time.perf_counter()
            stats = summarize(
                measure(args.problem, surrogate, n, iterations, threads, workdir, optimizer)
            )
            rows.append({"n": n, "threads": threads, **stats})
            print(
                f"N={n:4d} threads={threads}: fit {stats['fit']:.3f}s  acq {stats['acquisition']:.3f}s  "
                f"store {stats['store'] * 1e3:.2f}ms ({100 * stats['store_fraction']:.3f}%)  "
                f"total {stats['total']:.3f}s  [{time.perf_counter() - start:.0f}s]",
                flush=True,
            )
    for old in workdir.glob("*.sqlite*"):
        old.unlink()
    workdir.rmdir()

    speedup = {
        n: next(r["total"] for r in rows if r["n"] == n and r["threads"] == 2)
        / next(r["total"] for r in rows if r["n"] == n and r["threads"] == 1)
        for n in sizes
    }
    result = {
        "problem": args.problem,
        "surrogate": surrogate,
        "iterations_per_size": iterations,
        "smoke": args.smoke,
        "machine": {
            "cpus": torch.get_num_threads(),
            "platform": platform.platform(),
            "torch": torch.__version__,
        },
        "rows": rows,
        "time_ratio_2_threads_over_1": speedup,
        "max_store_fraction": max(r["store_fraction"] for r in rows),
    }
    (args.out / "results.json").write_text(json.dumps(result, indent=2))
    write_markdown(result, args.out / "results.md")
    plot(result, args.out / "bench_loop.png")
    return result


def write_markdown(result: dict, path: Path) -> None:
    lines = [
        f"# bench_loop: {result['problem']}, {result['surrogate']}, "
        f"{result['iterations_per_size']} iteration(s) per size"
        + (" (smoke)" if result["smoke"] else ""),
        "",
        "| N | threads | fit s | acquisition s | store ms | store % of iteration | other s | iteration s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['n']} | {r['threads']} | {r['fit']:.3f} | {r['acquisition']:.3f} | "
            f"{1e3 * r['store']:.2f} | {100 * r['store_fraction']:.3f} | {r['other']:.3f} | {r['total']:.3f} |"
        )
    lines += ["", "Iteration time with 2 threads / with 1 thread (same run, side by side):", ""]
    for n, ratio in result["time_ratio_2_threads_over_1"].items():
        lines.append(f"- N = {n}: {ratio:.2f}")
    path.write_text("\n".join(lines) + "\n")


def plot(result: dict, path: Path) -> None:
    rows = [r for r in result["rows"] if r["threads"] == 1]
    labels = [str(r["n"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    bottom = [0.0] * len(rows)
    for key, color in (("fit", "C0"), ("acquisition", "C1"), ("store", "C3"), ("other", "C7")):
        values = [r[key] for r in rows]
        ax.bar(labels, values, bottom=bottom, color=color, label=key)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xlabel("observations N")
    ax.set_ylabel("seconds per BO iteration (1 thread)")
    ax.set_title(f"{result['problem']}, {result['surrogate']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
