"""Exploration when the search stalls (dsbo.acquisition.exploration): the stall count, when a
proposal explores, and that a stalled campaign proposes Thompson draws marked as such."""

import math

import pytest
import torch

from dsbo.acquisition import History, OptimizerSettings
from dsbo.acquisition.exploration import exploration_due, stalled_for
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem


def _history(values, n_design):
    Y = torch.tensor(values, dtype=torch.double).reshape(-1, 1)
    return History(X=torch.rand(len(values), 2, dtype=torch.double), Y=Y, n_design=n_design)


@pytest.mark.parametrize(
    ("values", "n_design", "stalled"),
    [
        ([1, 3, 2, 2.5, 4, 3, 3, 4], 3, 3),  # last strict improvement: the 4 (a tie does not count)
        ([1, 3, 2, 2.5, 2, 3], 3, 3),  # the design's best is still the best: every later one
        ([1, 3, 2], 3, 0),  # nothing after the design
        ([1, 3, 2, 5], 3, 0),  # the last observation improved
        ([1, 3, math.nan, 2, math.nan], 2, 3),  # a failed (NaN) value never improves
        ([1, 2, 3, 4], 0, 0),  # no design: improving all along
        ([4, 3, 2, 1], 0, 3),  # no design: the first one is the best
    ],
)
def test_stalled_for_counts_observations_since_the_last_strict_improvement(
    values, n_design, stalled
):
    assert stalled_for(_history(values, n_design)) == stalled


def test_exploration_is_due_every_patience_stalled_proposals():
    due = [exploration_due(_history([5.0] + [1.0] * s, 1), 3) for s in range(10)]
    assert due == [False, False, False, True, False, False, True, False, False, True]
    assert not any(exploration_due(_history([5.0] + [1.0] * s, 1), 0) for s in range(10))


def test_stall_patience_is_validated():
    with pytest.raises(ConfigError, match="acquisition.stall_patience must be an integer >= 0"):
        OptimizerSettings(stall_patience=-1).validate()
    with pytest.raises(ConfigError, match="stall_patience"):
        OptimizerSettings(stall_patience=True).validate()


PARAMETERS = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "optimizer": {"type": "choice", "values": ["adam", "sgd"]},
}
FAST = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20, "mc_samples": 16}


def _flat_campaign(patience):
    """A plateau: every configuration scores the same, so the search never improves."""
    problem = get_problem("black-box", parameters=PARAMETERS, objectives=["score"])
    campaign = Campaign(
        problem,
        budget=10,
        n_init=3,
        evaluator=lambda x: 1.0,
        optimizer=OptimizerSettings(stall_patience=patience, **FAST),
    )
    campaign.run()
    return campaign.store.trials()


def test_a_stalled_campaign_explores_every_patience_proposals_and_says_so():
    trials = _flat_campaign(3)
    generators = [t.generator for t in trials]
    assert generators[:3] == ["sobol-init"] * 3
    # BO proposals 1..7 see 0..6 stalled observations: draws at 3 and 6
    assert generators[3:] == ["qlognei"] * 3 + ["qlognei+explore"] + ["qlognei"] * 2 + [
        "qlognei+explore"
    ]
    explored = [t for t in trials if t.generator == "qlognei+explore"]
    assert [t.metadata["stalled_for"] for t in explored] == [3, 6]
    assert all(t.metadata["acquisition"] == "thompson" and t.metadata["explore"] for t in explored)


def test_stall_patience_zero_never_explores():
    assert {t.generator for t in _flat_campaign(0)} == {"sobol-init", "qlognei"}
