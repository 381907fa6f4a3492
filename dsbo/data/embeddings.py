r"""Metric-learning data for :class:`~dsbo_zoo.sparse_embedding.SparseEmbedding`: ``(x, label)`` batches.

Both modules train on one set of classes and evaluate retrieval on **unseen** classes (Paria
thesis, section 5.4, after Sablayrolles et al.), so a model cannot score by encoding its
training classes. The evaluation split (``val`` = ``test``) holds ``eval_per_class`` samples of
each unseen class (queries and their matches) plus distractors with negative labels (one per
row: never queries, never relevant). Nothing is downloaded.

- :class:`DigitsDataModule`: scikit-learn's bundled 8 x 8 digits (1797 images); trains on
  digits ``0 .. train_classes - 1`` and evaluates on the rest. A pipeline smoke set.
- :class:`SyntheticClassesDataModule`: ``total_classes`` classes (default 1000) in a
  ``latent_dim``-dimensional latent space (centers on the unit sphere, isotropic noise
  ``noise``), pushed through a fixed random two-layer tanh network to ``in_dim`` features. The
  first ``train_classes`` classes train, the next ``eval_classes`` are evaluated, and each of
  the remaining classes gives one distractor.

Example:
    >>> dm = SyntheticClassesDataModule(total_classes=1000, train_classes=800, seed=0)
    >>> dm.setup("fit"); dm.in_dim, dm.num_classes
    (64, 800)
"""

from __future__ import annotations

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from dsbo.errors import ConfigError


