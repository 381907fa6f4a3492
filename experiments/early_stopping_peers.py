"""The multi-fidelity peers of ``early_stopping.py`` (issue 57): DEHB 0.1.2 and Syne Tune 0.16's
ASHA-CQR and BOHB, each asked and told in-process on the same curves as every other arm.

- ``dehb``: ``DEHB`` (Awad, Mallik and Hutter 2021, *DEHB: Evolutionary Hyperband for Scalable,
  Robust and Efficient Hyperparameter Optimization*): differential evolution inside Hyperband's
  brackets, ``min_fidelity=1, max_fidelity=27, eta=3``, one worker, the run's seed, the space as
  a ConfigSpace with its conditions (``mixed_spaces_smac.config_space``). DEHB evaluates a
  configuration at a fidelity from scratch: a job of fidelity ``b`` trains ``b`` epochs (the
  curve cache replays what an earlier job trained) and is charged ``b`` epochs.
- ``synetune-asha-cqr``, ``synetune-bohb``: Syne Tune's ``ASHACQR`` (ASHA whose searcher is
  conformalized quantile regression on the rungs; Salinas, Golebiowski, Klein, Seeger and
  Archambeau 2023, *Optimizing Hyperparameters with Conformal Quantile Regression*) and
  ``BOHB`` (ASHA with TPE-like kernel densities; Falkner, Klein and Hutter 2018), both with
  ``max_t=27, grace_period=1, reduction_factor=3``, one bracket, the run's seed. Syne Tune's
  spaces have no conditions: its searchers see every parameter, and the training gets the
  active ones only (as the other arms). The scheduler is driven as its own ``Tuner`` drives it
  (``on_trial_add``, ``on_trial_result`` after every epoch, whose ``STOP`` ends the trial,
  ``on_trial_complete`` at epoch 27).

DEHB pins numpy < 2, which the project's own environment does not keep: both libraries live in
a second virtual environment whose interpreter runs these arms (``.venv-peers`` beside the
repository, or the one ``DSBO_PEERS_PYTHON`` names; Syne Tune imports ``huggingface_hub`` for its
CQR searcher and downloads nothing here)::

    python3 -m venv .venv-peers
    .venv-peers/bin/pip install "torch==2.13.0" -e ".[lightning,peers]"

A job of a peer arm started from an interpreter without the library is run by that one
(:func:`run_elsewhere`: the job as JSON on its standard input, the run as JSON on its output).
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from early_stopping_problems import MAX_EPOCHS, Recorder

#: Each peer arm and the module it needs.
PEER_ARMS = {"dehb": "dehb", "synetune-asha-cqr": "syne_tune", "synetune-bohb": "syne_tune"}
REPOSITORY = Path(__file__).resolve().parent.parent
ETA = 3
METRIC, TIME_ATTR = "loss", "epoch"


def peers_python() -> Path:
    """The interpreter that has the peers: ``DSBO_PEERS_PYTHON`` or ``.venv-peers/bin/python``."""
    named = os.environ.get("DSBO_PEERS_PYTHON")
    return Path(named) if named else REPOSITORY / ".venv-peers" / "bin" / "python"


def runs_here(arm: str) -> bool:
    """Whether this interpreter has the library of peer ``arm``."""
    return importlib.util.find_spec(PEER_ARMS[arm]) is not None


def peer_unavailable(arm: str) -> str | None:
    """Why peer ``arm`` cannot run here or in the peers' interpreter, or ``None``."""
    if runs_here(arm):
        return None
    python = peers_python()
    if not python.exists():
        return (
            f"{PEER_ARMS[arm]} is not installed here and {python} does not exist "
            "(see early_stopping_peers.py for the second environment, or set DSBO_PEERS_PYTHON)"
        )
    check = subprocess.run(
        [str(python), "-c", f"import {PEER_ARMS[arm]}"], capture_output=True, text=True
    )
    if check.returncode != 0:
        return f"{python} cannot import {PEER_ARMS[arm]}: {check.stderr.strip().splitlines()[-1]}"
    return None


