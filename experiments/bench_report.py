"""How big the HTML report is and how long ``python -m dsbo.report`` takes.

**Size and build time in-process** (``size`` part): ``dsbo.minimize`` of a cheap function over
20 named parameters (8 linear floats, 4 log-scale floats, 4 integers, 3 categoricals and one
conditional float), 200 trials proposed by Sobol (so that building the run costs nothing), 10
of them failing. Its report is then built ``--repeats`` times for each surrogate a run might
use, the arms interleaved so that load affects them alike: the exact GP and MAP-SAAS (dsbo's
default). A Sobol run keeps no fit state, so each build fits the surrogate from scratch. Each
build is timed in two parts, the data (the history and the surrogate fit, importance and
slices: :func:`dsbo.analysis.report_data.from_campaign`) and the page (plotly figures and the
HTML: :func:`dsbo.analysis.html_report.render`), and the file size is recorded.

**The command end to end** (``command`` part): ``python -m dsbo.report RUN_DIR`` (and with
``--no_model``) as a subprocess, on two run directories of ``python -m dsbo.optimize``: the
default run (Branin embedded in 20 dimensions, MAP-SAAS + qLogNEI + BONSAI, 30 evaluations)
and the same configuration with 200 evaluations (195 Sobol points, then 5 BO steps, so that it
builds in minutes). Four arms, interleaved per repeat, wall and CPU seconds of each command:

- ``before``: the code of ``--baseline`` (default: the commit before the report kept its data,
  found with git; its ``dsbo`` package extracted with ``git archive`` and put first on
  ``PYTHONPATH``): it builds the campaign and refits the surrogate as the campaign's restart
  schedule says;
- ``after, nothing kept``: this code without ``report_data.json`` (a run of an older dsbo, or
  one whose trials changed since): it builds the campaign, gathers and keeps the data, and
  fits once from the campaign's last fit;
- ``after, data kept, model fitted``: ``report_data.json`` without the model panels and the
  drawn parts (what ``blackbox ask``/``tell`` leave): the surrogate is fitted once from the
  campaign's last fit, without the campaign, and the page drawn;
- ``after, as the run left it``: ``report_data.json`` as ``dsbo.optimize`` wrote it (data,
  model panels and the page's drawn parts; the command parses the configuration once and
  keeps it);
- ``after, kept``: a report after another one (all of it and the configuration kept).

``config.yaml`` and ``report_data.json`` are put back as the run left them before each command
(the old code rewrites ``config.yaml``). The runs are built in ``--work`` (kept between
invocations: a run with a ``summary.json`` is reused).

Usage::

    python experiments/bench_report.py                       # both parts, 3 repeats
    python experiments/bench_report.py --part command --work /tmp/bench-report
    python experiments/bench_report.py --smoke               # 30 trials; one 6-trial run, --no_model, before vs kept

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch
from smoke_out import add_out_argument, output_folder

import dsbo
from dsbo.analysis.html_report import render
from dsbo.analysis.report_data import from_campaign
from dsbo.surrogates import SurrogateSpec

OUT = Path(__file__).parent / "results" / "bench_report"
ROOT = Path(__file__).resolve().parents[1]
SURROGATES = ("gp", "map-saas")
#: The command part's runs: name -> ``python -m dsbo.optimize`` arguments (besides --run_dir).
QUIET = ["--progress", "false", "--wandb.mode", "disabled"]
RUNS = {"default-30": QUIET, "default-200": [*QUIET, "--budget", "200", "--n_init", "195"]}
SMOKE_RUNS = {
    "smoke-6": [
        *QUIET,
        "--problem.name",
        "branin",
        "--surrogate.name",
        "gp",
        "--postprocess",
        "null",
        "--budget",
        "6",
        "--n_init",
        "4",
        "--acquisition.num_restarts",
        "2",
        "--acquisition.raw_samples",
        "32",
        "--acquisition.maxiter",
        "25",
    ]
}
ARMS = (
    "before",
    "after, nothing kept",
    "after, data kept, model fitted",
    "after, as the run left it",
    "after, kept",
)
SMOKE_ARMS = ("before", "after, kept")
MODES = ("model", "--no_model")
SMOKE_MODES = ("--no_model",)  # the model path is tested in tests/cli/test_report.py
KEPT = ("config.yaml", "report_data.json")


def space() -> dict:
    params: dict = {f"x{i}": dsbo.Float(0.0, 1.0) for i in range(8)}
    params.update({f"rate{i}": dsbo.Float(1e-5, 1e-1, log=True) for i in range(4)})
    params.update({f"n{i}": dsbo.Int(1, 64) for i in range(4)})
    params.update(
        {
            "opt": dsbo.Choice(["adam", "sgd", "rmsprop"]),
            "act": dsbo.Choice(["relu", "gelu"]),
            "norm": dsbo.Choice(["batch", "layer", "none"]),
            "momentum": dsbo.Float(0.0, 0.99, when={"opt": "sgd"}),
        }
    )
    return params


def objective(p: dict) -> float:
    if p["x7"] > 0.95:
        raise RuntimeError("diverged")  # about 5% of the trials fail
    value = (
        (p["x0"] - 0.3) ** 2 + 0.5 * (p["x1"] - 0.7) ** 2 + 0.1 * (math.log10(p["rate0"]) + 3) ** 2
    )
    return value + 0.01 * p["n0"] + (0.3 if p["opt"] == "sgd" else 0.0)


def size_part(trials: int, repeats: int, out: Path) -> dict:
    """The in-process part: size and build time of the report of a Sobol run (see the module
    docstring); the rows, their medians and the table's lines."""
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
            path = out / f"report-{surrogate}.html"
            path.write_text(page, encoding="utf-8")
            rows.append(
                {
                    "repeat": repeat,
                    "surrogate": surrogate,
                    "data_s": t1 - t0,
                    "page_s": t2 - t1,
                    "total_s": t2 - t0,
                    "bytes": path.stat().st_size,
                    "top_parameters": data.importance[0].ranking[:3] if data.importance else [],
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for surrogate in SURROGATES:
        mine = [r for r in rows if r["surrogate"] == surrogate]
        summary[surrogate] = {
            k: statistics.median(r[k] for r in mine)
            for k in ("data_s", "page_s", "total_s", "bytes")
        }
    campaign.store.close()
    for surrogate in SURROGATES:  # the pages are 5 MB each: kept out of the repository
        (out / f"report-{surrogate}.html").unlink()
    lines = [
        f"# HTML report: size and build time ({trials} trials, {len(space())} parameters, "
        f"{result.num_failed} failed; median of {repeats} interleaved repeats, 1 thread)",
        "",
        "In-process, on a Sobol run (it keeps no fit state: the surrogate is fitted from scratch).",
        "",
        "| surrogate | data: history + fit + importance + slices (s) | page: figures + HTML (s) | total (s) | size (MB) |",
        "|---|---|---|---|---|",
    ]
    for surrogate, m in summary.items():
        lines.append(
            f"| {surrogate} | {m['data_s']:.2f} | {m['page_s']:.2f} | {m['total_s']:.2f} | {m['bytes'] / 1e6:.2f} |"
        )
    lines += ["", "Size in MB of 10^6 bytes; plotly.js, embedded once, is 4.82 of them."]
    return {
        "trials": trials,
        "parameters": len(space()),
        "failed": result.num_failed,
        "repeats": repeats,
        "threads": 1,
        "rows": rows,
        "median": summary,
        "lines": lines,
    }


# ---------------------------------------------------------------------- the command end to end
def baseline_commit() -> str:
    """The commit before the one that added ``dsbo/analysis/report_cache.py`` (HEAD while it
    is not committed)."""
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "dsbo/analysis/report_cache.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    rev = f"{added[-1]}^" if added else "HEAD"
    return subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def baseline_tree(rev: str, work: Path) -> Path:
    """``dsbo/`` at ``rev``, extracted into ``work/baseline-REV`` (the folder to put on
    ``PYTHONPATH``)."""
    folder = work / f"baseline-{rev}"
    if not (folder / "dsbo" / "__init__.py").is_file():
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev, "dsbo"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        tar = work / f"baseline-{rev}.tar"
        tar.write_bytes(archive)
        with tarfile.open(tar) as t:
            t.extractall(folder, filter="data")
        tar.unlink()
    return folder


def build_run(work: Path, name: str, argv: list[str]) -> tuple[Path, dict[str, bytes]]:
    """The run directory (built with this code's ``python -m dsbo.optimize`` unless it has a
    ``summary.json``) and its :data:`KEPT` files as the run left them."""
    run_dir = work / name
    snapshot = work / f"{name}.kept"
    if not (run_dir / "summary.json").is_file() or not snapshot.is_dir():
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "dsbo.optimize", *argv, "--run_dir", str(run_dir)],
            cwd=work,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"building {name} failed:\n{done.stderr[-3000:]}")
        print(f"built {name} in {time.perf_counter() - t0:.0f} s", flush=True)
        snapshot.mkdir(exist_ok=True)
        for f in KEPT:
            shutil.copy2(run_dir / f, snapshot / f)
    return run_dir, {f: (snapshot / f).read_bytes() for f in KEPT}


