"""WorkerPool: one dying worker costs one task, hung tasks can be aborted, no orphans."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from dsbo.errors import ConfigError, EvaluationTimeout, WorkerDiedError
from dsbo.runtime.executors import BrokenWorkerPool, WorkerPool


def square(x):
    return x * x


def fail(message):
    raise ValueError(message)


def pid_then_sleep(seconds, marks=None):
    if marks is not None:
        (marks / str(os.getpid())).write_text("")
    time.sleep(seconds)
    return os.getpid()


def unpicklable():
    return lambda: None


def broken_initializer():
    raise RuntimeError("no license server")


def alive(pid):
    """Running and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # gone (FileNotFoundError), or going while we read (ProcessLookupError)
        return False


def wait_until(condition, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(workers=2) as pool:
        yield pool


def test_results_exceptions_and_map(pool):
    assert pool.submit(square, 7).result(timeout=60) == 49
    with pytest.raises(ValueError, match="bad input"):
        pool.submit(fail, "bad input").result(timeout=60)
    assert list(pool.map(square, range(10), timeout=60)) == [i * i for i in range(10)]


def test_a_killed_worker_costs_only_its_own_task(pool, tmp_path):
    victim = pool.submit(pid_then_sleep, 30, tmp_path)
    healthy = pool.submit(pid_then_sleep, 1.0)
    assert wait_until(lambda: len(list(tmp_path.iterdir())) == 1)
    pid = int(next(tmp_path.iterdir()).name)
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(
        WorkerDiedError, match=f"worker pid {pid} died \\(killed by signal 9 \\(SIGKILL\\)\\)"
    ):
        victim.result(timeout=30)
    assert healthy.result(timeout=30) != pid, "the other worker's task completes"
    assert pool.submit(square, 3).result(timeout=60) == 9, "the pool goes on"
    assert wait_until(lambda: len(pool.pids()) == 2), "the dead worker was replaced"


def test_abort_kills_a_hung_task_and_keeps_the_pool(pool, tmp_path):
    hung = pool.submit(pid_then_sleep, 60, tmp_path)
    assert wait_until(lambda: len(list(tmp_path.iterdir())) == 1)
    pid = int(next(tmp_path.iterdir()).name)
    start = time.monotonic()
    assert pool.abort(hung, EvaluationTimeout("evaluation exceeded eval_timeout=1 s"))
    with pytest.raises(EvaluationTimeout, match="eval_timeout=1 s"):
        hung.result(timeout=5)
    assert time.monotonic() - start < 5
    assert wait_until(lambda: not alive(pid)), "its worker is gone"
    assert pool.submit(square, 4).result(timeout=60) == 16
    assert wait_until(lambda: len(pool.pids()) == 2)
    assert not pool.abort(hung, EvaluationTimeout("again")), "a finished task is not aborted"


def test_abort_of_a_queued_task(pool):
    blockers = [pool.submit(time.sleep, 1.0) for _ in range(2)]
    queued = pool.submit(square, 5)
    assert pool.abort(queued, EvaluationTimeout("never started"))
    with pytest.raises(EvaluationTimeout, match="never started"):
        queued.result(timeout=5)
    for future in blockers:
        future.result(timeout=30)


def test_an_unpicklable_result_is_a_clear_error(pool):
    with pytest.raises(RuntimeError, match="could not be sent back from the worker"):
        pool.submit(unpicklable).result(timeout=60)
    with pytest.raises(RuntimeError, match="must be picklable"):
        pool.submit(lambda: 1).result(timeout=60)


def test_shutdown_stops_every_worker_and_is_idempotent():
    pool = WorkerPool(workers=2)
    assert pool.submit(square, 2).result(timeout=60) == 4
    pids = pool.pids()
    assert len(pids) == 2
    pool.shutdown()
    assert wait_until(lambda: not any(alive(p) for p in pids), 5)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(square, 1)


def test_a_failing_initializer_fails_fast():
    pool = WorkerPool(workers=1, initializer=broken_initializer)
    future = pool.submit(square, 2)
    with pytest.raises(BrokenWorkerPool, match="died at start"):
        future.result(timeout=60)
    with pytest.raises(BrokenWorkerPool):
        pool.submit(square, 2)
    pool.shutdown()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"workers": 0}, "workers"),
        ({"workers": 1.5}, "workers"),
        ({"context": "thread"}, "context"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        WorkerPool(**kwargs)


DRIVER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from dsbo.runtime.executors import WorkerPool
    from test_executors import pid_then_sleep, square

    if __name__ == "__main__":
        pool = WorkerPool(workers=2)
        pool.submit(square, 1).result()
        futures = [pool.submit(pid_then_sleep, 120) for _ in range(2)]
        time.sleep(0.5)
        print(" ".join(map(str, pool.pids())), flush=True)
        time.sleep(120)
    """
)


def test_no_orphans_after_the_driver_is_killed(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tests=os.path.dirname(__file__)))
    driver = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in driver.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids), "busy workers"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        assert wait_until(lambda: not any(alive(p) for p in pids), 5), (
            "workers die with their driver"
        )
    finally:
        if driver.poll() is None:
            driver.kill()
