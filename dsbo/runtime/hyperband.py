r"""``early_terminate: {type: hyperband}``: W&B's hyperband stopping, for sweeps run locally.

The rule is the one of W&B's open-source ``sweeps`` package (``hyperband_stopping.py``,
``hyperband_stop_runs``, which W&B's server and local controller run; its defaults come from the
package's ``config/schema.json``, ``hyperband_stopping``):

- **Brackets** (:func:`brackets`). ``min_iter`` with ``eta`` (default 3): ``int(min_iter *
  eta**k)`` for k = 0, 1, ... (W&B lists the first 100), e.g. ``min_iter: 3`` gives 3, 9, 27,
  81, ...; ``max_iter`` with ``s``: ``int(max_iter / eta**k)`` for k = 1..s while it is >= 1,
  sorted, e.g. ``max_iter: 27, s: 2`` gives 3, 9.
- **Iterations** are the values of the metric a run has logged (the n-th finite value is
  iteration n, W&B's ``metric_history(filter_invalid=True)``); the step counter is not used.
  Values of a maximized metric are negated, so lower is better below.
- **Thresholds** (:func:`thresholds`). At bracket b, over every run of the sweep (running,
  finished, stopped or failed) that has logged at least b values: ``sorted(values at
  iteration b)[int(n / eta)]``, n the number of such runs (W&B: ``int(r * n)``, r = 1/eta),
  i.e. roughly the 1/eta quantile: with eta 3, the best third of the runs is kept.
- **The stop rule** (:func:`stop_rule`). A running run is judged at its latest bracket b (the
  largest bracket <= its iterations) against that bracket's threshold: with ``strict: true``
  (the package's schema default) its value at iteration b, with ``strict: false`` its best value
  so far (``min(history)``); it is stopped when that value is worse than the threshold
  (ties survive). W&B's documentation says ``strict`` defaults to false; its code fills in
  true, which dsbo follows.
- The rule is evaluated again whenever new values arrive (W&B's server: every few minutes;
  here every poll of the run's history, by default each second), so the threshold tightens as
  more runs reach a bracket, and a run can be stopped at a bracket it passed earlier.

Being stopped is not a failure: the sweep records the run as ``stopped`` with its last logged
value as its metric (W&B reports the summary, by default the last logged value).

:class:`HyperbandMonitor` holds every run's history for a sweep (threads that watch runs share
it) and :meth:`HyperbandMonitor.watch` runs one run's process in its own process group,
polling its :class:`~dsbo.runtime.run_history.MetricHistory`, and stops it the way W&B's agent
does: ``SIGTERM``, then ``SIGKILL`` after ``$WANDB_AGENT_KILL_DELAY`` seconds (default 30).

Example:
    >>> brackets(min_iter=3, eta=3)[:4]
    [3, 9, 27, 81]
    >>> brackets(max_iter=27, s=2, eta=3)
    [3, 9]
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from dsbo.errors import ConfigError
from dsbo.runtime.run_history import MetricHistory

#: The keys of W&B's ``hyperband_stopping`` schema.
KEYS = ("type", "min_iter", "max_iter", "s", "eta", "strict")
DEFAULT_ETA = 3.0
#: W&B lists this many brackets from ``min_iter``.
MAX_BRACKETS = 100
KILL_DELAY_ENV = "WANDB_AGENT_KILL_DELAY"
DEFAULT_KILL_DELAY = 30.0


@dataclass(frozen=True)
class Hyperband:
    """A validated ``early_terminate`` block: the brackets, ``eta`` and ``strict``."""

    brackets: tuple[int, ...]
    eta: float = DEFAULT_ETA
    strict: bool = True


@dataclass(frozen=True)
class Stop:
    """Why a run is stopped: at ``bracket`` its ``value`` was worse than ``threshold``."""

    bracket: int
    value: float
    threshold: float
    iterations: int

    def scaled(self, sign: float) -> Stop:
        return Stop(self.bracket, sign * self.value, sign * self.threshold, self.iterations)


# ---------------------------------------------------------------------- the rule
def brackets(
    min_iter: int | None = None,
    max_iter: int | None = None,
    s: int | None = None,
    eta: float = DEFAULT_ETA,
) -> list[int]:
    """W&B's bracket schedule: from ``max_iter`` and ``s`` if given, else from ``min_iter``."""
    out: list[int] = []
    if max_iter is not None:
        band = float(max_iter)
        for _ in range(s or 0):
            band /= eta
            if band < 1:
                break
            out.append(int(band))
    elif min_iter is not None:
        band = float(min_iter)
        for _ in range(MAX_BRACKETS):
            if band > 2**53:  # no run logs that often (and int() of an overflowed float fails)
                break
            out.append(int(band))
            band *= eta
    return sorted(set(out))