#: Config keys added after the baseline (early stopping, issue 42): the before arm's code
#: refuses them, so they are left out of its ``config.yaml`` while they hold their default (null).
NEWER_KEYS = ("early_stopping", "max_steps", "budget_steps")
#: Keys of the ``acquisition`` section added after the baseline, with their defaults (issue 45:
#: exploration when the search stalls; issue 58: branches); left out the same way while they
#: hold them.
NEWER_ACQUISITION_KEYS = {"stall_patience": 3, "branches": "thompson"}


def restore(run_dir: Path, kept: dict[str, bytes], arm: str) -> None:
    """``config.yaml`` as the run left it, and ``report_data.json`` as ``arm`` starts from."""
    (run_dir / "config.yaml").write_bytes(kept["config.yaml"])
    if arm == "before":
        import yaml

        config = yaml.safe_load(kept["config.yaml"])
        for key in NEWER_KEYS:
            if config.get(key, "absent") is None:
                del config[key]
        acquisition = config.get("acquisition") or {}
        for key, default in NEWER_ACQUISITION_KEYS.items():
            if acquisition.get(key, "absent") == default:
                del acquisition[key]
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        # the baseline reads store schema 3; these runs have no curves and no stopped trials, so
        # their schema-4 store is a schema-3 one with an empty table beside it (today's code
        # upgrades it back in place when the after arms open it)
        import sqlite3

        with sqlite3.connect(run_dir / "trials.sqlite") as conn:
            conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    cache = run_dir / "report_data.json"
    cache.unlink(missing_ok=True)
    if arm in ("after, as the run left it", "after, kept"):
        cache.write_bytes(kept["report_data.json"])
    elif arm == "after, data kept, model fitted":
        value = json.loads(kept["report_data.json"])
        value.pop("panels", None)  # what blackbox ask/tell keep: no model panels, nothing drawn
        value.pop("drawn", None)
        cache.write_text(json.dumps(value))


