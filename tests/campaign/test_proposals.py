"""The campaign's ask paths (dsbo.campaign.proposals): stopped and paused trials inform every
proposal, in every early-stopping model setting, and no proposal lands within the repeat
tolerance of one; budgets in steps are exact whatever the reporting interval."""

import math
import threading

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsbo
from dsbo.acquisition import OptimizerSettings
from dsbo.campaign.proposals import ENDED_EARLY, repeat_tolerance, unfitted_ended
from dsbo.storage import open_store

SPACE = {"x": dsbo.Float(0.0, 1.0), "y": dsbo.Float(0.0, 1.0)}
FAST = {"surrogate": "gp", "dry_run": False, "outcome_warping": None}


def quality(params):
    """The final loss a configuration reaches: lowest at (0.3, 0.6)."""
    return (params["x"] - 0.3) ** 2 + (params["y"] - 0.6) ** 2


class Curves:
    """A training function whose curves fall as ``1 / epoch``; ``crossing``: the best
    configurations start slowest (their early losses are the highest, their final the lowest).
    It reports every ``every`` epochs and counts the epochs it trained per trial."""

    def __init__(self, max_steps, every=1, crossing=False):
        self.max_steps, self.every, self.crossing = max_steps, every, crossing
        self.trained: dict[int, int] = {}
        self.lock = threading.Lock()

    def loss(self, params, epoch):
        slow = 1.5 * math.exp(-10 * quality(params)) if self.crossing else 0.0
        return quality(params) + 1.0 / epoch + slow * math.exp(-epoch / 3)

    def __call__(self, params, trial):
        loss = math.inf
        for epoch in range((trial.last_step or 0) + 1, self.max_steps + 1):
            with self.lock:
                self.trained[trial.id] = self.trained.get(trial.id, 0) + 1
            loss = self.loss(params, epoch)
            if epoch % self.every == 0 or epoch == self.max_steps:
                trial.report(epoch, loss)
                if trial.should_stop():
                    break
        return loss


def repeats_of_ended(store, tol):
    """BO proposals within ``tol`` (unit-cube max-norm) of a trial that had been stopped or
    paused when the proposal was made (trials are numbered in proposal order)."""
    trials = store.trials()
    bad = []
    for i, trial in enumerate(trials):
        if trial.generator in ("sobol-init", "default", "sobol-fallback"):
            continue
        # a trial stopped before this one was proposed has a smaller id and ended before it
        ended = [
            t for t in trials[:i] if t.status in ENDED_EARLY and t.completed_at <= trial.created_at
        ]
        x = torch.tensor(trial.x)
        if any(float((torch.tensor(t.x) - x).abs().max()) < tol for t in ended):
            bad.append(trial.id)
    return bad


def test_the_readme_recipe_never_reproposes_a_stopped_configuration():
    """Issue 57: with the default model ("final") and ASHA on curves that never cross, 96 of
    100 BO proposals repeated an earlier trial, because a stopped trial was neither fitted nor
    pending."""
    f = Curves(max_steps=9)
    result = dsbo.minimize(
        f, SPACE, early_stopping="asha", max_steps=9, budget_steps=90, seed=0, **FAST
    )
    store = result.campaign.store
    assert store.count("stopped") > 5, "the rule stopped trials"
    bo = [t for t in store.trials() if t.generator not in ("sobol-init", "sobol-fallback")]
    assert len(bo) > 5
    assert repeats_of_ended(store, repeat_tolerance(OptimizerSettings())) == []


def test_stopped_trials_the_model_did_not_fit_are_pending_points(tmp_path):
    store = open_store(str(tmp_path / "t.sqlite"))
    ids = store.add_trials(
        torch.tensor([[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]]), "sobol-init", metadata=[{}] * 3
    )
    store.complete(ids[0], [1.0])
    store.stop(ids[1], [2.0], reason="asha")
    store.stop(ids[2], [3.0], reason="asha")
    X_fitted = torch.tensor(
        [[0.1, 0.1], [0.9, 0.9]], dtype=torch.double
    )  # "last": stopped ones fitted
    assert unfitted_ended(store, X_fitted).tolist() == [[0.5, 0.5]]
    assert (
        unfitted_ended(
            store, torch.tensor([[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]], dtype=torch.double)
        )
        is None
    )


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule=st.sampled_from(["median", "percentile", "asha", "hyperband"]),
    model=st.sampled_from(["final", "last", "bohb"]),
    every=st.sampled_from([1, 2, 3]),
    crossing=st.booleans(),
    workers=st.integers(1, 3),
    extra=st.integers(0, 17),
    seed=st.integers(0, 10_000),
)
def test_no_proposal_repeats_an_ended_trial_and_steps_are_charged_exactly(
    rule, model, every, crossing, workers, extra, seed
):
    """Over rules, models, reporting intervals, curve families and 1-3 threads: no BO
    proposal within the repeat tolerance of a stopped trial; the steps each trial trained are
    the steps it was charged, and their sum is at most ``budget_steps``."""
    max_steps = 6
    budget_steps = workers * max_steps + 24 + extra
    f = Curves(max_steps, every=every, crossing=crossing)
    spec = {"name": rule, "model": model}
    result = dsbo.minimize(
        f,
        SPACE,
        early_stopping=spec,
        max_steps=max_steps,
        budget_steps=budget_steps,
        seed=seed,
        workers=workers,
        n_init=3,
        **FAST,
    )
    store = result.campaign.store
    assert repeats_of_ended(store, repeat_tolerance(OptimizerSettings())) == []
    for trial in store.trials():
        assert trial.cost == f.trained.get(trial.id, 0), f"trial {trial.id} charged what it trained"
    assert sum(f.trained.values()) == store.cost_used() <= budget_steps


@pytest.mark.parametrize("every", [1, 3])
def test_a_trial_never_trains_past_its_reservation(every):
    """The audit's case: validating every 3 epochs, ``budget_steps=20, max_steps=9`` spent 21."""
    f = Curves(max_steps=9, every=every)
    result = dsbo.minimize(
        f, SPACE, early_stopping="median", max_steps=9, budget_steps=20, seed=1, n_init=2, **FAST
    )
    store = result.campaign.store
    assert sum(f.trained.values()) == store.cost_used() <= 20
    for trial in store.trials():
        assert trial.cost == f.trained[trial.id]
