"""Shared test settings: small, fast acquisition optimization; float64 by default."""

import pytest
import torch

from dsbo.acquisition import OptimizerSettings

torch.set_default_dtype(torch.float64)
# Small BO problems run several times faster on one intra-op thread on a loaded 2-core box.
torch.set_num_threads(1)


@pytest.fixture
def fast_optimizer() -> OptimizerSettings:
    """Acquisition optimizer settings small enough for a test to take a second."""
    return OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)
