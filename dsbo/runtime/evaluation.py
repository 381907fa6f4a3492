"""Running evaluations: timeouts, dying workers, and batches through an executor.

A campaign hands its pending trials to :func:`evaluate_batch`, which evaluates them in this
process or through any ``concurrent.futures.Executor`` and reports each one as it ends, as
``(values, error, seconds)``. The rules:

- **Outcomes are parsed strictly** by the campaign that is told them
  (:func:`dsbo.space.outcomes.parse_outcomes`, re-exported here).
- **Timeouts** (``timeout`` seconds, counted from the moment an evaluation starts): in this
  process a ``SIGALRM`` timer interrupts the evaluator (Python code, ``time.sleep``, I/O;
  a single long call into C is interrupted when it returns), so it needs the main thread.
  Through an executor the wait is abandoned; an executor with an ``abort(future, error)``
  method (:class:`~dsbo.runtime.executors.WorkerPool`) kills the worker that runs it, any other
  executor is asked to ``cancel`` and its late result is ignored. Either way the trial is
  a failure with an :class:`~dsbo.errors.EvaluationTimeout`.
- **Dying workers**: an evaluation whose worker process died
  (:class:`~dsbo.errors.WorkerDiedError`) is resubmitted up to ``worker_retries`` times before
  it counts as failed; the other trials of the batch are unaffected. An executor that breaks
  as a whole (``concurrent.futures.BrokenExecutor``, e.g. a stdlib ``ProcessPoolExecutor``
  after one worker was killed) cannot be repaired from here: the trials it held are reported
  as :data:`UNFINISHED` so the campaign keeps them pending, and :func:`evaluate_batch` raises
  an :class:`~dsbo.errors.EvaluationError` saying how to resume.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, Future, wait
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor

from dsbo.errors import EvaluationError, EvaluationTimeout, WorkerDiedError
from dsbo.space.outcomes import outcome_vector, parse_outcomes

Evaluator = Callable[[Tensor], Any]
#: ``report(trial_id, values, error, seconds)``, called once per trial as it ends.
Report = Callable[[int, Any, "BaseException | None", float], None]
#: Marks a trial an executor lost without an answer (left pending for a resume).
UNFINISHED = object()


def timed_call(evaluator: Evaluator, x: Sequence[float]) -> tuple[Any, float]:
    """Evaluate one point and time it (runs in the executor's worker, so it is picklable)."""
    start = time.perf_counter()
    value = evaluator(torch.tensor(list(x), dtype=torch.double))
    if isinstance(value, Tensor):
        value = value.detach().cpu().reshape(-1).tolist()
    return value, time.perf_counter() - start


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`~dsbo.errors.EvaluationTimeout` in this thread after ``seconds``.

    A ``SIGALRM`` interval timer: main thread only (``ValueError`` from ``signal`` otherwise,
    which :func:`evaluate_batch` turns into a clear error). ``None`` means no limit.
    """
    if seconds is None:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise EvaluationTimeout(f"evaluation exceeded eval_timeout={seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def evaluate_batch(
    evaluator: Evaluator,
    trials: Sequence[tuple[int, Sequence[float]]],
    report: Report,
    executor: Executor | None = None,
    timeout: float | None = None,
    worker_retries: int = 1,
    bind: Callable[[int], Evaluator] | None = None,
) -> None:
    """Evaluate ``(trial_id, x)`` pairs and ``report`` each outcome as it ends.

    Args:
        evaluator: ``x (d-tensor) -> outcomes``.
        trials: The pending trials' ids and points.
        report: Called as ``report(trial_id, values, error, seconds)``; ``values`` is
            :data:`UNFINISHED` for a trial an executor lost without an answer.
        executor: ``None`` evaluates one trial after the other in this process.
        timeout: Seconds an evaluation may run (``None``: no limit).
        worker_retries: Resubmissions of a trial whose worker process died.
        bind: ``trial_id -> evaluator`` where each trial has its own (one that reports to
            the running trial: :meth:`Campaign.evaluator_for <dsbo.campaign.Campaign.evaluator_for>`).

    Raises:
        EvaluationError: if the executor broke as a whole (after reporting every trial).
    """
    if executor is None:
        if timeout is not None and threading.current_thread() is not threading.main_thread():
            raise EvaluationError(
                "eval_timeout in this process needs the main thread (it uses SIGALRM); "
                "run the campaign from the main thread or give it an executor"
            )
        for trial_id, x in trials:
            start = time.perf_counter()
            try:
                with time_limit(timeout):
                    value, seconds = timed_call(evaluator if bind is None else bind(trial_id), x)
            except Exception as exc:  # noqa: BLE001 - any evaluator error is data, not a crash
                report(trial_id, None, exc, time.perf_counter() - start)
            else:
                report(trial_id, value, None, seconds)
        return
    _evaluate_with_executor(evaluator, trials, report, executor, timeout, worker_retries, bind)


def _evaluate_with_executor(
    evaluator: Evaluator,
    trials: Sequence[tuple[int, Sequence[float]]],
    report: Report,
    executor: Executor,
    timeout: float | None,
    worker_retries: int,
    bind: Callable[[int], Evaluator] | None = None,
) -> None:
    points = dict(trials)
    retries = dict.fromkeys(points, 0)
    futures: dict[Future, int] = {}
    started: dict[Future, float] = {}
    broken: BaseException | None = None

    def submit(trial_id: int) -> None:
        nonlocal broken
        try:
            function = evaluator if bind is None else bind(trial_id)
            futures[executor.submit(timed_call, function, points[trial_id])] = trial_id
        except (BrokenExecutor, RuntimeError) as exc:  # broken, or shut down
            broken = broken or exc
            report(trial_id, UNFINISHED, exc, 0.0)

    for trial_id in points:
        submit(trial_id)
    while futures:
        now = time.perf_counter()
        for future in futures:
            if future not in started and (future.running() or future.done()):
                started[future] = now
        poll = None if timeout is None else 0.05
        done, _ = wait(list(futures), timeout=poll, return_when=FIRST_COMPLETED)
        for future in done:
            trial_id = futures.pop(future)
            seconds = time.perf_counter() - started.get(future, now)
            try:
                value, seconds = future.result()
            except WorkerDiedError as exc:
                if retries[trial_id] < worker_retries:
                    retries[trial_id] += 1
                    submit(trial_id)
                else:
                    report(trial_id, None, exc, seconds)
            except BrokenExecutor as exc:
                broken = broken or exc
                report(trial_id, UNFINISHED, exc, seconds)
            except Exception as exc:  # noqa: BLE001 - any evaluator error is data
                report(trial_id, None, exc, seconds)
            else:
                report(trial_id, value, None, seconds)
        if timeout is None:
            continue
        now = time.perf_counter()
        for future, trial_id in list(futures.items()):
            if future in started and now - started[future] > timeout:
                error = EvaluationTimeout(f"evaluation exceeded eval_timeout={timeout:g} s")
                abort = getattr(executor, "abort", None)
                if abort is None or not abort(future, error):
                    future.cancel()
                del futures[future]
                report(trial_id, None, error, now - started[future])
    if broken is not None:
        raise EvaluationError(
            f"the executor broke ({type(broken).__name__}: {broken}); the trials it held stay "
            "pending and are evaluated again on resume. dsbo.runtime.executors.WorkerPool replaces a "
            "dead worker instead of breaking."
        )


__all__ = [
    "UNFINISHED",
    "evaluate_batch",
    "outcome_vector",
    "parse_outcomes",
    "time_limit",
    "timed_call",
]
