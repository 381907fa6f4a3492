"""``python -m dsbo.optimize`` end to end: this tree against an earlier commit, interleaved.

The default command (Branin embedded in 20-D, MAP-SAAS + qLogNEI with BONSAI, 30 evaluations,
the report and the offline W&B run included) is the first thing a user runs; the speed issue
asks for at most 30 s on an idle 2-core machine (median of 5 whole runs). This script runs the
command from two source trees side by side: the working tree and ``--before`` (a commit,
checked out with ``git worktree`` in a temporary folder), alternating which goes first, each a
fresh process with the same Python. Per run it records the wall and CPU seconds, the BO loop's
fit and acquisition seconds (``history.csv``'s ``fit_time`` and ``acq_time``), the rest
(imports, building the campaign, W&B, the outputs), and the best value and how many
parameters it changes: a change that only moves work around must leave the search as it was.

Writes ``experiments/results/bench_optimize_command/{results.json,results.md}``.

    python experiments/bench_optimize_command.py                   # 5 repeats against 48e6c89
    python experiments/bench_optimize_command.py --before HEAD~3 --repeats 3
    python experiments/bench_optimize_command.py --smoke           # 1 repeat, 11 evaluations

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_startup import timed
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).parent / "results" / "bench_optimize_command"
ROOT = Path(__file__).resolve().parents[1]
#: The last commit before the command's speed work of the second session on issue 45.
BEFORE = "48e6c89"
ARMS = ("after", "before")


def checkout(rev: str, folder: Path) -> Path:
    """``rev`` checked out (detached) under ``folder`` with ``git worktree``."""
    tree = folder / "before"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev],
        check=True,
    )
    return tree


def check_imports_from(tree: Path) -> None:
    """``python -m`` run in ``tree`` must import that tree's dsbo (not the installed one)."""
    found = subprocess.run(
        [sys.executable, "-c", "import dsbo; print(dsbo.__file__)"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"in {tree} python imports dsbo from {found}")


def run_once(tree: Path, run_dir: Path, budget: int | None) -> dict[str, float]:
    """One whole ``python -m dsbo.optimize`` in ``tree``: seconds and what it found."""
    command = [
        sys.executable,
        "-m",
        "dsbo.optimize",
        "--run_dir",
        str(run_dir),
        "--progress",
        "false",
    ]
    if budget is not None:
        command += ["--budget", str(budget)]
    wall, cpu = timed(command, {**os.environ, "WANDB_SILENT": "true"}, cwd=tree)
    with (run_dir / "history.csv").open() as f:
        rows = list(csv.DictReader(f))
    fit = sum(float(r["fit_time"] or 0) for r in rows)
    acq = sum(float(r["acq_time"] or 0) for r in rows)
    info = json.loads((run_dir / "summary.json").read_text())
    return {
        "wall": wall,
        "cpu": cpu,
        "fit": fit,
        "acquisition": acq,
        "rest": wall - fit - acq,
        "best_value": info["best_value"],
        "num_changed_best": info.get("num_changed_best"),
    }


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(results: dict, out: Path) -> None:
    runs, cfg = results["runs"], results["config"]
    lines = [
        f"# `python -m dsbo.optimize` end to end (median of {cfg['repeats']} interleaved runs; "
        f"before: {cfg['before']}, after: {cfg['after']})",
        "",
        "| tree | wall s | CPU s | loop: fit s | loop: acquisition s | rest s | best values | parameters changed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        rs = runs[arm]
        best = sorted({round(r["best_value"], 6) for r in rs})
        changed = sorted({r["num_changed_best"] for r in rs})
        lines.append(
            f"| {arm} | {median(rs, 'wall'):.1f} | {median(rs, 'cpu'):.1f} | {median(rs, 'fit'):.1f} | "
            f"{median(rs, 'acquisition'):.1f} | {median(rs, 'rest'):.1f} | {', '.join(map(str, best))} | "
            f"{', '.join(map(str, changed))} |"
        )
    walls = {arm: [round(r["wall"], 1) for r in runs[arm]] for arm in ARMS}
    ratio = median(runs["after"], "wall") / median(runs["before"], "wall")
    lines += [
        "",
        f"- Whole runs, wall s: after {walls['after']}, before {walls['before']}; after / before {ratio:.2f}x.",
        f"- Machine: {cfg['machine']}; load average at the start {cfg['load_start']}, at the end {cfg['load_end']}.",
        f"- Budget: {cfg['budget'] or 'the default (30)'} evaluations.",
    ]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before", default=BEFORE, help=f"the commit to compare with (default {BEFORE})"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--budget", type=int, default=None, help="evaluations per run (default: the command's)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="1 repeat, 11 evaluations, --before HEAD"
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats, args.budget, args.before = 1, 11, "HEAD"
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    out = output_folder(args.out, args.smoke, RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="dsbo-bench-optimize-") as tmp:
        folder = Path(tmp)
        before = checkout(args.before, folder)
        try:
            trees = {"after": ROOT, "before": before}
            for tree in trees.values():
                check_imports_from(tree)
            load_start = os.getloadavg()[0]
            runs: dict[str, list] = {arm: [] for arm in ARMS}
            for r in range(args.repeats):
                order = ARMS if r % 2 == 0 else ARMS[::-1]
                for arm in order:
                    result = run_once(trees[arm], folder / f"{arm}-{r}", args.budget)
                    runs[arm].append(result)
                    print(
                        f"repeat {r} {arm}: {result['wall']:.1f} s, best {result['best_value']:.6g}",
                        flush=True,
                    )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False
            )
    results = {
        "config": {
            "before": args.before,
            "after": f"{head} (working tree)",
            "repeats": args.repeats,
            "budget": args.budget,
            "smoke": args.smoke,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
            "load_start": round(load_start, 2),
            "load_end": round(os.getloadavg()[0], 2),
        },
        "runs": runs,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    report(results, out)
    return results


if __name__ == "__main__":
    main()
