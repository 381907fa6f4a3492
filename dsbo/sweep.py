r"""``python -m dsbo.sweep``: run a W&B sweep file locally and offline.

The file is a valid W&B sweep configuration (``wandb sweep FILE`` accepts it as is); this
command runs it without a W&B server::

    python -m dsbo.sweep configs/sweeps/simple-smb-gamma.yaml            # all grid points
    python -m dsbo.sweep configs/sweeps/simple-smb-random.yaml --count 4  # 4 random draws
    python -m dsbo.sweep configs/sweeps/simple-smb-gamma.yaml --dry-run  # print the commands
    python -m dsbo.sweep configs/sweeps/simple-smb-bayes.yaml --count 12 --workers 2

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
  offline W&B summary (``wandb-summary.json``). The sweep directory (``--sweep-dir``, default
  ``runs/sweeps/<name>-<timestamp>``) receives ``sweep.json``, ``sweep.csv``, ``best.txt`` and ``trace.png``.
- ``--workers N`` runs N runs at once (threads that each wait for one subprocess). Each run's
  process gets ``SIGKILL`` if the sweep dies (``setpriv --pdeathsig`` on Linux), so a killed
  sweep leaves no orphan runs behind.

``method: bayes`` without a W&B server: the sweep's parameters become a dsbo search space
(:func:`search_space`: ``uniform``, ``q_uniform``, ``int_uniform``, ``log_uniform``,
``log_uniform_values`` and its ``q_``/``inv_`` forms, ``categorical`` ``values``, fixed
``value``), ``metric`` is the objective (negated for ``goal: minimize``, BoTorch maximizes),
and a :class:`~dsbo.campaign.Campaign` proposes each run's parameters; every run is the
sweep's ``command`` as above. Options W&B ignores go under a top-level ``dsbo:`` key
(:data:`BAYES_OPTIONS`; defaults MAP-SAAS + qLogNEI, and BONSAI pruning toward ``default``,
the program's default hyperparameters, when given). The campaign's store is
``<sweep dir>/trials.sqlite``: the same command with the same ``--sweep-dir`` resumes a killed
sweep (even ``kill -9``), re-running only the runs that were in flight and never a finished
one. A failed run (exit code, timeout, no metric) is a failed trial. ``sweep.csv``,
``best.txt`` and ``trace.png`` are rewritten after every run. With ``--workers N``, each new
proposal is conditioned on the runs still in flight (BoTorch's pending points).
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
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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
    "dsbo",
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
    if "dsbo" in raw and method != "bayes":
        raise ConfigError(f"{source}: the dsbo: options configure method: bayes; this sweep is method: {method}")
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
    if method == "bayes":
        if metric is None:
            raise ConfigError(f"{source}: method: bayes needs a metric (name and goal) to optimize")
        search_space(parameters, source)  # raises if the parameters cannot form one
        bayes_options(raw.get("dsbo"), source)
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
            proc = subprocess.run(_dies_with_sweep(record.command), stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
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
        record.error = f"exit code {record.returncode}: {log_tail(run_dir / 'output.log')}"
        return record
    record.status = "finished"
    if sweep.metric is not None:
        record.metric = read_metric(run_dir, sweep.metric["name"])
        if record.metric is None:
            record.status = "no_metric"
            record.error = f"metric {sweep.metric['name']!r} not found in the run's summary"
    return record


def log_tail(path: Path, lines: int = 3) -> str:
    """The last ``lines`` lines of a run's log joined by `` | `` (for an error message)."""
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
) -> dict[str, Any]:
    """Run every configuration of ``sweep`` (``workers`` at once); returns what ``sweep.json``
    holds. ``method: bayes`` goes to :func:`run_bayes`."""
    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if sweep.method == "bayes":
        return run_bayes(sweep, sweep_dir, count, seed, timeout, console, progress, source, workers)
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
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsbo-sweep-run") as pool:
        task = bar.add_task(sweep.name or "sweep", total=len(records), last="", best="-")
        futures = [pool.submit(run_one, sweep, r, sweep_dir / r.run, sweep_id, timeout) for r in records]
        for future in futures:  # reported in order (with one worker, as each run ends)
            record = future.result()
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
    plot_sweep_trace(sweep, records, sweep_dir / "trace.png")
    info["runs"] = [asdict(r) for r in records]
    info["best_line"] = line
    return info


# ---------------------------------------------------------------------- bayes: the search space
#: Distributions a bayes sweep turns into a bounded dimension.
BAYES_DISTRIBUTIONS = (
    "constant", "categorical", "uniform", "q_uniform", "int_uniform", "log_uniform",
    "log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values",
)  # fmt: skip


