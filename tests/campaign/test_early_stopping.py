"""Early stopping inside a campaign (dsbo.campaign.early_stopping): trials report curves in
the user's direction, a rule stops them from the stored curves, the budget counts steps, bad
reports are named failures, and a resumed campaign decides as the uninterrupted one."""

import math

import pytest
import torch

import dsbo
from dsbo.campaign import Campaign
from dsbo.campaign.early_stopping import EarlyStopping, takes_trial, training_data
from dsbo.errors import ConfigError, TrialStoppedError
from dsbo.problems import get_problem
from dsbo.storage import TrialStore, open_store

SPACE = {"lr": dsbo.Float(1e-3, 1.0, log=True), "width": dsbo.Int(1, 8)}
FAST = {"surrogate": "gp", "dry_run": False, "n_init": 4, "outcome_warping": None}


def loss_at(params, epoch):
    """A learning curve: bad learning rates stay high, every curve falls as 1/epoch."""
    return abs(math.log10(params["lr"]) + 1.5) + 1.0 / epoch + 0.01 * params["width"]


def make_train(max_steps=9, log=None):
    def train(params, trial):
        loss = math.inf
        for epoch in range(1, max_steps + 1):
            loss = loss_at(params, epoch)
            trial.report(epoch, loss)
            if log is not None:
                log.append((trial.id, epoch))
            if trial.should_stop():
                break
        return loss

    return train


def test_asha_stops_trials_and_stores_their_curves_in_the_stored_sense():
    result = dsbo.minimize(
        make_train(), SPACE, budget=12, early_stopping="asha", max_steps=9, **FAST
    )
    store = result.campaign.store
    stopped = store.trials("stopped")
    assert stopped and store.count("completed") >= 1 and store.count("failed") == 0
    curves = store.curves()
    for trial in store.trials():
        params = result.campaign.problem.params(trial.x)
        steps = [s for s, _ in curves[trial.id]]
        assert steps == list(range(1, len(steps) + 1))
        # minimized: the store keeps -loss, the history shows the loss
        assert curves[trial.id][-1][1] == pytest.approx(-loss_at(params, steps[-1]))
        if trial.status == "stopped":
            assert (
                steps[-1] < 9
                and trial.y == [curves[trial.id][-1][1]]
                and trial.error.startswith("asha")
            )
        else:
            assert steps[-1] == 9
    history = result.history.set_index("trial")
    assert (history.loc[[t.id for t in stopped], "status"] == "stopped").all()
    best = min(t.y[0] * -1 for t in store.trials("completed"))
    assert result.best_value == pytest.approx(best)  # the best is a fully trained trial


def test_a_budget_in_steps_charges_what_each_trial_used():
    fast = {k: v for k, v in FAST.items() if k != "n_init"}
    result = dsbo.minimize(
        make_train(), SPACE, early_stopping="asha", max_steps=9, budget_steps=60, **fast
    )
    assert result.campaign.n_init == 2  # a third of the 6 full trials the steps pay for
    assert result.campaign.budget == 1000  # no trial cap but the steps
    store = result.campaign.store
    curves = store.curves()
    trials = store.trials()
    assert all(t.cost == curves[t.id][-1][0] for t in trials)  # the last step reported
    assert store.cost_used() <= 60 and result.campaign.remaining == 0
    assert any(t.cost < 9 for t in trials) and len(trials) > 60 // 9
    assert result.campaign.ledger.source == "steps"


def test_the_last_trial_stops_when_its_reservation_of_the_step_budget_ends():
    train = make_train()
    tuner = dsbo.Tuner(SPACE, max_steps=9, budget_steps=13, early_stopping=None, **FAST)
    first = tuner.ask()
    for epoch in range(1, 10):
        first.report(epoch, loss_at(first.params, epoch))
        assert not first.should_stop()  # no rule: a full trial
    tuner.tell(first, loss_at(first.params, 9))
    second = tuner.ask()
    assert tuner.campaign.store.get(second.trial_id).cost == 4  # what was left
    stops = []
    for epoch in range(1, 10):
        second.report(epoch, loss_at(second.params, epoch))
        stops.append(second.should_stop())
        if stops[-1]:
            break
    assert stops == [False, False, False, True]
    trial = tuner.campaign.store.get(second.trial_id)
    assert trial.status == "stopped" and "step budget is spent" in trial.error and trial.cost == 4
    tuner.tell(second, 0.0)  # told after it was stopped: ignored
    assert tuner.campaign.store.get(second.trial_id).status == "stopped"
    assert tuner.ask() is None and train is not None


