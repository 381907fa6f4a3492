"""A campaign killed with SIGKILL mid-run resumes with nothing lost and nothing doubled."""

import os
import signal
import subprocess
import sys
import time

import torch

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.problems import get_problem
from dsbo.storage import TrialStore

BUDGET = 12


def test_sigkill_mid_run_then_resume(tmp_path, slow_campaign_script):
    store_path = tmp_path / "trials.sqlite"
    proc = subprocess.Popen(
        [sys.executable, str(slow_campaign_script), str(store_path), str(BUDGET), "4", "2", "7"]
    )
    try:
        deadline = time.time() + 120
        completed = 0
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if store_path.exists():
                with TrialStore(store_path, lock=False) as probe:
                    completed = probe.count("completed")
                if completed >= 5:
                    break
        assert proc.poll() is None, "the campaign ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)

    with TrialStore(store_path) as store:  # the kill released the writer lock
        before = {t.id: (t.x, t.y) for t in store.trials("completed")}
        assert 5 <= len(before) < BUDGET, "killed mid-run"

    problem = get_problem("branin")
    opt = OptimizerSettings(
        num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
    )
    campaign = Campaign(
        problem,
        surrogate="gp",
        budget=BUDGET,
        n_init=4,
        q=2,
        seed=7,
        store=TrialStore(store_path),
        optimizer=opt,
    )
    campaign.run()
    trials = campaign.store.trials()
    completed = [t for t in trials if t.status == "completed"]
    assert len(completed) == BUDGET, "the budget is reached exactly"
    assert len(trials) == BUDGET and not campaign.store.count(("pending", "failed"))
    # every trial completed before the kill is kept, unchanged, once
    for tid, (x, y) in before.items():
        assert (campaign.store.get(tid).x, campaign.store.get(tid).y) == (x, y)
    assert len({tuple(t.x) for t in completed}) == BUDGET, "no point was recorded twice"
    # the recorded outcome of each point is the problem's value there
    X = torch.tensor([t.x for t in completed])
    Y = torch.tensor([t.y for t in completed])
    assert torch.allclose(problem.evaluate_true(X), Y)
