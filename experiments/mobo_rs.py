"""MOBO with random scalarizations (MOBO-RS) against qParEGO, qLogNEHVI and random search.

Paria thesis ch. 2 (section 2.4, figures 2.3, 2.5-2.7; no numbers are given, so the
reproduction reports the sampling patterns and the orderings it measures):

- ``pattern``: the toy of figure 2.3 (``circle-front``: ``f1 = x y``, ``f2 = y sqrt(1 - x^2)``,
  a quarter-circle front). MOBO-RS (TS) with the linear and the Chebyshev scalarization and
  four weight priors: two bounding boxes of the objective space (``high-f2``: f1 in
  [0.2, 0.4], f2 in [0.9, 0.98]; ``middle``: both in [0.65, 0.75]), their mixture, and flat.
  Measured: the share of BO points inside the requested boxes (with a margin of 0.05).
- ``regret``: Branin-4 x CurrinExp-4 (``branin4-currin4``, sums of two 2-D blocks) with the
  thesis' regions ``top`` [(-110, -95), (23, 27)], ``mid`` [(-80, -70), (16, 22)], their
  mixture ``top/mid`` and ``flat``. MOBO-RS TS and UCB (Chebyshev) per region; qParEGO,
  qLogNEHVI and Sobol (region-free, run once per seed and scored under every region's prior).
- ``six``: six GP-sample objectives in 6-D (``gp-samples-6``), the thesis' ``mid`` region
  ``[2/3, 1]`` of every normalized objective; MOBO-RS TS and UCB, qParEGO, Sobol (qLogNEHVI
  is left out at six objectives, as the thesis leaves out EHI beyond two).
- ``faiss``: tuning a real faiss IVF-PQ index (``faiss-ivf-tuning``: query time, 1 - recall@10,
  memory; the thesis' LSH experiment on a synthetic embedding set), MOBO-RS TS with a
  "fast and accurate" box against qParEGO and Sobol, 2 seeds.

Bayes regret (eq. 2.3) with the Chebyshev scalarization, objectives normalized to [0, 1] by
each problem's objective range, Monte Carlo over 500 weights of the region's prior, against a
sample of the true front (exact for the toy; the non-dominated points of 2^17 or 2^14 Sobol
points otherwise). Reduced budget: 30 evaluations (6 Sobol initial points; the thesis runs 150
and 120), GP surrogates (dsbo's ``gp``), 4 restarts / 256 raw samples.

    python experiments/mobo_rs.py --smoke           # a minute
    python experiments/mobo_rs.py --seeds 5 --pattern-seeds 3    # what was run

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from campaign_runs import mean_and_se, method_color, panel_grid, run_resumable  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.acquisition.scalarized import ObjectiveScale, Scalarization, WeightPrior, bayes_regret  # noqa: E402
from dsbo.campaign import Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "mobo_rs"
KEY = ("part", "problem", "method", "region", "seed", "smoke")
INITIAL = ("sobol-init", "sobol-fallback")
TOY_BOXES = {"high-f2": [[0.2, 0.4], [0.9, 0.98]], "middle": [[0.65, 0.75], [0.65, 0.75]]}
BC_BOXES = {"top": [[-110.0, -95.0], [23.0, 27.0]], "mid": [[-80.0, -70.0], [16.0, 22.0]]}
#: faiss: query ms, recall@10 - 1 and MB, maximized: fast (<= 0.15 ms), recall >= 0.6, <= 0.4 MB
FAISS_BOX = [[-0.15, 0.0], [-0.4, 0.0], [-0.4, 0.0]]
RS_METHODS = {
    "rs-ts-chebyshev": ("ts", "chebyshev"),
    "rs-ucb-chebyshev": ("ucb", "chebyshev"),
    "rs-ts-linear": ("ts", "linear"),
}
BASELINES = ("qparego", "qlognehvi", "sobol")
MARGIN = 0.05
REGRET_WEIGHTS = 500


def prior_spec(problem: str, region: str) -> Any:
    """The weight prior of ``region`` on ``problem`` (``flat``, a box, or a mixture)."""
    if region == "flat":
        return "flat"
    if problem == "faiss-ivf-tuning":
        return {"box": FAISS_BOX}
    if problem == "gp-samples-6":
        bounds = torch.tensor(get_problem(problem).metadata["objective_bounds"], dtype=torch.double)
        lower = bounds[0] + 2.0 / 3.0 * (bounds[1] - bounds[0])
        return {"box": torch.stack([lower, bounds[1]], dim=-1).tolist()}
    boxes = TOY_BOXES if problem == "circle-front" else BC_BOXES
    if "/" in region:
        return {"mixture": [{"box": boxes[r]} for r in region.split("/")]}
    return {"box": boxes[region]}


def jobs_for(
    parts: list[str], seeds: int, pattern_seeds: int, smoke: bool, faiss_seeds: int = 2
) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    if "pattern" in parts:
        for s in range(pattern_seeds):
            jobs += [
                {
                    "part": "pattern",
                    "problem": "circle-front",
                    "method": m,
                    "region": r,
                    "seed": s,
                    "smoke": smoke,
                }
                for m in ("rs-ts-linear", "rs-ts-chebyshev")
                for r in ("high-f2", "middle", "high-f2/middle", "flat")
            ]
    if "regret" in parts:
        for s in range(seeds):
            jobs += [
                {
                    "part": "regret",
                    "problem": "branin4-currin4",
                    "method": m,
                    "region": r,
                    "seed": s,
                    "smoke": smoke,
                }
                for m in ("rs-ts-chebyshev", "rs-ucb-chebyshev")
                for r in ("top", "mid", "top/mid", "flat")
            ]
            jobs += [
                {
                    "part": "regret",
                    "problem": "branin4-currin4",
                    "method": m,
                    "region": "-",
                    "seed": s,
                    "smoke": smoke,
                }
                for m in BASELINES
            ]
    if "six" in parts:
        for s in range(seeds):
            jobs += [
                {
                    "part": "six",
                    "problem": "gp-samples-6",
                    "method": m,
                    "region": "mid",
                    "seed": s,
                    "smoke": smoke,
                }
                for m in ("rs-ts-chebyshev", "rs-ucb-chebyshev")
            ]
            jobs += [
                {
                    "part": "six",
                    "problem": "gp-samples-6",
                    "method": m,
                    "region": "-",
                    "seed": s,
                    "smoke": smoke,
                }
                for m in ("qparego", "sobol")
            ]
    if "faiss" in parts:
        for s in range(faiss_seeds):
            jobs += [
                {
                    "part": "faiss",
                    "problem": "faiss-ivf-tuning",
                    "method": m,
                    "region": r,
                    "seed": s,
                    "smoke": smoke,
                }
                for m, r in (("rs-ts-chebyshev", "fast-accurate"), ("qparego", "-"), ("sobol", "-"))
            ]
    if smoke:  # one configuration per part: enough to exercise every code path
        keep = {
            ("pattern", "rs-ts-linear", "middle"),
            ("regret", "rs-ts-chebyshev", "top/mid"),
            ("regret", "rs-ucb-chebyshev", "top"),
            ("regret", "qparego", "-"),
            ("six", "rs-ts-chebyshev", "mid"),
            ("faiss", "rs-ts-chebyshev", "fast-accurate"),
        }
        jobs = [j for j in jobs if (j["part"], j["method"], j["region"]) in keep]
    return jobs


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = get_problem(job["problem"])
    if job["method"] in RS_METHODS:
        strategy, scalarization = RS_METHODS[job["method"]]
        acquisition: Any = {
            "name": "mobo-rs",
            "strategy": strategy,
            "scalarization": scalarization,
            "prior": prior_spec(job["problem"], job["region"]),
        }
    else:
        acquisition = job["method"]
    if job["smoke"]:
        budget, n_init = 8, 4
        optimizer = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, mc_samples=32)
    else:
        budget, n_init = 30, 6
        optimizer = OptimizerSettings(num_restarts=4, raw_samples=256, maxiter=100, mc_samples=128)
    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition=acquisition,
        budget=budget,
        n_init=n_init,
        seed=job["seed"],
        optimizer=optimizer,
        dry_run=False,
    )
    start = time.perf_counter()
    campaign.run()
    seconds = time.perf_counter() - start
    trials = campaign.store.trials("completed")
    return {
        **job,
        "Y": [t.y for t in trials],
        "is_bo": [t.generator not in INITIAL for t in trials],
        "weights": [t.metadata.get("weights") for t in trials],
        "acq_time": [t.acq_time for t in trials],
        "seconds": seconds,
    }


def regret_trace(run: dict[str, Any], region: str, front: torch.Tensor) -> list[float]:
    """Bayes regret (Chebyshev, ``region``'s prior) of the first ``n`` points, for every ``n``."""
    problem = get_problem(run["problem"])
    prior = WeightPrior.parse(prior_spec(run["problem"], region), problem.num_objectives)
    scale = ObjectiveScale.for_problem(problem)
    Y = torch.tensor(run["Y"], dtype=torch.double)
    return [
        bayes_regret(
            Y[:n],
            prior,
            Scalarization("chebyshev"),
            scale,
            front=front,
            num_weights=REGRET_WEIGHTS,
            seed=0,
        )["regret"]
        for n in range(1, Y.shape[0] + 1)
    ]


def inside_share(run: dict[str, Any]) -> float:
    """Share of the run's BO points inside one of the requested boxes (+- MARGIN), toy only."""
    if run["region"] == "flat":
        return math.nan
    boxes = [torch.tensor(TOY_BOXES[r], dtype=torch.double) for r in run["region"].split("/")]
    Y = torch.tensor(run["Y"], dtype=torch.double)[torch.tensor(run["is_bo"])]
    if Y.shape[0] == 0:
        return math.nan
    inside = torch.zeros(Y.shape[0], dtype=torch.bool)
    for B in boxes:
        inside |= ((Y >= B[:, 0] - MARGIN) & (Y <= B[:, 1] + MARGIN)).all(-1)
    return float(inside.double().mean())


def summarize(runs: list[dict[str, Any]], smoke: bool) -> dict[str, Any]:
    fronts: dict[str, torch.Tensor] = {}

    def front_of(name: str) -> torch.Tensor:
        if name not in fronts:
            fronts[name] = get_problem(name).metadata["pareto_front"]()
        return fronts[name]

    pattern = {}
    for r in (r for r in runs if r["part"] == "pattern"):
        row = pattern.setdefault(f"{r['method']} | {r['region']}", [])
        row.append(inside_share(r))
    pattern_table = {k: {"seeds": len(v), "inside": mean_and_se(v)} for k, v in pattern.items()}
    regret: dict[str, dict[str, Any]] = {}
    traces: dict[str, dict[str, list[list[float]]]] = {}
    for part, regions in (("regret", ("top", "mid", "top/mid", "flat")), ("six", ("mid",))):
        rows = [r for r in runs if r["part"] == part]
        for region in regions:
            key = f"{rows[0]['problem']} | {region}" if rows else None
            if key is None:
                continue
            chosen = [r for r in rows if r["region"] in (region, "-")]
            for r in chosen:
                trace = regret_trace(r, region, front_of(r["problem"]))
                traces.setdefault(key, {}).setdefault(r["method"], []).append(trace)
            regret[key] = {
                m: {
                    "seeds": len(ts),
                    "final": mean_and_se([t[-1] for t in ts]),
                    "mean_over_run": mean_and_se([float(np.mean(t)) for t in ts]),
                }
                for m, ts in traces[key].items()
            }
    faiss_runs = [r for r in runs if r["part"] == "faiss"]
    faiss_table = {}
    if faiss_runs:
        problem = get_problem("faiss-ivf-tuning")
        pooled = torch.tensor([y for r in faiss_runs for y in r["Y"]], dtype=torch.double)
        scale = ObjectiveScale.for_problem(problem, pooled)  # one scale for every run: comparable
        prior = WeightPrior.parse({"box": FAISS_BOX}, 3)
        box = torch.tensor(FAISS_BOX, dtype=torch.double)
        for m in sorted({r["method"] for r in faiss_runs}):
            rs = [r for r in faiss_runs if r["method"] == m]
            utility = [
                bayes_regret(
                    torch.tensor(r["Y"], dtype=torch.double),
                    prior,
                    Scalarization("chebyshev"),
                    scale,
                    num_weights=REGRET_WEIGHTS,
                )["utility"]
                for r in rs
            ]
            inside = []
            for r in rs:
                Y = torch.tensor(r["Y"], dtype=torch.double)[torch.tensor(r["is_bo"])]
                inside.append(
                    float(((Y >= box[:, 0]) & (Y <= box[:, 1])).all(-1).double().mean())
                    if len(Y)
                    else math.nan
                )
            faiss_table[m] = {
                "seeds": len(rs),
                "utility": mean_and_se(utility),
                "inside": mean_and_se(inside),
            }
    return {
        "smoke": smoke,
        "pattern": pattern_table,
        "regret": regret,
        "traces": traces,
        "faiss": faiss_table,
    }


def fmt(pair: tuple[float, float] | list[float]) -> str:
    return "nan" if math.isnan(pair[0]) else f"{pair[0]:.3g} +- {pair[1]:.2g}"


def write_markdown(result: dict[str, Any], path: Path) -> None:
    cmd = "python experiments/mobo_rs.py" + (" --smoke" if result["smoke"] else "")
    budget = "8 (4 initial)" if result["smoke"] else "30 (6 initial)"
    lines = [
        "# MOBO with random scalarizations (Paria thesis ch. 2)",
        "",
        f"Written by `{cmd}`. Budget {budget} evaluations per run, GP surrogates, 4 restarts / 256 raw "
        "samples; mean +- standard error over the seeds in column `seeds`. The thesis reports no numbers "
        "(figures only): compare the orderings and patterns.",
        "",
        "## Sampling pattern on the toy of figure 2.3 (`circle-front`)",
        "",
        f"Share of BO points inside the requested box(es) (+- {MARGIN}); flat has no box.",
        "",
        "| method | region | seeds | inside |",
        "|---|---|---|---|",
    ]
    for k, v in result["pattern"].items():
        m, region = k.split(" | ")
        lines.append(f"| {m} | {region} | {v['seeds']} | {fmt(v['inside'])} |")
    lines += [
        "",
        "![patterns](patterns.png)",
        "",
        "## Bayes regret (Chebyshev, the region's prior)",
        "",
        "`final` = after the last evaluation; `mean over run` = averaged over evaluations 1..30 "
        "(the area under the regret curve). Baselines do not use the region: the same runs are scored "
        "under each region's prior.",
        "",
        "| problem | region | method | seeds | final | mean over run |",
        "|---|---|---|---|---|---|",
    ]
    for key, methods in result["regret"].items():
        problem, region = key.split(" | ")
        for m, v in sorted(methods.items(), key=lambda kv: kv[1]["final"][0]):
            lines.append(
                f"| {problem} | {region} | {m} | {v['seeds']} | {fmt(v['final'])} | {fmt(v['mean_over_run'])} |"
            )
    lines += ["", "![Bayes regret](bayes_regret.png)", ""]
    if result.get("faiss"):
        lines += [
            "## Tuning a faiss IVF-PQ index (`faiss-ivf-tuning`)",
            "",
            f"Region box (maximization units: -ms per query, recall@10 - 1, -MB): {FAISS_BOX}. The front is "
            "unknown, so the table gives the Bayes utility E max s_lambda (higher is better; objectives "
            "normalized by the range of all runs pooled) and the share of BO points inside the box.",
            "",
            "| method | seeds | Bayes utility | BO points in the box |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {m} | {v['seeds']} | {fmt(v['utility'])} | {fmt(v['inside'])} |"
            for m, v in result["faiss"].items()
        ]
        lines += ["", "![faiss front](faiss_front.png)", ""]
    path.write_text("\n".join(lines))


def plot(runs: list[dict[str, Any]], result: dict[str, Any], out: Path) -> None:
    toy = [r for r in runs if r["part"] == "pattern" and r["seed"] == 0]
    if toy:
        fig, axes = panel_grid(len(toy), max_columns=4)
        t = np.linspace(0, math.pi / 2, 200)
        for ax, r in zip(axes, toy, strict=True):
            Y = np.asarray(r["Y"])
            ax.plot(np.cos(t), np.sin(t), color="0.7", lw=1)
            if r["region"] != "flat":
                for name in r["region"].split("/"):
                    (a1, b1), (a2, b2) = TOY_BOXES[name]
                    ax.add_patch(
                        plt.Rectangle((a1, a2), b1 - a1, b2 - a2, fill=False, ec="C3", lw=1)
                    )
            ax.scatter(Y[:, 0], Y[:, 1], c=np.arange(len(Y)), cmap="viridis", s=14)
            ax.set(
                title=f"{r['method'].removeprefix('rs-')} | {r['region']}",
                xlim=(0, 1.05),
                ylim=(0, 1.05),
                xlabel="f1",
                ylabel="f2",
            )
            ax.title.set_fontsize(8)
        fig.tight_layout()
        fig.savefig(out / "patterns.png", dpi=110)
        plt.close(fig)
    faiss_runs = [r for r in runs if r["part"] == "faiss" and r["seed"] == 0]
    if faiss_runs:
        fig, axes = panel_grid(len(faiss_runs), max_columns=3)
        for ax, r in zip(axes, faiss_runs, strict=True):
            Y = np.asarray(r["Y"])
            points = ax.scatter(-Y[:, 0], 1 + Y[:, 1], c=-Y[:, 2], cmap="viridis", s=16)
            ax.add_patch(
                plt.Rectangle(
                    (0, 1 + FAISS_BOX[1][0]),
                    -FAISS_BOX[0][0],
                    -FAISS_BOX[1][0],
                    fill=False,
                    ec="C3",
                )
            )
            ax.set(title=r["method"], xlabel="ms per query", ylabel="recall@10")
            fig.colorbar(points, ax=ax, label="MB")
        fig.tight_layout()
        fig.savefig(out / "faiss_front.png", dpi=110)
        plt.close(fig)
    traces = result["traces"]
    if traces:
        fig, axes = panel_grid(len(traces), max_columns=3)
        for ax, (key, methods) in zip(axes, traces.items(), strict=True):
            names = sorted(methods)
            for j, m in enumerate(names):
                arr = np.asarray(methods[m])
                mean = arr.mean(0)
                se = arr.std(0) / math.sqrt(len(arr))
                x = np.arange(1, arr.shape[1] + 1)
                ax.plot(x, mean, color=method_color(j, len(names)), label=m)
                ax.fill_between(
                    x, mean - se, mean + se, color=method_color(j, len(names)), alpha=0.15
                )
            ax.set(title=key, xlabel="evaluations", ylabel="Bayes regret", yscale="log")
            ax.title.set_fontsize(8)
        axes[0].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(out / "bayes_regret.png", dpi=110)
        plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--pattern-seeds", type=int, default=None)
    parser.add_argument(
        "--parts",
        nargs="*",
        default=["pattern", "regret", "six", "faiss"],
        choices=["pattern", "regret", "six", "faiss"],
    )
    parser.add_argument("--faiss-seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    seeds = args.seeds or (1 if args.smoke else 5)
    pattern_seeds = args.pattern_seeds or seeds
    parts = args.parts
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = jobs_for(
        parts, seeds, pattern_seeds, args.smoke, args.faiss_seeds if not args.smoke else 1
    )
    runs = run_resumable(run_job, jobs, args.out, args.workers, key_fields=KEY)
    result = summarize(runs, args.smoke)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    plot(runs, result, args.out)
    return result


if __name__ == "__main__":
    main()
