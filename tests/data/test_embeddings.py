"""Metric-learning datamodules: unseen evaluation classes, distractors, determinism, errors."""

import pytest
import torch

from dsbo.data import DigitsDataModule, SyntheticClassesDataModule
from dsbo.errors import ConfigError


def test_digits_split_by_class():
    dm = DigitsDataModule(train_classes=7, batch_size=64)
    x, y = dm.split("train")
    xe, ye = dm.split("eval")
    assert x.shape[1] == dm.in_dim == 64 and dm.num_classes == 7
    assert set(y.tolist()) == set(range(7)) and set(ye.tolist()) == {7, 8, 9}
    assert len(y) + len(ye) == 1797 and float(x.max()) <= 1.0
    xb, yb = next(iter(dm.train_dataloader()))
    assert xb.shape == (64, 64) and yb.dtype == torch.long


def test_synthetic_classes_are_unseen_deterministic_and_have_distractors():
    kwargs = dict(
        total_classes=50,
        train_classes=30,
        eval_classes=10,
        train_per_class=4,
        eval_per_class=3,
        latent_dim=8,
        in_dim=12,
        batch_size=32,
        seed=3,
    )
    dm = SyntheticClassesDataModule(**kwargs)
    x, y = dm.split("train")
    xe, ye = dm.split("eval")
    assert x.shape == (120, 12) and set(y.tolist()) == set(range(30))
    queries, distractors = ye[ye >= 0], ye[ye < 0]
    assert len(queries) == 30 and sorted(set(queries.tolist())) == list(range(10))
    assert len(distractors) == 10 and len(set(distractors.tolist())) == 10  # one row each
    assert torch.isfinite(xe).all() and float(x.abs().max()) <= 1.0  # tanh features
    again = SyntheticClassesDataModule(**kwargs)
    assert torch.equal(again.split("eval")[0], xe)
    other = SyntheticClassesDataModule(**{**kwargs, "seed": 4})
    assert not torch.equal(other.split("train")[0], x)
    # within-class distances are smaller than between-class ones (the map is informative)
    d = torch.cdist(xe[ye >= 0], xe[ye >= 0])
    same = queries[:, None] == queries[None, :]
    assert d[same & (d > 0)].mean() < d[~same].mean()


def test_bad_options_raise_config_errors():
    with pytest.raises(ConfigError, match="train_classes \\+ eval_classes"):
        SyntheticClassesDataModule(total_classes=10, train_classes=8, eval_classes=5)
    with pytest.raises(ConfigError, match="eval_per_class"):
        SyntheticClassesDataModule(eval_per_class=1)
    with pytest.raises(ConfigError, match="train_classes must be <= 9"):
        DigitsDataModule(train_classes=10)
    with pytest.raises(ConfigError, match="noise"):
        SyntheticClassesDataModule(noise=float("nan"))


def test_train_cli_takes_a_datamodule_by_class(tmp_path):
    """`python -m dsbo.train fit` with `--data <class>`: subclass mode, in_dim linked to the model."""
    import json

    from dsbo.cli.train import main, names_datamodule_class

    args = [
        "fit",
        "--model",
        "SparseEmbedding",
        "--model.num_classes",
        "7",
        "--model.embedding_dim",
        "6",
        "--model.hidden",
        "[8]",
        "--model.lam",
        "1.0",
        "--data",
        "dsbo.data.DigitsDataModule",
        "--data.batch_size",
        "256",
        "--trainer.max_epochs",
        "1",
        # a logger merges model and data hparams: a shared name must not disagree
        "--trainer.logger",
        "pytorch_lightning.loggers.CSVLogger",
        "--trainer.logger.save_dir",
        str(tmp_path),
        "--trainer.enable_progress_bar",
        "false",
        "--run_dir",
        str(tmp_path),
    ]
    assert names_datamodule_class(args) and not names_datamodule_class(
        ["fit", "--data.problem", "branin"]
    )
    assert main(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert 0 <= summary["val_recall@1"] <= 1 and summary["val_nnz"] <= 6


def test_synthetic_train_config_fits_with_a_logger(tmp_path):
    """The shipped config, shrunk: model and datamodule hyperparameters merge in the logger."""
    import json
    from pathlib import Path

    from dsbo.cli.train import main

    config = Path(__file__).resolve().parents[2] / "configs/train/sparse-embedding-synthetic.yaml"
    args = [
        "fit",
        "--config",
        str(config),
        "--data.total_classes",
        "60",
        "--data.train_classes",
        "40",
        "--data.eval_classes",
        "10",
        "--data.train_per_class",
        "4",
        "--model.num_classes",
        "40",
        "--model.embedding_dim",
        "16",
        "--trainer.max_epochs",
        "1",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.logger",
        "pytorch_lightning.loggers.CSVLogger",
        "--trainer.logger.save_dir",
        str(tmp_path),
        "--run_dir",
        str(tmp_path),
    ]
    with pytest.warns(UserWarning, match="no validation epoch was eligible"):
        assert main(args) == 0
    assert (tmp_path / "checkpoints" / "final.ckpt").is_file()
    # checkpoint selection respects the warm-up: the one epoch (inside the 400-step warm-up,
    # nearly dense) is not reported as a best model in budget
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["best_val_recall_in_budget"] == -1.0 and summary["val_eligible"] == 0.0
    assert 0 <= summary["val_recall@1"] <= 1
