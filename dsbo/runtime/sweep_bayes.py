"""Bayes sweeps: a dsbo campaign proposes each run of a W&B sweep with ``method: bayes``.

The sweep's parameters become a :class:`dsbo.space.SearchSpace`
(:func:`dsbo.space.wandb_syntax.search_space`: log-uniform values searched in their log,
categoricals one-hot), the metric the objective (negated for ``goal: minimize``,
:func:`objective_name`), and a :class:`~dsbo.campaign.Campaign` over
``<sweep dir>/trials.sqlite`` (:func:`bayes_campaign`) proposes each run, whose parameters are
the space's decoded values (fixed ones included, in the sweep file's order), so a killed sweep
resumes where it stopped (:func:`run_bayes`).

With ``early_terminate`` a run hyperband stopped is a ``stopped`` trial of the campaign, and
every run's logged values are its curve in the store (:func:`record_curve`), so the campaign's
surrogate learns from every run's curve as BOHB does (Falkner et al., "BOHB: Robust and
Efficient Hyperparameter Optimization at Scale", ICML 2018; :mod:`dsbo.campaign.early_stopping`).
"""

from __future__ import annotations

import shutil
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from dsbo.campaign.early_stopping import EarlyStopping
from dsbo.errors import ConfigError
from dsbo.runtime.run_history import MetricHistory
from dsbo.runtime.sweep_config import SweepConfig, bayes_options
from dsbo.runtime.sweep_results import (
    best_line,
    best_run,
    run_line,
    sweep_progress,
    write_results,
)
from dsbo.runtime.sweep_run import RunRecord, cancel_runs, hyperband_monitor, run_one
from dsbo.space import SearchSpace
from dsbo.space.wandb_syntax import search_space

#: The statuses of a bayes sweep's runs that have ended.
ENDED = ("completed", "failed", "stopped")


def objective_name(sweep: SweepConfig) -> str:
    """The campaign's objective: the metric, negated (``neg_<name>``) when it is minimized."""
    name = sweep.metric["name"]
    return name if sweep.goal == "maximize" else f"neg_{name}"


def bayes_problem(
    sweep: SweepConfig, source: str = "sweep"
) -> tuple[Any, SearchSpace, dict[str, Any]]:
    """The black-box problem, search space and options of a bayes sweep.

    The problem's space is the sweep's (:func:`~dsbo.space.wandb_syntax.search_space`), its
    default point ``dsbo.default`` (every searched parameter's value) or, without one, the
    middle of the space (every range's middle, integers rounded, a categorical's first value).
    """
    from dsbo.problems import get_problem

    space = search_space(sweep.parameters, source)
    options = bayes_options(sweep.raw.get("dsbo"), source)
    default = options["default"]
    if default is None:
        target = space.default()
    else:
        target = space.encode(default, where=f"{source}: dsbo.default")
    problem = get_problem(
        "black-box", parameters=space, objectives=[objective_name(sweep)], target=target
    )
    return problem, problem.space, options


def bayes_campaign(
    sweep: SweepConfig,
    sweep_dir: Path,
    budget: int,
    seed: int = 0,
    source: str = "sweep",
    dry_run: bool = False,
) -> Any:
    """The campaign of a bayes sweep on ``<sweep_dir>/trials.sqlite``.

    The store is new, or the one a previous run of the sweep left. A sweep records failed
    runs and goes on, so the campaign never stops for failures in a row; with
    ``early_terminate`` the model learns from stopped runs, BOHB's levels being hyperband's
    brackets.
    """
    from dsbo.campaign import Campaign

    problem, _, options = bayes_problem(sweep, source)
    n_init = options["n_init"]
    if n_init is None:
        n_init = min(budget, max(2, 2 * problem.dim))
    early_stopping = None
    if sweep.early_terminate is not None:
        levels = tuple(sweep.early_terminate.brackets)
        early_stopping = EarlyStopping(None, model="bohb", levels=levels)
    return Campaign(
        problem,
        surrogate=options["surrogate"],
        acquisition=options["acquisition"],
        postprocess=options["postprocess"],
        budget=budget,
        n_init=n_init,
        seed=seed,
        store=sweep_dir / "trials.sqlite",
        max_consecutive_failures=budget + 1,
        dry_run=dry_run,
        early_stopping=early_stopping,
    )


def record_curve(store: Any, trial_id: int, run_dir: Path, metric: str, sign: float) -> None:
    """The run's logged values of ``metric`` as the trial's curve.

    Step n is the n-th finite value (W&B's iterations), in the store's sense; steps a
    previous attempt stored are kept.
    """
    stored = store.curves([trial_id]).get(trial_id, [])
    last = stored[-1][0] if stored else 0
    for step, value in enumerate(MetricHistory(run_dir, metric).read(), start=1):
        if step > last:
            store.report(trial_id, step, sign * value)


