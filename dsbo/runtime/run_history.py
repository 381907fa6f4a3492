"""A running run's metric history: the values of one metric it has logged so far.

Hyperband early termination (:mod:`dsbo.runtime.hyperband`) compares runs at the n-th value
they logged, so a sweep reads each run's history while the run goes on. :class:`MetricHistory`
reads it incrementally from the run directory, from the first of:

- ``history.jsonl``: one JSON object per line, one line per logging call (``{"loss": 0.4}``);
  any program can write it to ``$DSBO_RUN_DIR`` (flushing each line);
- the W&B transaction log ``wandb/*run-*/run-<id>.wandb`` that every W&B run writes, offline
  ones included (``python -m dsbo.train`` logs each epoch's metrics there): a LevelDB log
  (``:W&B`` header, 32 KiB blocks of CRC-checked records) of protobuf ``Record`` messages, whose
  ``history`` records are the rows W&B's hyperband reads. wandb-core writes this file in
  buffered chunks (measured with wandb 0.31: the first rows reached the disk about 15 s into a
  run, then every few seconds), so what the sweep sees lags the run.

Only rows that hold a finite number for the metric count (W&B's ``metric_history(...,
filter_invalid=True)``): the n-th such value is the metric at iteration n; the step counter is
not used. When neither file exists, or the file cannot be read, :meth:`MetricHistory.problem`
says so, and the sweep records it instead of pretending to watch the run.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any

HISTORY_FILE = "history.jsonl"
WANDB_LOG_GLOB = "wandb/*run-*/run-*.wandb"
#: The W&B transaction log's framing (LevelDB's log format; W&B's header ``:W&B``, 0xBEE1, 0).
_HEADER = struct.Struct("<4sHB")
_RECORD = struct.Struct("<IHB")  # checksum, length, type
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_TYPE_CRC = [zlib.crc32(bytes([kind])) for kind in range(5)]


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class MetricHistory:
    """The finite values of metric ``name`` that the run in ``run_dir`` has logged so far.

    Call :meth:`read` as often as wanted (each call reads only what was appended since the
    last one, and leaves a partly written line or record for the next call).

    Example:
        >>> history = MetricHistory(run_dir, "val_mse")
        >>> history.read()  # [] until the run has logged val_mse
    """

    def __init__(self, run_dir: str | Path, name: str) -> None:
        self.run_dir = Path(run_dir)
        self.name = name
        self.values: list[float] = []
        self.source: Path | None = None
        self._broken: str | None = None
        self._offset = 0
        self._chunks = (
            b""  # the FIRST/MIDDLE parts of a W&B record whose LAST part is still to come
        )
        self._record: Any = None

    # ------------------------------------------------------------------ reading
    def read(self) -> list[float]:
        """The values logged so far (a copy)."""
        if self.source is None:
            self.source = self._find()
        if self.source is not None and self._broken is None:
            try:
                with self.source.open("rb") as fh:
                    fh.seek(self._offset)
                    data = fh.read()
            except OSError:
                data = b""
            if data:
                if self.source.name == HISTORY_FILE:
                    self._offset += self._read_lines(data)
                else:
                    self._offset += self._read_records(data)
        return list(self.values)

    def _find(self) -> Path | None:
        jsonl = self.run_dir / HISTORY_FILE
        if jsonl.is_file():
            return jsonl
        logs = sorted(
            self.run_dir.glob(WANDB_LOG_GLOB), key=lambda p: p.stat().st_mtime, reverse=True
        )
        return logs[0] if logs else None

    def _read_lines(self, data: bytes) -> int:
        used = 0
        while (end := data.find(b"\n", used)) >= 0:
            line, used = data[used:end].strip(), end + 1
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError:
                self._broken = f"{self.source} has a line that is not JSON: {line[:80]!r}"
                break
            if isinstance(row, dict) and _finite(row.get(self.name)):
                self.values.append(float(row[self.name]))
        return used

    def _read_records(self, data: bytes) -> int:
        """Parse the complete records of ``data`` (the log from ``self._offset`` on)."""
        used = 0
        if self._offset == 0:
            if len(data) < _HEADER.size:
                return 0
            ident, magic, version = _HEADER.unpack_from(data)
            if (ident, magic, version) != (b":W&B", 0xBEE1, 0):
                self._broken = f"{self.source} does not start with a W&B transaction log header"
                return 0
            used = _HEADER.size
        while True:
            left = _BLOCK - (self._offset + used) % _BLOCK
            if left < _RECORD.size:  # a block's trailer: zero padding
                if len(data) - used < left:
                    return used
                used += left
                continue
            if len(data) - used < _RECORD.size:
                return used
            checksum, length, kind = _RECORD.unpack_from(data, used)
            start = used + _RECORD.size
            if len(data) - start < length:
                return used
            payload = data[start : start + length]
            if (
                kind not in (_FULL, _FIRST, _MIDDLE, _LAST)
                or zlib.crc32(payload, _TYPE_CRC[kind]) != checksum
            ):
                self._broken = (
                    f"{self.source}: a record at byte {self._offset + used} fails its checksum"
                )
                return used
            used = start + length
            self._chunks = payload if kind in (_FULL, _FIRST) else self._chunks + payload
            if kind in (_FULL, _LAST):
                self._history_row(self._chunks)
                self._chunks = b""
            if self._broken:
                return used

    def _history_row(self, message: bytes) -> None:
        if self._record is None:
            try:
                from wandb.proto.wandb_internal_pb2 import Record  # wandb: only for a W&B log
            except ImportError as exc:
                self._broken = f"reading {self.source} needs the wandb package ({exc})"
                return
            self._record = Record
        record = self._record()
        try:
            record.ParseFromString(message)
        except Exception as exc:  # protobuf's DecodeError: the checksum passed, the message did not
            self._broken = f"{self.source}: a record does not parse as a W&B Record ({exc})"
            return
        if record.WhichOneof("record_type") != "history":
            return
        for item in record.history.item:
            key = item.key or ".".join(item.nested_key)
            if key == self.name:
                try:
                    value = json.loads(item.value_json)
                except ValueError:
                    continue
                if _finite(value):
                    self.values.append(float(value))

    # ------------------------------------------------------------------ reporting
    def problem(self) -> str | None:
        """Why the history cannot be watched (no file, an unreadable file, no value), or None."""
        if self._broken is not None:
            return self._broken
        if self.source is None:
            return (
                f"no per-step history in {self.run_dir}: neither {HISTORY_FILE} nor a W&B transaction log "
                f"({WANDB_LOG_GLOB}) was written"
            )
        if not self.values:
            return f"{self.source} holds no finite value of {self.name!r}"
        return None
