"""Running a W&B sweep locally: grid and random searches, and bayes sweeps on a dsbo campaign.

:func:`run_sweep` runs each configuration of a :class:`~dsbo.runtime.sweep_config.SweepConfig`
as a subprocess (:func:`run_one`: offline W&B, its own run directory, ``SIGKILL`` if the sweep
dies), ``workers`` at once, and writes ``sweep.json``, ``sweep.csv``, ``best.txt`` and
``trace.png`` into the sweep directory (the command line adds ``report.html``,
:mod:`dsbo.runtime.sweep_report`). ``method: bayes`` goes to :func:`run_bayes`: the sweep's parameters become a
:class:`dsbo.space.SearchSpace` (:func:`dsbo.space.wandb_syntax.search_space`: log-uniform
values searched in their log, categoricals one-hot), the metric the objective (negated for ``goal: minimize``), and a
:class:`~dsbo.campaign.Campaign` over ``<sweep dir>/trials.sqlite`` proposes each run, whose
parameters are the space's decoded values (fixed ones included, in the sweep file's order),
so a killed sweep resumes where it stopped. The command line is :mod:`dsbo.cli.sweep`.

With ``early_terminate: {type: hyperband, ...}`` each run is watched while it runs
(:class:`~dsbo.runtime.hyperband.HyperbandMonitor`: its metric history is read every ``poll``
seconds, :class:`~dsbo.runtime.run_history.MetricHistory`) and stopped by W&B's hyperband rule;
a stopped run is recorded as ``stopped`` with its last logged value as its metric, which is its
result in grid/random sweeps; in bayes sweeps it is a ``stopped`` trial of the campaign, whose
surrogate learns from every run's curve as BOHB does (:func:`run_bayes`). A run whose history
could not be read says so in its ``error`` (and in ``hyperband``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dsbo.campaign.early_stopping import EarlyStopping
from dsbo.errors import ConfigError
from dsbo.problems.run_summary import log_tail, read_metric
from dsbo.runtime.hyperband import HyperbandMonitor, Stop
from dsbo.runtime.run_history import MetricHistory
from dsbo.runtime.sweep_config import SweepConfig, bayes_options, build_command, expand_runs
from dsbo.space import SearchSpace
from dsbo.space.wandb_syntax import search_space


# ---------------------------------------------------------------------- running
@dataclass
class RunRecord:
    run: str
    params: dict[str, Any]
    status: str = "pending"
    metric: float | None = None
    returncode: int | None = None
    seconds: float = 0.0
    run_dir: str = ""
    command: list[str] = field(default_factory=list)
    error: str | None = None
    hyperband: dict[str, Any] | None = None  # early_terminate: iterations seen, where it was stopped


def _dies_with_sweep(command: list[str]) -> list[str]:
    """``command`` under ``setpriv --pdeathsig KILL`` (Linux, when installed): the run gets
    SIGKILL when the sweep's thread that started it ends, also when the sweep is killed."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else command


