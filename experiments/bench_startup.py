"""How long dsbo's commands take to start, as ratios to ``import botorch`` in the same run.

Each command is a fresh ``python`` process (so nothing is cached in memory between runs; the
operating system's file cache is warm after the first round, which is what a user meets from
the second command on). The commands run interleaved, in rotating order, ``--repeats``
times; the report gives the median wall and CPU (user + system) seconds of each and its ratio
to the reference ``python -c "import botorch"`` of the same run.

Commands:

- ``import botorch``: the reference (BoTorch pulls in torch, which dominates);
- ``from dsbo.campaign import Campaign``: the core of every BO command (``import dsbo.campaign``
  alone imports nothing heavy: the package loads its modules on first use);
- ``python -m dsbo.blackbox status``: counts and best value of a black-box run directory;
- ``python -m dsbo.optimize --help`` / ``dsbo.train --help`` / ``dsbo.sweep --help``.

Writes ``experiments/results/bench_startup/{results.json,results.md}``.

    python experiments/bench_startup.py --smoke      # 1 repeat, no warm-up, no dsbo.train
    python experiments/bench_startup.py              # 10 repeats

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).parent / "results" / "bench_startup"
ROOT = Path(__file__).resolve().parents[1]
BLACK_BOX_CONFIG = """\
problem:
  name: black-box
  options:
    parameters: {temperature: [20.0, 80.0], ph: [4.0, 9.0]}
    objectives: [yield]
surrogate: {name: gp}
acquisition: {name: qlognei}
postprocess: null
budget: 10
n_init: 3
run_dir: RUN_DIR
"""


def commands(config: Path) -> dict[str, list[str]]:
    python = sys.executable
    return {
        "import botorch": [python, "-c", "import botorch"],
        "from dsbo.campaign import Campaign": [python, "-c", "from dsbo.campaign import Campaign"],
        "dsbo.blackbox status": [python, "-m", "dsbo.blackbox", "status", "--config", str(config)],
        "dsbo.optimize --help": [python, "-m", "dsbo.optimize", "--help"],
        "dsbo.train --help": [python, "-m", "dsbo.train", "--help"],
        "dsbo.sweep --help": [python, "-m", "dsbo.sweep", "--help"],
    }


def timed(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """Wall and CPU (user + system of the child) seconds of one run in ``cwd``; fails loudly."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def prepare_black_box(folder: Path, env: dict[str, str]) -> Path:
    """A black-box run directory with three told trials (so ``status`` has data)."""
    config = folder / "lab.yaml"
    config.write_text(BLACK_BOX_CONFIG.replace("RUN_DIR", str(folder / "run")))
    base = [sys.executable, "-m", "dsbo.blackbox"]
    asked = subprocess.run(
        [*base, "ask", "--config", str(config), "--q", "3"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    for i, trial in enumerate(json.loads(asked.stdout)["trials"]):
        subprocess.run(
            [
                *base,
                "tell",
                "--config",
                str(config),
                "--trial",
                str(trial["trial"]),
                "--values",
                str(0.1 * i),
            ],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
    return config


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument(
        "--smoke", action="store_true", help="1 repeat, no warm-up round, without dsbo.train"
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    repeats = 1 if args.smoke else args.repeats
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONWARNINGS": "ignore"}
    with tempfile.TemporaryDirectory() as tmp:
        config = prepare_black_box(Path(tmp), env)
        cmds = commands(config)
        if args.smoke:
            cmds.pop("dsbo.train --help")
        names = list(cmds)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for name in [] if args.smoke else names:  # one warm-up round (file cache, .pyc files)
            timed(cmds[name], env)
        for r in range(repeats):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                times[name].append(timed(cmds[name], env))
                print(
                    f"round {r + 1}/{repeats} {name}: {times[name][-1][0]:.2f} s", file=sys.stderr
                )
    ref_wall = statistics.median(w for w, _ in times["import botorch"])
    rows = []
    for name in names:
        wall = statistics.median(w for w, _ in times[name])
        cpu = statistics.median(c for _, c in times[name])
        rows.append(
            {
                "command": name,
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 3),
                "vs_botorch": round(wall / ref_wall, 2),
                "minus_botorch_s": round(wall - ref_wall, 3),
            }
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    info = {
        "smoke": args.smoke,
        "repeats": repeats,
        "commit": commit,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(info, indent=2) + "\n")
    lines = [
        f"# Command start-up ({repeats} interleaved repeats, median; commit {commit}, "
        f"{os.cpu_count()} CPUs)",
        "",
        "| command | wall s | CPU s | x import botorch | wall - botorch s |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| `{r['command']}` | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['vs_botorch']:.2f} | "
        f"{r['minus_botorch_s']:+.2f} |"
        for r in rows
    ]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return info


if __name__ == "__main__":
    main()
    sys.exit(0)
