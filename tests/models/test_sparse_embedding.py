"""SparseEmbedding (thesis ch. 5): F~ and its gradient, identity 5.5, the unbiased FLOPs
U-statistic, R_sub, the warm-up schedule, the losses, and a real Lightning fit."""

import logging
import math
import warnings

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo_zoo.sparse_embedding import (
    ArcFaceLoss,
    LambdaWarmup,
    SparseEmbedding,
    SThresh,
    balance_ratio,
    evaluation_metrics,
    flops_per_row,
    flops_per_row_unbiased,
    flops_relaxation,
    l1_regularizer,
    semi_hard_triplet_loss,
    warmup_weight,
)

logging.getLogger("pytorch_lightning").setLevel(logging.WARNING)


def test_flops_relaxation_value_and_gradient():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 5, generator=g).requires_grad_(True)
    abar = a.detach().abs().mean(0)
    value = flops_relaxation(a)
    torch.testing.assert_close(value, (abar**2).sum())
    value.backward()
    # d/da_ij sum_j abar_j^2 = 2 abar_j sign(a_ij) / n
    torch.testing.assert_close(a.grad, 2 * abar * torch.sign(a.detach()) / 6)
    torch.testing.assert_close(l1_regularizer(a.detach()), a.detach().abs().sum() / 6)


def test_identity_5_5_for_unit_norm_rows():
    g = torch.Generator().manual_seed(1)
    a = torch.nn.functional.normalize(torch.relu(torch.randn(9, 7, generator=g)) + 1e-3, dim=1)
    a[0, :3] *= -1  # signs do not matter: absolute values
    pairwise = (a.abs() @ a.abs().T).sum() / 9**2
    torch.testing.assert_close(flops_relaxation(a), pairwise)
    # the bound F~ <= 1 for unit vectors, equality iff all |rows| coincide
    assert flops_relaxation(a) <= 1.0
    same = a[:1].abs().expand(4, -1)
    torch.testing.assert_close(flops_relaxation(same), torch.tensor(1.0))


def test_unbiased_flops_u_statistic_monte_carlo():
    """E[U] = sum_j p_j^2 exactly; the plug-in sum_j pbar_j^2 is biased by sum_j p_j(1-p_j)/n."""
    g = torch.Generator().manual_seed(2)
    p = torch.tensor([0.05, 0.1, 0.3, 0.6])
    n, reps = 6, 40000
    # correlated activity is allowed (linearity of expectation): dims 2, 3 share a common draw
    u = torch.rand(reps, n, 4, generator=g)
    u[..., 3] = u[..., 2]  # dims 2 and 3 are active together (marginals still 0.3 and 0.6)
    active = u < p
    p_true = p.double()
    unbiased = torch.stack([flops_per_row_unbiased(active[r].double()) for r in range(reps)])
    plugin = torch.stack([flops_per_row(active[r].double()) for r in range(reps)])
    target = (p_true**2).sum()
    se = unbiased.std() / math.sqrt(reps)
    assert abs(unbiased.mean() - target) < 4 * se
    bias = (p_true * (1 - p_true)).sum() / n
    assert abs(plugin.mean() - target - bias) < 4 * plugin.std() / math.sqrt(reps)
    assert bias > 10 * se  # the plug-in bias is resolvable at this sample size


