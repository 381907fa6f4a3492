"""The arms of ``early_stopping.py`` (see its docstring): dsbo's ``early_stopping`` setting per
dsbo arm, Optuna's TPE with its pruners, and how each runs one (problem, seed) on the curves of
``early_stopping_problems.py``.
"""

from __future__ import annotations

import importlib
import time
import warnings
from pathlib import Path
from typing import Any

from early_stopping_peers import PEER_ARMS, peer_unavailable, run_elsewhere, run_peer, runs_here
from early_stopping_problems import MAX_EPOCHS, CurveCache, Recorder, make_problems
from mixed_spaces_problems import suggest_active

RULES: dict[str, dict[str, Any]] = {
    "median": {"name": "median"},
    "asha": {"name": "asha", "min_resource": 1, "reduction_factor": 3},
    "hyperband": {"name": "hyperband", "min_resource": 1, "reduction_factor": 3},
}
#: dsbo's ``early_stopping`` per dsbo arm (``None``: no rule, every trial trained in full).
DSBO_ARMS: dict[str, Any] = {
    "bo-full": None,
    **{f"random+{r}": RULES[r] for r in RULES},
    # model "final" (the default until issue 57): what these arms' recorded runs used
    **{f"bo+{r}": {**RULES[r], "model": "final"} for r in RULES},
    **{f"bo-last+{r}": {**RULES[r], "model": "last"} for r in ("asha", "hyperband")},
    "bohb": {**RULES["hyperband"], "model": "bohb"},
    "bo+mf-gp": {**RULES["asha"], "model": "fidelity"},
    # early_stopping=True, the recommended setting of issue 57 (ASHA, model "last", stopped
    # trials pending when not fitted, no proposal repeating an ended trial)
    "bo+recommended": True,
    # the same with Thompson sampling over Sobol candidates instead of qLogNEI's maximizer
    # (issue 57, exploratory: named in early_stopping_goals.EXPLORATORY_ARMS before its runs)
    "bo-ts+recommended": True,
}
#: The acquisition of the dsbo arms that do not use ``dsbo.minimize``'s default.
ARM_ACQUISITION = {"bo-ts+recommended": "thompson"}
OPTUNA_ARMS = ("optuna-tpe+hyperband", "optuna-tpe+median")
ARMS = (*DSBO_ARMS, *OPTUNA_ARMS, *PEER_ARMS)
BO_ES_ARMS = (
    "bo+median",
    "bo+asha",
    "bo+hyperband",
    "bo-last+asha",
    "bo-last+hyperband",
    "bohb",
    "bo+mf-gp",
    "bo+recommended",
    "bo-ts+recommended",
)
FULL_ARM, TPE_HB = "bo-full", "optuna-tpe+hyperband"
#: The one arm the goals are judged for, named before the runs (issue 59): the guide's one
#: recommended setting, ``early_stopping=True`` (issue 57; named before its runs were made).
#: Until issue 57 it was ``bo+asha`` (model "final"), the arm the guide then showed; its verdicts
#: stay in the results as the previous default's.
RECOMMENDED_ARM = "bo+recommended"
#: The previous default, reported beside the recommended arm (a regression is reported).
PREVIOUS_DEFAULT_ARM = "bo+asha"


