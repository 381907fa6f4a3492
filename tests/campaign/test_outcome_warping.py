"""Outcome warping (Gaussian copula, Salinas et al. 2020): normal scores of the ranks."""

import math

import pytest
import torch

from dsbo.campaign import Campaign
from dsbo.campaign.outcome_warping import copula_scores, warp_outcomes
from dsbo.errors import ConfigError
from dsbo.problems import get_problem


def test_scores_are_the_normal_quantiles_of_the_ranks():
    y = torch.tensor([0.3, -5.0, 0.1, 100.0], dtype=torch.double)
    z = copula_scores(y)
    n = 4
    expected = [
        math.sqrt(2) * torch.special.erfinv(torch.tensor(2 * (r - 0.5) / n - 1)).item()
        for r in (3, 1, 2, 4)
    ]
    assert z.tolist() == pytest.approx(expected)
    assert torch.equal(torch.argsort(z), torch.argsort(y))  # monotone: the order is kept
    assert z.abs().max() < 1.2  # the outliers -5 and 100 are pulled in


def test_ties_share_their_mean_rank_and_symmetry():
    z = copula_scores(torch.tensor([1.0, 1.0, 2.0, 0.0], dtype=torch.double))
    assert z[0] == z[1] and z[1] == pytest.approx(0.0)
    assert z[2] == pytest.approx(-z[3])


def test_only_a_single_objective_is_warped():
    Y = torch.tensor([[1.0, -1.0], [3.0, 2.0], [2.0, 0.5]], dtype=torch.double)
    warped = warp_outcomes(Y, 1, "copula")
    assert torch.equal(warped[:, 1], Y[:, 1])  # the constraint slack keeps its sign and scale
    assert torch.equal(warp_outcomes(Y, 2, "copula"), Y)
    assert torch.equal(warp_outcomes(Y, 1, None), Y)


def test_a_campaign_fits_the_warped_values_and_records_the_raw_ones():
    problem = get_problem("branin")
    campaign = Campaign(
        problem, surrogate="gp", budget=7, n_init=5, outcome_warping="copula", dry_run=False
    )
    result = campaign.run()
    Y = campaign.store.completed_data()[1]
    assert Y.min() < -3  # raw Branin values in the store, not normal scores
    assert result.best_value == pytest.approx(Y.max().item())
    with pytest.raises(ConfigError, match="outcome_warping='rank'"):
        Campaign(problem, surrogate="gp", outcome_warping="rank")


def test_winsorize_clips_the_bad_tail_at_the_tukey_fence():
    """Maximization sense: values below Q1 - 1.5 IQR are clipped to it, the rest unchanged
    (Q1, Q3 as numpy's percentile with method lower / higher)."""
    import numpy as np

    from dsbo.campaign.outcome_warping import winsorized

    for n in (2, 3, 7, 12, 40):
        y = torch.as_tensor(np.random.default_rng(n).standard_normal(n) ** 3, dtype=torch.double)
        y[0] = -500.0  # a diverged run
        q1 = np.percentile(y.numpy(), 25, method="lower")
        q3 = np.percentile(y.numpy(), 75, method="higher")
        fence = q1 - 1.5 * (q3 - q1)
        w = winsorized(y)
        assert torch.equal(w[y >= fence], y[y >= fence])  # the good region is untouched
        assert torch.all(w[y < fence] == fence)
        assert w.max() == y.max() and torch.argmax(w) == torch.argmax(y)
        assert torch.all(torch.diff(w[torch.argsort(y)]) >= 0)  # monotone
    assert winsorized(torch.tensor([5.0, -100.0, 4.0, 6.0, 5.5], dtype=torch.double)).tolist() == [
        5.0,
        1.75,
        4.0,
        6.0,
        5.5,
    ]  # Q1 4, Q3 5.5


def test_winsorize_warps_only_a_single_objective_and_runs_a_campaign():
    Y = torch.tensor(
        [[1.0, -1.0], [3.0, 2.0], [2.0, 0.5], [-90.0, 1.0], [2.5, 0.0]], dtype=torch.double
    )
    warped = warp_outcomes(Y, 1, "winsorize")
    assert torch.equal(warped[:, 1], Y[:, 1]) and warped[3, 0] > -90.0
    assert torch.equal(warp_outcomes(Y, 2, "winsorize"), Y)
    campaign = Campaign(
        get_problem("branin"),
        surrogate="gp",
        budget=7,
        n_init=5,
        outcome_warping="winsorize",
        dry_run=False,
    )
    result = campaign.run()
    Y = campaign.store.completed_data()[1]
    assert result.best_value == pytest.approx(Y.max().item())
