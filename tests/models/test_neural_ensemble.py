"""NeuralEnsemble: members, MSE fit, warm start across fits."""

import pytest
import torch
from zoo_helpers import fit

from dsbo_zoo.neural_ensemble import NeuralEnsemble


def data():
    g = torch.Generator().manual_seed(0)
    x = 2 * torch.rand(6, 2, generator=g) - 1
    return x, torch.sin(3 * x).sum(-1)


def test_defaults_follow_the_thesis_and_members_differ():
    ens = NeuralEnsemble(3)
    assert (ens.num_members, ens.net.width, ens.net.depth) == (10, 1000, 1)
    assert ens.net.parameterization == "standard" and ens.warm_start
    out = ens(torch.rand(7, 3))
    assert out.shape == (10, 7) and out.std(0).min() > 0


def test_mse_training_fits_every_member():
    torch.manual_seed(0)
    x, y = data()
    ens = fit(NeuralEnsemble(2, num_members=3, width=64, lr=1e-2), x, y, epochs=400)
    assert float(ens.train_mse) < 1e-3
    assert ((ens(x) - y) ** 2).mean(-1).max() < 1e-3


def test_warm_start_continues_and_cold_start_reinitializes():
    torch.manual_seed(0)
    x, y = data()
    warm = fit(NeuralEnsemble(2, num_members=2, width=16), x, y, epochs=2)
    after_first = [p.detach().clone() for p in warm.parameters()]
    fit(warm, x, y, epochs=1)
    # one more Adam step of size ~lr from where the first fit ended
    for p, p0 in zip(warm.parameters(), after_first, strict=True):
        assert (p.detach() - p0).abs().max() < 2e-3
    cold = fit(NeuralEnsemble(2, num_members=2, width=16, warm_start=False), x, y, epochs=2)
    before = cold.net.weights[0].detach().clone()
    fit(cold, x, y, epochs=1)
    assert (cold.net.weights[0].detach() - before).abs().max() > 0.1


@pytest.mark.parametrize(
    "field, value", [("lr", 0.0), ("optimizer", "rmsprop"), ("num_members", 0), ("warm_start", 1)]
)
def test_bad_arguments_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        NeuralEnsemble(2, **{field: value})
