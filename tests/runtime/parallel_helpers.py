"""Workers for the parallel-trial tests: a slow Branin, and a worker process's main."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from dsbo.acquisition import OptimizerSettings
from dsbo.problems import get_problem

FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)


class SlowBranin:
    """Branin that takes ``seconds`` per evaluation (picklable), and counts how many of its
    evaluations overlap in this process."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.problem = get_problem("branin")

    def __call__(self, x):
        with _LOCK:
            _RUNNING[0] += 1
            _RUNNING[1] = max(_RUNNING[1], _RUNNING[0])
        try:
            time.sleep(self.seconds)
            return self.problem(x)
        finally:
            with _LOCK:
                _RUNNING[0] -= 1


_LOCK = threading.Lock()
_RUNNING = [0, 0]  # now, most at once


def most_at_once() -> int:
    return _RUNNING[1]


def campaign_kwargs(url: str, seconds: float, lease: float, budget: int) -> dict:
    return dict(
        surrogate="gp",
        budget=budget,
        n_init=4,
        seed=0,
        store=url,
        evaluator=SlowBranin(seconds),
        optimizer=FAST,
        lease=lease,
        dry_run=False,
    )


def work(url: str, seconds: float, lease: float, budget: int, ready: str, go: str) -> None:
    """A worker process: announce itself, wait for the go signal, run the shared campaign,
    print its worker id and the trials it evaluated."""
    import torch

    from dsbo.campaign import Campaign

    torch.set_num_threads(1)  # a forked worker: no intra-op pool inherited from the parent
    campaign = Campaign(get_problem("branin"), **campaign_kwargs(url, seconds, lease, budget))
    Path(ready).write_text(campaign.worker)
    while not Path(go).exists():
        time.sleep(0.05)
    campaign.run()
    mine = [t.id for t in campaign.store.trials() if t.worker == campaign.worker]
    print(json.dumps({"worker": campaign.worker, "trials": mine}))
    sys.stdout.flush()


class HangsOnce:
    """Branin whose first evaluation in this process hangs for ``seconds`` (a stuck job)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.calls, self.problem = seconds, 0, get_problem("branin")

    def __call__(self, x):
        with _LOCK:
            self.calls += 1
            first = self.calls == 1
        if first:
            time.sleep(self.seconds)
        return self.problem(x)
