"""A campaign under faults: a second writer, late results, hanging evaluations, broken pools."""

import functools
import importlib
import math
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.errors import BudgetExhaustedError, EvaluationError, StoreLockedError
from dsbo.problems import get_problem
from dsbo.runtime.executors import WorkerPool

FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)


def campaign_on(store, **kwargs):
    options = dict(surrogate="gp", budget=6, n_init=3, seed=1, optimizer=FAST, store=store)
    options.update(kwargs)
    return Campaign(get_problem("branin"), **options)


def test_a_second_campaign_on_a_running_store_fails_at_once(tmp_path, slow_campaign_script):
    store = tmp_path / "trials.sqlite"
    first = subprocess.Popen(
        [sys.executable, str(slow_campaign_script), str(store), "30", "3", "1", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline().strip() == "running"
        start = time.perf_counter()
        with pytest.raises(StoreLockedError, match=f"in use by process {first.pid} on"):
            campaign_on(store, budget=30)
        assert time.perf_counter() - start < 5, "fails at once (the dry run comes first)"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    # the killed holder's lock is gone with it: the campaign resumes and spends exactly its budget
    resumed = campaign_on(store, budget=8, evaluator=get_problem("branin"))
    resumed.run()
    completed = resumed.store.trials("completed")
    assert len(completed) == 8 and len({tuple(t.x) for t in completed}) == 8


def test_two_campaigns_in_one_process_cannot_share_a_store(tmp_path):
    path = tmp_path / "s.sqlite"
    first = campaign_on(path)
    with pytest.raises(StoreLockedError, match="this process"):
        campaign_on(path)
    first.store.close()
    campaign_on(path)


def test_a_late_tell_on_an_abandoned_trial_counts_within_the_budget(tmp_path):
    path = tmp_path / "s.sqlite"
    crashed = campaign_on(path, budget=4)
    lost = crashed.ask(2)  # proposed, sent to the lab, then the driver died
    crashed.store.close()

    resumed = campaign_on(path, budget=4, on_pending="abandon")
    resumed.resume_pending()
    assert resumed.store.count("abandoned") == 2 and resumed.remaining == 4
    # one lab result arrives late while the budget has room: recorded, and it counts
    told = resumed.tell(lost[0].id, [1.0])
    assert told.status == "completed" and resumed.remaining == 3
    resumed.run()
    assert resumed.num_used == 4
    # the other arrives after the budget is spent: refused, nothing changes
    with pytest.raises(
        BudgetExhaustedError, match=f"trial {lost[1].id} was abandoned.*budget of 4"
    ):
        resumed.tell(lost[1].id, [2.0])
    assert resumed.store.get(lost[1].id).status == "abandoned"
    assert resumed.store.count("completed") == 4


def hang_on_the_second_call():
    calls = []

    def evaluate(x):
        calls.append(x)
        if len(calls) == 2:
            time.sleep(60)
        return get_problem("branin")(x)

    return evaluate


def test_a_hanging_evaluation_is_timed_out_and_recorded(tmp_path):
    campaign = campaign_on(
        tmp_path / "s.sqlite", budget=5, evaluator=hang_on_the_second_call(), eval_timeout=0.5
    )
    start = time.perf_counter()
    result = campaign.run()
    assert time.perf_counter() - start < 30
    assert result.num_completed == 4 and result.num_failed == 1
    [failed] = campaign.store.trials("failed")
    assert (
        failed.id == 2
        and "EvaluationTimeout" in failed.error
        and "eval_timeout=0.5" in failed.error
    )
    assert 0.4 < failed.eval_time < 5


def _marked_slow_branin(marks, x):
    """Leave a mark with this worker's pid, wait until two evaluations have started (however
    slowly the workers start on a loaded machine), then evaluate slowly."""
    (marks / f"{os.getpid()}-{time.monotonic_ns()}").write_text("")
    deadline = time.monotonic() + 60
    while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(2)
    return get_problem("branin")(x)


def kill_a_worker_once_both_run(marks):
    """The OOM killer's part: once two evaluations have started, SIGKILL one worker."""
    deadline = time.time() + 60
    while time.time() < deadline and len(list(marks.iterdir())) < 2:
        time.sleep(0.05)
    victim = int(sorted(marks.iterdir())[0].name.split("-")[0])
    os.kill(victim, signal.SIGKILL)
    return victim


def test_a_stdlib_pool_that_breaks_keeps_its_trials_pending(tmp_path):
    """A killed worker breaks a ProcessPoolExecutor as a whole: the campaign stops with a clear
    error, keeps the in-flight trials (the healthy one too) pending, and a resume evaluates
    them."""
    marks = tmp_path / "marks"
    marks.mkdir()
    path = tmp_path / "s.sqlite"
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        evaluator = functools.partial(_marked_slow_branin, marks)
        campaign = campaign_on(path, budget=4, n_init=2, q=2, executor=pool, evaluator=evaluator)
        trials = campaign.ask()
        killer = threading.Thread(target=kill_a_worker_once_both_run, args=(marks,))
        killer.start()
        with pytest.raises(EvaluationError, match="executor broke.*stay pending"):
            campaign.evaluate(trials)
        killer.join()
    assert campaign.store.count("pending") == 2 and campaign.store.count("failed") == 0
    campaign.store.close()
    resumed = campaign_on(path, budget=4, n_init=2, q=2)
    assert len(resumed.resume_pending()) == 2 and resumed.store.count("completed") == 2
    assert not math.isnan(resumed.result().best_value)


def test_a_worker_killed_mid_evaluation_retries_only_its_own_trial(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    evaluator = functools.partial(_marked_slow_branin, marks)
    with WorkerPool(workers=2) as pool:
        campaign = campaign_on(
            tmp_path / "s.sqlite", budget=2, n_init=2, q=2, executor=pool, evaluator=evaluator
        )
        killer = threading.Thread(target=kill_a_worker_once_both_run, args=(marks,))
        killer.start()
        campaign.run()
        killer.join()
    trials = campaign.store.trials()
    assert [t.status for t in trials] == ["completed", "completed"], "nothing failed, nothing lost"
    # three evaluations started: the two of the batch, and the killed one's retry
    assert len(list(marks.iterdir())) == 3


def test_a_hung_evaluation_in_a_worker_is_killed_at_the_timeout(tmp_path):
    # the workers import the evaluator's module at start, not inside the first timed evaluation
    with WorkerPool(workers=2, initializer=importlib.import_module, initargs=[__name__]) as pool:
        campaign = campaign_on(
            tmp_path / "s.sqlite",
            budget=4,
            n_init=4,
            q=2,
            executor=pool,
            evaluator=_hang_when_x0_is_large,
            eval_timeout=3.0,
        )
        start = time.perf_counter()
        result = campaign.run()
        assert time.perf_counter() - start < 40
        assert len(pool.pids()) == 2, "the killed workers were replaced"
    failed = campaign.store.trials("failed")
    assert failed and all("EvaluationTimeout" in t.error for t in failed)
    assert all(t.x[0] > 2.5 for t in failed) and result.num_completed == 4 - len(failed)


def _hang_when_x0_is_large(x):
    if float(x[0]) > 2.5:
        time.sleep(120)
    return get_problem("branin")(x)


POOL_DRIVER = """
import sys
from dsbo.campaign import Campaign
from dsbo.runtime.executors import WorkerPool
from dsbo.problems import get_problem
sys.path.insert(0, {tests!r})
from test_campaign_faults import _marked_slow_branin
import functools, pathlib

if __name__ == "__main__":
    marks = pathlib.Path(sys.argv[1])
    with WorkerPool(workers=2) as pool:
        print(" ".join(map(str, pool.pids() or [])), flush=True)
        Campaign(get_problem("branin"), surrogate="gp", budget=20, n_init=4, q=2, store=sys.argv[2],
                 executor=pool, evaluator=functools.partial(_marked_slow_branin, marks)).run()
"""


def test_no_orphaned_workers_after_the_driver_is_killed(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "driver.py"
    script.write_text(POOL_DRIVER.format(tests=os.path.dirname(__file__)))
    driver = subprocess.Popen([sys.executable, str(script), str(marks), str(tmp_path / "s.sqlite")])
    try:
        deadline = (
            time.time() + 240
        )  # a wait, not a time limit: two spawned workers import torch on a loaded box
        while time.time() < deadline and len(list(marks.iterdir())) < 2:
            time.sleep(0.05)
        workers = [int(p.name.split("-")[0]) for p in marks.iterdir()]
        assert len(workers) == 2 and all(_alive(p) for p in workers), "two evaluations running"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        deadline = time.time() + 5
        while time.time() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.05)
        assert not any(_alive(p) for p in workers), "no orphaned worker processes"
    finally:
        if driver.poll() is None:
            driver.kill()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
