"""The durable trial store: one SQLite database per run directory.

Every trial is a row, written (and committed) when it is proposed (``pending``) and again when
its evaluation ends (``completed`` or ``failed``), so a crash at any moment loses at most the
evaluation that was running. The database runs in WAL mode with ``synchronous=FULL``: a
committed trial survives a killed process and a power loss.

Trial statuses:

* ``pending``   proposed, not (yet) evaluated. After a crash, pending trials are re-evaluated
  on resume (``on_pending="retry"``, the default for Python evaluators) or marked
  ``abandoned`` (``on_pending="abandon"``, for black boxes outside Python that may still
  report them through ``tell``).
* ``completed`` evaluated, outcomes stored; used for fitting.
* ``failed``    the evaluation raised or returned NaN/inf; the error is stored; never fitted.
* ``abandoned`` left pending by a crash and given up; neither fitted nor counted in the budget.
  A late result for it is still recorded while the budget has room (it then counts), and
  refused with :class:`~dsbo.errors.BudgetExhaustedError` once the budget is spent.

One writer at a time: a file store takes an exclusive lock (``flock`` on ``<store>.lock``,
which also records the holder's pid, host and command) for as long as it is open, so a second
process on the same run directory fails at once with :class:`~dsbo.errors.StoreLockedError`
naming the holder. The lock dies with its process (even ``kill -9``): there is never a stale
lock to clean up. Readers that only watch a running campaign open the store with
``lock=False``. Independently of the lock, :meth:`TrialStore.add_trials` checks the budget
inside its write transaction, so the budget can never be overspent.

Each trial records the ``cost`` paid for it (``lambda_x`` plus the costs of the contexts it
optimized; 1 per evaluation when nothing says otherwise), written with the proposal, so the
cost ledger (:meth:`TrialStore.cost_used`, the sum over trials that count against the budget)
is exact after any crash. Schema 2 added the column; a schema-1 store is upgraded in place
(its trials cost 1 each).
"""

from __future__ import annotations

import fcntl
import functools
import json
import math
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from dsbo.errors import BudgetExhaustedError, StoreError, StoreLockedError

SCHEMA_VERSION = 2
STATUSES = ("pending", "completed", "failed", "abandoned")
#: Statuses that count against a campaign's budget.
BUDGETED = ("pending", "completed", "failed")

_SCHEMA = """
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
    metadata      TEXT NOT NULL DEFAULT '{}',
    cost          REAL NOT NULL DEFAULT 1.0
);
CREATE INDEX IF NOT EXISTS trials_status ON trials (status);
"""


@dataclass
class Trial:
    """One row of the store. ``x`` and ``y`` are plain lists of floats."""

    id: int
    batch: int
    generator: str
    status: str
    x: list[float]
    y: list[float] | None = None
    error: str | None = None
    created_at: float = 0.0
    completed_at: float | None = None
    fit_time: float = 0.0
    acq_time: float = 0.0
    eval_time: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    cost: float = 1.0


def _row_to_trial(row: sqlite3.Row) -> Trial:
    return Trial(
        id=row["id"],
        batch=row["batch"],
        generator=row["generator"],
        status=row["status"],
        x=json.loads(row["x"]),
        y=None if row["y"] is None else json.loads(row["y"]),
        error=row["error"],
        created_at=row["created_at"],
        completed_at=row["completed_at"],
        fit_time=row["fit_time"],
        acq_time=row["acq_time"],
        eval_time=row["eval_time"],
        metadata=json.loads(row["metadata"]),
        cost=row["cost"],
    )


def _finite_json(values: Iterable[float]) -> str:
    # json.dumps writes NaN/Infinity, which is not JSON; completed outcomes are finite anyway.
    return json.dumps([float(v) for v in values], allow_nan=False)


def _timed(method: Callable) -> Callable:
    """Add the wall time of an outermost store call to ``store.busy_seconds``."""

    @functools.wraps(method)
    def wrapper(self: TrialStore, *args: Any, **kwargs: Any) -> Any:
        if self._depth:
            return method(self, *args, **kwargs)
        self._depth += 1
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.busy_seconds += time.perf_counter() - start
            self._depth -= 1

    return wrapper


