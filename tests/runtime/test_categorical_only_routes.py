"""dsbo.minimize and dsbo.Tuner where only categories are free (issue 58): a space of only
categoricals, and a Tuner.ask whose fixed values leave nothing else to search. Each configuration
is tried once before any is repeated, and a repeat says so in its trial's metadata."""

import pytest

import dsbo
from dsbo.acquisition import OptimizerSettings
from dsbo.acquisition.discrete_search import SpaceExhaustedWarning

FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20, mc_samples=16)
OPT = {"a": 0.0, "b": 1.0, "c": 2.0}
SPACE = {"opt": dsbo.Choice(list(OPT)), "act": dsbo.Choice(["relu", "tanh"])}


def loss(p):
    return OPT[p["opt"]] + (0.5 if p["act"] == "tanh" else 0.0)


def configurations(campaign, names=("opt", "act")):
    """``[(configuration, metadata)]`` of the campaign's trials, in order."""
    trials = campaign.store.trials()
    params = [campaign.problem.params(t.x) for t in trials]
    return [(tuple(p[n] for n in names), t.metadata) for p, t in zip(params, trials, strict=True)]


def test_minimize_tries_all_six_configurations_then_marks_the_repeats():
    with pytest.warns(SpaceExhaustedWarning, match="each of the 6 configurations"):
        result = dsbo.minimize(loss, SPACE, budget=8)  # the audit's call, default settings
    tried = configurations(result.campaign)
    assert result.num_completed == 8
    assert len({c for c, _ in tried[:6]}) == 6  # every configuration once before any repeat
    assert [bool(m.get("space_exhausted")) for _, m in tried] == [False] * 6 + [True] * 2
    assert all(m["discrete_search"] == "enumerate" for _, m in tried[2:])  # the model's
    assert result.best_params == {"opt": "a", "act": "relu"} and result.best_value == 0.0


def test_a_fixed_float_leaves_the_categories_to_the_acquisition_then_says_they_are_spent():
    space = {"lr": dsbo.Float(1e-4, 1e-1, log=True), **SPACE}
    tuner = dsbo.Tuner(space, budget=20, n_init=2, surrogate="gp", optimizer=FAST)
    for suggestion in tuner.ask(2):  # the initial design: lr free
        tuner.tell(suggestion, loss(suggestion.params))
    pinned = []
    for _ in range(6):
        suggestion = tuner.ask(fixed={"lr": 0.01})
        tuner.tell(suggestion, loss(suggestion.params) + 0.1)
        pinned.append(suggestion)
    assert all(s.params["lr"] == pytest.approx(0.01) for s in pinned)
    assert len({(s.params["opt"], s.params["act"]) for s in pinned}) == 6
    with pytest.warns(SpaceExhaustedWarning):
        again = tuner.ask(fixed={"lr": 0.01})
    record = {t.id: t.metadata for t in tuner.campaign.store.trials()}
    assert [record[s.trial_id].get("discrete_search") for s in pinned] == ["enumerate"] * 6
    assert not any(record[s.trial_id].get("space_exhausted") for s in pinned)
    assert record[again.trial_id]["space_exhausted"] is True
    free = tuner.ask()  # lr free again: a continuous search, no exhaustion
    record = {t.id: t.metadata for t in tuner.campaign.store.trials()}
    assert "discrete_search" not in record[free.trial_id]
