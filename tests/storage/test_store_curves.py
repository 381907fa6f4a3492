"""Intermediate values and the ``stopped`` status (schema 4), on both backends, and the
upgrade of a schema-3 or schema-4 store in place."""

import json
import math
import sqlite3
import threading

import pytest
import torch
from pg_helpers import postgres_server, postgres_url  # noqa: F401 - fixtures

from dsbo.errors import BudgetExhaustedError, ReportError, StoreError, TrialStoppedError
from dsbo.storage import BUDGETED, SCHEMA_VERSION, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "trials.sqlite")
    return request.getfixturevalue("postgres_url")


def test_curves_round_trip_in_step_order_and_survive_a_reopen(target):
    store = open_store(target)
    a, b, c = store.add_trials(torch.rand(3, 2, dtype=torch.double), "sobol")
    for step, value in [(1, 0.5), (2, 0.25), (5, -1.0)]:
        store.report(a, step, value)
    store.report(b, 0, 3.0)
    store.close()
    with open_store(target) as again:
        assert again.curves() == {a: [(1, 0.5), (2, 0.25), (5, -1.0)], b: [(0, 3.0)]}
        assert again.curves([b, c]) == {b: [(0, 3.0)]} and again.curves([]) == {}
        assert again.statuses() == {a: "pending", b: "pending", c: "pending"}


@pytest.mark.parametrize(
    "step, value, match",
    [
        (2, 1.0, "does not come after the last reported step 2"),
        (1, 1.0, "does not come after"),
        (-1, 1.0, "integer >= 0"),
        (2.5, 1.0, "integer >= 0"),
        (True, 1.0, "integer >= 0"),
        (3, math.nan, "finite number"),
        (3, math.inf, "finite number"),
        (3, "0.1", "finite number"),
    ],
)
def test_a_bad_report_is_refused_and_records_nothing(target, step, value, match):
    with open_store(target) as store:
        [tid] = store.add_trials([[0.1, 0.2]], "sobol")
        store.report(tid, 2, 0.5)
        with pytest.raises(ReportError, match=match):
            store.report(tid, step, value)
        assert store.curves() == {tid: [(2, 0.5)]}


def test_stop_ends_the_trial_counts_in_the_budget_and_refuses_later_values(target):
    with open_store(target) as store:
        a, b = store.add_trials([[0.1, 0.2], [0.3, 0.4]], "sobol", cost=27.0)
        store.report(a, 1, -0.9)
        store.report(a, 3, -0.7)
        store.stop(a, [-0.7], eval_time=2.0, budget=2, cost=3.0, reason="asha: rung 0")
        stopped = store.get(a)
        assert (
            stopped.status == "stopped" and stopped.y == [-0.7] and stopped.error == "asha: rung 0"
        )
        assert stopped.cost == 3.0 and stopped.eval_time == 2.0
        assert "stopped" in BUDGETED and store.count(BUDGETED) == 2
        assert store.cost_used() == 30.0  # 3 used by the stopped trial, 27 reserved by the other
        with pytest.raises(TrialStoppedError, match=f"trial {a} was stopped"):
            store.report(a, 4, -0.1)
        with pytest.raises(StoreError, match="told only once"):
            store.complete(a, [0.0])
        with pytest.raises(BudgetExhaustedError):
            store.add_trials([[0.5, 0.5]], "sobol", budget=2)
        store.complete(b, [0.1])
        with pytest.raises(StoreError, match="is completed; only a running"):
            store.report(b, 1, 0.2)
        with pytest.raises(StoreError, match="does not exist"):
            store.report(999, 1, 0.2)
        assert store.trials("stopped")[0].id == a
        store.stop(store.add_trials([[0.6, 0.6]], "sobol")[0], None)
        assert store.trials("stopped")[1].y is None


