"""Parallel trials (dsbo.runtime.parallel): workers sharing a PostgreSQL campaign reach exactly the
budget without duplicates, a SIGKILLed worker's trial is retried after its lease, and an
executor keeps several trials in flight on a SQLite store."""

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from parallel_helpers import SlowBranin, campaign_kwargs, most_at_once
from pg_helpers import postgres_server, postgres_url  # noqa: F401 - fixtures

from dsbo.campaign import Campaign
from dsbo.errors import ConfigError, StoreMismatchError
from dsbo.problems import get_problem
from dsbo.storage import open_store

TESTS = Path(__file__).resolve().parent


class Worker:
    """A worker process forked from the test (it shares the imported modules, so it starts in
    a blink); ``report`` is what it printed, ``returncode`` its exit status."""

    def __init__(self, url, seconds, lease, budget, ready, go, out):
        import multiprocessing

        self.out = out
        self.process = multiprocessing.get_context("fork").Process(
            target=_work,
            args=(url, seconds, lease, budget, str(ready), str(go), str(out)),
            daemon=True,
        )
        self.process.start()

    def wait(self, timeout):
        self.process.join(timeout)
        return self.process.exitcode

    def kill(self):
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.join(10)


def _work(url, seconds, lease, budget, ready, go, out):
    import contextlib
    import io

    from parallel_helpers import work

    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            work(url, seconds, lease, budget, ready, go)
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        Path(out).write_text(json.dumps({"error": repr(exc)}))
        os._exit(1)
    Path(out).write_text(buffer.getvalue().strip().splitlines()[-1])
    os._exit(0)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_four_workers_reach_exactly_the_budget_without_duplicates(postgres_url, tmp_path):  # noqa: F811
    budget, go = 10, tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(4)]
    workers = [
        Worker(postgres_url, 0.3, 30.0, budget, r, go, tmp_path / f"out-{i}")
        for i, r in enumerate(ready)
    ]
    try:
        wait_for(lambda: all(r.exists() for r in ready), 60, "4 workers to start")
        go.touch()  # all four begin at once
        codes = [w.wait(240) for w in workers]
    finally:
        for w in workers:
            w.kill()
    reports = [json.loads(w.out.read_text()) for w in workers]
    assert codes == [0, 0, 0, 0], reports
    with open_store(postgres_url) as store:
        trials = store.trials()
    assert len(trials) == budget and all(t.status == "completed" for t in trials), (
        "exactly the budget"
    )
    assert sorted(t.id for t in trials) == list(range(1, budget + 1)), "ids never collide or skip"
    assert len({tuple(t.x) for t in trials}) == budget, "no point proposed twice"
    by_worker = [set(r["trials"]) for r in reports]
    assert sum(map(len, by_worker)) == budget and set().union(*by_worker) == {t.id for t in trials}
    assert sum(1 for s in by_worker if s) >= 3, f"the workers shared the work: {by_worker}"
    assert [t.generator for t in trials[:4]] == ["sobol-init"] * 4 and len(
        {t.batch for t in trials}
    ) == budget


def test_a_sigkilled_worker_trial_is_retried_after_its_lease(postgres_url, tmp_path):  # noqa: F811
    go = tmp_path / "go"
    go.touch()
    victim = Worker(
        postgres_url, 600.0, 1.0, 4, tmp_path / "ready", go, tmp_path / "out"
    )  # each evaluation hangs
    try:
        wait_for(lambda: (tmp_path / "ready").exists(), 120, "the worker to start")
        store = open_store(postgres_url)
        wait_for(lambda: store.count("pending") == 1, 60, "the worker's first trial")
        time.sleep(0.6)  # it is evaluating (and renewing its lease)
        os.kill(victim.process.pid, signal.SIGKILL)
        assert victim.wait(30) == -signal.SIGKILL
    finally:
        victim.kill()
    [orphan] = store.trials("pending")
    assert orphan.worker == (tmp_path / "ready").read_text()

    survivor = Campaign(get_problem("branin"), **campaign_kwargs(postgres_url, 0.01, 1.0, 4))
    start = time.monotonic()
    result = survivor.run()
    trials = store.trials()
    assert result.num_completed == 4 and len(trials) == 4 and store.count("pending") == 0
    retried = store.get(orphan.id)
    assert retried.status == "completed" and retried.x == orphan.x, (
        "the same point, evaluated once more"
    )
    assert retried.worker == survivor.worker and retried.metadata["lease_retries"] == 1
    assert retried.metadata["lease_lost_by"] == [orphan.worker]
    assert time.monotonic() - start < 30
    store.close()


def test_lease_retries_are_bounded_then_the_trial_fails(postgres_url):  # noqa: F811
    store = open_store(postgres_url)
    campaign = Campaign(
        get_problem("branin"),
        **dict(campaign_kwargs(postgres_url, 0.0, 0.2, 3), store=store, n_init=2),
        worker_retries=0,
    )
    [trial] = store.add_trials([[1.0, 2.0]], "sobol-init", worker="dead-worker", budget=3)
    time.sleep(0.3)
    result = campaign.run()  # claimed once (lease_retries 1 > worker_retries 0): a failed trial
    failed = store.get(trial)
    assert failed.status == "failed" and "stopped renewing their lease" in failed.error
    assert result.num_completed == 2 and store.count() == 3


