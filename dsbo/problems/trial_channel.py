"""A running trial across a process boundary: a training run in a subprocess reports to the
campaign's trial, and is stopped when the trial says so.

The train-run problem (:mod:`dsbo.problems.train_run`) starts ``python -m dsbo.train fit`` with
``DSBO_TRIAL_CHANNEL`` naming a folder and ``DSBO_TRIAL_MONITOR`` the metric; the training
process then adds a :class:`~dsbo.integrations.lightning.ReportCallback` whose trial is a
:class:`ChannelTrial` on that folder. Both sides append JSON lines, each flushed and fsynced:

* the child writes ``reports.jsonl`` (``{"step": s, "value": v}``, the metric as logged) and
  waits for the decision on that step;
* the parent (:func:`relay`) reads each new report, hands it to the campaign's running trial
  (``trial.report(step, sign * value)``, then ``trial.should_stop()``, which decides from the
  store), and writes ``decisions.jsonl`` (``{"step": s, "stop": bool}``, with ``"pause": true``
  when a freeze-thaw campaign paused the trial: the run ends and keeps its checkpoint, to be
  resumed from it when the trial is thawed).

So the child stops right after the validation epoch the rule judged, and every value is in the
store before the run goes on. A report the trial refuses (a NaN, a step that goes backwards)
stops the run too, and :func:`relay` raises the error once the run has ended (a failed trial).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any

#: The environment variables that make ``python -m dsbo.train`` report through a channel.
CHANNEL_ENV = "DSBO_TRIAL_CHANNEL"
MONITOR_ENV = "DSBO_TRIAL_MONITOR"
#: Seconds the training process waits for a decision before it goes on (the parent is gone).
DECISION_TIMEOUT = 300.0
#: Seconds between two reads of a channel file.
POLL = 0.02


def _append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _read(path: Path, start: int) -> tuple[list[dict[str, Any]], int]:
    """Complete lines of ``path`` from byte ``start``; the offset after the last one."""
    if not path.is_file():
        return [], start
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read()
    end = data.rfind(b"\n") + 1
    lines = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return lines, start + end


class ChannelTrial:
    """The training process's side: ``report`` and ``should_stop`` through files in
    ``folder`` (module doc). Picklable (a folder name), so DDP-spawned ranks can hold it."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._last_step: int | None = None
        #: Whether the last decision paused the trial (freeze-thaw) rather than stopped it.
        self.paused = False

    def report(self, step: int, value: float) -> None:
        self._last_step = int(step)
        number = float(value)
        _append(
            self.folder / "reports.jsonl",
            {"step": int(step), "value": number if math.isfinite(number) else str(number)},
        )

    def should_stop(self) -> bool:
        """The parent's decision on the last report (``False`` after :data:`DECISION_TIMEOUT`)."""
        deadline, offset = time.monotonic() + DECISION_TIMEOUT, 0
        while time.monotonic() < deadline:
            lines, offset_new = _read(self.folder / "decisions.jsonl", offset)
            for line in lines:
                if line.get("step") == self._last_step:
                    self.paused = bool(line.get("pause", False))
                    return bool(line["stop"])
            offset = offset_new
            time.sleep(POLL)
        return False


def relay(
    folder: str | Path,
    trial: Any,
    process: subprocess.Popen,
    sign: float = 1.0,
    timeout: float | None = None,
) -> BaseException | None:
    """The campaign's side: until ``process`` ends, hand each report in ``folder`` to the
    running ``trial`` (``sign * value``: the metric in the objective's direction) and write its
    decision. Returns the first error the trial raised on a report (the run was told to stop),
    or ``None``; raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    folder = Path(folder)
    start, offset, error = time.monotonic(), 0, None
    while True:
        ended = process.poll() is not None
        lines, offset = _read(folder / "reports.jsonl", offset)
        for line in lines:
            stop = True
            if error is None:
                try:
                    trial.report(line["step"], sign * float(line["value"]))
                    stop = trial.should_stop()
                except Exception as exc:  # noqa: BLE001 - the trial's refusal fails the trial
                    error = exc
            paused = (
                {"pause": True}
                if stop and error is None and getattr(trial, "paused", False) is True
                else {}
            )
            _append(
                folder / "decisions.jsonl", {"step": line["step"], "stop": bool(stop), **paused}
            )
        if ended:
            return error
        if timeout is not None and time.monotonic() - start > timeout:
            raise subprocess.TimeoutExpired(process.args, timeout)
        time.sleep(POLL)


__all__ = ["CHANNEL_ENV", "DECISION_TIMEOUT", "MONITOR_ENV", "ChannelTrial", "relay"]
