"""Campaign.import_trials: trials run elsewhere come in as prior data (issue 44): fitted, never
charged to the budget, replacing initial-design points; imported pending trials run elsewhere
and are never handed out, retried, abandoned or claimed; bad rows refused with the reason."""

import pytest

import dsbo
from dsbo.campaign.given_points import ImportedTrial
from dsbo.errors import ConfigError
from dsbo.storage import IMPORTED

SPACE = {"x": dsbo.Float(-2.0, 2.0), "kind": dsbo.Choice(["a", "b"]), "n": dsbo.Int(1, 8)}


def tuner(**options):
    options = {"budget": 6, "n_init": 3, "surrogate": "gp", "dry_run": False, **options}
    return dsbo.Tuner(SPACE, **options)


def prior_rows(k=5):
    return [
        {
            "params": {"x": -1.5 + 0.6 * i, "kind": "ab"[i % 2], "n": 1 + i % 8},
            "values": (-1.5 + 0.6 * i - 0.3) ** 2,
        }
        for i in range(k)
    ]


def test_imports_are_not_charged_and_replace_the_initial_design():
    search = tuner()
    result = search.import_trials(prior_rows(5))
    assert len(result.trials) == 5 and result.refused == []
    assert {t.generator for t in result.trials} == {IMPORTED}
    assert all(t.cost == 0.0 and t.metadata["imported"] for t in result.trials)
    campaign = search.campaign
    assert campaign.num_used == 0 and campaign.remaining == 6
    suggestion = search.ask()  # 5 completed imports >= n_init = 3: the model proposes at once
    assert campaign.store.get(suggestion.trial_id).generator not in ("sobol-init", IMPORTED)
    assert campaign.num_used == 1


def test_fewer_imports_than_the_design_shorten_it():
    search = tuner(n_init=4)
    search.import_trials(prior_rows(2))
    generators = []
    for _ in range(3):
        s = search.ask()
        generators.append(search.campaign.store.get(s.trial_id).generator)
        search.tell(s.trial_id, s.params["x"] ** 2)
    assert generators[:2] == ["sobol-init", "sobol-init"] and generators[2] != "sobol-init"


def test_the_best_and_the_history_include_imports_in_the_users_direction():
    search = tuner()
    search.import_trials(prior_rows(5))
    result = search.result()
    assert result.best_value == pytest.approx(min((-1.5 + 0.6 * i - 0.3) ** 2 for i in range(5)))
    assert list(result.history["generator"]) == [IMPORTED] * 5


def test_bad_rows_are_refused_with_the_reason_and_strict_refuses_all():
    rows = prior_rows(2) + [
        {"params": {"x": 9.0, "kind": "a", "n": 2}, "values": 1.0},
        {"params": {"x": 0.0, "kind": "c", "n": 2}, "values": 1.0},
        {"params": {"x": 0.0, "kind": "a", "n": 2.5}, "values": 1.0},
        {"params": {"x": 0.0, "kind": "a", "n": 2}},
        {"params": {"x": 0.0, "kind": "a", "n": 2}, "values": float("nan")},
        {"params": {"x": 0.0, "kind": "a", "n": 2}, "status": "running"},
        {"params": {"x": 0.0, "kind": "a", "n": 2}, "values": 1.0, "colour": "red"},
        {
            "params": {"x": 0.0, "kind": "a", "n": 2},
            "status": "stopped",
            "curve": [(2, 1.0), (1, 0.5)],
        },
    ]
    result = tuner().import_trials(rows)
    assert len(result.trials) == 2
    reasons = dict(result.refused)
    assert sorted(reasons) == list(range(2, 10))
    assert "outside" in reasons[2] and "not one of" in reasons[3] and "integer" in reasons[4]
    assert (
        "needs its values" in reasons[5]
        and "status 'running'" in reasons[7]
        and "colour" in reasons[8]
    )
    assert "increasing" in reasons[9]
    strict = tuner()
    with pytest.raises(ConfigError, match="imported row 2"):
        strict.import_trials(rows, strict=True)
    assert strict.campaign.store.count() == 0  # nothing written


