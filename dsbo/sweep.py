r"""``python -m dsbo.sweep``: run a W&B sweep file locally and offline.

The file is a valid W&B sweep configuration (``wandb sweep FILE`` accepts it as is); this
command runs it without a W&B server::

    python -m dsbo.sweep configs/sweeps/simple-smb-gamma.yaml            # all grid points
    python -m dsbo.sweep configs/sweeps/simple-smb-random.yaml --count 4  # 4 random draws
    python -m dsbo.sweep configs/sweeps/simple-smb-gamma.yaml --dry-run  # print the commands

What it does, in W&B's terms:

- ``method: grid`` runs the cartesian product of the parameters' ``value``/``values`` (and
  the integers of ``int_uniform``, the steps of ``q_uniform``); ``method: random`` draws
  ``--count`` (or ``run_cap``) configurations from the parameter distributions with a seeded
  generator (``--seed``). ``bayes`` needs W&B's server-side controller: an error says so.
- Each run is the sweep's ``command`` (default ``${env} ${interpreter} ${program} ${args}``)
  with W&B's macros substituted: ``${args}`` becomes ``--name=value`` pairs (formatted as the
  W&B agent does), ``${args_no_hyphens}``, ``${args_no_boolean_flags}``, ``${args_json}``,
  ``${args_json_file}``, ``${envvar:NAME}``; ``${interpreter}`` is this Python.
- Runs are subprocesses, one after another, each in its own directory
  ``<sweep dir>/run-NNN`` with ``WANDB_MODE=offline`` (or ``disabled`` if set so),
  ``WANDB_DIR`` there, ``WANDB_RUN_GROUP`` = the sweep id, and ``DSBO_RUN_DIR`` (where
  ``python -m dsbo.train`` writes). A failed run is recorded, not fatal.
- The run's ``metric.name`` is read from its ``summary.json`` (``dsbo.train``) or else its
  offline W&B summary (``wandb-summary.json``). The sweep directory (``--sweep-dir``, default
  ``runs/sweeps/<name>-<timestamp>``) receives ``sweep.json``, ``sweep.csv`` and ``best.txt``.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import itertools
import json
import math
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dsbo.errors import ConfigError, DsboError

#: Top-level keys of a W&B sweep configuration (docs.wandb.ai, "Sweep configuration options").
SWEEP_KEYS = (
    "program",
    "entity",
    "project",
    "description",
    "name",
    "method",
    "metric",
    "parameters",
    "early_terminate",
    "command",
    "run_cap",
)
REQUIRED_KEYS = ("program", "method", "parameters")
METHODS = ("grid", "random", "bayes")
METRIC_KEYS = ("name", "goal", "target", "impute", "impute_while_running")
GOALS = ("minimize", "maximize")
PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
#: Each distribution W&B documents and the keys its parameter spec may hold.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "categorical": ("values",),
    "categorical_w_probabilities": ("values", "probabilities"),
    "int_uniform": ("min", "max"),
    "uniform": ("min", "max"),
    "q_uniform": ("min", "max", "q"),
    "log_uniform": ("min", "max"),
    "log_uniform_values": ("min", "max"),
    "q_log_uniform": ("min", "max", "q"),
    "q_log_uniform_values": ("min", "max", "q"),
    "inv_log_uniform": ("min", "max"),
    "inv_log_uniform_values": ("min", "max"),
    "normal": ("mu", "sigma"),
    "q_normal": ("mu", "sigma", "q"),
    "log_normal": ("mu", "sigma"),
    "q_log_normal": ("mu", "sigma", "q"),
    "beta": ("a", "b"),
    "q_beta": ("a", "b", "q"),
}
#: Distributions a grid can enumerate.
GRID_DISTRIBUTIONS = ("constant", "categorical", "categorical_w_probabilities", "int_uniform", "q_uniform")
#: The W&B agent's command macros.
MACROS = ("env", "interpreter", "program", "args", "args_no_hyphens", "args_no_boolean_flags", "args_json", "args_json_file")
DEFAULT_COMMAND = ["${env}", "${interpreter}", "${program}", "${args}"]
MACRO = re.compile(r"^\$\{([a-z_]+)\}$")
ENVVAR = re.compile(r"\$\{envvar:([A-Za-z0-9_]*)\}")
SWEEPS_ROOT = Path("runs/sweeps")
RUN_SUMMARY = "summary.json"
WANDB_SUMMARY_GLOB = "wandb/*run-*/files/wandb-summary.json"


# ---------------------------------------------------------------------- the sweep file
@dataclass
class Parameter:
    """One swept parameter: its name, W&B distribution and that distribution's settings."""

    name: str
    distribution: str
    spec: dict[str, Any]

    def grid_values(self) -> list[Any]:
        """The values a grid search takes (ConfigError for a continuous distribution)."""
        d, s = self.distribution, self.spec
        if d == "constant":
            return [s["value"]]
        if d.startswith("categorical"):
            return list(s["values"])
        if d == "int_uniform":
            return list(range(s["min"], s["max"] + 1))
        if d == "q_uniform":
            q = s.get("q", 1.0)
            steps = math.floor((s["max"] - s["min"]) / q + 1e-9)
            return [_quantized(s["min"] + k * q, q) for k in range(steps + 1)]
        raise ConfigError(
            f"parameters.{self.name}: method: grid cannot enumerate distribution {d!r}; "
            f"use one of {GRID_DISTRIBUTIONS} or method: random"
        )

    def sample(self, rng: np.random.Generator) -> Any:
        """One draw from the parameter's distribution."""
        d, s = self.distribution, self.spec
        if d == "constant":
            return s["value"]
        if d == "categorical":
            return s["values"][int(rng.integers(len(s["values"])))]
        if d == "categorical_w_probabilities":
            p = np.asarray(s["probabilities"], dtype=float)
            return s["values"][int(rng.choice(len(p), p=p / p.sum()))]
        if d == "int_uniform":
            return int(rng.integers(s["min"], s["max"] + 1))
        q = s.get("q")
        if d in ("uniform", "q_uniform"):
            x = rng.uniform(s["min"], s["max"])
        elif d in ("log_uniform", "q_log_uniform"):
            x = math.exp(rng.uniform(s["min"], s["max"]))
        elif d in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values"):
            # inv_log_uniform_values: log(1/X) uniform on [log(1/max), log(1/min)], i.e. X log-uniform.
            x = math.exp(rng.uniform(math.log(s["min"]), math.log(s["max"])))
        elif d == "inv_log_uniform":
            x = math.exp(-rng.uniform(s["min"], s["max"]))
        elif d in ("normal", "q_normal"):
            x = rng.normal(s.get("mu", 0.0), s.get("sigma", 1.0))
        elif d in ("log_normal", "q_log_normal"):
            x = math.exp(rng.normal(s.get("mu", 0.0), s.get("sigma", 1.0)))
        else:  # beta, q_beta
            x = rng.beta(s.get("a", 1.0), s.get("b", 1.0))
        return _quantized(float(x), q) if d.startswith("q_") else float(x)


