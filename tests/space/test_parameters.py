"""The parameter types (dsbo.space.parameters): user value <-> model columns, config form, bad input."""

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError
from dsbo.space import Choice, Fixed, Float, Int, parameter_from_config

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same(a, b):
    """Equal and of the same type (1, 1.0 and True are three values)."""
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------- strategies
def _decimal(draw, low_exp, high_exp):
    """A number users write: m * 10^e with a few significant digits."""
    mantissa = draw(st.integers(1, 9999))
    exponent = draw(st.integers(low_exp, high_exp))
    return float(f"{mantissa}e{exponent}")


@st.composite
def linear_floats(draw):
    low = draw(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
    width = draw(st.floats(1e-6, 1e6, allow_nan=False, allow_infinity=False))
    assume(low + width > low)
    return Float(low, low + width)


@st.composite
def log_floats(draw):
    low = _decimal(draw, -12, 3)
    high = low * draw(st.floats(1.001, 1e6))
    return Float(low, high, log=True)


@st.composite
def stepped_floats(draw):
    """A grid a user writes: low, step with few digits, a whole number of steps (maybe plus a bit)."""
    step = _decimal(draw, -15, 2)
    low = draw(st.integers(-1000, 1000)) * step
    n = draw(st.integers(1, 1000))
    # high on the grid, between two grid points, or a hair below a grid point
    extra = draw(st.sampled_from([0.0, 0.5, -1e-10]))
    return Float(float(f"{low:.12g}"), float(f"{low + (n + extra) * step:.12g}"), step=step)


@st.composite
def ints(draw):
    low = draw(st.integers(-(2**40), 2**40))
    high = low + draw(st.integers(1, 2**20))
    log = draw(st.booleans())
    if log:
        low = abs(low) % 2**30 + 1
        high = low + draw(st.integers(1, 2**20))
        return Int(low, high, log=True)
    return Int(low, high, step=draw(st.integers(1, 50)))


scalars = st.one_of(
    st.text(max_size=6),
    st.integers(-100, 100),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
)


@st.composite
def choices(draw):
    # unique by (type, value): 1, 1.0 and True are three values, -0.0 and 0.0 one
    values = draw(st.lists(scalars, min_size=2, max_size=6, unique_by=lambda v: (type(v), v)))
    return Choice(values, ordered=draw(st.booleans()))


parameters = st.one_of(
    linear_floats(), log_floats(), stepped_floats(), ints(), choices(), scalars.map(Fixed)
)


@st.composite
def parameter_and_value(draw):
    """A parameter and one of its valid user values."""
    p = draw(parameters)
    if isinstance(p, Choice):
        return p, draw(st.sampled_from(p.values))
    if isinstance(p, Fixed):
        return p, p.value
    if isinstance(p, Int):
        k = draw(st.integers(0, (p.high - p.low) // p.step))
        return p, p.low + k * p.step
    if p.step is not None:
        k = draw(st.integers(0, math.floor((p.high - p.low) / p.step + 1e-9)))
        return p, min(float(f"{p.low + k * p.step:.12g}"), p.high)
    return p, draw(st.floats(p.low, p.high))


@st.composite
def parameter_and_point(draw):
    """A parameter and any point of its box of model columns."""
    p = draw(parameters)
    u = [draw(st.floats(low, high)) for low, high in p.bounds()]
    return p, u


def on_grid(p, value):
    if isinstance(p, Float) and p.step is not None:
        k = (value - p.low) / p.step
        return abs(k - round(k)) < 1e-6
    if isinstance(p, Int):
        return (value - p.low) % p.step == 0
    return True


# ---------------------------------------------------------------------------- properties
@FAST
@given(parameter_and_value())
def test_decode_encode_roundtrip(pv):
    p, value = pv
    u = p.encode(value)
    assert len(u) == p.width
    decoded = p.decode(u)
    if isinstance(p, Float) and p.log:
        # decode rounds to 12 significant digits (exp(ln 1e-3) is 0.0010000000000000002)
        assert type(decoded) is float
        assert math.isclose(decoded, value, rel_tol=1e-11)
    else:
        assert same(decoded, value), (p, value, u, decoded)


@FAST
@given(parameter_and_point())
def test_decode_of_any_box_point_is_a_valid_value(pu):
    p, u = pu
    value = p.decode(u)
    assert p.allows(value), (p, u, value)
    if isinstance(p, Choice):
        assert any(same(value, v) for v in p.values)
    elif isinstance(p, Fixed):
        assert u == [] and same(value, p.value)
    else:
        assert p.low <= value <= p.high, (p, u, value)
        assert on_grid(p, value), (p, u, value)
        assert type(value) is (int if isinstance(p, Int) else float)


@FAST
@given(parameter_and_point())
def test_snap_is_idempotent(pu):
    p, u = pu
    once = p.encode(p.decode(u))
    twice = p.encode(p.decode(once))
    assert once == twice, (p, u, once, twice)
    for (low, high), c in zip(p.bounds(), once, strict=True):
        assert low <= c <= high


@FAST
@given(choices().filter(lambda p: not p.ordered), st.data())
def test_one_hot_snap_has_exactly_one_one(p, data):
    u = [data.draw(st.floats(0, 1)) for _ in p.values]
    snapped = p.encode(p.decode(u))
    assert sorted(snapped) == [0.0] * (len(p.values) - 1) + [1.0]
    assert snapped.index(1.0) == max(range(len(u)), key=lambda j: (u[j], -j))


@FAST
@given(parameters)
def test_config_roundtrip(p):
    assert parameter_from_config("p", p.to_config()) == p


# ---------------------------------------------------------------------------- examples
def test_examples_of_each_type():
    lr = Float(1e-4, 1e-1, log=True)
    assert lr.bounds() == [(math.log(1e-4), math.log(1e-1))]
    assert lr.decode(lr.encode(1e-3)) == 0.001
    assert lr.decode([math.log(1e-5)]) == 1e-4  # clipped into the range
    assert Float(0, 1, step=0.25).decode([0.6]) == 0.5
    assert Float(0, 1, step=0.3).decode([1.0]) == 0.9  # the largest grid point <= high
    assert Int(1, 1024, log=True).decode([math.log(100.4)]) == 100
    assert Int(0, 10, step=3).decode([10.0]) == 9
    assert Choice(["adam", "sgd"]).encode("sgd") == [0.0, 1.0]
    assert Choice(["lo", "mid", "hi"], ordered=True).encode("hi") == [2.0]
    assert Choice(["lo", "mid", "hi"], ordered=True).decode([1.4]) == "mid"
    assert Fixed(3).width == 0 and Fixed(3).decode([]) == 3 and Fixed(3).encode(3.0) == []
    assert Choice(["a", "b", "c"]).center() == "a"
    assert Int(0, 10).center() == 5


def test_choice_values_of_different_types_are_distinct():
    p = Choice([1, True, "1"])
    assert [p.decode(p.encode(v)) for v in (1, True, "1")] == [1, True, "1"]
    assert [type(p.decode(p.encode(v))) for v in (1, True, "1")] == [int, bool, str]
    assert p.decode(p.encode(1.0)) == 1 and type(p.decode(p.encode(1.0))) is int  # the same number
    with pytest.raises(ConfigError):
        Choice([1, 2]).encode(True)
    with pytest.raises(ConfigError):
        Choice(["1", "2"]).encode(1)


def test_config_forms():
    assert parameter_from_config(
        "lr", {"type": "float", "low": 1e-4, "high": 0.1, "log": True}
    ) == Float(1e-4, 0.1, log=True)
    assert parameter_from_config("x", [0, 1]) == Float(0, 1)
    assert parameter_from_config("n", {"type": "int", "low": 1, "high": 9, "step": 2}) == Int(
        1, 9, step=2
    )
    assert parameter_from_config("o", {"values": ["a", "b"]}) == Choice(["a", "b"])
    assert parameter_from_config("k", {"value": 3}) == Fixed(3)
    m = parameter_from_config(
        "m", {"type": "float", "low": 0, "high": 1, "when": {"o": ["a", "b"]}}
    )
    assert m.conditions == {"o": ("a", "b")}
    assert parameter_from_config("m", m.to_config()) == m


def one_line_error(match, fn, *args, **kwargs):
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message, message
    assert match in message, message
    return message


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"type": "float", "low": 1, "high": 1}, ["low=1 must be < high=1"]),
        ({"type": "float", "low": 2, "high": 1}, ["low=2 must be < high=1"]),
        ({"type": "int", "low": 5, "high": 5}, ["low=5 must be < high=5"]),
        ({"type": "float", "low": 0, "high": 1, "log": True}, ["log scale needs low > 0"]),
        ({"type": "float", "low": -1, "high": 1, "log": True}, ["log scale needs low > 0"]),
        ({"type": "int", "low": 0, "high": 8, "log": True}, ["log scale needs low > 0"]),
        ({"type": "int", "low": 0.5, "high": 8}, ["integers"]),
        ({"type": "float", "low": 0, "high": math.inf}, ["finite"]),
        ({"type": "float", "low": 0, "high": 1, "step": 0}, ["step"]),
        ({"type": "float", "low": 0, "high": 1, "log": "yes"}, ["log must be true or false"]),
        ({"type": "choice", "values": []}, ["at least two values"]),
        ({"type": "choice", "values": ["a"]}, ["at least two values", "Fixed"]),
        ({"type": "choice", "values": "ab"}, ["must be a list"]),
        ({"type": "choice", "values": ["a", "b", "a"]}, ["repeat 'a'"]),
        ({"type": "choice", "values": [1, 2, 1]}, ["repeat 1"]),
        ({"type": "choice", "values": [1.5, 1.5]}, ["repeat 1.5"]),
        ({"type": "choice", "values": [1, [2]]}, ["strings, numbers, booleans or null"]),
        ({"type": "choice", "values": [1, math.nan]}, ["strings, numbers, booleans or null"]),
        ({"type": "choice", "values": ["a", "b"], "ordered": 1}, ["ordered must be true or false"]),
        ({"type": "float", "low": 0}, ["needs high"]),
        ({"type": "float", "low": 0, "high": 1, "values": [1]}, ["unknown ['values']"]),
        ({"type": "string", "value": 1}, ["type='string'"]),
        ({"type": "float", "low": 0, "high": 1, "when": "o"}, ["when must be a mapping"]),
        ({"type": "float", "low": 0, "high": 1, "when": {"o": []}}, ["when.o lists no values"]),
        ([0, 1, 2], ["[low, high]"]),
        ("x", ["must be a mapping"]),
    ],
)
def test_bad_parameter_is_a_one_line_error_naming_it(spec, words):
    message = one_line_error("parameters.lr", parameter_from_config, "lr", spec)
    for word in words:
        assert word in message, message


