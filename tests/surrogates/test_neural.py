"""The Lightning bridge: every zoo surrogate as a BoTorch model, acquisitions, campaigns."""

import pytest
import torch
from botorch.acquisition.analytic import PosteriorMean
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.monte_carlo import qUpperConfidenceBound
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.models import ModelList
from botorch.optim import optimize_acqf
from botorch.sampling import SobolQMCNormalSampler

from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import available_surrogates, fit_surrogate
from dsbo.surrogates.lightning_bridge import (
    WARM_START_CACHE,
    clear_warm_start_cache,
    resolve_device,
    train_module,
)
from dsbo.surrogates.zoo_models import (
    NeuralEnsembleModel,
    NeuralEnsemblePosterior,
    NeuralGaussianModel,
    model_from_module,
)
from dsbo_zoo.smb import SimpleSMB

TINY = {
    "simple-smb": {"width": 32, "num_samples": 4, "max_epochs": 60},
    "posterior-smb": {"width": 32, "num_samples": 4, "max_epochs": 60},
    "neural-ensemble": {"width": 32, "num_members": 3, "max_epochs": 60},
    "neural-lints": {"width": 16, "max_epochs": 60},
    "neural-ucb": {"width": 6, "max_epochs": 60},
}
KIND = {"neural-lints": NeuralGaussianModel, "neural-ucb": NeuralGaussianModel}


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_warm_start_cache()
    yield
    clear_warm_start_cache()


def test_all_zoo_surrogates_are_registered():
    assert set(TINY) <= set(available_surrogates())


