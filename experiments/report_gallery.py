"""A gallery of HTML run reports (``dsbo.analysis.html_report``): five small real runs, each
report rendered in headless Chromium and saved as a full-page screenshot.

Runs (each a few seconds; a GP surrogate and a small acquisition optimizer):

- ``sparse``: single objective, sparsity-aware: ``branin-6d`` (Branin in 2 of 6 coordinates)
  with qLogNEI and BONSAI post-processing; evaluations with ``x0 > 0.75`` raise (failed trials);
- ``mobo``: two objectives, ``branin-currin`` with ``mobo-rs`` and a preference box prior;
- ``contextual``: ``contextual-hartmann4`` with the ``sadcbo`` context policy and a cost budget;
- ``cost``: ``cost-branin`` with ``cost-ids`` and a budget in cost units (``budget_cost``);
- ``mixed``: ``dsbo.minimize`` over a log-scale float, an int, a categorical and a conditional
  float (exists only for ``optimizer=sgd``); the function raises for some inputs; written with
  ``dsbo.report(result)`` next to its store.

Writes ``<run>.html`` (not committed: ~5 MB each, plotly.js embedded) and ``<run>.png`` (the
whole page, 1300 px wide) per run into ``--out``; the screenshots need ``chromium`` and
``chromedriver`` (``tests/browser.py``; ``--no_screenshots`` skips them).

    python experiments/report_gallery.py            # ~1 min
    python experiments/report_gallery.py --smoke    # the tiniest budgets

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from smoke_out import add_out_argument, output_folder

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.problems import get_problem

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "report"
#: Screenshot width in CSS pixels (the report's own max-width).
WIDTH = 1300
#: Small acquisition optimization: seconds per run.
FAST = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=30, batch_limit=2, mc_samples=64)
#: MOBO-RS's preference box on branin-currin (maximized: -Branin, -Currin).
PREFERENCE_BOX = [[-30.0, -2.0], [-8.0, -4.0]]
#: Budgets: full / smoke (trials, or cost units for the cost-budgeted runs).
BUDGETS = {
    "sparse": (14, 9),
    "mobo": (14, 8),
    "contextual": (16.0, 11.0),
    "cost": (300.0, 120.0),
    "mixed": (14, 8),
}


def _store(work: Path, name: str) -> Path:
    (work / name).mkdir(parents=True, exist_ok=True)
    return work / name / "trials.sqlite"


def failing_below(problem: Any, dim: int, threshold: float) -> Callable[[Any], Any]:
    """``problem`` as an evaluator that raises for ``x[dim] > threshold`` (a failed trial)."""

    def evaluate(x: Any) -> Any:
        if float(torch.as_tensor(x).reshape(-1)[dim]) > threshold:
            raise RuntimeError(f"simulated crash: x{dim} > {threshold}")
        return problem(x)

    return evaluate


def build_sparse(work: Path, smoke: bool = False, seed: int = 0) -> Campaign:
    """Branin in 2 of 6 coordinates, qLogNEI + BONSAI; ``x0 > 0.75`` fails (8 Sobol points
    stratify x0 into eighths: two of them fail)."""
    problem = get_problem("branin-6d")
    budget = BUDGETS["sparse"][smoke]
    campaign = Campaign(
        problem,
        surrogate="gp",
        acquisition="qlognei",
        postprocess={"bonsai": {}},
        budget=budget,
        n_init=8,
        seed=seed,
        store=_store(work, "sparse"),
        optimizer=FAST,
        evaluator=failing_below(problem, 0, 0.75),
        dry_run=False,
    )
    campaign.run()
    return campaign


def build_mobo(work: Path, smoke: bool = False, seed: int = 0) -> Campaign:
    """Branin-Currin with MOBO-RS (Chebyshev, Thompson sampling) and a preference box."""
    acquisition = {
        "name": "mobo-rs",
        "scalarization": "chebyshev",
        "strategy": "ts",
        "prior": {"box": PREFERENCE_BOX},
    }
    campaign = Campaign(
        get_problem("branin-currin"),
        surrogate="gp",
        acquisition=acquisition,
        budget=BUDGETS["mobo"][smoke],
        n_init=6,
        seed=seed,
        store=_store(work, "mobo"),
        optimizer=FAST,
        dry_run=False,
    )
    campaign.run()
    return campaign


def build_contextual(work: Path, smoke: bool = False, seed: int = 0) -> Campaign:
    """Contextual Hartmann-4 (2 relevant + 3 noise contexts), SADCBO, a cost budget."""
    campaign = Campaign(
        get_problem("contextual-hartmann4"),
        surrogate="gp",
        n_init=8,
        budget_cost=BUDGETS["contextual"][smoke],
        seed=seed,
        optimizer=FAST,
        contexts={"policy": "sadcbo", "options": {"q_points": 1}},
        store=_store(work, "contextual"),
        dry_run=False,
    )
    campaign.run()
    return campaign


def build_cost(work: Path, smoke: bool = False, seed: int = 0) -> Campaign:
    """Cost-Branin (cost ``exp(l)``) with CostIDS and a budget in cost units."""
    campaign = Campaign(
        get_problem("cost-branin"),
        surrogate="gp",
        acquisition={"name": "cost-ids", "rho": 2.0},
        budget_cost=BUDGETS["cost"][smoke],
        n_init=4,
        seed=seed,
        store=_store(work, "cost"),
        optimizer=FAST,
        dry_run=False,
    )
    campaign.run()
    return campaign


def mixed_space() -> dict[str, Any]:
    import dsbo

    return {
        "lr": dsbo.Float(1e-4, 1e-1, log=True),
        "layers": dsbo.Int(1, 6),
        "optimizer": dsbo.Choice(["adam", "sgd", "rmsprop"]),
        "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
    }


def mixed_objective(params: dict[str, Any]) -> float:
    """A training-loss-shaped function; diverges (raises) for large learning rates with few layers."""
    lr, layers, opt = params["lr"], params["layers"], params["optimizer"]
    if lr > 0.03 and layers <= 2:
        raise FloatingPointError(f"loss diverged (lr={lr:.3g}, layers={layers})")
    best_lr = {"adam": -3.0, "sgd": -1.5, "rmsprop": -2.5}[opt]
    loss = (
        (math.log10(lr) - best_lr) ** 2
        + 0.1 * (layers - 4) ** 2
        + {"adam": 0.0, "sgd": 0.2, "rmsprop": 0.4}[opt]
    )
    if opt == "sgd":
        loss += (params["momentum"] - 0.9) ** 2
    return loss


def build_mixed(work: Path, smoke: bool = False, seed: int = 0) -> Any:
    """``dsbo.minimize`` on the mixed space (a result with a store on disk)."""
    import dsbo

    return dsbo.minimize(
        mixed_objective,
        mixed_space(),
        budget=BUDGETS["mixed"][smoke],
        surrogate="gp",
        n_init=6,
        seed=seed,
        store=_store(work, "mixed"),
        optimizer=FAST,
    )


BUILDERS = {
    "sparse": build_sparse,
    "mobo": build_mobo,
    "contextual": build_contextual,
    "cost": build_cost,
    "mixed": build_mixed,
}


def write(name: str, run: Any, out: Path) -> Path:
    """The report of ``run`` as ``out/<name>.html`` (the mixed run through ``dsbo.report``)."""
    import dsbo

    if name == "mixed":
        written = dsbo.report(run)  # next to the store
        target = out / f"{name}.html"
        target.write_bytes(written.read_bytes())
        return target
    from dsbo.analysis.html_report import write_report

    return write_report(run, out / f"{name}.html")


def screenshot(html: Path, png: Path) -> dict[str, Any]:
    """Render ``html`` in headless Chromium, save the full page as ``png``; what the page showed.

    The page is loaded a second time with a viewport as tall as the page: a capture beyond
    the viewport resizes the page while capturing, and plotly's responsive figures redraw
    then (the parallel coordinates came out half drawn)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from browser import shared_browser

    browser = shared_browser()
    page = browser.open(html, width=WIDTH)
    tall = browser.open(html, width=WIDTH, height=page.scroll_height, settle_s=1.0)
    browser.screenshot(png, width=WIDTH)
    return {
        "plotly_divs": tall.plotly_divs,
        "rendered": tall.plotly_rendered,
        "errors": page.errors + tall.errors,
        "height": tall.scroll_height,
        "load_s": round(page.load_s, 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_out_argument(parser, RESULTS)
    parser.add_argument("--smoke", action="store_true", help="the tiniest budgets")
    parser.add_argument("--runs", nargs="+", choices=list(BUILDERS), default=list(BUILDERS))
    parser.add_argument("--no_screenshots", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in args.runs:
            start = time.perf_counter()
            run = BUILDERS[name](Path(tmp), args.smoke, args.seed)
            built = time.perf_counter() - start
            html = write(name, run, args.out)
            row = {
                "run_s": round(built, 1),
                "report_s": round(time.perf_counter() - start - built, 1),
            }
            campaign = getattr(run, "campaign", run)
            statuses = campaign.result().history["status"].value_counts().to_dict()
            row["trials"] = statuses
            if not args.no_screenshots:
                row.update(screenshot(html, args.out / f"{name}.png"))
            campaign.store.close()
            rows[name] = row
            print(name, json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    main()
