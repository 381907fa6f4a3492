"""NeuralUCB: covariance = scale^2 g^T Z^-1 g / m, regularized loss, gradients in x."""

import pytest
import torch
from zoo_helpers import fit

from dsbo_zoo.neural_ucb import NeuralUCB


def per_point_gradients(ucb, x):
    rows = []
    for point in x:
        out = ucb(point.unsqueeze(0)).squeeze()
        grads = torch.autograd.grad(out, list(ucb.net.parameters()))
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows)


def test_defaults_follow_zhou_et_al_and_the_thesis():
    ucb = NeuralUCB(3)
    assert (ucb.net.width, ucb.net.depth) == (20, 2)
    assert ucb.num_params == 3 * 20 + 20 + 20 * 20 + 20 + 20 + 1


def test_covariance_is_scaled_g_z_inverse_g_over_m():
    torch.manual_seed(0)
    ucb = NeuralUCB(2, width=6, reg_lambda=0.05, confidence_scale=0.7)
    x_train, xs = torch.rand(9, 2), torch.rand(3, 4, 2)
    ucb.fit_design(x_train)
    g = per_point_gradients(ucb, x_train)
    z = 0.05 * torch.eye(ucb.num_params) + g.T @ g / 6
    gs = per_point_gradients(ucb, xs.reshape(-1, 2)).reshape(3, 4, -1)
    expected = 0.7**2 * gs @ torch.linalg.solve(z, gs.transpose(-1, -2)) / 6
    mean, cov = ucb.predict_mean_cov(xs)
    torch.testing.assert_close(cov, expected)
    torch.testing.assert_close(mean, ucb(xs.reshape(-1, 2)).reshape(3, 4))
    torch.testing.assert_close(ucb.gradient_features(xs), gs)


def test_loss_penalizes_the_distance_to_init_with_m_lambda():
    torch.manual_seed(0)
    x = torch.rand(5, 2)
    y = torch.sin(3 * x).sum(-1)
    ucb = fit(NeuralUCB(2, width=8, reg_lambda=0.5, lr=1e-2), x, y, epochs=20)
    distance = ucb.net.squared_distance(ucb.theta0()).sum()
    assert distance > 0
    loss = ucb.loss(x, y, torch.arange(5))
    torch.testing.assert_close(loss, (ucb(x) - y).pow(2).sum() + 8 * 0.5 * distance)


def test_training_fits_and_the_posterior_is_differentiable_in_x():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = 2 * torch.rand(8, 2, generator=g) - 1
    y = torch.sin(2 * x).sum(-1)
    ucb = fit(NeuralUCB(2, lr=1e-2, reg_lambda=1e-4), x, y, epochs=300)
    assert float(ucb.train_mse) < 0.05
    xq = torch.rand(2, 3, 2, requires_grad=True)
    mean, cov = ucb.predict_mean_cov(xq)
    assert torch.linalg.eigvalsh(cov).min() > -1e-10
    (mean.sum() + cov.diagonal(dim1=-2, dim2=-1).sqrt().sum()).backward()
    assert torch.isfinite(xq.grad).all() and xq.grad.abs().sum() > 0
    # the confidence width is small at training points and larger far away
    _, cov_train = ucb.predict_mean_cov(x.unsqueeze(0))
    _, cov_far = ucb.predict_mean_cov(torch.full((1, 1, 2), 3.0))
    assert cov_far[0, 0, 0] > cov_train[0].diagonal().max()


@pytest.mark.parametrize(
    "field, value", [("reg_lambda", 0.0), ("confidence_scale", -1.0), ("lr", True)]
)
def test_bad_arguments_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        NeuralUCB(2, **{field: value})
