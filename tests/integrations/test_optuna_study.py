"""The study side of DsboSampler (dsbo.integrations.optuna_study): a study's trials mirrored
into a Tuner (complete, failed, pruned with its curve, running as pending), pruned trials in
the fit, a disagreement raising Rebuild, warm starts carried over, and a proposal shared in
system attribute chunks."""

from __future__ import annotations

import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import FloatDistribution  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

import dsbo  # noqa: E402
from dsbo.campaign.early_stopping import training_data  # noqa: E402
from dsbo.integrations.optuna_space import OptunaSpace  # noqa: E402
from dsbo.integrations.optuna_study import (  # noqa: E402
    ATTR_MAX_LENGTH,
    PARAMS_KEY,
    Rebuild,
    StudyMirror,
    constraint_keys,
    constraint_name,
    pruned_trials_model,
    running_params,
    share_proposal,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
DISTRIBUTIONS = {"x": FloatDistribution(-1.0, 1.0), "y": FloatDistribution(-1.0, 1.0)}


def mirror_of(space):
    mirror = StudyMirror()
    tuner = dsbo.Tuner(
        space.parameters,
        1000,
        direction="minimize",
        n_init=1,
        seed=0,
        dry_run=False,
        surrogate="gp",
        early_stopping=pruned_trials_model(),
    )
    mirror.adopt(space, tuner, ())
    return mirror


def test_the_studys_trials_are_mirrored_and_pruned_ones_fitted_at_their_last_value():
    study = optuna.create_study()
    study.add_trial(
        create_trial(params={"x": 0.1, "y": 0.2}, distributions=DISTRIBUTIONS, value=0.5)
    )
    study.add_trial(
        create_trial(
            params={"x": -0.5, "y": 0.5},
            distributions=DISTRIBUTIONS,
            state=TrialState.PRUNED,
            intermediate_values={0: 3.0, 1: 2.0, 2: float("nan")},
        )
    )
    study.add_trial(
        create_trial(
            params={"x": 0.9, "y": 0.9}, distributions=DISTRIBUTIONS, state=TrialState.FAIL
        )
    )
    running = study.ask(DISTRIBUTIONS)
    mirror = mirror_of(OptunaSpace(DISTRIBUTIONS))
    mirror.sync(study, study.get_trials(deepcopy=False), current=-1)
    store = mirror.tuner.campaign.store
    assert [t.status for t in store.trials()] == ["completed", "stopped", "failed", "pending"]
    stopped = store.trials("stopped")[0]
    assert store.curves()[stopped.id] == [(0, -3.0), (1, -2.0)] and stopped.y == [
        -2.0
    ]  # NaN left out
    assert mirror.tuner.campaign.problem.params(store.trials("pending")[0].x) == running.params
    X, Y = training_data(store, mirror.tuner.campaign.early_stopping, 2)
    assert sorted(Y[:, 0].tolist()) == [-2.0, -0.5]  # the complete trial and the pruned one
    study.tell(running, state=TrialState.PRUNED)  # the running trial ends pruned, with no curve
    mirror.sync(study, study.get_trials(deepcopy=False), current=-1)
    assert [t.status for t in store.trials()] == ["completed", "stopped", "failed", "stopped"]


def test_a_trial_told_at_other_parameters_asks_for_a_rebuild_and_fits_carry_over():
    study = optuna.create_study()
    trial = study.ask(DISTRIBUTIONS)
    mirror = mirror_of(OptunaSpace(DISTRIBUTIONS))
    suggestion = mirror.tuner.ask()
    mirror.proposed(trial.number, suggestion)  # recorded at dsbo's point, told at Optuna's own
    study.tell(trial, 1.0)
    with pytest.raises(Rebuild):
        mirror.sync(study, study.get_trials(deepcopy=False), current=-1)
    from dsbo.surrogates import warm_start

    mirror.tuner.campaign.store.set_meta(warm_start.META_KEY, {"fits": [1]})
    previous = mirror.tuner
    fresh = mirror_of(OptunaSpace(DISTRIBUTIONS)).tuner
    mirror.adopt(OptunaSpace(DISTRIBUTIONS), fresh, ("c",))
    assert mirror.tuner is fresh and mirror.tuner is not previous and mirror.known == {}
    assert fresh.campaign.store.get_meta(warm_start.META_KEY) == {"fits": [1]}


def test_a_proposal_is_shared_in_chunks_and_read_back():
    names = {f"parameter_with_a_long_name_{i:03d}": FloatDistribution(0.0, 1.0) for i in range(80)}
    study = optuna.create_study()
    trial = study.ask()
    params = {name: (i + 0.5) / 80 for i, name in enumerate(names)}
    share_proposal(study, study.trials[trial.number], names, params)
    frozen = study.trials[trial.number]  # read again: the attributes written
    chunks = [k for k in frozen.system_attrs if k.startswith(PARAMS_KEY)]
    assert len(chunks) > 1 and all(len(frozen.system_attrs[k]) <= ATTR_MAX_LENGTH for k in chunks)
    assert running_params(frozen, OptunaSpace(names)) == pytest.approx(params)


def test_constraint_keys_and_names():
    trials = [  # constraints_func's values (Optuna 4's list; Optuna 5 reads it as keys "0", "1")
        create_trial(
            params={}, distributions={}, value=1.0, system_attrs={"constraints": [0.5, -1.0]}
        ),
        create_trial(
            params={},
            distributions={},
            state=TrialState.FAIL,
            system_attrs={"constraints": [1, 2, 3]},
        ),
        create_trial(
            params={},
            distributions={},
            state=TrialState.PRUNED,
            system_attrs={"constraints": [0, 1, 2]},
        ),
    ]
    # the known keys first, then new ones of complete or pruned trials (not a failed one's)
    assert constraint_keys(trials[:2], ("1",)) == ("1", "0")
    assert constraint_keys(trials, ()) == ("0", "1", "2")
    assert constraint_name("memory/GB") == "constraint_memory_GB"
