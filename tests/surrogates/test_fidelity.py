"""The multi-fidelity GP over (configuration, step) read at full training (dsbo.surrogates.fidelity)."""

import pytest
import torch

from dsbo.errors import DataError
from dsbo.surrogates.fidelity import TargetFidelityModel, fit_fidelity_gp

BOUNDS = torch.tensor([[0.0, -2.0], [4.0, 2.0]], dtype=torch.double)


def curve(x, steps, max_steps=27):
    """Rising learning curves (maximized): a final value that depends on x, approached as
    1 - exp(-4 s)."""
    final = 1.0 - 0.1 * (x[..., 0] - 2.0) ** 2 - 0.05 * x[..., 1] ** 2
    s = steps / max_steps
    return (final * (1 - torch.exp(-4 * s))).unsqueeze(-1)


def curve_data(configs, last_steps, max_steps=27):
    X, S = [], []
    for x, last in zip(configs, last_steps, strict=True):
        for step in range(1, last + 1):
            X.append(x)
            S.append(float(step))
    X, S = torch.stack(X), torch.tensor(S, dtype=torch.double)
    return X, S, curve(X, S, max_steps)


def test_the_model_reads_the_gp_at_full_training_in_the_unit_cube():
    torch.manual_seed(0)
    configs = torch.tensor([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0], [0.5, 1.5]], dtype=torch.double)
    X, S, Y = curve_data(configs, [27, 9, 27, 3])
    model = fit_fidelity_gp(X, S, Y, BOUNDS, max_steps=27)
    assert isinstance(model, TargetFidelityModel) and model.num_outputs == 1
    Xq = torch.tensor([[[2.0, 0.0]], [[4.0, -2.0]]], dtype=torch.double)
    inner = model.model.posterior(
        torch.tensor([[[0.5, 0.5, 1.0]], [[1.0, 0.0, 1.0]]], dtype=torch.double)
    )
    assert torch.allclose(model.posterior(Xq).mean, inner.mean)
    assert model.posterior(Xq).mean.shape == (2, 1, 1)


def test_a_curve_prefix_predicts_the_final_value_better_than_its_last_value():
    """Trials trained fully teach the GP how curves rise; a trial stopped at a third of its
    steps is then predicted near its true final value, far above its last reported one."""
    torch.manual_seed(0)
    full = torch.tensor(
        [[0.5, -1.0], [1.5, 1.0], [2.5, 0.5], [3.5, -0.5], [2.0, -1.5]], dtype=torch.double
    )
    stopped = torch.tensor([[2.2, 0.2]], dtype=torch.double)
    X, S, Y = curve_data(torch.cat([full, stopped]), [27] * 5 + [9])
    model = fit_fidelity_gp(X, S, Y, BOUNDS, max_steps=27)
    truth = curve(stopped, torch.tensor([27.0], dtype=torch.double)).item()
    last = curve(stopped, torch.tensor([9.0], dtype=torch.double)).item()
    predicted = model.posterior(stopped.unsqueeze(0)).mean.item()
    assert abs(predicted - truth) < 0.25 * abs(truth - last)


@pytest.mark.parametrize(
    "steps, value, match",
    [([30.0, 1.0], 0.0, r"\[0, max_steps=27\]"), ([1.0, 2.0], float("nan"), "finite")],
)
def test_bad_curve_points_are_refused(steps, value, match):
    X = torch.tensor([[1.0, 0.0], [2.0, 0.0]], dtype=torch.double)
    Y = torch.tensor([[0.1], [value]], dtype=torch.double)
    with pytest.raises(DataError, match=match):
        fit_fidelity_gp(X, torch.tensor(steps, dtype=torch.double), Y, BOUNDS, max_steps=27)
    with pytest.raises(DataError, match="at least 2"):
        fit_fidelity_gp(X[:1], torch.tensor([1.0]), Y[:1], BOUNDS, max_steps=27)
