"""SimpleSMB / PosteriorSMB (Paria thesis Alg. 3.2 / 3.3): loss, noise, init, delta."""

import copy
import math

import pytest
import pytorch_lightning as pl
import torch
from zoo_helpers import fit

from dsbo_zoo.smb import PosteriorSMB, SimpleSMB


def data(n=5, d=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g)
    return x, torch.sin(4 * x).sum(-1)


def spread_data(n=5, d=3):
    """Points spread over [-1, 1]^3: a well-conditioned kernel matrix, so about a thousand Adam
    steps interpolate."""
    g = torch.Generator().manual_seed(1)
    x = 2 * torch.rand(n, d, generator=g) - 1
    return x, torch.sin(3 * x).sum(-1)


def test_noiseless_simple_smb_interpolates_the_data():
    torch.manual_seed(0)
    x, y = spread_data()
    smb = fit(SimpleSMB(3, num_samples=2, width=128, lr=1e-2), x, y, epochs=1000)
    assert smb(x).shape == (2, 5)
    torch.testing.assert_close(smb(x).detach(), y.expand(2, -1), atol=1e-3, rtol=0)


def _spread_after_refit(warm_start: bool) -> float:
    """Fit once, then refit two copies under different seeds on the same data; return the
    largest gap between the two refits at held-out points."""
    x, y = data()
    x_test = torch.linspace(-1.0, 2.0, 25).unsqueeze(-1)
    torch.manual_seed(0)
    first = fit(SimpleSMB(1, width=64, lr=1e-2, warm_start=warm_start), x, y, epochs=150)
    refits = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        refits.append(fit(copy.deepcopy(first), x, y, epochs=150)(x_test).detach())
    return float((refits[0] - refits[1]).abs().max())


def test_fresh_init_spreads_and_warm_start_collapses_the_spread():
    fresh, warm = _spread_after_refit(False), _spread_after_refit(True)
    assert fresh > 0.3
    assert warm < 0.05 * fresh


def test_every_fit_draws_a_new_theta0_unless_warm_started():
    x, y = data()
    smb = SimpleSMB(1, width=16)
    fit(smb, x, y, epochs=2)
    first = smb.theta0()["weights.0"].clone()
    fit(smb, x, y, epochs=2)
    assert not torch.equal(first, smb.theta0()["weights.0"])
    warm = fit(SimpleSMB(1, width=16, warm_start=True), x, y, epochs=3)
    before = warm.net.weights[0].detach().clone()
    fit(warm, x, y, epochs=1)
    # the second fit starts at the previous weights: theta_0 is where the first fit ended
    torch.testing.assert_close(warm.theta0()["weights.0"], before)


class RecordEps(pl.Callback):
    def __init__(self):
        self.eps = []

    def on_train_epoch_end(self, trainer, module):
        self.eps.append(module.eps.clone())


def test_target_noise_is_fixed_across_epochs_and_minibatches_and_redrawn_per_fit():
    torch.manual_seed(0)
    x, y = data(n=6)
    smb = SimpleSMB(1, num_samples=3, width=16, noise_var=0.5)
    record = RecordEps()
    fit(smb, x, y, epochs=4, batch_size=2, shuffle=True, callbacks=[record])
    assert record.eps[0].shape == (3, 6)
    assert all(torch.equal(e, record.eps[0]) for e in record.eps)
    assert 0.2 < record.eps[0].var() < 1.2  # N(0, 0.5)
    fit(smb, x, y, epochs=1, callbacks=[record])
    assert not torch.equal(record.eps[-1], record.eps[0])


def test_noiseless_fit_has_no_target_noise():
    x, y = data()
    smb = fit(SimpleSMB(1, num_samples=2, width=8), x, y, epochs=1)
    assert torch.equal(smb.eps, torch.zeros(2, 5))


