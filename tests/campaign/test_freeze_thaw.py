"""Freeze-thaw inside a campaign (dsbo.campaign.freeze_thaw): trials run in segments, paused
trials are thawed where they stopped, every step is charged once, a crash in a thawed segment
resumes it, and two workers on one PostgreSQL store never thaw the same trial twice."""

import math
import threading

import pytest
import torch
from pg_helpers import postgres_server, postgres_url  # noqa: F401 - fixtures
from torch.quasirandom import SobolEngine

import dsbo
from dsbo.campaign import Campaign
from dsbo.campaign.freeze_thaw import FreezeThawSettings, candidates, per_step
from dsbo.errors import ConfigError, StaleSegmentError
from dsbo.problems import get_problem
from dsbo.storage import open_store

SPACE = {"lr": dsbo.Float(1e-3, 1.0, log=True), "width": dsbo.Int(1, 8)}
MAX_STEPS = 9
#: A small, quick curve model (the power-law ensemble, few Adam steps).
QUICK = {
    "name": "freeze-thaw",
    "curve_model": "power-law-ensemble",
    "steps_per_thaw": 3,
    "epochs": 40,
    "warm_epochs": 10,
    "candidates": 64,
}
FAST = {"surrogate": "gp", "dry_run": False, "n_init": 4, "outcome_warping": None}


def loss_at(params, epoch):
    """Good learning rates (near 10^-1.5) fall lowest; every curve falls as 1/epoch."""
    return abs(math.log10(params["lr"]) + 1.5) + 1.0 / epoch + 0.01 * params["width"]


class Trainer:
    """A training function that keeps a 'checkpoint' per trial (the epochs it trained) and
    resumes from ``trial.last_step``, as a real one loads its checkpoint. ``crash``: the first
    thawed segment is killed (a ``KeyboardInterrupt``) after it reported one step."""

    def __init__(self, crash=False):
        self.trained: dict[int, list[int]] = {}
        self.segments: list[tuple[int, int | None]] = []
        self.crash = crash

    def __call__(self, params, trial):
        self.segments.append((trial.id, trial.last_step))
        start = trial.last_step or 0
        assert self.trained.get(trial.id, [])[-1:] in ([], [start]), (
            "resumed where the checkpoint is"
        )
        loss = math.inf
        for epoch in range(start + 1, MAX_STEPS + 1):
            if self.crash and start and epoch == start + 2:
                self.crash = False
                raise KeyboardInterrupt("killed mid-segment")
            loss = loss_at(params, epoch)
            self.trained.setdefault(trial.id, []).append(epoch)
            trial.report(epoch, loss)
            if trial.should_stop():
                break
        return loss


def check_steps_charged_once(store, trainer, budget_steps):
    curves = store.curves()
    for trial in store.trials():
        steps = [s for s, _ in curves[trial.id]]
        assert steps == list(range(1, len(steps) + 1)) == trainer.trained[trial.id], (
            "each step trained and stored once"
        )
        assert trial.cost == steps[-1], "a trial costs the steps it used"
    assert store.cost_used() == sum(len(c) for c in curves.values()) <= budget_steps


def test_trials_are_paused_and_thawed_and_every_step_is_charged_once():
    trainer = Trainer()
    result = dsbo.minimize(
        trainer, SPACE, early_stopping=QUICK, max_steps=MAX_STEPS, budget_steps=60, **FAST
    )
    store = result.campaign.store
    trials = store.trials()
    statuses = {t.status for t in trials}
    assert statuses <= {"paused", "completed"} and "paused" in statuses and "completed" in statuses
    check_steps_charged_once(store, trainer, 60)
    assert store.cost_used() == 60, "the budget in steps is spent to the last step"
    thawed = [t for t in trials if t.metadata.get("thaws")]
    assert thawed, "some trial was continued where it paused"
    for trial in thawed:
        assert [s for tid, s in trainer.segments if tid == trial.id][1:] == [
            step for step in range(3, MAX_STEPS, 3)
        ][: trial.metadata["thaws"]], "each thaw resumes at its pause"
        assert trial.metadata["last_thaw"]["action"] == "continue"
    for trial in store.trials("paused"):
        steps = store.curves([trial.id])[trial.id]
        assert trial.y == [steps[-1][1]] and trial.error.startswith("freeze-thaw: paused at step")
    new = [t for t in trials if t.generator == "freeze-thaw"]
    assert new and all(t.metadata["freeze_thaw"]["action"] == "start" for t in new)
    design = [t for t in trials if t.generator == "sobol-init"]
    assert len(design) == 4 and all(
        len(store.curves([t.id])[t.id]) == 3 for t in design if not t.metadata.get("thaws")
    )
    completed = store.trials("completed")
    best = min(-t.y[0] for t in completed)
    assert result.best_value == pytest.approx(best), "the best is a fully trained trial"
    history = result.history.set_index("trial")
    assert set(history.loc[[t.id for t in store.trials("paused")], "status"]) == {"paused"}


