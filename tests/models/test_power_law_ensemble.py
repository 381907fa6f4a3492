"""PowerLawEnsemble: member curves, mixture moments, extrapolation of learning curves, warm start."""

import math

import pytest
import pytorch_lightning as pl
import torch
from zoo_helpers import fit

from dsbo_zoo.learning_curves import CurveLayout
from dsbo_zoo.power_law_ensemble import PowerLawEnsemble


def grid_rows(layout: CurveLayout, x: torch.Tensor) -> torch.Tensor:
    """Rows of every step 1..T of every configuration (configuration-major), no prefix."""
    T, n = layout.max_steps, x.shape[0] * layout.max_steps
    steps = torch.arange(1, T + 1).repeat(x.shape[0])
    return layout.rows(x.repeat_interleave(T, 0), steps, torch.zeros(n, T), torch.zeros(n))


def test_member_curves_end_at_c_are_monotone_and_the_mixture_moments_hold():
    torch.manual_seed(0)
    model = PowerLawEnsemble(2, 10, num_members=4, width=16)
    x = torch.rand(5, 2)
    means, variances = model(grid_rows(model.layout, x))
    means, variances = means.reshape(4, 5, 10), variances.reshape(4, 5, 10)
    c, b, a, log_var = model.curve_parameters(x)
    tau = torch.arange(1, 11) / 10
    expected = c[..., None] + b[..., None] * (tau ** -a[..., None] - 1) / (10 ** a[..., None] - 1)
    torch.testing.assert_close(means, expected)
    torch.testing.assert_close(means[..., -1], c)  # the final value is c
    steps = means.diff(dim=-1)
    assert ((steps >= 0).all(-1) | (steps <= 0).all(-1)).all()  # monotone in t
    torch.testing.assert_close(variances, log_var.exp()[..., None].expand(-1, -1, 10))

    rows = grid_rows(model.layout, x)[:7]
    mean, cov = model.predict_mean_cov(rows)
    mu, var = model(rows)
    centered = mu - mu.mean(0)
    torch.testing.assert_close(mean, mu.mean(0))
    torch.testing.assert_close(cov, centered.T @ centered / 4)  # the noise-free value
    noise = model.noise_variance(rows)
    torch.testing.assert_close(noise, var.mean(0))
    # an observation's variance: the mixture's second moment
    torch.testing.assert_close(cov.diagonal() + noise, (var + mu**2).mean(0) - mean**2)
    assert torch.allclose(cov, cov.T) and torch.linalg.eigvalsh(cov).min() >= -1e-6
    batched_mean, batched_cov = model.predict_mean_cov(torch.stack([rows, rows.flip(0)]))
    assert batched_mean.shape == (2, 7) and batched_cov.shape == (2, 7, 7)
    torch.testing.assert_close(batched_cov[0], cov)


def test_extrapolates_final_values_of_short_curves():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    T, m = 10, 30
    x = torch.rand(m, 2, generator=g)
    c, b, a = torch.sin(3 * x[:, 0]) + x[:, 1], 0.2 + 0.4 * x[:, 0], 0.3 + 0.5 * x[:, 1]
    tau = torch.arange(1, T + 1) / T
    curves = (
        c[:, None] + b[:, None] * (tau ** -a[:, None] - 1) + 0.02 * torch.randn(m, T, generator=g)
    )
    lengths = torch.randint(3, T + 1, (m,), generator=g)
    layout = CurveLayout(2, T)
    rows, y = layout.training_rows(
        x, [curve[:k].tolist() for curve, k in zip(curves, lengths, strict=True)]
    )
    model = fit(PowerLawEnsemble(2, T, width=32), rows, y, epochs=300)

    short = lengths <= 5
    k = int(short.sum())
    assert k >= 5
    final_rows = layout.rows(x[short], torch.full((k,), T), torch.zeros(k, T), torch.zeros(k))
    with torch.no_grad():
        mean, cov = model.predict_mean_cov(final_rows)
        noise = model.noise_variance(final_rows)
    final = curves[short, -1]
    last_seen = curves[short].gather(1, (lengths[short] - 1)[:, None]).squeeze(1)
    error, naive = (mean - final).abs().mean(), (last_seen - final).abs().mean()
    assert error < 0.5 * naive, (error, naive)
    sd = (cov.diagonal() + noise).sqrt()  # of an observed final value
    covered = ((mean - final).abs() <= 1.645 * sd).double().mean()
    assert 0.5 <= covered <= 1.0


class ParametersAtTrainStart(pl.Callback):
    """The weights once the module's ``on_fit_start`` has run."""

    def on_train_start(self, trainer, pl_module):
        self.state = {name: p.detach().clone() for name, p in pl_module.named_parameters()}


@pytest.mark.parametrize("warm_start", [True, False])
def test_warm_start_keeps_weights_and_cold_start_reinitializes(warm_start):
    torch.manual_seed(0)
    layout = CurveLayout(2, 5)
    rows, y = layout.training_rows(torch.rand(4, 2), [[1.0, 0.8, 0.7]] * 4)
    model = fit(
        PowerLawEnsemble(2, 5, num_members=2, width=8, warm_start=warm_start), rows, y, epochs=3
    )
    after_first = {name: p.detach().clone() for name, p in model.named_parameters()}
    seen = ParametersAtTrainStart()
    fit(model, rows, y, epochs=1, callbacks=[seen])
    same = {name: torch.equal(p, seen.state[name]) for name, p in after_first.items()}
    if warm_start:
        assert all(same.values())
    else:  # every trained parameter drawn afresh
        assert not any(
            same[name]
            for name in (
                "head_weight",
                "head_bias",
                "net.weights.0",
                "net.biases.0",
                "net.weights.1",
            )
        )


@pytest.mark.parametrize(
    "field, value",
    [
        ("num_params", 0),
        ("max_steps", 0),
        ("num_members", 0),
        ("width", 0),
        ("depth", -1),
        ("activation", "sigmoid"),
        ("lr", 0.0),
        ("weight_decay", -1.0),
        ("lr", math.nan),
        ("warm_start", 1),
    ],
)
def test_bad_arguments_name_the_field(field, value):
    arguments = {"num_params": 2, "max_steps": 10} | {field: value}
    with pytest.raises(ValueError, match=field):
        PowerLawEnsemble(**arguments)
