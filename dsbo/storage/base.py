"""The durable trial store: one interface, a SQLite file (default) or a PostgreSQL database.

Every trial is a row, written (and committed) when it is proposed (``pending``) and again when
its evaluation ends (``completed`` or ``failed``), so a crash at any moment loses at most the
evaluations that were running. :class:`Store` holds the SQL both backends share;
:class:`~dsbo.storage.sqlite.TrialStore` is the SQLite backend (one file per run directory),
and :class:`~dsbo.storage.postgres.PostgresStore` the PostgreSQL one, which several worker
processes on several machines share. :func:`~dsbo.storage.open_store` picks the backend from
the target: a ``postgresql://`` URL or a file path.

Trial statuses:

* ``pending``   proposed, not (yet) evaluated. After a crash, pending trials are re-evaluated
  on resume (``on_pending="retry"``, the default for Python evaluators) or marked
  ``abandoned`` (``on_pending="abandon"``, for black boxes outside Python that may still
  report them through ``tell``).
* ``completed`` evaluated, outcomes stored; used for fitting.
* ``failed``    the evaluation raised or returned NaN/inf; the error is stored; never fitted.
* ``stopped``   ended early by a stopping rule (:mod:`dsbo.stopping`) after reporting
  intermediate values; its ``y`` is its last reported value (single objective without outcome
  constraints; ``None`` otherwise). Not fitted as a finished trial; counts against the budget.
* ``paused``    frozen by a freeze-thaw schedule (:mod:`dsbo.campaign.freeze_thaw`) after
  reporting up to the step it was given: its ``y`` is its last reported value, its ``cost``
  the steps it used. :meth:`Store.thaw` makes it ``pending`` again (the same trial, its curve
  kept) to train further; it counts against the budget once, whatever the thaws.
* ``abandoned`` left pending by a crash and given up; neither fitted nor counted in the trial
  budget, but its cost stays in the cost ledger (it was paid for: a black box may have run
  it). A late result for it is still recorded while the budget has room (it then counts), and
  refused with :class:`~dsbo.errors.BudgetExhaustedError` once the budget is spent.

Guarantees (both backends, checked by one parametrized test-suite):

* :meth:`Store.add_trials` checks the budget inside its write transaction, and write
  transactions are serialized (SQLite ``BEGIN IMMEDIATE``; PostgreSQL a transaction-level
  advisory lock), so no number of writers can overspend the budget, and trial ids (the
  database's own key) never collide.
* :meth:`Store.proposal_lock` serializes proposing (reading the data and the pending trials,
  fitting, optimizing the acquisition, committing the new pending trials), so two workers
  never propose without seeing each other's pending points.
* Leases: each pending trial records the ``worker`` that evaluates it and a ``heartbeat_at``
  time (the database's clock), which that worker refreshes (:meth:`Store.heartbeat`) while it
  evaluates. A trial whose heartbeat is older than the lease was left by a dead worker; another
  worker takes it over with :meth:`Store.claim_expired` (or abandons it).

SQLite: one writer at a time. A file store takes an exclusive lock (``flock`` on
``<store>.lock``, which also records the holder's pid, host and command) for as long as it is
open, so a second process on the same run directory fails at once with
:class:`~dsbo.errors.StoreLockedError` naming the holder. The lock dies with its process (even
``kill -9``): there is never a stale lock to clean up. Readers that only watch a running
campaign open the store with ``lock=False``. The database runs in WAL mode with
``synchronous=FULL``: a committed trial survives a killed process and a power loss. Parallel
trials on a SQLite store run in the one process that holds the lock (an executor evaluates
them); campaigns shared by several processes use PostgreSQL.

Each trial records the ``cost`` paid for it (``lambda_x`` plus the costs of the contexts it
optimized; 1 per evaluation when nothing says otherwise), written with the proposal, so the
cost ledger (:meth:`Store.cost_used`, the sum over every trial, abandoned ones included: what
was proposed was paid for) is exact after any crash. A cost known only once the evaluation
ends (measured seconds) is reserved with the proposal and settled by :meth:`Store.complete` /
:meth:`Store.fail` (``cost=``) in the same write as the outcome.

**Intermediate values** (learning curves, issue 42): :meth:`Store.report` appends a pending
trial's ``(step, value)`` pair to the table ``intermediate_values`` (one row per trial and
step, committed at once, so a killed worker loses no reported value); steps are integers that
increase within a trial; values are finite and in the store's sense (maximized, as ``y``).
:meth:`Store.curves` reads them back, :meth:`Store.stop` ends a trial as ``stopped``.

Schema 2 added the ``cost`` column, schema 3 the lease columns ``worker`` and
``heartbeat_at``, schema 4 the status ``stopped`` and the table ``intermediate_values``,
schema 5 the status ``paused``; an older store is upgraded in place when it is opened (its
trials cost 1 each).
"""

