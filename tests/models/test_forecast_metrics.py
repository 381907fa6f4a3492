"""Forecast metrics (thesis ch. 6): WAPE/SMAPE per level against torchmetrics, accumulation over
batches, means over levels, coherence WAPE of table 6.3, input checks."""

import pytest
import torch
from torchmetrics import SymmetricMeanAbsolutePercentageError, WeightedMeanAbsolutePercentageError

from dsbo_zoo.forecast_metrics import (
    LevelMetrics,
    coherence_reference,
    coherence_wape,
    level_metrics,
    smape,
    wape,
)

# A tree: root (0) -> a (1), b (2); a -> leaves 3, 4; b -> leaves 5, 6, 7
S = torch.tensor(
    [
        [1, 1, 1, 1, 1],
        [1, 1, 0, 0, 0],
        [0, 0, 1, 1, 1],
        [1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 0, 1],
    ],
    dtype=torch.float64,
)
LEVEL = torch.tensor([0, 1, 1, 2, 2, 2, 2, 2])


def test_wape_smape_formulas():
    pred = torch.tensor([1.0, 3.0, 0.0, 5.0])
    target = torch.tensor([2.0, 3.0, 0.0, 4.0])
    torch.testing.assert_close(wape(pred, target), torch.tensor((1 + 0 + 0 + 1) / (2 + 3 + 0 + 4)))
    # the 0/0 term adds 0 (torchmetrics' epsilon), n = 4
    expected = 2 / 4 * (1 / 3 + 0 + 0 + 1 / 9)
    torch.testing.assert_close(smape(pred, target), torch.tensor(expected))