def test_loss_is_a_sum_over_points_and_members_plus_the_penalty():
    torch.manual_seed(0)
    x, y = data(n=4)
    smb = SimpleSMB(1, num_samples=2, width=8, noise_var=0.3, nu=1.7)
    smb.reinitialize()
    smb.eps = torch.randn(2, 4)
    smb._num_train = 4
    with torch.no_grad():
        for w in smb.net.parameters():
            w.add_(0.1 * torch.randn_like(w))
    index = torch.arange(4)
    target = y + 1.7 * smb.eps
    expected = (target - 1.7 * smb.net(x)).pow(2).sum()
    penalty = sum((p - smb.theta0()[n]).pow(2).sum() for n, p in smb.net.named_parameters())
    expected = expected + 0.3 * 1.7**2 * penalty
    torch.testing.assert_close(smb.loss(x, y, index), expected)
    # minibatches weight the penalty by their share: one epoch sums to the full loss
    halves = smb.loss(x[:2], y[:2], index[:2]) + smb.loss(x[2:], y[2:], index[2:])
    torch.testing.assert_close(halves, expected)


def test_delta_equals_its_chain_rule_closed_form_for_one_hidden_layer():
    torch.manual_seed(0)
    smb = PosteriorSMB(2, num_samples=3, width=16, gamma=1.4, final_bias="random")
    smb.reinitialize()
    x = torch.rand(5, 2)
    th, tt = smb.theta0(), smb.theta_tilde()
    assert torch.equal(tt["weights.1"], torch.zeros(3, 1, 16))
    assert torch.equal(tt["biases.1"], torch.zeros(3, 1))
    sw = sb = 1.4
    # f = sw/sqrt(16) W1 tanh(sw/sqrt(2) W0 x + sb b0) + sb b1; the last layer's tangent is 0
    pre = (
        sw / math.sqrt(2) * torch.einsum("mhi,ni->mnh", th["weights.0"], x)
        + sb * th["biases.0"][:, None]
    )
    dpre = (
        sw / math.sqrt(2) * torch.einsum("mhi,ni->mnh", tt["weights.0"], x)
        + sb * tt["biases.0"][:, None]
    )
    closed = (
        sw
        / 4
        * torch.einsum("mh,mnh->mn", th["weights.1"][:, 0], (1 - torch.tanh(pre) ** 2) * dpre)
    )
    torch.testing.assert_close(smb.delta(x), closed)
    # the surrogate adds delta before scaling by nu, and stays differentiable in x
    smb.nu = 2.0
    xg = x.clone().requires_grad_(True)
    out = smb(xg)
    torch.testing.assert_close(out.detach(), 2.0 * (smb.net(x) + closed).detach())
    out.sum().backward()
    assert torch.isfinite(xg.grad).all() and xg.grad.abs().sum() > 0


def test_posterior_smb_trains_against_delta():
    torch.manual_seed(0)
    x, y = spread_data()
    smb = fit(PosteriorSMB(3, num_samples=2, width=128, lr=1e-2), x, y, epochs=1000)
    torch.testing.assert_close(smb(x).detach(), y.expand(2, -1), atol=1e-3, rtol=0)
    assert smb.delta(x).abs().max() > 1e-2  # the fit is not just f: delta is part of it


def test_sgd_trains_300_members_in_float64_in_one_module():
    torch.manual_seed(0)
    x, y = data(n=4, d=2)
    smb = PosteriorSMB(
        2, num_samples=300, width=32, optimizer="sgd", lr=1e-3, noise_var=0.1
    ).double()
    assert isinstance(smb.configure_optimizers(), torch.optim.SGD)
    smb.reinitialize()
    smb.eps, smb._num_train = torch.zeros(300, 4), 4
    before = float(smb.loss(x, y, torch.arange(4)).detach())
    fit(smb, x, y, epochs=30)
    out = smb(x)
    assert out.shape == (300, 4) and out.dtype == torch.float64
    smb._delta_train = None
    assert float(smb.loss(x, y, torch.arange(4)).detach()) < before


@pytest.mark.parametrize(
    "field, value",
    [
        ("num_samples", 0),
        ("noise_var", -1.0),
        ("nu", 0.0),
        ("lr", -1e-3),
        ("optimizer", "lbfgs"),
        ("warm_start", "yes"),
        ("width", 0),
        ("activation", "gelu"),
    ],
)
def test_bad_arguments_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SimpleSMB(2, **{field: value})
