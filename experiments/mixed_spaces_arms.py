"""The arms of ``mixed_spaces.py``: their names (an arm is a surrogate followed by ``+``
options, see the experiment's docstring), which of them the goals hold to which baselines, and
how each runs one (problem, seed) through :class:`mixed_spaces_problems.Recorder`.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from typing import Any

import numpy as np
from mixed_spaces_problems import MixedProblem, Recorder, make_problems, num_changed, suggest_active
from mixed_spaces_smac import run_smac

#: GP/random/TPE/Ax arms first, the MAP-SAAS ones (1.5-2x a GP arm's time) after.
FIRST_ARMS = (
    "dsbo-gp",
    "random",
    "optuna-tpe",
    "ax",
    "smac3",
    "dsbo-gp+bonsai",
    "dsbo-gp+winsorize",
    "dsbo-gp+copula",
    "dsbo-gp+copula+bonsai",
    "dsbo-gp+copula+md",
    "dsbo-gp+copula+md+explore",
    "dsbo-gp+copula+md+explore+branch",
    "dsbo-gp+copula+md+explore5",
    "dsbo-gp+copula+md+explore+warm",
    "dsbo-gp+copula+mixed+md",
)
LATER_ARMS = (
    "dsbo-map-saas",
    "dsbo-map-saas+bonsai",
    "dsbo-map-saas+copula",
    "dsbo-map-saas+copula+bonsai",
)
ARMS = FIRST_ARMS + LATER_ARMS
#: --smoke runs one arm of each kind (the default, its variants' code paths, the baselines).
SMOKE_ARMS = (
    "dsbo-gp+copula+md+explore+branch",
    "dsbo-gp+copula+md+explore",
    "dsbo-gp+copula+mixed+md",
    "dsbo-gp+winsorize",
    "random",
    "optuna-tpe",
    "ax",
    "smac3",
    "dsbo-gp+copula+bonsai",
    "dsbo-map-saas+copula",
)
#: What ``dsbo.minimize``'s defaults pick on these spaces (4-8 parameters: ``surrogate="auto"``
#: is the exact GP, ``outcome_warping="copula"``).
DEFAULT_ARM = "dsbo-gp+copula+md+explore+branch"  # since issue 58; before: without +branch
BASELINES = ("optuna-tpe", "ax", "random")
#: Arms that are reported, never run by this version: the default as it was before issue 45
#: (one-hot columns in the ARD kernel, BoTorch's per-combination loop, no min_distance), whose
#: runs come from ``after_fixes/runs.jsonl`` (its ``dsbo-gp+copula`` arm, renamed).
REPORT_ONLY_ARMS = ("dsbo-default-before",)
#: An arm name is a surrogate followed by ``+`` options: an outcome warping, then ``+bonsai``.
WARPINGS = ("winsorize", "copula")
#: BONSAI arms, and the unpruned arm they are compared with.
BONSAI_ARMS = {a: a.removesuffix("+bonsai") for a in ARMS if a.endswith("+bonsai")}
#: Unpruned arms fitting warped outcomes (``outcome_warping``), and the unwarped arm.
WARPED_ARMS = {
    a: a.split("+")[0]
    for a in ARMS
    if a not in BONSAI_ARMS and set(a.split("+")[1:]) & set(WARPINGS)
}
#: dsbo arms held to the goals against the baselines.
GOAL_ARMS = tuple(dict.fromkeys((DEFAULT_ARM, "dsbo-gp", "dsbo-map-saas", *WARPED_ARMS)))
EXTERNAL = {"optuna-tpe": "optuna", "ax": "ax", "smac3": "smac"}


def run_dsbo(
    problem: MixedProblem, arm: str, seed: int, budget: int, smoke: bool, f: Recorder
) -> dict[str, Any]:
    import dsbo

    options: dict[str, Any] = {"seed": seed, "dry_run": False}
    if arm == "random":
        options.update(surrogate="gp", acquisition="sobol")
    else:
        options["surrogate"] = "map-saas" if "map-saas" in arm else "gp"
        if (
            "+mixed" in arm
        ):  # MixedSingleTaskGP's kernel instead of one-hot columns in the ARD kernel
            options["surrogate"] = {"name": "gp", "categorical": "mixed"}
        if "+warm" in arm:  # each fit starts from the previous one's hyperparameters
            options["surrogate"] = {"name": "gp", "warm_start": True}
        if smoke and options["surrogate"] == "map-saas":  # seconds instead of a minute per run
            options["surrogate"] = {"name": "map-saas", "num_taus": 2, "fit_restarts": 0}
        if arm.endswith("+bonsai"):
            options.update(bonsai=True, default=dict(problem.default))
        warping = [w for w in arm.split("+")[1:] if w in WARPINGS]
        options["outcome_warping"] = (
            warping[0] if warping else None
        )  # explicit: the library default may change
    from dsbo.acquisition import OptimizerSettings

    # +md: min_distance 0.01 (the library default since issue 45); other arms state it explicitly
    # +explore: stall_patience 3 (the library default since issue 45's second slice), others 0
    settings: dict[str, Any] = {
        "min_distance": 0.01 if "+md" in arm else 0.0,
        "stall_patience": stall_patience(arm),
        # +branch: Thompson-drawn branches and a balanced design (the default since issue 58)
        "branches": "thompson" if "+branch" in arm else "acquisition",
    }
    if smoke:
        settings.update(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)
    if arm != "random":
        options["optimizer"] = OptimizerSettings(**settings)
    else:  # random search as before issue 58: raw Sobol points, the design's too
        options["optimizer"] = OptimizerSettings(branches="acquisition")
    result = dsbo.minimize(f, problem.space, budget=budget, **options)
    h = result.history
    init = h["generator"].isin(["default", "sobol-init"])
    proposal = h.loc[~init, "fit_time"].fillna(0) + h.loc[~init, "acq_time"].fillna(0)
    out: dict[str, Any] = {
        "proposal_times": [float(t) for t in proposal],
        "generators": h["generator"].tolist(),
        "reported_best": result.best_value,
        "near_repeats": near_repeats(result.campaign),
    }
    if arm.endswith("+bonsai") and "num_changed" in h and h["objective"].notna().any():
        best_row = h.loc[h["objective"].idxmin()]
        out["dsbo_num_changed_best"] = (
            None if math.isnan(best_row["num_changed"]) else int(best_row["num_changed"])
        )
    return out


def stall_patience(arm: str) -> int:
    """``+explore`` is patience 3, ``+exploreN`` patience N, no such option 0."""
    options = [o for o in arm.split("+")[1:] if o.startswith("explore")]
    return (int(options[0].removeprefix("explore") or 3)) if options else 0


def near_repeats(campaign: Any, tol: float = 0.01) -> int:
    """BO trials (after the initial design) within ``tol`` of an earlier trial in every
    unit-cube coordinate of the search space's encoding (log scales, one-hot categoricals):
    proposals that polish a digit instead of exploring."""
    import torch

    trials = campaign.store.trials()
    if not trials:
        return 0
    bounds = campaign.problem.bounds
    X = (torch.tensor([t.x for t in trials], dtype=torch.double) - bounds[0]) / (
        bounds[1] - bounds[0]
    )
    count = 0
    for i, trial in enumerate(trials):
        if i and trial.generator not in ("default", "sobol-init"):
            count += bool((X[:i] - X[i]).abs().amax(dim=-1).min() < tol)
    return count


def run_tpe(problem: MixedProblem, seed: int, budget: int, f: Recorder) -> dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    times = []
    for _ in range(budget):
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest_active(trial, problem.space)
        times.append(time.perf_counter() - t0)
        study.tell(trial, f(params))
    return {"proposal_times": times}


def ax_parameters(problem: MixedProblem) -> tuple[list[Any], list[str], list[str]]:
    """Ax parameter configs; the conditional parameters that are Ax children and the ones
    passed always (Ax's hierarchy is a tree: a child hangs under one value of one parent)."""
    from ax import ChoiceParameterConfig, RangeParameterConfig

    from dsbo.space import Choice, Float, Int

    children: dict[str, dict[Any, list[str]]] = {}
    native, flattened = [], []
    for name, p in problem.space.items():
        conditions = p.conditions
        if not conditions:
            continue
        (parent, allowed), *rest = conditions.items()
        if not rest and len(allowed) == 1:
            children.setdefault(parent, {}).setdefault(allowed[0], []).append(name)
            native.append(name)
        else:
            flattened.append(name)
    configs = []
    for name, p in problem.space.items():
        if isinstance(p, Float | Int):
            kind = "float" if isinstance(p, Float) else "int"
            configs.append(
                RangeParameterConfig(
                    name=name,
                    bounds=(p.low, p.high),
                    parameter_type=kind,
                    scaling="log" if p.log else "linear",
                )
            )
        elif isinstance(p, Choice):
            kind = "bool" if all(isinstance(v, bool) for v in p.values) else "str"
            configs.append(
                ChoiceParameterConfig(
                    name=name,
                    values=list(p.values),
                    parameter_type=kind,
                    dependent_parameters=children.get(name) or None,
                )
            )
    return configs, native, flattened


def run_ax(problem: MixedProblem, seed: int, budget: int, f: Recorder) -> dict[str, Any]:
    from ax import Client

    logging.disable(logging.WARNING)  # Ax logs every trial at INFO, and warns per fit
    configs, native, flattened = ax_parameters(problem)
    client = Client(random_seed=seed)
    client.configure_experiment(parameters=configs)
    client.configure_optimization(objective="-objective")
    client.configure_generation_strategy(initialization_random_seed=seed)
    times = []
    for _ in range(budget):
        t0 = time.perf_counter()
        trials = client.get_next_trials(max_trials=1)
        times.append(time.perf_counter() - t0)
        ((index, params),) = trials.items()
        client.complete_trial(index, {"objective": f(dict(params))})
    return {"proposal_times": times, "ax_native_children": native, "ax_flattened": flattened}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, arm, seed) run; in a worker process on one thread."""
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = make_problems()[job["problem"]]
    f = Recorder(problem)
    start = time.perf_counter()
    arm = job["arm"]
    if arm == "optuna-tpe":
        extra = run_tpe(problem, job["seed"], job["budget"], f)
    elif arm == "ax":
        extra = run_ax(problem, job["seed"], job["budget"], f)
    elif arm == "smac3":
        extra = run_smac(problem, job["seed"], job["budget"], f)
    else:
        extra = run_dsbo(problem, arm, job["seed"], job["budget"], job["smoke"], f)
    seconds = time.perf_counter() - start
    values = [v if math.isfinite(v) else math.inf for v in f.values]
    trace = list(np.minimum.accumulate(values)) if values else []
    best_i = int(np.argmin(values)) if values else None
    return {
        **job,
        "values": values,
        "trace": [float(t) for t in trace],
        "final_best": float(trace[-1]) if trace else math.nan,
        "params": f.params,
        "best_params": f.params[best_i] if best_i is not None else None,
        "num_changed_best": num_changed(f.params[best_i], problem.default)
        if best_i is not None
        else None,
        "num_evaluations": len(values),
        "median_eval_s": float(np.median(f.eval_times)) if f.eval_times else math.nan,
        "seconds": seconds,
        "threads": 1,
        **extra,
    }
