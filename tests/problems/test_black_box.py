"""The external black-box problem: a space and outcome names, evaluated outside Python."""

import pytest
import torch

from dsbo.errors import ConfigError, EvaluationError
from dsbo.problems import get_problem

SPACE = {"temperature": [20, 80], "ph": [4, 9]}


def test_space_names_and_default():
    problem = get_problem(
        "black-box",
        parameters=SPACE,
        objectives=["yield"],
        constraints=["margin"],
        integer=["temperature"],
        target={"temperature": 37, "ph": 7.0},
    )
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
        ({"parameters": {"t": [5, 1]}}, r"parameters.t: low=5 must be < high=1"),
        (
            {"parameters": {"t": {"type": "float", "low": 0, "high": 1, "log": True}}},
            r"parameters.t: a log scale needs low > 0",
        ),
        (
            {"parameters": {"t": {"type": "choice", "values": []}}},
            r"parameters.t: values must list at least two",
        ),
        (
            {"parameters": {"t": {"type": "choice", "values": [1, 1]}}},
            r"parameters.t: values repeat 1",
        ),
        (
            {"parameters": {"t": {"type": "int", "low": 0, "hi": 3}}},
            r"parameters.t: int takes .*unknown \['hi'\]",
        ),
        ({"parameters": SPACE, "objectives": []}, "at least one outcome"),
        ({"parameters": SPACE, "objectives": ["a"], "constraints": ["a"]}, "unique"),
        ({"parameters": SPACE, "integer": ["speed"]}, "unknown parameters"),
        (
            {"parameters": SPACE, "target": {"speed": 7}},
            r"target.speed: there is no such parameter",
        ),
        ({"parameters": SPACE, "target": {"ph": 10}}, r"target.ph=10 is outside \[4, 9\]"),
        ({"parameters": SPACE, "target": [100, 7]}, "outside the bounds"),
    ],
)
def test_bad_options_name_the_field(options, match):
    """Each mistake is one ConfigError naming the parameter (the target may name only some)."""
    with pytest.raises(ConfigError, match=match):
        get_problem("black-box", **options)


def test_typed_parameters_and_named_values():
    problem = get_problem(
        "black-box",
        parameters={
            "lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
            "optimizer": {"type": "choice", "values": ["adam", "sgd"]},
            "momentum": {"type": "float", "low": 0, "high": 0.99, "when": {"optimizer": "sgd"}},
        },
        target={"lr": 1e-3, "optimizer": "adam"},
    )
    assert problem.parameter_names == ("lr", "optimizer=adam", "optimizer=sgd", "momentum")
    assert problem.params(problem.default_point) == {"lr": 0.001, "optimizer": "adam"}
    x = problem.point({"lr": 0.01, "optimizer": "sgd", "momentum": 0.9})
    assert problem.params(x) == {"lr": 0.01, "optimizer": "sgd", "momentum": 0.9}
    # any box point snaps to a configuration: one-hot exact, inactive momentum at its fixed value
    snapped = problem.round_to_domain(torch.tensor([[-5.0, 0.7, 0.4, 0.5]], dtype=torch.double))
    assert snapped[0, 1:3].tolist() == [1.0, 0.0] and snapped[0, 3].item() == 0.0