def test_nan_and_backward_steps_are_failed_trials_with_the_reason():
    def broken(params, trial):
        trial.report(1, 0.5)
        if params["width"] <= 4:
            trial.report(2, math.nan)
        trial.report(1, 0.4)
        return 0.4

    result = dsbo.minimize(broken, SPACE, budget=6, early_stopping="median", max_steps=9, **FAST)
    errors = [t.error for t in result.campaign.store.trials("failed")]
    assert len(errors) == 6
    assert all(
        "ReportError" in e and ("finite number" in e or "does not come after" in e) for e in errors
    )
    assert any("finite number" in e for e in errors) and any(
        "does not come after" in e for e in errors
    )


def test_a_report_after_the_stop_ends_the_trial_as_stopped():
    def stubborn(params, trial):
        for epoch in range(1, 10):
            trial.report(epoch, loss_at(params, epoch))
            trial.should_stop()  # ignores the answer: the next report raises TrialStoppedError
        return loss_at(params, 9)

    result = dsbo.minimize(stubborn, SPACE, budget=12, early_stopping="asha", max_steps=9, **FAST)
    store = result.campaign.store
    assert store.count("stopped") >= 1 and store.count("failed") == 0


def run_with_crash(path, crash_at=None):
    """A campaign that a KeyboardInterrupt (not an evaluation error) kills at ``crash_at``
    reports of the whole run; resumed on the same store."""
    count = [0]

    def train(x, trial):
        params = problem.params(x)
        for epoch in range(1, 10):
            count[0] += 1
            if count[0] == crash_at:
                raise KeyboardInterrupt
            trial.report(epoch, loss_at(params, epoch))
            if trial.should_stop():
                break
        return loss_at(params, 9)

    problem = get_problem(
        "black-box", parameters=dsbo.SearchSpace(SPACE), objectives={"loss": ("min", None)}
    )
    kwargs = dict(
        surrogate="gp",
        budget=10,
        n_init=4,
        seed=3,
        store=path,
        evaluator=train,
        dry_run=False,
        early_stopping="asha",
        max_steps=9,
    )
    if crash_at is not None:
        with pytest.raises(KeyboardInterrupt):
            Campaign(problem, **kwargs).run()
    campaign = Campaign(problem, **kwargs)
    campaign.run()
    store = campaign.store
    return [(t.status, round(t.x[0], 9), t.cost) for t in store.trials()], store.curves()


def test_a_resumed_campaign_decides_as_the_uninterrupted_one(tmp_path):
    straight, straight_curves = run_with_crash(str(tmp_path / "a.sqlite"))
    resumed, resumed_curves = run_with_crash(str(tmp_path / "b.sqlite"), crash_at=23)
    assert resumed == straight
    assert resumed_curves == straight_curves  # nothing lost, nothing reported twice


def test_a_campaign_opening_a_store_reads_its_ended_curves_once(tmp_path, monkeypatch):
    """A campaign (a resumed one, a worker joining a shared store) reads the ended trials'
    curves when it opens the store; its decisions read only the running trials' curves."""
    path = str(tmp_path / "s.sqlite")
    run_with_crash(path)
    problem = get_problem(
        "black-box", parameters=dsbo.SearchSpace(SPACE), objectives={"loss": ("min", None)}
    )
    read: list[list[int] | None] = []
    curves = TrialStore.curves
    monkeypatch.setattr(
        TrialStore,
        "curves",
        lambda self, ids=None: read.append(None if ids is None else list(ids)) or curves(self, ids),
    )
    # model "final": its proposals read no curve, so every read after opening is a decision's
    campaign = Campaign(
        problem,
        surrogate="gp",
        budget=12,
        n_init=4,
        seed=3,
        store=path,
        dry_run=False,
        early_stopping={"name": "asha", "model": "final"},
        max_steps=9,
    )
    ended = [t.id for t in campaign.store.trials()]
    assert read == [ended]
    [trial] = campaign.ask()
    running = campaign.running(trial)
    running.report(1, 0.5)
    running.should_stop()
    assert read[1:] == [[trial.id]] * len(read[1:]) and len(read) >= 2


