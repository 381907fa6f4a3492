"""NeuralLinTS: the BLR head equals its closed form; training fits it; gradients in x."""

import pytest
import torch
from zoo_helpers import fit

from dsbo_zoo.neural_lints import NeuralLinTS


def test_blr_posterior_equals_the_kernel_form_closed_form():
    torch.manual_seed(0)
    lints = NeuralLinTS(2, width=12, prior_var=10.0, noise_var=0.1)
    x, y = torch.rand(7, 2), torch.randn(7)
    lints.fit_posterior(x, y)
    xs = torch.rand(3, 4, 2)
    mean, cov = lints.predict_mean_cov(xs)
    # weight space vs function space: g ~ GP(0, prior_var phi^T phi'), noise noise_var
    phi, phis = lints.features(x), lints.features(xs)
    k = 10.0 * phi @ phi.T + 0.1 * torch.eye(7)
    kxs = 10.0 * phis @ phi.T  # 3 x 4 x 7
    mean_gp = kxs @ torch.linalg.solve(k, y)
    cov_gp = 10.0 * phis @ phis.transpose(-1, -2) - kxs @ torch.linalg.solve(
        k, kxs.transpose(-1, -2)
    )
    torch.testing.assert_close(mean, mean_gp)
    torch.testing.assert_close(cov, cov_gp)
    # and the weight-space formulas of the docstring
    sigma = torch.linalg.inv(phi.T @ phi / 0.1 + torch.eye(12) / 10.0)
    torch.testing.assert_close(lints.blr_mean, sigma @ phi.T @ y / 0.1)


def test_fit_trains_the_network_then_the_head_and_is_differentiable_in_x():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = 2 * torch.rand(8, 2, generator=g) - 1
    y = torch.sin(3 * x).sum(-1)
    lints = fit(
        NeuralLinTS(2, width=32, lr=1e-2, noise_var=1e-3, prior_var=1000.0), x, y, epochs=300
    )
    assert float(lints.train_mse) < 0.05
    mean, cov = lints.predict_mean_cov(x.unsqueeze(1))
    assert (mean.squeeze(-1) - y).abs().max() < 0.1
    xq = torch.rand(2, 3, 2, requires_grad=True)
    mean, cov = lints.predict_mean_cov(xq)
    assert mean.shape == (2, 3) and cov.shape == (2, 3, 3)
    assert torch.linalg.eigvalsh(cov).min() > -1e-10
    (mean.sum() + cov.diagonal(dim1=-2, dim2=-1).sum()).backward()
    assert torch.isfinite(xq.grad).all() and xq.grad.abs().sum() > 0


def test_blr_buffers_stay_float64_when_the_network_is_float32():
    lints = NeuralLinTS(2, width=8).float()
    assert (
        lints.net.weights[0].dtype == torch.float32
        and lints.blr_precision_chol.dtype == torch.float64
    )
    lints.fit_posterior(torch.rand(5, 2, dtype=torch.float32), torch.randn(5, dtype=torch.float32))
    mean, cov = lints.predict_mean_cov(torch.rand(1, 2, 2))
    assert mean.dtype == cov.dtype == torch.float64


@pytest.mark.parametrize(
    "field, value", [("prior_var", 0.0), ("noise_var", -1.0), ("depth", 0), ("optimizer", "x")]
)
def test_bad_arguments_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        NeuralLinTS(2, **{field: value})