def run_one(
    sweep: SweepConfig,
    record: RunRecord,
    run_dir: Path,
    sweep_id: str,
    timeout: float | None = None,
    monitor: HyperbandMonitor | None = None,
) -> RunRecord:
    """Run one configuration as a subprocess (output in ``run_dir/output.log``); with a
    ``monitor`` (``early_terminate``), watched and possibly stopped by hyperband."""
    run_dir.mkdir(parents=True, exist_ok=True)
    json_file = run_dir / "args.json"
    json_file.write_text(json.dumps(record.params))
    env = dict(os.environ)
    mode = "disabled" if env.get("WANDB_MODE") == "disabled" else "offline"
    env.update(
        {
            "WANDB_MODE": mode,
            "WANDB_DIR": str(run_dir),
            "WANDB_RUN_GROUP": sweep_id,
            "WANDB_PROJECT": sweep.project or env.get("WANDB_PROJECT", "dsbo"),
            "WANDB_SILENT": "true",
            "DSBO_RUN_DIR": str(run_dir),
        }
    )
    record.run_dir = str(run_dir)
    started = time.perf_counter()
    history = None if monitor is None else MetricHistory(run_dir, sweep.metric["name"])
    stop = None
    try:
        record.command = build_command(sweep, record.params, json_file, env)
        with (run_dir / "output.log").open("w") as log:
            if monitor is None:
                proc = subprocess.run(_dies_with_sweep(record.command), stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
                record.returncode = proc.returncode
            else:
                record.returncode, stop = monitor.watch(record.run, _dies_with_sweep(record.command), history, log, env, timeout)
    except subprocess.TimeoutExpired:
        record.status, record.error = "timeout", f"no result after {timeout} s"
    except (OSError, ConfigError) as exc:
        record.status, record.error = "failed", str(exc)
    record.seconds = round(time.perf_counter() - started, 3)
    if history is not None:
        record.hyperband = {"iterations": len(history.values)}
    if stop is not None:
        return _stopped(sweep, record, stop, history.values)
    if record.status in ("timeout", "failed"):
        return record
    if record.returncode != 0:
        record.status = "failed"
        record.error = f"exit code {record.returncode}: {log_tail(run_dir / 'output.log')}"
        return record
    record.status = "finished"
    if sweep.metric is not None:
        record.metric = read_metric(run_dir, sweep.metric["name"])
        if record.metric is None and history is not None and history.values:
            record.metric = history.values[-1]  # W&B's summary: the last value logged
        if record.metric is None:
            record.status = "no_metric"
            record.error = f"metric {sweep.metric['name']!r} not found in the run's summary"
    if history is not None and history.problem() is not None:
        record.hyperband["note"] = history.problem()
        record.error = record.error or f"early_terminate could not watch this run: {history.problem()}"
    return record


def _stopped(sweep: SweepConfig, record: RunRecord, stop: Stop, values: list[float]) -> RunRecord:
    """``record`` of a run hyperband stopped: its metric is the last value it logged."""
    name = sweep.metric["name"]
    record.status = "stopped"
    record.metric = values[-1] if values else stop.value
    record.hyperband = {"bracket": stop.bracket, "value": stop.value, "threshold": stop.threshold, "iterations": len(values)}
    record.error = (
        f"stopped by hyperband at iteration {stop.bracket}: {name}={stop.value:.6g} is worse than the "
        f"threshold {stop.threshold:.6g}; last {name}={record.metric:.6g} after {len(values)} iterations"
    )
    return record


def hyperband_monitor(sweep: SweepConfig, poll: float = 1.0) -> HyperbandMonitor | None:
    """The monitor that watches a sweep's runs, if the sweep has ``early_terminate``."""
    if sweep.early_terminate is None:
        return None
    return HyperbandMonitor(sweep.early_terminate, sweep.goal, poll)


def best_run(sweep: SweepConfig, records: list[RunRecord]) -> RunRecord | None:
    """The finished run with the best metric (by ``metric.goal``), if any."""
    scored = [r for r in records if r.metric is not None and math.isfinite(r.metric)]
    if not scored:
        return None
    pick = max if sweep.goal == "maximize" else min
    return pick(scored, key=lambda r: r.metric)


def best_line(sweep: SweepConfig, best: RunRecord | None) -> str:
    if sweep.metric is None:
        return "best: no metric in the sweep file"
    if best is None:
        return f"best: no run reported {sweep.metric['name']}"
    params = " ".join(f"{k}={v}" for k, v in best.params.items())
    return f"best: {best.run} {sweep.metric['name']}={best.metric:.6g} ({sweep.goal}) {params} [{best.run_dir}]"


def write_results(sweep_dir: Path, info: dict[str, Any], records: list[RunRecord], line: str) -> None:
    """``sweep.json`` (everything), ``sweep.csv`` (one row per run) and ``best.txt``."""
    payload = {**info, "runs": [asdict(r) for r in records]}
    (sweep_dir / "sweep.json").write_text(json.dumps(payload, indent=2))
    names = list(dict.fromkeys(k for r in records for k in r.params))
    with (sweep_dir / "sweep.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", "status", "metric", "seconds", *names, "error"])
        for r in records:
            writer.writerow([r.run, r.status, "" if r.metric is None else r.metric, r.seconds, *(r.params.get(n, "") for n in names), r.error or ""])
    (sweep_dir / "best.txt").write_text(line + "\n")