def test_tuner_ask_tell_reports_and_stops():
    tuner = dsbo.Tuner(
        SPACE,
        budget=8,
        early_stopping={"name": "median", "n_startup_trials": 2},
        max_steps=5,
        **FAST,
    )
    finals = []
    for _ in range(8):
        s = tuner.ask()
        for epoch in range(1, 6):
            s.report(epoch, loss_at(s.params, epoch))
            if s.should_stop():
                break
        finals.append(s.should_stop())
        tuner.tell(s, loss_at(s.params, 5))
    store = tuner.campaign.store
    assert (
        sum(finals) == store.count("stopped")
        and store.count("completed") + store.count("stopped") == 8
    )
    with pytest.raises(TrialStoppedError):
        stopped = next(t for t in store.trials("stopped"))
        tuner.campaign.running(stopped).report(99, 0.1)


def test_a_resumed_evaluation_replays_steps_it_already_holds(tmp_path):
    campaign = Campaign(
        get_problem("branin"),
        surrogate="gp",
        budget=3,
        n_init=3,
        dry_run=False,
        max_steps=9,
        budget_steps=27,
        early_stopping=None,
    )
    [trial] = campaign.ask(q=1)
    first = campaign.running(trial)
    for epoch in (1, 2, 3):
        first.report(epoch, float(epoch))
    retry = campaign.running(trial)  # the evaluation starts again after a crash
    assert retry.last_step == 3 and retry.resumed_from == 3
    for epoch in (1, 2, 3, 4):
        retry.report(epoch, 100.0 + epoch)  # 1-3 are replays: the stored values stay
    assert campaign.store.curves()[trial.id] == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 104.0)]
    campaign.tell(trial.id, 0.0)
    assert campaign.store.get(trial.id).cost == 4  # charged once per step


def test_last_fits_the_completed_outcomes_and_the_stopped_trials_last_values():
    store = open_store(None)
    ids = store.add_trials(torch.rand(5, 2, dtype=torch.double), "sobol")
    for i, tid in enumerate(ids):
        for step in (1, 2, 3) if i < 3 else (1,):
            store.report(tid, step, float(-10 * i - step))
    store.complete(ids[0], [-2.5])  # its outcome, not its last report (-3)
    store.complete(ids[1], [-12.0])
    store.stop(ids[3], [-31.0])
    store.stop(ids[4], [-41.0])  # ids[2] is still running: left out
    settings = EarlyStopping.build({"name": "asha", "model": "last"}, max_steps=9)
    X, Y = training_data(store, settings, dim=2)
    assert Y.squeeze(-1).tolist() == [-2.5, -12.0, -31.0, -41.0]
    assert torch.equal(
        X,
        torch.tensor(
            [store.get(i).x for i in (ids[0], ids[1], ids[3], ids[4])], dtype=torch.double
        ),
    )
    final = EarlyStopping.build({"name": "asha", "model": "final"}, max_steps=9)
    assert training_data(store, final, dim=2)[1].squeeze(-1).tolist() == [-2.5, -12.0]


