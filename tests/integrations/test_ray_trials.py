"""Ray's trials as a dsbo Tuner's (dsbo.integrations.ray_trials): each way Ray ends a trial,
called as Ray's controller calls the searcher, and what the surrogate is fitted on. Needs Ray
Tune installed, no cluster."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "ray.tune", reason="Ray Tune is the optional extra `ray` (pip install -e '.[ray]')"
)

import dsbo  # noqa: E402
from dsbo.campaign.early_stopping import training_data  # noqa: E402
from dsbo.integrations.ray_trials import RayTrials, finite, stopped_trials_model  # noqa: E402

SPACE = {"x": dsbo.Float(-1.0, 1.0)}


def make_trials(max_t=None, **options):
    tuner = dsbo.Tuner(
        SPACE,
        20,
        direction="minimize",
        objective="loss",
        dry_run=False,
        surrogate="gp",
        early_stopping=stopped_trials_model(),
        **options,
    )
    return RayTrials(tuner, "loss", "training_iteration", max_t)


def run(trials, ray_id, reports, final, error=False):
    """Ray's calls for one trial: ``reports`` steps through on_trial_result, then
    on_trial_complete with the result at step ``final`` (``None``: no result); the dsbo trial."""
    [trial] = trials.tuner.campaign.ask(q=1)
    trials.add(ray_id, trial.id)
    for step in reports:
        trials.report(ray_id, {"loss": 1.0 / step, "training_iteration": step})
    result = None if final is None else {"loss": 1.0 / final, "training_iteration": final}
    trials.complete(ray_id, result, error)
    return trials.tuner.campaign.store.get(trial.id)


@pytest.mark.parametrize(
    ("reports", "final", "max_t", "status"),
    [
        ([1, 2], 3, None, "stopped"),  # the result Ray stopped it at came to on_trial_complete only
        ([1, 2], 3, 9, "stopped"),  # below max_t
        ([1, 2], 3, 3, "completed"),  # at max_t: fully trained (ASHA stops it there too)
        ([1, 2, 3], 3, None, "completed"),  # its trainable returned: the last result repeated
        ([1, 2], None, None, "stopped"),  # removed without a result (a paused trial dropped)
        ([], None, None, "failed"),  # removed before it reported anything
    ],
)
def test_how_a_trial_ended_decides_its_status(reports, final, max_t, status):
    trials = make_trials(max_t)
    trial = run(trials, "r1", reports, final)
    assert trial.status == status and trial.metadata["ray_trial_id"] == "r1"
    steps = sorted({*reports, *([final] if final else [])})
    assert [step for step, _ in trials.tuner.campaign.store.curves().get(trial.id, [])] == steps
    if status != "failed":  # its value: the last one reported (dsbo maximizes: negated)
        assert trial.y == [pytest.approx(-1.0 / steps[-1])]
    if status == "stopped":
        assert trial.error.startswith("Ray stopped trial r1" if final else "Ray removed trial r1")


def test_an_error_fails_the_trial_and_a_second_completion_is_ignored(caplog):
    trials = make_trials()
    trial = run(trials, "r1", [1, 2], 3, error=True)
    assert trial.status == "failed" and "raised an error" in trial.error
    with caplog.at_level("WARNING", logger="dsbo.integrations.ray_trials"):
        trials.complete("r1", {"loss": 0.1, "training_iteration": 4}, False)
    assert (
        "was already told" in caplog.text
        and trials.tuner.campaign.store.get(trial.id).status == "failed"
    )
    assert (
        finite("2.5") == (2.5, True)
        and finite(None)[1] is False
        and finite(float("inf"))[1] is False
    )


def test_stopped_trials_are_fitted_at_their_last_value():
    trials = make_trials(max_t=9, n_init=2)
    run(trials, "r1", [1, 2, 3, 4, 5, 6, 7, 8], 9)  # fully trained
    run(trials, "r2", [1], 2)  # stopped at step 2
    campaign = trials.tuner.campaign
    X, Y = training_data(campaign.store, campaign.early_stopping, campaign.problem.dim)
    assert sorted(Y[:, 0].tolist()) == pytest.approx(sorted([-1.0 / 9, -1.0 / 2]))
    [next_trial] = campaign.ask(q=1)  # the design was 2 trials, whatever their status
    assert next_trial.generator.split("+")[0] == "qlognei" and X.shape[0] == 2