def plot_sweep_trace(sweep: SweepConfig, records: list[RunRecord], path: Path) -> None:
    """``trace.png``: each run's metric and the best so far, in run order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if sweep.metric is None:
        return
    scored = [(i + 1, r.metric) for i, r in enumerate(records) if r.metric is not None and math.isfinite(r.metric)]
    if not scored:
        return
    pick = max if sweep.goal == "maximize" else min
    best, trace = None, []
    for _, value in scored:
        best = value if best is None else pick(best, value)
        trace.append(best)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter([i for i, _ in scored], [v for _, v in scored], s=14, c="C0", label="run")
    ax.plot([i for i, _ in scored], trace, color="C3", drawstyle="steps-post", label="best so far")
    ax.set_xlabel("run")
    ax.set_ylabel(sweep.metric["name"])
    ax.set_title(f"{sweep.name or 'sweep'} ({sweep.method}, {sweep.goal})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_sweep(
    sweep: SweepConfig,
    sweep_dir: Path,
    count: int | None = None,
    seed: int = 0,
    timeout: float | None = None,
    console: Console | None = None,
    progress: bool = True,
    source: str = "",
    workers: int = 1,
    poll: float = 1.0,
) -> dict[str, Any]:
    """Run every configuration of ``sweep`` (``workers`` at once); returns what ``sweep.json``
    holds. ``method: bayes`` goes to :func:`run_bayes`. ``poll``: seconds between two reads of
    a running run's metric history (``early_terminate`` only)."""
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if sweep.method == "bayes":
        return run_bayes(sweep, sweep_dir, count, seed, timeout, console, progress, source, workers, poll)
    console = console or Console(stderr=True)
    monitor = hyperband_monitor(sweep, poll)
    configs = expand_runs(sweep, count, seed)
    sweep_id = uuid.uuid4().hex[:8]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {
        "sweep_id": sweep_id,
        "name": sweep.name,
        "file": source,
        "method": sweep.method,
        "metric": sweep.metric,
        "seed": seed,
        "num_runs": len(configs),
        "sweep_dir": str(sweep_dir),
    }
    (sweep_dir / "sweep.yaml").write_text(yaml.safe_dump(sweep.raw, sort_keys=False))
    records = [RunRecord(run=f"run-{i:03d}", params=p) for i, p in enumerate(configs)]
    metric_name = sweep.metric["name"] if sweep.metric else "metric"
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}", markup=False),
        TextColumn("best {task.fields[best]}", markup=False),
        TimeElapsedColumn(),
        console=console,
        disable=not progress,
    )
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsbo-sweep-run") as pool:
        task = bar.add_task(sweep.name or "sweep", total=len(records), last="", best="-")
        futures = [pool.submit(run_one, sweep, r, sweep_dir / r.run, sweep_id, timeout, monitor) for r in records]
        try:
            for future in futures:  # reported in order (with one worker, as each run ends)
                record = future.result()
                best = best_run(sweep, records)
                last = f"{record.run} {record.status}" + ("" if record.metric is None else f" {metric_name}={record.metric:.4g}")
                bar.update(task, advance=1, last=last, best="-" if best is None else f"{best.metric:.4g} ({best.run})")
                if not progress:
                    console.print(last, markup=False)
                write_results(sweep_dir, info, records, best_line(sweep, best))
        except BaseException:
            _interrupted(pool, monitor)
            raise
    best = best_run(sweep, records)
    info["best"] = None if best is None else asdict(best)
    line = best_line(sweep, best)
    write_results(sweep_dir, info, records, line)
    plot_sweep_trace(sweep, records, sweep_dir / "trace.png")
    info["runs"] = [asdict(r) for r in records]
    info["best_line"] = line
    return info


def _interrupted(pool: ThreadPoolExecutor, monitor: HyperbandMonitor | None) -> None:
    """The sweep is interrupted: start no more runs, end the watched ones (own process groups)."""
    pool.shutdown(wait=False, cancel_futures=True)
    if monitor is not None:
        monitor.cancel()


def objective_name(sweep: SweepConfig) -> str:
    """The campaign's objective: the metric, negated (``neg_<name>``) when it is minimized."""
    name = sweep.metric["name"]
    return name if sweep.goal == "maximize" else f"neg_{name}"