def run_elsewhere(job: dict[str, Any]) -> dict[str, Any]:
    """Run ``job`` (a peer arm's) in the peers' interpreter; its run as this process's."""
    done = subprocess.run(
        [str(peers_python()), str(Path(__file__).resolve())],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{job['arm']} failed in {peers_python()}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class FixedBudgetTrial:
    """A trial that trains ``epochs`` epochs (DEHB's fidelity, or what the budget leaves)."""

    def __init__(self, epochs: int):
        self.epochs, self.step = epochs, 0

    def report(self, step: int, value: float) -> None:
        self.step = step

    def should_stop(self) -> bool:
        return self.step >= self.epochs


class SchedulerTrial:
    """A trial whose every epoch goes to a Syne Tune scheduler's ``on_trial_result``; stops
    when the scheduler says ``STOP`` or at ``limit`` epochs (the budget's end). The seconds of
    the scheduler's decisions are summed in ``decision_seconds``."""

    def __init__(self, scheduler: Any, trial: Any, limit: int):
        self.scheduler, self.trial, self.limit = scheduler, trial, limit
        self.step, self.stop, self.decision_seconds = 0, False, 0.0

    def report(self, step: int, value: float) -> None:
        from syne_tune.optimizer.scheduler import SchedulerDecision

        self.step = step
        t0 = time.perf_counter()
        decision = self.scheduler.on_trial_result(self.trial, {METRIC: value, TIME_ATTR: step})
        self.decision_seconds += time.perf_counter() - t0
        self.stop = decision == SchedulerDecision.STOP

    def should_stop(self) -> bool:
        return self.stop or self.step >= self.limit


def dsbo_values(problem: Any, config: dict[str, Any]) -> dict[str, Any]:
    """A peer's configuration in the dsbo space's types (categories matched by their string:
    ConfigSpace holds them as strings), integers as ``int``, floats as ``float``."""
    from dsbo.space import Choice, Int

    params: dict[str, Any] = {}
    for name, value in config.items():
        if name not in problem.space:
            continue
        p = problem.space[name]
        if isinstance(p, Choice):
            params[name] = next(v for v in p.values if str(v) == str(value))
        elif isinstance(p, Int):
            params[name] = int(round(float(value)))
        else:
            params[name] = float(value)
    return params


def run_dehb(problem: Any, seed: int, budget: int, rec: Recorder) -> dict[str, Any]:
    from dehb import DEHB
    from loguru import logger
    from mixed_spaces_smac import config_space

    logger.remove()  # DEHB logs every job through loguru to the console
    space = config_space(problem, seed)
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="dehb-") as folder:
        dehb = DEHB(
            cs=space,
            dimensions=len(list(space.values())),
            min_fidelity=1,
            max_fidelity=MAX_EPOCHS,
            eta=ETA,
            n_workers=1,
            seed=seed,
            output_path=folder,
            save_freq=None,
        )
        while rec.epochs < budget:
            t0 = time.perf_counter()
            job = dehb.ask()  # its config a ConfigSpace Configuration (use_configspace)
            config = dict(job["config"])
            times.append(time.perf_counter() - t0)
            epochs = min(int(round(job["fidelity"])), budget - rec.epochs)
            before = rec.epochs
            value = rec.evaluate(dsbo_values(problem, config), FixedBudgetTrial(epochs))
            dehb.tell(job, {"fitness": value, "cost": float(rec.epochs - before)})
    return {"proposal_times": times, **statuses(rec)}


def synetune_space(problem: Any) -> dict[str, Any]:
    """The dsbo space as Syne Tune domains (``uniform``/``loguniform``, ``randint``/
    ``lograndint``, ``choice``); conditions are dropped (module doc)."""
    from syne_tune.config_space import choice, lograndint, loguniform, randint, uniform

    from dsbo.space import Choice, Float, Int

    space: dict[str, Any] = {}
    for name, p in problem.space.items():
        if isinstance(p, Float):
            space[name] = (loguniform if p.log else uniform)(p.low, p.high)
        elif isinstance(p, Int):
            space[name] = (lograndint if p.log else randint)(p.low, p.high)
        elif isinstance(p, Choice):
            space[name] = choice([str(v) for v in p.values])
        else:
            raise TypeError(f"{problem.name}.{name}: no Syne Tune domain for {type(p).__name__}")
    return space


def run_synetune(problem: Any, arm: str, seed: int, budget: int, rec: Recorder) -> dict[str, Any]:
    import numpy as np
    from syne_tune.backend.trial_status import Trial
    from syne_tune.optimizer.baselines import ASHACQR, BOHB

    np.random.seed(seed)  # the schedulers draw a trial's bracket from numpy's global generator
    scheduler_class = {"synetune-asha-cqr": ASHACQR, "synetune-bohb": BOHB}[arm]
    scheduler = scheduler_class(
        synetune_space(problem),
        metric=METRIC,
        time_attr=TIME_ATTR,
        max_t=MAX_EPOCHS,
        do_minimize=True,
        random_seed=seed,
        grace_period=1,
        reduction_factor=ETA,
    )
    times: list[float] = []
    decisions = 0.0
    trial_id = 0
    while rec.epochs < budget:
        t0 = time.perf_counter()
        suggestion = scheduler.suggest()
        if suggestion is None:  # the scheduler has nothing left to propose
            break
        trial = Trial(
            trial_id=trial_id, config=suggestion.config, creation_time=datetime.datetime.now()
        )
        scheduler.on_trial_add(trial)
        times.append(time.perf_counter() - t0)
        trial_id += 1
        running = SchedulerTrial(scheduler, trial, min(MAX_EPOCHS, budget - rec.epochs))
        value = rec.evaluate(dsbo_values(problem, suggestion.config), running)
        decisions += running.decision_seconds
        if rec.trials[-1]["full"]:
            scheduler.on_trial_complete(trial, {METRIC: value, TIME_ATTR: MAX_EPOCHS})
    return {"proposal_times": times, "decision_seconds": decisions, **statuses(rec)}


def statuses(rec: Recorder) -> dict[str, Any]:
    full = sum(t["full"] for t in rec.trials)
    return {"statuses": {"completed": full, "stopped": len(rec.trials) - full}}


def run_peer(problem: Any, arm: str, seed: int, budget: int, rec: Recorder) -> dict[str, Any]:
    """Run peer ``arm`` on ``problem`` until ``budget`` epochs are spent."""
    if arm == "dehb":
        return run_dehb(problem, seed, budget, rec)
    return run_synetune(problem, arm, seed, budget, rec)


if __name__ == "__main__":  # a job from run_elsewhere
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from early_stopping_arms import run_job

    print(json.dumps(run_job(json.loads(sys.stdin.read()))))