@dataclass
class Dimension:
    """One searched parameter as a box dimension ``[low, high]`` and the map back to the
    value the program receives: ``linear`` (``uniform``, ``q_uniform``: the value itself,
    rounded to the ``q`` grid), ``log`` (``log_uniform*``: the natural log of the value, so the
    surrogate sees decades evenly), ``int`` (``int_uniform``), ``index`` (``categorical``: the
    position in ``values``, an integer dimension; a surrogate reads the order of the list)."""

    name: str
    kind: str
    low: float
    high: float
    q: float | None = None
    values: list[Any] | None = None

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "index")

    def decode(self, u: float) -> Any:
        if self.kind == "index":
            return self.values[int(round(u))]
        if self.kind == "int":
            return int(round(u))
        value = math.exp(u) if self.kind == "log" else float(u)
        return _quantized(value, self.q) if self.q is not None else value

    def encode(self, value: Any, where: str) -> float:
        if self.kind == "index":
            if value not in self.values:
                raise ConfigError(f"{where}={value!r} is not one of parameters.{self.name}.values {self.values}")
            return float(self.values.index(value))
        if not _is_number(value):
            raise ConfigError(f"{where}={value!r} must be a number")
        u = math.log(value) if self.kind == "log" and value > 0 else float(value)
        if self.kind == "log" and value <= 0 or not self.low - 1e-12 <= u <= self.high + 1e-12:
            raise ConfigError(f"{where}={value!r} lies outside parameters.{self.name}")
        return u


@dataclass
class SearchSpace:
    """The sweep's parameters as a dsbo search box: the searched :class:`Dimension` s, the
    fixed ``value`` s, and the parameter order of the sweep file."""

    dimensions: list[Dimension]
    fixed: dict[str, Any]
    order: list[str]

    def params(self, x: Sequence[float]) -> dict[str, Any]:
        """The run's parameters (sweep order) for the point ``x``."""
        values = {d.name: d.decode(u) for d, u in zip(self.dimensions, x, strict=True)}
        return {name: values[name] if name in values else self.fixed[name] for name in self.order}

    def point(self, params: dict[str, Any], where: str) -> list[float]:
        """The point of ``params`` (``{name: value}`` for every searched parameter)."""
        missing = [d.name for d in self.dimensions if d.name not in params]
        unknown = sorted(set(params) - {d.name for d in self.dimensions})
        if missing or unknown:
            raise ConfigError(f"{where} needs a value for each searched parameter {[d.name for d in self.dimensions]}; "
                              f"missing {missing}, unknown {unknown}")
        return [d.encode(params[d.name], f"{where}.{d.name}") for d in self.dimensions]


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def search_space(parameters: Sequence[Parameter], source: str = "sweep") -> SearchSpace:
    """The dsbo search space of a bayes sweep's parameters (see :class:`Dimension`).

    Raises:
        ConfigError: naming the parameter whose constraint cannot be a bounded dimension (a
            ``normal``/``beta`` prior, ``probabilities``, ``values`` of mixed types, an empty
            range), or when nothing is searched.
    """
    dims, fixed = [], {}
    for p in parameters:
        where, d, s = f"{source}: parameters.{p.name}", p.distribution, p.spec
        if d not in BAYES_DISTRIBUTIONS:
            hint = " (drop probabilities: they are a prior for method: random)" if d == "categorical_w_probabilities" else ""
            raise ConfigError(f"{where}: method: bayes searches a bounded box; distribution {d!r} cannot be one{hint}. "
                              f"Use one of {list(BAYES_DISTRIBUTIONS)}")
        if d == "constant":
            fixed[p.name] = s["value"]
            continue
        if d == "categorical":
            values = list(s["values"])
            types = sorted({_value_type(v) for v in values})
            if len(types) > 1:
                raise ConfigError(f"{where}.values {values} mix types {types}: a bayes dimension orders one kind of value")
            if any(isinstance(v, dict | list) for v in values):
                raise ConfigError(f"{where}.values must be numbers, strings or booleans, got {values}")
            if len({json.dumps(v) for v in values}) != len(values):
                raise ConfigError(f"{where}.values {values} repeat a value")
            if len(values) == 1:
                fixed[p.name] = values[0]
                continue
            dims.append(Dimension(p.name, "index", 0.0, float(len(values) - 1), values=values))
            continue
        low, high = float(s["min"]), float(s["max"])
        if d == "int_uniform":
            dim = Dimension(p.name, "int", low, high)
        elif d == "log_uniform":  # min and max are already natural logs
            dim = Dimension(p.name, "log", low, high)
        elif d in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values"):
            dim = Dimension(p.name, "log", math.log(low), math.log(high), q=s.get("q"))
        else:  # uniform, q_uniform
            dim = Dimension(p.name, "linear", low, high, q=s.get("q") if d == "q_uniform" else None)
        if not dim.low < dim.high:
            raise ConfigError(f"{where}: min={s['min']} and max={s['max']} leave nothing to search; use value: for a fixed parameter")
        dims.append(dim)
    if not dims:
        raise ConfigError(f"{source}: method: bayes needs at least one searched parameter; every parameter is fixed")
    return SearchSpace(dims, fixed, [p.name for p in parameters])


