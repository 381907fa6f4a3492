"""A trial's intermediate values (learning curves): what a running trial reports, kept in the
table ``intermediate_values`` of the store's schema (:mod:`dsbo.storage.base`).

:class:`CurveMethods` is part of :class:`~dsbo.storage.base.Store` (a base class of it, kept in
its own module); it writes and reads through the store's ``_transaction`` and ``_read``. Values
are in the store's sense (maximized, as ``y``); steps are integers >= 0 that increase within a
trial. Each report is its own committed write, so a killed worker loses no value it reported.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from dsbo.errors import ReportError, StoreError, TrialStoppedError
from dsbo.storage.segments import check_segment
from dsbo.storage.timed import timed as _timed


def as_step(step: Any, trial_id: int) -> int:
    """``step`` as a Python ``int`` >= 0: any integer type (``int``, ``numpy.int64``, a 0-d
    integer tensor, anything with ``__index__``), never a bool or a float.

    Raises:
        ReportError: naming the trial and the value.
    """
    if isinstance(step, bool):
        raise ReportError(f"trial {trial_id}: a step must be an integer >= 0, got {step!r}")
    try:
        number = operator.index(step)
    except TypeError:
        raise ReportError(
            f"trial {trial_id}: a step must be an integer >= 0, got {step!r}"
        ) from None
    if number < 0:
        raise ReportError(f"trial {trial_id}: a step must be an integer >= 0, got {step!r}")
    return number


class CurveMethods:
    """Reporting and reading intermediate values (a part of :class:`~dsbo.storage.base.Store`)."""

    _read: Callable[..., list[Any]]
    _transaction: Callable[..., Any]

    @_timed
    def report(self, trial_id: int, step: int, value: float, segment: int | None = None) -> None:
        """Append ``(step, value)`` to the curve of pending trial ``trial_id`` (commits at once);
        ``segment`` as for :meth:`~dsbo.storage.base.Store.complete`. ``step`` may be any
        integer type (``numpy.int64``, a 0-d integer tensor: :func:`operator.index`).

        Raises:
            ReportError: if ``step`` is not an integer >= 0 after the trial's last reported
                step, or ``value`` is not a finite number; nothing is recorded.
            TrialStoppedError: if the trial was stopped.
            StoreError: if the trial does not exist or has ended otherwise.
        """
        step = as_step(step, trial_id)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ReportError(
                f"trial {trial_id}: the value reported at step {step} must be a finite number, got {value!r}"
            )
        with self._transaction() as execute:
            rows = execute("SELECT status, metadata FROM trials WHERE id = ?", (trial_id,))
            if not rows:
                raise StoreError(f"trial {trial_id} does not exist")
            check_segment(trial_id, rows[0]["metadata"], segment)
            status = rows[0]["status"]
            if status == "stopped":
                raise TrialStoppedError(
                    f"trial {trial_id} was stopped; a stopped trial takes no more values"
                )
            if status != "pending":
                raise StoreError(
                    f"trial {trial_id} is {status}; only a running (pending) trial reports values"
                )
            last = execute(
                "SELECT MAX(step) AS s FROM intermediate_values WHERE trial_id = ?", (trial_id,)
            )[0]["s"]
            if last is not None and step <= last:
                raise ReportError(
                    f"trial {trial_id}: step {step} does not come after the last reported step {last}; "
                    "steps must increase"
                )
            execute(
                "INSERT INTO intermediate_values (trial_id, step, value, reported_at) VALUES (?, ?, ?, {now})",
                (trial_id, step, float(value)),
            )

    @_timed
    def curves(self, trial_ids: Sequence[int] | None = None) -> dict[int, list[tuple[int, float]]]:
        """The reported ``(step, value)`` pairs by trial id, in step order (trials that reported
        nothing are left out); only ``trial_ids`` when given."""
        if trial_ids is None:
            rows = self._read(
                "SELECT trial_id, step, value FROM intermediate_values ORDER BY trial_id, step"
            )
        else:
            ids = [int(i) for i in trial_ids]
            if not ids:
                return {}
            marks = ",".join("?" * len(ids))
            rows = self._read(
                f"SELECT trial_id, step, value FROM intermediate_values WHERE trial_id IN ({marks}) "
                "ORDER BY trial_id, step",
                ids,
            )
        curves: dict[int, list[tuple[int, float]]] = {}
        for row in rows:
            curves.setdefault(int(row["trial_id"]), []).append(
                (int(row["step"]), float(row["value"]))
            )
        return curves

    @_timed
    def statuses(self) -> dict[int, str]:
        """Every trial's status by id (what a stopping rule reads beside the curves)."""
        return {
            int(r["id"]): r["status"]
            for r in self._read("SELECT id, status FROM trials ORDER BY id")
        }
