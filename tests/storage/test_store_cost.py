"""The store's cost column: the schema 1 -> 4 upgrade, the cost ledger and the cost budget."""

import json
import sqlite3

import pytest
import torch

from dsbo.errors import BudgetExhaustedError, StoreError
from dsbo.storage import SCHEMA_VERSION, TrialStore

#: The trials table as schema 1 created it: no cost column.
SCHEMA_1 = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    id            INTEGER PRIMARY KEY,
    batch         INTEGER NOT NULL,
    generator     TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending','completed','failed','abandoned')),
    x             TEXT NOT NULL,
    y             TEXT,
    error         TEXT,
    created_at    REAL NOT NULL,
    completed_at  REAL,
    fit_time      REAL NOT NULL DEFAULT 0,
    acq_time      REAL NOT NULL DEFAULT 0,
    eval_time     REAL,
    metadata      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS trials_status ON trials (status);
"""


def schema_1_store(path):
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_1)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (json.dumps(1),))
    conn.execute(
        "INSERT INTO trials (batch, generator, status, x, y, created_at, completed_at, metadata) "
        "VALUES (0, 'sobol', 'completed', '[0.25, 0.5]', '[1.5]', 1.0, 2.0, '{\"seed\": 3}')"
    )
    conn.commit()
    conn.close()


def columns(path):
    conn = sqlite3.connect(path)
    try:
        return {row[1]: row for row in conn.execute("PRAGMA table_info(trials)")}
    finally:
        conn.close()


def test_a_schema_1_store_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    schema_1_store(path)
    assert "cost" not in columns(path)
    with TrialStore(path) as store:
        assert SCHEMA_VERSION == 5 and store.get_meta("schema_version") == 5
        [trial] = store.trials()
        assert trial.cost == 1.0 and trial.x == [0.25, 0.5] and trial.y == [1.5]
        assert trial.metadata == {"seed": 3} and trial.status == "completed"
        assert store.cost_used() == 1.0
    cost = columns(path)["cost"]
    assert cost[2] == "REAL" and cost[3] == 1 and float(cost[4]) == 1.0  # type, NOT NULL, default
    assert {"worker", "heartbeat_at"} <= set(columns(path)), "schema 3's lease columns"
    with TrialStore(path) as again:  # opening the upgraded store again changes nothing
        assert again.get_meta("schema_version") == 5 and again.trials()[0].cost == 1.0


def test_an_upgraded_store_records_costs_and_keeps_the_ledger(tmp_path):
    path = tmp_path / "old.sqlite"
    schema_1_store(path)
    with TrialStore(path) as store:
        ids = store.add_trials(
            torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.double), "vbo", cost=[2.0, 3.5]
        )
        assert [store.get(i).cost for i in ids] == [2.0, 3.5]
        assert store.cost_used() == 1.0 + 2.0 + 3.5
        store.fail(ids[0], "boom")  # a failed evaluation was paid for
        assert store.cost_used() == 6.5
        [late] = store.add_trials([[0.5, 0.5]], "vbo", cost=4.0)
        assert store.cost_used() == 10.5
        store.abandon_pending()  # ids[1] and late: abandoned, but they were paid for
        assert store.cost_used() == 10.5 and store.get(late).cost == 4.0  # issue 32, item 4


def test_a_single_cost_applies_to_every_point_and_bad_costs_are_refused(tmp_path):
    store = TrialStore(tmp_path / "t.sqlite")
    store.add_trials([[0.1], [0.2], [0.3]], "sobol", cost=0.5)
    store.add_trials([[0.4]], "sobol")  # the default: one unit
    assert [t.cost for t in store.trials()] == [0.5, 0.5, 0.5, 1.0] and store.cost_used() == 2.5
    for bad in ([1.0], [1.0, -1.0], -0.1):
        with pytest.raises(StoreError, match="costs >= 0"):
            store.add_trials([[0.1], [0.2]], "sobol", cost=bad)
    assert store.count() == 4


def test_the_cost_budget_is_checked_before_writing(tmp_path):
    store = TrialStore(tmp_path / "t.sqlite")
    ids = store.add_trials(
        [[0.1], [0.2]], "sobol", cost=[2.0, 3.0], budget_cost=5.0
    )  # exactly the budget
    store.complete(ids[0], [1.0])
    store.fail(ids[1], "boom")
    assert store.cost_used() == 5.0
    with pytest.raises(BudgetExhaustedError, match="cost budget of 5"):
        store.add_trials([[0.3]], "vbo", cost=0.5, budget_cost=5.0)
    with pytest.raises(BudgetExhaustedError, match="cost budget of 9"):
        store.add_trials(
            [[0.3], [0.4]], "vbo", cost=[1.0, 3.5], budget_cost=9.0
        )  # 4.5 > 4 left: none written
    assert store.count() == 2 and store.cost_used() == 5.0
    [free] = store.add_trials([[0.3]], "vbo", cost=0.0, budget_cost=5.0)  # a free trial still fits
    assert store.get(free).cost == 0.0 and store.count() == 3
    store.complete(free, [0.0])
    store.add_trials([[0.6], [0.7]], "vbo", cost=[1.0, 1.0], budget_cost=7.0)
    with pytest.raises(BudgetExhaustedError):
        store.add_trials([[0.8]], "vbo", cost=2.0, budget_cost=7.0)
    assert store.abandon_pending() == [4, 5]
    assert (
        store.cost_used() == 7.0
    )  # abandoned trials keep their cost in the ledger (issue 32, item 4)
    with pytest.raises(BudgetExhaustedError, match="cost budget of 7"):
        store.add_trials([[0.8]], "vbo", cost=2.0, budget_cost=7.0)
    store.add_trials([[0.8]], "vbo", cost=2.0, budget_cost=9.0)
    assert store.cost_used() == 9.0 and store.count() == 6


def test_a_cost_settled_with_the_outcome_replaces_the_reservation(tmp_path):
    """Measured costs (issue 32, item 1): reserved at proposal, settled by complete/fail."""
    store = TrialStore(tmp_path / "t.sqlite")
    a, b, c = store.add_trials([[0.1], [0.2], [0.3]], "sobol", cost=[0.5, 0.5, 0.5])
    store.complete(a, [1.0], eval_time=0.25, cost=0.25)
    store.fail(b, "boom", eval_time=2.0, cost=2.0)
    store.complete(c, [0.0])  # no cost given: the reservation stands
    assert [t.cost for t in store.trials()] == [0.25, 2.0, 0.5] and store.cost_used() == 2.75
    [d] = store.add_trials([[0.4]], "sobol", cost=0.0)
    with pytest.raises(StoreError, match="settled cost must be a finite number >= 0"):
        store.complete(d, [1.0], cost=float("nan"))
    assert store.get(d).status == "pending"


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    with TrialStore(path) as store:
        store.set_meta("schema_version", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match=f"schema {SCHEMA_VERSION + 1}"):
        TrialStore(path)
