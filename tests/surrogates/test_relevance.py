"""Lengthscale-scaled distances (:mod:`dsbo.surrogates.relevance`) against their formula."""

from __future__ import annotations

import torch
from botorch.models import ModelList

from dsbo.surrogates import fit_surrogate
from dsbo.surrogates.relevance import input_lengthscales, scaled_distance

from .helpers import uniform


def test_scaled_distance_is_the_kernel_distance_in_the_unit_cube(data_3d):
    bounds = data_3d.bounds
    torch.manual_seed(0)
    model = fit_surrogate("gp", data_3d.X, data_3d.Y, bounds=bounds)
    lengthscales = input_lengthscales(model, 3)
    assert lengthscales.shape == (3,)
    assert torch.allclose(
        lengthscales, model.covar_module.lengthscale.detach().reshape(-1).double()
    )
    X, seen = uniform(bounds, 4, seed=1), uniform(bounds, 5, seed=2)
    unit = lambda Z: (Z - bounds[0]) / (bounds[1] - bounds[0])  # noqa: E731
    expected = torch.cdist(unit(X) / lengthscales, unit(seen) / lengthscales)
    assert torch.allclose(scaled_distance(model, X, seen), expected)
    # a model list is a repeat only for every output: the largest distance
    other = fit_surrogate("gp", data_3d.X, -data_3d.Y, bounds=bounds)
    both = scaled_distance(ModelList(model, other), X, seen)
    assert torch.allclose(both, torch.maximum(expected, scaled_distance(other, X, seen)))


def test_ensembles_take_the_smallest_lengthscale_and_irrelevant_inputs_barely_count():
    # f depends on the first input only: MAP-SAAS shrinks the other two's inverse lengthscales
    bounds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=torch.double)
    X = uniform(bounds, 20, seed=0)
    Y = torch.sin(6 * X[:, :1])
    torch.manual_seed(0)
    model = fit_surrogate("map-saas", X, Y, bounds=bounds)
    per_member = model.covar_module.base_kernel.lengthscale.detach().reshape(-1, 3)
    assert torch.equal(input_lengthscales(model, 3), per_member.min(dim=0).values.double())
    base = torch.tensor([[0.3, 0.5, 0.5]], dtype=torch.double)
    moved_irrelevant = torch.tensor([[0.3, 0.0, 1.0]], dtype=torch.double)
    moved_relevant = torch.tensor([[0.4, 0.5, 0.5]], dtype=torch.double)
    assert scaled_distance(model, moved_irrelevant, base).item() < 0.01
    assert scaled_distance(model, moved_relevant, base).item() > 0.05


def test_models_without_lengthscales_have_no_scaled_distance(data_3d):
    model = fit_surrogate(
        {"name": "neural-ensemble", "options": {"width": 8, "num_members": 2, "max_epochs": 2}},
        data_3d.X,
        data_3d.Y,
        bounds=data_3d.bounds,
    )
    assert input_lengthscales(model, 3) is None
    assert scaled_distance(model, data_3d.X[:2], data_3d.X) is None
