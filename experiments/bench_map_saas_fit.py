"""Cost and value of MAP-SAAS fit restarts, as ratios measured side by side in one run.

The MAP-SAAS fit (:func:`dsbo.surrogates.gp.fit_map_saas`) starts from BoTorch's default
initialization plus ``fit_restarts`` random lengthscale starts and one start from the best
member, and keeps each ensemble member's best start by its own log posterior. This bench
fits, on the same data sets (``n`` uniform random points of Branin embedded in ``d``
dimensions, one per seed; one torch thread), three ways, in rotating order:

- **single**: the default start only (``fit_restarts: 0``), BoTorch's own fit;
- **sequential**: the restarts fitted one after another, one ``M``-member model per start
  (dsbo's procedure before the batching, kept here as the reference);
- **batched**: the default (the default and the random starts fitted together as one model
  of ``M (fit_restarts + 1)`` members, then the start from the best member).

It reports the seconds of each (median over ``--repeats``), the per-point log posterior of
each member (``map_saas_member_objective / n``), and whether the fit *finds Branin's inputs*:
the two relevant inputs have the two shortest lengthscales in every member. Writes
``experiments/results/bench_map_saas_fit/{results.json,results.md}``.

    python experiments/bench_map_saas_fit.py --smoke   # seconds
    python experiments/bench_map_saas_fit.py           # Branin-50d, n = 30, 8 data sets
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
from botorch.models.map_saas import EnsembleMapSaasSingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from torch import Tensor

from dsbo.problems import get_problem
from dsbo.surrogates.gp import (
    _copy_members,
    _ensemble_outcome_transform,
    _fit_exact_mll,
    _lengthscale_kernel,
    best_member_lengthscales,
    draw_saas_taus,
    fit_map_saas,
    map_saas_member_objective,
)

RESULTS = Path(__file__).parent / "results" / "bench_map_saas_fit"
ARMS = ("single", "sequential", "batched")


def sequential_restarts(X: Tensor, Y: Tensor, bounds: Tensor, num_taus: int, restarts: int, seed: int):
    """The reference: the same starts as :func:`fit_map_saas` (same taus, same random
    lengthscales from the same seed), each fitted as its own ``M``-member model."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        taus = draw_saas_taus(num_taus).to(X)

        def build() -> EnsembleMapSaasSingleTaskGP:
            return EnsembleMapSaasSingleTaskGP(
                X, Y, num_taus=num_taus, taus=taus, input_transform=Normalize(X.shape[-1], bounds=bounds),
                outcome_transform=_ensemble_outcome_transform(Standardize(1), torch.Size([num_taus])),
            )

        members = torch.arange(num_taus)
        model = _fit_exact_mll(build())
        best = map_saas_member_objective(model)
        for restart in range(restarts + 1):
            candidate = build()
            kernel = _lengthscale_kernel(candidate)
            if restart < restarts:
                kernel.lengthscale = torch.exp(3.0 * torch.rand_like(kernel.lengthscale))
            else:
                kernel.lengthscale = best_member_lengthscales(model, best)
            candidate = _fit_exact_mll(candidate)
            objective = map_saas_member_objective(candidate)
            better = objective > best
            _copy_members(model, candidate, members[better], members[better])
            best = torch.where(better, objective, best)
        return model


def fit(arm: str, X: Tensor, Y: Tensor, bounds: Tensor, num_taus: int, restarts: int, seed: int):
    if arm == "sequential":
        return sequential_restarts(X, Y, bounds, num_taus, restarts, seed)
    return fit_map_saas(
        X, Y, input_transform=Normalize(X.shape[-1], bounds=bounds), outcome_transform=Standardize(1),
        num_taus=num_taus, fit_restarts=0 if arm == "single" else restarts, seed=seed,
    )


