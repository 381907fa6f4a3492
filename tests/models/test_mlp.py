"""EnsembleMLP: shapes, parameterizations and the NNGP covariance at initialization."""

import math

import pytest
import torch

from dsbo_zoo.mlp import EnsembleMLP


def test_shapes_follow_members_then_batch():
    net = EnsembleMLP(3, width=16, depth=2, num_members=5)
    assert net(torch.rand(7, 3)).shape == (5, 7)
    assert net(torch.rand(4, 2, 3)).shape == (5, 4, 2)
    assert net.features(torch.rand(7, 3)).shape == (5, 7, 16)


def test_members_are_independent_and_match_a_single_network():
    torch.manual_seed(0)
    net = EnsembleMLP(2, width=8, num_members=3, final_bias="random")
    x = torch.rand(5, 2)
    out = net(x)
    assert not torch.allclose(out[0], out[1])
    single = EnsembleMLP(2, width=8, num_members=1, final_bias="random")
    with torch.no_grad():
        for w, w1 in zip(net.weights, single.weights, strict=True):
            w1.copy_(w[1:2])
        for b, b1 in zip(net.biases, single.biases, strict=True):
            b1.copy_(b[1:2])
    torch.testing.assert_close(single(x)[0], out[1])


@pytest.mark.parametrize("parameterization", ["ntk", "standard"])
def test_relu_init_covariance_matches_the_arc_cosine_nngp(parameterization):
    """At init the outputs are GP(0, K^NN); for relu K^NN has the arc-cosine closed form."""
    torch.manual_seed(1)
    x = torch.tensor([[0.1, 0.2], [0.5, -0.3], [-0.7, 0.4]], dtype=torch.double)
    net = EnsembleMLP(
        2,
        width=1000,
        num_members=4000,
        gamma=1.3,
        activation="relu",
        parameterization=parameterization,
        final_bias="random",
    ).double()
    with torch.no_grad():
        empirical = torch.cov(net(x).T)
    sw2 = sb2 = 1.3**2
    k0 = sb2 + sw2 * x @ x.T / 2
    norm = k0.diag().sqrt()
    theta = torch.acos((k0 / torch.outer(norm, norm)).clamp(-1, 1))
    k1 = (
        torch.outer(norm, norm)
        / (2 * math.pi)
        * (torch.sin(theta) + (math.pi - theta) * torch.cos(theta))
    )
    analytic = sb2 + sw2 * k1
    # 4000 members: relative Monte Carlo error of a covariance ~ sqrt(2/4000) ~ 2%.
    torch.testing.assert_close(empirical, analytic, rtol=0.08, atol=0.05)


def test_zero_final_bias_and_distance_to_init():
    net = EnsembleMLP(2, width=4, num_members=2)
    assert torch.equal(net.biases[-1], torch.zeros(2, 1))
    theta0 = net.initial_state()
    assert torch.equal(net.squared_distance(theta0), torch.zeros(2))
    with torch.no_grad():
        net.weights[0][1].add_(1.0)
    dist = net.squared_distance(theta0).detach()
    assert dist[0] == 0 and dist[1] == pytest.approx(8.0)


@pytest.mark.parametrize(
    "bad",
    [{"activation": "gelu"}, {"parameterization": "mup"}, {"width": 0}, {"final_bias": "one"}],
)
def test_bad_settings_name_the_field(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        EnsembleMLP(2, **bad)


def test_tanh_through_the_sigmoid_is_tanh():
    from dsbo_zoo.mlp import tanh

    z = torch.linspace(-20, 20, 4001, dtype=torch.double)
    assert torch.allclose(tanh(z), torch.tanh(z), rtol=0, atol=1e-15)
    z32 = z.float().requires_grad_(True)
    tanh(z32).sum().backward()
    assert torch.allclose(z32.grad, 1 - torch.tanh(z32.detach()) ** 2, atol=1e-6)


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_members_in_chunks_give_the_same_values_and_gradients(monkeypatch, depth):
    import dsbo_zoo.mlp as mlp

    x = torch.rand(9, 3, dtype=torch.double)
    net = EnsembleMLP(in_dim=3, width=16, depth=depth, num_members=5).double()
    whole = net(x)
    (g_whole,) = torch.autograd.grad(whole.pow(2).sum(), net.weights[0])
    assert net.member_chunk(x) == 5
    monkeypatch.setattr(mlp, "CHUNK_BYTES", 2 * 9 * 16 * 8)  # two members per chunk
    assert net.member_chunk(x) == 2
    chunked = net(x)
    (g_chunked,) = torch.autograd.grad(chunked.pow(2).sum(), net.weights[0])
    assert torch.equal(whole, chunked) and torch.allclose(g_whole, g_chunked, rtol=1e-12)
    assert net(torch.rand(4, 2, 3, dtype=torch.double)).shape == (5, 4, 2)
