"""The answers of ``python -m dsbo.optimize`` (the default command) over seeds, per setting.

The default command (Branin embedded in 20-D, MAP-SAAS + qLogNEI with BONSAI pruning toward
the box centre, 10 Sobol points + 20 BO iterations) is what a user runs first. Its answer is
good when the best value is near Branin's optimum (-0.397887) and the best point changes only
the two inputs Branin reads (``x4``, ``x5``; every other input is ignored by the function, so
changing it from the default only makes the answer harder to read). This script runs the
command for each seed and each named setting (``--arm NAME=OPTIONS``, the options passed as
``--surrogate.options``), each a fresh process with one torch thread, and reports per seed the
best value and which inputs it changes, and per arm the mean best value, how many seeds'
best points change only relevant inputs, and the median fit and acquisition seconds per BO
iteration (these last two are only comparable between arms run on an equally loaded machine).

Writes ``experiments/results/default_command/{runs.jsonl,results.json,results.md}``; finished
(arm, seed) runs are kept in ``runs.jsonl`` and a rerun resumes.

    python experiments/default_command.py --seeds 8                  # the default and its settings
    python experiments/default_command.py --seeds 8 --arm default= --arm every2='{restart_every: 2}'
    python experiments/default_command.py --smoke                    # 1 seed, 12 evaluations

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).parent / "results" / "default_command"
ROOT = Path(__file__).resolve().parents[1]
#: The inputs Branin reads in the default problem (``branin-20d``).
RELEVANT = frozenset({"x4", "x5"})
OPTIMUM = -0.397887
#: name -> ``--surrogate.options`` (YAML); empty: the command as it is.
DEFAULT_ARMS = {"default": ""}


def parse_arm(text: str) -> tuple[str, str]:
    name, sep, options = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            f"--arm must be NAME=OPTIONS (OPTIONS may be empty), got {text!r}"
        )
    return name, options


def run_one(arm: str, options: str, seed: int, budget: int | None, folder: Path) -> dict:
    run_dir = folder / f"{arm}-{seed}"
    command = [
        sys.executable,
        "-m",
        "dsbo.optimize",
        "--seed",
        str(seed),
        "--run_dir",
        str(run_dir),
        "--progress",
        "false",
        "--wandb.mode",
        "disabled",
    ]
    if options:
        command += ["--surrogate.options", options]
    if budget is not None:
        command += ["--budget", str(budget)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    info = json.loads((run_dir / "summary.json").read_text())
    changed = sorted(c["parameter"] for c in info["changes_best"])
    per_iteration = info.get("seconds_per_iteration") or {}
    return {
        "arm": arm,
        "options": options,
        "seed": seed,
        "budget": budget,
        "best_value": info["best_value"],
        "changed": changed,
        "relevant_only": set(changed) <= RELEVANT,
        "fit_s": per_iteration.get("fit"),
        "acquisition_s": per_iteration.get("acquisition"),
    }


def report(runs: list[dict], arms: dict[str, str], seeds: list[int], out: Path) -> dict:
    rows = []
    for arm in arms:
        rs = {r["seed"]: r for r in runs if r["arm"] == arm and r["seed"] in seeds}
        if not rs:
            continue
        values = [rs[s]["best_value"] for s in seeds if s in rs]
        rows.append(
            {
                "arm": arm,
                "options": arms[arm],
                "seeds": sorted(rs),
                "mean_best": statistics.mean(values),
                "median_best": statistics.median(values),
                "worst_best": min(values),
                "relevant_only": sum(rs[s]["relevant_only"] for s in rs),
                "fit_s": statistics.median(r["fit_s"] for r in rs.values()),
                "acquisition_s": statistics.median(r["acquisition_s"] for r in rs.values()),
                "per_seed": {s: rs[s] for s in sorted(rs)},
            }
        )
    lines = [
        f"# The default command's answers over seeds (branin-20d, optimum {OPTIMUM}; seeds run: {len(seeds)})",
        "",
        "Per seed: the best value, with the inputs it changes besides `x4`, `x5` (Branin's two).",
        "",
        "| arm | surrogate options | "
        + " | ".join(f"seed {s}" for s in seeds)
        + " | mean | worst | best changes only x4, x5 | fit s / iteration | acquisition s / iteration |",
        "|---|---|" + "---|" * len(seeds) + "---|---|---|---|---|",
    ]
    for row in rows:
        cells = []
        for s in seeds:
            r = row["per_seed"].get(s)
            if r is None:
                cells.append("-")
                continue
            extra = [p for p in r["changed"] if p not in RELEVANT]
            note = (
                ""
                if not extra
                else f" (+{len(extra)}: {', '.join(extra[:3])}{'...' if len(extra) > 3 else ''})"
            )
            cells.append(f"{r['best_value']:.4f}{note}")
        lines.append(
            f"| {row['arm']} | `{row['options'] or '{}'}` | "
            + " | ".join(cells)
            + f" | {row['mean_best']:.3f} | {row['worst_best']:.3f} | {row['relevant_only']} of {len(row['seeds'])}"
            f" | {row['fit_s']:.2f} | {row['acquisition_s']:.2f} |"
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    result = {"arms": rows, "seeds": seeds}
    (out / "results.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0..n-1 (default 8)")
    parser.add_argument(
        "--arm",
        type=parse_arm,
        action="append",
        default=None,
        help="NAME=OPTIONS: a setting to run (repeatable; default: the command as it is)",
    )
    parser.add_argument(
        "--budget", type=int, default=None, help="evaluations per run (default: the command's 30)"
    )
    parser.add_argument("--smoke", action="store_true", help="1 seed, 12 evaluations")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds, args.budget = 1, 12
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    arms = dict(args.arm) if args.arm else dict(DEFAULT_ARMS)
    out = output_folder(args.out, args.smoke, RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    runs = (
        [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        if log.exists()
        else []
    )
    runs = [
        r for r in runs if r["budget"] == args.budget and arms.get(r["arm"], None) == r["options"]
    ]
    done = {(r["arm"], r["seed"]) for r in runs}
    seeds = list(range(args.seeds))
    with tempfile.TemporaryDirectory(prefix="dsbo-default-command-") as tmp, log.open("a") as sink:
        for seed in seeds:  # seed-major: every arm of a seed, then the next seed
            for arm, options in arms.items():
                if (arm, seed) in done:
                    continue
                run = run_one(arm, options, seed, args.budget, Path(tmp))
                runs.append(run)
                sink.write(json.dumps(run) + "\n")
                sink.flush()
                print(
                    f"{arm} seed {seed}: best {run['best_value']:.4f}, changed {run['changed']}",
                    flush=True,
                )
    return report(runs, arms, seeds, out)


if __name__ == "__main__":
    main()