def thresholds(
    bands: Sequence[int], histories: Iterable[Sequence[float]], eta: float
) -> list[float]:
    """Each bracket's threshold over ``histories`` (lower is better): ``inf`` where no run
    has reached the bracket."""
    histories = [h for h in histories if h]
    r = 1.0 / eta
    out = []
    for band in bands:
        values = sorted(h[band - 1] for h in histories if len(h) >= band)
        out.append(values[int(r * len(values))] if values else math.inf)
    return out


def stop_rule(
    history: Sequence[float], bands: Sequence[int], limits: Sequence[float], strict: bool = True
) -> Stop | None:
    """W&B's decision for one running run (``history`` lower-is-better): a :class:`Stop` at
    its latest bracket, or None (no bracket reached yet, or not worse than the threshold)."""
    closest = None
    for band, limit in zip(bands, limits, strict=True):
        if band > len(history):
            break
        closest = band, limit
    if closest is None:
        return None
    band, limit = closest
    value = history[band - 1] if strict else min(history)
    return Stop(band, value, limit, len(history)) if value > limit else None


def runs_to_stop(
    histories: Mapping[str, Sequence[float]], running: Iterable[str], hyperband: Hyperband
) -> dict[str, Stop]:
    """The ``running`` runs that W&B's hyperband stops, given every run's history (lower is
    better; runs that are not running count toward the thresholds)."""
    limits = thresholds(hyperband.brackets, histories.values(), hyperband.eta)
    decisions = {
        name: stop_rule(histories.get(name, ()), hyperband.brackets, limits, hyperband.strict)
        for name in running
    }
    return {name: stop for name, stop in decisions.items() if stop is not None}


# ---------------------------------------------------------------------- the sweep file's block
def _positive_int(raw: dict[str, Any], key: str, where: str) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}.{key}={value!r} must be an integer >= 1")
    return value


def parse_early_terminate(
    raw: Any, metric: dict[str, Any] | None, source: str = "sweep"
) -> Hyperband | None:
    """The ``early_terminate`` block of a sweep file (None when absent); a ConfigError naming
    the key for anything W&B's schema refuses or its code would not use."""
    if raw is None:
        return None
    where = f"{source}: early_terminate"
    if not isinstance(raw, dict) or raw.get("type") != "hyperband":
        raise ConfigError(
            f"{where} must be a mapping with type: hyperband (W&B's only stopping algorithm), got {raw!r}"
        )
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {unknown}; W&B's hyperband keys are {list(KEYS)}"
        )
    if metric is None:
        raise ConfigError(
            f"{where}: hyperband compares the runs' metric; give metric: {{name: ..., goal: ...}}"
        )
    eta = raw.get("eta", DEFAULT_ETA)
    if (
        isinstance(eta, bool)
        or not isinstance(eta, int | float)
        or not math.isfinite(eta)
        or eta <= 1
    ):
        raise ConfigError(
            f"{where}.eta={eta!r} must be a number > 1 (runs kept at a bracket: the best 1/eta)"
        )
    strict = raw.get("strict", True)
    if not isinstance(strict, bool):
        raise ConfigError(f"{where}.strict={strict!r} must be true or false")
    if "min_iter" in raw and "max_iter" in raw:
        raise ConfigError(
            f"{where}: give min_iter or max_iter (with s), not both (W&B would use max_iter, ignoring min_iter)"
        )
    if "max_iter" in raw:
        if "s" not in raw:
            raise ConfigError(
                f"{where}: max_iter needs s, the number of brackets below it (W&B's schema requires it)"
            )
        bands = brackets(
            max_iter=_positive_int(raw, "max_iter", where),
            s=_positive_int(raw, "s", where),
            eta=eta,
        )
        if not bands:
            raise ConfigError(
                f"{where}: max_iter={raw['max_iter']} / eta={eta} is below 1: no bracket; raise max_iter or lower eta"
            )
    elif "min_iter" in raw:
        if "s" in raw:
            raise ConfigError(
                f"{where}.s counts brackets down from max_iter; with min_iter W&B ignores it, drop it"
            )
        bands = brackets(min_iter=_positive_int(raw, "min_iter", where), eta=eta)
    else:
        raise ConfigError(
            f"{where}: missing min_iter (the first bracket) or max_iter with s (W&B needs one of them)"
        )
    return Hyperband(tuple(bands), float(eta), strict)


