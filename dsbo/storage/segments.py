"""Freeze-thaw's trial segments: a running trial paused where its steps end, and thawed later
to train further (the status ``paused`` of schema 5, :mod:`dsbo.storage.base`;
:mod:`dsbo.campaign.freeze_thaw` decides which).

:class:`SegmentMethods` is part of :class:`~dsbo.storage.base.Store` (a base class of it, kept
in its own module); it writes through the store's ``_transaction`` and ``_finish``. A paused
trial keeps its curve, its last value (``y``) and the steps it used (``cost``); a thaw makes it
``pending`` again with a larger reservation, as one compare-and-set transaction, so that of
several workers thawing one trial exactly one does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dsbo.errors import BudgetExhaustedError, StaleSegmentError, StoreError
from dsbo.storage.timed import timed as _timed

if TYPE_CHECKING:
    from dsbo.storage.base import Trial


def segment_of(metadata: str | dict[str, Any] | None) -> int:
    """A trial's segment: how many times it was thawed (metadata ``thaws``; 0 before any)."""
    meta = json.loads(metadata) if isinstance(metadata, str) else metadata or {}
    return int(meta.get("thaws", 0))


def check_segment(trial_id: int, metadata: str | None, segment: int | None) -> None:
    """Refuse a tell or report of ``segment`` once the trial is in another one (``None``: any).

    A freeze-thaw evaluation runs one segment; if the trial was paused and thawed since it
    began, its late result belongs to a segment that has ended, and must neither complete nor
    extend the segment that runs now (issue 57).

    Raises:
        StaleSegmentError: naming both segments.
    """
    if segment is None:
        return
    current = segment_of(metadata)
    if current != segment:
        raise StaleSegmentError(
            f"trial {trial_id} is in segment {current} (thawed {current} time(s)); this result "
            f"is of segment {segment}, which ended when the trial was paused"
        )


class SegmentMethods:
    """Pausing and thawing trials (a part of :class:`~dsbo.storage.base.Store`)."""

    _transaction: Callable[..., Any]
    _finish: Callable[..., None]
    _cost: Callable[..., float]
    get: Callable[[int], Trial]

    @_timed
    def pause(
        self,
        trial_id: int,
        y: Sequence[float] | None,
        eval_time: float | None = None,
        cost: float | None = None,
        reason: str | None = None,
        segment: int | None = None,
    ) -> None:
        """Freeze a pending trial as ``paused`` (freeze-thaw; commits immediately): ``y`` its
        last reported value (or ``None``), ``reason`` why (kept in ``error``), ``cost`` the
        steps it used so far (settling its reservation, as for :meth:`complete`); ``segment``
        as for :meth:`~dsbo.storage.base.Store.complete`."""
        values = None if y is None else json.dumps([float(v) for v in y], allow_nan=False)
        self._finish(
            trial_id,
            "paused",
            values,
            reason,
            eval_time,
            None,
            cost,
            only_pending=True,
            segment=segment,
        )

    @_timed
    def thaw(
        self,
        trial_id: int,
        until_step: int,
        cost: float,
        budget_cost: float | None = None,
        worker: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Trial:
        """Make a paused trial ``pending`` again, to be trained up to ``until_step`` (metadata
        ``until_step``; ``thaws`` counted up; ``metadata`` merged in), reserving ``cost`` in
        all (what it used and the steps to come) and leased to ``worker``. Atomic: of several
        workers thawing one trial, one succeeds and the others get a :class:`StoreError`.

        Raises:
            StoreError: if the trial does not exist or is not paused.
            BudgetExhaustedError: if ``budget_cost`` is given and the larger reservation would
                pass it (checked inside the write transaction); nothing changes.
        """
        if not 0 <= cost < math.inf:
            raise StoreError(
                f"trial {trial_id}: a reserved cost must be a finite number >= 0, got {cost!r}"
            )
        with self._transaction() as execute:
            rows = execute("SELECT status, cost, metadata FROM trials WHERE id = ?", (trial_id,))
            if not rows:
                raise StoreError(f"trial {trial_id} does not exist")
            if rows[0]["status"] != "paused":
                raise StoreError(
                    f"trial {trial_id} is {rows[0]['status']}; only a paused trial is thawed"
                )
            if budget_cost is not None:
                spent = self._cost(execute) - float(rows[0]["cost"])
                if spent + cost > budget_cost + 1e-9:
                    raise BudgetExhaustedError(
                        f"thawing trial {trial_id} to cost {cost:g} would exceed the cost budget of "
                        f"{budget_cost:g} ({spent:g} spent by the other trials)"
                    )
            meta = json.loads(rows[0]["metadata"])
            meta.update(metadata or {})
            meta.update(until_step=int(until_step), thaws=int(meta.get("thaws", 0)) + 1)
            execute(
                "UPDATE trials SET status = 'pending', y = NULL, error = NULL, completed_at = NULL, cost = ?, "
                "metadata = ?, worker = ?, heartbeat_at = {now} WHERE id = ?",
                (float(cost), json.dumps(meta), worker, trial_id),
            )
        return self.get(trial_id)


__all__ = ["SegmentMethods", "check_segment", "segment_of"]