def bayes_records(store: Any, space: SearchSpace, sweep_dir: Path, sign: float) -> list[RunRecord]:
    """The sweep's runs as the store holds them (a run in flight is ``running``).

    ``sign`` turns the stored objective back into the metric (-1 for ``goal: minimize``).
    """
    out = []
    for t in store.trials(("completed", "failed", "stopped", "pending")):
        run = t.metadata.get("run", {})
        out.append(
            RunRecord(
                run=f"run-{t.id:03d}",
                params=space.decode(t.x),
                status=run.get("status", "running" if t.status == "pending" else t.status),
                metric=None if t.y is None else sign * t.y[0],
                returncode=run.get("returncode"),
                seconds=run.get("seconds", 0.0),
                run_dir=str(sweep_dir / f"run-{t.id:03d}"),
                command=run.get("command", []),
                error=t.error or run.get("error"),
                hyperband=run.get("hyperband"),
            )
        )
    return out


def _record_outcome(
    campaign: Any, trial: Any, record: RunRecord, run_dir: Path, metric: str, sign: float
) -> None:
    """The run's outcome into the campaign's store, before the next proposal.

    The run's record goes into the trial's metadata, its logged values into its curve
    (:func:`record_curve`); the trial is then stopped (its last value), told its metric, or
    told its error.
    """
    store = campaign.store
    outcome = {
        "status": record.status,
        "returncode": record.returncode,
        "seconds": record.seconds,
        "command": record.command,
        "hyperband": record.hyperband,
        "error": record.error,
    }
    store.update_metadata(trial.id, run=outcome)
    record_curve(store, trial.id, run_dir, metric, sign)
    if record.status == "stopped":  # its last value, kept as a stopped trial's
        store.stop(
            trial.id,
            [sign * record.metric],
            eval_time=record.seconds,
            budget=campaign.budget,
            reason=record.error,
        )
    elif record.status == "finished":
        campaign.tell(trial.id, values=[sign * record.metric], eval_time=record.seconds)
    else:
        campaign.tell(trial.id, error=record.error or record.status, eval_time=record.seconds)


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
        raise ConfigError(
            "method: bayes runs until stopped in W&B; give --count N (or run_cap in the file)"
        )
    if budget < 1:
        raise ConfigError(f"count={budget} must be >= 1")
    problem, space, options = bayes_problem(sweep, source or "sweep")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    resuming = (sweep_dir / "trials.sqlite").exists()
    campaign = bayes_campaign(
        sweep, sweep_dir, budget, seed, source or "sweep", dry_run=not resuming
    )
    store = campaign.store
    sweep_id = store.setdefault_meta("sweep_id", uuid.uuid4().hex[:8])
    info: dict[str, Any] = {
        "sweep_id": sweep_id,
        "name": sweep.name,
        "file": source,
        "method": "bayes",
        "metric": sweep.metric,
        "seed": seed,
        "num_runs": budget,
        "sweep_dir": str(sweep_dir),
        "workers": workers,
        "dsbo": dict(options),
    }
    (sweep_dir / "sweep.yaml").write_text(yaml.safe_dump(sweep.raw, sort_keys=False))
    sign = 1.0 if sweep.goal == "maximize" else -1.0
    metric_name = sweep.metric["name"]

    def save() -> str:
        runs = bayes_records(store, space, sweep_dir, sign)
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
        for t in store.trials(ENDED):
            history = MetricHistory(sweep_dir / f"run-{t.id:03d}", metric_name)
            monitor.observe(f"run-{t.id:03d}", history.read())
    if resuming:
        done = f"{store.count(ENDED)} run(s) done, {len(left)} to run again"
        console.print(f"resuming {sweep_dir}: {done}", markup=False)
    bar = sweep_progress(console, progress)
    in_flight: dict[Future, Any] = {}
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsbo-sweep-run") as pool:
        task = bar.add_task(
            sweep.name or "sweep", total=budget, completed=store.count(ENDED), last="", best="-"
        )

        def launch(trial: Any) -> None:
            record = RunRecord(run=f"run-{trial.id:03d}", params=space.decode(trial.x))
            run_dir = sweep_dir / record.run
            shutil.rmtree(run_dir, ignore_errors=True)  # what an interrupted attempt left
            future = pool.submit(run_one, sweep, record, run_dir, sweep_id, timeout, monitor)
            in_flight[future] = trial

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
                    run_dir = sweep_dir / record.run
                    _record_outcome(campaign, trial, record, run_dir, metric_name, sign)
                    save()
                    last = run_line(record, metric_name)
                    best = info["best"]
                    shown = "-" if best is None else f"{best['metric']:.4g} ({best['run']})"
                    bar.update(task, completed=store.count(ENDED), last=last, best=shown)
                    if not progress:
                        console.print(last, markup=False)
        except BaseException:
            cancel_runs(pool, monitor)
            raise
    line = save()
    info["runs"] = [asdict(r) for r in bayes_records(store, space, sweep_dir, sign)]
    info["best_line"] = line
    store.close()
    return info
