"""A process pool for expensive evaluations in which one dying worker costs one evaluation.

Python's ``ProcessPoolExecutor`` has two defects for a BO campaign whose evaluations run for
minutes: one worker killed by the OS (out of memory, ``kill -9``) breaks the whole pool, so
every evaluation in flight fails with it (the healthy ones too) and the next ``submit``
raises; and a hung evaluation cannot be stopped, nor are the workers stopped when the driver
process is killed (spawn workers then live on as orphans).

:class:`WorkerPool` is a ``concurrent.futures.Executor`` whose workers are independent:

- each worker is a process with its own pipe and runs one task at a time; a task whose worker
  dies gets :class:`~dsbo.errors.WorkerDiedError` (naming the pid and the signal or exit code),
  a new worker takes the dead one's place, and the other tasks carry on;
- :meth:`WorkerPool.abort` stops one task: a queued task is dropped, a running one has its
  worker killed (``SIGKILL``) and replaced. The campaign uses it for ``eval_timeout``;
- workers never outlive the driver: each asks the kernel to kill it when the thread that
  started it ends (``PR_SET_PDEATHSIG`` on Linux) and watches its parent pid once every half
  second as well; all workers are started by the pool's manager thread, which lives exactly
  as long as the pool. ``shutdown`` runs at interpreter exit too, and workers ignore
  ``SIGINT``, so Ctrl-C reaches only the driver, which then stops them.

Example:
    >>> with WorkerPool(workers=4) as pool:
    ...     campaign = Campaign(problem, budget=40, q=4, executor=pool, eval_timeout=600)
    ...     campaign.run()
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from dsbo.errors import ConfigError, WorkerDiedError

#: Workers that die before they are ready, in a row, before the pool gives up.
MAX_STARTUP_FAILURES = 3
_PR_SET_PDEATHSIG = 1


class BrokenWorkerPool(BrokenExecutor):
    """The pool's workers cannot start (e.g. their initializer fails), or it was shut down."""


# ------------------------------------------------------------------ the worker process
def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    if os.getppid() != parent_pid:  # the parent died before PDEATHSIG was armed
        os._exit(1)
    threading.Thread(target=watch, daemon=True, name="dsbo-parent-watch").start()


def _send(conn: Connection, status: str, payload: Any) -> None:
    try:
        conn.send((status, payload))
    except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
        text = f"{type(payload).__name__} could not be sent back from the worker: {exc}"
        if isinstance(payload, BaseException):
            text += "\n" + "".join(traceback.format_exception(payload))
        conn.send(("error", RuntimeError(text)))


def _worker_main(
    conn: Connection, parent_pid: int, initializer: Callable[..., Any] | None, initargs: tuple
) -> None:
    """A worker: arm the parent watch, run the initializer, then run tasks until ``None``."""
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)  # if it raises, the worker exits before "ready"
    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, args, kwargs = task
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the task's error goes to its future
            _send(conn, "error", exc)
        else:
            _send(conn, "ok", result)


# ------------------------------------------------------------------ the pool
@dataclass(eq=False)
class _Worker:
    process: Any
    conn: Connection
    ready: bool = False
    future: Future | None = None


@dataclass
class _State:
    queue: collections.deque = field(default_factory=collections.deque)
    workers: list[_Worker] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)  # ids of workers aborted on purpose
    startup_failures: int = 0
    shutdown: bool = False
    cancel_queued: bool = False
    broken: str | None = None


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        return f"killed by signal {-code}"
    return f"exit code {code}"


