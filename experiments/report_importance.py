"""Does the HTML report's parameter importance find the relevant inputs of an embedded problem?

For each seed, a campaign as the report would see it: MAP-SAAS (default options) + plain
qLogNEI (no BONSAI post-processing, so the ranking reflects the model, not the pruning), the
default optimizer settings of ``python -m dsbo.optimize`` and its ``n_init: 10``, on

- ``branin-20d`` (2 relevant of 20; the default problem of ``python -m dsbo.optimize``), 30
  evaluations (the default run's budget);
- ``hartmann6-30d`` (6 relevant of 30), ``--hartmann-budget`` evaluations (default 40).

After ``campaign.run()`` the campaign's own surrogate is refitted on its completed trials
(:func:`dsbo.analysis.report_data.fit_campaign_model`, as the report does) and ranked by
:func:`dsbo.analysis.importance.parameter_importance`. Recorded per seed: the ranking and the
shares, the rank of each relevant parameter, whether the ``k`` relevant ones fill the top ``k``,
how many of them are in the top ``k``, the method, and the seconds (campaign, fit + ranking).

The relevant coordinates are drawn by ``embedding_seed``, which follows the campaign seed (seed
0 is the default problem itself), so every seed also hides the relevant inputs elsewhere;
``--embedding-seed N`` fixes it for all seeds.

Writes ``experiments/results/report_importance/{runs.jsonl, results.json, results.md,
relevant_ranks.png}``; finished seeds are kept in ``runs.jsonl`` and a rerun resumes from it.

    python experiments/report_importance.py --smoke     # seconds: 2 seeds, 8 evaluations
    python experiments/report_importance.py --problems branin-20d --seeds 20
    python experiments/report_importance.py --problems hartmann6-30d --seeds 10

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.analysis.importance import parameter_importance  # noqa: E402
from dsbo.analysis.report_data import fit_campaign_model  # noqa: E402
from dsbo.campaign import Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "report_importance"
PROBLEMS = ("branin-20d", "hartmann6-30d")
#: problem -> evaluations of a full run (hartmann6-30d: ``--hartmann-budget``)
BUDGETS = {"branin-20d": 30, "hartmann6-30d": 40}
N_INIT = 10  # configs/bo/default.yaml
SMOKE_BUDGET, SMOKE_N_INIT = 8, 4
KEY_FIELDS = ("problem", "seed", "embedding_seed", "fixed_embedding", "budget", "n_init", "smoke")


def optimizer_settings(smoke: bool) -> OptimizerSettings:
    """The default run's settings (configs/bo/default.yaml); tiny ones for ``--smoke``."""
    if smoke:
        return OptimizerSettings(
            num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
        )
    return OptimizerSettings()


