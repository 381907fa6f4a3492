"""Repeated proposals (dsbo.acquisition.repeats): the finite grid of a space of integers,
ordered choices and categoricals, and exhaustion said where every configuration was tried."""

import warnings

import pytest
import torch

import dsbo
from dsbo.acquisition import OptimizerSettings
from dsbo.acquisition.discrete_search import SpaceExhaustedWarning
from dsbo.acquisition.repeats import finite_grid
from dsbo.problems import get_problem


def _problem(parameters):
    return get_problem("black-box", parameters=parameters, objectives=["score"])


def test_the_grid_of_integers_and_ordered_choices_holds_every_configuration_once():
    problem = _problem(
        {
            "layers": {"type": "int", "low": 1, "high": 4},
            "size": {"type": "choice", "values": [16, 32, 64], "ordered": True},
        }
    )
    grid = finite_grid(problem, OptimizerSettings())
    configs = {(p["layers"], p["size"]) for p in map(problem.params, grid)}
    assert grid.shape[0] == len(configs) == 12


def test_the_grid_applies_conditions_and_fixed_features():
    problem = _problem(
        {
            "model": {"type": "choice", "values": ["linear", "net"]},
            "depth": {"type": "int", "low": 1, "high": 3, "when": {"model": "net"}},
            "act": {"type": "choice", "values": ["relu", "tanh"]},
        }
    )
    grid = finite_grid(problem, OptimizerSettings())
    assert grid.shape[0] == 2 * (1 + 3)  # linear (depth inactive) or net x 3 depths, x 2 acts
    columns = list(range(problem.dim))[problem.space.slices["act"]]
    fixed = OptimizerSettings(fixed_features={columns[0]: 1.0, columns[1]: 0.0})
    assert {problem.params(x)["act"] for x in finite_grid(problem, fixed)} == {"relu"}


def test_a_continuous_parameter_or_a_large_product_has_no_grid():
    float_space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    assert finite_grid(_problem(float_space), OptimizerSettings()) is None
    wide = {f"k{i}": {"type": "int", "low": 0, "high": 99} for i in range(3)}  # 10^6 > MAX_SWEEP
    assert finite_grid(_problem(wide), OptimizerSettings()) is None


@pytest.mark.parametrize(
    "space",
    [
        {"a": dsbo.Int(1, 3), "b": dsbo.Int(1, 2)},
        {"a": dsbo.Int(1, 3), "b": dsbo.Choice([1, 2], ordered=True)},
    ],
)
def test_an_integer_space_is_tried_whole_before_a_repeat_which_says_so(space):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = dsbo.minimize(
            lambda p: (p["a"] - 2) ** 2 + (p["b"] - 1) ** 2, space, budget=9, seed=0, dry_run=False
        )
    configs = list(zip(result.history["a"], result.history["b"], strict=True))
    assert len(set(configs[:6])) == 6
    trials = result.campaign.store.trials()
    assert [t.metadata.get("space_exhausted", False) for t in trials][6:] == [True] * 3
    assert any(issubclass(w.category, SpaceExhaustedWarning) for w in caught)
    assert torch.isfinite(torch.tensor(result.history["objective"].tolist())).all()