from __future__ import annotations

import abc
import contextlib
import json
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import Tensor


from dsbo.errors import BudgetExhaustedError, StoreError
from dsbo.storage.curves import CurveMethods
from dsbo.storage.segments import SegmentMethods, check_segment
from dsbo.storage.timed import timed as _timed

SCHEMA_VERSION = 5
STATUSES = ("pending", "completed", "failed", "stopped", "paused", "abandoned")
#: Statuses that count against a campaign's trial budget.
BUDGETED = ("pending", "completed", "failed", "stopped", "paused")
#: The generator of trials brought in from elsewhere (another tool's study, a CSV): prior data
#: that the surrogate is fitted on but that never counts against a budget and costs nothing.
IMPORTED = "imported"
#: Statuses whose cost stays in the cost ledger: all of them. An abandoned trial frees its
#: slot in the trial budget (it may never have run) but keeps its cost: it was committed when
#: it was proposed, and a black box may have evaluated it (issue 32, item 4).
COSTED = STATUSES
#: URL schemes :func:`open_store` hands to the PostgreSQL backend.

#: The SQLite schema. ``heartbeat_at`` is seconds since the epoch on the database's clock.


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
    worker: str | None = None
    heartbeat_at: float | None = None


def _row_to_trial(row: Any) -> Trial:
    return Trial(
        id=int(row["id"]),
        batch=int(row["batch"]),
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
        worker=row["worker"],
        heartbeat_at=row["heartbeat_at"],
    )


def _finite_json(values: Iterable[float]) -> str:
    # json.dumps writes NaN/Infinity, which is not JSON; completed outcomes are finite anyway.
    return json.dumps([float(v) for v in values], allow_nan=False)