def run_seed(job: dict[str, Any]) -> dict[str, Any]:
    """One campaign, then the report's importance of its refitted surrogate."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = get_problem(job["problem"], embedding_seed=job["embedding_seed"])
    names = problem.space.searched
    relevant = [names[j] for j in problem.relevant_dims]
    k = len(relevant)
    campaign = Campaign(
        problem,
        surrogate="map-saas",
        acquisition="qlognei",
        budget=job["budget"],
        n_init=job["n_init"],
        seed=job["seed"],
        optimizer=optimizer_settings(job["smoke"]),
        dry_run=False,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    campaign.run()
    run_seconds, run_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    model = fit_campaign_model(campaign)
    [importance] = parameter_importance(model, problem.space, problem.outcome_names, [0])
    importance_seconds, importance_cpu = time.perf_counter() - wall, time.process_time() - cpu
    ranking = importance.ranking
    ranks = {name: ranking.index(name) + 1 for name in relevant}
    in_top = sum(r <= k for r in ranks.values())
    best = campaign.result().best_value
    return {
        **job,
        "relevant": relevant,
        "k": k,
        "relevant_ranks": ranks,
        "num_in_top_k": in_top,
        "fills_top_k": in_top == k,
        "ranking": ranking,
        "scores": importance.scores,
        "relevant_share": sum(importance.scores[n] for n in relevant),
        # > 1: every relevant parameter scores above every irrelevant one
        "separation": min(importance.scores[n] for n in relevant)
        / max(s for n, s in importance.scores.items() if n not in relevant),
        "method": importance.method,
        "best_value": best,
        "regret": None
        if problem.optimal_value is None or best is None
        else problem.optimal_value - best,
        "completed": campaign.store.count("completed"),
        "run_seconds": run_seconds,
        "importance_seconds": importance_seconds,
        "seconds": run_seconds + importance_seconds,
        "cpu_seconds": run_cpu + importance_cpu,
    }


def job_key(job: dict[str, Any]) -> tuple:
    return tuple(job[f] for f in KEY_FIELDS)


def run_resumable(jobs: list[dict[str, Any]], out: Path) -> list[dict[str, Any]]:
    """Run every job not yet in ``out/runs.jsonl`` in this process, one at a time, appending
    each as it ends; returns all runs in job order (delete the file to start over)."""
    log = out / "runs.jsonl"
    done: dict[tuple, dict[str, Any]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            run = json.loads(line)
            done[job_key(run)] = run
    todo = [j for j in jobs if job_key(j) not in done]
    if len(todo) < len(jobs):
        print(
            f"resuming: {len(jobs) - len(todo)} of {len(jobs)} seeds already in {log}", flush=True
        )
    started = time.perf_counter()
    with log.open("a") as sink:
        for i, job in enumerate(todo, len(jobs) - len(todo) + 1):
            run = run_seed(job)
            done[job_key(run)] = run
            sink.write(json.dumps(run) + "\n")
            sink.flush()
            ranks = ", ".join(f"{n}:{r}" for n, r in run["relevant_ranks"].items())
            print(
                f"[{i}/{len(jobs)}] {run['problem']} seed {run['seed']}: relevant ranks {ranks}; "
                f"{run['num_in_top_k']}/{run['k']} in the top {run['k']}; {run['seconds']:.0f}s "
                f"(elapsed {time.perf_counter() - started:.0f}s)",
                flush=True,
            )
    return [done[job_key(j)] for j in jobs]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--smoke", action="store_true", help="2 seeds, 8 evaluations, tiny optimizer"
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 (default 20; 2 with --smoke)"
    )
    parser.add_argument("--problems", nargs="*", default=None, choices=PROBLEMS)
    parser.add_argument("--hartmann-budget", type=int, default=BUDGETS["hartmann6-30d"])
    parser.add_argument(
        "--embedding-seed",
        type=int,
        default=None,
        help="one embedding for every seed (default: the campaign seed)",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    torch.set_num_threads(1)
    smoke = args.smoke
    seeds = args.seeds or (2 if smoke else 20)
    problems = args.problems or list(PROBLEMS)
    budgets = {**BUDGETS, "hartmann6-30d": args.hartmann_budget}
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [
        {
            "problem": p,
            "seed": s,
            "embedding_seed": s if args.embedding_seed is None else args.embedding_seed,
            "budget": SMOKE_BUDGET if smoke else budgets[p],
            "n_init": SMOKE_N_INIT if smoke else N_INIT,
            "smoke": smoke,
            "fixed_embedding": args.embedding_seed,
        }
        for p in problems
        for s in range(seeds)
    ]
    run_resumable(jobs, args.out)
    # the report covers every seed recorded in runs.jsonl (of this mode), not only this call's
    recorded = {
        job_key(r): r for r in map(json.loads, (args.out / "runs.jsonl").read_text().splitlines())
    }
    runs = sorted(
        (r for r in recorded.values() if r["smoke"] == smoke),
        key=lambda r: (
            PROBLEMS.index(r["problem"]),
            r["budget"],
            -1 if r["fixed_embedding"] is None else r["fixed_embedding"],
            r["seed"],
        ),
    )
    result = summarize(runs, smoke)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, runs, args.out / "results.md")
    plot_ranks(runs, result, args.out / "relevant_ranks.png")
    return result


def _group(run: dict[str, Any]) -> tuple[str, int, int | None]:
    """Seeds summarized together: problem, budget, and the fixed embedding seed (or None)."""
    return run["problem"], run["budget"], run["fixed_embedding"]


def summarize(runs: list[dict[str, Any]], smoke: bool) -> dict[str, Any]:
    table = []
    for group in dict.fromkeys(map(_group, runs)):
        rs = [r for r in runs if _group(r) == group]
        k = rs[0]["k"]
        table.append(
            {
                "problem": group[0],
                "budget": group[1],
                "fixed_embedding": group[2],
                "n_init": rs[0]["n_init"],
                "k": k,
                "seeds": len(rs),
                "seed_list": [r["seed"] for r in rs],
                "fills_top_k": sum(r["fills_top_k"] for r in rs),
                "missed_seeds": [r["seed"] for r in rs if not r["fills_top_k"]],
                # how many seeds had j of the k relevant parameters in the top k
                "num_in_top_k": {j: sum(r["num_in_top_k"] == j for r in rs) for j in range(k + 1)},
                "methods": sorted({r["method"] for r in rs}),
                "median_seconds": statistics.median(r["seconds"] for r in rs),
                "median_run_seconds": statistics.median(r["run_seconds"] for r in rs),
                "median_importance_seconds": statistics.median(r["importance_seconds"] for r in rs),
                "median_cpu_seconds": statistics.median(r["cpu_seconds"] for r in rs),
                "total_cpu_seconds": sum(r["cpu_seconds"] for r in rs),
                "median_relevant_share": statistics.median(r["relevant_share"] for r in rs),
                # per coordinate of the base function (the i-th relevant parameter is its x_{i+1}):
                # its ranks over the seeds, and its true total-order Sobol index (what it is worth)
                "base_ranks": [
                    [list(r["relevant_ranks"].values())[i] for r in rs] for i in range(k)
                ],
                "base_total_sobol": true_total_sobol(group[0]),
            }
        )
    return {
        "smoke": smoke,
        "surrogate": "map-saas",
        "acquisition": "qlognei (no post-processing)",
        "optimizer": "tiny (smoke)" if smoke else "default (configs/bo/default.yaml)",
        "table": table,
    }


def true_total_sobol(name: str, n: int = 4096) -> list[float]:
    """Total-order Sobol indices of the problem's true objective over its relevant coordinates
    (uniform on the unit cube; the irrelevant ones have none), ``n`` base samples."""
    from scipy.stats import sobol_indices, uniform

    problem = get_problem(name)
    dims = list(problem.relevant_dims)

    def f(u: Any) -> Any:  # k x n -> n
        X = torch.full((u.shape[1], problem.dim), 0.5, dtype=torch.double)
        X[:, dims] = torch.as_tensor(u.T, dtype=torch.double)
        return problem.evaluate_true(X)[:, 0].numpy()

    result = sobol_indices(func=f, n=n, dists=[uniform(0, 1)] * len(dims), rng=0)
    return [float(v) for v in result.total_order]


def write_markdown(result: dict[str, Any], runs: list[dict[str, Any]], path: Path) -> None:
    scope = "; ".join(
        f"{t['problem']}{_embedding(t)}: {t['seeds']} seed(s) ({_seeds(t['seed_list'])}), budget {t['budget']} "
        f"({t['n_init']} Sobol + {t['budget'] - t['n_init']} qLogNEI)"
        for t in result["table"]
    )
    lines = [
        "# Report importance: do the relevant inputs rank first?"
        + (" (smoke)" if result["smoke"] else ""),
        "",
        f"MAP-SAAS (default options) + plain qLogNEI, optimizer {result['optimizer']}, one thread; the report's "
        "importance (`parameter_importance` of `fit_campaign_model`) after the budget. Run: "
        + scope
        + ". "
        "The relevant coordinates are drawn per seed (`embedding_seed` = the seed) unless a fixed embedding is stated.",
        "",
        "| problem | budget | seeds | relevant fill the top k | seeds by how many of the k are in the top k "
        "| median relevant share | method | median wall s per seed (campaign + ranking) | median CPU s per seed "
        "| CPU s, all seeds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in result["table"]:
        dist = ", ".join(
            f"{j}: {n}"
            for j, n in sorted(t["num_in_top_k"].items(), key=lambda kv: -int(kv[0]))
            if n
        )
        lines.append(
            f"| {t['problem']}{_embedding(t)} | {t['budget']} | {t['seeds']} | {t['fills_top_k']} of {t['seeds']} (k = {t['k']}) | "
            f"{dist} | {t['median_relevant_share']:.3f} | {', '.join(t['methods'])} | "
            f"{t['median_seconds']:.0f} ({t['median_run_seconds']:.0f} + {t['median_importance_seconds']:.1f}) | "
            f"{t['median_cpu_seconds']:.0f} | {t['total_cpu_seconds']:.0f} |"
        )
    for t in result["table"]:
        lines += [
            "",
            f"{t['problem']}{_embedding(t)}, budget {t['budget']}, by coordinate of the base function "
            "(the i-th relevant parameter of a seed is the base function's x_i):",
            "",
            "| base coordinate | true total Sobol index | in the top k (seeds) | median rank | ranks over the seeds |",
            "|---|---|---|---|---|",
        ]
        for i, (ranks, sobol) in enumerate(
            zip(t["base_ranks"], t["base_total_sobol"], strict=True)
        ):
            lines.append(
                f"| x{i + 1} | {sobol:.3f} | {sum(r <= t['k'] for r in ranks)} of {len(ranks)} | "
                f"{statistics.median(ranks):g} | {', '.join(map(str, ranks))} |"
            )
    lines += [
        "",
        "## Per seed",
        "",
        "| problem | budget | seed | embedding seed | relevant | their ranks | in top k | top k of the ranking "
        "| separation (min relevant / max irrelevant score) | regret | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        ranks = ", ".join(str(v) for v in r["relevant_ranks"].values())
        top = ", ".join(r["ranking"][: r["k"]])
        regret = "-" if r["regret"] is None else f"{r['regret']:.3g}"
        lines.append(
            f"| {r['problem']} | {r['budget']} | {r['seed']} | {r['embedding_seed']} | {', '.join(r['relevant'])} | "
            f"{ranks} | {r['num_in_top_k']}/{r['k']} | {top} | {r['separation']:.3g} | {regret} | {r['seconds']:.0f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def _embedding(t: dict[str, Any]) -> str:
    return "" if t["fixed_embedding"] is None else f" (fixed embedding seed {t['fixed_embedding']})"


def _seeds(seeds: list[int]) -> str:
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return (
        f"{seeds[0]}-{seeds[-1]}"
        if seeds == list(range(seeds[0], seeds[-1] + 1))
        else ", ".join(map(str, seeds))
    )


def plot_ranks(runs: list[dict[str, Any]], result: dict[str, Any], path: Path) -> None:
    """Per problem: each seed's relevant parameters' ranks (the dashed line: the top k)."""
    table = result["table"]
    fig, axes = plt.subplots(1, len(table), figsize=(5.5 * len(table), 3.8), squeeze=False)
    for ax, t in zip(axes[0], table, strict=True):
        rs = [r for r in runs if _group(r) == (t["problem"], t["budget"], t["fixed_embedding"])]
        for r in rs:
            ranks = list(r["relevant_ranks"].values())
            color = "C0" if r["fills_top_k"] else "C3"
            ax.scatter([r["seed"]] * len(ranks), ranks, color=color, s=18)
        ax.axhline(t["k"] + 0.5, color="k", ls="--", lw=0.8)
        ax.set_ylim(len(rs[0]["ranking"]) + 0.5, 0.5)  # rank 1 at the top
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(
            f"{t['problem']}{_embedding(t)}, {t['budget']} evaluations: {t['fills_top_k']}/{t['seeds']} fill the top {t['k']}",
            fontsize=9,
        )
        ax.set_xlabel("seed")
        ax.set_ylabel("rank of each relevant parameter")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
