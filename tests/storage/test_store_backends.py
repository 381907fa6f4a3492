"""One test-suite for both store backends (SQLite file, PostgreSQL database): the same
statuses, budget guarantees, leases and schema checks (dsbo.storage's module docstring)."""

import json
import threading
import time

import pytest
import torch
from pg_helpers import postgres_server, postgres_url  # noqa: F401 - fixtures

from dsbo.errors import BudgetExhaustedError, StoreConnectionError, StoreError, StoreLockedError
from dsbo.storage import IMPORTED, SCHEMA_VERSION, Store, TrialStore, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    """Where a store lives: a SQLite file, or the URL of a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "trials.sqlite")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(target):
    with open_store(target) as s:
        yield s


def test_roundtrip_statuses_and_reopen(target):
    store = open_store(target)
    assert isinstance(store, Store) and store.get_meta("schema_version") == SCHEMA_VERSION
    ids = store.add_trials(
        torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.double),
        "sobol",
        fit_time=1.5,
        acq_time=2.0,
    )
    store.complete(ids[0], [1.0, -2.0], eval_time=0.1)
    store.fail(ids[1], "ValueError: boom")
    store.close()
    with open_store(target) as again:  # a new connection sees every committed row
        first, second = again.trials()
        assert first.status == "completed" and first.y == [1.0, -2.0] and first.eval_time == 0.1
        assert second.status == "failed" and second.error == "ValueError: boom" and second.y is None
        assert (first.fit_time, first.acq_time, second.fit_time, second.acq_time) == (
            1.5,
            2.0,
            0.0,
            0.0,
        )
        assert first.batch == second.batch == 0
        X, Y = again.completed_data()
        assert X.tolist() == [[0.1, 0.2]] and Y.tolist() == [[1.0, -2.0]]
        assert (
            again.count() == 2
            and again.count("failed") == 1
            and again.count(("completed", "failed")) == 2
        )


def test_a_trial_is_told_once_and_must_exist(store):
    [tid] = store.add_trials([[0.5]], "manual")
    store.complete(tid, [1.0])
    with pytest.raises(StoreError, match="already completed"):
        store.complete(tid, [2.0])
    with pytest.raises(StoreError, match="does not exist"):
        store.fail(tid + 999, "x")
    with pytest.raises(StoreError, match="unknown trial status"):
        store.trials("done")


def test_non_finite_outcomes_are_refused(store):
    [tid] = store.add_trials([[0.5]], "manual")
    with pytest.raises(ValueError):
        store.complete(tid, [float("nan")])
    assert store.get(tid).status == "pending"


def test_budget_and_cost_budget_are_never_overspent(store):
    store.add_trials([[0.1], [0.2]], "sobol", budget=3, cost=[2.0, 1.0])
    with pytest.raises(BudgetExhaustedError, match="would exceed the budget of 3"):
        store.add_trials([[0.3], [0.4]], "sobol", budget=3)
    with pytest.raises(BudgetExhaustedError, match="cost budget of 4"):
        store.add_trials([[0.3]], "sobol", cost=1.5, budget_cost=4.0)
    assert store.count() == 2 and store.cost_used() == 3.0, "refused batches leave nothing behind"
    store.abandon_pending()  # abandoned trials leave the trial budget; their cost stays (issue 32, item 4)
    assert store.cost_used() == 3.0
    assert len(store.add_trials([[0.3], [0.4], [0.5]], "sobol", budget=3)) == 3


def test_abandoned_trials_late_results_respect_the_budget(store):
    ids = store.add_trials([[0.1], [0.2], [0.3]], "sobol")
    store.complete(ids[0], [0.0])
    assert store.abandon_pending(ids=[ids[1]]) == [ids[1]] and store.get(ids[2]).status == "pending"
    assert store.abandon_pending() == [ids[2]]
    store.complete(ids[1], [3.0], budget=2)  # room in the budget: recorded, and counted
    for budget in (2, None):
        with pytest.raises(BudgetExhaustedError, match=f"trial {ids[2]} was abandoned"):
            store.fail(ids[2], "late", budget=budget)
    assert store.get(ids[2]).status == "abandoned"


def test_meta_and_setdefault(store):
    assert store.get_meta("identity") is None
    store.set_meta("identity", {"problem": "p", "dim": 2})
    store.set_meta("identity", {"problem": "q", "dim": 3})  # an upsert
    assert store.get_meta("identity") == {"problem": "q", "dim": 3}
    assert store.setdefault_meta("lease", 30.0) == 30.0
    assert store.setdefault_meta("lease", 5.0) == 30.0, "the first value wins"


def test_metadata_updates_merge(store):
    [tid] = store.add_trials([[0.1]], "sobol", metadata={"seed": 3})
    store.update_metadata(tid, iteration_time=1.5)
    assert store.get(tid).metadata == {"seed": 3, "iteration_time": 1.5}


def test_leases_heartbeat_expiry_and_claims(store):
    a, b = store.add_trials([[0.1], [0.2]], "sobol", worker="w-a")
    [c] = store.add_trials([[0.3]], "sobol", worker="w-b")
    assert store.get(a).worker == "w-a" and store.get(a).heartbeat_at is not None
    assert store.expired(lease=60.0) == []
    time.sleep(0.6)
    assert store.heartbeat("w-b") == 1  # w-b is alive, w-a is not
    assert [t.id for t in store.expired(lease=0.4)] == [a, b]
    [claimed] = store.claim_expired("w-c", lease=0.4, limit=1)
    assert claimed.id == a and claimed.worker == "w-c" and claimed.metadata["lease_retries"] == 1
    assert claimed.metadata["lease_lost_by"] == ["w-a"]
    assert [t.id for t in store.expired(lease=0.4)] == [b], "a claim renews the lease"
    store.complete(b, [1.0])  # a finished trial has no lease
    time.sleep(0.01)  # past the (millisecond) clock tick of a's claim
    # with no lease at all every pending trial's lease has run out: a and c, never the completed b
    assert [(t.id, t.status) for t in store.expired(lease=0.0)] == [(a, "pending"), (c, "pending")]


def test_a_newer_schema_is_refused(target):
    with open_store(target) as s:
        s.set_meta("schema_version", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match=f"schema {SCHEMA_VERSION + 1}"):
        open_store(target)


def test_second_writer_sqlite_refused_postgres_shared(target):
    first = open_store(target)
    try:
        if target.startswith("postgresql"):
            second = open_store(target)  # many workers share one database
            [tid] = second.add_trials([[0.5]], "sobol")
            assert first.get(tid).status == "pending" and first.shared and second.shared
            second.close()
        else:
            with pytest.raises(StoreLockedError):
                open_store(target)
            assert not first.shared
    finally:
        first.close()


def test_postgres_proposal_lock_serializes_proposers(postgres_url):  # noqa: F811
    first, second = open_store(postgres_url), open_store(postgres_url)
    order = []

    def propose(store, name, hold):
        with store.proposal_lock():
            order.append(f"{name}-in")
            time.sleep(hold)
            order.append(f"{name}-out")

    with first.proposal_lock():
        thread = threading.Thread(target=propose, args=(second, "second", 0.0))
        thread.start()
        time.sleep(0.3)
        order.append("first-out")
    thread.join(10)
    assert order == ["first-out", "second-in", "second-out"], "the second waited for the first"
    first.close(), second.close()


def test_postgres_bad_urls_are_named_errors(postgres_server):  # noqa: F811
    server = postgres_server
    with pytest.raises(
        StoreConnectionError, match="cannot open the store postgresql://dsbo@127.0.0.1:1/x"
    ):
        open_store("postgresql://dsbo:secret@127.0.0.1:1/x")  # nothing listens on port 1
    with pytest.raises(StoreConnectionError, match="no_such_role") as info:
        open_store(
            server.url("postgres", user="no_such_role", password="pw")
        )  # the login is refused
    assert ":pw@" not in str(info.value), "the password is never shown"
    with pytest.raises(StoreConnectionError, match="does not exist"):
        open_store(server.url("no_such_database"))


def test_postgres_wrong_password_is_a_named_error(postgres_server):  # noqa: F811
    if postgres_server.password is None:
        pytest.skip(
            "this server trusts every TCP login (no password to get wrong); CI's server asks for one"
        )
    with pytest.raises(StoreConnectionError, match="password authentication failed") as info:
        open_store(postgres_server.url("postgres", password="not-the-password"))
    assert "not-the-password" not in str(info.value)
    assert (
        f"postgresql://{postgres_server.user}@{postgres_server.host}:{postgres_server.port}/postgres"
        in str(info.value)
    )


def test_sqlite_store_is_the_default_and_keeps_its_import_path(tmp_path):
    store = open_store(tmp_path / "t.sqlite")
    assert type(store) is TrialStore and open_store(store) is store
    store.close()
    memory = open_store(None)
    assert memory.path == ":memory:"
    memory.close()
    assert json.loads(json.dumps(SCHEMA_VERSION)) == 5


def test_imported_trials_never_count_against_the_budget_nor_expire(store):
    """Issue 44: trials of generator ``imported`` (prior data) are outside the trial budget, on
    both backends; an imported pending trial is never claimed nor abandoned."""
    prior = store.add_trials(torch.rand(3, 2, dtype=torch.double), IMPORTED, cost=0.0, budget=2)
    assert store.budget_used() == 0 and store.count() == 3
    own = store.add_trials(torch.rand(2, 2, dtype=torch.double), "sobol", budget=2)
    assert store.budget_used() == 2
    with pytest.raises(BudgetExhaustedError):
        store.add_trials(torch.rand(1, 2, dtype=torch.double), "sobol", budget=2)
    assert [t.id for t in store.expired(lease=-1.0)] == own
    assert [t.id for t in store.claim_expired("other", lease=-1.0, limit=9)] == own
    assert store.abandon_pending() == own
    store.complete(prior[0], [1.0], budget=2)
    assert store.count("completed") == 1 and store.budget_used() == 0