def test_bohb_fits_on_the_highest_rung_with_enough_trials(tmp_path):
    store = open_store(None)
    ids = store.add_trials(torch.rand(6, 2, dtype=torch.double), "sobol")
    for i, tid in enumerate(ids):
        steps = [1, 2, 3] if i < 4 else [1, 2, 3, 5, 9]
        for step in steps:
            store.report(tid, step, float(10 * i + step))
    settings = EarlyStopping.build({"name": "asha", "model": "bohb", "min_points": 4}, max_steps=9)
    assert settings.rungs() == [1, 3]  # below max_steps
    X, Y = training_data(store, settings, dim=2)
    assert X.shape == (6, 2) and Y.squeeze(-1).tolist() == [
        10 * i + 3.0 for i in range(6)
    ]  # rung 3: all six
    store.complete(ids[4], [-1.0])
    store.complete(ids[5], [-2.0])
    settings.min_points = 2
    X, Y = training_data(store, settings, dim=2)
    assert Y.squeeze(-1).tolist() == [
        -1.0,
        -2.0,
    ]  # full training: the two completed trials' outcomes
    sweep = EarlyStopping(
        None, model="bohb", levels=(2, 5), min_points=3
    )  # a sweep's brackets, no rule
    assert training_data(store, sweep, dim=2)[1].squeeze(-1).tolist() == [
        2.0,
        12.0,
        22.0,
        32.0,
        42.0,
        52.0,
    ]
    sweep.min_points = 2
    assert training_data(store, sweep, dim=2)[1].squeeze(-1).tolist() == [-1.0, -2.0]
    store = open_store(None)
    ids = store.add_trials(torch.rand(6, 2, dtype=torch.double), "sobol")
    for i, tid in enumerate(ids):
        for step in [1, 2, 3] if i < 4 else [1, 2, 3, 5, 9]:
            store.report(tid, step, float(10 * i + step))
    final = EarlyStopping.build({"name": "asha", "model": "final"}, max_steps=9)
    X, Y = training_data(store, final, dim=2)  # fewer than 2 completed trials: the rungs, as bohb
    assert Y.squeeze(-1).tolist() == [10 * i + 3.0 for i in range(6)]
    for tid in ids[:2]:
        store.complete(tid, [1.0])
    X, Y = training_data(store, final, dim=2)
    assert Y.squeeze(-1).tolist() == [1.0, 1.0]  # then the completed trials only


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"budget_steps": 50}, "budget_steps needs max_steps"),
        ({"early_stopping": "hyperband"}, "hyperband rule needs max_steps"),
        ({"early_stopping": "asha", "max_steps": 0}, "max_steps must be an integer >= 1"),
        ({"early_stopping": "ashaa", "max_steps": 9}, "ashaa"),
        ({"early_stopping": {"name": "asha", "model": "tpe"}, "max_steps": 9}, "model='tpe'"),
        ({"max_steps": 9, "budget_steps": 50, "budget_cost": 3.0}, "not both"),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Campaign(get_problem("branin"), surrogate="gp", dry_run=False, **kwargs)


def test_a_rule_needs_a_function_that_takes_the_trial():
    with pytest.raises(ConfigError, match=r"f\(params, trial\)"):
        dsbo.minimize(
            lambda params: 1.0, SPACE, budget=4, early_stopping="median", max_steps=3, **FAST
        )
    assert takes_trial(lambda params, trial: 0) and not takes_trial(lambda params, trial=None: 0)
    assert not takes_trial(len)


def test_a_fully_trained_trial_is_never_stopped():
    """ASHA has a rung at max_steps; a trial asked there is complete, not stopped."""

    def asks_at_the_end(params, trial):
        for epoch in range(1, 10):
            trial.report(epoch, loss_at(params, epoch))
        return loss_at(params, 9) if not trial.should_stop() else math.nan

    result = dsbo.minimize(
        asks_at_the_end,
        SPACE,
        budget=6,
        early_stopping={"name": "asha", "min_resource": 9},
        max_steps=9,
        **FAST,
    )
    assert result.campaign.store.count("completed") == 6


def test_threads_report_their_own_curves():
    result = dsbo.minimize(
        make_train(), SPACE, budget=8, early_stopping="asha", max_steps=9, workers=2, **FAST
    )
    store = result.campaign.store
    curves = store.curves()
    assert len(curves) == 8 and all(t.status in ("completed", "stopped") for t in store.trials())


def test_the_fidelity_model_proposes_from_the_curves_at_the_rungs():
    result = dsbo.minimize(
        make_train(),
        SPACE,
        budget=9,
        early_stopping={"name": "asha", "model": "fidelity"},
        max_steps=9,
        **FAST,
    )
    campaign = result.campaign
    model = campaign.fit_model()
    from dsbo.surrogates.fidelity import TargetFidelityModel

    curves = (
        campaign.store.curves().values()
    )  # ASHA's rungs below 9 steps: 1 and 3, and each last point
    n_points = sum(len([s for s, _ in c if s in (1, 3)]) + (c[-1][0] not in (1, 3)) for c in curves)
    assert n_points < sum(len(c) for c in curves)
    assert isinstance(model, TargetFidelityModel) and model.model.train_inputs[0].shape == (
        n_points,
        3,
    )
    X, Y = training_data(campaign.store, campaign.early_stopping, dim=2)
    assert X.shape == (9, 2) and Y.shape == (
        9,
        1,
    )  # each trial's last point: the history of the proposals
    assert [t.generator.removesuffix("+explore") for t in campaign.store.trials()][4:] == [
        "qlognei"
    ] * 5


