"""How big the HTML report is and how long it takes to build, for a 200-trial, 20-parameter run.

The run: ``dsbo.minimize`` of a cheap function over 20 named parameters (8 linear floats, 4
log-scale floats, 4 integers, 3 categoricals and one conditional float), 200 trials proposed
by Sobol (so that building the run costs nothing), 10 of them failing. Its report is then
built ``--repeats`` times for each surrogate a run might use, the arms interleaved so that load
affects them alike: the exact GP and MAP-SAAS (dsbo's default). Each build is timed in two
parts, the data (the history and the surrogate fit, importance and slices:
:func:`dsbo.analysis.report_data.from_campaign`) and the page (plotly figures and the HTML:
:func:`dsbo.analysis.html_report.render`), and the file size is recorded.

Usage::

    python experiments/bench_report.py            # 200 trials, 20 parameters, 5 repeats
    python experiments/bench_report.py --smoke    # 30 trials, 1 repeat

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import torch
from smoke_out import add_out_argument, output_folder

import dsbo
from dsbo.analysis.html_report import render
from dsbo.analysis.report_data import from_campaign
from dsbo.surrogates import SurrogateSpec

OUT = Path(__file__).parent / "results" / "bench_report"
SURROGATES = ("gp", "map-saas")


def space() -> dict:
    params: dict = {f"x{i}": dsbo.Float(0.0, 1.0) for i in range(8)}
    params.update({f"rate{i}": dsbo.Float(1e-5, 1e-1, log=True) for i in range(4)})
    params.update({f"n{i}": dsbo.Int(1, 64) for i in range(4)})
    params.update({"opt": dsbo.Choice(["adam", "sgd", "rmsprop"]), "act": dsbo.Choice(["relu", "gelu"]),
                   "norm": dsbo.Choice(["batch", "layer", "none"]),
                   "momentum": dsbo.Float(0.0, 0.99, when={"opt": "sgd"})})  # fmt: skip
    return params


def objective(p: dict) -> float:
    if p["x7"] > 0.95:
        raise RuntimeError("diverged")  # about 5% of the trials fail
    value = (p["x0"] - 0.3) ** 2 + 0.5 * (p["x1"] - 0.7) ** 2 + 0.1 * (math.log10(p["rate0"]) + 3) ** 2
    return value + 0.01 * p["n0"] + (0.3 if p["opt"] == "sgd" else 0.0)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    add_out_argument(parser, OUT)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, OUT)
    trials, repeats = (30, 1) if args.smoke else (args.trials, args.repeats)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    result = dsbo.minimize(objective, space(), budget=trials, acquisition="sobol", seed=0)
    campaign = result.campaign
    rows = []
    for repeat in range(repeats):
        for surrogate in SURROGATES:
            campaign.surrogate = SurrogateSpec.coerce(surrogate)
            t0 = time.perf_counter()
            data = from_campaign(campaign)
            t1 = time.perf_counter()
            page = render(data)
            t2 = time.perf_counter()
            path = args.out / f"report-{surrogate}.html"
            path.write_text(page, encoding="utf-8")
            rows.append({"repeat": repeat, "surrogate": surrogate, "data_s": t1 - t0, "page_s": t2 - t1,
                         "total_s": t2 - t0, "bytes": path.stat().st_size,
                         "top_parameters": data.importance[0].ranking[:3] if data.importance else []})  # fmt: skip
            print(json.dumps(rows[-1]))
    summary = {}
    for surrogate in SURROGATES:
        mine = [r for r in rows if r["surrogate"] == surrogate]
        summary[surrogate] = {k: statistics.median(r[k] for r in mine) for k in ("data_s", "page_s", "total_s", "bytes")}
    info = {"trials": trials, "parameters": len(space()), "failed": result.num_failed, "repeats": repeats,
            "threads": 1, "rows": rows, "median": summary}  # fmt: skip
    (args.out / "results.json").write_text(json.dumps(info, indent=2))
    lines = [
        f"# HTML report: size and build time ({trials} trials, {len(space())} parameters, "
        f"{result.num_failed} failed; median of {repeats} interleaved repeats, 1 thread)",
        "",
        "| surrogate | data: history + fit + importance + slices (s) | page: figures + HTML (s) | total (s) | size (MB) |",
        "|---|---|---|---|---|",
    ]
    for surrogate, m in summary.items():
        lines.append(f"| {surrogate} | {m['data_s']:.2f} | {m['page_s']:.2f} | {m['total_s']:.2f} | {m['bytes'] / 1e6:.2f} |")
    lines += ["", "Size in MB of 10^6 bytes; plotly.js, embedded once, is 4.82 of them."]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    for surrogate in SURROGATES:  # the pages are 5 MB each: kept out of the repository
        (args.out / f"report-{surrogate}.html").unlink()
    return info


if __name__ == "__main__":
    main()