def test_threads_report_through_one_sqlite_store(tmp_path):
    """A thread executor's trials report from their own threads through the one connection."""
    with open_store(tmp_path / "t.sqlite") as store:
        ids = store.add_trials(torch.rand(4, 2, dtype=torch.double), "sobol")

        def curve(tid):
            for step in range(50):
                store.report(tid, step, float(step * tid))

        threads = [threading.Thread(target=curve, args=(tid,)) for tid in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        curves = store.curves()
        assert all(curves[t] == [(s, float(s * t)) for s in range(50)] for t in ids)


#: The trials table as schemas 3 and 4 created it (a status check without ``stopped``, then
#: without ``paused``).
SCHEMA_3_TRIALS = """CREATE TABLE trials (
    id            {id},
    batch         INTEGER NOT NULL,
    generator     TEXT NOT NULL,
    status        TEXT NOT NULL CONSTRAINT trials_status_check CHECK (status IN ({statuses})),
    x             TEXT NOT NULL,
    y             TEXT,
    error         TEXT,
    created_at    {real} NOT NULL,
    completed_at  {real},
    fit_time      {real} NOT NULL DEFAULT 0,
    acq_time      {real} NOT NULL DEFAULT 0,
    eval_time     {real},
    metadata      TEXT NOT NULL DEFAULT '{{}}',
    cost          {real} NOT NULL DEFAULT 1.0,
    worker        TEXT,
    heartbeat_at  {real}
)"""
ROWS = [
    (1, 0, "sobol", "completed", "[0.25, 0.5]", "[1.5]", 4.0, '{"seed": 3}'),
    (7, 1, "qlognei", "pending", "[0.75, 0.5]", None, 2.0, "{}"),
]


OLD_STATUSES = {
    3: "'pending','completed','failed','abandoned'",
    4: "'pending','completed','failed','stopped','abandoned'",
}


def schema_3_statements(id_type, real, version=3):
    return [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        SCHEMA_3_TRIALS.format(id=id_type, real=real, statuses=OLD_STATUSES[version]),
        f"INSERT INTO meta (key, value) VALUES ('schema_version', '{json.dumps(version)}')",
        *(
            "INSERT INTO trials (id, batch, generator, status, x, y, created_at, cost, metadata) "
            f"VALUES ({i}, {b}, '{g}', '{s}', '{x}', {'NULL' if y is None else repr(y)}, 1.0, {c}, '{m}')"
            for i, b, g, s, x, y, c, m in ROWS
        ),
    ]


def check_upgraded(target):
    with open_store(target) as store:
        assert store.get_meta("schema_version") == SCHEMA_VERSION == 5
        done, running = store.trials()
        assert (done.id, done.status, done.y, done.cost, done.metadata) == (
            1,
            "completed",
            [1.5],
            4.0,
            {"seed": 3},
        )
        assert (running.id, running.status, running.x) == (7, "pending", [0.75, 0.5])
        store.report(7, 1, 0.5)
        store.stop(7, [0.5], cost=1.0)
        assert store.get(7).status == "stopped" and store.curves() == {7: [(1, 0.5)]}
        assert store.add_trials([[0.1, 0.1]], "sobol") == [8]  # ids go on after the kept ones
        store.report(8, 1, 0.25)
        store.pause(8, [0.25], cost=1.0)  # schema 5's status
        assert store.get(8).status == "paused"
    with open_store(target) as again:  # a second open changes nothing
        assert [t.status for t in again.trials()] == ["completed", "stopped", "paused"]


@pytest.mark.parametrize("version", [3, 4])
def test_an_old_sqlite_store_is_upgraded_in_place(tmp_path, version):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for statement in schema_3_statements("INTEGER PRIMARY KEY", "REAL", version):
        conn.execute(statement)
    conn.commit()
    conn.close()
    check_upgraded(str(path))


@pytest.mark.parametrize("version", [3, 4])
def test_an_old_postgres_store_is_upgraded_in_place(postgres_url, version):  # noqa: F811 - fixture
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in schema_3_statements(
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "DOUBLE PRECISION", version
        ):
            conn.execute(statement)
        conn.execute("SELECT setval(pg_get_serial_sequence('trials', 'id'), 7)")
    check_upgraded(postgres_url)


def test_a_paused_trial_keeps_its_curve_and_is_thawed_once(target):
    """Freeze-thaw's status (schema 5): a paused trial keeps its value and the steps it used,
    takes no values until thawed, and a thaw reserves its next steps atomically."""
    store = open_store(target)
    a, b = store.add_trials(torch.rand(2, 2, dtype=torch.double), "sobol", cost=[3.0, 3.0])
    for step in (1, 2, 3):
        store.report(a, step, -1.0 / step)
    store.pause(a, [-1.0 / 3], eval_time=0.5, cost=3.0, reason="paused at step 3")
    paused = store.get(a)
    assert (paused.status, paused.y, paused.cost, paused.error) == (
        "paused",
        [-1.0 / 3],
        3.0,
        "paused at step 3",
    )
    assert "paused" in BUDGETED and store.budget_used() == 2
    with pytest.raises(StoreError, match="paused; only a running"):
        store.report(a, 4, 0.0)
    with pytest.raises(StoreError, match="told only once"):
        store.complete(a, [0.0])
    with pytest.raises(StoreError, match="only a paused trial is thawed"):
        store.thaw(b, 6, cost=6.0)
    with pytest.raises(BudgetExhaustedError, match="cost budget of 8"):
        store.thaw(a, 6, cost=6.0, budget_cost=8.0)  # 3 (b) + 6 > 8
    assert store.get(a).status == "paused" and store.cost_used() == 6.0
    thawed = store.thaw(
        a, 6, cost=5.0, budget_cost=8.0, worker="w1", metadata={"thaw_reason": "mf-ei"}
    )
    assert (thawed.status, thawed.y, thawed.cost, thawed.worker) == ("pending", None, 5.0, "w1")
    assert thawed.metadata["until_step"] == 6 and thawed.metadata["thaws"] == 1
    assert thawed.metadata["thaw_reason"] == "mf-ei"
    with pytest.raises(StoreError, match="only a paused trial is thawed"):
        store.thaw(a, 9, cost=9.0)  # a second thaw of the same pause
    store.report(a, 4, -0.2)  # the curve goes on where it paused
    store.complete(a, [-0.2], cost=4.0)
    assert store.curves([a])[a][-1] == (4, -0.2) and store.cost_used() == 7.0
    store.close()
