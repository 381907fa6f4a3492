"""The zoo's shared Lightning behaviour (models/base.py): metrics that mean one thing, heads
that match their weights in every validation and checkpoint, logging without a logger."""

import warnings

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
from zoo_helpers import loader

from dsbo_zoo import NeuralEnsemble, NeuralLinTS, NeuralUCB, SimpleSMB
from dsbo_zoo.base import UnfittedHeadError


def data(n=24, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=generator, dtype=torch.float64)
    y = torch.sin(4 * x[:, 0]) + x[:, 1] ** 2
    return x, (y - y.mean()) / y.std()


def trainer(epochs, tmp_path=None, callbacks=(), logger=False, val=True):
    return pl.Trainer(
        max_epochs=epochs,
        logger=logger,
        enable_checkpointing=tmp_path is not None,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=list(callbacks),
        num_sanity_val_steps=2 if val else 0,
        log_every_n_steps=1,
    )


def quiet_fit(t, module, train, val=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.fit(module, train, val)


@pytest.mark.parametrize("cls", [NeuralLinTS, NeuralUCB])
def test_val_mse_during_fit_is_the_trained_model_with_its_head(cls):
    torch.manual_seed(0)
    x, y = data()
    module = cls(2, width=16, lr=1e-2).double()
    t = trainer(30)
    quiet_fit(t, module, loader(x[:18], y[:18]), loader(x[18:], y[18:]))
    during_fit = float(t.callback_metrics["val_mse"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        after = t.validate(module, loader(x[18:], y[18:]), verbose=False)[0]["val_mse"]
    mean, _ = module.predict_mean_cov(x[18:].unsqueeze(-2))
    independent = float((mean.squeeze(-1) - y[18:]).pow(2).mean())
    assert during_fit == pytest.approx(after, rel=1e-6) == pytest.approx(independent, rel=1e-6)
    zero_head = float(y[18:].pow(2).mean())  # what an unfitted head (mean 0) would score
    assert during_fit < 0.8 * zero_head, "the head predicts, not a constant zero"


@pytest.mark.parametrize("cls", [NeuralLinTS, NeuralUCB])
def test_every_epoch_checkpoint_holds_a_head_matching_its_weights(cls, tmp_path):
    torch.manual_seed(1)
    x, y = data()
    every_epoch = ModelCheckpoint(dirpath=tmp_path, save_top_k=-1, every_n_epochs=1)
    module = cls(2, width=16, lr=1e-2).double()
    quiet_fit(trainer(4, tmp_path, [every_epoch], val=False), module, loader(x, y))
    files = sorted(tmp_path.glob("epoch=*.ckpt"))
    assert len(files) == 4
    for path in files[:2]:  # saved mid-fit, before on_fit_end
        loaded = cls.load_from_checkpoint(path, weights_only=True).double()
        mean, cov = loaded.predict_mean_cov(x.unsqueeze(-2))
        refitted = cls.load_from_checkpoint(path, weights_only=True).double()
        refitted.fit_head(x, y)
        mean2, cov2 = refitted.predict_mean_cov(x.unsqueeze(-2))
        torch.testing.assert_close(mean, mean2)
        torch.testing.assert_close(cov, cov2)
        assert mean.std() > 1e-3, "not a constant"


@pytest.mark.parametrize("cls", [NeuralLinTS, NeuralUCB])
def test_an_unfitted_head_refuses_to_predict(cls):
    with pytest.raises(UnfittedHeadError, match=f"{cls.__name__}: the Bayesian head is not fitted"):
        cls(2, width=8).predict_mean_cov(torch.rand(3, 1, 2))


def test_old_checkpoints_without_the_head_flag_still_load(tmp_path):
    torch.manual_seed(2)
    x, y = data()
    module = NeuralLinTS(2, width=8).double()
    t = trainer(2, val=False)
    quiet_fit(t, module, loader(x, y))
    t.save_checkpoint(tmp_path / "final.ckpt")
    checkpoint = torch.load(tmp_path / "final.ckpt", weights_only=True)
    del checkpoint["state_dict"]["head_fitted"]  # as written by earlier dsbo versions
    torch.save(checkpoint, tmp_path / "old.ckpt")
    loaded = NeuralLinTS.load_from_checkpoint(tmp_path / "old.ckpt", weights_only=True).double()
    torch.testing.assert_close(
        loaded.predict_mean_cov(x.unsqueeze(-2))[0], module.predict_mean_cov(x.unsqueeze(-2))[0]
    )


@pytest.mark.parametrize("cls", [SimpleSMB, NeuralEnsemble, NeuralLinTS, NeuralUCB])
def test_train_loss_is_logged_without_a_logger(cls):
    torch.manual_seed(3)
    x, y = data()
    stop = EarlyStopping(monitor="train_loss", patience=2, min_delta=1e9)  # stops after 3 epochs
    t = trainer(50, callbacks=[stop], val=False)
    quiet_fit(t, cls(2, width=8).double(), loader(x, y))
    assert "train_loss" in t.callback_metrics and t.current_epoch == 3


def test_validation_metrics_mean_the_same_across_the_zoo():
    torch.manual_seed(4)
    x, y = data()
    smb = SimpleSMB(2, num_samples=3, width=32, lr=1e-2).double()
    t = trainer(20)
    quiet_fit(t, smb, loader(x[:18], y[:18]), loader(x[18:], y[18:]))
    members = smb(x[18:])  # 3 x 6
    assert float(t.callback_metrics["val_mse"]) == pytest.approx(
        float((members.mean(0) - y[18:]).pow(2).mean()), rel=1e-6
    ), "val_mse is the error of the predictive (ensemble) mean"
    per_member = (members - y[18:]).pow(2).mean(-1)
    assert float(t.callback_metrics["val_member_mse"]) == pytest.approx(
        float(per_member.mean()), rel=1e-6
    )
    assert float(t.callback_metrics["val_member_mse_std"]) == pytest.approx(
        float(per_member.std()), rel=1e-6
    )
    assert float(t.callback_metrics["val_member_mse"]) >= float(t.callback_metrics["val_mse"])


def test_log_metrics_off_skips_logging():
    x, y = data()
    module = NeuralEnsemble(2, num_members=2, width=8).double()
    module.log_metrics = False
    t = trainer(2, val=False)
    quiet_fit(t, module, loader(x, y))
    assert "train_loss" not in t.callback_metrics
