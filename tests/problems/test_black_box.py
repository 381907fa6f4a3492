"""The external black-box problem: a space and outcome names, evaluated outside Python."""

import pytest

from dsbo.errors import ConfigError, EvaluationError
from dsbo.problems import get_problem

SPACE = {"temperature": [20, 80], "ph": [4, 9]}


def test_space_names_and_default():
    problem = get_problem(
        "black-box", parameters=SPACE, objectives=["yield"], constraints=["margin"],
        integer=["temperature"], target={"temperature": 37, "ph": 7.0},
    )  # fmt: skip
    assert problem.parameter_names == ("temperature", "ph")
    assert problem.outcome_names == ("yield", "margin")
    assert problem.num_constraints == 1 and problem.integer_dims == (0,)
    assert problem.default_point.tolist() == [37.0, 7.0]
    assert problem.bounds.tolist() == [[20.0, 4.0], [80.0, 9.0]]
    with pytest.raises(EvaluationError, match="outside Python"):
        problem(problem.default_point)


@pytest.mark.parametrize(
    "options, match",
    [
        ({}, "parameters is required"),
        ({"parameters": {"t": [5, 1]}}, r"parameters.t=\[5, 1\]"),
        ({"parameters": SPACE, "objectives": []}, "at least one outcome"),
        ({"parameters": SPACE, "objectives": ["a"], "constraints": ["a"]}, "unique"),
        ({"parameters": SPACE, "integer": ["speed"]}, "unknown parameters"),
        ({"parameters": SPACE, "target": {"ph": 7}}, "no value for"),
        ({"parameters": SPACE, "target": [100, 7]}, "outside the bounds"),
    ],
)
def test_bad_options_name_the_field(options, match):
    with pytest.raises(ConfigError, match=match):
        get_problem("black-box", **options)
