"""Seq2SeqRNN (HiReD's "RNN" baseline): weights shared across nodes, the batch contract,
overfitting one window, HiReD's metric names, a checkpoint round trip."""

import logging
import warnings

import pytest
import torch
from hierarchy_helpers import WindowData, coherent_window, quiet_trainer, tree_hierarchy

from dsbo_zoo.forecast_metrics import level_metrics
from dsbo_zoo.seq2seq_rnn import Seq2SeqRNN

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)
warnings.filterwarnings("ignore", message=".*does not have many workers.*")


def test_shared_weights_no_node_identity():
    h = tree_hierarchy((2, 3))
    batch = coherent_window(h, dtype=torch.float64)
    model = Seq2SeqRNN(in_dim=3).double()
    with torch.no_grad():
        pred = model(batch)
        assert pred.shape == (9, 4)
        # a node's forecast depends on its own history only: permuting rows permutes forecasts
        perm = torch.randperm(9, generator=torch.Generator().manual_seed(0))
        permuted = {
            k: (v[perm] if k in ("y_hist", "y_fut", "y_snaive", "nodes", "level", "scale") else v)
            for k, v in batch.items()
        }
        torch.testing.assert_close(model(permuted), pred[perm])
        torch.testing.assert_close(model(dict(batch, nodes=batch["nodes"].flip(0))), pred)
        # z_hist is not an input of the baseline, nor y_snaive (no seasonal-naive residual): it may be absent
        torch.testing.assert_close(
            model(dict(batch, z_hist=torch.randn_like(batch["z_hist"]))), pred
        )
        torch.testing.assert_close(model({k: v for k, v in batch.items() if k != "y_snaive"}), pred)
    # about table 6.5's 8k parameters at the Tourism sizes
    assert 6000 < sum(p.numel() for p in Seq2SeqRNN(in_dim=2).parameters()) < 10000
    with pytest.raises(ValueError, match="x_fut has size 4 but the model expects 7"):
        Seq2SeqRNN(in_dim=3, horizon=7).double()(batch)


def test_overfits_one_window_and_logs_hired_metric_names(tmp_path):
    torch.manual_seed(0)
    h = tree_hierarchy((2, 2))
    batch = coherent_window(h)
    model = Seq2SeqRNN(in_dim=3, hidden_dim=16, lr=0.01, early_stopping_patience=None).float()
    with torch.no_grad():
        before = float((model(batch) - batch["y_fut"]).abs().mean())
    trainer = quiet_trainer(max_epochs=4)
    trainer.fit(model, datamodule=WindowData(h, [batch], times=100))
    with torch.no_grad():
        pred = model(batch)
    after = float((pred - batch["y_fut"]).abs().mean())
    assert after < before / 10, (before, after)
    logged = trainer.callback_metrics
    assert {
        "train_loss",
        "train_mae",
        "train_ereg",
        "val_wape",
        "val_smape",
        "val_coherence",
        "val_wape_level2",
    } <= set(logged)
    assert float(logged["train_ereg"]) == 0.0
    scale = batch["scale"][:, None]
    expect = level_metrics(pred * scale, batch["y_fut"] * scale, batch["level"])
    assert float(logged["val_wape"]) == pytest.approx(float(expect["wape_mean"]), rel=1e-5)
    # no residual, but the seasonal-naive WAPE of the batches' y_snaive is logged for comparison
    snaive = level_metrics(batch["y_snaive"] * scale, batch["y_fut"] * scale, batch["level"])
    assert float(logged["val_wape_seasonal_naive"]) == pytest.approx(
        float(snaive["wape_mean"]), rel=1e-5
    )
    assert float(logged["val_wape_seasonal_naive"]) != pytest.approx(
        float(logged["val_wape"]), rel=1e-3
    )

    path = tmp_path / "rnn.ckpt"
    trainer.save_checkpoint(path)
    loaded = Seq2SeqRNN.load_from_checkpoint(path, weights_only=True).float().eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(batch), pred)
    out = loaded.predict_step(batch, 0)
    torch.testing.assert_close(out["forecast"], pred * scale)
