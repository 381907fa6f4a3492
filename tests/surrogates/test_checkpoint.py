"""A checkpoint of ``python -m dsbo.train fit`` loads back as a BoTorch model in raw units."""

import pandas as pd
import pytest
import torch
from botorch.models.model import Model

from dsbo.cli.train import main
from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.checkpoint import (
    load_surrogate,
    make_transforms,
    module_class,
    read_checkpoint,
)

CASES = {
    "ensemble": [
        "--model",
        "SimpleSMB",
        "--model.num_samples",
        "3",
        "--model.width",
        "16",
        "--model.lr",
        "0.01",
    ],
    "gaussian": ["--model", "NeuralLinTS", "--model.width", "16", "--model.lr", "0.01"],
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny fit + predict per posterior kind; returns run directories."""
    runs = {}
    for kind, model_args in CASES.items():
        run_dir = tmp_path_factory.mktemp(kind)
        common = [
            *model_args,
            "--data.problem",
            "hartmann6",
            "--data.num_samples",
            "24",
            "--trainer.logger",
            "false",
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.enable_model_summary",
            "false",
            "--run_dir",
            str(run_dir),
        ]
        assert main(["fit", *common, "--trainer.max_epochs", "5"]) == 0
        ckpt = run_dir / "checkpoints" / "final.ckpt"
        assert main(["predict", *common, "--ckpt_path", str(ckpt)]) == 0
        runs[kind] = run_dir
    return runs


@pytest.mark.parametrize("kind", sorted(CASES))
def test_posterior_mean_matches_module_predictions_in_raw_units(trained, kind):
    run_dir = trained[kind]
    model = load_surrogate(run_dir / "checkpoints" / "final.ckpt")
    assert isinstance(model, Model)
    frame = pd.read_csv(run_dir / "predictions.csv")  # the trained module's predictions, raw units
    inputs = [f"x{i}" for i in range(6)]
    X = torch.tensor(frame[inputs].to_numpy(), dtype=torch.double)
    with torch.no_grad():
        posterior = model.posterior(X)
    mean = posterior.mean.squeeze(-1)
    expected = torch.tensor(frame["pred_mean"].to_numpy(), dtype=torch.double)
    assert torch.allclose(mean, expected, rtol=1e-6, atol=1e-6)
    # raw units: the module was trained on standardized targets, whose scale differs
    assert (expected.std() - 1).abs() > 1e-3 or (expected.mean()).abs() > 1e-3
    std = posterior.variance.squeeze(-1).clamp_min(0).sqrt()
    assert torch.allclose(
        std, torch.tensor(frame["pred_std"].to_numpy(), dtype=torch.double), rtol=1e-5, atol=1e-6
    )


def test_transforms_match_the_datamodule():
    from dsbo.data import ObservationDataModule

    dm = ObservationDataModule(problem="branin", num_samples=20)
    normalize, standardize = make_transforms(dm.state_dict())
    X, y = dm.raw_data("train")
    assert torch.allclose(normalize(X), dm.transform_x(X))
    z = dm.transform_y(y).unsqueeze(-1)
    assert torch.allclose(standardize.untransform(z)[0].squeeze(-1), y)
    # BoTorch's own Standardize fitted on the training targets agrees with the datamodule
    from botorch.models.transforms.outcome import Standardize

    fitted = Standardize(m=1)
    fitted(y.unsqueeze(-1))
    assert torch.allclose(fitted.means, standardize.means) and torch.allclose(
        fitted.stdvs, standardize.stdvs
    )


def test_load_errors(tmp_path, trained):
    with pytest.raises(ConfigError, match="no such file"):
        load_surrogate(tmp_path / "missing.ckpt")
    junk = tmp_path / "junk.ckpt"
    junk.write_text("not a checkpoint")
    with pytest.raises(DataError, match="not a loadable checkpoint"):
        load_surrogate(junk)
    checkpoint = read_checkpoint(trained["ensemble"] / "checkpoints" / "final.ckpt")
    stripped = dict(checkpoint)
    stripped.pop("ObservationDataModule")
    torch.save(stripped, tmp_path / "nodata.ckpt")
    with pytest.raises(DataError, match="holds no ObservationDataModule state"):
        load_surrogate(tmp_path / "nodata.ckpt")
    foreign = {
        **checkpoint,
        "hyper_parameters": {**checkpoint["hyper_parameters"], "_class_path": "evil.module.Thing"},
    }
    with pytest.raises(ConfigError, match="outside the zoo"):
        module_class(foreign, "foreign.ckpt")
    nameless = {
        **checkpoint,
        "hyper_parameters": {
            k: v for k, v in checkpoint["hyper_parameters"].items() if k != "_class_path"
        },
    }
    with pytest.raises(ConfigError, match="pass model_class"):
        module_class(nameless, "nameless.ckpt")


def test_every_checkpoint_of_a_gaussian_run_is_a_usable_surrogate(trained):
    """The default callback keeps the best epoch (by val_mse) and last.ckpt; each holds a head
    fitted to its own weights, so none predicts a constant."""
    files = sorted((trained["gaussian"] / "checkpoints").glob("*.ckpt"))
    names = {f.name for f in files}
    assert {"last.ckpt", "final.ckpt"} <= names
    assert any(n.startswith("best-epoch=") and "val_mse=" in n for n in names), names
    X = torch.rand(16, 6, dtype=torch.double)
    for path in files:
        mean = load_surrogate(path).posterior(X).mean
        assert mean.std() > 1e-6, f"{path.name} predicts a constant"


def test_a_checkpoint_with_an_unfitted_head_is_refused(tmp_path, trained):
    checkpoint = read_checkpoint(trained["gaussian"] / "checkpoints" / "final.ckpt")
    checkpoint["state_dict"]["head_fitted"] = torch.tensor(False)
    torch.save(checkpoint, tmp_path / "unfitted.ckpt")
    with pytest.raises(DataError, match="NeuralLinTS in it has no fitted Bayesian head"):
        load_surrogate(tmp_path / "unfitted.ckpt")


def test_a_checkpoint_saved_under_the_zoos_old_import_name_loads(tmp_path, trained):
    """Checkpoints saved before the zoo became ``dsbo_zoo`` name ``models.smb.SimpleSMB``."""
    checkpoint = read_checkpoint(trained["ensemble"] / "checkpoints" / "final.ckpt")
    assert checkpoint["hyper_parameters"]["_class_path"] == "dsbo_zoo.smb.SimpleSMB"
    legacy = {
        **checkpoint,
        "hyper_parameters": {
            **checkpoint["hyper_parameters"],
            "_class_path": "models.smb.SimpleSMB",
        },
    }
    assert module_class(legacy, "legacy.ckpt").__module__ == "dsbo_zoo.smb"
    torch.save(legacy, tmp_path / "legacy.ckpt")
    X = torch.rand(4, 6, dtype=torch.double)
    with torch.no_grad():
        old = load_surrogate(tmp_path / "legacy.ckpt").posterior(X).mean
        new = load_surrogate(trained["ensemble"] / "checkpoints" / "final.ckpt").posterior(X).mean
    assert torch.equal(old, new)


def test_the_datamodule_key_is_the_datamodule_qualname():
    """``DATAMODULE_KEY`` is spelled out so that the module imports no Lightning; it must stay
    the key Lightning stores the datamodule state under."""
    from dsbo.data.observations import ObservationDataModule
    from dsbo.surrogates.checkpoint import DATAMODULE_KEY

    assert DATAMODULE_KEY == ObservationDataModule.__qualname__
