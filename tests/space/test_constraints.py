"""Linear parameter constraints (dsbo.space.constraints) and their map to model columns."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError
from dsbo.space import Choice, Float, Int, SearchSpace, parse_constraint
from dsbo.space.constraints import log_ratio_form


@pytest.mark.parametrize(
    "text, coefficients, rhs",
    [
        ("x + y <= 1", {"x": -1.0, "y": -1.0}, -1.0),
        ("x + y >= 1", {"x": 1.0, "y": 1.0}, 1.0),
        ("lr_max >= 2 * lr_min", {"lr_max": 1.0, "lr_min": -2.0}, 0.0),
        ("2*a - 0.5*b + 1 >= c", {"a": 2.0, "b": -0.5, "c": -1.0}, -1.0),
        ("-x >= -1", {"x": -1.0}, -1.0),
        (".5 * x + 1e-3 * y <= 2.5e1", {"x": -0.5, "y": -1e-3}, -25.0),
        ("x + x + y <= 3 - y", {"x": -2.0, "y": -2.0}, -3.0),
        ("x - y + y >= 0", {"x": 1.0}, 0.0),
        ("  layer.size  <=  64 ", {"layer.size": -1.0}, -64.0),
        ("1 <= x", {"x": 1.0}, 1.0),
    ],
)
def test_parse(text, coefficients, rhs):
    c = parse_constraint(text)
    assert c.coefficients == pytest.approx(coefficients) and set(c.coefficients) == set(
        coefficients
    )
    assert c.rhs == pytest.approx(rhs)
    assert c.text == text.strip()


@pytest.mark.parametrize(
    "text, words",
    [
        ("x + y", "one comparison"),
        ("x + y < 1", "one comparison"),
        ("x + y == 1", "one comparison"),
        ("x = 1", "one comparison"),
        ("0 <= x <= 1", "one comparison"),
        ("x * y <= 1", "cannot read"),
        ("x y <= 1", "cannot read"),
        ("x + <= 1", "cannot read"),
        ("x +* y <= 1", "cannot read"),
        ("2 * <= x", "'*' must be followed by a parameter name"),
        ("x <= ", "empty"),
        ("<= 1", "empty"),
        ("x ^ 2 <= 1", "cannot read"),
        ("2 <= 3", "names no parameter"),
        ("x - x <= 1", "names no parameter"),
        ("sin(x) <= 1", "cannot read"),
    ],
)
def test_bad_syntax_is_a_one_line_error(text, words):
    with pytest.raises(ConfigError) as info:
        parse_constraint(text)
    message = str(info.value)
    assert "\n" not in message and words in message and repr(text) in message, message


def test_a_constraint_must_be_a_string():
    with pytest.raises(ConfigError, match="each constraint is a string"):
        parse_constraint(3)
    with pytest.raises(ConfigError, match="list of strings"):
        SearchSpace.from_config({"x": [0, 1]}, "x <= 1 and more")


def test_holds_in_user_values():
    c = parse_constraint("2*a - 0.5*b + 1 >= c")
    assert c.holds({"a": 1.0, "b": 2.0, "c": 2.0})  # 2 - 1 + 1 = 2 >= 2
    assert not c.holds({"a": 1.0, "b": 2.0, "c": 2.1})


def test_log_ratio_form():
    assert log_ratio_form(parse_constraint("lr_max >= 2 * lr_min")) == (
        "lr_max",
        "lr_min",
        math.log(2),
    )
    assert log_ratio_form(parse_constraint("2 * a <= b")) == ("b", "a", math.log(2))
    assert log_ratio_form(parse_constraint("a >= b + 1")) is None
    assert log_ratio_form(parse_constraint("a + b >= 0")) is None


# ---------------------------------------------------------------------------- on a space
def test_model_columns_of_linear_and_log_ratio_constraints():
    space = SearchSpace(
        {
            "x": [0, 1],
            "opt": Choice(["a", "b"]),
            "y": [0, 1],
            "lr_min": Float(1e-5, 1e-1, log=True),
            "lr_max": Float(1e-5, 1e-1, log=True),
            "n": Int(1, 10),
        },
        ["x + y <= 1", "lr_max >= 2 * lr_min", "n - 3 * x >= 1"],
    )
    assert space.inequality_constraints() == [
        ([0, 3], [-1.0, -1.0], -1.0),
        ([5, 4], [1.0, -1.0], pytest.approx(math.log(2))),
        ([6, 0], [1.0, -3.0], 1.0),
    ]
    ok = space.encode({"x": 0.2, "opt": "b", "y": 0.7, "lr_min": 1e-4, "lr_max": 3e-4, "n": 2})
    assert space.feasible(ok)
    for change in ({"y": 0.9}, {"lr_max": 1.5e-4}, {"n": 1}):
        values = {"x": 0.2, "opt": "b", "y": 0.7, "lr_min": 1e-4, "lr_max": 3e-4, "n": 2, **change}
        assert not space.feasible(space.encode(values)), change
    assert (
        SearchSpace.from_config(
            **{k.replace("parameter_", ""): v for k, v in space.to_config().items()}
        )
        == space
    )


def test_infeasible_constraints_are_refused():
    with pytest.raises(
        ConfigError, match="no point of the parameters' ranges satisfies 'x \\+ y >= 3'"
    ):
        SearchSpace({"x": [0, 1], "y": [0, 1]}, ["x + y >= 3"])
    with pytest.raises(ConfigError, match="no point"):
        SearchSpace({"x": [0, 1], "y": [0, 1]}, ["x >= y + 0.6", "y >= x + 0.6"])
    with pytest.raises(ConfigError, match="no point"):
        SearchSpace({"a": Float(1, 2, log=True), "b": Float(1, 2, log=True)}, ["a >= 3 * b"])


@pytest.mark.parametrize(
    "parameters, constraint, words",
    [
        ({"x": [0, 1], "opt": Choice(["a", "b"])}, "x + opt <= 1", "opt is a choice"),
        ({"x": [0, 1], "k": Choice([1, 2, 3], ordered=True)}, "x + k <= 1", "k is a choice"),
        ({"x": [0, 1], "k": {"type": "fixed", "value": 1}}, "x + k <= 1", "k is a fixed"),
        (
            {"x": [0, 1], "opt": Choice(["a", "b"]), "m": Float(0, 1, when={"opt": "b"})},
            "x + m <= 1",
            "m is conditional",
        ),
        ({"x": [0, 1], "lr": Float(1e-4, 1, log=True)}, "x + lr <= 1", "lr is on a log scale"),
        ({"x": [0, 1], "lr": Float(1e-4, 1, log=True)}, "lr >= 2 * x", "lr is on a log scale"),
        (
            {"a": Float(1e-4, 1, log=True), "b": Float(1e-4, 1, log=True)},
            "a >= 2 * b + 0.001",
            "a is on a log scale",
        ),
        (
            {"a": Float(1e-4, 1, log=True), "b": Float(1e-4, 1, log=True)},
            "a + b <= 1",
            "a is on a log scale",
        ),
        ({"x": [0, 1]}, "x + z <= 1", "there is no parameter 'z'"),
    ],
)
def test_constraint_on_a_parameter_it_cannot_bind_is_refused(parameters, constraint, words):
    with pytest.raises(ConfigError) as info:
        SearchSpace(parameters, [constraint])
    message = str(info.value)
    assert "\n" not in message and words in message and repr(constraint) in message, message


def test_snap_keeps_rounded_integers_inside_the_constraints():
    space = SearchSpace({"x": Int(0, 10), "y": Int(0, 10)}, ["x + y <= 5.5"])
    u = space.snap([2.7, 2.8])  # rounds to 3 + 3 = 6
    assert space.feasible(u) and sum(u) == 5


def test_snap_keeps_a_stepped_float_grid_inside_the_constraints():
    space = SearchSpace({"x": Float(0, 1, step=0.3), "y": Float(0, 1, step=0.3)}, ["x + y <= 1"])
    u = space.snap([0.5, 0.5])  # rounds to 0.6 + 0.6
    assert space.feasible(u)
    assert space.decode(u) in ({"x": 0.3, "y": 0.6}, {"x": 0.6, "y": 0.3})


def test_snap_keeps_log_integers_inside_a_ratio_constraint():
    space = SearchSpace({"a": Int(1, 100, log=True), "b": Int(1, 100, log=True)}, ["a >= 2 * b"])
    u = space.snap([math.log(6.6), math.log(3.4)])  # rounds to 7 and 3
    assert space.feasible(u)
    values = space.decode(u)
    assert values["a"] >= 2 * values["b"]


@st.composite
def feasible_points(draw):
    """A point of the continuous box that satisfies x + 2 y <= 7.5 and n >= x."""
    x = draw(st.floats(0, 5))
    n = draw(st.floats(x, 6))
    y = draw(st.floats(0, max(0.0, (7.5 - x) / 2)))
    return [x, y, n]


GRID_SPACE = SearchSpace(
    {"x": Float(0, 5, step=0.5), "y": Int(0, 4), "n": Int(0, 6)}, ["x + 2 * y <= 7.5", "n >= x"]
)


@settings(max_examples=200, deadline=None)
@given(feasible_points())
def test_snap_of_a_feasible_point_is_feasible(u):
    space = GRID_SPACE
    assert space.feasible(u)
    snapped = space.snap(u)
    assert space.feasible(snapped), (u, snapped, space.decode(snapped))
    assert space.snap(snapped) == snapped
    values = space.decode(snapped)
    assert all(c.holds(values) for c in space.constraints)