def test_choice_values_that_are_equal_but_of_different_types_do_not_repeat():
    assert Choice([1, True, "1"]).width == 3
    assert Choice([0, False, None, ""]).width == 4


@pytest.mark.parametrize("values", [[1, 1.0], [0.5, 2, 0.50], [3, 3]])
def test_choice_refuses_the_same_number_twice(values):
    with pytest.raises(ConfigError, match="list each value once"):
        Choice(values)


@pytest.mark.parametrize(
    "p, value, words",
    [
        (Float(0, 1), 1.5, "outside [0, 1]"),
        (Float(0, 1), "0.5", "must be a number"),
        (Float(0, 1), True, "must be a number"),
        (Float(0, 1), math.nan, "must be a number"),
        (Float(1e-4, 1e-1, log=True), 0.0, "outside"),
        (Int(0, 10), 2.0, "must be an integer"),
        (Int(0, 10), True, "must be an integer"),
        (Int(0, 10), 11, "not in [0, 10]"),
        (Int(0, 10, step=3), 4, "on the grid 0 + k * 3"),
        (Choice(["adam", "sgd"]), "rmsprop", "is not one of ['adam', 'sgd']"),
        (Choice([1, 2]), 1.5, "is not one of [1, 2]"),
        (Fixed(3), 4, "differs from its fixed value 3"),
        (Fixed("a"), 1, "differs"),
    ],
)
def test_encode_refuses_values_it_does_not_take(p, value, words):
    message = one_line_error("x.lr", p.encode, value, "x.lr")
    assert words in message
    assert not p.allows(value)
