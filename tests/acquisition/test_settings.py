"""OptimizerSettings.maximize: how the raw points are scored and the restarts batched."""

import torch
from botorch.acquisition import LogExpectedImprovement
from botorch.models import SingleTaskGP

from dsbo.acquisition import OptimizerSettings


class CountingEI(LogExpectedImprovement):
    """LogEI that counts its calls without gradients (the raw points' scoring)."""

    calls = 0

    def forward(self, X):
        if not torch.is_grad_enabled():
            type(self).calls += 1
        return super().forward(X)


def _acqf():
    torch.manual_seed(0)
    X = torch.rand(12, 3)
    model = SingleTaskGP(X, (X - 0.3).pow(2).sum(-1, keepdim=True).neg())
    return CountingEI(model, best_f=model.train_targets.max())


def test_raw_points_are_scored_in_a_few_large_batches_not_batch_limit_at_a_time():
    acqf = _acqf()
    CountingEI.calls = 0
    OptimizerSettings(raw_samples=512, num_restarts=4, batch_limit=2, maxiter=20).maximize(
        acqf, torch.tensor([[0.0] * 3, [1.0] * 3]), q=1, seed=0
    )
    # 512 raw points at batch_limit=2 per call would be 256 calls
    assert 1 <= CountingEI.calls <= 4


def test_batch_limit_changes_the_speed_not_the_optimum():
    """BoTorch's batched L-BFGS-B keeps every restart its own problem."""
    bounds = torch.tensor([[0.0] * 3, [1.0] * 3])
    found = [
        OptimizerSettings(raw_samples=64, num_restarts=6, batch_limit=limit).maximize(
            _acqf(), bounds, q=1, seed=3
        )
        for limit in (1, 3, 6)
    ]
    for X, value in found[1:]:
        torch.testing.assert_close(X, found[0][0], atol=1e-6, rtol=0)
        torch.testing.assert_close(value, found[0][1], atol=1e-8, rtol=1e-8)
