"""``python -m dsbo.optimize``: run a BO campaign from a YAML config.

With no arguments it runs the built-in default (Branin embedded in 20 dimensions, MAP-SAAS +
qLogNEI with BONSAI pruning, 30 evaluations): 16 s end to end on 2 idle CPU cores, report
included (median of 5 runs, ``experiments/bench_optimize_command.py``; 53 s on a slower 2-core
machine); there, 38.5 s with ``--surrogate.options '{restart_every: 5}'``, whose best point
changed an ignored input on 6 of 8 seeds (``experiments/default_command.py``).
Typical use::

    python -m dsbo.optimize --config configs/bo/default.yaml --budget 50 --surrogate.name gp
    python -m dsbo.optimize --print_config > my.yaml      # a config to edit
    python -m dsbo.optimize --list                         # problems, surrogates, policies

The run directory (``--run_dir``, default ``runs/<problem>-seed<seed>``) receives the SQLite
store ``trials.sqlite``, ``config.yaml``, ``history.csv``, ``summary.json``, ``trace.png``,
``report.html`` (the interactive report, :mod:`dsbo.cli.report`) and the offline W&B run.
Running the same command again resumes the campaign from its store.

Scaling out (the docs' user guide, "Scaling out")::

    python -m dsbo.optimize --config my.yaml --executor.kind process --executor.workers 4
    python -m dsbo.optimize --config my.yaml --executor.kind dask --executor.address tcp://s:8786
    python -m dsbo.optimize --config my.yaml --store postgresql://u:pw@db/c1   # creates it
    python -m dsbo.optimize --store postgresql://u:pw@db/c1 --worker           # joins it

A worker reads the campaign's configuration from the store (or from ``--config``, which must
then describe the same problem and search space) and writes its outputs to
``<run_dir>/worker-<host>-<pid>``.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import threading
import warnings
from argparse import ArgumentError
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
import yaml as pyyaml
from jsonargparse import ActionConfigFile, ArgumentParser, set_loader
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from dsbo.analysis.outputs import prefetch_output_modules, write_outputs
from dsbo.cli.common import print_error
from dsbo.cli.config import (
    DEFAULT_POSTPROCESS,
    OptimizeConfig,
    check_literals,
    validate_config,
)
from dsbo.cli.strict_yaml import load as strict_yaml_load
from dsbo.errors import ConfigError, DsboError
from dsbo.runtime.executors import open_executor
from dsbo.storage import Store, is_store_url, open_store

if TYPE_CHECKING:
    from dsbo.campaign import Campaign

# Heavy modules (torch, BoTorch, the campaign, plots, W&B) are imported by the functions that
# use them, so that --help, --list of names and config errors come in well under a second.

STORE_NAME = "trials.sqlite"
#: jsonargparse reads config files and command-line values with :mod:`dsbo.cli.strict_yaml`
#: (decimal integers only, no repeated keys), so ``--budget 0x10`` is an error, not 16.
PARSER_MODE = "dsbo_strict_yaml"
set_loader(PARSER_MODE, strict_yaml_load, exceptions=(pyyaml.YAMLError,))


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="python -m dsbo.optimize",
        description="Run a Bayesian-optimization campaign (resumable; results in --run_dir).",
        default_config_files=[],
        parser_mode=PARSER_MODE,
        exit_on_error=False,
    )
    parser.add_argument("--config", action=ActionConfigFile, help="YAML config file")
    parser.add_argument("--list", action="store_true", help="list problems, surrogates, policies")
    parser.add_argument(
        "--worker",
        action="store_true",
        help="join the campaign on --store postgresql://... (its stored config unless --config)",
    )
    parser.add_argument(
        "--dry_run",
        action="store_true",
        help="check the config and every part with one dry iteration on synthetic data; run nothing",
    )
    parser.add_argument("--workers", type=int, help="evaluations at once (= --executor.workers)")
    parser.add_class_arguments(OptimizeConfig, nested_key=None, fail_untyped=False)
    return parser


def parse_config(argv: Sequence[str] | None = None) -> tuple[OptimizeConfig, bool]:
    """Parse the command line into a validated :class:`OptimizeConfig` (and the --list flag).

    ``--workers N`` (the shared spelling of :mod:`dsbo.cli.common`) is ``--executor.workers N``.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    argv = [
        ("--executor.workers" + a[len("--workers") :])
        if a == "--workers" or a.startswith("--workers=")
        else a
        for a in argv
    ]
    check_literals(argv)
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except ArgumentError as exc:
        raise ConfigError(" ".join(str(exc).split())) from None
    show_list = bool(ns.pop("list", False))
    ns.pop("worker", None)
    ns.pop("dry_run", None)
    ns.pop("workers", None)
    ns.pop("config", None)
    cfg = parser.instantiate(ns)
    config = OptimizeConfig(**{k: getattr(cfg, k) for k in OptimizeConfig.__dataclass_fields__})
    validate_config(config)
    return config, show_list