def test_a_crash_in_a_thawed_segment_resumes_it_without_charging_a_step_twice(tmp_path):
    problem = get_problem(
        "black-box", parameters=dsbo.SearchSpace(SPACE), objectives={"loss": ("min", None)}
    )
    trainer = Trainer(crash=True)
    kwargs = dict(
        early_stopping=QUICK,
        max_steps=MAX_STEPS,
        budget_steps=45,
        store=str(tmp_path / "t.sqlite"),
        seed=2,
        evaluator=lambda x, trial: trainer(problem.params(x), trial),
        **FAST,
    )
    with pytest.raises(KeyboardInterrupt):
        Campaign(problem, **kwargs).run()
    crashed, thawed_from = trainer.segments[-1]
    assert thawed_from is not None and not trainer.crash
    campaign = Campaign(problem, **kwargs)
    campaign.run()
    store = campaign.store
    assert trainer.segments[trainer.segments.index((crashed, thawed_from)) + 1] == (
        crashed,
        thawed_from + 1,
    )
    assert store.get(crashed).status in ("paused", "completed")
    check_steps_charged_once(store, trainer, 45)
    assert store.cost_used() == 45


def test_two_workers_on_one_store_never_thaw_a_trial_twice(postgres_url):  # noqa: F811 - fixture
    trainer, lock = Trainer(), threading.Lock()

    def train(params, trial):
        with lock:  # the trainer's bookkeeping, not the campaign's decisions
            trainer.segments.append((trial.id, trial.last_step))
        loss = math.inf
        for epoch in range((trial.last_step or 0) + 1, MAX_STEPS + 1):
            loss = loss_at(params, epoch)
            with lock:
                trainer.trained.setdefault(trial.id, []).append(epoch)
            trial.report(epoch, loss)
            if trial.should_stop():
                break
        return loss

    errors = []

    def worker():
        try:
            dsbo.minimize(
                train,
                SPACE,
                early_stopping=QUICK,
                max_steps=MAX_STEPS,
                budget_steps=48,
                store=postgres_url,
                seed=0,
                **FAST,
            )
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    with open_store(postgres_url) as store:
        check_steps_charged_once(store, trainer, 48)
        resumed = [(tid, s) for tid, s in trainer.segments if s is not None]
        assert resumed and len(resumed) == len(set(resumed)), "no pause was thawed twice"


@pytest.mark.parametrize(
    ("spec", "steps", "match"),
    [
        ({"name": "freeze-thaw"}, None, "needs max_steps .* and budget_steps"),
        ({"name": "freeze-thaw", "steps": 3}, 60, r"unknown option\(s\) \['steps'\]"),
        ({"name": "freeze-thaw", "steps_per_thaw": 0}, 60, "steps_per_thaw must be an integer in"),
        ({"name": "freeze-thaw", "steps_per_thaw": 10}, 60, r"in \[1, max_steps=9\]"),
        ({"name": "freeze-thaw", "curve_model": "gp"}, 60, "curve_model='gp': choose one of"),
        ({"name": "freeze-thaw", "criterion": "ucb"}, 60, "criterion='ucb'"),
        ({"name": "freeze-thaw", "candidates": 0}, 60, "candidates must be an integer >= 1"),
        ({"name": "freeze-thaw", "local": 2}, 60, r"local must be a number in \[0, 1\]"),
    ],
)
def test_bad_freeze_thaw_settings_are_refused_before_anything_runs(spec, steps, match):
    calls = []
    with pytest.raises(ConfigError, match=match):
        dsbo.minimize(
            lambda p, t: calls.append(p),
            SPACE,
            early_stopping=spec,
            max_steps=MAX_STEPS,
            budget_steps=steps,
            **FAST,
        )
    assert not calls