class TrialStore:
    """SQLite-backed record of a campaign's trials.

    ``busy_seconds`` accumulates the wall time spent in the store's public methods, so a
    benchmark can show what durability costs per iteration.

    Args:
        path: The database file (created if missing), or ``":memory:"`` for a throwaway store.
        lock: Take the store's writer lock (file stores only). ``False`` is for readers that
            watch a campaign another process runs; they must not write.

    Example:
        >>> store = TrialStore("runs/demo/trials.sqlite")
        >>> [tid] = store.add_trials([[0.1, 0.2]], generator="sobol")
        >>> store.complete(tid, [1.5], eval_time=0.01)
    """

    def __init__(self, path: str | Path, lock: bool = True) -> None:
        self.path = str(path)
        self.busy_seconds = 0.0
        self._depth = 0
        self._lock_file = None
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the run directory of {self.path}: {exc}") from None
            if Path(self.path).is_dir():
                raise StoreError(f"{self.path} is a directory, not a dsbo store")
            if lock:
                self._lock_file = _acquire_lock(Path(self.path + ".lock"))
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)
            version = self.get_meta("schema_version")
            if version is not None and int(version) == 1:  # schema 1 -> 2: the cost column
                columns = {r["name"] for r in self._conn.execute("PRAGMA table_info(trials)")}
                if "cost" not in columns:
                    self._conn.execute(
                        "ALTER TABLE trials ADD COLUMN cost REAL NOT NULL DEFAULT 1.0"
                    )
                self.set_meta("schema_version", version := SCHEMA_VERSION)
        except sqlite3.DatabaseError as exc:
            self._release_lock()
            raise StoreError(f"{self.path} is not a usable dsbo store: {exc}") from None
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif int(version) != SCHEMA_VERSION:
            self.close()
            raise StoreError(
                f"{self.path} has store schema {version}, this dsbo reads schema {SCHEMA_VERSION}"
            )

    # ------------------------------------------------------------------ meta
    @_timed
    def get_meta(self, key: str) -> Any:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row["value"])

    @_timed
    def set_meta(self, key: str, value: Any) -> None:
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    # ------------------------------------------------------------------ writes
    @_timed
    def add_trials(
        self,
        X: Tensor | Sequence[Sequence[float]],
        generator: str,
        *,
        fit_time: float = 0.0,
        acq_time: float = 0.0,
        metadata: Sequence[dict[str, Any]] | dict[str, Any] | None = None,
        status: str = "pending",
        budget: int | None = None,
        cost: float | Sequence[float] = 1.0,
        budget_cost: float | None = None,
    ) -> list[int]:
        """Insert a batch of proposed points as one transaction; returns their trial ids.

        ``fit_time`` and ``acq_time`` are the costs of proposing the whole batch; they are
        stored on its first trial only, so that sums over trials give the true totals.
        ``cost`` is the cost paid for each trial (one number, or one per point).

        Raises:
            BudgetExhaustedError: if ``budget`` is given and the batch would take the trials
                that count against it (pending, completed, failed) beyond it, or if
                ``budget_cost`` is given and their summed cost would pass it; checked inside
                the write transaction, so concurrent writers cannot overspend it either.
        """
        rows = X.tolist() if isinstance(X, Tensor) else [list(map(float, x)) for x in X]
        if isinstance(metadata, dict) or metadata is None:
            metadata = [dict(metadata or {}) for _ in rows]
        if len(metadata) != len(rows):
            raise StoreError(f"{len(rows)} points but {len(metadata)} metadata entries")
        costs = (
            [float(cost)] * len(rows) if isinstance(cost, int | float) else [float(c) for c in cost]
        )
        if len(costs) != len(rows) or not all(0 <= c < math.inf for c in costs):
            raise StoreError(f"{len(rows)} points need as many finite costs >= 0, got {cost!r}")
        now = time.time()
        with self._transaction() as cur:
            if budget is not None:
                used = self._count_in(cur, BUDGETED)
                if used + len(rows) > budget:
                    raise BudgetExhaustedError(
                        f"{len(rows)} new trial(s) would exceed the budget of {budget} "
                        f"({used} trial(s) already count against it)"
                    )
            if budget_cost is not None:
                spent = self._cost_in(cur)
                if spent + sum(costs) > budget_cost + 1e-9:
                    raise BudgetExhaustedError(
                        f"{len(rows)} new trial(s) costing {sum(costs):g} would exceed the cost budget of "
                        f"{budget_cost:g} ({spent:g} already spent)"
                    )
            batch = cur.execute("SELECT COALESCE(MAX(batch), -1) + 1 FROM trials").fetchone()[0]
            ids = []
            for i, (x, meta) in enumerate(zip(rows, metadata, strict=True)):
                cur.execute(
                    "INSERT INTO trials (batch, generator, status, x, created_at, fit_time, "
                    "acq_time, metadata, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        batch,
                        generator,
                        status,
                        _finite_json(x),
                        now,
                        fit_time if i == 0 else 0.0,
                        acq_time if i == 0 else 0.0,
                        json.dumps(meta),
                        costs[i],
                    ),
                )
                ids.append(cur.lastrowid)
        return ids

    @_timed
    def complete(
        self,
        trial_id: int,
        y: Sequence[float],
        eval_time: float | None = None,
        budget: int | None = None,
    ) -> None:
        """Record the outcomes of a pending trial (commits immediately).

        An abandoned trial is accepted only with a ``budget`` that has room for it.
        """
        self._finish(trial_id, "completed", _finite_json(y), None, eval_time, budget)

    @_timed
    def fail(
        self,
        trial_id: int,
        error: str,
        eval_time: float | None = None,
        budget: int | None = None,
    ) -> None:
        """Record a failed evaluation with its error message (commits immediately)."""
        self._finish(trial_id, "failed", None, str(error), eval_time, budget)

    @_timed
    def abandon_pending(self) -> list[int]:
        """Mark every pending trial ``abandoned``; returns their ids."""
        ids = [t.id for t in self.trials(status="pending")]
        with self._transaction() as cur:
            cur.executemany(
                "UPDATE trials SET status = 'abandoned', completed_at = ? WHERE id = ?",
                [(time.time(), i) for i in ids],
            )
        return ids

    @_timed
    def update_metadata(self, trial_id: int, **items: Any) -> None:
        trial = self.get(trial_id)
        trial.metadata.update(items)
        self._conn.execute(
            "UPDATE trials SET metadata = ? WHERE id = ?", (json.dumps(trial.metadata), trial_id)
        )

    def _finish(
        self,
        trial_id: int,
        status: str,
        y: str | None,
        error: str | None,
        eval_time: float | None,
        budget: int | None,
    ) -> None:
        with self._transaction() as cur:
            row = cur.execute("SELECT status FROM trials WHERE id = ?", (trial_id,)).fetchone()
            if row is None:
                raise StoreError(f"trial {trial_id} does not exist")
            if row["status"] not in ("pending", "abandoned"):
                raise StoreError(
                    f"trial {trial_id} is already {row['status']}; a trial is told only once"
                )
            if row["status"] == "abandoned":
                used = self._count_in(cur, BUDGETED)
                if budget is None or used >= budget:
                    raise BudgetExhaustedError(
                        f"trial {trial_id} was abandoned and the budget"
                        + ("" if budget is None else f" of {budget}")
                        + f" is used up ({used} trial(s) count against it): its late result "
                        "is not recorded. Raise the budget to record it."
                    )
            cur.execute(
                "UPDATE trials SET status = ?, y = ?, error = ?, eval_time = ?, completed_at = ? "
                "WHERE id = ?",
                (status, y, error, eval_time, time.time(), trial_id),
            )

    # ------------------------------------------------------------------ reads
    @_timed
    def get(self, trial_id: int) -> Trial:
        row = self._conn.execute("SELECT * FROM trials WHERE id = ?", (trial_id,)).fetchone()
        if row is None:
            raise StoreError(f"trial {trial_id} does not exist")
        return _row_to_trial(row)

    @_timed
    def trials(self, status: str | Sequence[str] | None = None) -> list[Trial]:
        """All trials in id order, optionally only those with the given status(es)."""
        if status is None:
            rows = self._conn.execute("SELECT * FROM trials ORDER BY id").fetchall()
        else:
            statuses = [status] if isinstance(status, str) else list(status)
            unknown = set(statuses) - set(STATUSES)
            if unknown:
                raise StoreError(f"unknown trial status {sorted(unknown)}; use one of {STATUSES}")
            marks = ",".join("?" * len(statuses))
            rows = self._conn.execute(
                f"SELECT * FROM trials WHERE status IN ({marks}) ORDER BY id", statuses
            ).fetchall()
        return [_row_to_trial(r) for r in rows]

    @_timed
    def count(self, status: str | Sequence[str] | None = None) -> int:
        if status is None:
            return self._conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        return self._count_in(self._conn, [status] if isinstance(status, str) else status)

    @staticmethod
    def _count_in(cursor: sqlite3.Connection | sqlite3.Cursor, statuses: Sequence[str]) -> int:
        marks = ",".join("?" * len(statuses))
        return cursor.execute(
            f"SELECT COUNT(*) FROM trials WHERE status IN ({marks})", list(statuses)
        ).fetchone()[0]

    @_timed
    def cost_used(self) -> float:
        """The cost ledger: summed cost of the trials that count against the budget."""
        return self._cost_in(self._conn)

    @staticmethod
    def _cost_in(cursor: sqlite3.Connection | sqlite3.Cursor) -> float:
        marks = ",".join("?" * len(BUDGETED))
        return float(
            cursor.execute(
                f"SELECT COALESCE(SUM(cost), 0) FROM trials WHERE status IN ({marks})",
                list(BUDGETED),
            ).fetchone()[0]
        )

    @_timed
    def completed_data(self) -> tuple[Tensor, Tensor]:
        """``(X, Y)`` of the completed trials as float64 tensors (``n x d``, ``n x m``)."""
        rows = self._conn.execute(
            "SELECT x, y FROM trials WHERE status = 'completed' ORDER BY id"
        ).fetchall()
        if not rows:
            return torch.empty(0, 0, dtype=torch.double), torch.empty(0, 0, dtype=torch.double)
        X = torch.tensor([json.loads(r["x"]) for r in rows], dtype=torch.double)
        Y = torch.tensor([json.loads(r["y"]) for r in rows], dtype=torch.double)
        return X, Y

    def close(self) -> None:
        """Close the database and release the writer lock (idempotent)."""
        self._conn.close()
        self._release_lock()

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor releases the flock
            self._lock_file = None

    def __enter__(self) -> TrialStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    class _Tx:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def __enter__(self) -> sqlite3.Cursor:
            self.conn.execute("BEGIN IMMEDIATE")
            self.cur = self.conn.cursor()
            return self.cur

        def __exit__(self, exc_type: object, *rest: object) -> None:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")

    def _transaction(self) -> TrialStore._Tx:
        return TrialStore._Tx(self._conn)


def _acquire_lock(path: Path) -> Any:
    """Take the exclusive writer lock ``path`` without waiting; record who holds it.

    Raises:
        StoreLockedError: naming the process (pid, host, command) that holds the lock.
    """
    try:
        handle = path.open("a+")
    except OSError as exc:
        raise StoreError(f"cannot create the lock file {path}: {exc}") from None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        try:
            holder = json.loads(handle.read() or "{}")
        except json.JSONDecodeError:
            holder = {}
        handle.close()
        if holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
            who = "this process (another TrialStore on it is still open: close it first)"
        else:
            who = (
                f"process {holder.get('pid', '?')} on {holder.get('host', '?')} "
                f"({holder.get('command', '?')}, since {holder.get('since', '?')})"
            )
        raise StoreLockedError(
            f"the store {str(path)[: -len('.lock')]} is in use by {who}; one campaign writes a "
            "store at a time: wait for it to finish, stop it, or use another run directory"
        ) from None
    handle.seek(0)
    handle.truncate()
    json.dump(
        {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(sys.argv)[:200] or sys.executable,
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
        handle,
    )
    handle.flush()
    return handle