def report_command(run_dir: Path, mode: str, out: Path, env: dict[str, str]) -> dict:
    """Run ``python -m dsbo.report`` once (in ``run_dir``'s parent, so that the baseline's
    ``PYTHONPATH`` comes first); its wall and CPU seconds and the page's size."""
    argv = [
        sys.executable,
        "-m",
        "dsbo.report",
        str(run_dir),
        "--out",
        str(out),
        *([mode] if mode != "model" else []),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=run_dir.parent, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"wall_s": wall, "cpu_s": cpu, "bytes": out.stat().st_size}


def command_part(
    work: Path,
    runs: dict[str, list[str]],
    arms: tuple[str, ...],
    modes: tuple[str, ...],
    repeats: int,
    rev: str,
) -> dict:
    """The command part (see the module docstring): rows, medians and the table's lines."""
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    envs = {arm: base_env for arm in arms}
    if "before" in arms:
        envs["before"] = {**base_env, "PYTHONPATH": str(baseline_tree(rev, work))}
    built = {name: build_run(work, name, argv) for name, argv in runs.items()}
    load = [os.getloadavg()[0]]
    rows = []
    for repeat in range(repeats):
        for name, (run_dir, kept) in built.items():
            for mode in modes:
                for arm in arms:
                    restore(run_dir, kept, arm)
                    out = work / f"report-{name}.html"
                    if arm == "after, kept":
                        report_command(run_dir, mode, out, envs[arm])  # keeps the configuration
                    row = {
                        "repeat": repeat,
                        "run": name,
                        "mode": mode,
                        "arm": arm,
                        **report_command(run_dir, mode, out, envs[arm]),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        load.append(os.getloadavg()[0])
    for run_dir, kept in built.values():
        restore(run_dir, kept, "after, as the run left it")
    median = {}
    for name in runs:
        for mode in modes:
            for arm in arms:
                mine = [r for r in rows if (r["run"], r["mode"], r["arm"]) == (name, mode, arm)]
                median[f"{name} {mode} {arm}"] = {
                    k: statistics.median(r[k] for r in mine) for k in ("wall_s", "cpu_s")
                }
    lines = [
        f"## `python -m dsbo.report` end to end (median of {repeats} interleaved repeats; wall s / CPU s)",
        "",
        f"Before: commit {rev}. One-minute load average during the runs: {min(load):.1f} to {max(load):.1f} "
        "(other work on the 2 cores), so the seconds are longer than on an idle machine; the "
        "ratios are those of commands run side by side.",
        "",
        "| run | report | " + " | ".join(arms) + " | before / kept |",
        "|---|---|" + "---|" * (len(arms) + 1),
    ]
    for name in runs:
        for mode in modes:
            cells = [median[f"{name} {mode} {arm}"] for arm in arms]
            ratio = cells[0]["wall_s"] / cells[-1]["wall_s"] if arms[0] == "before" else math.nan
            lines.append(
                f"| {name} | {mode} | "
                + " | ".join(f"{c['wall_s']:.1f} / {c['cpu_s']:.1f}" for c in cells)
                + f" | {ratio:.1f}x |"
            )
    return {
        "baseline": rev,
        "runs": runs,
        "arms": list(arms),
        "repeats": repeats,
        "load_average": load,
        "rows": rows,
        "median": median,
        "lines": lines,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--part", choices=("size", "command", "all"), default="all")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--baseline",
        default=None,
        help="the commit the 'before' arm runs (default: found with git)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="where the runs are built (default: a temporary folder)",
    )
    add_out_argument(parser, OUT)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, OUT)
    trials, repeats = (30, 1) if args.smoke else (args.trials, args.repeats)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    info: dict = {}
    if args.part in ("size", "all"):
        info.update(size_part(trials, repeats, args.out))
    if args.part in ("command", "all"):
        work = args.work or Path(tempfile.mkdtemp(prefix="dsbo-bench-report-"))
        work.mkdir(parents=True, exist_ok=True)
        runs, arms, modes = (
            (SMOKE_RUNS, SMOKE_ARMS, SMOKE_MODES) if args.smoke else (RUNS, ARMS, MODES)
        )
        info["command"] = command_part(
            work.resolve(), runs, arms, modes, repeats, args.baseline or baseline_commit()
        )
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    previous = (
        json.loads((args.out / "results.json").read_text())
        if (args.out / "results.json").is_file()
        else {}
    )
    if args.part == "command" and "rows" in previous:  # the other part's results stay
        info = {**{k: v for k, v in previous.items() if k != "command"}, **info}
    elif args.part == "size" and "command" in previous:
        info["command"] = previous["command"]
    (args.out / "results.json").write_text(json.dumps(info, indent=2))
    lines = [
        *info.get("lines", []),
        *([""] if "lines" in info and "command" in info else []),
        *info.get("command", {}).get("lines", []),
    ]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return info


if __name__ == "__main__":
    main()