def test_the_default_thaw_is_a_third_of_a_trial():
    assert FreezeThawSettings.build({}, 27, 540).thaw_steps(27) == 9
    assert FreezeThawSettings.build({}, 2, 10).thaw_steps(2) == 1


def test_a_stored_curve_has_one_value_per_step_from_step_one():
    assert per_step([(1, 0.5), (2, 0.25)], 2) == [0.5, 0.25]
    assert per_step([(2, 0.5), (4, 0.1)], 5) == [
        0.5,
        0.5,
        0.5,
        0.1,
        0.1,
    ]  # gaps keep the last value


def test_candidates_mix_sobol_points_and_steps_around_the_best_trials():
    best = 0.5 + 0.02 * torch.randn(
        8, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    configs = torch.cat([best, torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)])
    latest = [1.0] * 8 + [-5.0, -6.0]  # the two corner trials are the worst
    generator = torch.Generator().manual_seed(0)
    points = candidates(200, configs, latest, 0.5, SobolEngine(2, scramble=True, seed=0), generator)
    assert points.shape == (200, 2) and bool(((points >= 0) & (points <= 1)).all())
    local, sobol = points[100:], points[:100]
    assert (local - 0.5).abs().max() < 0.6 and bool(
        ((local - 0.5).abs().max(-1).values < 0.45).all()
    )
    assert (sobol - 0.5).abs().max(-1).values.max() > 0.45, "the Sobol half covers the cube"
    only_sobol = candidates(16, configs, [], 0.5, SobolEngine(2, scramble=True, seed=0), generator)
    assert only_sobol.shape == (16, 2)


def test_the_names_a_config_is_checked_against_are_the_models_and_criteria():
    from dsbo.campaign import freeze_thaw
    from dsbo.stopping.freeze_thaw import CRITERIA
    from dsbo.surrogates import curve_model

    assert freeze_thaw.CRITERIA == CRITERIA and freeze_thaw.CURVE_MODELS is curve_model.CURVE_MODELS


def test_a_tuner_hands_out_a_thawed_trial_again_with_its_last_step():
    tuner = dsbo.Tuner(SPACE, early_stopping=QUICK, max_steps=MAX_STEPS, budget_steps=30, **FAST)
    segments = []
    while (trial := tuner.ask()) is not None:
        segments.append((trial.trial_id, trial.last_step))
        for epoch in range((trial.last_step or 0) + 1, MAX_STEPS + 1):
            trial.report(epoch, loss_at(trial.params, epoch))
            if trial.should_stop():
                break
        if not trial.paused:
            tuner.tell(trial, loss_at(trial.params, MAX_STEPS))
    assert any(step is not None for _, step in segments), "a paused trial was handed out again"
    assert all(step in (None, 3, 6) for _, step in segments)
    assert tuner.campaign.store.cost_used() == 30


def train_segment(suggestion):
    """Train a handed-out trial from where it stopped until the search pauses or ends it."""
    loss = math.inf
    for epoch in range((suggestion.last_step or 0) + 1, MAX_STEPS + 1):
        loss = loss_at(suggestion.params, epoch)
        suggestion.report(epoch, loss)
        if suggestion.should_stop():
            break
    return loss