def bayes_problem(sweep: SweepConfig, source: str = "sweep") -> tuple[Any, SearchSpace, dict[str, Any]]:
    """The black-box problem, search space and options of a bayes sweep: the problem's
    space is the sweep's (:func:`~dsbo.space.wandb_syntax.search_space`), its default point
    ``dsbo.default`` (every searched parameter's value) or the middle of the space."""
    from dsbo.problems import get_problem

    space = search_space(sweep.parameters, source)
    options = bayes_options(sweep.raw.get("dsbo"), source)
    default = options["default"]
    # the middle of every range (integers rounded, a categorical's first value) without a default
    target = space.default() if default is None else space.encode(default, where=f"{source}: dsbo.default")
    problem = get_problem("black-box", parameters=space, objectives=[objective_name(sweep)], target=target)
    return problem, problem.space, options


def bayes_campaign(
    sweep: SweepConfig, sweep_dir: Path, budget: int, seed: int = 0, source: str = "sweep", dry_run: bool = False
) -> Any:
    """The campaign of a bayes sweep on ``<sweep_dir>/trials.sqlite`` (new, or the one a
    previous run of the sweep left)."""
    from dsbo.campaign import Campaign

    problem, _, options = bayes_problem(sweep, source)
    return Campaign(
        problem,
        surrogate=options["surrogate"],
        acquisition=options["acquisition"],
        postprocess=options["postprocess"],
        budget=budget,
        n_init=options["n_init"] if options["n_init"] is not None else min(budget, max(2, 2 * problem.dim)),
        seed=seed,
        store=sweep_dir / "trials.sqlite",
        max_consecutive_failures=budget + 1,  # a sweep records failed runs and goes on
        dry_run=dry_run,
        # with early_terminate the model learns from stopped runs: BOHB's levels are the brackets
        early_stopping=None if sweep.early_terminate is None
        else EarlyStopping(None, model="bohb", levels=tuple(sweep.early_terminate.brackets)),
    )


#: The statuses of a bayes sweep's runs that have ended.
ENDED = ("completed", "failed", "stopped")


def record_curve(store: Any, trial_id: int, run_dir: Path, metric: str, sign: float) -> None:
    """The run's logged values of ``metric`` as the trial's curve (step n: the n-th finite
    value, in the store's sense); steps a previous attempt stored are kept."""
    stored = store.curves([trial_id]).get(trial_id, [])
    last = stored[-1][0] if stored else 0
    for step, value in enumerate(MetricHistory(run_dir, metric).read(), start=1):
        if step > last:
            store.report(trial_id, step, sign * value)


