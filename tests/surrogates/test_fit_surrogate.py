"""The fit_surrogate contract, shared by every registered GP baseline: accuracy on smooth
functions, multi-output models, validation errors, and use with qLogNEI + optimize_acqf."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.objective import GenericMCObjective
from botorch.models import ModelListGP
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler

import dsbo.surrogates as surrogates
from dsbo.errors import ConfigError, DataError
from dsbo.surrogates import SurrogateSpec, available_surrogates, fit_surrogate

from .helpers import assert_fits, make_3d, posterior_mean

# Every MAP-fitted baseline (saasbo has its own, optional, test module).
SPECS = {
    "gp": {"name": "gp"},
    "gp-rbf": {"name": "gp", "kernel": "rbf"},
    "map-saas": {"name": "map-saas"},
    "ibnn": {"name": "ibnn"},
}
# The I-BNN infers a little more noise on these noiseless data than the stationary kernels.
INTERP_TOL = {"gp": 0.05, "gp-rbf": 0.05, "map-saas": 0.05, "ibnn": 0.1}


def test_package_exports_and_registered_names():
    assert set(surrogates.__all__) == {
        "fit_surrogate",
        "SurrogateSpec",
        "register_surrogate",
        "available_surrogates",
    }
    names = available_surrogates()
    assert {"gp", "map-saas", "saasbo", "ibnn"} <= set(names)
    assert all(names[n] for n in ("gp", "map-saas", "saasbo", "ibnn"))  # one-line descriptions


@pytest.mark.parametrize("key", list(SPECS))
@pytest.mark.parametrize("dataset", ["data_1d", "data_3d"])
def test_fits_smooth_function(key, dataset, request):
    data = request.getfixturevalue(dataset)
    torch.manual_seed(0)
    model = fit_surrogate(SPECS[key], data.X, data.Y, bounds=data.bounds)
    assert model.num_outputs == 1
    assert_fits(model, data, interp_tol=INTERP_TOL[key], test_ratio=0.2)


@pytest.mark.parametrize("key", ["gp", "map-saas", "ibnn"])
def test_multi_output_gives_model_list(key, data_3d):
    Y = torch.cat([data_3d.Y, -2.0 * data_3d.Y + 1.0, data_3d.X[:, :1]], dim=-1)
    torch.manual_seed(0)
    model = fit_surrogate(SPECS[key], data_3d.X, Y, bounds=data_3d.bounds)
    assert isinstance(model, ModelListGP)
    assert model.num_outputs == 3
    mean = posterior_mean(model, data_3d.X)
    assert mean.shape == (len(data_3d.X), 3)
    assert ((mean - Y).abs().max(0).values <= INTERP_TOL[key] * Y.std(0)).all()


def test_unknown_surrogate_name_is_named():
    data = make_3d(n=5)
    with pytest.raises(ConfigError, match="'forest'"):
        fit_surrogate("forest", data.X, data.Y)


@pytest.mark.parametrize("name", ["gp", "map-saas", "saasbo", "ibnn"])
def test_unknown_option_is_named(name):
    data = make_3d(n=5)
    with pytest.raises(ConfigError, match="lengthscale"):
        fit_surrogate({"name": name, "lengthscale": 0.1}, data.X, data.Y)


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"name": "gp", "kernel": "matern32"}, "kernel"),
        ({"name": "map-saas", "num_taus": 0}, "num_taus"),
        ({"name": "map-saas", "num_taus": 2.5}, "num_taus"),
        ({"name": "map-saas", "fit_restarts": -1}, "fit_restarts"),
        ({"name": "ibnn", "depth": 0}, "depth"),
        ({"name": "saasbo", "thinning": 0}, "thinning"),
    ],
)
def test_bad_option_value_is_named(spec, field):
    data = make_3d(n=5)
    with pytest.raises(ConfigError, match=field):
        fit_surrogate(spec, data.X, data.Y)


@pytest.mark.parametrize("name", ["gp", "map-saas", "ibnn"])
def test_nan_in_Y_raises_data_error(name):
    data = make_3d(n=8)
    Y = data.Y.clone()
    Y[3, 0] = float("nan")
    with pytest.raises(DataError, match=r"rows \[3\]"):
        fit_surrogate(name, data.X, Y, bounds=data.bounds)


@pytest.mark.parametrize("key", ["gp", "map-saas"])
def test_qlognei_and_optimize_acqf_end_to_end(key, data_3d):
    torch.manual_seed(0)
    model = fit_surrogate(
        SurrogateSpec.coerce(SPECS[key]), data_3d.X, data_3d.Y, bounds=data_3d.bounds
    )
    acqf = qLogNoisyExpectedImprovement(
        model, X_baseline=data_3d.X, sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0)
    )
    candidates, value = optimize_acqf(
        acqf, bounds=data_3d.bounds, q=2, num_restarts=2, raw_samples=32, options={"maxiter": 25}
    )
    assert candidates.shape == (2, 3)
    assert torch.isfinite(value)
    assert ((candidates >= data_3d.bounds[0]) & (candidates <= data_3d.bounds[1])).all()


@pytest.mark.parametrize("key", ["gp", "map-saas"])
def test_qlognei_on_multi_output_model_with_objective(key):
    data = make_3d(n=12)
    Y = torch.cat([data.Y, -data.X[:, :1]], dim=-1)
    torch.manual_seed(0)
    model = fit_surrogate(SPECS[key], data.X, Y, bounds=data.bounds)
    acqf = qLogNoisyExpectedImprovement(
        model,
        X_baseline=data.X,
        objective=GenericMCObjective(lambda Z, X=None: Z[..., 0] + 0.5 * Z[..., 1]),
        sampler=SobolQMCNormalSampler(torch.Size([32]), seed=0),
    )
    candidates, value = optimize_acqf(
        acqf, bounds=data.bounds, q=1, num_restarts=2, raw_samples=32, options={"maxiter": 25}
    )
    assert candidates.shape == (1, 3)
    assert torch.isfinite(value)


def test_the_dry_run_fits_map_saas_once_unless_the_options_set_restarts():
    from dsbo.surrogates import SurrogateSpec

    assert SurrogateSpec("map-saas", {"num_taus": 2}).for_dry_run().options == {
        "num_taus": 2,
        "fit_restarts": 0,
    }
    given = SurrogateSpec("map-saas", {"fit_restarts": -1})  # checked as given, not replaced
    assert given.for_dry_run() is given
    plain = SurrogateSpec("gp", {"kernel": "rbf"})  # no restarts to drop
    assert plain.for_dry_run() is plain
