"""One run of a sweep: its record, its subprocess, and hyperband watching it.

:class:`RunRecord` is what a sweep knows of one configuration's run (``sweep.json`` holds one
per run). :func:`run_one` runs the configuration's command as a subprocess (offline W&B, its
own run directory, ``SIGKILL`` if the sweep dies) and, with ``early_terminate``, hands it to a
:class:`~dsbo.runtime.hyperband.HyperbandMonitor` (:func:`hyperband_monitor`), which reads its
metric history every ``poll`` seconds (:class:`~dsbo.runtime.run_history.MetricHistory`) and
stops it by W&B's hyperband rule. A stopped run is recorded as ``stopped`` with its last
logged value as its metric, as W&B reports the summary (the last value logged).
:func:`cancel_runs` ends the runs in flight when a sweep is interrupted. Grid/random sweeps
(:mod:`dsbo.runtime.sweep`) and bayes sweeps (:mod:`dsbo.runtime.sweep_bayes`) both run their
configurations here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsbo.errors import ConfigError
from dsbo.problems.run_summary import log_tail, read_metric
from dsbo.runtime.hyperband import HyperbandMonitor, Stop
from dsbo.runtime.run_history import MetricHistory
from dsbo.runtime.sweep_config import SweepConfig, build_command


@dataclass
class RunRecord:
    """One configuration's run: its parameters, how it ended, and where its files are.

    ``status`` is ``pending``, ``running`` (bayes sweeps, in flight), ``finished``,
    ``stopped`` (by hyperband), ``no_metric``, ``failed`` or ``timeout``; ``hyperband`` holds
    what ``early_terminate`` saw (iterations read, and where the run was stopped).
    """

    run: str
    params: dict[str, Any]
    status: str = "pending"
    metric: float | None = None
    returncode: int | None = None
    seconds: float = 0.0
    run_dir: str = ""
    command: list[str] = field(default_factory=list)
    error: str | None = None
    hyperband: dict[str, Any] | None = None


def _dies_with_sweep(command: list[str]) -> list[str]:
    """``command`` under ``setpriv --pdeathsig KILL`` (Linux, when installed).

    The run gets SIGKILL when the sweep's thread that started it ends, also when the sweep is
    killed, so that no run outlives its sweep (``prctl(PR_SET_PDEATHSIG)``, see ``setpriv(1)``).
    """
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else command


def _run_environment(sweep: SweepConfig, run_dir: Path, sweep_id: str) -> dict[str, str]:
    """The run's environment: this one, with W&B offline (or disabled, if it is) in ``run_dir``.

    ``WANDB_RUN_GROUP`` is the sweep's id, so W&B groups a sweep's runs as its sweeps do, and
    ``DSBO_RUN_DIR`` tells a dsbo training script where to write its own summary.
    """
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
    return env


def run_one(
    sweep: SweepConfig,
    record: RunRecord,
    run_dir: Path,
    sweep_id: str,
    timeout: float | None = None,
    monitor: HyperbandMonitor | None = None,
) -> RunRecord:
    """Run one configuration as a subprocess (output in ``run_dir/output.log``).

    With a ``monitor`` (``early_terminate``) the run is watched and possibly stopped by
    hyperband. Its metric is read from the run's summary (:func:`dsbo.problems.run_summary.
    read_metric`), else the last value its history logged (W&B's summary is the last value
    logged); a run that exits with a non-zero code is ``failed`` with the tail of its log.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    json_file = run_dir / "args.json"
    json_file.write_text(json.dumps(record.params))
    env = _run_environment(sweep, run_dir, sweep_id)
    record.run_dir = str(run_dir)
    started = time.perf_counter()
    history = None if monitor is None else MetricHistory(run_dir, sweep.metric["name"])
    stop = None
    try:
        record.command = build_command(sweep, record.params, json_file, env)
        command = _dies_with_sweep(record.command)
        with (run_dir / "output.log").open("w") as log:
            if monitor is None:
                proc = subprocess.run(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=timeout,
                    check=False,
                )
                record.returncode = proc.returncode
            else:
                record.returncode, stop = monitor.watch(
                    record.run, command, history, log, env, timeout
                )
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
        problem = f"early_terminate could not watch this run: {history.problem()}"
        record.error = record.error or problem
    return record


def _stopped(sweep: SweepConfig, record: RunRecord, stop: Stop, values: list[float]) -> RunRecord:
    """``record`` of a run hyperband stopped: its metric is the last value it logged."""
    name = sweep.metric["name"]
    record.status = "stopped"
    record.metric = values[-1] if values else stop.value
    record.hyperband = {
        "bracket": stop.bracket,
        "value": stop.value,
        "threshold": stop.threshold,
        "iterations": len(values),
    }
    record.error = (
        f"stopped by hyperband at iteration {stop.bracket}: {name}={stop.value:.6g} is worse "
        f"than the threshold {stop.threshold:.6g}; last {name}={record.metric:.6g} after "
        f"{len(values)} iterations"
    )
    return record


def hyperband_monitor(sweep: SweepConfig, poll: float = 1.0) -> HyperbandMonitor | None:
    """The monitor that watches a sweep's runs, if the sweep has ``early_terminate``."""
    if sweep.early_terminate is None:
        return None
    return HyperbandMonitor(sweep.early_terminate, sweep.goal, poll)


def cancel_runs(pool: ThreadPoolExecutor, monitor: HyperbandMonitor | None) -> None:
    """The sweep is interrupted: start no more runs, end the watched ones (own process groups)."""
    pool.shutdown(wait=False, cancel_futures=True)
    if monitor is not None:
        monitor.cancel()
