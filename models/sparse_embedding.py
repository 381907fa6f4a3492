r"""FLOPs-regularized sparse embeddings (Paria thesis, ch. 5; Paria et al., ICLR 2020).

A network maps an input to a sparse, unit-norm embedding,

.. math::  x \;\to\; \text{backbone} \;\to\; \text{linear} \;\to\; \rho \;\to\; f_\theta(x) = \rho(\cdot) / \|\rho(\cdot)\|_2,

with :math:`\rho` = ReLU, SThresh (:math:`\operatorname{sgn}(z)\max(|z| - \tau, 0)`, the
thesis' :math:`\tau = 1/2`) or the identity (a dense baseline). Retrieval with an inverted
index over :math:`n` database rows costs, per query, in expectation (section 5.3, eq. 5.1-5.2)

.. math::  \mathbb E[F(D, u_q)] / n = \mathcal F(f_\theta, \mathcal P) = \sum_j p_j^2,
           \qquad p_j = \mathbb P(f_\theta(X)_j \ne 0),

the *FLOPs per row*: :func:`flops_per_row` (plug-in :math:`\sum_j \bar p_j^2`) and
:func:`flops_per_row_unbiased` (the U-statistic :math:`\sum_j n_j(n_j - 1)/(n(n-1))`, unbiased
for :math:`\sum_j p_j^2` where the plug-in is biased upwards by :math:`\sum_j p_j(1-p_j)/n`).
Training minimizes a metric loss plus :math:`\lambda_t` times a regularizer (eq. 5.3-5.4):

- ``flops``: the relaxation :math:`\tilde{\mathcal F} = \sum_j \bar a_j^2`,
  :math:`\bar a_j = \frac1n \sum_i |f_\theta(x_i)_j|` (:func:`flops_relaxation`), whose
  gradient in :math:`f_\theta(x_i)_j` is :math:`2 \bar a_j \operatorname{sgn}(f_\theta(x_i)_j)/n`;
  for unit-norm rows it equals :math:`\frac1{n^2}\sum_{p,q}\langle |f(x_p)|, |f(x_q)|\rangle`
  (identity 5.5);
- ``l1``: :math:`\frac1n \sum_i \|f_\theta(x_i)\|_1` (:func:`l1_regularizer`);
- ``none``.

The regularizer is applied to the normalized embedding (the quantity whose products the index
computes, and the one identity 5.5 is about). The weight follows the quadratic warm-up
:math:`\lambda_t = \lambda \min(1, (t/T)^2)` (section 5.5, "practical considerations") when the
:class:`LambdaWarmup` callback is attached, else :math:`\lambda_t = \lambda` from the first step.

Losses: ArcFace (:class:`ArcFaceLoss`; the thesis uses :math:`s = 64`, :math:`m = 0.5`, the
defaults here) and the semi-hard triplet loss (:func:`semi_hard_triplet_loss`, margin 0.1, as
in the CIFAR-100 experiment of table 5.1).

Every validation epoch embeds the evaluation set (classes unseen in training, plus
distractors with negative labels) and logs, as ``val_*``: recall@k (torchmetrics'
``RetrievalHitRate``: "at least one same-class item in the top k", the metric-learning
recall@k; torchmetrics' ``RetrievalRecall`` is the information-retrieval recall, the share of
*all* relevant items retrieved, which is not the thesis' metric), precision@k
(``RetrievalPrecision``), the mean number of non-zeros per row, the exact FLOPs per row (plug-in
and unbiased), the balance ratio :math:`R_{sub} = \mathcal F / (d \bar p^2) \ge 1`, the number of
dead dimensions (never active). Retrieval is leave-one-out over the evaluation set with exact
inner products of the embeddings.

**Checkpoint selection.** Early in a run (during the :math:`\lambda` warm-up) the embedding is
nearly dense and its recall is the highest of the run, so "best ``val_recall@1``" keeps a dense
model. Each validation epoch therefore also logs ``val_recall_in_budget``: recall@k (the first
``recall_k``) if the epoch is *eligible*, else ``-1`` (below any recall, finite, so a
``ModelCheckpoint(monitor="val_recall_in_budget", mode="max")`` keeps the best eligible epoch).
An epoch is eligible when (``select_after_warmup``, default on) the regularization weight has
reached :math:`\lambda` (:math:`t \ge T` with :class:`LambdaWarmup`; always without it) and,
with ``select_max_flops`` / ``select_max_nnz``, its FLOPs per row / mean non-zeros per row are
within those budgets; ``val_eligible`` (1/0) logs which. It is the model's
``checkpoint_monitor``, so ``dsbo.train`` selects by it unless a config names another monitor;
a fit with no eligible epoch warns.

Batches are ``(x, label)``; ``x`` is ``n x in_dim`` (``n x C x H x W`` images are flattened).

Example:
    >>> model = SparseEmbedding(in_dim=64, num_classes=800, embedding_dim=256,
    ...                         regularizer="flops", lam=50.0)
    >>> trainer = pl.Trainer(max_epochs=10, callbacks=[LambdaWarmup(steps=500)])
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics.retrieval import RetrievalHitRate, RetrievalPrecision

ACTIVATIONS = ("relu", "sthresh", "none")
REGULARIZERS = ("flops", "l1", "none")
LOSSES = ("arcface", "triplet")
BACKBONES = ("mlp", "cnn")


# ---------------------------------------------------------------------- the paper's quantities
def flops_relaxation(a: Tensor) -> Tensor:
    r""":math:`\tilde{\mathcal F}(f, \mathcal D) = \sum_j \bar a_j^2`, :math:`\bar a_j` the mean
    over the batch (rows of ``a``, ``n x d``) of :math:`|a_{ij}|` (eq. 5.4)."""
    return a.abs().mean(dim=0).pow(2).sum()


def l1_regularizer(a: Tensor) -> Tensor:
    r"""The ℓ1 baseline :math:`\frac1n\sum_i \|a_i\|_1` (mean over the batch of the rows' ℓ1 norms)."""
    return a.abs().sum(dim=1).mean()


def activation_probabilities(codes: Tensor) -> Tensor:
    r""":math:`\bar p_j = \frac1n \sum_i \mathbb I[c_{ij} \ne 0]` for ``codes`` ``n x d``."""
    return (codes != 0).double().mean(dim=0)


def flops_per_row(codes: Tensor) -> Tensor:
    r"""Plug-in FLOPs per row :math:`\mathcal F(f, \mathcal D) = \sum_j \bar p_j^2` (eq. 5.2)."""
    return activation_probabilities(codes).pow(2).sum()


def flops_per_row_unbiased(codes: Tensor) -> Tensor:
    r"""Unbiased FLOPs per row: :math:`\sum_j n_j (n_j - 1) / (n (n - 1))` with :math:`n_j` the
    non-zeros of column :math:`j`: the share of *distinct* pairs of rows that are both active
    in :math:`j`, whose expectation is exactly :math:`\sum_j p_j^2` for i.i.d. rows."""
    n = codes.shape[0]
    if n < 2:
        raise ValueError(f"the unbiased FLOPs estimate needs at least 2 rows, got {n}")
    counts = (codes != 0).double().sum(dim=0)
    return (counts * (counts - 1)).sum() / (n * (n - 1))


def balance_ratio(codes: Tensor) -> Tensor:
    r"""Sub-optimality ratio :math:`R_{sub} = \mathcal F / (d \bar p^2)` (section 5.5.1),
    :math:`\bar p` the mean activation probability; ``>= 1`` with equality iff every dimension
    is active equally often (``nan`` when nothing is active)."""
    p = activation_probabilities(codes)
    mean = p.mean()
    if mean == 0:
        return torch.tensor(float("nan"), dtype=torch.double)
    return p.pow(2).sum() / (p.numel() * mean**2)


def warmup_weight(step: int, lam: float, steps: int) -> float:
    r"""The quadratic warm-up :math:`\lambda_t = \lambda \min(1, (t/T)^2)`; ``steps = 0`` is constant."""
    if steps <= 0:
        return float(lam)
    return float(lam) * min(1.0, (step / steps) ** 2)


# ---------------------------------------------------------------------- layers and losses
class SThresh(nn.Module):
    r"""Soft thresholding :math:`\operatorname{sgn}(z)\max(|z| - \tau, 0)` (thesis: :math:`\tau = 1/2`)."""

    def __init__(self, tau: float = 0.5) -> None:
        super().__init__()
        self.tau = float(tau)

    def forward(self, z: Tensor) -> Tensor:
        return torch.sign(z) * F.relu(z.abs() - self.tau)


class ArcFaceLoss(nn.Module):
    r"""ArcFace (Deng et al. 2019): cross entropy of :math:`s\cos(\theta_{y} + m)` for the true
    class and :math:`s\cos\theta_k` for the others, :math:`\cos\theta_k = \langle e, w_k\rangle`
    with unit class weights :math:`w_k`. Where :math:`\theta_y + m > \pi` the target logit is
    :math:`\cos\theta_y - m \sin m` (the reference implementation's monotone continuation)."""

    def __init__(
        self, embedding_dim: int, num_classes: int, s: float = 64.0, m: float = 0.5
    ) -> None:
        super().__init__()
        self.s, self.m = float(s), float(m)
        self.weight = nn.Parameter(torch.empty(num_classes, embedding_dim))
        nn.init.xavier_uniform_(self.weight)

    def logits(self, embedding: Tensor, labels: Tensor) -> Tensor:
        cos = F.normalize(embedding, dim=1) @ F.normalize(self.weight, dim=1).T
        cos = cos.clamp(-1 + 1e-7, 1 - 1e-7)
        target = cos.gather(1, labels[:, None])
        sin = (1 - target**2).sqrt()
        shifted = target * math.cos(self.m) - sin * math.sin(self.m)
        shifted = torch.where(
            target > math.cos(math.pi - self.m), shifted, target - self.m * math.sin(self.m)
        )
        return self.s * cos.scatter(1, labels[:, None], shifted)

    def forward(self, embedding: Tensor, labels: Tensor) -> Tensor:
        return F.cross_entropy(self.logits(embedding, labels), labels)


def semi_hard_triplet_loss(embedding: Tensor, labels: Tensor, margin: float = 0.1) -> Tensor:
    r"""Semi-hard triplet loss (Schroff et al. 2015) on squared Euclidean distances.

    For every anchor-positive pair :math:`(a, p)` the negative is the closest :math:`n` with
    :math:`d_{an} > d_{ap}` (semi-hard); when there is none, the farthest negative (as in
    TensorFlow's ``triplet_semihard_loss``). The loss is the mean over anchor-positive pairs of
    :math:`\max(0, d_{ap} - d_{an} + \text{margin})`; ``0`` when the batch has no pair.
    """
    dist = torch.cdist(embedding, embedding).pow(2)
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    positive = same & ~eye
    if not positive.any():
        return embedding.sum() * 0.0
    a_idx, p_idx = positive.nonzero(as_tuple=True)
    d_ap = dist[a_idx, p_idx]  # P
    d_an = dist[a_idx]  # P x n
    negative = ~same[a_idx]
    inf = torch.finfo(dist.dtype).max
    semi = negative & (d_an > d_ap[:, None])
    closest = torch.where(semi, d_an, torch.full_like(d_an, inf)).min(dim=1).values
    farthest = torch.where(negative, d_an, torch.full_like(d_an, -inf)).max(dim=1).values
    d_neg = torch.where(semi.any(dim=1), closest, farthest)
    has_negative = negative.any(dim=1)
    losses = F.relu(d_ap - d_neg + margin)[has_negative]
    return losses.mean() if losses.numel() else embedding.sum() * 0.0


class LambdaWarmup(pl.Callback):
    r"""Sets the module's regularization weight to :math:`\lambda \min(1, (t/T)^2)` before each
    training step :math:`t` (``trainer.global_step``), :math:`T` = ``steps``. The thesis does not
    state :math:`T` (PAPER-NOTES); choose it as a fraction of the run."""

    def __init__(self, steps: int) -> None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ValueError(f"LambdaWarmup.steps must be an integer >= 0, got {steps!r}")
        self.steps = steps

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int
    ) -> None:
        pl_module.reg_weight = warmup_weight(trainer.global_step, pl_module.lam, self.steps)