def print_registries(console: Console) -> None:
    from dsbo.acquisition import available_policies
    from dsbo.contexts import available_context_policies
    from dsbo.problems import available_problems
    from dsbo.surrogates import available_surrogates

    for title, entries in (
        ("problems", available_problems()),
        ("surrogates", available_surrogates()),
        (
            "acquisition",
            {"auto": "qlognei, or qlognehvi for several objectives", **available_policies()},
        ),
        ("contexts.policy (contextual problems)", available_context_policies()),
    ):
        table = Table(title=title, show_header=False)
        for name, text in entries.items():
            table.add_row(Text(name), Text(text))  # Text: a description's [brackets] are not markup
        console.print(table)


@contextmanager
def warnings_to_file(path: Path) -> Iterator[list[str]]:
    """Send Python warnings (e.g. BoTorch's optimizer retries) to ``path`` instead of the
    terminal, where they would break the progress bar; yields the list of messages."""
    seen: list[str] = []
    with warnings.catch_warnings(), path.open("a") as log:
        warnings.simplefilter("default")

        def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            text = warnings.formatwarning(message, category, filename, lineno, line)
            seen.append(text)
            log.write(text)
            log.flush()

        warnings.showwarning = show
        yield seen


def log_model_warnings(campaign: Campaign, path: Path) -> int:
    """Append the model stack's warnings that the campaign counted (not printed: GP jitter,
    optimizer retries; :mod:`dsbo.campaign.model_warnings`) to ``path``, one line per message
    with its count; returns how many there were."""
    if not campaign.model_warnings:
        return 0
    with path.open("a") as log:
        for message, count in campaign.model_warnings.most_common():
            log.write(f"{count} x {message}\n")
    return sum(campaign.model_warnings.values())