def test_the_fidelity_model_is_fitted_with_exact_solves(monkeypatch):
    """Like every campaign GP, the fidelity GP is fitted under EXACT_CHOLESKY_SIZE (GPyTorch's
    default switches to iterative solves above 800 points)."""
    import gpytorch

    from dsbo.campaign import campaign as campaign_module

    result = dsbo.minimize(
        make_train(),
        SPACE,
        budget=5,
        early_stopping={"name": "asha", "model": "fidelity"},
        max_steps=9,
        **FAST,
    )
    seen = []
    fit = campaign_module.fit_fidelity_model
    monkeypatch.setattr(
        campaign_module,
        "fit_fidelity_model",
        lambda *a, **k: seen.append(gpytorch.settings.max_cholesky_size.value()) or fit(*a, **k),
    )
    result.campaign.fit_model()
    assert seen == [campaign_module.EXACT_CHOLESKY_SIZE]


def test_mf_kg_plans_each_trials_steps_and_stops_it_there():
    from dsbo.acquisition import OptimizerSettings

    cheap = OptimizerSettings(
        num_restarts=2, raw_samples=16, maxiter=20, batch_limit=2, mc_samples=32
    )
    tuner = dsbo.Tuner(
        SPACE,
        6,
        early_stopping={"name": "asha", "model": "fidelity"},
        acquisition="mf-kg",
        max_steps=9,
        budget_steps=45,
        optimizer=cheap,
        surrogate="gp",
        n_init=3,
        outcome_warping=None,
    )
    result = tuner.run(make_train())
    store = result.campaign.store
    proposed = [t for t in store.trials() if t.generator == "mf-kg"]
    assert proposed, "the BO phase ran"
    for trial in proposed:
        fidelity, planned = trial.metadata["fidelity"], trial.metadata["planned_steps"]
        assert 0.1 <= fidelity <= 1 and planned == max(1, math.ceil(fidelity * 9 - 1e-9))
        last = store.curves()[trial.id][-1][0]
        assert last <= planned and trial.cost == last
        if trial.status == "stopped" and last == planned < 9:
            assert trial.error == f"multi-fidelity: the proposal planned {planned} of 9 steps"
    assert store.cost_used() <= 45
    with pytest.raises(ConfigError, match="needs early_stopping with model: fidelity"):
        dsbo.Tuner(SPACE, early_stopping="asha", acquisition="mf-kg", max_steps=9, **FAST)


def test_a_step_past_max_steps_is_refused_and_the_last_decision_is_kept():
    tuner = dsbo.Tuner(SPACE, 4, early_stopping="median", max_steps=3, **FAST)
    s = tuner.ask()
    s.report(1, 0.5)
    assert not s.should_stop() and "no trial has completed yet" in s.running.decision.reason
    s.report(3, 0.4)
    assert not s.should_stop() and s.running.decision.reason.startswith("fully trained")
    from dsbo.errors import ReportError

    with pytest.raises(ReportError, match="past max_steps=3"):
        s.report(4, 0.3)
    with pytest.raises(ConfigError, match="early_stopping.reduction_factor"):
        dsbo.Tuner(
            SPACE, 4, early_stopping={"name": "asha", "reduction_factor": 1}, max_steps=3, **FAST
        )


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_steps_of_any_integer_type_are_taken_and_floats_refused(kind):
    """``for epoch in np.arange(1, 10)`` (issue 57: every trial failed); a float step is still
    refused, with the reason."""
    import numpy as np

    steps = np.arange(1, 10) if kind == "numpy" else torch.arange(1, 10)

    def train(params, trial):
        for epoch in steps:
            trial.report(epoch, params["x"] + 1.0 / int(epoch))
            if trial.should_stop():
                break
        return params["x"]

    space = {"x": dsbo.Float(0.0, 1.0)}
    result = dsbo.minimize(
        train, space, budget=6, early_stopping="median", max_steps=9, surrogate="gp", dry_run=False
    )
    store = result.campaign.store
    assert store.count("failed") == 0
    assert all(isinstance(s, int) for curve in store.curves().values() for s, _ in curve)

    def floats(params, trial):
        trial.report(1.0, params["x"])
        return params["x"]

    result = dsbo.minimize(
        floats, space, budget=3, early_stopping="median", max_steps=9, dry_run=False
    )
    assert "a step must be an integer" in result.campaign.store.trials("failed")[0].error