#: The ``dsbo:`` options of a bayes sweep and their defaults (``postprocess`` defaults to
#: BONSAI ``{rho: 0.2}`` toward ``default`` when ``default`` is given, else none).
BAYES_OPTIONS: dict[str, Any] = {
    "surrogate": "map-saas",
    "acquisition": "auto",
    "postprocess": None,
    "default": None,
    "n_init": None,
}


def bayes_options(raw: Any, source: str = "sweep") -> dict[str, Any]:
    """The ``dsbo:`` options with their defaults filled in (ConfigError naming a bad key)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: dsbo must be a mapping of {sorted(BAYES_OPTIONS)}, got {raw!r}")
    unknown = sorted(set(raw) - set(BAYES_OPTIONS))
    if unknown:
        raise ConfigError(f"{source}: dsbo: unknown option(s) {unknown}; use {sorted(BAYES_OPTIONS)}")
    options = {**BAYES_OPTIONS, **raw}
    if options["default"] is not None and not isinstance(options["default"], dict):
        raise ConfigError(f"{source}: dsbo.default must map parameter names to the program's default values")
    if "postprocess" not in raw and options["default"] is not None:
        options["postprocess"] = {"bonsai": {"rho": 0.2}}
    n_init = options["n_init"]
    if n_init is not None and (isinstance(n_init, bool) or not isinstance(n_init, int) or n_init < 1):
        raise ConfigError(f"{source}: dsbo.n_init must be an integer >= 1, got {n_init!r}")
    return options


def objective_name(sweep: SweepConfig) -> str:
    """The campaign's objective: the metric, negated (``neg_<name>``) when it is minimized."""
    name = sweep.metric["name"]
    return name if sweep.goal == "maximize" else f"neg_{name}"