def test_failed_and_stopped_rows_keep_their_error_and_curve_in_the_stored_sense():
    search = tuner()
    result = search.import_trials(
        [
            ImportedTrial({"x": 0.0, "kind": "a", "n": 1}, status="failed", error="diverged"),
            ImportedTrial(
                {"x": 0.5, "kind": "b", "n": 2},
                status="stopped",
                curve=[(1, 3.0), (2, 2.0)],
                source="optuna:s#3",
            ),
        ]
    )
    failed, stopped = result.trials
    assert failed.status == "failed" and failed.error == "diverged"
    assert stopped.status == "stopped" and stopped.y == [-2.0]  # minimized: stored negated
    assert stopped.metadata["source"] == "optuna:s#3"
    assert search.campaign.store.curves([stopped.id])[stopped.id] == [(1, -3.0), (2, -2.0)]
    assert search.campaign.num_used == 0


def test_imported_pending_trials_run_elsewhere():
    search = tuner(n_init=2)
    search.import_trials(prior_rows(3))
    [pending] = search.import_trials(
        [{"params": {"x": 0.3, "kind": "a", "n": 3}, "status": "pending"}]
    ).trials
    store = search.campaign.store
    s = search.ask()
    assert s.trial_id != pending.id  # never handed out
    assert store.expired(lease=-1.0) == [store.get(s.trial_id)]  # never expires, never claimed
    assert store.claim_expired("other", lease=-1.0, limit=5) == [store.get(s.trial_id)]
    assert store.abandon_pending() == [s.trial_id]  # never abandoned
    search.tell(pending.id, 0.01)  # its outcome arrives later, still not charged
    assert (
        store.get(pending.id).status == "completed" and search.campaign.num_used == 0
    )  # the own one: abandoned
    assert search.result().best_value == pytest.approx(0.01)


def test_a_run_leaves_imported_pending_trials_alone():
    search = tuner(budget=4, n_init=2)
    search.import_trials([{"params": {"x": 0.3, "kind": "a", "n": 3}, "status": "pending"}])
    search.campaign.resume_pending()  # a restart: the imported pending trial is not evaluated here
    assert search.campaign.store.count("pending") == 1


def test_imports_survive_a_reopened_store(tmp_path):
    path = tmp_path / "run.db"
    search = tuner(store=path)
    search.import_trials(prior_rows(4))
    search.campaign.store.close()
    again = tuner(store=path)
    assert again.campaign.num_used == 0 and again.campaign.store.count("completed") == 4


def test_a_related_task_warm_starts_the_surrogate_and_is_never_this_campaigns_trial(tmp_path):
    """add_related_task: the related trials are kept in the store's metadata (not trials, never
    charged, never the best), and the campaign's model becomes the multi-task GP read as this task."""
    from dsbo.surrogates.multi_task import TargetTaskModel

    path = tmp_path / "run.db"
    search = tuner(store=path, n_init=2)
    rows = prior_rows(6) + [
        {"params": {"x": 0.0, "kind": "a", "n": 2}, "status": "failed", "error": "x"}
    ]
    result = search.campaign.add_related_task(
        "last-month", [{**r, "values": r["values"] + 10.0} if "values" in r else r for r in rows]
    )
    assert result.trials == [] and [i for i, _ in result.refused] == [6]
    assert "only completed trials" in result.refused[0][1]
    assert search.campaign.store.count() == 0 and search.campaign.num_used == 0
    for _ in range(3):
        s = search.ask()
        search.tell(s.trial_id, (s.params["x"] - 0.3) ** 2)
    assert isinstance(search.campaign.fit_model(), TargetTaskModel)
    best = search.result().best_value
    assert (
        best < 10.0 and len(search.result().history) == 3
    )  # the related values (>= 10) are not this task's
    search.campaign.store.close()
    again = tuner(store=path, n_init=2)
    assert isinstance(again.campaign.fit_model(), TargetTaskModel)  # kept across a resume
    with pytest.raises(ConfigError, match="needs a name"):
        again.campaign.add_related_task("", rows)
    with pytest.raises(ConfigError, match="related task 'b', row 6"):
        again.campaign.add_related_task("b", rows, strict=True)
