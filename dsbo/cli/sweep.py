r"""``python -m dsbo.sweep``: run a W&B sweep file locally and offline.

The file is a valid W&B sweep configuration (``wandb sweep FILE`` accepts it as is); this
command runs it without a W&B server::

    python -m dsbo.sweep --config configs/sweeps/simple-smb-gamma.yaml            # all grid points
    python -m dsbo.sweep --config configs/sweeps/simple-smb-random.yaml --count 4  # 4 random draws
    python -m dsbo.sweep --config configs/sweeps/simple-smb-gamma.yaml --dry_run  # print the commands
    python -m dsbo.sweep --config configs/sweeps/simple-smb-bayes.yaml --count 12 --workers 2

What it does, in W&B's terms:

- ``method: grid`` runs the cartesian product of the parameters' ``value``/``values`` (and
  the integers of ``int_uniform``, the steps of ``q_uniform``); ``method: random`` draws
  ``--count`` (or ``run_cap``) configurations from the parameter distributions with a seeded
  generator (``--seed``). ``method: bayes`` is decided by a dsbo campaign (below).
- Each run is the sweep's ``command`` (default ``${env} ${interpreter} ${program} ${args}``)
  with W&B's macros substituted: ``${args}`` becomes ``--name=value`` pairs (formatted as the
  W&B agent does), ``${args_no_hyphens}``, ``${args_no_boolean_flags}``, ``${args_json}``,
  ``${args_json_file}``, ``${envvar:NAME}``; ``${interpreter}`` is this Python.
- Runs are subprocesses, one after another, each in its own directory
  ``<sweep dir>/run-NNN`` with ``WANDB_MODE=offline`` (or ``disabled`` if set so),
  ``WANDB_DIR`` there, ``WANDB_RUN_GROUP`` = the sweep id, and ``DSBO_RUN_DIR`` (where
  ``python -m dsbo.train`` writes). A failed run is recorded, not fatal.
- The run's ``metric.name`` is read from its ``summary.json`` (``dsbo.train``) or else its
  offline W&B summary (``wandb-summary.json``). The sweep directory (``--run_dir``, default
  ``runs/sweeps/<name>-<timestamp>``) receives ``sweep.json``, ``sweep.csv``, ``best.txt`` and ``trace.png``.
- ``--workers N`` runs N runs at once (threads that each wait for one subprocess). Each run's
  process gets ``SIGKILL`` if the sweep dies (``setpriv --pdeathsig`` on Linux), so a killed
  sweep leaves no orphan runs behind.
- ``early_terminate: {type: hyperband, min_iter: 3}`` (or ``max_iter`` and ``s``; ``eta``,
  ``strict``) stops runs by W&B's hyperband rule (:mod:`dsbo.runtime.hyperband`): each run's
  metric history (``$DSBO_RUN_DIR/history.jsonl`` or its W&B transaction log) is read every
  second, and a run worse than the best 1/eta of the runs at a bracket gets ``SIGTERM`` (its
  process group; ``SIGKILL`` after ``$WANDB_AGENT_KILL_DELAY`` s, default 30). It is recorded
  as ``stopped``, its last logged value its metric (and, in a bayes sweep, its trial's outcome).

``method: bayes`` without a W&B server: the sweep's parameters become a dsbo search space
(:func:`~dsbo.space.wandb_syntax.search_space`: ``uniform``, ``q_uniform``, ``int_uniform``, ``log_uniform``,
``log_uniform_values`` and its ``q_``/``inv_`` forms, ``categorical`` ``values`` (one-hot),
fixed ``value``; ``--dry_run`` prints each parameter and what the model searches), ``metric`` is the objective (negated for ``goal: minimize``, BoTorch maximizes),
and a :class:`~dsbo.campaign.Campaign` proposes each run's parameters; every run is the
sweep's ``command`` as above. Options W&B ignores go under a top-level ``dsbo:`` key
(:data:`BAYES_OPTIONS`; defaults MAP-SAAS + qLogNEI, and BONSAI pruning toward ``default``,
the program's default hyperparameters, when given). The campaign's store is
``<sweep dir>/trials.sqlite``: the same command with the same ``--run_dir`` resumes a killed
sweep (even ``kill -9``), re-running only the runs that were in flight and never a finished
one. A failed run (exit code, timeout, no metric) is a failed trial. ``sweep.csv``,
``best.txt`` and ``trace.png`` are rewritten after every run. With ``--workers N``, each new
proposal is conditioned on the runs still in flight (BoTorch's pending points).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from rich.console import Console

from dsbo.cli.common import DeprecatedSpelling, deprecated, parse_bool, print_error
from dsbo.errors import DsboError
from dsbo.runtime.sweep import bayes_problem, run_sweep
from dsbo.runtime.sweep_config import SWEEPS_ROOT, build_command, expand_runs, load_sweep
from dsbo.space import Choice, Parameter


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dsbo.sweep",
        description="Run a W&B sweep file (grid, random, or bayes on dsbo's BO) locally, one offline W&B run per configuration.",
    )
    parser.add_argument(
        "--config", default=None, help="a W&B sweep YAML file (also valid for `wandb sweep`)"
    )
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        help="number of runs (random: required unless run_cap; grid: a prefix)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    parser.add_argument(
        "--run_dir",
        default=None,
        help="the sweep's directory (default runs/sweeps/<name>-<timestamp>)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds before a run is stopped and recorded as timeout",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="runs at once (bayes: each proposal sees the runs in flight)",
    )
    parser.add_argument(
        "--dry_run", action="store_true", help="print the runs' commands, run nothing"
    )
    parser.add_argument(
        "--progress",
        type=parse_bool,
        default=True,
        metavar="{true,false}",
        help="a progress bar (true, default) or one line per run (false)",
    )
    # the spellings from before the shared convention (dsbo.cli.common), for one release
    parser.add_argument("sweep_file", nargs="?", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--sweep-dir",
        dest="run_dir",
        action=DeprecatedSpelling,
        new="--run_dir",
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--dry-run",
        dest="dry_run",
        action=DeprecatedSpelling,
        new="--dry_run",
        value=True,
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action=DeprecatedSpelling,
        new="--progress false",
        value=False,
        help=argparse.SUPPRESS,
    )
    return parser


def sweep_file(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The sweep file: ``--config FILE`` (or, deprecated, the file as the first argument)."""
    if args.sweep_file is not None:
        if args.config is not None:
            parser.error("give the sweep file once: --config FILE")
        deprecated("the sweep file as a positional argument", "--config FILE")
        return args.sweep_file
    if args.config is None:
        parser.error("the sweep file is required: --config FILE")
    return args.config