def test_level_metrics_match_torchmetrics_per_level_over_batches():
    g = torch.Generator().manual_seed(0)
    ref_w = [WeightedMeanAbsolutePercentageError() for _ in range(3)]
    ref_s = [SymmetricMeanAbsolutePercentageError() for _ in range(3)]
    metric = LevelMetrics(num_levels=3)
    for _ in range(4):  # batches with different nodes and sizes
        b = int(torch.randint(3, 9, (1,), generator=g))
        level = torch.randint(0, 3, (b,), generator=g)
        target = torch.rand(b, 4, generator=g) * (10.0 ** level[:, None])
        pred = target + torch.randn(b, 4, generator=g) * (level[:, None] + 1.0)
        metric.update(pred, target, level)
        for k in range(3):
            mask = level == k
            if mask.any():
                ref_w[k].update(pred[mask], target[mask])
                ref_s[k].update(pred[mask], target[mask])
    out = metric.compute()
    wapes = [ref_w[k].compute() for k in range(3)]
    smapes = [ref_s[k].compute() for k in range(3)]
    for k in range(3):
        torch.testing.assert_close(out[f"wape/level{k}"], wapes[k], rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(out[f"smape/level{k}"], smapes[k], rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(out["wape_mean"], torch.stack(wapes).mean(), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(out["smape_mean"], torch.stack(smapes).mean(), rtol=1e-5, atol=1e-7)


def test_level_wape_pools_sums_not_node_means():
    # level 0: two nodes with targets 1 and 100, errors 1 and 1: pooled 2/101, node mean 0.505
    pred = torch.tensor([[2.0], [101.0]])
    target = torch.tensor([[1.0], [100.0]])
    out = level_metrics(pred, target, torch.tensor([0, 0]))
    torch.testing.assert_close(out["wape/level0"], torch.tensor(2 / 101))
    assert "wape/level1" not in out


def test_unseen_level_is_absent_and_mean_over_seen_levels():
    metric = LevelMetrics(num_levels=4)
    metric.update(torch.tensor([[1.0], [4.0]]), torch.tensor([[2.0], [5.0]]), torch.tensor([0, 3]))
    out = metric.compute()
    assert set(out) == {
        "wape/level0",
        "smape/level0",
        "wape/level3",
        "smape/level3",
        "wape_mean",
        "smape_mean",
    }
    torch.testing.assert_close(out["wape_mean"], torch.tensor((0.5 + 0.2) / 2))
    assert all(torch.isfinite(v) for v in out.values())


def test_reset_clears_the_sums():
    metric = LevelMetrics(num_levels=1)
    metric.update(torch.tensor([0.0]), torch.tensor([1.0]), torch.tensor([0]))
    metric.reset()
    metric.update(torch.tensor([1.0]), torch.tensor([1.0]), torch.tensor([0]))
    assert float(metric.compute()["wape/level0"]) == 0.0


def test_coherence_zero_for_bottom_up_forecasts():
    leaves = torch.rand(5, 4, dtype=torch.float64) + 0.5
    pred = S @ leaves  # exactly coherent, original scale
    torch.testing.assert_close(coherence_reference(pred, S), pred)
    out = coherence_wape(pred, S, LEVEL)
    for k in range(3):
        assert float(out[f"coherence/level{k}"]) == pytest.approx(0.0, abs=1e-12)
    assert float(out["coherence/mean"]) == pytest.approx(0.0, abs=1e-12)


def test_coherence_measures_deviation_from_sum_of_leaf_forecasts():
    leaves = torch.tensor([[1.0], [2.0], [3.0], [4.0], [5.0]], dtype=torch.float64)
    pred = S @ leaves
    pred[0] += 3.0  # root forecast 18 against c = 15
    pred[2] -= 6.0  # b: 6 against c = 12; a stays coherent (3 = 3)
    out = coherence_wape(pred, S, LEVEL)
    assert float(out["coherence/level0"]) == pytest.approx(3 / 15)
    assert float(out["coherence/level1"]) == pytest.approx(6 / (3 + 12))
    assert float(out["coherence/level2"]) == 0.0
    # the mean leaves the leaf level out (table 6.3)
    assert float(out["coherence/mean"]) == pytest.approx((3 / 15 + 6 / 15) / 2)


def test_coherence_with_explicit_leaf_index():
    # same tree with the leaves listed first: nodes [3,4,5,6,7,0,1,2]
    perm = torch.tensor([3, 4, 5, 6, 7, 0, 1, 2])
    S_perm, level_perm = S[perm], LEVEL[perm]
    leaves = torch.rand(5, 2, dtype=torch.float64)
    pred = S_perm @ leaves
    pred[5] *= 1.1
    out = coherence_wape(pred, S_perm, level_perm, leaf_index=torch.arange(5))
    assert float(out["coherence/level0"]) == pytest.approx(0.1)
    assert float(out["coherence/level2"]) == 0.0


@pytest.mark.parametrize(
    ("pred", "target", "level", "match"),
    [
        (torch.zeros(3, 2), torch.zeros(3, 3), torch.zeros(3, dtype=torch.long), "shape"),
        (
            torch.zeros(3, 2),
            torch.zeros(3, 2),
            torch.zeros(2, dtype=torch.long),
            "one entry per node",
        ),
        (torch.zeros(3, 2), torch.zeros(3, 2), torch.zeros(3), "integer"),
        (torch.zeros(3, 2), torch.zeros(3, 2), torch.tensor([0, 1, 5]), "outside"),
        (
            torch.full((3, 2), float("nan")),
            torch.zeros(3, 2),
            torch.zeros(3, dtype=torch.long),
            "finite",
        ),
    ],
)
def test_bad_inputs_are_named(pred, target, level, match):
    with pytest.raises(ValueError, match=match):
        LevelMetrics(num_levels=2).update(pred, target, level)


@pytest.mark.filterwarnings("ignore:The ``compute`` method:UserWarning")
def test_num_levels_and_compute_before_update():
    with pytest.raises(ValueError, match="num_levels"):
        LevelMetrics(num_levels=0)
    with pytest.raises(ValueError, match="before any update"):
        LevelMetrics(num_levels=2).compute()