def new_worker_id() -> str:
    """A worker name unique across machines: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Store(CurveMethods, SegmentMethods, abc.ABC):
    """The trial store's interface, with the SQL both backends share.

    A backend sets ``_placeholder`` (the driver's parameter mark) and ``_now`` (an SQL
    expression for the database's clock, in seconds since the epoch) and implements
    :meth:`_read` (one statement outside a transaction), :meth:`_transaction` (a serialized
    write transaction yielding an ``execute(sql, params)`` function), :meth:`proposal_lock`
    and :meth:`close`. SQL is written with ``?`` marks and ``{now}``.

    ``busy_seconds`` and ``operations`` accumulate the wall time spent in, and the number of,
    public store calls, so a benchmark can show what durability costs per iteration.
    ``shared`` is true for a backend several processes write at once (then pending trials may
    belong to live workers elsewhere, and only expired leases are taken over).
    """

    shared = False
    _placeholder = "?"
    _now = "0"

    def __init__(self) -> None:
        self.path = ""
        self.busy_seconds = 0.0
        self.operations = 0
        self._depth = 0

    # ------------------------------------------------------------------ backend hooks
    @abc.abstractmethod
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run one statement outside a transaction; its rows (mappings by column name)."""

    @abc.abstractmethod
    def _transaction(self) -> contextlib.AbstractContextManager[Callable[..., list[Any]]]:
        """A write transaction, serialized against every other writer of the store; yields
        ``execute(sql, params) -> rows``. Commits on exit, rolls back on an exception."""

    @abc.abstractmethod
    def proposal_lock(self) -> contextlib.AbstractContextManager[None]:
        """Hold the campaign's proposal lock (see the module docstring)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close the connection (idempotent)."""

    def _sql(self, text: str) -> str:
        return text.replace("{now}", self._now).replace("?", self._placeholder)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ meta
    @_timed
    def get_meta(self, key: str) -> Any:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return None if not rows else json.loads(rows[0]["value"])

    @_timed
    def set_meta(self, key: str, value: Any) -> None:
        with self._transaction() as execute:
            execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value)),
            )

    @_timed
    def setdefault_meta(self, key: str, value: Any) -> Any:
        """Store ``value`` under ``key`` unless the key exists; return the stored value
        (atomic: of several workers starting at once, the first one's value wins)."""
        with self._transaction() as execute:
            rows = execute("SELECT value FROM meta WHERE key = ?", (key,))
            if rows:
                return json.loads(rows[0]["value"])
            execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value)))
            return value

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
        worker: str | None = None,
    ) -> list[int]:
        """Insert a batch of proposed points as one transaction; returns their trial ids.

        ``fit_time`` and ``acq_time`` are the costs of proposing the whole batch; they are
        stored on its first trial only, so that sums over trials give the true totals.
        ``cost`` is the cost paid for each trial (one number, or one per point). ``worker``
        names the worker that will evaluate them (its lease starts now).

        Raises:
            BudgetExhaustedError: if ``budget`` is given and the batch would take the trials
                that count against it (pending, completed, failed) beyond it, or if
                ``budget_cost`` is given and their summed cost would pass it; checked inside
                the write transaction, so concurrent writers cannot overspend it either.
        """
        rows = X.tolist() if hasattr(X, "tolist") else [list(map(float, x)) for x in X]
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
        with self._transaction() as execute:
            if budget is not None and generator != IMPORTED:
                used = self._budget_used(execute)
                if used + len(rows) > budget:
                    raise BudgetExhaustedError(
                        f"{len(rows)} new trial(s) would exceed the budget of {budget} "
                        f"({used} trial(s) already count against it)"
                    )
            if budget_cost is not None:
                spent = self._cost(execute)
                if spent + sum(costs) > budget_cost + 1e-9:
                    raise BudgetExhaustedError(
                        f"{len(rows)} new trial(s) costing {sum(costs):g} would exceed the cost budget of "
                        f"{budget_cost:g} ({spent:g} already spent)"
                    )
            batch = execute("SELECT COALESCE(MAX(batch), -1) + 1 AS b FROM trials")[0]["b"]
            ids = []
            for i, (x, meta) in enumerate(zip(rows, metadata, strict=True)):
                [row] = execute(
                    "INSERT INTO trials (batch, generator, status, x, created_at, fit_time, "
                    "acq_time, metadata, cost, worker, heartbeat_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {now}) RETURNING id",
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
                        worker,
                    ),
                )
                ids.append(int(row["id"]))
        return ids

    @_timed
    def complete(
        self,
        trial_id: int,
        y: Sequence[float],
        eval_time: float | None = None,
        budget: int | None = None,
        cost: float | None = None,
        segment: int | None = None,
    ) -> None:
        """Record the outcomes of a pending trial (commits immediately).

        An abandoned trial is accepted only with a ``budget`` that has room for it. ``cost``
        settles the trial's cost (replacing what its proposal reserved), for costs known only
        once the evaluation ended; ``None`` keeps the cost written with the proposal.
        ``segment``: the freeze-thaw segment the evaluation ran (the trial's ``thaws`` when it
        was handed out); checked in the write transaction, a
        :class:`~dsbo.errors.StaleSegmentError` if the trial has been thawed since.
        """
        self._finish(
            trial_id, "completed", _finite_json(y), None, eval_time, budget, cost, segment=segment
        )

    @_timed
    def fail(
        self,
        trial_id: int,
        error: str,
        eval_time: float | None = None,
        budget: int | None = None,
        cost: float | None = None,
        segment: int | None = None,
    ) -> None:
        """Record a failed evaluation with its error message (commits immediately); ``cost``
        and ``segment`` as for :meth:`complete`."""
        self._finish(trial_id, "failed", None, str(error), eval_time, budget, cost, segment=segment)

    @_timed
    def stop(
        self,
        trial_id: int,
        y: Sequence[float] | None,
        eval_time: float | None = None,
        budget: int | None = None,
        cost: float | None = None,
        reason: str | None = None,
        segment: int | None = None,
    ) -> None:
        """End a pending trial as ``stopped`` (early stopping; commits immediately): ``y`` its
        last reported value (or ``None``), ``reason`` the rule's sentence (kept in ``error``,
        which a stopped trial does not otherwise use); ``cost`` and ``segment`` as for
        :meth:`complete`."""
        values = None if y is None else _finite_json(y)
        self._finish(trial_id, "stopped", values, reason, eval_time, budget, cost, segment=segment)

    @_timed
    def abandon_pending(self, ids: Sequence[int] | None = None) -> list[int]:
        """Mark every pending trial (or the pending ones among ``ids``) ``abandoned``;
        returns their ids. Imported pending trials run elsewhere: they are left as they are."""
        with self._transaction() as execute:
            pending = [
                int(r["id"])
                for r in execute(
                    "SELECT id FROM trials WHERE status = 'pending' AND generator <> 'imported' ORDER BY id"
                )
            ]
            if ids is not None:
                pending = [i for i in pending if i in set(ids)]
            for i in pending:
                execute(
                    "UPDATE trials SET status = 'abandoned', completed_at = ? WHERE id = ?",
                    (time.time(), i),
                )
        return pending

    @_timed
    def update_metadata(self, trial_id: int, **items: Any) -> None:
        with self._transaction() as execute:
            rows = execute("SELECT metadata FROM trials WHERE id = ?", (trial_id,))
            if not rows:
                raise StoreError(f"trial {trial_id} does not exist")
            metadata = json.loads(rows[0]["metadata"])
            metadata.update(items)
            execute("UPDATE trials SET metadata = ? WHERE id = ?", (json.dumps(metadata), trial_id))

    def _finish(
        self,
        trial_id: int,
        status: str,
        y: str | None,
        error: str | None,
        eval_time: float | None,
        budget: int | None,
        cost: float | None = None,
        only_pending: bool = False,
        segment: int | None = None,
    ) -> None:
        if cost is not None and not 0 <= cost < math.inf:
            raise StoreError(
                f"trial {trial_id}: a settled cost must be a finite number >= 0, got {cost!r}"
            )
        with self._transaction() as execute:
            rows = execute("SELECT status, metadata FROM trials WHERE id = ?", (trial_id,))
            if not rows:
                raise StoreError(f"trial {trial_id} does not exist")
            check_segment(trial_id, rows[0]["metadata"], segment)
            current = rows[0]["status"]
            if current not in (("pending",) if only_pending else ("pending", "abandoned")):
                raise StoreError(
                    f"trial {trial_id} is already {current}; a trial is told only once"
                )
            if current == "abandoned":
                used = self._budget_used(execute)
                if budget is None or used >= budget:
                    raise BudgetExhaustedError(
                        f"trial {trial_id} was abandoned and the budget"
                        + ("" if budget is None else f" of {budget}")
                        + f" is used up ({used} trial(s) count against it): its late result "
                        "is not recorded. Raise the budget to record it."
                    )
            execute(
                "UPDATE trials SET status = ?, y = ?, error = ?, eval_time = ?, completed_at = ? "
                "WHERE id = ?",
                (status, y, error, eval_time, time.time(), trial_id),
            )
            if cost is not None:
                execute("UPDATE trials SET cost = ? WHERE id = ?", (float(cost), trial_id))

    # ------------------------------------------------------------------ leases
    @_timed
    def heartbeat(self, worker: str) -> int:
        """Renew the lease of every pending trial of ``worker``; returns how many."""
        with self._transaction() as execute:
            rows = execute(
                "UPDATE trials SET heartbeat_at = {now} WHERE status = 'pending' AND worker = ? "
                "RETURNING id",
                (worker,),
            )
        return len(rows)

    @_timed
    def expired(self, lease: float) -> list[Trial]:
        """Pending trials whose lease (last heartbeat + ``lease`` seconds) has run out (imported
        ones, which run elsewhere, never expire)."""
        rows = self._read(
            "SELECT * FROM trials WHERE status = 'pending' AND generator <> 'imported' AND "
            "COALESCE(heartbeat_at, 0) < {now} - ? ORDER BY id",
            (float(lease),),
        )
        return [_row_to_trial(r) for r in rows]

    @_timed
    def claim_expired(self, worker: str, lease: float, limit: int = 1) -> list[Trial]:
        """Take over up to ``limit`` pending trials whose lease ran out: they become
        ``worker``'s, with a fresh lease and ``lease_retries`` (metadata) counted up."""
        claimed = []
        with self._transaction() as execute:
            rows = execute(
                "SELECT id, metadata, worker FROM trials WHERE status = 'pending' AND generator <> 'imported' AND "
                "COALESCE(heartbeat_at, 0) < {now} - ? ORDER BY id LIMIT ?",
                (float(lease), int(limit)),
            )
            for row in rows:
                metadata = json.loads(row["metadata"])
                metadata["lease_retries"] = metadata.get("lease_retries", 0) + 1
                metadata.setdefault("lease_lost_by", []).append(row["worker"])
                execute(
                    "UPDATE trials SET worker = ?, heartbeat_at = {now}, metadata = ? WHERE id = ?",
                    (worker, json.dumps(metadata), row["id"]),
                )
                claimed.append(int(row["id"]))
        return [self.get(i) for i in claimed]

    # ------------------------------------------------------------------ reads
    @_timed
    def get(self, trial_id: int) -> Trial:
        rows = self._read("SELECT * FROM trials WHERE id = ?", (trial_id,))
        if not rows:
            raise StoreError(f"trial {trial_id} does not exist")
        return _row_to_trial(rows[0])

    @_timed
    def trials(self, status: str | Sequence[str] | None = None) -> list[Trial]:
        """All trials in id order, optionally only those with the given status(es)."""
        if status is None:
            rows = self._read("SELECT * FROM trials ORDER BY id")
        else:
            statuses = _statuses(status)
            marks = ",".join("?" * len(statuses))
            rows = self._read(
                f"SELECT * FROM trials WHERE status IN ({marks}) ORDER BY id", statuses
            )
        return [_row_to_trial(r) for r in rows]

    @_timed
    def count(self, status: str | Sequence[str] | None = None) -> int:
        if status is None:
            return int(self._read("SELECT COUNT(*) AS n FROM trials")[0]["n"])
        return self._count(self._read, _statuses(status))

    @staticmethod
    def _count(execute: Callable[..., list[Any]], statuses: Sequence[str]) -> int:
        marks = ",".join("?" * len(statuses))
        rows = execute(
            f"SELECT COUNT(*) AS n FROM trials WHERE status IN ({marks})", list(statuses)
        )
        return int(rows[0]["n"])

    @_timed
    def budget_used(self) -> int:
        """Trials that count against a trial budget: :data:`BUDGETED` statuses, imported trials
        (generator :data:`IMPORTED`) left out."""
        return self._budget_used(self._read)

    @staticmethod
    def _budget_used(execute: Callable[..., list[Any]]) -> int:
        marks = ",".join("?" * len(BUDGETED))
        rows = execute(
            f"SELECT COUNT(*) AS n FROM trials WHERE status IN ({marks}) AND generator <> ?",
            [*BUDGETED, IMPORTED],
        )
        return int(rows[0]["n"])

    @_timed
    def cost_used(self) -> float:
        """The cost ledger: summed cost of every trial (:data:`COSTED`: pending, completed,
        failed and abandoned; an abandoned trial was paid for)."""
        return self._cost(self._read)

    @staticmethod
    def _cost(execute: Callable[..., list[Any]]) -> float:
        marks = ",".join("?" * len(COSTED))
        rows = execute(
            f"SELECT COALESCE(SUM(cost), 0) AS c FROM trials WHERE status IN ({marks})",
            list(COSTED),
        )
        return float(rows[0]["c"])

    @_timed
    def completed_data(self) -> tuple[Tensor, Tensor]:
        """``(X, Y)`` of the completed trials as float64 tensors (``n x d``, ``n x m``)."""
        import torch  # here, not at the top: reading a store needs no torch

        rows = self._read("SELECT x, y FROM trials WHERE status = 'completed' ORDER BY id")
        if not rows:
            return torch.empty(0, 0, dtype=torch.double), torch.empty(0, 0, dtype=torch.double)
        X = torch.tensor([json.loads(r["x"]) for r in rows], dtype=torch.double)
        Y = torch.tensor([json.loads(r["y"]) for r in rows], dtype=torch.double)
        return X, Y


def _statuses(status: str | Sequence[str]) -> list[str]:
    statuses = [status] if isinstance(status, str) else list(status)
    unknown = set(statuses) - set(STATUSES)
    if unknown:
        raise StoreError(f"unknown trial status {sorted(unknown)}; use one of {STATUSES}")
    return statuses


__all__ = [
    "BUDGETED",
    "IMPORTED",
    "COSTED",
    "SCHEMA_VERSION",
    "STATUSES",
    "Store",
    "Trial",
    "new_worker_id",
]