def test_the_heartbeat_renews_leases_and_survives_a_dropped_connection(postgres_url):  # noqa: F811
    import psycopg

    from dsbo.runtime.parallel import Heartbeat

    store = open_store(postgres_url)
    [tid] = store.add_trials([[1.0, 2.0]], "sobol-init", worker="me")
    beat = Heartbeat(store, "me", interval=0.1)
    try:
        wait_for(lambda: beat.beats >= 2, 10, "two heartbeats")
        with psycopg.connect(
            postgres_url, autocommit=True
        ) as admin:  # the server drops the connection
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
                (store._conn.info.backend_pid,),
            )
        before = beat.beats
        wait_for(lambda: beat.beats >= before + 2, 10, "heartbeats after a reconnect")
        first = store.get(tid).heartbeat_at
        wait_for(lambda: store.get(tid).heartbeat_at > first, 10, "a renewed lease")
    finally:
        beat.stop()
    assert store.expired(lease=5.0) == []
    store.close()


def test_workers_of_one_campaign_share_one_lease(postgres_url):  # noqa: F811
    Campaign(
        get_problem("branin"), **dict(campaign_kwargs(postgres_url, 0.0, 5.0, 2), n_init=2)
    ).run()
    late = Campaign(
        get_problem("branin"), **dict(campaign_kwargs(postgres_url, 0.0, 9.0, 2), n_init=2)
    )
    with pytest.raises(ConfigError, match="the campaign's workers use lease=5 s"):
        late.run()


def test_an_executor_keeps_trials_in_flight_on_a_sqlite_store(tmp_path):
    with ThreadPoolExecutor(3) as pool:
        kwargs = campaign_kwargs(str(tmp_path / "t.sqlite"), 0.3, 60.0, 9)
        campaign = Campaign(get_problem("branin"), **kwargs, executor=pool, parallel=3)
        result = campaign.run()
    trials = campaign.store.trials()
    assert result.num_completed == 9 and len(trials) == 9, "exactly the budget"
    assert len({tuple(t.x) for t in trials}) == 9
    assert most_at_once() == 3, "three evaluations ran at once"
    assert len(campaign.timings) == 9 and all(t["evaluate"] >= 0.3 for t in campaign.timings)
    with pytest.raises(ConfigError, match="need an executor"):
        Campaign(get_problem("branin"), surrogate="gp", parallel=2, dry_run=False)


def test_a_hung_trial_times_out_while_the_others_go_on(tmp_path):
    from parallel_helpers import HangsOnce

    with ThreadPoolExecutor(2) as pool:
        kwargs = dict(
            campaign_kwargs(str(tmp_path / "t.sqlite"), 0.0, 60.0, 6), evaluator=HangsOnce(2.0)
        )
        campaign = Campaign(
            get_problem("branin"), **kwargs, executor=pool, parallel=2, eval_timeout=0.5
        )
        result = campaign.run()
    [hung] = campaign.store.trials("failed")
    assert "EvaluationTimeout" in hung.error and "eval_timeout=0.5" in hung.error and hung.id == 1
    assert result.num_completed == 5 and campaign.store.count() == 6, "the budget is spent exactly"


def test_parallel_resume_retries_the_trials_a_crash_left_pending(tmp_path):
    path = tmp_path / "t.sqlite"
    first = Campaign(get_problem("branin"), **campaign_kwargs(str(path), 0.0, 60.0, 6))
    left = first.ask(q=2)
    first.store.close()  # "crashed" with two trials pending
    with ThreadPoolExecutor(2) as pool:
        again = Campaign(
            get_problem("branin"),
            **campaign_kwargs(str(path), 0.0, 60.0, 6),
            executor=pool,
            parallel=2,
        )
        again.run()
    assert [again.store.get(t.id).status for t in left] == ["completed"] * 2
    assert again.store.count("completed") == 6 and again.store.count() == 6


def test_a_store_of_another_search_space_is_refused(postgres_url):  # noqa: F811
    def box(high):
        return get_problem("black-box", parameters={"a": [0.0, 1.0], "b": [0.0, high]})

    Campaign(box(1.0), surrogate="gp", store=postgres_url, dry_run=False).store.close()
    with pytest.raises(StoreMismatchError, match="differs in bounds"):
        Campaign(box(2.0), surrogate="gp", store=postgres_url, dry_run=False)
    with pytest.raises(StoreMismatchError, match="differs in problem"):
        Campaign(get_problem("branin"), surrogate="gp", store=postgres_url, dry_run=False)


def test_slow_branin_is_branin():
    assert float(SlowBranin(0.0)([1.0, 2.0])) == float(get_problem("branin")([1.0, 2.0]))
