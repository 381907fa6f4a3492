"""OptimizerSettings: L-BFGS-B (BoTorch's default) and the thesis' gradient-descent optimizer."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from dsbo.acquisition.base import OptimizerSettings
from dsbo.errors import ConfigError


class CountingQuadratic(AcquisitionFunction):
    """a(x) = -||x - c||^2 (q = 1), counting how many times it is evaluated."""

    def __init__(self, center: torch.Tensor) -> None:
        torch.nn.Module.__init__(self)
        self.center = center
        self.calls = 0

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return -((X.squeeze(-2) - self.center) ** 2).sum(-1)


BOUNDS = torch.tensor([[-5.0, 0.0], [10.0, 15.0]], dtype=torch.double)
CENTER = torch.tensor([2.0, 3.0], dtype=torch.double)


@pytest.mark.parametrize(
    "settings",
    [
        OptimizerSettings(num_restarts=2, raw_samples=16),
        OptimizerSettings.thesis(),
        OptimizerSettings(method="adam", lr=0.1, maxiter=300, initial="uniform", num_restarts=3),
    ],
)
def test_every_method_finds_the_maximum_of_a_quadratic(settings):
    X, value = settings.maximize(CountingQuadratic(CENTER), BOUNDS, q=1, seed=0)
    assert torch.allclose(X.reshape(-1), CENTER, atol=1e-2)
    assert float(value) > -1e-3


def test_gradient_methods_take_exactly_maxiter_steps_from_uniform_starts():
    acqf = CountingQuadratic(CENTER)
    settings = OptimizerSettings.thesis(maxiter=37)
    settings.maximize(acqf, BOUNDS, q=1, seed=0)
    # one evaluation per step, one for the final values (no early stop, no raw-sample scoring)
    assert acqf.calls == 37 + 1


def test_uniform_starts_are_seeded_and_respect_fixed_features():
    settings = OptimizerSettings.thesis(maxiter=1, fixed_features={1: 7.0})
    a, _ = settings.maximize(CountingQuadratic(CENTER), BOUNDS, q=1, seed=3, return_best_only=False)
    b, _ = settings.maximize(CountingQuadratic(CENTER), BOUNDS, q=1, seed=3, return_best_only=False)
    assert a.shape == (10, 1, 2)
    assert torch.equal(a, b)
    assert torch.all(a[..., 1] == 7.0)


def test_thesis_preset_is_the_papers_optimizer():
    t = OptimizerSettings.thesis()
    assert (t.num_restarts, t.maxiter, t.method, t.lr, t.initial) == (
        10,
        500,
        "sgd",
        0.01,
        "uniform",
    )


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("method", "newton", "acquisition.method='newton'"),
        ("initial", "grid", "acquisition.initial='grid'"),
        ("lr", 0.0, "acquisition.lr must be"),
        ("lr", float("nan"), "acquisition.lr must be"),
    ],
)
def test_bad_settings_are_named(field, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        OptimizerSettings(**{field: value}).validate()
