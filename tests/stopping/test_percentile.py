"""The median and percentile rules: hand-computed cases, invariants, and a cross-check against
Optuna's ``PercentilePruner`` / ``MedianPruner`` on random campaigns."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.stopping import MedianRule, PercentileRule, TrialCurve

STATUSES = ("pending", "completed", "stopped", "failed", "abandoned")


def completed(i: int, steps, values) -> TrialCurve:
    return TrialCurve(i, "completed", tuple(steps), tuple(values))


def running(steps, values, trial_id: int = 99) -> TrialCurve:
    return TrialCurve(trial_id, "pending", tuple(steps), tuple(values))


#: Five completed trials with 1, 2, 3, 4, 5 at step 3 (and other values elsewhere).
FIVE = [completed(i, (0, 3, 6), (10.0, float(i + 1), -10.0)) for i in range(5)]


# ---------------------------------------------------------------------- hand-computed cases
def test_median_hand_computed():
    rule = MedianRule()
    assert rule.decide(running((3,), (2.9,)), FIVE).stop  # median of 1..5 is 3
    assert not rule.decide(running((3,), (3.0,)), FIVE).stop  # a tie with the cutoff survives
    assert not rule.decide(running((3,), (3.1,)), FIVE).stop
    # the trial's best so far counts, not its value at the step
    assert not rule.decide(running((1, 3), (3.5, 1.0)), FIVE).stop
    assert (
        "worse than the median 3 of 5 completed trial(s)"
        in rule.decide(running((3,), (2.9,)), FIVE).reason
    )


def test_percentile_keeps_the_top_percent():
    # percentile=25 keeps the top 25%: the cutoff is the 75th percentile of 1..5, i.e. 4.0
    rule = PercentileRule(25.0)
    assert rule.decide(running((3,), (3.9,)), FIVE).stop
    assert not rule.decide(running((3,), (4.0,)), FIVE).stop
    assert (
        "75th percentile (keeping the top 25%) 4" in rule.decide(running((3,), (3.9,)), FIVE).reason
    )
    # interpolated: the 90th percentile of 1..5 is 4.6
    rule10 = PercentileRule(10.0)
    assert rule10.decide(running((3,), (4.59,)), FIVE).stop
    assert not rule10.decide(running((3,), (4.6,)), FIVE).stop
    # 0 keeps only a trial as good as the best; 100 stops only one below all
    assert PercentileRule(0.0).decide(running((3,), (4.99,)), FIVE).stop
    assert not PercentileRule(0.0).decide(running((3,), (5.0,)), FIVE).stop
    assert PercentileRule(100.0).decide(running((3,), (0.99,)), FIVE).stop
    assert not PercentileRule(100.0).decide(running((3,), (1.0,)), FIVE).stop


def test_only_completed_trials_count():
    others = [*FIVE[:4]] + [
        TrialCurve(10 + i, s, (3,), (100.0,))
        for i, s in enumerate(("pending", "stopped", "failed", "abandoned"))
    ]
    rule = MedianRule(n_startup_trials=5)
    decision = rule.decide(running((3,), (0.0,)), others)
    assert (
        not decision.stop
        and "4 completed trial(s), fewer than n_startup_trials=5" in decision.reason
    )
    # with 4 startup trials, the median of 1..4 (2.5) is the cutoff: the others' 100s are ignored
    rule4 = MedianRule(n_startup_trials=4)
    assert rule4.decide(running((3,), (2.4,)), others).stop
    assert not rule4.decide(running((3,), (2.5,)), others).stop
    # no completed trial at all never stops, even with n_startup_trials=0
    assert not MedianRule(n_startup_trials=0).decide(running((3,), (-1e9,)), others[4:]).stop


def test_values_at_the_exact_step_only():
    # completed trials reported steps 0, 3, 6: at step 4 nobody reported, no decision
    decision = MedianRule().decide(running((4,), (-100.0,)), FIVE)
    assert not decision.stop and "0 completed trial(s) reported step 4" in decision.reason
    # n_min_trials: only two completed trials reported step 5
    others = FIVE + [completed(7, (5,), (9.0,)), completed(8, (5,), (8.0,))]
    assert MedianRule(n_min_trials=2).decide(running((5,), (1.0,)), others).stop
    assert not MedianRule(n_min_trials=3).decide(running((5,), (1.0,)), others).stop


def test_own_id_in_others_is_ignored():
    trial = running((3,), (2.9,), trial_id=2)
    # others holding the trial itself (as completed, with a high value) decide as without it
    assert MedianRule(n_startup_trials=4).decide(trial, FIVE) == MedianRule(
        n_startup_trials=4
    ).decide(trial, [o for o in FIVE if o.trial_id != 2])


def test_warmup_and_interval_checkpoints():
    rule = MedianRule(
        n_startup_trials=1, n_warmup_steps=2, interval_steps=3
    )  # checkpoints 2, 5, 8, ...
    good = [completed(i, range(12), [100.0] * 12) for i in range(3)]
    stopped_at = [
        s for s in range(12) if rule.decide(running(range(s + 1), [0.0] * (s + 1)), good).stop
    ]
    assert stopped_at == [2, 5, 8, 11]
    assert rule.rungs(11) == [2, 5, 8, 11] and rule.rungs(None) == []
    # a checkpoint no report landed on is judged at the next report
    assert rule.decide(running((1, 4), (0.0, 0.0)), good).stop  # checkpoint 2 judged at 4
    assert rule.decide(running((1, 4, 6), (0.0, 0.0, 0.0)), good).stop  # checkpoint 5 judged at 6
    decision = rule.decide(running((5, 6), (0.0, 0.0)), good)  # checkpoint 5 was judged at 5
    assert not decision.stop and "not the first report since checkpoint 5" in decision.reason
    decision = rule.decide(running((1,), (0.0,)), good)
    assert not decision.stop and "before the warmup" in decision.reason


# ---------------------------------------------------------------------- invariants
@st.composite
def campaigns(draw):
    """A random rule, a running trial and others (steps 0..7, values with ties)."""
    values = st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0, 2.5, -1.0])

    def curve(i: int, status: str) -> TrialCurve:
        steps = sorted(draw(st.sets(st.integers(0, 7), max_size=6)))
        return TrialCurve(i, status, tuple(steps), tuple(draw(values) for _ in steps))

    others = [curve(i, draw(st.sampled_from(STATUSES))) for i in range(draw(st.integers(0, 9)))]
    trial = curve(100, "pending")
    rule = PercentileRule(
        draw(st.sampled_from([0.0, 10.0, 25.0, 50.0, 75.0, 100.0, 33.3])),
        n_startup_trials=draw(st.integers(0, 4)),
        n_warmup_steps=draw(st.integers(0, 4)),
        interval_steps=draw(st.integers(1, 3)),
        n_min_trials=draw(st.integers(1, 3)),
    )
    return rule, trial, others


@settings(max_examples=200, deadline=None)
@given(campaigns(), st.randoms(use_true_random=False))
def test_order_of_others_does_not_matter(case, rnd: random.Random):
    rule, trial, others = case
    shuffled = list(others)
    rnd.shuffle(shuffled)
    assert rule.decide(trial, shuffled) == rule.decide(trial, others)


@settings(max_examples=200, deadline=None)
@given(campaigns())
def test_never_stopped_before_warmup_or_startup(case):
    rule, trial, others = case
    decision = rule.decide(trial, others)
    n_completed = sum(o.status == "completed" for o in others)
    if (
        trial.last_step is None
        or trial.last_step < rule.n_warmup_steps
        or n_completed < max(1, rule.n_startup_trials)
    ):
        assert not decision.stop
    if decision.stop:  # a stop always has its cutoff above the trial's best
        assert trial.best() < max(
            o.value_at(trial.last_step) for o in others if o.value_at(trial.last_step) is not None
        )


@settings(max_examples=200, deadline=None)
@given(campaigns(), st.floats(0.0, 10.0))
def test_a_better_trial_is_never_stopped_where_a_worse_one_continues(case, lift):
    rule, trial, others = case
    better = TrialCurve(
        trial.trial_id, "pending", trial.steps, tuple(v + lift for v in trial.values)
    )
    if not rule.decide(trial, others).stop:
        assert not rule.decide(better, others).stop


@settings(max_examples=100, deadline=None)
@given(campaigns())
def test_median_is_percentile_50(case):
    rule, trial, others = case
    options = rule.options()
    del options["percentile"]
    assert (
        MedianRule(**options).decide(trial, others).stop
        == PercentileRule(50.0, **options).decide(trial, others).stop
    )


# ---------------------------------------------------------------------- cross-check with Optuna
OPTUNA_STATE = {
    "completed": "COMPLETE",
    "stopped": "PRUNED",
    "failed": "FAIL",
    "abandoned": "FAIL",
    "pending": "RUNNING",
}


def _random_case(rng: np.random.Generator):
    grid = int(rng.integers(3, 7))
    pool = [0.0, 1.0, 2.0, 3.0, 4.0] if rng.random() < 0.5 else None  # ties half the time

    def draw_curve(i: int, status: str) -> TrialCurve:
        size = int(rng.integers(0, grid + 1)) if rng.random() < 0.3 else grid  # gaps now and then
        steps = sorted(rng.choice(grid, size=size, replace=False).tolist())
        level = float(rng.choice(pool)) if pool else rng.normal()  # each curve has its level
        values = [
            level + float(rng.choice([0.0, 0.0, 1.0]))
            if pool
            else float(np.round(level + 0.2 * rng.normal(), 3))
            for _ in steps
        ]
        return TrialCurve(i, status, tuple(steps), tuple(values))

    weights = np.array([0.55, 0.15, 0.1, 0.05, 0.15])
    others = [
        draw_curve(i, str(rng.choice(STATUSES[1:] + STATUSES[:1], p=weights)))
        for i in range(int(rng.integers(0, 13)))
    ]
    trial = draw_curve(len(others), "pending")
    percentile = float(rng.choice([0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 100.0, rng.uniform(0, 100)]))
    options = {
        "n_startup_trials": int(rng.integers(0, 6)),
        "n_warmup_steps": int(rng.integers(0, 3)),
        "interval_steps": int(rng.integers(1, 3)),
        "n_min_trials": int(rng.integers(1, 4)),
    }
    return percentile, options, trial, others


def _optuna_study(others):
    import optuna
    from optuna.trial import TrialState, create_trial

    study = optuna.create_study(direction="maximize")
    for o in others:
        state = TrialState[OPTUNA_STATE[o.status]]
        value = (o.last_value if o.values else 0.0) if state == TrialState.COMPLETE else None
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                intermediate_values=dict(zip(o.steps, o.values, strict=True)),
            )
        )
    return study


@pytest.mark.parametrize("median", [False, True])
def test_matches_optuna(median: bool):
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(42 + median)
    n_cases, n_decisions, n_stops = 400, 0, 0
    for _ in range(n_cases):
        percentile, options, trial, others = _random_case(rng)
        if median:
            rule, pruner = MedianRule(**options), optuna.pruners.MedianPruner(**options)
        else:
            rule, pruner = (
                PercentileRule(percentile, **options),
                optuna.pruners.PercentilePruner(percentile, **options),
            )
        study = _optuna_study(others)
        asked = study.ask()
        assert asked.number == trial.trial_id
        for i, (step, value) in enumerate(zip(trial.steps, trial.values, strict=True)):
            asked.report(value, step)
            frozen = study._storage.get_trial(asked._trial_id)
            prefix = TrialCurve(
                trial.trial_id, "pending", trial.steps[: i + 1], trial.values[: i + 1]
            )
            expected = pruner.prune(study, frozen)
            decision = rule.decide(prefix, others)
            assert decision.stop == expected, (rule, prefix, others, decision)
            n_decisions += 1
            n_stops += expected
    print(
        f"{type(rule).__name__}: {n_cases} cases, {n_decisions} decisions, {n_stops} stops, all equal to Optuna's"
    )
    # the cases exercise both outcomes
    assert n_decisions > 1000 and n_stops > 100 and n_decisions - n_stops > 500, (
        n_decisions,
        n_stops,
    )


def test_reasons_show_values_in_the_users_direction():
    """A minimized loss is stored negated; inside user_direction(-1) the reason shows the loss."""
    from dsbo.stopping.base import user_direction

    done = [TrialCurve(i, "completed", (3,), (-float(i),)) for i in range(1, 6)]  # losses 1..5
    trial = TrialCurve(9, "pending", (3,), (-4.5,))
    with user_direction(-1.0):
        reason = MedianRule(n_startup_trials=1).decide(trial, done).reason
    assert "best value so far 4.5 is worse than the median 3 of 5" in reason