def kill_delay() -> float:
    """Seconds between ``SIGTERM`` and ``SIGKILL``: ``$WANDB_AGENT_KILL_DELAY`` (W&B's agent), default 30."""
    text = os.environ.get(KILL_DELAY_ENV)
    if text is None:
        return DEFAULT_KILL_DELAY
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{KILL_DELAY_ENV}={text!r} must be a number of seconds >= 0")
    return value


# ---------------------------------------------------------------------- watching runs
def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_process(proc: subprocess.Popen, delay: float) -> int:
    """``SIGTERM`` to the process group of ``proc``, ``SIGKILL`` if it still runs ``delay``
    seconds later; returns its exit code."""
    _signal_group(proc, signal.SIGTERM)
    try:
        return proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()


class HyperbandMonitor:
    """The metric histories of a sweep's runs and W&B's stop rule over them (thread-safe).

    ``goal`` is the metric's (``minimize`` or ``maximize``); histories are kept lower-is-better.
    :meth:`cancel` makes every :meth:`watch` in progress end its run (the sweep was interrupted).
    """

    def __init__(self, hyperband: Hyperband, goal: str = "minimize", poll: float = 1.0) -> None:
        if not poll > 0:
            raise ConfigError(f"poll={poll!r} must be > 0 seconds")
        self.hyperband = hyperband
        self.sign = -1.0 if goal == "maximize" else 1.0
        self.poll = poll
        self.kill_delay = kill_delay()
        self._histories: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._cancelled = threading.Event()

    def observe(self, run: str, values: Sequence[float]) -> None:
        """Record the values ``run`` has logged so far (in the metric's units)."""
        with self._lock:
            self._histories[run] = [self.sign * v for v in values]

    def decide(self, run: str) -> Stop | None:
        """W&B's decision for the running ``run``, in the metric's units."""
        with self._lock:
            stop = runs_to_stop(self._histories, [run], self.hyperband).get(run)
        return None if stop is None else stop.scaled(self.sign)

    def cancel(self) -> None:
        self._cancelled.set()

    def watch(
        self,
        run: str,
        command: list[str],
        history: MetricHistory,
        stdout: IO[Any],
        env: dict[str, str],
        timeout: float | None = None,
    ) -> tuple[int, Stop | None]:
        """Run ``command`` in its own process group, reading ``history`` every ``poll`` seconds
        and stopping the run when W&B's rule says so; returns its exit code and the
        :class:`Stop` (None if it ended by itself). Raises ``subprocess.TimeoutExpired`` (the
        run killed) after ``timeout`` seconds."""
        self.observe(run, [])
        started = time.monotonic()
        proc = subprocess.Popen(
            command, stdout=stdout, stderr=subprocess.STDOUT, env=env, process_group=0
        )
        try:
            while True:
                wait = (
                    self.poll
                    if timeout is None
                    else max(0.0, min(self.poll, started + timeout - time.monotonic()))
                )
                try:
                    code = proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    code = None
                self.observe(run, history.read())
                if code is not None:
                    return code, None
                if self._cancelled.is_set():
                    return stop_process(proc, 1.0), None
                if timeout is not None and time.monotonic() - started >= timeout:
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait()
                    raise subprocess.TimeoutExpired(command, timeout)
                stop = self.decide(run)
                if stop is not None:
                    code = stop_process(proc, self.kill_delay)
                    self.observe(run, history.read())  # what it logged until it ended
                    return code, stop
        finally:
            if proc.poll() is None:  # an exception on the way out: the run must not outlive it
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