def build_campaign(
    cfg: OptimizeConfig,
    dry_run: bool | None = True,
    executor: Executor | None = None,
    parallel: int = 1,
    worker: bool = False,
    write: bool = True,
    ask_tell: bool = False,
) -> tuple[Campaign, Path, bool]:
    """The campaign ``cfg`` describes, on its store (``cfg.store``, default the SQLite file in
    its run directory), evaluating through ``executor`` with ``parallel`` trials at once.

    Every part is checked against the problem before the run directory is written, with one
    dry iteration on synthetic data (:mod:`dsbo.campaign.validation`) if ``dry_run`` is true, or if it
    is ``None`` and the store is new. A ``worker`` writes to ``<run_dir>/worker-<host>-<pid>``.

    With ``write=False`` (``--dry_run``) the campaign gets an in-memory store and nothing is
    written. A problem evaluated outside Python is a ConfigError unless the caller only asks
    and tells (``ask_tell``, ``python -m dsbo.blackbox``).

    Returns the campaign, the run directory and whether the store held trials (a resume).
    """
    import torch

    from dsbo.acquisition.base import accepts_postprocessor
    from dsbo.campaign import Campaign
    from dsbo.problems import get_problem

    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    problem = get_problem(cfg.problem.name, **cfg.problem.options)
    if problem.evaluated_outside_python and not ask_tell:
        raise ConfigError(
            f"problem.name={cfg.problem.name!r} is evaluated outside Python, so dsbo.optimize cannot "
            "run it: drive it with python -m dsbo.blackbox ask|tell|status --config <this config>"
        )
    if cfg.early_stopping is not None and not ask_tell:
        from dsbo.campaign.early_stopping import EarlyStopping, takes_trial

        settings = EarlyStopping.build(cfg.early_stopping, cfg.max_steps, cfg.budget_steps)
        if settings is not None and settings.rule is not None and not takes_trial(problem):
            raise ConfigError(
                f"early_stopping: problem.name={cfg.problem.name!r} reports no intermediate values, so "
                "no trial could be stopped; set early_stopping: null, or report each step of a "
                "black box with python -m dsbo.blackbox report"
            )
    run_dir = Path(cfg.run_dir or f"runs/{problem.name}-seed{cfg.seed}")
    if worker:
        run_dir = run_dir / f"worker-{socket.gethostname()}-{os.getpid()}"
    check_run_dir(run_dir)
    if not write:
        store, resuming = None, False
    elif cfg.store is None or not is_store_url(cfg.store):
        target = Path(cfg.store) if cfg.store is not None else run_dir / STORE_NAME
        resuming = target.exists()
        store: Store | Path | None = target
    else:  # a shared store: opened now, so a bad URL stops the run before anything else
        store = open_store(cfg.store)
        resuming = store.count() > 0
    acq = cfg.acquisition
    postprocess = cfg.postprocess
    if postprocess == DEFAULT_POSTPROCESS and (
        problem.is_contextual or not accepts_postprocessor(acq.name)
    ):
        # a contextual campaign chooses with its contexts policy; a policy that does not
        # optimize an acquisition function (thompson, mobo-rs, cost-ids, pool) is not pruned
        postprocess = None
    campaign = Campaign(
        problem,
        surrogate={
            "name": cfg.surrogate.name,
            **cfg.surrogate.options,
            "selector": cfg.surrogate.selector,
        },
        acquisition={"name": acq.name, **acq.options},
        budget=cfg.budget,
        n_init=cfg.n_init,
        q=cfg.q,
        seed=cfg.seed,
        store=store,
        optimizer=acq.optimizer_settings(),
        on_pending=cfg.on_pending,
        max_consecutive_failures=cfg.max_consecutive_failures,
        postprocess=postprocess,
        eval_timeout=cfg.eval_timeout,
        dry_run=not resuming if dry_run is None else dry_run,
        include_default=cfg.initial_design.include_default,
        contexts=None if cfg.contexts is None else asdict(cfg.contexts),
        budget_cost=cfg.budget_cost,
        executor=executor,
        parallel=parallel,
        lease=cfg.lease,
        outcome_warping=cfg.outcome_warping,
        early_stopping=cfg.early_stopping,
        max_steps=cfg.max_steps,
        budget_steps=cfg.budget_steps,
    )
    if not write:
        return campaign, run_dir, resuming
    run_dir.mkdir(parents=True, exist_ok=True)
    if campaign.store.shared:  # what a worker joining with only --store runs
        campaign.store.setdefault_meta("config", shareable_config(cfg))
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    return campaign, run_dir, resuming


def shareable_config(cfg: OptimizeConfig) -> dict[str, Any]:
    """``cfg`` as a worker on another machine runs it: no store URL (its password stays out of
    the database), no run directory."""
    shared = cfg.to_dict()
    shared.pop("store")
    shared.pop("run_dir")
    return shared