class WorkerPool(Executor):
    """An executor of ``workers`` independent processes (module docstring).

    Args:
        workers: Number of worker processes.
        context: The multiprocessing start method (``"spawn"``, the default, is safe with
            torch and JAX threads; ``"forkserver"`` starts faster; ``"fork"`` may hang).
        initializer: Called as ``initializer(*initargs)`` in every worker at start.
        initargs: Its arguments.

    Raises:
        ConfigError: naming a bad argument.
    """

    def __init__(
        self,
        workers: int = 2,
        context: str = "spawn",
        initializer: Callable[..., Any] | None = None,
        initargs: Iterable[Any] = (),
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
        if context not in multiprocessing.get_all_start_methods():
            raise ConfigError(
                f"context={context!r}: choose one of {multiprocessing.get_all_start_methods()}"
            )
        self.num_workers = workers
        self._ctx = multiprocessing.get_context(context)
        self._initializer, self._initargs = initializer, tuple(initargs)
        self._state = _State()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = multiprocessing.Pipe(duplex=False)
        self._manager = threading.Thread(target=self._manage, daemon=True, name="dsbo-worker-pool")
        self._manager.start()
        # at interpreter exit (finalizers still alive then run), kill what is left
        self._finalizer = weakref.finalize(self, WorkerPool._kill_all, self._state)

    # ------------------------------------------------------------------ Executor API
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        with self._lock:
            if self._state.broken:
                raise BrokenWorkerPool(self._state.broken)
            if self._state.shutdown:
                raise RuntimeError("cannot submit to a WorkerPool after shutdown")
            self._state.queue.append((future, fn, args, kwargs))
        self._wake()
        return future

    def abort(self, future: Future, error: BaseException) -> bool:
        """Stop ``future``'s task with ``error``: drop it if queued, kill its worker if running.

        Returns:
            Whether the task was queued or running (``False`` once it has finished).
        """
        with self._lock:
            for item in self._state.queue:
                if item[0] is future:
                    self._state.queue.remove(item)
                    future.set_exception(error)
                    return True
            worker = next((w for w in self._state.workers if w.future is future), None)
            if worker is None:
                return False
            worker.future, worker.ready = None, False  # never hand it another task
            self._state.killed.add(id(worker))
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.process.pid, signal.SIGKILL)
            future.set_exception(error)
        self._wake()
        return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting tasks; with ``wait``, finish the queued and running ones first
        (or cancel the queued ones with ``cancel_futures``), then stop the workers."""
        with self._lock:
            self._state.shutdown = True
            self._state.cancel_queued = self._state.cancel_queued or cancel_futures
        self._wake()
        if wait and threading.current_thread() is not self._manager:
            self._manager.join()

    def pids(self) -> list[int]:
        """Process ids of the live workers."""
        with self._lock:
            return [w.process.pid for w in self._state.workers if w.process.is_alive()]

    # ------------------------------------------------------------------ the manager thread
    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send_bytes(b"")

    def _start_worker(self) -> None:
        parent, child = self._ctx.Pipe()
        process = self._ctx.Process(
            target=_worker_main,
            args=(child, os.getpid(), self._initializer, self._initargs),
            daemon=True,
            name="dsbo-worker",
        )
        process.start()
        child.close()
        self._state.workers.append(_Worker(process, parent))

    def _manage(self) -> None:
        state = self._state
        with self._lock:
            for _ in range(self.num_workers):
                self._start_worker()
        while True:
            with self._lock:
                self._dispatch()
                idle = all(w.future is None for w in state.workers)
                if state.shutdown and idle and (not state.queue or state.broken):
                    break
                waitables = [self._wake_r]
                for w in state.workers:
                    waitables += [w.conn, w.process.sentinel]
            ready = set(wait(waitables, timeout=1.0))
            if self._wake_r in ready:
                while self._wake_r.poll():
                    self._wake_r.recv_bytes()
            with self._lock:
                for worker in list(state.workers):
                    if worker.conn in ready:
                        self._receive(worker)
                    if worker.process.sentinel in ready or not worker.process.is_alive():
                        self._bury(worker)
        self._stop_workers()

    def _dispatch(self) -> None:
        """Hand queued tasks to ready, idle workers (lock held)."""
        state = self._state
        if state.cancel_queued:
            while state.queue:
                state.queue.popleft()[0].cancel()
        for worker in state.workers:
            while worker.ready and worker.future is None and state.queue:
                future, fn, args, kwargs = state.queue.popleft()
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    worker.conn.send((fn, args, kwargs))
                except Exception as exc:  # noqa: BLE001 - e.g. a lambda under spawn
                    future.set_exception(
                        RuntimeError(
                            f"cannot send the task to a worker process ({type(exc).__name__}: "
                            f"{exc}); functions and arguments must be picklable (module-level)"
                        )
                    )
                    continue
                worker.future = future

    def _receive(self, worker: _Worker) -> None:
        try:
            status, payload = worker.conn.recv()
        except (EOFError, OSError):
            return  # it died: _bury tells its future
        if status == "ready":
            worker.ready = True
            self._state.startup_failures = 0
            return
        future, worker.future = worker.future, None
        if future is None or future.done():  # aborted meanwhile
            return
        if status == "ok":
            future.set_result(payload)
        else:
            future.set_exception(payload)

    def _bury(self, worker: _Worker) -> None:
        """A worker process ended: tell its task, replace it (lock held)."""
        state = self._state
        worker.process.join(timeout=1.0)
        code = worker.process.exitcode
        state.workers.remove(worker)
        worker.conn.close()
        aborted = id(worker) in state.killed
        state.killed.discard(id(worker))
        if worker.future is not None and not worker.future.done():
            worker.future.set_exception(
                WorkerDiedError(
                    f"worker pid {worker.process.pid} died ({_describe_exit(code)}) while "
                    "evaluating"
                )
            )
        if not worker.ready and not aborted:
            state.startup_failures += 1
        if state.startup_failures >= MAX_STARTUP_FAILURES:
            state.broken = (
                f"{state.startup_failures} worker processes in a row died at start "
                f"(last: {_describe_exit(code)}); is the initializer failing?"
            )
            while state.queue:
                future = state.queue.popleft()[0]
                if future.set_running_or_notify_cancel():
                    future.set_exception(BrokenWorkerPool(state.broken))
            return
        if not state.shutdown or state.queue or any(w.future for w in state.workers):
            self._start_worker()

    def _stop_workers(self) -> None:
        with self._lock:
            workers = list(self._state.workers)
        for worker in workers:
            with contextlib.suppress(OSError, BrokenPipeError):
                worker.conn.send(None)
        deadline = time.monotonic() + 2.0
        for worker in workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
        self._finalizer()

    @staticmethod
    def _kill_all(state: _State) -> None:
        """Kill every worker still alive (interpreter exit, or after a clean stop)."""
        for worker in list(state.workers):
            if worker.process.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(worker.process.pid, signal.SIGKILL)
                worker.process.join(timeout=1.0)


@contextlib.contextmanager
def open_executor(
    kind: str | None, workers: int = 1, address: str | None = None
) -> Iterator[tuple[Executor | None, int]]:
    """The executor of ``kind`` (``"process"``: a :class:`WorkerPool` of ``workers`` local
    processes; ``"dask"``: a Dask ``LocalCluster`` of ``workers`` processes, or the cluster
    whose scheduler is at ``address``; ``None``: evaluations in this process) and how many
    trials it runs at once. Stopped (a ``LocalCluster`` closed) on exit.

    Raises:
        ConfigError: if Dask is not installed or the scheduler at ``address`` cannot be
            reached.
    """
    if kind is None:
        yield None, 1
        return
    if kind == "process":
        pool = WorkerPool(workers=workers)
        try:
            yield pool, workers
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            "executor.kind: dask needs dask.distributed: pip install 'dsbo[scale]'"
        ) from None
    cluster = None
    try:
        if address is None:
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
        else:
            client = Client(address, timeout=10)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise ConfigError(
            f"executor.address={address!r}: cannot reach the Dask scheduler ({exc})"
        ) from None
    try:
        workers = workers if address is None else max(1, sum(client.nthreads().values()))
        yield client.get_executor(), workers
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["BrokenWorkerPool", "WorkerPool", "open_executor"]
