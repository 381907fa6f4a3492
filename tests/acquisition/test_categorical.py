"""Categorical enumeration: every combination of one-hot categories as fixed features."""

import pytest

from dsbo.acquisition import OptimizerSettings
from dsbo.acquisition.branches import category_combinations
from dsbo.errors import ConfigError
from dsbo.problems import get_problem

PARAMETERS = {
    "x": [0.0, 1.0],
    "a": {"type": "choice", "values": ["p", "q"]},
    "b": {"type": "choice", "values": ["r", "s", "t"]},
    "c": {
        "type": "choice",
        "values": [1, 2, 3],
        "ordered": True,
    },  # an index column: not enumerated
}


def test_every_combination_is_one_hot_per_categorical():
    problem = get_problem("black-box", parameters=PARAMETERS)
    combos = category_combinations(problem, OptimizerSettings())
    assert len(combos) == 6
    decoded = set()
    for combo in combos:
        assert sorted(combo) == [1, 2, 3, 4, 5]  # the one-hot columns of a and b
        assert sum(combo[j] for j in (1, 2)) == 1 and sum(combo[j] for j in (3, 4, 5)) == 1
        x = [0.5] * problem.dim
        for j, v in combo.items():
            x[j] = v
        p = problem.params(x)
        decoded.add((p["a"], p["b"]))
    assert decoded == {(a, b) for a in "pq" for b in "rst"}


def test_pinned_categoricals_are_left_out_and_too_many_combinations_relax():
    problem = get_problem("black-box", parameters=PARAMETERS)
    assert (
        len(category_combinations(problem, OptimizerSettings(fixed_features={1: 1.0, 2: 0.0}))) == 3
    )
    assert category_combinations(problem, OptimizerSettings(max_enumerate=5)) is None
    assert (
        category_combinations(
            get_problem("black-box", parameters={"x": [0, 1]}), OptimizerSettings()
        )
        is None
    )


def test_the_setting_is_validated():
    with pytest.raises(ConfigError, match="categorical='all'"):
        OptimizerSettings(categorical="all").validate()
    with pytest.raises(ConfigError, match="max_enumerate"):
        OptimizerSettings(max_enumerate=0).validate()