def _positive_int(owner: str, name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
    return value


class _EmbeddingDataModule(pl.LightningDataModule):
    """Shared loaders: ``train`` shuffles (seeded), ``val``/``test`` serve the evaluation split."""

    def __init__(self, batch_size: int, seed: int) -> None:
        super().__init__()
        self.batch_size = _positive_int(type(self).__name__, "batch_size", batch_size)
        self.seed = int(seed)
        self.train_x: Tensor | None = None
        self.train_y: Tensor | None = None
        self.eval_x: Tensor | None = None
        self.eval_y: Tensor | None = None

    def _generate(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        raise TypeError("subclasses generate their data")

    def setup(self, stage: str | None = None) -> None:
        if self.train_x is None:
            self.train_x, self.train_y, self.eval_x, self.eval_y = self._generate()

    def split(self, name: str) -> tuple[Tensor, Tensor]:
        """``(x, labels)`` of ``train`` or ``eval``."""
        self.setup()
        if name == "train":
            return self.train_x, self.train_y
        if name == "eval":
            return self.eval_x, self.eval_y
        raise ConfigError(f"split must be train or eval, got {name!r}")

    def train_dataloader(self) -> DataLoader:
        self.setup()
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(
            TensorDataset(self.train_x, self.train_y),
            batch_size=self.batch_size,
            shuffle=True,
            drop_last=len(self.train_y) > self.batch_size,
            generator=generator,
        )

    def _eval_loader(self) -> DataLoader:
        self.setup()
        return DataLoader(
            TensorDataset(self.eval_x, self.eval_y), batch_size=max(self.batch_size, 1024)
        )

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader()

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader()

    def predict_dataloader(self) -> DataLoader:
        return self._eval_loader()


class DigitsDataModule(_EmbeddingDataModule):
    """scikit-learn's digits: train on ``0 .. train_classes - 1``, evaluate on the other digits.

    Args:
        train_classes: Digits used for training (1..9); the rest are unseen at evaluation.
        batch_size: Training batch size.
        seed: Shuffling seed.
    """

    image_shape = (1, 8, 8)
    in_dim = 64

    def __init__(self, train_classes: int = 7, batch_size: int = 128, seed: int = 0) -> None:
        super().__init__(batch_size, seed)
        self.train_classes = _positive_int("DigitsDataModule", "train_classes", train_classes)
        if train_classes > 9:
            raise ConfigError(
                f"DigitsDataModule: train_classes must be <= 9 (some digits must stay unseen), got {train_classes}"
            )
        self.save_hyperparameters()

    @property
    def num_classes(self) -> int:
        return self.train_classes

    def _generate(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = torch.as_tensor(digits.data / 16.0, dtype=torch.float32)
        y = torch.as_tensor(digits.target, dtype=torch.long)
        train = y < self.train_classes
        return x[train], y[train], x[~train], y[~train]


class SyntheticClassesDataModule(_EmbeddingDataModule):
    """Many classes through a fixed random nonlinear map (module docstring).

    Args:
        total_classes: All classes (train + eval + distractor classes); not ``num_classes``,
            which is the training classes (the model's hyperparameter of that name).
        train_classes: Classes the model trains on (its ``num_classes``).
        eval_classes: Unseen classes with queries at evaluation.
        train_per_class: Training samples per training class.
        eval_per_class: Samples per evaluation class (each queries the others).
        latent_dim: Dimension of the class latent space.
        in_dim: Feature dimension of the inputs.
        noise: Within-class standard deviation in the latent space (centers have unit norm).
        batch_size: Training batch size.
        seed: Seed of the classes, the map, the samples and the shuffling.
    """

    def __init__(
        self,
        total_classes: int = 1000,
        train_classes: int = 800,
        eval_classes: int = 100,
        train_per_class: int = 20,
        eval_per_class: int = 5,
        latent_dim: int = 32,
        in_dim: int = 64,
        noise: float = 0.1,
        batch_size: int = 256,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, seed)
        owner = "SyntheticClassesDataModule"
        for name, value, minimum in (
            ("total_classes", total_classes, 2),
            ("train_classes", train_classes, 1),
            ("eval_classes", eval_classes, 1),
            ("train_per_class", train_per_class, 1),
            ("eval_per_class", eval_per_class, 2),
            ("latent_dim", latent_dim, 1),
            ("in_dim", in_dim, 1),
        ):
            _positive_int(owner, name, value, minimum)
        if train_classes + eval_classes > total_classes:
            raise ConfigError(
                f"{owner}: train_classes + eval_classes = {train_classes + eval_classes} exceeds total_classes = {total_classes}"
            )
        if not (isinstance(noise, int | float) and np.isfinite(noise) and noise >= 0):
            raise ConfigError(f"{owner}: noise must be a finite number >= 0, got {noise!r}")
        self.train_classes, self.eval_classes = train_classes, eval_classes
        self.total_classes = total_classes
        self.train_per_class, self.eval_per_class = train_per_class, eval_per_class
        self.latent_dim, self.in_dim, self.noise = latent_dim, in_dim, float(noise)
        self.save_hyperparameters()

    @property
    def num_classes(self) -> int:
        """Training classes: what the model's class-weight layer needs."""
        return self.train_classes

    def feature_map(self, z: np.ndarray) -> np.ndarray:
        """The fixed map latent -> features: ``tanh(W2 tanh(W1 z))`` (weights from the seed)."""
        rng = np.random.default_rng([self.seed, 1])
        hidden = 2 * self.in_dim
        w1 = rng.standard_normal((self.latent_dim, hidden)) * (2.0 / np.sqrt(self.latent_dim))
        w2 = rng.standard_normal((hidden, self.in_dim)) * (1.5 / np.sqrt(hidden))
        return np.tanh(np.tanh(z @ w1) @ w2)

    def _generate(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        rng = np.random.default_rng([self.seed, 0])
        centers = rng.standard_normal((self.total_classes, self.latent_dim))
        centers /= np.linalg.norm(centers, axis=1, keepdims=True)

        def sample(classes: np.ndarray, per_class: int) -> tuple[np.ndarray, np.ndarray]:
            labels = np.repeat(classes, per_class)
            z = centers[labels] + self.noise * rng.standard_normal((len(labels), self.latent_dim))
            return self.feature_map(z), labels

        x_train, y_train = sample(np.arange(self.train_classes), self.train_per_class)
        eval_ids = np.arange(self.train_classes, self.train_classes + self.eval_classes)
        x_eval, y_eval = sample(eval_ids, self.eval_per_class)
        distractor_ids = np.arange(self.train_classes + self.eval_classes, self.total_classes)
        x_dis, _ = sample(distractor_ids, 1)
        y_dis = -1 - np.arange(len(distractor_ids))
        as_x = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
        as_y = lambda a: torch.as_tensor(a, dtype=torch.long)  # noqa: E731
        # Evaluation labels are renumbered from 0 (they index no class weights).
        y_eval = y_eval - self.train_classes
        return (
            as_x(x_train),
            as_y(y_train),
            as_x(np.concatenate([x_eval, x_dis])),
            as_y(np.concatenate([y_eval, y_dis])),
        )


__all__ = ["DigitsDataModule", "SyntheticClassesDataModule"]
