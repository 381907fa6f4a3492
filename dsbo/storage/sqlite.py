"""The SQLite store: one file per run directory, the default backend.

:class:`TrialStore` holds a campaign's trials in a SQLite file (or ``":memory:"``) with the SQL
of :class:`~dsbo.storage.base.Store`. A file store takes an exclusive lock (``flock`` on
``<store>.lock``, which records the holder's pid, host and command) for as long as it is open,
so a second process on the same run directory fails at once with
:class:`~dsbo.errors.StoreLockedError` naming the holder; the lock dies with its process, so
there is never a stale lock. The database runs in WAL mode with ``synchronous=FULL``: a
committed trial survives a killed process and a power loss.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dsbo.errors import StoreError, StoreLockedError
from dsbo.storage.base import SCHEMA_VERSION, STATUSES, Store

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    id            INTEGER PRIMARY KEY,
    batch         INTEGER NOT NULL,
    generator     TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ({statuses})),
    x             TEXT NOT NULL,
    y             TEXT,
    error         TEXT,
    created_at    REAL NOT NULL,
    completed_at  REAL,
    fit_time      REAL NOT NULL DEFAULT 0,
    acq_time      REAL NOT NULL DEFAULT 0,
    eval_time     REAL,
    metadata      TEXT NOT NULL DEFAULT '{}',
    cost          REAL NOT NULL DEFAULT 1.0,
    worker        TEXT,
    heartbeat_at  REAL
);
CREATE INDEX IF NOT EXISTS trials_status ON trials (status);
CREATE TABLE IF NOT EXISTS intermediate_values (
    trial_id      INTEGER NOT NULL,
    step          INTEGER NOT NULL,
    value         REAL NOT NULL,
    reported_at   REAL NOT NULL,
    PRIMARY KEY (trial_id, step)
);
""".replace("{statuses}", ",".join(f"'{s}'" for s in STATUSES))
#: The columns of the trials table, in order (a schema-3 store's table is rebuilt with them).
_COLUMNS = (
    "id, batch, generator, status, x, y, error, created_at, completed_at, fit_time, acq_time, "
    "eval_time, metadata, cost, worker, heartbeat_at"
)


class TrialStore(Store):
    """SQLite-backed record of a campaign's trials (the default backend).

    Args:
        path: The database file (created if missing), or ``":memory:"`` for a throwaway store.
        lock: Take the store's writer lock (file stores only). ``False`` is for readers that
            watch a campaign another process runs; they must not write.

    Example:
        >>> store = TrialStore("runs/demo/trials.sqlite")
        >>> [tid] = store.add_trials([[0.1, 0.2]], generator="sobol")
        >>> store.complete(tid, [1.5], eval_time=0.01)
    """

    #: Seconds since the epoch on SQLite's clock.
    _now = "((julianday('now') - 2440587.5) * 86400.0)"

    def __init__(self, path: str | Path, lock: bool = True) -> None:
        super().__init__()
        self.path = str(path)
        self._lock_file = None
        self._guard = threading.RLock()
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
            # one connection shared by the threads of this process (a thread executor's trials
            # report their curves from their own threads); _guard serializes its use
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=30.0, check_same_thread=False
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SQLITE_SCHEMA)
            version = self.get_meta("schema_version")
            if version is not None and int(version) in (1, 2, 3, 4):  # upgrade in place
                self._upgrade()
                version = SCHEMA_VERSION
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

    def _upgrade(self) -> None:
        """Bring a schema 1-4 store to :data:`SCHEMA_VERSION` in one transaction: the columns
        schemas 2 and 3 added, then the trials table rebuilt with the statuses ``stopped`` and
        ``paused`` in its check (SQLite cannot alter a check; the rows and their ids are copied
        as they are).
        The ``intermediate_values`` table was created with the schema."""
        columns = {r["name"] for r in self._conn.execute("PRAGMA table_info(trials)")}
        with self._transaction() as execute:
            for name, ddl in (
                ("cost", "REAL NOT NULL DEFAULT 1.0"),
                ("worker", "TEXT"),
                ("heartbeat_at", "REAL"),
            ):
                if name not in columns:
                    execute(f"ALTER TABLE trials ADD COLUMN {name} {ddl}")
            [table] = execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'trials'"
            )
            if "'paused'" not in table["sql"]:
                create = _SQLITE_SCHEMA.split("CREATE TABLE IF NOT EXISTS trials (", 1)[1].split(
                    ");", 1
                )[0]
                execute(f"CREATE TABLE trials_upgraded ({create})")
                execute(f"INSERT INTO trials_upgraded ({_COLUMNS}) SELECT {_COLUMNS} FROM trials")
                execute("DROP TABLE trials")
                execute("ALTER TABLE trials_upgraded RENAME TO trials")
                execute("CREATE INDEX IF NOT EXISTS trials_status ON trials (status)")
            execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._guard:
            return self._conn.execute(self._sql(sql), tuple(params)).fetchall()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Callable[..., list[Any]]]:
        with self._guard:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield lambda sql, params=(): self._conn.execute(
                    self._sql(sql), tuple(params)
                ).fetchall()
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def proposal_lock(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to take: the writer lock makes this process the store's only proposer."""
        return contextlib.nullcontext()

    def close(self) -> None:
        """Close the database and release the writer lock (idempotent)."""
        self._conn.close()
        self._release_lock()

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()  # closing the descriptor releases the flock
            self._lock_file = None


#: The SQLite backend under its backend name.
SQLiteStore = TrialStore


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
            "store at a time: wait for it to finish, stop it, or use another run directory "
            "(several workers share a campaign through a PostgreSQL store)"
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
