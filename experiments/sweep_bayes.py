"""Experiment: ``method: bayes`` (a dsbo campaign) against ``method: random`` of the same size.

The sweep ``configs/sweeps/simple-smb-bayes.yaml`` (SimpleSMB on Branin, gamma uniform in
[0.5, 5], lr log-uniform in [1e-3, 5e-2], 200 epochs, minimize ``val_mse``) runs as written
(``method: bayes``: MAP-SAAS + qLogNEI, 4 Sobol runs, BONSAI toward the training config's
defaults), and as ``method: random`` over the same parameters (the file with its method
switched and the ``dsbo:`` key dropped), for each seed, with the same count and the same
``--workers``. Every run is a real ``python -m dsbo.train fit`` subprocess. Reported per seed
and method: the best ``val_mse`` after all runs and the best-so-far trace.

Writes ``experiments/results/sweep_bayes/{results.json, results.md, sweep_bayes.png}``.

    python experiments/sweep_bayes.py                 # seeds 0 1 2, 12 runs each, 2 workers
    python experiments/sweep_bayes.py --smoke         # 1 seed, 1 run of 2 epochs per method

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import yaml  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.runtime.sweep import run_sweep  # noqa: E402
from dsbo.runtime.sweep_config import parse_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "configs" / "sweeps" / "simple-smb-bayes.yaml"
RESULTS = ROOT / "experiments" / "results" / "sweep_bayes"


def variants(raw: dict, smoke: bool) -> dict[str, dict]:
    """The bayes sweep as written and its random twin (same parameters)."""
    bayes = copy.deepcopy(raw)
    if smoke:  # a few epochs; the one run is a Sobol point (the plumbing, not the model)
        bayes["parameters"]["trainer.max_epochs"] = {"value": 2}
        bayes["dsbo"]["n_init"] = 1
    random = copy.deepcopy(bayes)
    random["method"] = "random"
    random.pop("dsbo")
    random["name"] = raw["name"].replace("bayes", "random")
    return {"bayes": bayes, "random": random}


def best_trace(runs: list[dict]) -> list[float | None]:
    best, trace = math.inf, []
    for r in sorted(runs, key=lambda r: int(r["run"].split("-")[1])):
        if r["metric"] is not None:
            best = min(best, r["metric"])
        trace.append(None if math.isinf(best) else best)
    return trace


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--workers", type=int, default=2)
    add_out_argument(parser, RESULTS)
    parser.add_argument("--keep", default=None, help="keep the sweep directories here")
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    if args.smoke:
        args.seeds, args.count = args.seeds[:1], 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raw = yaml.safe_load(SWEEP.read_text())
    sweeps = {
        name: parse_sweep(r, source=f"{SWEEP.name} ({name})")
        for name, r in variants(raw, args.smoke).items()
    }
    rows = []
    cwd = Path.cwd()
    os.chdir(ROOT)  # the command names configs/train/... relative to the repository
    try:
        with tempfile.TemporaryDirectory(prefix="sweep-bayes-") as tmp:
            base = Path(args.keep) if args.keep else Path(tmp)
            for seed in args.seeds:
                for method, sweep in sweeps.items():  # interleaved: bayes then random, per seed
                    info = run_sweep(
                        sweep,
                        base / f"{method}-seed{seed}",
                        count=args.count,
                        seed=seed,
                        progress=False,
                        source=str(SWEEP),
                        workers=args.workers,
                    )
                    runs = info["runs"]
                    metrics = [r["metric"] for r in runs if r["metric"] is not None]
                    rows.append(
                        {
                            "method": method,
                            "seed": seed,
                            "runs": len(runs),
                            "finished": sum(r["status"] == "finished" for r in runs),
                            "best": min(metrics) if metrics else None,
                            "trace": best_trace(runs),
                            "params": [r["params"] for r in runs],
                            "metrics": [r["metric"] for r in runs],
                            "seconds": sum(r["seconds"] for r in runs),
                        }
                    )
                    print(
                        json.dumps(
                            {k: rows[-1][k] for k in ("method", "seed", "finished", "best")}
                        ),
                        flush=True,
                    )
    finally:
        os.chdir(cwd)
    result = {
        "smoke": args.smoke,
        "sweep": str(SWEEP.relative_to(ROOT)),
        "count": args.count,
        "workers": args.workers,
        "seeds": args.seeds,
        "rows": rows,
    }
    (out / "results.json").write_text(json.dumps(result, indent=2))
    plot(rows, out / "sweep_bayes.png")
    write_markdown(result, out / "results.md")
    return result


def plot(rows: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        xs = [i + 1 for i, v in enumerate(r["trace"]) if v is not None]
        ys = [v for v in r["trace"] if v is not None]
        ax.plot(
            xs,
            ys,
            color="C0" if r["method"] == "bayes" else "C1",
            alpha=0.8,
            drawstyle="steps-post",
            label=f"{r['method']} seed {r['seed']}",
        )
    ax.set_xlabel("run")
    ax.set_ylabel("best val_mse so far")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_markdown(result: dict, path: Path) -> None:
    lines = [
        "# sweep_bayes",
        "",
        f"`{result['sweep']}` as `method: bayes` (dsbo campaign) and as `method: random` over the same parameters, "
        f"{result['count']} runs each, `--workers {result['workers']}`, seeds {result['seeds']}; every run a real "
        "`python -m dsbo.train fit`. Metric: best `val_mse` after all runs (lower is better)."
        + (
            " **Smoke mode**: 1 run of 2 epochs per method, one seed; says nothing about quality."
            if result["smoke"]
            else ""
        ),
        "",
        "| seed | bayes best val_mse | random best val_mse | bayes better |",
        "|---|---|---|---|",
    ]
    wins = []
    for seed in result["seeds"]:
        b = next(r for r in result["rows"] if r["seed"] == seed and r["method"] == "bayes")
        r = next(r for r in result["rows"] if r["seed"] == seed and r["method"] == "random")
        better = b["best"] is not None and (r["best"] is None or b["best"] < r["best"])
        wins.append(better)
        fmt = lambda v: "-" if v is None else f"{v:.5f}"  # noqa: E731
        lines.append(
            f"| {seed} | {fmt(b['best'])} | {fmt(r['best'])} | {'yes' if better else 'no'} |"
        )
    for method in ("bayes", "random"):
        bests = [
            r["best"] for r in result["rows"] if r["method"] == method and r["best"] is not None
        ]
        if bests:
            lines.append(
                f"\n{method}: median best {statistics.median(bests):.5f} over {len(bests)} seed(s)"
            )
    lines.append(f"\nbayes beat random in {sum(wins)} of {len(wins)} seed(s).")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
