"""A W&B sweep file: its validated keys, the runs it asks for, and each run's command.

:func:`load_sweep` reads and validates a sweep file (W&B's documented top-level keys, the
parameters through :mod:`dsbo.space.wandb_syntax`, the ``metric``, the ``command`` and its
macros, ``early_terminate`` through :mod:`dsbo.runtime.hyperband`) into a
:class:`SweepConfig`; :func:`expand_runs` lists a grid's or a random search's configurations;
:func:`build_command` substitutes the W&B agent's macros (``${args}``, ``${args_json_file}``,
``${envvar:NAME}``, ...) for one run.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dsbo.errors import ConfigError
from dsbo.runtime.hyperband import Hyperband, parse_early_terminate
from dsbo.space.wandb_syntax import Parameter, is_number, parse_parameter, search_space

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
#: The W&B agent's command macros.
MACROS = (
    "env",
    "interpreter",
    "program",
    "args",
    "args_no_hyphens",
    "args_no_boolean_flags",
    "args_json",
    "args_json_file",
)
DEFAULT_COMMAND = ["${env}", "${interpreter}", "${program}", "${args}"]
MACRO = re.compile(r"^\$\{([a-z_]+)\}$")
ENVVAR = re.compile(r"\$\{envvar:([A-Za-z0-9_]*)\}")
SWEEPS_ROOT = Path("runs/sweeps")


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
    early_terminate: Hyperband | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def goal(self) -> str:
        return (self.metric or {}).get("goal", "minimize")


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
        raise ConfigError(
            f"{source}: dsbo must be a mapping of {sorted(BAYES_OPTIONS)}, got {raw!r}"
        )
    unknown = sorted(set(raw) - set(BAYES_OPTIONS))
    if unknown:
        raise ConfigError(
            f"{source}: dsbo: unknown option(s) {unknown}; use {sorted(BAYES_OPTIONS)}"
        )
    options = {**BAYES_OPTIONS, **raw}
    if options["default"] is not None and not isinstance(options["default"], dict):
        raise ConfigError(
            f"{source}: dsbo.default must map parameter names to the program's default values"
        )
    if "postprocess" not in raw and options["default"] is not None:
        options["postprocess"] = {"bonsai": {"rho": 0.2}}
    n_init = options["n_init"]
    if n_init is not None and (
        isinstance(n_init, bool) or not isinstance(n_init, int) or n_init < 1
    ):
        raise ConfigError(f"{source}: dsbo.n_init must be an integer >= 1, got {n_init!r}")
    return options


def parse_sweep(raw: Any, source: str = "sweep") -> SweepConfig:
    """Validate a sweep configuration (a dict loaded from YAML) against W&B's documented keys."""
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: a sweep file is a mapping of W&B sweep keys, got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - set(SWEEP_KEYS))
    if unknown:
        raise ConfigError(
            f"{source}: unknown top-level keys {unknown}; W&B sweep keys are {list(SWEEP_KEYS)}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise ConfigError(f"{source}: missing required keys {missing}")
    method = raw["method"]
    if method not in METHODS:
        raise ConfigError(f"{source}: method={method!r} must be one of {METHODS}")
    if "dsbo" in raw and method != "bayes":
        raise ConfigError(
            f"{source}: the dsbo: options configure method: bayes; this sweep is method: {method}"
        )
    if not isinstance(raw["program"], str) or not raw["program"]:
        raise ConfigError(f"{source}: program must be a non-empty string (the training script)")
    for key in ("name", "description", "project", "entity"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{source}: {key} must be a string, got {raw[key]!r}")
    metric = raw.get("metric")
    if metric is not None:
        if (
            not isinstance(metric, dict)
            or "name" not in metric
            or not isinstance(metric["name"], str)
        ):
            raise ConfigError(
                f"{source}: metric must be a mapping with a name (and goal), got {metric!r}"
            )
        bad = sorted(set(metric) - set(METRIC_KEYS))
        if bad:
            raise ConfigError(
                f"{source}: metric keys {bad} are not W&B metric keys {list(METRIC_KEYS)}"
            )
        if metric.get("goal", "minimize") not in GOALS:
            raise ConfigError(f"{source}: metric.goal={metric['goal']!r} must be one of {GOALS}")
        if "target" in metric and not is_number(metric["target"]):
            raise ConfigError(f"{source}: metric.target={metric['target']!r} must be a number")
    run_cap = raw.get("run_cap")
    if run_cap is not None and (
        not isinstance(run_cap, int) or isinstance(run_cap, bool) or run_cap < 1
    ):
        raise ConfigError(f"{source}: run_cap={run_cap!r} must be an integer >= 1")
    early_terminate = parse_early_terminate(raw.get("early_terminate"), metric, source)
    params = raw["parameters"]
    if not isinstance(params, dict) or not params:
        raise ConfigError(
            f"{source}: parameters must be a non-empty mapping of parameter name to search constraint"
        )
    parameters = [parse_parameter(name, spec) for name, spec in params.items()]
    command = raw.get("command", DEFAULT_COMMAND)
    if (
        not isinstance(command, list)
        or not command
        or any(isinstance(c, dict | list) for c in command)
    ):
        raise ConfigError(f"{source}: command must be a non-empty list of strings, got {command!r}")
    command = [str(c) for c in command]
    for c in command:
        match = MACRO.match(c)
        if match and match.group(1) not in MACROS:
            raise ConfigError(
                f"{source}: command macro {c} is not one of {['${' + m + '}' for m in MACROS]}"
            )
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
        early_terminate=early_terminate,
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
def expand_runs(
    sweep: SweepConfig, count: int | None = None, seed: int = 0
) -> list[dict[str, Any]]:
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
        raise ConfigError(
            "method: random runs until stopped in W&B; give --count N (or run_cap in the file)"
        )
    rng = np.random.default_rng(seed)
    return [{p.name: p.sample(rng) for p in sweep.parameters} for _ in range(limit)]


def _flag_value(value: Any) -> str:
    return str(value)  # what the W&B agent does: f"--{name}={value}"


def macro_values(
    params: dict[str, Any], program: str, args_json_file: Path | None
) -> dict[str, list[str]]:
    """Each ``${macro}`` of W&B's agent and the arguments it expands to."""
    args = [f"--{k}={_flag_value(v)}" for k, v in params.items()]
    no_bool = [
        f"--{k}" if v is True else f"--{k}={_flag_value(v)}"
        for k, v in params.items()
        if v is not False
    ]
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
    sweep: SweepConfig,
    params: dict[str, Any],
    args_json_file: Path | None = None,
    environ: dict[str, str] | None = None,
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
                raise ConfigError(
                    f"command: ${{envvar:{name}}} but the environment variable {name} is not set"
                )
            return environ[name]

        out.append(ENVVAR.sub(envvar, item))
    return out