def test_flops_per_row_counts_exact_pairs_and_balance_ratio():
    codes = torch.tensor([[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    torch.testing.assert_close(flops_per_row(codes), torch.tensor(4 * 0.25**2, dtype=torch.double))
    assert flops_per_row_unbiased(codes) == 0  # no two rows share a dimension
    torch.testing.assert_close(balance_ratio(codes), torch.tensor(1.0, dtype=torch.double))
    skewed = torch.tensor([[1.0, 0], [1.0, 0], [1.0, 1.0], [1.0, 0]])  # p = (1, 1/4)
    expected = (1 + 1 / 16) / (2 * (5 / 8) ** 2)
    torch.testing.assert_close(balance_ratio(skewed), torch.tensor(expected, dtype=torch.double))
    # brute force: FLOPs per row = mean over (query, row) pairs of common non-zeros
    g = torch.Generator().manual_seed(3)
    c = (torch.rand(50, 8, generator=g) < 0.3).double()
    pairs = ((c != 0).double() @ (c != 0).double().T).mean()
    torch.testing.assert_close(flops_per_row(c), pairs)


def test_warmup_schedule_values():
    assert warmup_weight(0, 10.0, 100) == 0.0
    assert warmup_weight(50, 10.0, 100) == pytest.approx(2.5)  # lambda (t/T)^2
    assert warmup_weight(100, 10.0, 100) == 10.0
    assert warmup_weight(1000, 10.0, 100) == 10.0
    assert warmup_weight(3, 10.0, 0) == 10.0
    with pytest.raises(ValueError, match="steps"):
        LambdaWarmup(-1)


def test_sthresh_and_arcface_logits():
    torch.testing.assert_close(
        SThresh(0.5)(torch.tensor([-2.0, -0.3, 0.2, 0.7])), torch.tensor([-1.5, 0.0, 0.0, 0.2])
    )
    torch.manual_seed(0)
    loss = ArcFaceLoss(4, 3, s=64.0, m=0.5)
    e = torch.nn.functional.normalize(torch.randn(5, 4), dim=1)
    labels = torch.tensor([0, 1, 2, 0, 1])
    w = torch.nn.functional.normalize(loss.weight.detach(), dim=1)
    cos = e @ w.T
    theta = torch.acos(cos.gather(1, labels[:, None]).clamp(-1, 1))
    expected = 64 * cos.scatter(
        1,
        labels[:, None],
        torch.where(
            theta + 0.5 < math.pi,
            torch.cos(theta + 0.5),
            cos.gather(1, labels[:, None]) - 0.5 * math.sin(0.5),
        ),
    )
    torch.testing.assert_close(loss.logits(e, labels), expected, atol=1e-4, rtol=1e-4)
    assert torch.isfinite(loss(e, labels))


def test_semi_hard_triplet_matches_brute_force():
    g = torch.Generator().manual_seed(4)
    e = torch.nn.functional.normalize(torch.randn(8, 3, generator=g), dim=1)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 0, 1])
    d = torch.cdist(e, e) ** 2
    losses = []
    for a in range(8):
        for p in range(8):
            if a == p or labels[a] != labels[p]:
                continue
            negs = [n for n in range(8) if labels[n] != labels[a]]
            semi = [d[a, n] for n in negs if d[a, n] > d[a, p]]
            dn = min(semi) if semi else max(d[a, n] for n in negs)
            losses.append(torch.relu(d[a, p] - dn + 0.1))
    torch.testing.assert_close(semi_hard_triplet_loss(e, labels, 0.1), torch.stack(losses).mean())


def test_evaluation_metrics_against_brute_force():
    g = torch.Generator().manual_seed(5)
    e = torch.nn.functional.normalize(torch.relu(torch.randn(30, 6, generator=g)) + 1e-6, dim=1)
    labels = torch.cat([torch.arange(6).repeat(4), -1 - torch.arange(6)])
    m = evaluation_metrics(e, labels, recall_k=(1, 5), precision_k=(3,))
    s = e @ e.T
    s.fill_diagonal_(-float("inf"))
    hits1, hits5, prec3 = [], [], []
    for i in range(24):
        order = torch.argsort(s[i], descending=True)
        rel = labels[order] == labels[i]
        hits1.append(float(rel[:1].any()))
        hits5.append(float(rel[:5].any()))
        prec3.append(float(rel[:3].double().mean()))
    assert m["recall@1"] == pytest.approx(sum(hits1) / 24)
    assert m["recall@5"] == pytest.approx(sum(hits5) / 24)
    assert m["precision@3"] == pytest.approx(sum(prec3) / 24)
    assert m["nnz"] == pytest.approx(float((e != 0).sum(1).double().mean()))


class _Record(pl.Callback):
    def __init__(self):
        self.weights = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.weights.append(pl_module.reg_weight)


@pytest.mark.parametrize(
    "regularizer,loss,activation",
    [("flops", "arcface", "relu"), ("l1", "triplet", "sthresh"), ("none", "arcface", "none")],
)
def test_fit_logs_every_epoch_metric_and_warms_up(regularizer, loss, activation):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    train_y = torch.arange(6).repeat(8)
    centers = torch.randn(12, 10, generator=g)
    train_x = centers[train_y] + 0.1 * torch.randn(48, 10, generator=g)
    eval_y = torch.cat([torch.arange(6, 12).repeat(3), torch.tensor([-1, -2])])
    eval_x = centers[eval_y.clamp_min(0)] + 0.1 * torch.randn(20, 10, generator=g)
    model = SparseEmbedding(
        10,
        6,
        embedding_dim=5,
        hidden=(16,),
        activation=activation,
        regularizer=regularizer,
        lam=2.0,
        loss=loss,
        lr=1e-2,
    )
    record = _Record()
    trainer = pl.Trainer(
        max_epochs=3,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[LambdaWarmup(steps=4), record],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(
            model,
            DataLoader(TensorDataset(train_x, train_y), batch_size=16),
            DataLoader(TensorDataset(eval_x, eval_y), batch_size=64),
        )
    assert record.weights == [2.0 * min(1.0, (t / 4) ** 2) for t in range(9)]
    for key in (
        "train_loss",
        "train_regularizer",
        "train_nnz",
        "val_recall@1",
        "val_precision@4",
        "val_flops",
        "val_flops_unbiased",
        "val_r_sub",
        "val_nnz",
        "val_dead",
    ):
        assert key in trainer.callback_metrics and torch.isfinite(trainer.callback_metrics[key])
    codes = model(eval_x)
    norms = codes.detach().norm(dim=1)
    assert torch.all(
        ((norms - 1).abs() < 1e-6) | (norms == 0)
    )  # unit norm; an all-zero code stays 0
    if activation == "none":
        assert trainer.callback_metrics["val_nnz"] == 5  # dense


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="regularizer"):
        SparseEmbedding(4, 3, regularizer="l0")
    with pytest.raises(ValueError, match="image_shape"):
        SparseEmbedding(64, 3, backbone="cnn", image_shape=(1, 4, 4))
    with pytest.raises(ValueError, match="lam"):
        SparseEmbedding(4, 3, lam=-1.0)
    cnn = SparseEmbedding(
        64, 3, backbone="cnn", image_shape=(1, 8, 8), hidden=(4,), embedding_dim=6
    )
    assert cnn(torch.rand(2, 64)).shape == (2, 6)


class _EpochMetrics(pl.Callback):
    def __init__(self):
        self.rows = []

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            m = trainer.callback_metrics
            self.rows.append(
                {
                    "epoch": trainer.current_epoch,
                    "reg_weight": pl_module.reg_weight,
                    **{
                        k: float(m[f"val_{k}"])
                        for k in ("recall@1", "nnz", "flops", "recall_in_budget", "eligible")
                    },
                }
            )


def _selection_fit(tmp_path, **selection):
    """A tiny synthetic run: epoch 0 is inside the lambda warm-up (nearly dense, the run's best
    recall@1); from epoch 1 lambda = 1000 sparsifies the codes and costs recall."""
    import re

    from pytorch_lightning.callbacks import ModelCheckpoint

    pl.seed_everything(0, verbose=False)
    g = torch.Generator().manual_seed(0)
    train_y = torch.arange(8).repeat(8)
    centers = torch.randn(16, 12, generator=g)
    train_x = centers[train_y] + 0.3 * torch.randn(64, 12, generator=g)
    eval_y = torch.cat([torch.arange(8, 16).repeat(3), torch.tensor([-1, -2, -3, -4])])
    eval_x = centers[eval_y.clamp_min(0)] + 0.3 * torch.randn(28, 12, generator=g)
    model = SparseEmbedding(
        12, 8, embedding_dim=16, hidden=(32,), regularizer="flops", lam=1000.0, lr=1e-2, **selection
    )
    assert SparseEmbedding.checkpoint_monitor == ("val_recall_in_budget", "max")
    record = _EpochMetrics()
    best = ModelCheckpoint(
        dirpath=tmp_path, monitor="val_recall_in_budget", mode="max", save_top_k=1
    )
    trainer = pl.Trainer(
        max_epochs=5,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[LambdaWarmup(steps=6), record, best],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(
            model,
            DataLoader(TensorDataset(train_x, train_y), batch_size=16),
            DataLoader(TensorDataset(eval_x, eval_y), batch_size=64),
        )
    epoch = int(re.search(r"epoch=(\d+)", best.best_model_path).group(1))
    return model, record.rows, epoch, float(best.best_model_score), caught


@pytest.mark.parametrize("selection", [{}, {"select_after_warmup": False, "select_max_flops": 3.0}])
def test_checkpoint_selection_does_not_pick_the_dense_warmup_epoch(tmp_path, selection):
    """``val_recall_in_budget`` (the model's checkpoint monitor) keeps the best recall among the
    epochs after the warm-up (default) or within a FLOPs budget; ``val_recall@1`` would keep the
    nearly dense epoch 0."""
    model, rows, epoch, score, _ = _selection_fit(tmp_path, **selection)
    budget = selection.get("select_max_flops", math.inf)
    after = not selection or selection.get("select_after_warmup", True)
    eligible = [
        r for r in rows if (not after or r["reg_weight"] >= 1000.0) and r["flops"] <= budget
    ]
    assert [r["epoch"] for r in eligible] == model.eligible_epochs
    dense = rows[0]
    assert dense not in eligible and dense["eligible"] == 0 and dense["recall_in_budget"] == -1
    # the failure mode: the dense warm-up epoch has the run's best recall@1 and the most non-zeros
    assert dense["recall@1"] > max(r["recall@1"] for r in eligible)
    assert dense["nnz"] > max(r["nnz"] for r in eligible)
    assert epoch != dense["epoch"]
    chosen = next(r for r in rows if r["epoch"] == epoch)
    assert chosen in eligible and chosen["eligible"] == 1
    assert chosen["recall@1"] == score == max(r["recall@1"] for r in eligible)
    assert all(r["recall_in_budget"] == (r["recall@1"] if r in eligible else -1) for r in rows)


def test_checkpoint_selection_warns_when_no_epoch_is_in_budget(tmp_path):
    _, rows, _, score, caught = _selection_fit(tmp_path, select_max_nnz=0.5)
    assert score == -1 and all(r["eligible"] == 0 for r in rows)
    assert any("no validation epoch was eligible" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="select_max_flops"):
        SparseEmbedding(4, 3, select_max_flops=-1.0)
