"""Parallel trials: a campaign that keeps several evaluations in flight, and workers that share
one campaign through a PostgreSQL store.

:func:`run_parallel` drives a :class:`~dsbo.campaign.Campaign` asynchronously: it keeps
``campaign.execution.parallel`` trials in flight on the campaign's executor (a
:class:`~dsbo.runtime.executors.WorkerPool`, Dask's ``client.get_executor()``, any
``concurrent.futures.Executor``), and whenever one ends it tells the outcome and proposes the
next point with the others still pending. Pending points enter the acquisition as BoTorch's
``X_pending`` (qLogNEI integrates over their unknown outcomes, "fantasies"), so a new proposal
is not a copy of a running one: asynchronous batch BO (Ginsbourger et al. 2010's constant-liar
idea, done the Monte-Carlo way of Wilson et al. 2018 / BoTorch).

On a shared store (PostgreSQL) the same loop is a *worker*: several processes, on several
machines, run it on one campaign. Each proposal holds the store's proposal lock
(``pg_advisory_lock``) and sees every worker's pending trials; the budget is checked inside the
insert's transaction, so the workers together reach exactly the budget. While a worker
evaluates, a heartbeat thread (its own connection) renews the leases of its pending trials
every ``lease / 4`` seconds. A worker that dies (``kill -9``, a lost machine) stops renewing;
once its lease has run out, the next worker that looks for work takes the trial over
(:meth:`~dsbo.storage.Store.claim_expired`) and evaluates it again (``on_pending="retry"``, at
most ``worker_retries`` times, then it is a failed trial) or abandons it
(``on_pending="abandon"``). A worker whose budget is all proposed waits while other workers'
trials are pending (one of them might need a retry) and ends when none is.

Example (four processes, one campaign)::

    python -m dsbo.optimize --config my.yaml --store postgresql://u:pw@db/c1     # creates it
    python -m dsbo.optimize --store postgresql://u:pw@db/c1 --worker             # x 3 more
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Future, wait
from typing import TYPE_CHECKING, Any

from dsbo.campaign.history import trailing_failures
from dsbo.errors import ConfigError, EvaluationError, EvaluationTimeout, StoreError, WorkerDiedError
from dsbo.runtime.evaluation import timed_call
from dsbo.runtime.run_end import finish, too_many_failures
from dsbo.storage import Store, Trial
from dsbo.storage.segments import segment_of

if TYPE_CHECKING:
    from dsbo.campaign import Campaign, CampaignResult

#: Longest wait (seconds) between two looks at a shared store while other workers finish.
MAX_IDLE_POLL = 0.25


class Heartbeat:
    """Renew ``worker``'s leases every ``interval`` seconds, on its own connection to the
    store at ``url`` (a thread; a no-op for a store only one process writes)."""

    def __init__(self, store: Store, worker: str, interval: float) -> None:
        self._stop = threading.Event()
        self._thread = None
        self.beats = 0
        url = getattr(store, "url", None)
        if store.shared and url is not None:
            self._thread = threading.Thread(
                target=self._run, args=(url, worker, interval), daemon=True, name="dsbo-heartbeat"
            )
            self._thread.start()

    def _run(self, url: str, worker: str, interval: float) -> None:
        from dsbo.storage import open_store

        store = None
        while not self._stop.wait(interval):
            try:
                store = store or open_store(url)
                store.heartbeat(worker)
                self.beats += 1
            except Exception:  # noqa: BLE001 - a lost beat: reconnect and retry at the next one
                if store is not None:
                    with contextlib.suppress(Exception):
                        store.close()
                store = None
        if store is not None:
            store.close()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def acquire(campaign: Campaign, q: int = 1) -> list[Trial]:
    """The next trial(s) for this worker: a trial whose lease ran out (a dead worker's), else
    ``q`` new proposals; ``[]`` when there is nothing to do now. Trials that lost their lease
    more than ``worker_retries`` times are recorded as failed instead."""
    store = campaign.store
    with store.proposal_lock():
        if store.shared:
            while claimed := store.claim_expired(
                campaign.worker, campaign.execution.lease, limit=1
            ):
                [trial] = claimed
                retries = trial.metadata.get("lease_retries", 0)
                if campaign.execution.on_pending == "abandon":
                    store.abandon_pending(ids=[trial.id])
                elif retries > campaign.execution.worker_retries:
                    campaign.tell(
                        trial.id,
                        error=WorkerDiedError(
                            f"the workers evaluating it stopped renewing their lease "
                            f"({campaign.execution.lease:g} s) {retries} times: {trial.metadata.get('lease_lost_by')}"
                        ),
                    )
                else:
                    return [trial]
        return campaign.ask(q=q)


def run_parallel(campaign: Campaign) -> CampaignResult:
    """Drive ``campaign`` to its budget with ``campaign.execution.parallel`` trials in flight (module
    docstring); returns its result.

    Raises:
        ConfigError: for ``parallel > 1`` with ``q > 1`` (each slot takes one proposal).
        EvaluationError: after ``max_consecutive_failures`` failed evaluations in a row, or if
            the executor broke as a whole (its trials stay pending for a resume).
    """
    if campaign.execution.parallel > 1 and campaign.q != 1:
        raise ConfigError(
            f"parallel={campaign.execution.parallel} trials in flight are proposed one at a time; got q={campaign.q}"
        )
    if campaign.store.shared:  # one lease for the campaign: the first worker's
        lease = campaign.store.setdefault_meta("lease", campaign.execution.lease)
        if abs(float(lease) - campaign.execution.lease) > 1e-9:
            raise ConfigError(
                f"lease={campaign.execution.lease:g} s, but the campaign's workers use lease={lease:g} s "
                f"(stored in {campaign.store.path}); give every worker the same lease"
            )
    else:
        campaign.resume_pending()  # a single writer: every pending trial is an orphan
    heartbeat = Heartbeat(campaign.store, campaign.worker, campaign.execution.lease / 4)
    try:
        if campaign.execution.executor is None:
            _run_in_process(campaign)
        else:
            _run_with_executor(campaign)
    finally:
        heartbeat.stop()
    return finish(campaign)


def _finish_batch(campaign: Campaign, done: list[Trial], consecutive: list[int]) -> None:
    for trial in done:
        consecutive[0] = consecutive[0] + 1 if trial.status == "failed" else 0
    if done:
        for callback in campaign.execution.callbacks:
            callback(campaign, done)
    if consecutive[0] >= campaign.execution.max_consecutive_failures:
        raise too_many_failures(campaign, consecutive[0])


def _idle(campaign: Campaign) -> bool:
    """Nothing to propose now: wait for other workers (``True``) or stop (``False``)."""
    if not campaign.store.shared or campaign.store.count("pending") == 0:
        return False
    time.sleep(min(MAX_IDLE_POLL, campaign.execution.lease / 4))
    return True


def _record(campaign: Campaign, ask_timing: dict[str, float], trial: Trial) -> None:
    timing = dict(ask_timing)
    timing["evaluate"] = trial.eval_time or 0.0
    timing["total"] = timing["ask_total"] + timing["evaluate"]
    timing["num_observations"] = float(campaign.store.count("completed"))
    campaign.timings.append(timing)


def _run_in_process(campaign: Campaign) -> None:
    """One batch of ``q`` trials at a time in this process (a worker of a shared campaign)."""
    consecutive = [trailing_failures(campaign.store.trials(("completed", "failed", "stopped")))]
    while True:
        trials = acquire(campaign, q=campaign.q)
        if not trials:
            if _idle(campaign):
                continue
            return
        ask_timing = dict(campaign.last_ask or {})
        pending = [t for t in trials if t.status == "pending"]
        done = [t for t in trials if t.status != "pending"] + campaign.evaluate(pending)
        if ask_timing:
            for trial in done:
                _record(campaign, ask_timing, trial)
        _finish_batch(campaign, done, consecutive)


def _run_with_executor(campaign: Campaign) -> None:
    """Up to ``campaign.execution.parallel`` trials in flight on ``campaign.execution.executor``."""
    executor, timeout = campaign.execution.executor, campaign.execution.eval_timeout
    in_flight: dict[Future, Trial] = {}
    started: dict[Future, float] = {}
    retries: dict[int, int] = {}
    ask_timings: dict[int, dict[str, float]] = {}
    consecutive = [trailing_failures(campaign.store.trials(("completed", "failed", "stopped")))]
    broken: BaseException | None = None

    def submit(trial: Trial) -> None:
        nonlocal broken
        try:
            in_flight[executor.submit(timed_call, campaign.evaluator_for(trial), trial.x)] = trial
        except (BrokenExecutor, RuntimeError) as exc:  # broken, or shut down: stays pending
            broken = broken or exc

    def tell(trial: Trial, value: Any, error: BaseException | None, seconds: float) -> Trial | None:
        if error is None:
            try:
                return _tell(campaign, trial, values=value, eval_time=seconds)
            except EvaluationError as exc:  # a malformed value is a failed trial
                error = exc
        return _tell(campaign, trial, error=error, eval_time=seconds)

    while True:
        while broken is None and len(in_flight) < campaign.execution.parallel:
            trials = acquire(campaign)
            if not trials:
                break
            for trial in trials:
                if trial.status == "pending":
                    ask_timings[trial.id] = dict(campaign.last_ask or {})
                    submit(trial)
        if not in_flight:
            if broken is None and _idle(campaign):
                continue
            break
        now = time.perf_counter()
        for future in in_flight:
            if future not in started and (future.running() or future.done()):
                started[future] = now
        finished, _ = wait(
            list(in_flight), timeout=0.05 if timeout else 1.0, return_when=FIRST_COMPLETED
        )
        done: list[Trial] = []
        for future in finished:
            trial = in_flight.pop(future)
            seconds = time.perf_counter() - started.pop(future, now)
            try:
                value, seconds = future.result()
            except WorkerDiedError as exc:
                if retries.get(trial.id, 0) < campaign.execution.worker_retries:
                    retries[trial.id] = retries.get(trial.id, 0) + 1
                    submit(trial)
                    continue
                told = tell(trial, None, exc, seconds)
            except BrokenExecutor as exc:
                broken = broken or exc  # the trial stays pending for a resume
                continue
            except Exception as exc:  # noqa: BLE001 - any evaluator error is data
                told = tell(trial, None, exc, seconds)
            else:
                told = tell(trial, value, None, seconds)
            if told is not None:
                done.append(told)
        if timeout:
            now = time.perf_counter()
            for future, trial in list(in_flight.items()):
                if future in started and now - started[future] > timeout:
                    error = EvaluationTimeout(f"evaluation exceeded eval_timeout={timeout:g} s")
                    abort = getattr(executor, "abort", None)
                    if abort is None or not abort(future, error):
                        future.cancel()
                    del in_flight[future]
                    told = tell(trial, None, error, now - started.pop(future))
                    if told is not None:
                        done.append(told)
        for trial in done:
            if trial.id in ask_timings:
                _record(campaign, ask_timings.pop(trial.id), trial)
        _finish_batch(campaign, sorted(done, key=lambda t: t.id), consecutive)
    if broken is not None:
        raise EvaluationError(
            f"the executor broke ({type(broken).__name__}: {broken}); the trials it held stay "
            "pending and are evaluated again on resume. dsbo.runtime.executors.WorkerPool replaces a "
            "dead worker instead of breaking."
        )


def _tell(campaign: Campaign, trial: Trial, **kwargs: Any) -> Trial | None:
    """Tell an outcome; ``None`` if another worker took the trial over (its lease ran out
    while this evaluation was slow) and told it first."""
    try:
        return campaign.tell(trial.id, segment=segment_of(trial.metadata), **kwargs)
    except StoreError:
        if campaign.store.get(trial.id).status in ("completed", "failed", "stopped", "paused"):
            return None  # told by the worker that lost the lease: one outcome is kept
        raise


def ideal_wall_time(
    budget: int, eval_seconds: float, workers: int, proposal_seconds: float
) -> float:
    """The least wall time of a campaign of ``budget`` evaluations of ``eval_seconds`` each on
    ``workers`` workers whose proposals took ``proposal_seconds`` in all: the evaluations
    divide among the workers, the proposals do not (they hold the proposal lock one after
    another), ``budget * eval / workers + proposals`` (Amdahl's law)."""
    return budget * eval_seconds / workers + proposal_seconds


__all__ = ["Heartbeat", "acquire", "ideal_wall_time", "run_parallel"]
