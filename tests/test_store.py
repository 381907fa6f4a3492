"""The SQLite trial store: durability, statuses, schema checks."""

import sqlite3

import pytest
import torch

from dsbo.errors import StoreError
from dsbo.store import TrialStore


def test_roundtrip_and_statuses(tmp_path):
    path = tmp_path / "t.sqlite"
    store = TrialStore(path)
    ids = store.add_trials(torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.double), "sobol", fit_time=1.5, acq_time=2.0)
    store.complete(ids[0], [1.0, -2.0], eval_time=0.1)
    store.fail(ids[1], "ValueError: boom")
    store.close()

    again = TrialStore(path)  # a new connection sees every committed row
    first, second = again.trials()
    assert first.status == "completed" and first.y == [1.0, -2.0] and first.eval_time == 0.1
    assert second.status == "failed" and second.error == "ValueError: boom" and second.y is None
    # batch costs are stored once, on the first trial of the batch
    assert (first.fit_time, first.acq_time) == (1.5, 2.0)
    assert (second.fit_time, second.acq_time) == (0.0, 0.0)
    X, Y = again.completed_data()
    assert X.tolist() == [[0.1, 0.2]] and Y.tolist() == [[1.0, -2.0]]


def test_a_trial_is_told_once(tmp_path):
    store = TrialStore(tmp_path / "t.sqlite")
    [tid] = store.add_trials([[0.5]], "manual")
    store.complete(tid, [1.0])
    with pytest.raises(StoreError, match="already completed"):
        store.complete(tid, [2.0])
    with pytest.raises(StoreError, match="does not exist"):
        store.fail(999, "x")


def test_non_finite_outcomes_are_refused(tmp_path):
    store = TrialStore(tmp_path / "t.sqlite")
    [tid] = store.add_trials([[0.5]], "manual")
    with pytest.raises(ValueError):
        store.complete(tid, [float("nan")])
    assert store.get(tid).status == "pending"


def test_abandon_pending_and_counts(tmp_path):
    store = TrialStore(tmp_path / "t.sqlite")
    ids = store.add_trials([[0.1], [0.2], [0.3]], "sobol")
    store.complete(ids[0], [0.0])
    assert store.abandon_pending() == ids[1:]
    assert store.count("abandoned") == 2 and store.count(("completed", "pending")) == 1
    # an abandoned trial reported late by an external black box is still accepted
    store.complete(ids[1], [3.0])
    assert store.get(ids[1]).status == "completed"


def test_wal_mode_and_schema_version(tmp_path):
    path = tmp_path / "t.sqlite"
    TrialStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema 99"):
        TrialStore(path)


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable dsbo store"):
        TrialStore(path)


def test_unknown_status_is_an_error(tmp_path):
    with pytest.raises(StoreError, match="unknown trial status"):
        TrialStore(tmp_path / "t.sqlite").trials("done")