def n_init_for(problem: Any, full_trainings: int) -> int:
    """The initial design ``dsbo.minimize`` picks for a budget of ``full_trainings`` trials."""
    from dsbo.space import SearchSpace

    return max(2, min(full_trainings // 3, max(5, 2 * len(SearchSpace(problem.space).searched))))


def unavailable(arm: str) -> str | None:
    """Why ``arm`` cannot run here, or ``None``."""
    import importlib.util

    if arm in PEER_ARMS:
        return peer_unavailable(arm)
    if arm in OPTUNA_ARMS and importlib.util.find_spec("optuna") is None:
        return "optuna is not installed (pip install -e '.[compare]')"
    if arm in DSBO_ARMS and DSBO_ARMS[arm] is not None:
        from dsbo.campaign.early_stopping import EarlyStopping
        from dsbo.errors import ConfigError

        try:
            EarlyStopping.build(DSBO_ARMS[arm], max_steps=MAX_EPOCHS)
        except ConfigError as exc:
            return f"this dsbo refuses early_stopping={DSBO_ARMS[arm]}: {exc}"
    return None


def run_dsbo(
    problem: Any, arm: str, seed: int, budget: int, full_trainings: int, smoke: bool, rec: Recorder
) -> dict[str, Any]:
    import dsbo
    from dsbo.acquisition import OptimizerSettings

    options: dict[str, Any] = {
        "seed": seed,
        "dry_run": False,
        "n_init": n_init_for(problem, full_trainings),
        "early_stopping": DSBO_ARMS[arm],
        "max_steps": MAX_EPOCHS,
        "budget_steps": budget,
    }
    if arm.startswith("random+"):
        options["acquisition"] = "sobol"
    elif arm in ARM_ACQUISITION:
        options["acquisition"] = ARM_ACQUISITION[arm]
    elif smoke:
        options["optimizer"] = OptimizerSettings(
            num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
        )

    def train(params: dict[str, Any], trial: Any) -> float:
        return rec.evaluate(params, trial)

    result = dsbo.minimize(train, problem.space, budget=budget, **options)
    h = result.history
    # the proposals after the initial design; a BO arm's Sobol fallbacks (fewer than two fully
    # trained trials to fit) are counted in ``generators``, not timed
    skip = ["default", "sobol-init"] + ([] if arm.startswith("random+") else ["sobol-fallback"])
    timed = ~h["generator"].isin(skip)
    proposal = h.loc[timed, "fit_time"].fillna(0) + h.loc[timed, "acq_time"].fillna(0)
    return {
        "proposal_times": [float(t) for t in proposal],
        "generators": {str(k): int(v) for k, v in h["generator"].value_counts().items()},
        "statuses": {str(k): int(v) for k, v in h["status"].value_counts().items()},
        "ledger_epochs": float(h["cost"].fillna(0).sum()),
        "reported_best": result.best_value,
        "n_init": options["n_init"],
    }


class OptunaTrial:
    """An Optuna trial as the trial a training reports to; stops it at ``limit`` epochs (the
    budget's end) or when the pruner says so."""

    def __init__(self, trial: Any, limit: int):
        self.trial, self.limit, self.step = trial, limit, 0

    def report(self, step: int, value: float) -> None:
        self.trial.report(value, step)
        self.step = step

    def should_stop(self) -> bool:
        return self.step >= self.limit or self.trial.should_prune()


def run_optuna(problem: Any, arm: str, seed: int, budget: int, rec: Recorder) -> dict[str, Any]:
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = (
        optuna.pruners.HyperbandPruner(min_resource=1, max_resource=MAX_EPOCHS, reduction_factor=3)
        if arm.endswith("+hyperband")
        else optuna.pruners.MedianPruner()
    )
    # the study's name is fixed: HyperbandPruner picks a trial's bracket from a hash of it
    study = optuna.create_study(
        study_name=f"{problem.name}-{arm}-seed{seed}",
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=pruner,
    )
    times = []
    while rec.epochs < budget:
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest_active(trial, problem.space)
        times.append(time.perf_counter() - t0)
        value = rec.evaluate(params, OptunaTrial(trial, min(MAX_EPOCHS, budget - rec.epochs)))
        if rec.trials[-1]["full"]:
            study.tell(trial, value)
        else:
            study.tell(trial, state=TrialState.PRUNED)
    return {
        "proposal_times": times,
        "statuses": {
            "completed": sum(t["full"] for t in rec.trials),
            "pruned": sum(not t["full"] for t in rec.trials),
        },
    }


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, arm, seed) run; in a worker process on one thread (a peer arm whose
    library this interpreter lacks: in the peers' interpreter, :mod:`early_stopping_peers`)."""
    if job["arm"] in PEER_ARMS and not runs_here(job["arm"]):
        return run_elsewhere(job)
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = make_problems()[job["problem"]]
    problem.preload(job["smoke"])
    import dsbo  # noqa: F401  (imported before the timer starts, as the training's modules)

    if job["arm"] in OPTUNA_ARMS:
        import optuna  # noqa: F401
    elif job["arm"] in PEER_ARMS:
        importlib.import_module(PEER_ARMS[job["arm"]])
    rec = Recorder(problem, job["seed"], CurveCache(Path(job["cache"])), small=job["smoke"])
    start = time.perf_counter()
    if job["arm"] in OPTUNA_ARMS:
        extra = run_optuna(problem, job["arm"], job["seed"], job["budget"], rec)
    elif job["arm"] in PEER_ARMS:
        extra = run_peer(problem, job["arm"], job["seed"], job["budget"], rec)
    else:
        extra = run_dsbo(
            problem,
            job["arm"],
            job["seed"],
            job["budget"],
            job["full_trainings"],
            job["smoke"],
            rec,
        )
    trace = rec.trace()
    full = [t for t in rec.trials if t["full"]]
    best = min(full, key=lambda t: t["value"]) if full else None
    return {
        **{k: v for k, v in job.items() if k != "cache"},
        "trace": trace,
        "final_best": trace[-1][1] if trace else None,
        "best_params": best["params"] if best else None,
        "epochs_spent": rec.epochs,
        "num_trials": len(rec.trials),
        "num_full": len(full),
        "trials": [[t["epochs"], t["value"]] for t in rec.trials],
        "trained_epochs": rec.trained_epochs,
        "train_seconds": rec.train_seconds,
        "seconds": time.perf_counter() - start,
        "threads": 1,
        **extra,
    }