def _quantized(x: float, q: float | None) -> float | int:
    q = 1.0 if q is None else q
    value = round(x / q) * q
    return int(round(value)) if float(q).is_integer() else float(value)


@dataclass
class SweepConfig:
    """A validated W&B sweep file."""

    program: str
    method: str
    parameters: list[Parameter]
    command: list[str]
    metric: dict[str, Any] | None = None
    name: str | None = None
    project: str | None = None
    run_cap: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def goal(self) -> str:
        return (self.metric or {}).get("goal", "minimize")


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


#: The keys of a W&B sweep parameter (W&B's sweep configuration reference).
PARAMETER_KEYS = frozenset(
    {"value", "values", "probabilities", "distribution", "min", "max", "mu", "sigma", "q", "parameters"}
)


def parse_parameter(name: str, spec: Any) -> Parameter:
    """Validate one ``parameters`` entry against W&B's documented search constraints."""
    where = f"parameters.{name}"
    if not PARAMETER_NAME.match(str(name)):
        raise ConfigError(f"{where}: a parameter name must match {PARAMETER_NAME.pattern}")
    if not isinstance(spec, dict) or not spec:
        raise ConfigError(f"{where} must be a mapping such as {{values: [...]}}, got {spec!r}")
    if "parameters" in spec:
        raise ConfigError(
            f"{where}: nested parameters pass a dict to the program; name the leaves with dots "
            f"instead (e.g. {name}.gamma), which dsbo.train reads as --{name}.gamma"
        )
    unknown = sorted(set(spec) - PARAMETER_KEYS)
    if unknown:
        hints = [difflib.get_close_matches(str(k), sorted(PARAMETER_KEYS), n=1) for k in unknown]
        hint = "; ".join(f"did you mean {h[0]!r} for {k!r}?" for k, h in zip(unknown, hints, strict=True) if h)
        raise ConfigError(
            f"{where}: unknown key(s) {unknown}" + (f" ({hint})" if hint else "")
            + f"; a parameter takes {', '.join(sorted(PARAMETER_KEYS))}"
        )
    distribution = spec.get("distribution")
    if distribution is None:  # W&B's inference rules
        if "values" in spec:
            distribution = "categorical_w_probabilities" if "probabilities" in spec else "categorical"
        elif "value" in spec:
            distribution = "constant"
        elif "min" in spec and "max" in spec:
            both_int = all(isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("min", "max"))
            distribution = "int_uniform" if both_int else "uniform"
        else:
            raise ConfigError(f"{where}: give value, values, or min and max (with an optional distribution)")
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(f"{where}: distribution={distribution!r} is not one of {sorted(DISTRIBUTIONS)}")
    allowed = set(DISTRIBUTIONS[distribution]) | {"distribution"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(f"{where}: keys {unknown} do not belong to distribution {distribution!r} (allowed: {sorted(allowed)})")
    required = {
        "constant": ("value",),
        "categorical": ("values",),
        "categorical_w_probabilities": ("values", "probabilities"),
    }.get(distribution, tuple(k for k in ("min", "max") if k in DISTRIBUTIONS[distribution]))
    missing = [k for k in required if k not in spec]
    if missing:
        raise ConfigError(f"{where}: distribution {distribution!r} needs {missing}")
    s = dict(spec)
    s.pop("distribution", None)
    if "values" in s and (not isinstance(s["values"], list) or not s["values"]):
        raise ConfigError(f"{where}.values must be a non-empty list")
    if "probabilities" in s:
        p = s["probabilities"]
        if not isinstance(p, list) or len(p) != len(s["values"]) or not all(_is_number(v) and v >= 0 for v in p) or sum(p) <= 0:
            raise ConfigError(f"{where}.probabilities must be {len(s['values'])} numbers >= 0 with a positive sum")
    for key in ("min", "max", "q", "mu", "sigma", "a", "b"):
        if key in s and not _is_number(s[key]):
            raise ConfigError(f"{where}.{key}={s[key]!r} must be a finite number")
    if "min" in s and s["min"] > s["max"]:
        raise ConfigError(f"{where}: min={s['min']} must be <= max={s['max']}")
    if distribution == "int_uniform" and not all(isinstance(s[k], int) for k in ("min", "max")):
        raise ConfigError(f"{where}: int_uniform needs integer min and max")
    if distribution.endswith("_values") and s["min"] <= 0:
        raise ConfigError(f"{where}: {distribution} needs min > 0, got {s['min']}")
    for key in ("q", "sigma", "a", "b"):
        if key in s and s[key] <= 0:
            raise ConfigError(f"{where}.{key}={s[key]} must be > 0")
    return Parameter(str(name), distribution, s)


def parse_sweep(raw: Any, source: str = "sweep") -> SweepConfig:
    """Validate a sweep configuration (a dict loaded from YAML) against W&B's documented keys."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a sweep file is a mapping of W&B sweep keys, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(SWEEP_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown top-level keys {unknown}; W&B sweep keys are {list(SWEEP_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise ConfigError(f"{source}: missing required keys {missing}")
    method = raw["method"]
    if method not in METHODS:
        raise ConfigError(f"{source}: method={method!r} must be one of {METHODS}")
    if method == "bayes":
        raise ConfigError(
            f"{source}: method: bayes is decided by W&B's server-side sweep controller and cannot run "
            "locally offline; run it with `wandb sweep FILE` and `wandb agent`, or use grid or random here"
        )
    if not isinstance(raw["program"], str) or not raw["program"]:
        raise ConfigError(f"{source}: program must be a non-empty string (the training script)")
    for key in ("name", "description", "project", "entity"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{source}: {key} must be a string, got {raw[key]!r}")
    metric = raw.get("metric")
    if metric is not None:
        if not isinstance(metric, dict) or "name" not in metric or not isinstance(metric["name"], str):
            raise ConfigError(f"{source}: metric must be a mapping with a name (and goal), got {metric!r}")
        bad = sorted(set(metric) - set(METRIC_KEYS))
        if bad:
            raise ConfigError(f"{source}: metric keys {bad} are not W&B metric keys {list(METRIC_KEYS)}")
        if metric.get("goal", "minimize") not in GOALS:
            raise ConfigError(f"{source}: metric.goal={metric['goal']!r} must be one of {GOALS}")
        if "target" in metric and not _is_number(metric["target"]):
            raise ConfigError(f"{source}: metric.target={metric['target']!r} must be a number")
    run_cap = raw.get("run_cap")
    if run_cap is not None and (not isinstance(run_cap, int) or isinstance(run_cap, bool) or run_cap < 1):
        raise ConfigError(f"{source}: run_cap={run_cap!r} must be an integer >= 1")
    early = raw.get("early_terminate")
    if early is not None and (not isinstance(early, dict) or early.get("type") != "hyperband"):
        raise ConfigError(f"{source}: early_terminate must be a mapping with type: hyperband, got {early!r}")
    params = raw["parameters"]
    if not isinstance(params, dict) or not params:
        raise ConfigError(f"{source}: parameters must be a non-empty mapping of parameter name to search constraint")
    parameters = [parse_parameter(name, spec) for name, spec in params.items()]
    command = raw.get("command", DEFAULT_COMMAND)
    if not isinstance(command, list) or not command or any(isinstance(c, dict | list) for c in command):
        raise ConfigError(f"{source}: command must be a non-empty list of strings, got {command!r}")
    command = [str(c) for c in command]
    for c in command:
        match = MACRO.match(c)
        if match and match.group(1) not in MACROS:
            raise ConfigError(f"{source}: command macro {c} is not one of {['${' + m + '}' for m in MACROS]}")
    if method == "grid":
        for p in parameters:
            p.grid_values()  # raises for a continuous distribution
    return SweepConfig(
        program=raw["program"],
        method=method,
        parameters=parameters,
        command=command,
        metric=metric,
        name=raw.get("name"),
        project=raw.get("project"),
        run_cap=run_cap,
        raw=raw,
    )


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and validate a sweep YAML file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"sweep file {str(path)!r}: no such file")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"sweep file {str(path)!r} is not valid YAML: {exc}") from None
    return parse_sweep(raw, source=str(path))


# ---------------------------------------------------------------------- expansion
def expand_runs(sweep: SweepConfig, count: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """The parameter configurations the sweep runs, in order.

    Grid: the cartesian product (first parameter slowest), cut at ``count`` / ``run_cap``.
    Random: ``count`` (else ``run_cap``) draws from a generator seeded with ``seed``.
    """
    limit = count if count is not None else sweep.run_cap
    if limit is not None and limit < 1:
        raise ConfigError(f"count={limit} must be >= 1")
    names = [p.name for p in sweep.parameters]
    if sweep.method == "grid":
        grid = itertools.product(*(p.grid_values() for p in sweep.parameters))
        runs = [dict(zip(names, values, strict=True)) for values in grid]
        return runs[:limit] if limit is not None else runs
    if limit is None:
        raise ConfigError("method: random runs until stopped in W&B; give --count N (or run_cap in the file)")
    rng = np.random.default_rng(seed)
    return [{p.name: p.sample(rng) for p in sweep.parameters} for _ in range(limit)]


def _flag_value(value: Any) -> str:
    return str(value)  # what the W&B agent does: f"--{name}={value}"


def macro_values(params: dict[str, Any], program: str, args_json_file: Path | None) -> dict[str, list[str]]:
    """Each ``${macro}`` of W&B's agent and the arguments it expands to."""
    args = [f"--{k}={_flag_value(v)}" for k, v in params.items()]
    no_bool = [f"--{k}" if v is True else f"--{k}={_flag_value(v)}" for k, v in params.items() if v is not False]
    return {
        "env": ["/usr/bin/env"] if os.name != "nt" else [],
        "interpreter": [sys.executable],
        "program": [program],
        "args": args,
        "args_no_hyphens": [a[2:] for a in args],
        "args_no_boolean_flags": no_bool,
        "args_json": [json.dumps(params)],
        "args_json_file": [str(args_json_file)] if args_json_file is not None else [],
    }



def build_command(
    sweep: SweepConfig, params: dict[str, Any], args_json_file: Path | None = None, environ: dict[str, str] | None = None
) -> list[str]:
    """The run's command line: the sweep's ``command`` with the macros substituted."""
    values = macro_values(params, sweep.program, args_json_file)
    environ = os.environ if environ is None else environ
    out: list[str] = []
    for item in sweep.command:
        match = MACRO.match(item)
        if match:
            out.extend(values[match.group(1)])
            continue

        def envvar(m: re.Match) -> str:
            name = m.group(1)
            if name not in environ:
                raise ConfigError(f"command: ${{envvar:{name}}} but the environment variable {name} is not set")
            return environ[name]

        out.append(ENVVAR.sub(envvar, item))
    return out


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


def read_metric(run_dir: Path, name: str) -> float | None:
    """``name`` from the run's ``summary.json`` (dsbo.train) or its offline W&B summary."""
    candidates = [run_dir / RUN_SUMMARY, *sorted(run_dir.glob(WANDB_SUMMARY_GLOB), key=lambda p: p.stat().st_mtime, reverse=True)]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            summary = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        value = summary.get(name) if isinstance(summary, dict) else None
        if _is_number(value):
            return float(value)
    return None


def run_one(
    sweep: SweepConfig,
    record: RunRecord,
    run_dir: Path,
    sweep_id: str,
    timeout: float | None = None,
) -> RunRecord:
    """Run one configuration as a subprocess (output in ``run_dir/output.log``)."""
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
    try:
        record.command = build_command(sweep, record.params, json_file, env)
        with (run_dir / "output.log").open("w") as log:
            proc = subprocess.run(record.command, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
        record.returncode = proc.returncode
    except subprocess.TimeoutExpired:
        record.status, record.error = "timeout", f"no result after {timeout} s"
    except (OSError, ConfigError) as exc:
        record.status, record.error = "failed", str(exc)
    record.seconds = round(time.perf_counter() - started, 3)
    if record.status in ("timeout", "failed"):
        return record
    if record.returncode != 0:
        record.status = "failed"
        record.error = f"exit code {record.returncode}: {_tail(run_dir / 'output.log')}"
        return record
    record.status = "finished"
    if sweep.metric is not None:
        record.metric = read_metric(run_dir, sweep.metric["name"])
        if record.metric is None:
            record.status = "no_metric"
            record.error = f"metric {sweep.metric['name']!r} not found in the run's summary"
    return record


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


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


def run_sweep(
    sweep: SweepConfig,
    sweep_dir: Path,
    count: int | None = None,
    seed: int = 0,
    timeout: float | None = None,
    console: Console | None = None,
    progress: bool = True,
    source: str = "",
) -> dict[str, Any]:
    """Run every configuration of ``sweep``; returns what ``sweep.json`` holds."""
    console = console or Console(stderr=True)
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
    with bar:
        task = bar.add_task(sweep.name or "sweep", total=len(records), last="", best="-")
        for record in records:
            run_one(sweep, record, sweep_dir / record.run, sweep_id, timeout)
            best = best_run(sweep, records)
            last = f"{record.run} {record.status}" + ("" if record.metric is None else f" {metric_name}={record.metric:.4g}")
            bar.update(task, advance=1, last=last, best="-" if best is None else f"{best.metric:.4g} ({best.run})")
            if not progress:
                console.print(last, markup=False)
            write_results(sweep_dir, info, records, best_line(sweep, best))
    best = best_run(sweep, records)
    info["best"] = None if best is None else asdict(best)
    line = best_line(sweep, best)
    write_results(sweep_dir, info, records, line)
    info["runs"] = [asdict(r) for r in records]
    info["best_line"] = line
    return info


# ---------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dsbo.sweep",
        description="Run a W&B sweep file (grid or random) locally, one offline W&B run per configuration.",
    )
    parser.add_argument("sweep_file", help="a W&B sweep YAML file (also valid for `wandb sweep`)")
    parser.add_argument("--count", type=int, default=None, help="number of runs (random: required unless run_cap; grid: a prefix)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random search (default 0)")
    parser.add_argument("--sweep-dir", default=None, help="output directory (default runs/sweeps/<name>-<timestamp>)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before a run is stopped and recorded as timeout")
    parser.add_argument("--dry-run", action="store_true", help="print the runs' commands, run nothing")
    parser.add_argument("--no-progress", action="store_true", help="one line per run instead of a progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 when at least one run finished, 1 when none did, 2 on a bad sweep file."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    console = Console(stderr=True)
    try:
        sweep = load_sweep(args.sweep_file)
        if args.dry_run:
            configs = expand_runs(sweep, args.count, args.seed)
            out = Console()
            for i, params in enumerate(configs):
                out.print(f"run-{i:03d}: " + " ".join(build_command(sweep, params, Path(f"run-{i:03d}/args.json"))), soft_wrap=True, markup=False)
            console.print(f"{len(configs)} run(s), method {sweep.method}; nothing was run (--dry-run)")
            return 0
        name = sweep.name or Path(args.sweep_file).stem
        sweep_dir = Path(args.sweep_dir or SWEEPS_ROOT / f"{name}-{datetime.now():%Y%m%d-%H%M%S}")
        info = run_sweep(sweep, sweep_dir, args.count, args.seed, args.timeout, console, not args.no_progress, args.sweep_file)
    except DsboError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 2
    statuses = [r["status"] for r in info["runs"]]
    summary = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    console.print(f"{len(statuses)} run(s): {summary}; results in {info['sweep_dir']}/sweep.json, sweep.csv", markup=False)
    console.print(info["best_line"], soft_wrap=True, markup=False)
    return 0 if any(s in ("finished", "no_metric") for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