def describe(parameter: Parameter) -> str:
    """One line for ``--dry_run``: the parameter's type and settings and what the model sees."""
    spec = ", ".join(f"{k}={v!r}" for k, v in parameter.to_config().items() if k != "type")
    if not parameter.width:
        seen = "not searched"
    elif isinstance(parameter, Choice):
        seen = f"{parameter.width} one-hot columns"
    else:
        ((low, high),) = parameter.bounds()
        seen = f"searched in [{low:g}, {high:g}]" + (
            " (natural log)" if getattr(parameter, "log", False) else ""
        )
    return f"{parameter.kind} ({spec}): {seen}"


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 when at least one run finished (or was stopped by early_terminate), 1 when
    none did, 2 on a bad sweep file."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    args.sweep_file = sweep_file(parser, args)
    console = Console(stderr=True)
    try:
        sweep = load_sweep(args.sweep_file)
        if args.dry_run and sweep.early_terminate is not None:
            bands = sweep.early_terminate.brackets
            shown = ", ".join(map(str, bands[:6])) + (", ..." if len(bands) > 6 else "")
            console.print(
                f"early_terminate: hyperband brackets at iterations {shown} (eta {sweep.early_terminate.eta:g})",
                markup=False,
            )
        if args.dry_run and sweep.method == "bayes":
            _, space, options = bayes_problem(sweep, args.sweep_file)
            for name, parameter in space.parameters.items():
                console.print(f"{name}: {describe(parameter)}", markup=False)
            console.print(
                f"method bayes: a dsbo campaign ({options['surrogate']}, {options['acquisition']}) proposes each run; nothing was run (--dry_run)",
                markup=False,
            )
            return 0
        if args.dry_run:
            configs = expand_runs(sweep, args.count, args.seed)
            out = Console()
            for i, params in enumerate(configs):
                out.print(
                    f"run-{i:03d}: "
                    + " ".join(build_command(sweep, params, Path(f"run-{i:03d}/args.json"))),
                    soft_wrap=True,
                    markup=False,
                )
            console.print(
                f"{len(configs)} run(s), method {sweep.method}; nothing was run (--dry_run)"
            )
            return 0
        name = sweep.name or Path(args.sweep_file).stem
        sweep_dir = Path(args.run_dir or SWEEPS_ROOT / f"{name}-{datetime.now():%Y%m%d-%H%M%S}")
        info = run_sweep(
            sweep,
            sweep_dir,
            args.count,
            args.seed,
            args.timeout,
            console,
            args.progress,
            args.sweep_file,
            args.workers,
        )
        from dsbo.runtime.sweep_report import write_sweep_report  # torch, plotly: only now

        report = write_sweep_report(sweep_dir, sweep_dir / "report.html")
    except DsboError as exc:
        print_error(console, str(exc))
        return 2
    statuses = [r["status"] for r in info["runs"]]
    summary = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    console.print(
        f"{len(statuses)} run(s): {summary}; results in {info['sweep_dir']}/sweep.json, sweep.csv; report {report}",
        markup=False,
    )
    console.print(info["best_line"], soft_wrap=True, markup=False)
    return 0 if any(s in ("finished", "no_metric", "stopped") for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
