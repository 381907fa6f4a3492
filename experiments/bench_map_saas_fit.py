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

**Warm starts over a campaign** (``--section campaign``). A campaign refits after every new
point; this section replays ``--iterations`` fits on growing data (the data set's first
``n`` points, ``n = --start .. --start + iterations - 1``, so the 30-point data sets above are
among them) with each arm carrying its own fit state from fit to fit, as
:class:`~dsbo.campaign.Campaign` does, the arms interleaved at every fit (order alternating):

- **full**: MAP-SAAS with ``warm_start: false`` (the batched restarts at every fit);
- **warm**: MAP-SAAS's default warm starts (a full fit every ``restart_every`` fits, after
  ``restart_after_points`` new points, or after a drop in the log posterior);
- **gp-cold** / **gp-warm**: the plain ``gp`` without and with ``warm_start``.

It reports each arm's total fit seconds per data set, the ratio warm / full (median over data
sets), how each warm fit started, and whether the fit at ``n = 30`` and the last fit find
Branin's inputs. Writes ``campaign.json`` and ``campaign.md`` next to the section above.

    python experiments/bench_map_saas_fit.py --smoke   # seconds, both sections
    python experiments/bench_map_saas_fit.py           # Branin-50d, n = 30, 8 data sets, both sections

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
from botorch.models.map_saas import EnsembleMapSaasSingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from smoke_out import add_out_argument, output_folder
from torch import Tensor

from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate
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
#: The campaign section's arms: surrogate specs fitted with each arm's own previous fit state.
CAMPAIGN_ARMS = {
    "full": {"name": "map-saas", "warm_start": False},
    "warm": {"name": "map-saas"},
    "gp-cold": {"name": "gp"},
    "gp-warm": {"name": "gp", "warm_start": True},
}


