"""Shared test settings: small, fast acquisition optimization; float64 by default."""

import textwrap

import pytest
import torch

from dsbo.acquisition import OptimizerSettings

torch.set_default_dtype(torch.float64)
# Small BO problems run several times faster on one intra-op thread on a loaded 2-core box.
torch.set_num_threads(1)


@pytest.fixture
def fast_optimizer() -> OptimizerSettings:
    """Acquisition optimizer settings small enough for a test to take a second."""
    return OptimizerSettings(
        num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32
    )


SLOW_CAMPAIGN = textwrap.dedent(
    """
    import sys, time
    import torch
    torch.set_num_threads(1)
    from dsbo.acquisition import OptimizerSettings
    from dsbo.campaign import Campaign
    from dsbo.problems import get_problem

    store, budget, n_init, q, seed = sys.argv[1], *map(int, sys.argv[2:6])
    problem = get_problem("branin")

    def slow(x):
        time.sleep(0.15)
        return problem(x)

    opt = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)
    campaign = Campaign(problem, surrogate="gp", budget=budget, n_init=n_init, q=q, seed=seed,
                        store=store, evaluator=slow, optimizer=opt)
    print("running", flush=True)
    campaign.run()
    """
)


@pytest.fixture
def slow_campaign_script(tmp_path):
    """A script running a GP campaign on Branin with a 0.15 s evaluator, to be killed or
    contended: ``python script STORE BUDGET N_INIT Q SEED``; prints ``running`` once its
    campaign holds the store."""
    script = tmp_path / "slow_campaign.py"
    script.write_text(SLOW_CAMPAIGN)
    return script