def test_a_late_tell_of_a_paused_segment_never_completes_the_thawed_trial():
    """The audit's Tuner sequence (issue 57): two trials trained to their pause, one told, the
    next ask thaws the other, then the other's first segment is told late. Before, that late
    tell completed the thawed trial at step 3 of 9 and its next report failed."""
    tuner = dsbo.Tuner(
        SPACE, early_stopping=QUICK, max_steps=MAX_STEPS, budget_steps=36, **{**FAST, "n_init": 2}
    )
    a, b = tuner.ask(n=2)
    values = {s.trial_id: train_segment(s) for s in (a, b)}
    assert a.paused and b.paused
    tuner.tell(b, values[b.trial_id])
    first = {a.trial_id: a, b.trial_id: b}
    thawed = []
    while not thawed and (new := tuner.ask(n=2)):
        thawed = [s for s in new if s.trial_id in first]
        for s in new:
            if s.trial_id not in first:
                tuner.tell(s, train_segment(s))
    [again] = thawed[:1]
    assert again.last_step == 3 and again.segment == 1
    tuner.tell(first[again.trial_id], values[again.trial_id])  # late: segment 0
    store = tuner.campaign.store
    assert store.get(again.trial_id).status == "pending", "the thawed segment still runs"
    tuner.tell(again, train_segment(again))  # its own segment reports and ends as usual
    assert store.get(again.trial_id).status in ("paused", "completed")
    assert store.curves([again.trial_id])[again.trial_id][-1][0] > 3


def test_a_returned_segment_short_of_max_steps_is_paused_not_completed():
    """A freeze-thaw evaluation that returns at the end of its segment without asking
    ``should_stop`` is paused at its last report: no trial completes before its last segment."""
    tuner = dsbo.Tuner(
        SPACE, early_stopping=QUICK, max_steps=MAX_STEPS, budget_steps=18, **{**FAST, "n_init": 2}
    )
    trial = tuner.ask()
    for epoch in (1, 2, 3):
        trial.report(epoch, loss_at(trial.params, epoch))
    tuner.tell(trial, loss_at(trial.params, 3))
    assert tuner.campaign.store.get(trial.trial_id).status == "paused"


@pytest.mark.parametrize("seed", [0, 1])
def test_two_thread_workers_complete_no_trial_before_its_last_segment(seed):
    """``workers=2`` threads: the in-process driver asks before it tells finished futures, so
    a segment's tell can come after its trial was thawed (issue 57 saw 1 seed in 9)."""
    trainer = Trainer()
    result = dsbo.minimize(
        trainer,
        SPACE,
        early_stopping=QUICK,
        max_steps=MAX_STEPS,
        budget_steps=45,
        seed=seed,
        workers=2,
        **FAST,
    )
    store = result.campaign.store
    curves = store.curves()
    for trial in store.trials("completed"):
        assert curves[trial.id][-1][0] == MAX_STEPS, (
            f"trial {trial.id} completed at its last segment's end"
        )
    check_steps_charged_once(store, trainer, 45)


def test_a_late_tell_from_another_worker_never_completes_a_trial_thawed_on_a_shared_store(
    postgres_url,  # noqa: F811 - fixture
):
    """Two workers (two campaigns, as two processes would have) on one PostgreSQL store: worker
    A's segment is paused, worker B thaws the trial, then A tells its segment late. The check is
    the store's (its write transaction), so it holds across processes (issue 57)."""
    problem = get_problem(
        "black-box", parameters=dsbo.SearchSpace(SPACE), objectives={"loss": ("min", None)}
    )
    kwargs = dict(
        early_stopping=QUICK,
        max_steps=MAX_STEPS,
        budget_steps=36,
        store=postgres_url,
        **{**FAST, "n_init": 2},
    )
    a, b = Campaign(problem, **kwargs), Campaign(problem, **kwargs)
    first = a.ask(q=2)
    for trial in first:
        running = a.running(trial)
        for epoch in (1, 2, 3):
            running.report(epoch, loss_at(problem.params(trial.x), epoch))
        assert running.should_stop() and running.paused
    thawed = []
    while not thawed and (new := b.ask()):
        thawed = [t for t in new if t.id in {f.id for f in first}]
        for t in new:
            if t.id not in {f.id for f in first}:
                running = b.running(t)
                for epoch in range(1, 4):
                    running.report(epoch, loss_at(problem.params(t.x), epoch))
                running.should_stop()
    [trial] = thawed
    told = a.tell(trial.id, 0.5, segment=0)  # worker A's late tell of the paused segment
    assert told.status == "pending" and a.store.get(trial.id).status == "pending"
    running = b.running(trial)
    assert running.segment == 1
    running.report(4, loss_at(problem.params(trial.x), 4))  # the thawed segment goes on
    with pytest.raises(StaleSegmentError):
        a.store.report(trial.id, 5, 0.1, segment=0)
