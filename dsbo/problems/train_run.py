r"""A ``python -m dsbo.train`` run as a black box: tune a zoo model's hyperparameters by BO.

Each evaluation is one real training run, ``python -m dsbo.train fit --config <config>
<args> --<name>=<value> ...``, in its own run directory; the outcomes are metrics the run
writes to its ``summary.json`` (e.g. HiReD's ``best_val_wape``, the best epoch's value, or its per-level
``val_wape_level{k}``). A minimized metric ``m`` becomes the objective ``neg_m`` (dsbo
maximizes), so one metric is ordinary single-objective BO and several are a multi-objective
campaign (qLogNEHVI, qParEGO, MOBO-RS).

The search space is written like a W&B sweep's ``parameters`` (``distribution:
log_uniform_values`` / ``uniform`` / ``int_uniform`` / ``q_uniform`` / ``categorical`` with
``min``/``max`` or ``values``, and fixed ``value`` s), and read into a
:class:`dsbo.space.SearchSpace` exactly as ``method: bayes`` sweeps do
(:func:`dsbo.space.wandb_syntax.search_space`: log-uniform parameters are searched in their
natural log, categoricals one-hot); the problem carries that space, so its history and summary
show each hyperparameter's value as the run receives it. ``default`` gives the program's
default hyperparameters: the problem's default point, toward which BONSAI prunes, so a campaign says which few hyperparameters are
worth changing (Paria thesis ch. 6's table 6.5 defaults for HiReD).

A run that exits with an error, times out or does not write a requested metric is a failed
evaluation (recorded by the campaign, not a crash). Nothing is kept in memory between runs, so
campaigns over this problem resume like any other.

Example (``configs/bo/hired-tourismsmall.yaml``)::

    problem:
      name: train-run
      options:
        config: configs/train/hired-tourismsmall.yaml
        args: ["--trainer.max_epochs=20"]
        parameters:
          model.init_args.lambda_e: {distribution: log_uniform_values, min: 1.0e-10, max: 1.0e-2}
          model.init_args.embedding_dim: {distribution: int_uniform, min: 2, max: 16}
        default: {model.init_args.lambda_e: 7.2498e-8, model.init_args.embedding_dim: 6}
        tied: {data.init_args.num_representatives: model.init_args.num_representatives}
        metrics: [val_wape]

``tied`` passes a searched parameter's value to a second option as well, for a setting that
the model and the datamodule must share (HiReD's NMF rank ``R``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from botorch.test_functions.base import BaseTestProblem, MultiObjectiveTestProblem
from torch import Tensor

from dsbo.errors import ConfigError, EvaluationError
from dsbo.problems.base import Problem
from dsbo.problems.registry import register_problem
from dsbo.problems.run_summary import log_tail, read_metric
from dsbo.problems.trial_channel import CHANNEL_ENV, MONITOR_ENV, relay
from dsbo.space import Fixed, SearchSpace
from dsbo.space.wandb_syntax import parse_parameter, search_space

#: Where the runs go unless ``runs_dir`` says otherwise.
DEFAULT_RUNS_DIR = "runs/train-run"


def _metric_names(metrics: Any, goal: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(metric names, objective names)``; minimized metrics are negated (``neg_<name>``)."""
    if isinstance(metrics, str):
        metrics = [metrics]
    if (
        not isinstance(metrics, list | tuple)
        or not metrics
        or not all(isinstance(m, str) and m for m in metrics)
    ):
        raise ConfigError(
            f"train-run: metrics must be a non-empty list of summary.json keys, got {metrics!r}"
        )
    if len(set(metrics)) != len(metrics):
        raise ConfigError(f"train-run: metrics {list(metrics)} repeat a name")
    if goal not in ("minimize", "maximize"):
        raise ConfigError(f"train-run: goal={goal!r}; use minimize or maximize")
    objectives = tuple(m if goal == "maximize" else f"neg_{m}" for m in metrics)
    return tuple(metrics), objectives