def bayes_problem(sweep: SweepConfig, source: str = "sweep") -> tuple[Any, SearchSpace, dict[str, Any]]:
    """The black-box problem, search space and options of a bayes sweep."""
    from dsbo.problems import get_problem

    space = search_space(sweep.parameters, source)
    options = bayes_options(sweep.raw.get("dsbo"), source)
    default = options["default"]
    target = "center" if default is None else space.point(default, f"{source}: dsbo.default")
    problem = get_problem(
        "black-box",
        parameters={d.name: [d.low, d.high] for d in space.dimensions},
        objectives=[objective_name(sweep)],
        integer=[d.name for d in space.dimensions if d.is_integer],
        target=target,
    )
    return problem, space, options


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
) -> dict[str, Any]:
    """Run (or resume) a bayes sweep: a dsbo campaign proposes, each run is the command.

    The campaign's store ``<sweep_dir>/trials.sqlite`` records every proposal before its run
    starts and every outcome before the next proposal; on resume, runs left in flight are run
    again (their directories cleared) and finished runs never are. Returns what
    ``sweep.json`` holds.
    """
    from dsbo.campaign import Campaign
    from dsbo.report import plot_trace

    console = console or Console(stderr=True)
    budget = count if count is not None else sweep.run_cap
    if budget is None:
        raise ConfigError("method: bayes runs until stopped in W&B; give --count N (or run_cap in the file)")
    if budget < 1:
        raise ConfigError(f"count={budget} must be >= 1")
    problem, space, options = bayes_problem(sweep, source or "sweep")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    store_path = sweep_dir / "trials.sqlite"
    resuming = store_path.exists()
    campaign = Campaign(
        problem,
        surrogate=options["surrogate"],
        acquisition=options["acquisition"],
        postprocess=options["postprocess"],
        budget=budget,
        n_init=options["n_init"] if options["n_init"] is not None else min(budget, max(2, 2 * problem.dim)),
        seed=seed,
        store=store_path,
        max_consecutive_failures=budget + 1,  # a sweep records failed runs and goes on
        dry_run=not resuming,
    )
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
        for t in store.trials(("completed", "failed", "pending")):
            run = t.metadata.get("run", {})
            out.append(RunRecord(
                run=f"run-{t.id:03d}", params=space.params(t.x),
                status=run.get("status", "running" if t.status == "pending" else t.status),
                metric=None if t.y is None else sign * t.y[0], returncode=run.get("returncode"),
                seconds=run.get("seconds", 0.0), run_dir=str(sweep_dir / f"run-{t.id:03d}"),
                command=run.get("command", []), error=t.error,
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
    if resuming:
        console.print(f"resuming {sweep_dir}: {store.count(('completed', 'failed'))} run(s) done, {len(left)} to run again", markup=False)
    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[last]}", markup=False), TextColumn("best {task.fields[best]}", markup=False),
        TimeElapsedColumn(), console=console, disable=not progress,
    )  # fmt: skip
    in_flight: dict[Future, Any] = {}
    with bar, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsbo-sweep-run") as pool:
        task = bar.add_task(sweep.name or "sweep", total=budget, completed=store.count(("completed", "failed")), last="", best="-")

        def launch(trial: Any) -> None:
            record = RunRecord(run=f"run-{trial.id:03d}", params=space.params(trial.x))
            run_dir = sweep_dir / record.run
            shutil.rmtree(run_dir, ignore_errors=True)  # what an interrupted attempt left
            in_flight[pool.submit(run_one, sweep, record, run_dir, sweep_id, timeout)] = trial

        for trial in left:
            launch(trial)
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
                                                     "seconds": record.seconds, "command": record.command})  # fmt: skip
                if record.status == "finished":
                    campaign.tell(trial.id, values=[sign * record.metric], eval_time=record.seconds)
                else:
                    campaign.tell(trial.id, error=record.error or record.status, eval_time=record.seconds)
                line = save()
                last = f"{record.run} {record.status}" + ("" if record.metric is None else f" {metric_name}={record.metric:.4g}")
                best = info["best"]
                bar.update(task, completed=store.count(("completed", "failed")), last=last,
                           best="-" if best is None else f"{best['metric']:.4g} ({best['run']})")  # fmt: skip
                if not progress:
                    console.print(last, markup=False)
    line = save()
    info["runs"] = [asdict(r) for r in records()]
    info["best_line"] = line
    store.close()
    return info


# ---------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dsbo.sweep",
        description="Run a W&B sweep file (grid, random, or bayes on dsbo's BO) locally, one offline W&B run per configuration.",
    )
    parser.add_argument("sweep_file", help="a W&B sweep YAML file (also valid for `wandb sweep`)")
    parser.add_argument("--count", type=int, default=None, help="number of runs (random: required unless run_cap; grid: a prefix)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random search (default 0)")
    parser.add_argument("--sweep-dir", default=None, help="output directory (default runs/sweeps/<name>-<timestamp>)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before a run is stopped and recorded as timeout")
    parser.add_argument("--workers", type=int, default=1, help="runs at once (bayes: each proposal sees the runs in flight)")
    parser.add_argument("--dry-run", action="store_true", help="print the runs' commands, run nothing")
    parser.add_argument("--no-progress", action="store_true", help="one line per run instead of a progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 when at least one run finished, 1 when none did, 2 on a bad sweep file."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    console = Console(stderr=True)
    try:
        sweep = load_sweep(args.sweep_file)
        if args.dry_run and sweep.method == "bayes":
            _, space, options = bayes_problem(sweep, args.sweep_file)
            for d in space.dimensions:
                console.print(f"{d.name}: {d.kind} [{d.low:g}, {d.high:g}]" + (f" values {d.values}" if d.values else ""), markup=False)
            console.print(f"method bayes: a dsbo campaign ({options['surrogate']}, {options['acquisition']}) proposes each run; nothing was run (--dry-run)", markup=False)
            return 0
        if args.dry_run:
            configs = expand_runs(sweep, args.count, args.seed)
            out = Console()
            for i, params in enumerate(configs):
                out.print(f"run-{i:03d}: " + " ".join(build_command(sweep, params, Path(f"run-{i:03d}/args.json"))), soft_wrap=True, markup=False)
            console.print(f"{len(configs)} run(s), method {sweep.method}; nothing was run (--dry-run)")
            return 0
        name = sweep.name or Path(args.sweep_file).stem
        sweep_dir = Path(args.sweep_dir or SWEEPS_ROOT / f"{name}-{datetime.now():%Y%m%d-%H%M%S}")
        info = run_sweep(sweep, sweep_dir, args.count, args.seed, args.timeout, console, not args.no_progress, args.sweep_file, args.workers)
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