def sequential_restarts(
    X: Tensor, Y: Tensor, bounds: Tensor, num_taus: int, restarts: int, seed: int
):
    """The reference: the same starts as :func:`fit_map_saas` (same taus, same random
    lengthscales from the same seed), each fitted as its own ``M``-member model."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        taus = draw_saas_taus(num_taus).to(X)

        def build() -> EnsembleMapSaasSingleTaskGP:
            return EnsembleMapSaasSingleTaskGP(
                X,
                Y,
                num_taus=num_taus,
                taus=taus,
                input_transform=Normalize(X.shape[-1], bounds=bounds),
                outcome_transform=_ensemble_outcome_transform(
                    Standardize(1), torch.Size([num_taus])
                ),
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
        X,
        Y,
        input_transform=Normalize(X.shape[-1], bounds=bounds),
        outcome_transform=Standardize(1),
        num_taus=num_taus,
        fit_restarts=0 if arm == "single" else restarts,
        seed=seed,
    )


def finds_relevant_inputs(model, relevant: tuple[int, ...]) -> bool:
    """The relevant inputs have the ``len(relevant)`` shortest lengthscales in every member."""
    members = model.batch_shape[0] if len(model.batch_shape) else 1
    lengthscale = _lengthscale_kernel(model).lengthscale.detach().reshape(members, -1)
    shortest = lengthscale.argsort(dim=-1)[:, : len(relevant)]
    return all(set(row.tolist()) == set(relevant) for row in shortest)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--datasets", type=int, default=None, help="data sets (seeds 0..k-1; default 8, smoke 1)"
    )
    parser.add_argument(
        "--points", type=int, default=None, help="observations per data set (default 30)"
    )
    parser.add_argument(
        "--restarts", type=int, default=4, help="fit_restarts (default 4, the surrogate's default)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed fits per arm and data set (default 3)"
    )
    parser.add_argument("--section", choices=("all", "restarts", "campaign"), default="all")
    parser.add_argument(
        "--start", type=int, default=None, help="campaign: points at the first fit (default 10)"
    )
    parser.add_argument("--iterations", type=int, default=None, help="campaign: fits (default 30)")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    if args.section in ("all", "restarts"):
        result = restarts_section(args)
    if args.section in ("all", "campaign"):
        result["campaign"] = campaign_section(args)
    return result


def dataset(problem, seed: int, points: int) -> tuple[Tensor, Tensor]:
    """``points`` uniform random points of ``problem`` (seed ``seed``; the first ``k`` rows
    are the ``k``-point data set of the same seed) and their objective values."""
    lower, upper = problem.bounds
    generator = torch.Generator().manual_seed(seed)
    X = lower + (upper - lower) * torch.rand(
        points, problem.dim, generator=generator, dtype=torch.double
    )
    return X, problem.evaluate(X)[:, :1]


def problem_and_datasets(args: argparse.Namespace) -> tuple[Any, int]:
    """Branin in 50 dimensions (15 for ``--smoke``) and the number of data sets (8; smoke 1)."""
    return get_problem("branin-15d" if args.smoke else "branin-50d"), args.datasets or (
        1 if args.smoke else 8
    )


def restarts_section(args: argparse.Namespace) -> dict[str, Any]:
    """Single start, sequential and batched restarts on the same data sets."""
    smoke = args.smoke
    problem, datasets = problem_and_datasets(args)
    points = args.points or (10 if smoke else 30)
    repeats = args.repeats or (1 if smoke else 3)
    restarts = 1 if smoke else args.restarts
    num_taus = 4
    rows = []
    for seed in range(datasets):
        X, Y = dataset(problem, seed, points)
        seconds: dict[str, list[float]] = {arm: [] for arm in ARMS}
        models: dict[str, Any] = {}
        for repeat in range(repeats):
            for arm in ARMS[repeat % 3 :] + ARMS[: repeat % 3]:  # rotate the order
                start = time.perf_counter()
                models[arm] = fit(arm, X, Y, problem.bounds, num_taus, restarts, seed)
                seconds[arm].append(time.perf_counter() - start)
        row: dict[str, Any] = {"seed": seed}
        for arm in ARMS:
            row[f"{arm}_seconds"] = statistics.median(seconds[arm])
            row[f"{arm}_log_posterior"] = (map_saas_member_objective(models[arm]) / points).tolist()
            row[f"{arm}_finds_inputs"] = finds_relevant_inputs(models[arm], problem.relevant_dims)
        row["batched_minus_sequential"] = max(
            b - s
            for b, s in zip(
                row["batched_log_posterior"], row["sequential_log_posterior"], strict=True
            )
        )
        row["sequential_minus_batched"] = max(
            s - b
            for b, s in zip(
                row["batched_log_posterior"], row["sequential_log_posterior"], strict=True
            )
        )
        rows.append(row)
        print(
            f"data set {seed}: "
            + ", ".join(
                f"{arm} {row[f'{arm}_seconds']:.1f}s (log posterior / n {min(row[f'{arm}_log_posterior']):.3f}"
                f"..{max(row[f'{arm}_log_posterior']):.3f}, finds inputs {row[f'{arm}_finds_inputs']})"
                for arm in ARMS
            ),
            flush=True,
        )

    result = {
        "smoke": smoke,
        "problem": problem.name,
        "points": points,
        "datasets": datasets,
        "restarts": restarts,
        "num_taus": num_taus,
        "repeats": repeats,
        "rows": rows,
        "median_batched_vs_sequential": statistics.median(
            r["batched_seconds"] / r["sequential_seconds"] for r in rows
        ),
        "median_batched_vs_single": statistics.median(
            r["batched_seconds"] / r["single_seconds"] for r in rows
        ),
        "finds_inputs": {arm: sum(r[f"{arm}_finds_inputs"] for r in rows) for arm in ARMS},
        "largest_member_gain_batched": max(r["batched_minus_sequential"] for r in rows),
        "largest_member_loss_batched": max(r["sequential_minus_batched"] for r in rows),
    }
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    return result


def campaign_section(args: argparse.Namespace) -> dict[str, Any]:
    """Each arm fitted at every ``n`` of a growing data set, carrying its own fit state."""
    smoke = args.smoke
    problem, datasets = problem_and_datasets(args)
    start = args.start or (6 if smoke else 10)
    iterations = args.iterations or (4 if smoke else 30)
    check_at = min(30, start + iterations - 1)
    rows = []
    for seed in range(datasets):
        X_all, Y_all = dataset(problem, seed, start + iterations - 1)
        states: dict[str, Any] = {arm: None for arm in CAMPAIGN_ARMS}
        row: dict[str, Any] = {"seed": seed}
        row.update({f"{arm}_seconds": 0.0 for arm in CAMPAIGN_ARMS})
        row.update({f"{arm}_starts": [] for arm in CAMPAIGN_ARMS})
        for i, n in enumerate(range(start, start + iterations)):
            order = list(CAMPAIGN_ARMS) if i % 2 == 0 else list(CAMPAIGN_ARMS)[::-1]
            for arm in order:
                spec = CAMPAIGN_ARMS[arm]
                torch.manual_seed(1000 * seed + n)  # as a campaign seeds torch before each fit
                t0 = time.perf_counter()
                model = fit_surrogate(
                    spec, X_all[:n], Y_all[:n], bounds=problem.bounds, previous_fits=states[arm]
                )
                row[f"{arm}_seconds"] += time.perf_counter() - t0
                states[arm] = model.fit_states
                row[f"{arm}_starts"].append(model.fit_state.start)
                for when, at in (("at_30", check_at), ("last", start + iterations - 1)):
                    if n == at:
                        row[f"{arm}_finds_inputs_{when}"] = finds_relevant_inputs(
                            model, problem.relevant_dims
                        )
                        if spec["name"] == "map-saas":
                            row[f"{arm}_log_posterior_{when}"] = (
                                map_saas_member_objective(model) / n
                            ).tolist()
        row["warm_vs_full"] = row["warm_seconds"] / row["full_seconds"]
        row["gp_warm_vs_cold"] = row["gp-warm_seconds"] / row["gp-cold_seconds"]
        rows.append(row)
        print(
            f"campaign {seed}: "
            + ", ".join(f"{arm} {row[f'{arm}_seconds']:.1f}s" for arm in CAMPAIGN_ARMS)
            + f"; warm / full {row['warm_vs_full']:.2f}x, warm finds inputs at n={check_at} "
            f"{row['warm_finds_inputs_at_30']} (full {row['full_finds_inputs_at_30']})",
            flush=True,
        )
    result = {
        "smoke": smoke,
        "problem": problem.name,
        "start": start,
        "iterations": iterations,
        "check_at": check_at,
        "datasets": datasets,
        "rows": rows,
        "median_warm_vs_full": statistics.median(r["warm_vs_full"] for r in rows),
        "median_gp_warm_vs_cold": statistics.median(r["gp_warm_vs_cold"] for r in rows),
        "finds_inputs": {
            f"{arm}_{when}": sum(r[f"{arm}_finds_inputs_{when}"] for r in rows)
            for arm in CAMPAIGN_ARMS
            for when in ("at_30", "last")
        },
        "warm_starts": {
            arm: sum(s == "warm" for r in rows for s in r[f"{arm}_starts"]) for arm in CAMPAIGN_ARMS
        },
    }
    (args.out / "campaign.json").write_text(json.dumps(result, indent=1))
    write_campaign_markdown(result, args.out / "campaign.md")
    return result


def write_campaign_markdown(result: dict[str, Any], path: Path) -> None:
    fits = result["datasets"] * result["iterations"]
    lines = [
        f"# MAP-SAAS warm starts over a campaign ({result['problem']}, fits at n = {result['start']}.."
        f"{result['start'] + result['iterations'] - 1} uniform random points; data sets run: {result['datasets']}; "
        "arms interleaved at every fit, one thread)" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| data set | full s | warm s | warm / full | gp-cold s | gp-warm s | gp warm / cold | finds the relevant "
        f"inputs at n = {result['check_at']} (full / warm / gp-cold / gp-warm) | at the last fit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['seed']} | {r['full_seconds']:.1f} | {r['warm_seconds']:.1f} | {r['warm_vs_full']:.2f} | "
            f"{r['gp-cold_seconds']:.1f} | {r['gp-warm_seconds']:.1f} | {r['gp_warm_vs_cold']:.2f} | "
            + " / ".join("yes" if r[f"{a}_finds_inputs_at_30"] else "no" for a in CAMPAIGN_ARMS)
            + " | "
            + " / ".join("yes" if r[f"{a}_finds_inputs_last"] else "no" for a in CAMPAIGN_ARMS)
            + " |"
        )
    found, warm = result["finds_inputs"], result["warm_starts"]
    starts: dict[str, int] = {}
    for r in result["rows"]:
        for s in r["warm_starts"]:
            key = s if not s.startswith("log posterior") else "log posterior fell"
            starts[key] = starts.get(key, 0) + 1
    lines += [
        "",
        f"- Fit time over the campaign, median over data sets: MAP-SAAS warm / full {result['median_warm_vs_full']:.2f}x; "
        f"gp warm / cold {result['median_gp_warm_vs_cold']:.2f}x.",
        f"- Warm fits: MAP-SAAS {warm['warm']} of {fits}, gp {warm['gp-warm']} of {fits}. How the MAP-SAAS warm arm's "
        "fits started: "
        + ", ".join(f"{k}: {v}" for k, v in sorted(starts.items(), key=lambda kv: -kv[1]))
        + ".",
        f"- Finds the relevant inputs at n = {result['check_at']}: "
        + ", ".join(f"{a} {found[f'{a}_at_30']}" for a in CAMPAIGN_ARMS)
        + f" of {result['datasets']}; at the last fit: "
        + ", ".join(f"{a} {found[f'{a}_last']}" for a in CAMPAIGN_ARMS)
        + ".",
    ]
    path.write_text("\n".join(lines) + "\n")


def write_markdown(result: dict[str, Any], path: Path) -> None:
    lines = [
        f"# MAP-SAAS fit restarts: cost and value ({result['problem']}, {result['points']} uniform random points, "
        f"M = {result['num_taus']}, fit_restarts = {result['restarts']}; data sets run: {result['datasets']}, "
        f"median of {result['repeats']} rotated repeats each, one thread)"
        + (" (smoke)" if result["smoke"] else ""),
        "",
        "| data set | single s | sequential s | batched s | log posterior / n, worst member (single / sequential / "
        "batched) | finds the relevant inputs (single / sequential / batched) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['seed']} | {r['single_seconds']:.2f} | {r['sequential_seconds']:.2f} | {r['batched_seconds']:.2f} | "
            + " / ".join(f"{min(r[f'{a}_log_posterior']):.3f}" for a in ARMS)
            + " | "
            + " / ".join("yes" if r[f"{a}_finds_inputs"] else "no" for a in ARMS)
            + " |"
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