def check_run_dir(run_dir: Path) -> None:
    """The run directory is a directory we can write (or can be created); ConfigError if not."""
    existing = next((p for p in (run_dir, *run_dir.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(f"run_dir={str(run_dir)!r}: {existing} is a file, not a directory")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"run_dir={str(run_dir)!r}: {existing} is not writable")


def run_optimize(
    cfg: OptimizeConfig, console: Console | None = None, worker: bool = False
) -> dict[str, Any]:
    """Run (or resume, or as a ``worker`` join) the campaign ``cfg`` describes; returns the
    summary dict."""
    console = console or Console(stderr=True)
    spec = cfg.executor
    settings = (None, 1, None) if spec is None else (spec.kind, spec.workers, spec.address)
    with open_executor(*settings) as (executor, parallel):
        return _run_optimize(cfg, console, executor, parallel, worker)


def _run_optimize(
    cfg: OptimizeConfig, console: Console, executor: Executor | None, parallel: int, worker: bool
) -> dict[str, Any]:
    from dsbo.analysis.tracking import WandbTracker

    campaign, run_dir, resuming = build_campaign(
        cfg, executor=executor, parallel=parallel, worker=worker
    )
    problem, store = campaign.problem, campaign.store
    prefetch_output_modules()  # the outputs' imports overlap the campaign
    if worker:
        console.print(
            f"worker {campaign.worker} joins {store.path}: {store.count('completed')} completed, "
            f"{store.count('pending')} pending trial(s)"
        )
    elif resuming:
        console.print(
            f"resuming {run_dir}: {store.count('completed')} completed, "
            f"{store.count('failed')} failed, {store.count('pending')} pending trial(s)"
        )
    tracker = WandbTracker(
        run_dir,
        cfg.to_dict(),
        mode=cfg.wandb.mode,
        project=cfg.wandb.project,
        entity=cfg.wandb.entity,
        name=cfg.wandb.name,
        tags=cfg.wandb.tags,
    )

    if resuming:  # the W&B table lists every trial, those of earlier sessions too
        tracker.log_trials(
            store.trials(["completed", "failed", "stopped", "paused"]),
            campaign.best_value(),
            problem,
            curves=store.curves() or None,
        )

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("best {task.fields[best]}"),
        TextColumn("{task.fields[last]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not cfg.progress,
    )

    def best_text() -> str:
        value = campaign.best_value()
        return "-" if value is None else f"{value:.5g}"

    with progress, warnings_to_file(run_dir / "warnings.log") as caught:
        # a cost budget counts in cost units, a trial budget in trials
        def spent(c: Campaign) -> float:
            return c.cost_used if c.budget_cost is not None else c.num_used

        total = campaign.budget_cost if campaign.budget_cost is not None else campaign.budget
        unit = " (steps)" if cfg.budget_steps is not None else " (cost units)"
        label = problem.name + (unit if campaign.budget_cost is not None else "")
        task = progress.add_task(
            label, total=total, completed=spent(campaign), best=best_text(), last=""
        )

        def on_batch(c: Campaign, trials: list) -> None:
            value = c.best_value()
            tracker.log_trials(
                trials, value, problem, curves=c.store.curves([t.id for t in trials]) or None
            )
            last = trials[-1] if trials else None
            status = (
                ""
                if last is None or last.status == "completed"
                else f"[yellow]{last.status}: {last.error}"
                if last.status in ("stopped", "paused")
                else f"[red]failed: {last.error}"
            )
            best = "-" if value is None else f"{value:.5g}"
            progress.update(task, completed=spent(c), best=best, last=status)

        campaign.execution.callbacks.append(on_batch)
        campaign.run()
        progress.update(task, completed=spent(campaign), best=best_text())

    model_warnings = log_model_warnings(campaign, run_dir / "warnings.log")
    info = write_outputs(
        campaign,
        run_dir,
        {"warnings": len(caught) + model_warnings},
        report=True,
        config=cfg.to_dict(),
    )
    tracker.finish(info, run_dir / "trace.png", report_html=run_dir / "report.html")
    print_summary(console, info, run_dir)
    store.close()
    return info


#: The summary lists the best point's changed parameters when there are at most this many.
MAX_CHANGES_LISTED = 8


def _value(v: Any) -> str:
    """A parameter value as the summary shows it (numbers to 4 significant digits)."""
    if isinstance(v, float):
        return f"{v:.4g}"
    return "inactive" if v is None else str(v)


def print_summary(console: Console, info: dict[str, Any], run_dir: Path) -> None:
    table = Table(title=f"dsbo: {info['problem']}", show_header=False)
    best = info["best_value"]
    objectives = info.get("objectives") or {}
    if len(objectives) > 1 or info.get("bayes_regret"):
        label = "dominated hypervolume"
    elif any(str(d).startswith("min") for d in objectives.values()):
        label = f"best value ({next(iter(objectives))}, minimized)"
    else:
        label = "best value"
    table.add_row(label, "-" if best is None else f"{best:.6g}")
    params = info.get("best_params") or {}
    if 0 < len(params) <= MAX_CHANGES_LISTED:
        table.add_row("best parameters", "\n".join(f"{k}: {_value(v)}" for k, v in params.items()))
    if info["optimal_value"] is not None:
        table.add_row("known optimum", f"{info['optimal_value']:.6g}")
    if not info.get("contexts"):  # sparsity from a default means little with contexts
        changed = info["num_changed_best"]
        table.add_row(
            "parameters changed (best)",
            "-"
            if changed is None
            else f"{changed} of {info.get('num_parameters', info['dim'])} ({info['num_relevant_dims']} relevant), "
            f"from the {info.get('changes_from', 'problem default')}",
        )
        changes = info.get("changes_best") or []
        if 0 < len(changes) <= MAX_CHANGES_LISTED:
            table.add_row(
                "changes (best)",
                "\n".join(
                    f"{c['parameter']}: {_value(c['from'])} -> {_value(c['to'])}" for c in changes
                ),
            )
        front = info.get("value_vs_changes") or []
        if len(front) > 1:
            table.add_row(
                "best value with <= k changes",
                ", ".join(f"k={p['changed']}: {p['best_value']:.4g}" for p in front),
            )
    ended = "".join(
        f", {info[key]} {word}"
        for key, word in (("num_stopped", "stopped"), ("num_paused", "paused"))
        if info.get(key)
    )
    table.add_row("evaluations", f"{info['completed']} completed, {info['failed']} failed{ended}")
    regret = info.get("bayes_regret")
    if regret:
        text = f"utility {regret['utility']:.4g}" + (
            f", regret {regret['regret']:.4g}" if "regret" in regret else ""
        )
        table.add_row(
            "Bayes regret", f"{text} ({regret['scalarization']}, prior {regret['prior']})"
        )
    contexts = info.get("contexts")
    if contexts or info.get("budget_cost") is not None:
        budget = "" if info.get("budget_cost") is None else f" of {info['budget_cost']:g}"
        table.add_row("cost spent", f"{info['cost_used']:g}{budget}")
    if contexts:
        switch = contexts["switch_trial"]
        table.add_row("phase switch", "none" if switch is None else f"at trial {switch}")
        table.add_row(
            "contexts kept (last BO iteration)",
            ", ".join(
                f"{name} ({role})"
                for name, role in contexts["last_roles"].items()
                if role != "ignored"
            )
            or "none",
        )
        table.add_row(
            "inclusion frequency (BO iterations)",
            ", ".join(f"{name} {share:.2f}" for name, share in contexts["inclusion"].items()),
        )
    t = info["seconds_per_iteration"]
    if t["iterations"]:
        table.add_row(
            "seconds per BO iteration",
            f"fit {t['fit']:.2f} + acquisition {t['acquisition']:.2f} + other {t['other']:.2f}",
        )
    if info.get("warnings"):
        table.add_row("warnings", f"{info['warnings']} (see {run_dir / 'warnings.log'})")
    table.add_row("run directory", str(run_dir))
    if (run_dir / "report.html").is_file():
        table.add_row("report", str(run_dir / "report.html"))
    console.print(table)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM ends the run like Ctrl-C: finally-blocks run, worker processes are stopped."""
    raise KeyboardInterrupt


def worker_argv(argv: Sequence[str]) -> list[str]:
    """The arguments of a ``--worker``: the campaign's stored configuration first (unless a
    ``--config`` is given), then the command line.

    Raises:
        ConfigError: if no ``--store postgresql://...`` is given, or the store holds no
            campaign yet.
    """
    argv = list(argv)
    url = next((a.split("=", 1)[1] for a in argv if a.startswith("--store=")), None)
    if url is None and "--store" in argv[:-1]:
        url = argv[argv.index("--store") + 1]
    if not is_store_url(url):
        raise ConfigError(
            "--worker joins a campaign on a shared store: give --store postgresql://..."
        )
    if any(a == "--config" or a.startswith("--config=") for a in argv):
        return argv
    with open_store(url) as store:
        stored = store.get_meta("config")
    if stored is None:
        raise ConfigError(
            f"the store {store.path} holds no campaign yet: start it with --config (or give "
            "the worker the same --config)"
        )
    handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="dsbo-worker-", delete=False)
    with handle:
        yaml.safe_dump(stored, handle, sort_keys=False)
    return ["--config", handle.name, *argv]


def main(argv: Sequence[str] | None = None) -> int:
    console = Console(stderr=True)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    argv = list(sys.argv[1:] if argv is None else argv)
    worker = "--worker" in argv
    dry_run = "--dry_run" in argv
    argv = [a for a in argv if a != "--dry_run"]
    try:
        if worker:
            argv = worker_argv([a for a in argv if a != "--worker"])
        try:
            cfg, show_list = parse_config(argv)
        finally:
            if worker and Path(argv[1]).name.startswith("dsbo-worker-"):
                Path(argv[1]).unlink(missing_ok=True)  # the stored config, read
        if show_list:
            print_registries(Console())
            return 0
        if dry_run:
            campaign, run_dir, _ = build_campaign(cfg, dry_run=True, write=False)
            console.print(
                f"dry run: {campaign.problem.name} ({campaign.problem.dim} parameters), surrogate "
                f"{cfg.surrogate.name}, acquisition {cfg.acquisition.name}, budget {campaign.budget}: "
                f"every part passed a dry iteration on synthetic data; nothing was evaluated or "
                f"written (the run would write {run_dir})",
                markup=False,
            )
            return 0
        run_optimize(cfg, console, worker=worker)
    except DsboError as exc:
        print_error(console, str(exc))
        return 2
    except KeyboardInterrupt:
        console.print("interrupted: every finished evaluation is saved; run again to resume")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