# ---------------------------------------------------------------------- bayes: the runs
def run_bayes(
    sweep: SweepConfig,
    sweep_dir: Path,
    count: int | None = None,
    seed: int = 0,
    timeout: float | None = None,
    console: Console | None = None,
    progress: bool = True,
    source: str = "",
    workers: int = 1,
    poll: float = 1.0,
) -> dict[str, Any]:
    """Run (or resume) a bayes sweep: a dsbo campaign proposes, each run is the command.

    The campaign's store ``<sweep_dir>/trials.sqlite`` records every proposal before its run
    starts and every outcome before the next proposal; on resume, runs left in flight are run
    again (their directories cleared) and finished runs never are. A run that hyperband
    stopped (``early_terminate``) is a ``stopped`` trial of the campaign (its last logged value
    kept, never fitted as a finished run); every run's logged values are its curve in the store
    (the n-th finite value at step n, W&B's iterations), and the campaign's surrogate is fitted
    as BOHB's on the highest hyperband bracket that enough runs reached
    (:mod:`dsbo.campaign.early_stopping`), so proposals learn from the stopped runs too.
    Returns what ``sweep.json`` holds.
    """
    from dsbo.analysis.trace import plot_trace

    console = console or Console(stderr=True)
    budget = count if count is not None else sweep.run_cap
    if budget is None:
        raise ConfigError("method: bayes runs until stopped in W&B; give --count N (or run_cap in the file)")
    if budget < 1:
        raise ConfigError(f"count={budget} must be >= 1")
    problem, space, options = bayes_problem(sweep, source or "sweep")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    resuming = (sweep_dir / "trials.sqlite").exists()
    campaign = bayes_campaign(sweep, sweep_dir, budget, seed, source or "sweep", dry_run=not resuming)
    store = campaign.store
    sweep_id = store.setdefault_meta("sweep_id", uuid.uuid4().hex[:8])
    info: dict[str, Any] = {
        "sweep_id": sweep_id, "name": sweep.name, "file": source, "method": "bayes",
        "metric": sweep.metric, "seed": seed, "num_runs": budget, "sweep_dir": str(sweep_dir),
        "workers": workers, "dsbo": {k: v for k, v in options.items()},
    }  # fmt: skip
    (sweep_dir / "sweep.yaml").write_text(yaml.safe_dump(sweep.raw, sort_keys=False))
    sign = 1.0 if sweep.goal == "maximize" else -1.0
    metric_name = sweep.metric["name"]

    def records() -> list[RunRecord]:
        out = []
        for t in store.trials(("completed", "failed", "stopped", "pending")):
            run = t.metadata.get("run", {})
            out.append(RunRecord(
                run=f"run-{t.id:03d}", params=space.decode(t.x),
                status=run.get("status", "running" if t.status == "pending" else t.status),
                metric=None if t.y is None else sign * t.y[0], returncode=run.get("returncode"),
                seconds=run.get("seconds", 0.0), run_dir=str(sweep_dir / f"run-{t.id:03d}"),
                command=run.get("command", []), error=t.error or run.get("error"), hyperband=run.get("hyperband"),
            ))  # fmt: skip
        return out

    def save() -> str:
        runs = records()
        best = best_run(sweep, runs)
        line = best_line(sweep, best)
        info["best"] = None if best is None else asdict(best)
        write_results(sweep_dir, info, runs, line)
        if store.count("completed"):
            plot_trace(campaign.history(), problem, sweep_dir / "trace.png")
        return line

    left = store.trials("pending")  # in flight when the sweep was killed: run them again
    monitor = hyperband_monitor(sweep, poll)
    if monitor is not None:  # the thresholds count every run of the sweep, earlier sessions' too
        for t in store.trials(("completed", "failed", "stopped")):
            monitor.observe(f"run-{t.id:03d}", MetricHistory(sweep_dir / f"run-{t.id:03d}", metric_name).read())
    if resuming:
        console.print(f"resuming {sweep_dir}: {store.count(ENDED)} run(s) done, {len(left)} to run again", markup=False)
    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[last]}", markup=False), TextColumn("best {task.fields[best]}", markup=False),
        TimeElapsedColumn(), console=console, disable=not progress,
    )  # fmt: skip
    in_flight: dict[Future, Any] = {}
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsbo-sweep-run") as pool:
        task = bar.add_task(sweep.name or "sweep", total=budget, completed=store.count(ENDED), last="", best="-")

        def launch(trial: Any) -> None:
            record = RunRecord(run=f"run-{trial.id:03d}", params=space.decode(trial.x))
            run_dir = sweep_dir / record.run
            shutil.rmtree(run_dir, ignore_errors=True)  # what an interrupted attempt left
            in_flight[pool.submit(run_one, sweep, record, run_dir, sweep_id, timeout, monitor)] = trial

        for trial in left:
            launch(trial)
        try:
            while True:
                while len(in_flight) < workers:
                    new = campaign.ask(q=1)
                    if not new:
                        break
                    launch(new[0])
                if not in_flight:
                    break
                done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: in_flight[f].id):
                    trial = in_flight.pop(future)
                    record = future.result()
                    store.update_metadata(trial.id, run={"status": record.status, "returncode": record.returncode,
                                                         "seconds": record.seconds, "command": record.command,
                                                         "hyperband": record.hyperband, "error": record.error})  # fmt: skip
                    record_curve(store, trial.id, sweep_dir / record.run, metric_name, sign)
                    if record.status == "stopped":  # its last value, kept as a stopped trial's
                        store.stop(trial.id, [sign * record.metric], eval_time=record.seconds, budget=campaign.budget,
                                   reason=record.error)  # fmt: skip
                    elif record.status == "finished":
                        campaign.tell(trial.id, values=[sign * record.metric], eval_time=record.seconds)
                    else:
                        campaign.tell(trial.id, error=record.error or record.status, eval_time=record.seconds)
                    line = save()
                    last = f"{record.run} {record.status}" + ("" if record.metric is None else f" {metric_name}={record.metric:.4g}")
                    best = info["best"]
                    bar.update(task, completed=store.count(ENDED), last=last,
                               best="-" if best is None else f"{best['metric']:.4g} ({best['run']})")  # fmt: skip
                    if not progress:
                        console.print(last, markup=False)
        except BaseException:
            _interrupted(pool, monitor)
            raise
    line = save()
    info["runs"] = [asdict(r) for r in records()]
    info["best_line"] = line
    store.close()
    return info
