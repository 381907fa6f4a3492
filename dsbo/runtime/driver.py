"""The sequential driver: evaluate a campaign's trials and drive it to its budget.

:func:`run` resumes the trials a crash left pending (:func:`resume_pending`), then repeats
:func:`step` (ask for ``q`` points, evaluate them, tell the outcomes) until the budget is spent,
stopping with a :class:`~dsbo.errors.TooManyFailuresError` (whose ``result`` holds every
evaluation so far) after ``max_consecutive_failures`` failed evaluations in a row; a run in
which every evaluation failed warns (:class:`~dsbo.errors.AllEvaluationsFailedWarning`). With ``parallel > 1`` or a shared store it hands the campaign to
:func:`dsbo.runtime.parallel.run_parallel`, which keeps several trials in flight.
:func:`evaluate` runs trials through :func:`dsbo.runtime.evaluation.evaluate_batch` (in this
process or through the campaign's executor, with its timeout and worker retries) and tells
each outcome as it ends. ``Campaign.evaluate``, ``step`` and ``run`` call these functions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsbo.campaign.history import trailing_failures
from dsbo.errors import EvaluationError
from dsbo.runtime.evaluation import UNFINISHED, evaluate_batch
from dsbo.runtime.run_end import finish, too_many_failures
from dsbo.storage import IMPORTED, Trial
from dsbo.storage.segments import segment_of

if TYPE_CHECKING:
    from dsbo.campaign import Campaign, CampaignResult


def evaluate(campaign: Campaign, trials: Sequence[Trial]) -> list[Trial]:
    """Evaluate pending trials (through the executor, if any), telling each as it ends.

    An evaluator error, a malformed or non-finite result, a timeout, or a worker that died
    ``worker_retries + 1`` times is a failed trial (:mod:`dsbo.runtime.evaluation`). If the
    executor breaks as a whole, the trials it held stay pending and an
    :class:`~dsbo.errors.EvaluationError` says how to resume.
    """
    done: list[Trial] = []
    by_id = {t.id: t for t in trials}

    def report(trial_id: int, value: Any, error: BaseException | None, seconds: float) -> None:
        if value is UNFINISHED:
            return
        segment = segment_of(by_id[trial_id].metadata)
        if error is None:
            try:
                done.append(
                    campaign.tell(trial_id, values=value, eval_time=seconds, segment=segment)
                )
                return
            except EvaluationError as exc:  # the evaluator returned something malformed
                error = exc
        done.append(campaign.tell(trial_id, error=error, eval_time=seconds, segment=segment))

    evaluate_batch(
        campaign.execution.evaluator,
        [(t.id, t.x) for t in trials],
        report,
        executor=campaign.execution.executor,
        timeout=campaign.execution.eval_timeout,
        worker_retries=campaign.execution.worker_retries,
        bind=lambda trial_id: campaign.evaluator_for(by_id[trial_id]),
    )
    return sorted(done, key=lambda t: t.id)


def resume_pending(campaign: Campaign) -> list[Trial]:
    """Handle trials a crash left pending, as ``on_pending`` says. On a shared store only
    the trials whose lease ran out are taken (the others belong to live workers)."""
    if campaign.store.shared:
        pending = campaign.store.claim_expired(
            campaign.worker, campaign.execution.lease, limit=campaign.budget
        )
        if pending and campaign.execution.on_pending == "abandon":
            campaign.store.abandon_pending(ids=[t.id for t in pending])
            return []
        return evaluate(campaign, pending) if pending else []
    pending = [
        t for t in campaign.store.trials("pending") if t.generator != IMPORTED
    ]  # imported: run elsewhere
    if not pending:
        return []
    if campaign.execution.on_pending == "abandon":
        campaign.store.abandon_pending()
        return []
    return evaluate(campaign, pending)


def step(campaign: Campaign) -> list[Trial]:
    """One iteration: ask for ``q`` points, evaluate them, tell the outcomes."""
    start = time.perf_counter()
    trials = campaign.ask()
    if not trials:
        return []
    t0 = time.perf_counter()
    store_before = campaign.store.busy_seconds
    failed = [t for t in trials if t.status == "failed"]  # their cost failed (ask)
    done = sorted(
        evaluate(campaign, [t for t in trials if t.status == "pending"]) + failed,
        key=lambda t: t.id,
    )
    timing = dict(campaign.last_ask)
    timing["store"] += campaign.store.busy_seconds - store_before
    timing["evaluate"] = time.perf_counter() - t0 - (campaign.store.busy_seconds - store_before)
    timing["total"] = time.perf_counter() - start
    timing["num_observations"] = float(campaign.store.count("completed"))
    campaign.timings.append(timing)
    campaign.store.update_metadata(
        trials[0].id, iteration_time=timing["total"], store_time=timing["store"]
    )
    for callback in campaign.execution.callbacks:
        callback(campaign, done)
    return done


def run(campaign: Campaign) -> CampaignResult:
    """Drive the campaign to its budget (resuming pending trials first). With
    ``parallel > 1`` or a shared store, :func:`dsbo.runtime.parallel.run_parallel` drives it."""
    if campaign.execution.parallel > 1 or campaign.store.shared:
        from dsbo.runtime.parallel import run_parallel

        return run_parallel(campaign)
    resume_pending(campaign)
    consecutive = trailing_failures(campaign.store.trials(("completed", "failed", "stopped")))
    while campaign.remaining > 0:
        for trial in step(campaign):
            consecutive = consecutive + 1 if trial.status == "failed" else 0
        if consecutive >= campaign.execution.max_consecutive_failures:
            raise too_many_failures(campaign, consecutive)
    return finish(campaign)