class TrainingRun(BaseTestProblem):
    """Outcomes of ``python -m dsbo.train fit`` runs, one run per row of ``X`` (a model point of
    ``space``, whose decoded values, fixed ones included, are the run's options)."""

    _is_minimization_by_default = False

    def __init__(
        self,
        space: SearchSpace,
        config: str,
        args: Sequence[str],
        metrics: Sequence[str],
        sign: float,
        runs_dir: str,
        timeout: float | None,
        tied: Mapping[str, str] | None = None,
    ) -> None:
        self.space = space
        self.dim = space.dim
        self._bounds = list(space.bounds)
        self.discrete_inds = list(space.integer_columns)
        self.continuous_inds = [i for i in range(self.dim) if i not in self.discrete_inds]
        self.num_objectives = len(metrics)
        super().__init__()
        self.config, self.args, self.metrics = config, list(args), list(metrics)
        self.sign, self.runs_dir, self.timeout = sign, runs_dir, timeout
        self.tied = dict(tied or {})

    def command(self, params: Mapping[str, Any]) -> list[str]:
        """The run's command line for the hyperparameters ``params``."""
        values = {**params, **{flag: params[source] for flag, source in self.tied.items()}}
        flags = [f"--{name}={value}" for name, value in values.items()]
        return [
            sys.executable,
            "-m",
            "dsbo.train",
            "fit",
            "--config",
            self.config,
            *self.args,
            *flags,
        ]

    def run(self, params: Mapping[str, Any], trial: Any = None) -> list[float]:
        """Train once with ``params``; the requested metrics from the run's ``summary.json``.
        With a running ``trial`` (early stopping), the run reports its first metric after each
        validation epoch through a channel and stops when the trial says so
        (:mod:`dsbo.problems.trial_channel`); a trial that trained before (a freeze-thaw thaw,
        a retry) resumes from its run's ``last.ckpt`` (:meth:`_run_dir`)."""
        run_dir, resume = self._run_dir(params, trial)
        env = {
            **os.environ,
            "DSBO_RUN_DIR": str(run_dir),
            "WANDB_DIR": str(run_dir),
            "WANDB_SILENT": "true",
        }
        env.setdefault("WANDB_MODE", "offline")
        if trial is not None:
            (run_dir / "trial").mkdir(exist_ok=True)
            for name in (
                "reports.jsonl",
                "decisions.jsonl",
            ):  # a resumed run's channel starts empty
                (run_dir / "trial" / name).unlink(missing_ok=True)
            env.update({CHANNEL_ENV: str(run_dir / "trial"), MONITOR_ENV: self.metrics[0]})
        command = self.command(params) + ([] if resume is None else [f"--ckpt_path={resume}"])
        try:
            with (run_dir / "output.log").open("w" if resume is None else "a") as log:
                if trial is None:
                    proc = subprocess.run(
                        command,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        timeout=self.timeout,
                        check=False,
                    )
                else:
                    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                    try:
                        refused = relay(
                            run_dir / "trial", trial, proc, sign=self.sign, timeout=self.timeout
                        )
                    finally:
                        if proc.poll() is None:
                            proc.kill()
                        proc.wait()
                    if refused is not None:
                        raise refused
        except subprocess.TimeoutExpired:
            raise EvaluationError(
                f"training run {run_dir} gave no result within {self.timeout} s"
            ) from None
        if proc.returncode != 0:
            raise EvaluationError(
                f"training run {run_dir} exited with {proc.returncode}: {log_tail(run_dir / 'output.log')}"
            )
        values = {m: read_metric(run_dir, m) for m in self.metrics}
        missing = [m for m, v in values.items() if v is None]
        if missing:
            raise EvaluationError(
                f"training run {run_dir} wrote no finite {missing} to summary.json"
            )
        return [self.sign * values[m] for m in self.metrics]

    def _run_dir(self, params: Mapping[str, Any], trial: Any) -> tuple[Path, Path | None]:
        """The run's directory and the checkpoint it resumes from: a trial that already trained
        (``trial.last_step``: thawed by freeze-thaw, or retried) and whose run directory (user
        attribute ``run_dir``) holds ``checkpoints/last.ckpt`` goes on in that directory from
        it; otherwise a new directory, recorded with the trial."""
        previous = (
            (getattr(trial, "user_attrs", None) or {}).get("run_dir") if trial is not None else None
        )
        if previous and getattr(trial, "last_step", None) is not None:
            last = Path(previous) / "checkpoints" / "last.ckpt"
            if last.is_file():
                return Path(previous), last
        key = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:8]
        run_dir = Path(self.runs_dir) / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{key}-{os.getpid()}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "params.json").write_text(json.dumps(params, indent=1, default=str))
        if trial is not None and callable(getattr(trial, "set_user_attr", None)):
            trial.set_user_attr("run_dir", str(run_dir.resolve()))
        return run_dir, None

    def run_with_trial(self, x: Sequence[float], trial: Any) -> list[float]:
        """One run at model point ``x`` reporting to ``trial`` (:meth:`run`)."""
        return self.run(self.space.decode(list(x)), trial)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        rows = [self.run(self.space.decode(x)) for x in X.reshape(-1, self.dim).tolist()]
        return torch.tensor(rows, dtype=X.dtype).reshape(*X.shape[:-1], self.num_objectives)


class MultiMetricTrainingRun(TrainingRun, MultiObjectiveTestProblem):
    """:class:`TrainingRun` with several metrics: a multi-objective problem."""

    def __init__(self, *args: Any, ref_point: Sequence[float], **kwargs: Any) -> None:
        self._ref_point = list(ref_point)
        super().__init__(*args, **kwargs)


