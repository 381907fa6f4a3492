"""The closed-form EHVI of (objective, sparsity) equals a Monte Carlo hypervolume improvement."""

from __future__ import annotations

import pytest
import torch
from botorch.utils.multi_objective.hypervolume import Hypervolume
from botorch.utils.multi_objective.pareto import is_non_dominated

from dsbo.acquisition.sparse_ehvi import (
    LogSparseExpectedHypervolumeImprovement,
    sparse_pareto_front,
)
from dsbo.acquisition.sparsity import SparsityMeasure
from dsbo.surrogates import fit_surrogate

D = 4
BOUNDS = torch.stack([torch.zeros(D), torch.ones(D)])


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, D, generator=g)
    X[:4, :2] = 0.0  # some sparse observations, so the front has several points
    X[4:6, :3] = 0.0
    Y = -((X - 0.3) ** 2).sum(-1, keepdim=True)
    return X, Y


def monte_carlo_ehvi(samples, s, f_obs, xi_obs, ref_point):
    """Average hypervolume improvement of (y, s) over samples y, with BoTorch's Hypervolume
    in the maximization convention: points (f, -xi), reference (r_f, -r_xi)."""
    hv = Hypervolume(torch.tensor([ref_point[0], -ref_point[1]]))
    front = torch.stack([f_obs, -xi_obs], dim=-1)
    front = front[is_non_dominated(front)]
    base = hv.compute(front)
    hvi = torch.tensor(
        [hv.compute(torch.cat([front, torch.tensor([[y, -s]])])) - base for y in samples.tolist()]
    )
    return hvi.mean().item(), hvi.std().item() / len(samples) ** 0.5


def make_acqf(model, X, Y, a=0.2):
    measure = SparsityMeasure(torch.zeros(D), BOUNDS, penalty="l0", a=a)
    ref_point = (Y.min().item() - 0.1, D + 0.5)
    acqf = LogSparseExpectedHypervolumeImprovement(
        model, measure, f_observed=Y[:, 0], xi_observed=measure(X), ref_point=ref_point
    )
    return acqf, measure, ref_point


def test_front_is_sorted_by_sparsity_with_increasing_objective():
    f = torch.tensor([0.0, 1.0, 2.0, 1.5, -5.0])
    xi = torch.tensor([0.0, 1.0, 3.0, 3.0, 0.5])
    f_front, xi_front = sparse_pareto_front(f, xi, ref_point=(-1.0, 4.0))
    assert f_front.tolist() == [0.0, 1.0, 2.0] and xi_front.tolist() == [0.0, 1.0, 3.0]
    f_front, _ = sparse_pareto_front(f, xi, ref_point=(0.5, 2.0))  # beat the reference
    assert f_front.tolist() == [1.0]


def test_closed_form_equals_monte_carlo_hypervolume_improvement(data):
    X, Y = data
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=BOUNDS)
    acqf, measure, ref_point = make_acqf(model, X, Y)
    assert acqf.num_front >= 2
    # Candidates whose sparsity falls in the first, second and last slab of the front.
    X_test = torch.tensor(
        [[[0.01, 0.01, 0.01, 0.3]], [[0.0, 0.0, 0.244, 0.244]], [[0.01, 0.01, 0.3, 0.3]]]
    )
    slabs = [int((acqf.lower < measure(x)).sum()) - 1 for x in X_test]
    assert slabs == [0, 1, 2]
    g = torch.Generator().manual_seed(1)
    closed = acqf(X_test).exp()
    posterior = model.posterior(X_test)
    for i in range(3):
        mu, sd = posterior.mean[i, 0, 0].item(), posterior.variance[i, 0, 0].sqrt().item()
        samples = mu + sd * torch.randn(2000, generator=g)
        s = measure(X_test[i]).item()
        mc, se = monte_carlo_ehvi(samples, s, Y[:, 0], measure(X), ref_point)
        assert closed[i].item() == pytest.approx(mc, abs=4 * se + 1e-6)


def test_ensemble_average_equals_monte_carlo_over_the_mixture(data):
    X, Y = data
    model = fit_surrogate({"name": "map-saas", "num_taus": 2, "seed": 0}, X, Y, bounds=BOUNDS)
    acqf, measure, ref_point = make_acqf(model, X, Y)
    x = torch.full((1, 1, D), 0.05)
    closed = acqf(x).exp().item()
    posterior = model.posterior(x)  # 1 x M x 1 x 1
    mu, sd = posterior.mean.reshape(-1), posterior.variance.sqrt().reshape(-1)
    g = torch.Generator().manual_seed(2)
    samples = (mu + sd * torch.randn(1000, mu.numel(), generator=g)).reshape(-1)  # uniform mixture
    mc, se = monte_carlo_ehvi(samples, measure(x).item(), Y[:, 0], measure(X), ref_point)
    assert closed == pytest.approx(mc, abs=4 * se + 1e-6)


def test_empty_front_reduces_to_one_slab_and_gradients_are_finite(data):
    X, Y = data
    torch.manual_seed(0)
    model = fit_surrogate("gp", X, Y, bounds=BOUNDS)
    measure = SparsityMeasure(torch.zeros(D), BOUNDS, penalty="l0", a=0.2)
    r_f, r_xi = Y.max().item() + 1.0, 2.0  # no observation beats this reference point
    acqf = LogSparseExpectedHypervolumeImprovement(
        model, measure, Y[:, 0], measure(X), ref_point=(r_f, r_xi)
    )
    assert acqf.num_front == 0
    x = torch.full((1, 1, D), 0.02, requires_grad=True)
    mu = model.posterior(x).mean.item()
    sd = model.posterior(x).variance.sqrt().item()
    u = torch.tensor((mu - r_f) / sd)
    normal = torch.distributions.Normal(0.0, 1.0)
    ei = sd * (normal.log_prob(u).exp() + u * normal.cdf(u))
    expected = (r_xi - measure(x).item()) * ei
    assert acqf(x).exp().item() == pytest.approx(expected.item(), rel=1e-6)
    dense = torch.full((1, 1, D), 0.9, requires_grad=True)  # xi > r_xi: zero improvement
    value = acqf(torch.cat([x, dense]))
    value.sum().backward()
    assert value[1] < -500 and torch.isfinite(value).all()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