# ---------------------------------------------------------------------- the module
def _mlp(in_dim: int, hidden: Sequence[int]) -> tuple[nn.Module, int]:
    layers: list[nn.Module] = []
    width = in_dim
    for h in hidden:
        layers += [nn.Linear(width, h), nn.BatchNorm1d(h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers), width


def _cnn(image_shape: Sequence[int], hidden: Sequence[int]) -> tuple[nn.Module, int]:
    channels = image_shape[0]
    layers: list[nn.Module] = [nn.Unflatten(1, tuple(image_shape))]
    for h in hidden:
        layers += [nn.Conv2d(channels, h, 3, padding=1), nn.BatchNorm2d(h), nn.ReLU()]
        channels = h
    layers += [nn.AdaptiveAvgPool2d(2), nn.Flatten()]
    return nn.Sequential(*layers), channels * 4


class SparseEmbedding(pl.LightningModule):
    """A sparse, unit-norm embedding trained with a metric loss and a FLOPs (or ℓ1) penalty.

    Args:
        in_dim: Input dimension (images: ``C * H * W``, with ``image_shape``).
        num_classes: Training classes (ArcFace's class weights); must match the data.
        embedding_dim: ``d``; keep it below ``num_classes`` (section 5.4: otherwise the
            one-hot class code is a trivial sparse solution).
        hidden: Backbone widths (MLP layers, or CNN channels).
        backbone: ``mlp`` or ``cnn`` (a small CNN over ``image_shape``).
        image_shape: ``(C, H, W)`` for the CNN.
        activation: ``relu``, ``sthresh`` (soft threshold at ``tau``) or ``none`` (dense).
        tau: SThresh threshold (thesis: 1/2).
        regularizer: ``flops`` (F~), ``l1`` or ``none``.
        lam: Final regularization weight lambda.
        loss: ``arcface`` (``s``, ``m``) or ``triplet`` (``margin``).
        s, m: ArcFace scale and angular margin (thesis: 64 and 0.5).
        margin: Triplet margin (0.1).
        lr: Adam learning rate.
        recall_k, precision_k: The ``k`` of the logged recall@k and precision@k.
        select_after_warmup: Only epochs whose regularization weight has reached ``lam`` are
            eligible for ``val_recall_in_budget`` (module docstring).
        select_max_flops: FLOPs-per-row budget (``val_flops``) of an eligible epoch (``None``:
            no budget).
        select_max_nnz: Mean non-zeros per row (``val_nnz``) budget (``None``: no budget).
    """

    #: ``dsbo.train``'s default ``ModelCheckpoint`` monitor: the best recall among eligible epochs.
    checkpoint_monitor = ("val_recall_in_budget", "max")

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        embedding_dim: int = 256,
        hidden: Sequence[int] = (256, 256),
        backbone: str = "mlp",
        image_shape: Sequence[int] | None = None,
        activation: str = "relu",
        tau: float = 0.5,
        regularizer: str = "flops",
        lam: float = 0.0,
        loss: str = "arcface",
        s: float = 64.0,
        m: float = 0.5,
        margin: float = 0.1,
        lr: float = 1e-3,
        recall_k: Sequence[int] = (1, 10),
        precision_k: Sequence[int] = (4, 16),
        select_after_warmup: bool = True,
        select_max_flops: float | None = None,
        select_max_nnz: float | None = None,
    ) -> None:
        super().__init__()
        for name, value, allowed in (
            ("activation", activation, ACTIVATIONS),
            ("regularizer", regularizer, REGULARIZERS),
            ("loss", loss, LOSSES),
            ("backbone", backbone, BACKBONES),
        ):
            if value not in allowed:
                raise ValueError(
                    f"SparseEmbedding.{name}={value!r}: choose one of {', '.join(allowed)}"
                )
        for name, value in (
            ("in_dim", in_dim),
            ("num_classes", num_classes),
            ("embedding_dim", embedding_dim),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"SparseEmbedding.{name} must be a positive integer, got {value!r}"
                )
        if not (isinstance(lam, int | float) and math.isfinite(lam) and lam >= 0):
            raise ValueError(f"SparseEmbedding.lam must be a finite number >= 0, got {lam!r}")
        for name, value in (
            ("select_max_flops", select_max_flops),
            ("select_max_nnz", select_max_nnz),
        ):
            if value is not None and not (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and math.isfinite(value)
                and value >= 0
            ):
                raise ValueError(
                    f"SparseEmbedding.{name} must be a finite number >= 0 or None, got {value!r}"
                )
        if not recall_k:
            raise ValueError(
                "SparseEmbedding.recall_k must name at least one k (the selection uses the first)"
            )
        if backbone == "cnn":
            if image_shape is None or len(image_shape) != 3 or math.prod(image_shape) != in_dim:
                raise ValueError(
                    f"SparseEmbedding: backbone cnn needs image_shape (C, H, W) with C*H*W = in_dim = {in_dim}, got {image_shape!r}"
                )
        self.save_hyperparameters()
        if backbone == "mlp":
            self.backbone, width = _mlp(in_dim, hidden)
        else:
            self.backbone, width = _cnn(image_shape, hidden)
        self.head = nn.Linear(width, embedding_dim)
        self.activation = {"relu": nn.ReLU(), "sthresh": SThresh(tau), "none": nn.Identity()}[
            activation
        ]
        self.arcface = ArcFaceLoss(embedding_dim, num_classes, s, m) if loss == "arcface" else None
        self.lam = float(lam)
        #: lambda_t of the current step (set by :class:`LambdaWarmup`; lambda without it).
        self.reg_weight = float(lam)
        self._val_outputs: list[tuple[Tensor, Tensor]] = []
        #: Validation epochs (of this fit) eligible for ``val_recall_in_budget``.
        self.eligible_epochs: list[int] = []

    # ------------------------------------------------------------------ embedding
    def dense_embedding(self, x: Tensor) -> Tensor:
        """The unit-norm pre-activation (the same network without ``rho``): the dense vectors
        that re-rank a sparse shortlist."""
        return F.normalize(self.head(self.backbone(x.flatten(1).to(self.head.weight.dtype))), dim=1)

    def forward(self, x: Tensor) -> Tensor:
        """The sparse unit-norm embedding ``n x embedding_dim`` (an all-zero row stays zero)."""
        z = self.head(self.backbone(x.flatten(1).to(self.head.weight.dtype)))
        return F.normalize(self.activation(z), dim=1)

    def regularizer(self, embedding: Tensor) -> Tensor:
        kind = self.hparams.regularizer
        if kind == "flops":
            return flops_relaxation(embedding)
        if kind == "l1":
            return l1_regularizer(embedding)
        return embedding.new_zeros(())

    def metric_loss(self, embedding: Tensor, labels: Tensor) -> Tensor:
        if self.arcface is not None:
            return self.arcface(embedding, labels)
        return semi_hard_triplet_loss(embedding, labels, self.hparams.margin)

    # ------------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        datamodule = (
            getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        )
        classes = getattr(datamodule, "num_classes", None)
        if classes is not None and classes != self.hparams.num_classes:
            raise ValueError(
                f"SparseEmbedding.num_classes={self.hparams.num_classes} but the data have {classes} training classes"
            )

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        x, labels = batch
        embedding = self(x)
        metric = self.metric_loss(embedding, labels)
        reg = self.regularizer(embedding)
        loss = metric + self.reg_weight * reg
        with torch.no_grad():
            nnz = (embedding != 0).sum(dim=1).float().mean()
        values = {
            "train_loss": loss,
            "train_metric_loss": metric,
            "train_regularizer": reg,
            "train_nnz": nnz,
            "reg_weight": torch.tensor(self.reg_weight),
        }
        self.log_dict(values, on_step=False, on_epoch=True, batch_size=len(labels))
        return loss

    def validation_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        x, labels = batch
        self._val_outputs.append((self(x).detach(), labels.detach()))

    def test_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> None:
        self.validation_step(batch, batch_idx)

    def predict_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        return self(batch[0])

    def on_validation_epoch_start(self) -> None:
        self._val_outputs = []

    def on_test_epoch_start(self) -> None:
        self._val_outputs = []

    def on_validation_epoch_end(self) -> None:
        self._log_eval("val")

    def on_test_epoch_end(self) -> None:
        self._log_eval("test")

    def _log_eval(self, stage: str) -> None:
        if not self._val_outputs:
            return
        embedding = torch.cat([e for e, _ in self._val_outputs]).float().cpu()
        labels = torch.cat([y for _, y in self._val_outputs]).cpu()
        self._val_outputs = []
        metrics = evaluation_metrics(
            embedding, labels, self.hparams.recall_k, self.hparams.precision_k
        )
        if stage == "val":
            eligible = self.eligible(metrics)
            recall = metrics.get(f"recall@{self.hparams.recall_k[0]}")
            metrics["eligible"] = float(eligible)
            metrics["recall_in_budget"] = recall if eligible and recall is not None else -1.0
            if not self.trainer.sanity_checking:
                self._validated = True
                if eligible:
                    self.eligible_epochs.append(self.current_epoch)
        self.log_dict({f"{stage}_{k}": v for k, v in metrics.items()}, on_step=False, on_epoch=True)

    def eligible(self, metrics: dict[str, float]) -> bool:
        """Whether an epoch with these evaluation metrics may be selected (class docstring)."""
        h = self.hparams
        if h.select_after_warmup and self.reg_weight < self.lam:
            return False
        if h.select_max_flops is not None and not metrics["flops"] <= h.select_max_flops:
            return False
        return h.select_max_nnz is None or metrics["nnz"] <= h.select_max_nnz

    def on_fit_start(self) -> None:
        self.eligible_epochs, self._validated = [], False

    def on_fit_end(self) -> None:
        if getattr(self, "_validated", False) and not self.eligible_epochs:
            warnings.warn(
                "SparseEmbedding: no validation epoch was eligible for checkpoint selection "
                f"(select_after_warmup={self.hparams.select_after_warmup}, select_max_flops="
                f"{self.hparams.select_max_flops}, select_max_nnz={self.hparams.select_max_nnz}); "
                "val_recall_in_budget stayed -1 and its best checkpoint is not a model within the budget",
                stacklevel=2,
            )

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def evaluation_metrics(
    embedding: Tensor,
    labels: Tensor,
    recall_k: Sequence[int] = (1,),
    precision_k: Sequence[int] = (),
) -> dict[str, float]:
    """Sparsity and leave-one-out retrieval metrics of an evaluation set (module docstring).

    ``labels < 0`` mark distractors: never queries, never relevant. A query is every row with a
    label ``>= 0`` that has another row of its class.
    """
    out: dict[str, float] = {
        "nnz": float((embedding != 0).sum(dim=1).float().mean()),
        "flops": float(flops_per_row(embedding)),
        "flops_unbiased": float(flops_per_row_unbiased(embedding)),
        "r_sub": float(balance_ratio(embedding)),
        "dead": float((activation_probabilities(embedding) == 0).sum()),
    }
    scores = embedding @ embedding.T
    same = (labels[:, None] == labels[None, :]) & (labels[:, None] >= 0)
    n = len(labels)
    off = ~torch.eye(n, dtype=torch.bool)
    queries = ((same & off).any(dim=1)).nonzero().flatten()
    if len(queries) == 0:
        return out
    sub_scores = scores[queries][off[queries]].reshape(len(queries), n - 1)
    sub_target = same[queries][off[queries]].reshape(len(queries), n - 1)
    index = torch.arange(len(queries))[:, None].expand(-1, n - 1)
    for k in recall_k:
        metric = RetrievalHitRate(top_k=int(k))
        out[f"recall@{k}"] = float(
            metric(sub_scores.flatten(), sub_target.flatten(), indexes=index.flatten())
        )
    for k in precision_k:
        metric = RetrievalPrecision(top_k=int(k))
        out[f"precision@{k}"] = float(
            metric(sub_scores.flatten(), sub_target.flatten(), indexes=index.flatten())
        )
    return out


__all__ = [
    "ArcFaceLoss",
    "LambdaWarmup",
    "SThresh",
    "SparseEmbedding",
    "activation_probabilities",
    "balance_ratio",
    "evaluation_metrics",
    "flops_per_row",
    "flops_per_row_unbiased",
    "flops_relaxation",
    "l1_regularizer",
    "semi_hard_triplet_loss",
    "warmup_weight",
]
