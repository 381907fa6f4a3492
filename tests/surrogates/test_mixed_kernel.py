"""The MixedSingleTaskGP kernel over one-hot categoricals."""

import math

import pytest
import torch
from botorch.models.kernels.categorical import CategoricalKernel
from gpytorch.kernels import AdditiveKernel, MaternKernel

from dsbo.errors import ConfigError
from dsbo.surrogates import fit_surrogate
from dsbo.surrogates.mixed_kernel import OneHotCategoricalKernel, mixed_covar_module
from dsbo.surrogates.relevance import input_lengthscales

GROUPS = [[0, 1, 2], [3, 4]]


def _one_hot(codes: torch.Tensor) -> torch.Tensor:
    return torch.cat(
        [torch.nn.functional.one_hot(codes[:, 0], 3), torch.nn.functional.one_hot(codes[:, 1], 2)],
        -1,
    ).double()


def test_equals_botorchs_categorical_kernel_on_one_hot_rows():
    codes = torch.tensor([[0, 1], [2, 0], [1, 1], [0, 0], [2, 1]])
    ours = OneHotCategoricalKernel(GROUPS)
    theirs = CategoricalKernel(ard_num_dims=2)
    ours.lengthscale = theirs.lengthscale = torch.tensor([[0.7, 2.0]])
    assert torch.allclose(
        ours(_one_hot(codes)).to_dense(), theirs(codes.double()).to_dense(), atol=1e-12
    )
    # exp(-mean_g mismatch_g / l_g): rows 0 and 1 differ in both, rows 0 and 3 in the second only
    K = ours(_one_hot(codes)).to_dense()
    assert math.isclose(float(K[0, 1]), math.exp(-(1 / 0.7 + 1 / 2.0) / 2), rel_tol=1e-12)
    assert math.isclose(float(K[0, 3]), math.exp(-(1 / 2.0) / 2), rel_tol=1e-12)
    assert torch.allclose(ours(_one_hot(codes), diag=True), torch.ones(5, dtype=torch.double))
    per_group = ours.forward(_one_hot(codes), _one_hot(codes), last_dim_is_batch=True)  # 2 x 5 x 5
    assert torch.allclose(per_group.log().mean(0).exp(), K, atol=1e-12)


def test_positive_semidefinite_on_relaxed_one_hot_values_and_batched():
    torch.manual_seed(0)
    kernel = mixed_covar_module(7, [[2, 3, 4], [5, 6]])
    X = torch.rand(40, 7, dtype=torch.double)
    assert torch.linalg.eigvalsh(kernel(X).to_dense()).min() > -1e-8
    assert kernel(torch.rand(3, 4, 7, dtype=torch.double)).to_dense().shape == (3, 4, 4)
    assert kernel(torch.rand(3, 4, 7, dtype=torch.double), diag=True).shape == (3, 4)


def _shifted_data(n_a: int = 14, n_b: int = 3):
    """f = sin(6 x) + an offset per category; category b seen at only a few points."""
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(n_a + n_b, 1, generator=generator, dtype=torch.double)
    category = torch.tensor([0] * n_a + [1] * n_b)
    X = torch.cat([x, torch.nn.functional.one_hot(category, 2).double()], -1)
    Y = torch.sin(6 * x) + 1.5 * category.unsqueeze(-1)
    return X, Y


def test_a_category_that_shifts_the_objective_is_learned_from_few_points():
    X, Y = _shifted_data()
    bounds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=torch.double)
    grid = torch.linspace(0, 1, 21, dtype=torch.double).unsqueeze(-1)
    test = torch.cat(
        [grid, torch.tensor([[0.0, 1.0]], dtype=torch.double).expand(21, 2)], -1
    )  # category b
    truth = torch.sin(6 * grid) + 1.5
    errors = {}
    for categorical in ("mixed", "ard"):
        torch.manual_seed(0)
        model = fit_surrogate(
            {"name": "gp", "categorical": categorical}, X, Y, bounds, categorical_groups=[[1, 2]]
        )
        with torch.no_grad():
            errors[categorical] = float((model.posterior(test).mean - truth).abs().mean())
    assert errors["mixed"] < 0.25, errors
    assert errors["mixed"] < errors["ard"], errors


def test_the_gp_option_and_what_the_campaign_passes():
    X, Y = _shifted_data()
    bounds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=torch.double)
    model = fit_surrogate(
        {"name": "gp", "categorical": "mixed"}, X, Y, bounds, categorical_groups=[[1, 2]]
    )
    assert isinstance(model.covar_module, AdditiveKernel)
    assert model.fit_state.start == "no previous fit"  # warm-started by default: none yet
    lengthscales = input_lengthscales(model, 3)
    assert torch.isfinite(lengthscales).all()  # every column is read by some kernel
    assert isinstance(
        fit_surrogate("gp", X, Y, bounds, categorical_groups=[[1, 2]]).covar_module, MaternKernel
    )
    assert isinstance(
        fit_surrogate({"name": "gp", "categorical": "mixed"}, X, Y, bounds).covar_module,
        MaternKernel,
    )
    with pytest.raises(ConfigError, match="categorical='onehot'"):
        fit_surrogate({"name": "gp", "categorical": "onehot"}, X, Y, bounds)


def test_a_tuner_on_a_space_with_a_choice_fits_the_mixed_kernel_when_asked():
    import dsbo

    tuner = dsbo.Tuner(
        {"x": dsbo.Float(0.0, 1.0), "c": dsbo.Choice(["a", "b", "c"])},
        budget=8,
        n_init=5,
        dry_run=False,
        surrogate={"name": "gp", "categorical": "mixed"},
    )
    for _ in range(5):
        s = tuner.ask()
        tuner.tell(s, s.params["x"] + "abc".index(s.params["c"]))
    model = tuner.campaign.fit_model()
    assert isinstance(model.covar_module, AdditiveKernel)