@register_problem(
    "train-run",
    "a `python -m dsbo.train fit` run per evaluation: tune a zoo model's hyperparameters",
)
def make_train_run(
    config: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    metrics: str | Sequence[str] = "val_wape",
    goal: str = "minimize",
    default: Mapping[str, Any] | None = None,
    args: Sequence[str] = (),
    ref_point: Sequence[float] | None = None,
    runs_dir: str = DEFAULT_RUNS_DIR,
    timeout: float | None = None,
    tied: Mapping[str, str] | None = None,
) -> Problem:
    """Hyperparameter tuning of a ``dsbo.train`` config (see the module doc).

    Args:
        config: The training config (``configs/train/...yaml``), passed as ``--config``.
        parameters: The searched hyperparameters, in W&B sweep syntax, keyed by their
            ``dsbo.train`` option (``model.init_args.lr``, ``data.init_args.alpha``, ...).
        metrics: ``summary.json`` keys to optimize; several make a multi-objective problem.
        goal: ``minimize`` (objectives ``neg_<metric>``) or ``maximize``, for every metric.
        default: The program's default value of every searched parameter: the default point
            (BONSAI's target). Without it, the middle of every range (a categorical's first
            value).
        args: Fixed extra arguments of every run (e.g. ``--data.init_args.path=...``).
        ref_point: Hypervolume reference point in the objectives' (maximization) units for
            several metrics; default: ``-1`` per minimized metric (a WAPE of 1 is no forecast).
        runs_dir: Where each run's directory goes.
        timeout: Seconds after which a run counts as failed (``None``: no limit).
        tied: ``{option: parameter}``: ``option`` receives the value of the parameter
            ``parameter`` in every run (a setting the model and the datamodule share).
    """
    if not isinstance(config, str) or not config:
        raise ConfigError("train-run: config must name a dsbo.train config file")
    if not Path(config).is_file():
        raise ConfigError(
            f"train-run: config={config!r} is not a file (paths are relative to {Path.cwd()})"
        )
    if not isinstance(parameters, Mapping) or not parameters:
        raise ConfigError(
            "train-run: parameters must map dsbo.train options to W&B-style ranges, e.g. "
            "{model.init_args.lr: {distribution: log_uniform_values, min: 1e-3, max: 0.1}}"
        )
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"train-run: args must be a list of strings, got {args!r}")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigError(f"train-run: timeout={timeout!r} must be a positive number of seconds")
    names, objectives = _metric_names(metrics, goal)
    space = search_space(
        [parse_parameter(name, spec) for name, spec in parameters.items()], "train-run"
    )
    tied = {} if tied is None else tied
    if not isinstance(tied, Mapping) or not all(
        isinstance(k, str) and v in space.names for k, v in tied.items()
    ):
        raise ConfigError(
            f"train-run: tied must map options to parameters of {space.names}, got {tied!r}"
        )
    clash = sorted(set(tied) & set(space.names))
    if clash:
        raise ConfigError(f"train-run: tied option(s) {clash} are parameters themselves")
    if default is None:
        default_point = torch.tensor(space.default(), dtype=torch.double)
    else:
        if not isinstance(default, Mapping):
            raise ConfigError(
                f"train-run: default must map each searched parameter to its value, got {default!r}"
            )
        default_point = torch.tensor(
            space.encode(dict(default), where="train-run: default"), dtype=torch.double
        )
    sign = 1.0 if goal == "maximize" else -1.0
    common = dict(
        space=space,
        config=config,
        args=list(args),
        metrics=names,
        sign=sign,
        runs_dir=runs_dir,
        timeout=timeout,
        tied=dict(tied),
    )
    ref = None
    if len(names) > 1:
        if ref_point is None:
            ref_point = [-1.0 if goal == "minimize" else 0.0] * len(names)
        if len(ref_point) != len(names):
            raise ConfigError(
                f"train-run: ref_point has {len(ref_point)} entries for {len(names)} metrics"
            )
        f: TrainingRun = MultiMetricTrainingRun(**common, ref_point=ref_point)
        ref = torch.tensor(list(ref_point), dtype=torch.double)
    else:
        f = TrainingRun(**common)
    fixed = {n: p.value for n, p in space.parameters.items() if isinstance(p, Fixed)}
    return Problem(
        name="train-run",
        test_problem=f,
        default_point=default_point,
        relevant_dims=tuple(range(f.dim)),
        objective_names=objectives,
        ref_point=ref,
        description=make_train_run.__doc__.strip().split("\n")[0],
        metadata={
            "config": config,
            "args": list(args),
            "metrics": list(names),
            "fixed": fixed,
            "tied": dict(tied),
        },
        space=space,
    )


__all__ = ["MultiMetricTrainingRun", "TrainingRun", "make_train_run"]