def finds_relevant_inputs(model, relevant: tuple[int, ...]) -> bool:
    """The relevant inputs have the ``len(relevant)`` shortest lengthscales in every member."""
    lengthscale = _lengthscale_kernel(model).lengthscale.detach().reshape(model.batch_shape[0], -1)
    shortest = lengthscale.argsort(dim=-1)[:, : len(relevant)]
    return all(set(row.tolist()) == set(relevant) for row in shortest)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--datasets", type=int, default=None, help="data sets (seeds 0..k-1; default 8, smoke 1)")
    parser.add_argument("--points", type=int, default=None, help="observations per data set (default 30)")
    parser.add_argument("--restarts", type=int, default=4, help="fit_restarts (default 4, the surrogate's default)")
    parser.add_argument("--repeats", type=int, default=None, help="timed fits per arm and data set (default 3)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")

    smoke = args.smoke
    problem = get_problem("branin-15d" if smoke else "branin-50d")
    datasets = args.datasets or (1 if smoke else 8)
    points = args.points or (10 if smoke else 30)
    repeats = args.repeats or (1 if smoke else 3)
    restarts = 1 if smoke else args.restarts
    num_taus = 4
    lower, upper = problem.bounds
    rows = []
    for seed in range(datasets):
        generator = torch.Generator().manual_seed(seed)
        X = lower + (upper - lower) * torch.rand(points, problem.dim, generator=generator, dtype=torch.double)
        Y = problem.evaluate(X)[:, :1]
        seconds: dict[str, list[float]] = {arm: [] for arm in ARMS}
        models: dict[str, Any] = {}
        for repeat in range(repeats):
            for arm in ARMS[repeat % 3:] + ARMS[: repeat % 3]:  # rotate the order
                start = time.perf_counter()
                models[arm] = fit(arm, X, Y, problem.bounds, num_taus, restarts, seed)
                seconds[arm].append(time.perf_counter() - start)
        row: dict[str, Any] = {"seed": seed}
        for arm in ARMS:
            row[f"{arm}_seconds"] = statistics.median(seconds[arm])
            row[f"{arm}_log_posterior"] = (map_saas_member_objective(models[arm]) / points).tolist()
            row[f"{arm}_finds_inputs"] = finds_relevant_inputs(models[arm], problem.relevant_dims)
        row["batched_minus_sequential"] = max(
            b - s for b, s in zip(row["batched_log_posterior"], row["sequential_log_posterior"], strict=True)
        )
        row["sequential_minus_batched"] = max(
            s - b for b, s in zip(row["batched_log_posterior"], row["sequential_log_posterior"], strict=True)
        )
        rows.append(row)
        print(f"data set {seed}: " + ", ".join(
            f"{arm} {row[f'{arm}_seconds']:.1f}s (log posterior / n {min(row[f'{arm}_log_posterior']):.3f}"
            f"..{max(row[f'{arm}_log_posterior']):.3f}, finds inputs {row[f'{arm}_finds_inputs']})" for arm in ARMS
        ), flush=True)

    result = {
        "smoke": smoke, "problem": problem.name, "points": points, "datasets": datasets, "restarts": restarts,
        "num_taus": num_taus, "repeats": repeats, "rows": rows,
        "median_batched_vs_sequential": statistics.median(r["batched_seconds"] / r["sequential_seconds"] for r in rows),
        "median_batched_vs_single": statistics.median(r["batched_seconds"] / r["single_seconds"] for r in rows),
        "finds_inputs": {arm: sum(r[f"{arm}_finds_inputs"] for r in rows) for arm in ARMS},
        "largest_member_gain_batched": max(r["batched_minus_sequential"] for r in rows),
        "largest_member_loss_batched": max(r["sequential_minus_batched"] for r in rows),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    return result


def write_markdown(result: dict[str, Any], path: Path) -> None:
    lines = [
        f"# MAP-SAAS fit restarts: cost and value ({result['problem']}, {result['points']} uniform random points, "
        f"M = {result['num_taus']}, fit_restarts = {result['restarts']}; data sets run: {result['datasets']}, "
        f"median of {result['repeats']} rotated repeats each, one thread)" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| data set | single s | sequential s | batched s | log posterior / n, worst member (single / sequential / "
        "batched) | finds the relevant inputs (single / sequential / batched) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['seed']} | {r['single_seconds']:.2f} | {r['sequential_seconds']:.2f} | {r['batched_seconds']:.2f} | "
            + " / ".join(f"{min(r[f'{a}_log_posterior']):.3f}" for a in ARMS) + " | "
            + " / ".join("yes" if r[f"{a}_finds_inputs"] else "no" for a in ARMS) + " |"
        )
    found = result["finds_inputs"]
    lines += [
        "",
        f"- Time, median over data sets: batched / sequential {result['median_batched_vs_sequential']:.2f}x, "
        f"batched / single start {result['median_batched_vs_single']:.2f}x.",
        f"- Finds the relevant inputs: single {found['single']}, sequential {found['sequential']}, batched "
        f"{found['batched']} of {result['datasets']} data sets.",
        "- Largest difference in any member's log posterior / n, batched minus sequential: "
        f"{result['largest_member_gain_batched']:.1e} above, {result['largest_member_loss_batched']:.1e} below "
        "(same starts, so the batched fit reaches the sequential fits' optima).",
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
