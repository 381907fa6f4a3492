"""The SQLite trial store: durability, statuses, schema checks."""

import os
import socket
import sqlite3
import subprocess
import sys

import pytest
import torch

from dsbo.errors import BudgetExhaustedError, StoreError, StoreLockedError
from dsbo.storage import TrialStore


def test_roundtrip_and_statuses(tmp_path):
    path = tmp_path / "t.sqlite"
    store = TrialStore(path)
    ids = store.add_trials(
        torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.double),
        "sobol",
        fit_time=1.5,
        acq_time=2.0,
    )
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
    # an abandoned trial reported late by an external black box is accepted while the
    # budget has room, and then counts against it ...
    store.complete(ids[1], [3.0], budget=2)
    assert store.get(ids[1]).status == "completed"
    # ... and refused, untouched, once the budget is spent (or none was given)
    for budget in (2, None):
        with pytest.raises(BudgetExhaustedError, match=f"trial {ids[2]} was abandoned"):
            store.fail(ids[2], "late", budget=budget)
    assert store.get(ids[2]).status == "abandoned"
    store.complete(ids[2], [1.0], budget=3)
    assert store.count(("completed",)) == 3


def test_add_trials_never_overspends_the_budget(tmp_path):
    store = TrialStore(tmp_path / "t.sqlite")
    store.add_trials([[0.1], [0.2]], "sobol", budget=3)
    with pytest.raises(BudgetExhaustedError, match="would exceed the budget of 3"):
        store.add_trials([[0.3], [0.4]], "sobol", budget=3)
    assert store.count() == 2, "the refused batch left nothing behind"
    store.abandon_pending()  # abandoned trials do not count
    assert len(store.add_trials([[0.3], [0.4], [0.5]], "sobol", budget=3)) == 3


def test_one_writer_per_store(tmp_path):
    path = tmp_path / "t.sqlite"
    first = TrialStore(path)
    with pytest.raises(StoreLockedError, match="this process"):
        TrialStore(path)
    watcher = TrialStore(path, lock=False)  # a reader does not take the lock
    assert watcher.count() == 0
    watcher.close()
    first.close()
    TrialStore(path).close()  # released on close
    first.close()  # idempotent


def test_a_second_process_fails_fast_naming_the_holder(tmp_path):
    path = tmp_path / "t.sqlite"
    holder = TrialStore(path)
    code = (
        "import sys, time\n"
        "from dsbo.storage import TrialStore\n"
        "from dsbo.errors import StoreLockedError\n"
        "start = time.perf_counter()\n"
        "try:\n"
        f"    TrialStore({str(path)!r})\n"
        "except StoreLockedError as exc:\n"
        "    print(f'{time.perf_counter() - start:.3f}', exc)\n"
        "    sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    holder.close()
    assert proc.returncode == 3, proc.stderr
    seconds, message = proc.stdout.split(" ", 1)
    assert float(seconds) < 1.0, "fails at once, no waiting"
    assert f"process {os.getpid()} on {socket.gethostname()}" in message


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