@pytest.mark.parametrize("name", list(TINY))
def test_optimize_acqf_with_mc_and_analytic_acquisitions(name, data_3d):
    torch.manual_seed(0)
    model = fit_surrogate({"name": name, **TINY[name]}, data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    assert isinstance(model, KIND.get(name, NeuralEnsembleModel))
    post = model.posterior(data_3d.X_test[:5])
    assert post.mean.shape == (5, 1) and post.mean.dtype == torch.double
    # raw units: the standardized fit is mapped back near the data's scale
    assert abs(float(post.mean.detach().mean()) - float(data_3d.Y.mean())) < 3 * float(
        data_3d.Y.std()
    )
    sampler = SobolQMCNormalSampler(torch.Size([16]), seed=0)  # what dsbo's policies pass
    acqfs = [
        (qLogNoisyExpectedImprovement(model, data_3d.X, sampler=sampler), 2),
        (qLogNoisyExpectedImprovement(model, data_3d.X), 1),  # BoTorch's own sampler
        (qUpperConfidenceBound(model, beta=2.0, sampler=sampler), 2),
        (PosteriorMean(model), 1),
    ]
    for acqf, q in acqfs:
        X, value = optimize_acqf(
            acqf,
            bounds=data_3d.bounds,
            q=q,
            num_restarts=2,
            raw_samples=16,
            options={"maxiter": 10},
        )
        assert X.shape == (q, 3) and torch.isfinite(value).all()
        assert (X >= data_3d.bounds[0]).all() and (X <= data_3d.bounds[1]).all()


@pytest.mark.parametrize("name", list(TINY))
def test_qlognehvi_on_two_outputs(name, data_3d):
    torch.manual_seed(0)
    Y2 = torch.cat([data_3d.Y, -((data_3d.X - 0.5) ** 2).sum(-1, keepdim=True)], -1)
    model = fit_surrogate({"name": name, **TINY[name]}, data_3d.X, Y2, bounds=data_3d.bounds)
    assert isinstance(model, ModelList) and model.num_outputs == 2
    ref = Y2.min(0).values - 0.1 * (Y2.max(0).values - Y2.min(0).values)
    acqf = qLogNoisyExpectedHypervolumeImprovement(
        model, ref_point=ref.tolist(), X_baseline=data_3d.X
    )
    X, value = optimize_acqf(
        acqf, bounds=data_3d.bounds, q=1, num_restarts=2, raw_samples=16, options={"maxiter": 10}
    )
    assert X.shape == (1, 3) and torch.isfinite(value).all()


@pytest.mark.parametrize("name", list(TINY))
def test_short_campaign(name, fast_optimizer):
    options = dict(TINY[name], max_epochs=30)
    campaign = Campaign(
        get_problem("branin"),
        surrogate={"name": name, **options},
        acquisition="qlognei",
        budget=5,
        n_init=3,
        seed=0,
        optimizer=fast_optimizer,
    )
    result = campaign.run()
    trials = campaign.store.trials("completed")
    assert len(trials) == 5 and [t.generator for t in trials[3:]] == ["qlognei", "qlognei"]
    assert result.best_value is not None


def test_campaign_is_reproducible_with_the_same_seed(fast_optimizer):
    def proposals():
        campaign = Campaign(
            get_problem("branin"),
            surrogate={"name": "simple-smb", **TINY["simple-smb"]},
            acquisition="qlognei",
            budget=4,
            n_init=3,
            seed=3,
            optimizer=fast_optimizer,
        )
        campaign.run()
        return torch.tensor([t.x for t in campaign.store.trials("completed")])

    torch.testing.assert_close(proposals(), proposals())


def test_noiseless_simple_smb_posterior_reproduces_the_data_in_raw_units(data_3d):
    torch.manual_seed(0)
    X, Y = data_3d.X[:6], data_3d.Y[:6]
    options = {
        "width": 128,
        "num_samples": 2,
        "lr": 1e-2,
        "max_epochs": 2000,
        "train_tol": 1e-6,
        "dtype": "float64",
    }
    model = fit_surrogate({"name": "simple-smb", **options}, X, Y, bounds=data_3d.bounds)
    assert float(model.module.train_mse) < 1e-6
    values = model.posterior(X).values.detach()  # 2 x n x 1 draws
    assert (values - Y).abs().max() < 0.01 * float(Y.std())


def test_train_tol_stops_early(data_1d):
    torch.manual_seed(0)
    options = {"width": 64, "lr": 1e-2, "max_epochs": 5000, "train_tol": 1e-3}
    model = fit_surrogate(
        {"name": "neural-ensemble", **options, "num_members": 2},
        data_1d.X,
        data_1d.Y,
        bounds=data_1d.bounds,
    )
    assert float(model.module.train_mse) < 1e-3
    assert int(model.module.global_step) < 5000


def test_warm_started_ensemble_continues_its_lineage_per_output(data_3d):
    torch.manual_seed(0)
    spec = {"name": "neural-ensemble", **TINY["neural-ensemble"]}
    X, Y = data_3d.X, data_3d.Y
    first = fit_surrogate(spec, X[:10], Y[:10], bounds=data_3d.bounds)
    assert len(WARM_START_CACHE) == 1
    second = fit_surrogate(spec, X[:12], Y[:12], bounds=data_3d.bounds)  # the history grew
    assert int(second.module.num_fits) == 2 and int(first.module.num_fits) == 1
    other = fit_surrogate(spec, X[5:12], Y[5:12], bounds=data_3d.bounds)  # unrelated data
    assert int(other.module.num_fits) == 1
    Y2 = torch.cat([Y, -Y], -1)
    both = fit_surrogate(spec, X[:14], Y2[:14], bounds=data_3d.bounds)
    assert [int(m.module.num_fits) for m in both.models] == [3, 1]
    # the cached copy is not the returned module: a later fit does not change earlier models
    before = first.posterior(X[:3]).values.clone()
    fit_surrogate(spec, X[:13], Y[:13], bounds=data_3d.bounds)
    torch.testing.assert_close(first.posterior(X[:3]).values, before)


def test_simple_smb_fresh_init_differs_between_fits(data_3d):
    spec = {"name": "simple-smb", **TINY["simple-smb"]}
    a = fit_surrogate(spec, data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    b = fit_surrogate(spec, data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    assert not torch.allclose(
        a.posterior(data_3d.X_test).values, b.posterior(data_3d.X_test).values
    )
    assert len(WARM_START_CACHE) == 0


def test_normal_base_samples_select_members_by_quantile():
    values = torch.arange(4.0).reshape(4, 1, 1).expand(4, 2, 1)  # member k predicts k
    post = NeuralEnsemblePosterior(values)
    z = torch.distributions.Normal(0.0, 1.0).icdf(torch.tensor([0.1, 0.3, 0.6, 0.9]))
    samples = post.rsample_from_base_samples(torch.Size([4]), z.reshape(4, 1))
    torch.testing.assert_close(samples[:, 0, 0], torch.tensor([0.0, 1.0, 2.0, 3.0]))
    assert samples.shape == (4, 2, 1)


def test_model_from_module_rejects_unknown_kinds():
    module = SimpleSMB(2, width=4)
    module.posterior_kind = "mystery"
    with pytest.raises(ConfigError, match="posterior_kind"):
        model_from_module(module)


@pytest.mark.parametrize(
    "name, option, value",
    [
        ("simple-smb", "width", 0),
        ("simple-smb", "noise_var", -1.0),
        ("posterior-smb", "optimizer", "lbfgs"),
        ("neural-ensemble", "max_epochs", 0),
        ("neural-lints", "dtype", "float16"),
        ("neural-ucb", "train_tol", -1.0),
        ("neural-ucb", "confidence_scale", 0.0),
        ("neural-lints", "bogus", 1),
        ("simple-smb", "device", "tpu"),
        ("neural-ensemble", "device", "cuda:7"),
    ],
)
def test_bad_options_raise_config_errors_naming_the_field(name, option, value, data_1d):
    with pytest.raises(ConfigError, match=option):
        fit_surrogate({"name": name, option: value}, data_1d.X, data_1d.Y, bounds=data_1d.bounds)


@pytest.mark.parametrize("name", ["simple-smb", "neural-lints"])
def test_multi_objective_campaign_with_qlognehvi(name, fast_optimizer):
    """dsbo's policies hand a ModelList of zoo models one Sobol sampler per member model."""
    campaign = Campaign(
        get_problem("branin-currin"),
        surrogate={"name": name, **TINY[name]},
        acquisition="qlognehvi",
        budget=5,
        n_init=3,
        seed=0,
        optimizer=fast_optimizer,
    )
    campaign.run()
    assert [t.generator for t in campaign.store.trials("completed")][3:] == ["qlognehvi"] * 2


@pytest.mark.parametrize("acquisition_function", ["ehvi", "qlognehvi"])
def test_sebo_with_a_zoo_surrogate(acquisition_function, fast_optimizer):
    problem = get_problem("branin-6d", target="zero")
    acquisition = {
        "name": "sebo",
        "penalty": "l0",
        "num_steps": 3,
        "num_restarts_homotopy": 2,
        "acquisition_function": acquisition_function,
    }
    campaign = Campaign(
        problem,
        surrogate={"name": "neural-ensemble", **TINY["neural-ensemble"]},
        acquisition=acquisition,
        budget=5,
        n_init=3,
        seed=0,
        optimizer=fast_optimizer,
    )
    campaign.run()
    trials = campaign.store.trials("completed")
    assert [t.generator for t in trials][3:] == ["sebo"] * 2
    assert all(t.metadata["acquisition_function"] == acquisition_function for t in trials[3:])


def test_post_training_passes_see_every_point_once_under_the_repeated_full_batch_trainer():
    """train_module runs one epoch of many identical full batches: NeuralLinTS's BLR head,
    NeuralUCB's Z and PosteriorSMB's delta table must still be built from the n points."""
    from dsbo_zoo.neural_lints import NeuralLinTS
    from dsbo_zoo.neural_ucb import NeuralUCB
    from dsbo_zoo.smb import PosteriorSMB

    torch.manual_seed(0)
    X, Y = torch.rand(9, 2), torch.randn(9)

    lints = train_module(NeuralLinTS(in_dim=2, width=16), X, Y, max_epochs=40)
    mean, chol = lints.blr_mean.clone(), lints.blr_precision_chol.clone()
    lints.fit_posterior(X, Y)  # the closed form on the 9 points
    torch.testing.assert_close(lints.blr_mean, mean)
    torch.testing.assert_close(lints.blr_precision_chol, chol)

    ucb = train_module(NeuralUCB(in_dim=2, width=6), X, Y, max_epochs=40)
    z_chol = ucb.z_chol.clone()
    ucb.fit_design(X)
    torch.testing.assert_close(ucb.z_chol, z_chol)

    smb = PosteriorSMB(in_dim=2, width=16, num_samples=3)
    tables = []
    smb.on_fit_end = lambda: tables.append(smb._delta_train.clone())  # noqa: B023
    train_module(smb, X, Y, max_epochs=40)
    torch.testing.assert_close(tables[0], smb.delta(X).detach())


def test_unique_training_rows_reads_shuffled_minibatches_once():
    from torch.utils.data import DataLoader, TensorDataset

    from dsbo_zoo.training_data import unique_training_rows

    X, Y = torch.rand(11, 2), torch.randn(11)
    loader = DataLoader(TensorDataset(X, Y, torch.arange(11)), batch_size=4, shuffle=True)
    trainer = type("T", (), {"train_dataloader": loader})()
    x, y, index = unique_training_rows(trainer, torch.device("cpu"))
    assert index.tolist() == list(range(11))
    torch.testing.assert_close(x, X)
    torch.testing.assert_close(y, Y)


@pytest.mark.parametrize("name", sorted(TINY))
def test_the_device_option_keeps_the_model_there_and_moves_inputs(name, data_3d):
    """On this CPU-only machine the device is the CPU; the wrapper still converts BoTorch's
    float64 inputs to the module's device and dtype and hands back the caller's."""
    options = {**TINY[name], "device": "auto", "dtype": "float32"}
    model = fit_surrogate({"name": name, **options}, data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    parameter = next(model.module.parameters())
    assert parameter.device == resolve_device("auto") and parameter.dtype == torch.float32
    X = torch.rand(5, 3, dtype=torch.double)
    posterior = model.posterior(X)
    assert posterior.mean.dtype == torch.double and posterior.mean.device == X.device
    assert model.module_input(X).dtype == torch.float32


def test_an_unavailable_device_is_named():
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="device='cuda' is not available on this machine"):
            resolve_device("cuda", "surrogate 'simple-smb'")
    with pytest.raises(ConfigError, match="use auto, cpu, cuda, cuda:N or mps"):
        resolve_device("gpu0", "surrogate 'simple-smb'")
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("name", sorted(TINY))
def test_acquisition_gradients_match_finite_differences(name, data_3d):
    """L-BFGS-B relies on autograd through the wrapper, the transforms and the module: the
    gradient of UCB (analytic for Gaussian models, MC for ensembles) and of qLogNEI at a
    random point equals a central finite difference (float64 throughout)."""
    torch.manual_seed(1)
    options = {**TINY[name], "dtype": "float64"}
    model = fit_surrogate({"name": name, **options}, data_3d.X, data_3d.Y, bounds=data_3d.bounds)
    sampler = SobolQMCNormalSampler(torch.Size([32]), seed=0)
    acqfs = [
        qLogNoisyExpectedImprovement(model, data_3d.X, sampler=sampler, prune_baseline=False),
        qUpperConfidenceBound(model, beta=2.0, sampler=sampler),
    ]
    lower, upper = data_3d.bounds
    x0 = (lower + (upper - lower) * torch.rand(1, 3, dtype=torch.double)).unsqueeze(0)
    for acqf in acqfs:
        x = x0.clone().requires_grad_(True)
        acqf(x).sum().backward()
        h = 1e-5 * (upper - lower)
        numeric = torch.stack(
            [
                (
                    acqf(x0 + h[j] * torch.eye(3, dtype=torch.double)[j])
                    - acqf(x0 - h[j] * torch.eye(3, dtype=torch.double)[j])
                ).sum()
                / (2 * h[j])
                for j in range(3)
            ]
        )
        assert x.grad.abs().max() > 1e-6, "a gradient to follow"
        torch.testing.assert_close(x.grad.reshape(3), numeric.detach(), rtol=1e-4, atol=1e-6)
