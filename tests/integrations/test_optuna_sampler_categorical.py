"""DsboSampler where the relative search space is categories only (issue 58): an objective that
suggests only categoricals, and Optuna's textbook conditional objective (a category, then a float
per branch) once both branches have run and the intersection search space is the category
alone. Both stopped the study at dsbo's first such proposal before."""

from __future__ import annotations

import pytest

optuna = pytest.importorskip("optuna")

from optuna.trial import TrialState  # noqa: E402

from dsbo.acquisition.discrete_search import SpaceExhaustedWarning  # noqa: E402
from dsbo.integrations.optuna import DsboSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.ERROR)
FAST = {"surrogate": "gp", "optimizer": {"num_restarts": 2, "raw_samples": 64, "maxiter": 50}}
OPT = {"a": 0.0, "b": 1.0, "c": 2.0}


def categories_only(trial):
    opt = trial.suggest_categorical("opt", list(OPT))
    act = trial.suggest_categorical("act", ["relu", "tanh"])
    return OPT[opt] + (0.5 if act == "tanh" else 0.0)


def textbook(trial):
    """Optuna's conditional example: the classifier, then its own hyperparameter."""
    classifier = trial.suggest_categorical("classifier", ["SVC", "RandomForest"])
    if classifier == "SVC":
        c = trial.suggest_float("svc_c", 1e-3, 1e3, log=True)
        return (c - 1.0) ** 2 / 1e3
    depth = trial.suggest_int("rf_max_depth", 2, 32, log=True)
    return 1.0 + 0.01 * depth


def dsbo_trials(sampler, study):
    """``[(configuration, metadata)]`` of dsbo's record of the study, in trial order."""
    tuner = sampler.tuner(study)
    problem, trials = tuner.campaign.problem, tuner.campaign.store.trials()
    return [(problem.params(t.x), t.metadata) for t in trials]


def test_an_objective_of_only_categoricals_tries_each_configuration_once_first():
    sampler = DsboSampler(n_startup_trials=0, seed=0, **FAST)
    study = optuna.create_study(sampler=sampler)
    with pytest.warns(SpaceExhaustedWarning):
        study.optimize(categories_only, n_trials=8)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    tried = [(t.params["opt"], t.params["act"]) for t in study.trials]
    assert len(set(tried[:6])) == 6  # every configuration before any repeat
    assert study.best_params == {"opt": "a", "act": "relu"}
    record = dsbo_trials(sampler, study)
    assert [bool(m.get("space_exhausted")) for _, m in record] == [False] * 6 + [True] * 2
    assert sum(m.get("discrete_search") == "enumerate" for _, m in record) >= 6


def test_the_textbook_conditional_objective_runs_past_both_branches():
    sampler = DsboSampler(n_startup_trials=2, seed=1, warn_independent_sampling=False, **FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(textbook, n_trials=12)
    assert len(study.trials) == 12 and all(t.state == TrialState.COMPLETE for t in study.trials)
    branches = [t.params["classifier"] for t in study.trials]
    both = max(branches.index("SVC"), branches.index("RandomForest"))  # both have run by then
    assert both < 11
    record = dsbo_trials(sampler, study)  # the Tuner of the intersection: the category alone
    assert all(set(params) == {"classifier"} for params, _ in record)
    proposed = [m for _, m in record if m.get("discrete_search")]
    assert proposed and all(m["discrete_search"] == "enumerate" for m in proposed)
    assert all(m["configurations"] == 2 for m in proposed)
