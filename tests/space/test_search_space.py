"""SearchSpace (dsbo.space.search_space): decode/encode/snap over mixed, conditional spaces,
defaults, groups, config round trips and the errors that name the parameter at fault."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError
from dsbo.space import Choice, Fixed, Float, Int, SearchSpace

FAST = settings(max_examples=200, deadline=None)


def same(a, b):
    return type(a) is type(b) and a == b


def training_space():
    return SearchSpace(
        {
            "lr": Float(1e-5, 1e-1, log=True),
            "optimizer": Choice(["adam", "sgd", "rmsprop"]),
            "momentum": Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "nesterov": Choice([False, True], when={"optimizer": "sgd"}),
            "layers": Int(1, 6),
            "width": Int(8, 1024, log=True),
            "dropout": Float(0.0, 0.5, step=0.05),
            "schedule": Choice(["const", "cosine", "step"], ordered=True),
            "decay_every": Int(10, 100, step=10, when={"schedule": "step"}),
            "decay_factor": Float(0.1, 0.9, when={"decay_every": [10, 20, 30]}),  # nested
            "head": Choice(["mlp", "linear"], when={"layers": [1, 2]}),
            "seed": Fixed(7),
        }
    )


SPACE = training_space()


def box_points(space):
    return st.tuples(*[st.floats(low, high) for low, high in space.bounds]).map(list)


def check_valid(space, values):
    """``values`` are the active parameters' values, each a value of its parameter."""
    assert set(values) <= set(space.names)
    for name, p in space.parameters.items():
        parents_ok = all(
            parent in values and any(same(values[parent], a) for a in allowed)
            for parent, allowed in p.conditions.items()
        )
        assert (name in values) == parents_ok, (name, values)
        if name in values:
            assert p.allows(values[name]), (name, values[name])


# ---------------------------------------------------------------------------- properties
@FAST
@given(box_points(SPACE))
def test_decode_of_any_box_point_gives_the_active_parameters_valid_values(u):
    values = SPACE.decode(u)
    check_valid(SPACE, values)
    assert list(values) == [n for n in SPACE.names if n in values]  # declaration order


@FAST
@given(box_points(SPACE))
def test_snap_is_idempotent_and_decodes_to_the_same_values(u):
    once = SPACE.snap(u)
    assert SPACE.snap(once) == once
    assert SPACE.decode(once) == SPACE.decode(u)
    for (low, high), c in zip(SPACE.bounds, once, strict=True):
        assert low <= c <= high


@FAST
@given(box_points(SPACE))
def test_snap_sets_each_one_hot_group_to_exactly_one_one(u):
    once = SPACE.snap(u)
    for name in SPACE.categorical:
        group = once[SPACE.slices[name]]
        if name in SPACE.decode(u):
            assert sorted(group) == [0.0] * (len(group) - 1) + [1.0]
        else:  # inactive: at its fixed value
            assert group == [0.0] * len(group)


@FAST
@given(box_points(SPACE))
def test_inactive_parameters_sit_at_their_fixed_columns(u):
    values = SPACE.decode(u)
    snapped = SPACE.snap(u)
    for name, p in SPACE.parameters.items():
        if name not in values and p.width:
            assert snapped[SPACE.slices[name]] == p.inactive()


@st.composite
def user_values(draw):
    """Valid user values of SPACE, drawn parameter by parameter (only active ones)."""
    values = {}
    for name in SPACE._order:
        p = SPACE.parameters[name]
        if not all(values.get(k, object()) in a for k, a in p.conditions.items()):
            continue
        if isinstance(p, Choice):
            values[name] = draw(st.sampled_from(p.values))
        elif isinstance(p, Fixed):
            continue
        elif isinstance(p, Int):
            values[name] = p.low + p.step * draw(st.integers(0, (p.high - p.low) // p.step))
        elif p.step is not None:
            values[name] = p.decode(
                [p.low + p.step * draw(st.integers(0, int((p.high - p.low) / p.step)))]
            )
        else:
            values[name] = draw(st.floats(p.low, p.high))
    return values


@FAST
@given(user_values())
def test_decode_encode_roundtrip_of_user_values(values):
    decoded = SPACE.decode(SPACE.encode(values))
    assert decoded.pop("seed") == 7  # the fixed parameter, always passed on
    assert set(decoded) == set(values)
    for name, v in values.items():
        if name == "lr":
            assert math.isclose(decoded[name], v, rel_tol=1e-11)
        else:
            assert same(decoded[name], v), (name, v, decoded[name])


# ---------------------------------------------------------------------------- conditions
def test_column_layout_and_groups():
    space = SearchSpace(
        {
            "lr": Float(1e-4, 1e-1, log=True),
            "optimizer": Choice(["adam", "sgd"]),
            "k": Fixed(3),
            "momentum": Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "size": Choice(["s", "m", "l"], ordered=True),
            "n": Int(1, 9),
        }
    )
    assert space.column_names == ["lr", "optimizer=adam", "optimizer=sgd", "momentum", "size", "n"]
    assert space.groups == [[0], [1, 2], [3], [4], [5]]
    assert space.searched == ["lr", "optimizer", "momentum", "size", "n"]
    assert space.categorical == ["optimizer"] and space.conditional == ["momentum"]
    assert space.integer_columns == [4, 5]
    assert not space.is_box
    assert SearchSpace({"x": [0, 1], "n": Int(0, 3)}).is_box


def test_inactive_conditional_parameters_never_appear_in_decode():
    space = SearchSpace(
        {
            "optimizer": Choice(["adam", "sgd"]),
            "momentum": Float(0.0, 0.99, when={"optimizer": "sgd"}),
        }
    )
    assert space.decode([1.0, 0.0, 0.7]) == {"optimizer": "adam"}
    assert space.decode([0.2, 0.9, 0.7]) == {"optimizer": "sgd", "momentum": 0.7}
    assert space.snap([1.0, 0.0, 0.7]) == [1.0, 0.0, 0.0]


def test_nested_conditions_follow_the_chain():
    space = SearchSpace(
        {
            # declared before its parents: the order of evaluation follows the conditions
            "c": Float(0, 1, when={"b": [2, 3]}),
            "b": Int(1, 3, when={"a": "on"}),
            "a": Choice(["off", "on"]),
        }
    )
    assert space.decode(space.encode({"a": "off"})) == {"a": "off"}
    assert space.decode(space.encode({"a": "on", "b": 1})) == {"b": 1, "a": "on"}
    assert space.decode(space.encode({"a": "on", "b": 3, "c": 0.5})) == {
        "c": 0.5,
        "b": 3,
        "a": "on",
    }
    with pytest.raises(ConfigError, match=r"parameters\.c: c is inactive"):
        space.encode({"a": "off", "c": 0.5})
    with pytest.raises(ConfigError, match=r"parameters\.b: b is inactive"):
        space.encode({"a": "off", "b": 2})
    with pytest.raises(ConfigError, match="no value for c"):
        space.encode({"a": "on", "b": 2})


def test_condition_on_a_choice_compares_types():
    space = SearchSpace({"c": Choice([1, "1", True]), "m": Float(0, 1, when={"c": 1.0})})
    assert space.decode(space.encode({"c": 1, "m": 0.5})) == {"c": 1, "m": 0.5}
    assert space.decode(space.encode({"c": "1"})) == {"c": "1"}
    assert space.decode(space.encode({"c": True})) == {"c": True}


def test_condition_on_a_fixed_or_int_parent():
    space = SearchSpace(
        {
            "mode": Fixed("fast"),
            "k": Int(1, 3),
            "a": Float(0, 1, when={"mode": "fast"}),
            "b": Float(0, 1, when={"k": 2}),
        }
    )
    assert space.decode(space.encode({"k": 1, "a": 0.5})) == {"mode": "fast", "k": 1, "a": 0.5}
    assert space.decode(space.encode({"k": 2, "a": 0.5, "b": 0.25})) == {
        "mode": "fast",
        "k": 2,
        "a": 0.5,
        "b": 0.25,
    }


def one_line(match, fn, *args, **kwargs):
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and match in message, message
    return message


@pytest.mark.parametrize(
    "parameters, words",
    [
        (
            {"a": Float(0, 1, when={"b": "x"}), "b": Choice(["x", "y"], when={"a": 1})},
            "parameters.b.when.a: a condition needs a choice, int or fixed parameter",
        ),
        (
            {"a": Choice(["x", "y"], when={"b": "u"}), "b": Choice(["u", "v"], when={"a": "x"})},
            "the conditions form a circle: a -> b -> a",
        ),
        (
            {
                "a": Choice(["x", "y"], when={"c": "u"}),
                "b": Choice(["u", "v"], when={"a": "x"}),
                "c": Choice(["u", "v"], when={"b": "u"}),
            },
            "the conditions form a circle: a -> c -> b -> a",
        ),
        (
            {"a": Choice(["x", "y"], when={"a": "x"})},
            "parameters.a.when.a: a parameter cannot depend on itself",
        ),
        (
            {"opt": Choice(["adam", "sgd"]), "momentum": Float(0, 1, when={"optimiser": "sgd"})},
            "parameters.momentum.when.optimiser: there is no parameter 'optimiser'",
        ),
        (
            {"opt": Choice(["adam", "sgd"]), "momentum": Float(0, 1, when={"opt": "sgdd"})},
            "parameters.momentum.when.opt: 'sgdd' is not a value of opt (['adam', 'sgd'])",
        ),
        (
            {"opt": Choice(["adam", "sgd"]), "momentum": Float(0, 1, when={"opt": ["sgd", "nag"]})},
            "parameters.momentum.when.opt: 'nag' is not a value of opt",
        ),
        (
            {"c": Choice([1, 2]), "m": Float(0, 1, when={"c": 1.5})},
            "parameters.m.when.c: 1.5 is not a value of c",
        ),
        (
            {"n": Int(1, 3), "m": Float(0, 1, when={"n": 4})},
            "parameters.m.when.n: 4 is not a value of n",
        ),
        (
            {"x": Float(0, 1), "bad name": Float(0, 1)},
            "parameters.bad name: a parameter name must match",
        ),
        ({"k": Fixed(1)}, "every parameter is fixed"),
        (
            {"lr": {"type": "float", "low": 0, "high": 1, "log": True}},
            "parameters.lr: a log scale needs low > 0",
        ),
    ],
)
def test_bad_spaces_are_one_line_errors_naming_the_parameter(parameters, words):
    one_line(words, SearchSpace, parameters)


def test_empty_space_is_refused():
    one_line("non-empty mapping", SearchSpace, {})
    one_line("parameters must be a mapping", SearchSpace.from_config, [("x", [0, 1])])


# ---------------------------------------------------------------------------- encode, default
def test_encode_names_the_parameter_at_fault():
    one_line("x.lr=0.5 is outside [1e-05, 0.1]", SPACE.encode, {"lr": 0.5}, "x")
    one_line("x.layers=2.5 must be an integer", SPACE.encode, {"layers": 2.5}, "x", True)
    one_line("x.optimizer='nag' is not one of", SPACE.encode, {"optimizer": "nag"}, "x", True)
    one_line("x.optimiser: there is no such parameter", SPACE.encode, {"optimiser": "adam"}, "x")
    one_line(
        "x.momentum: momentum is inactive",
        SPACE.encode,
        {"optimizer": "adam", "momentum": 0.5},
        "x",
        True,
    )
    one_line("x.seed=8 differs from its fixed value 7", SPACE.encode, {"seed": 8}, "x", True)
    one_line("x: no value for lr", SPACE.encode, {"optimizer": "adam"}, "x")
    one_line("x must be a mapping", SPACE.encode, [1e-3], "x")


def test_default_fills_the_rest_with_the_middle_of_the_range():
    space = SearchSpace(
        {
            "lr": Float(1e-4, 1e-2, log=True),
            "optimizer": Choice(["adam", "sgd"]),
            "n": Int(0, 10),
            "momentum": Float(0.0, 1.0, when={"optimizer": "sgd"}),
        }
    )
    assert space.decode(space.default()) == {"lr": 1e-3, "optimizer": "adam", "n": 5}
    assert space.decode(space.default({"optimizer": "sgd"})) == {
        "lr": 1e-3,
        "optimizer": "sgd",
        "n": 5,
        "momentum": 0.5,
    }
    assert space.decode(space.default({"n": 2, "lr": 1e-4})) == {
        "lr": 1e-4,
        "optimizer": "adam",
        "n": 2,
    }
    one_line("default.n=11 is not in [0, 10]", space.default, {"n": 11})
    one_line("default.lr=1 is outside", space.default, {"lr": 1})
    one_line("target.epochs: there is no such parameter", space.default, {"epochs": 3}, "target")
    one_line("default.momentum: momentum is inactive", space.default, {"momentum": 0.5})


# ---------------------------------------------------------------------------- config
def test_config_round_trip_keeps_the_space():
    config = SPACE.to_config()
    again = SearchSpace.from_config(config["parameters"], config.get("parameter_constraints"))
    assert again == SPACE and again.to_config() == config
    assert again.column_names == SPACE.column_names and again.bounds == SPACE.bounds
    assert config["parameters"]["momentum"] == {
        "type": "float",
        "low": 0.0,
        "high": 0.99,
        "when": {"optimizer": "sgd"},
    }
    assert config["parameters"]["decay_factor"]["when"] == {"decay_every": [10, 20, 30]}


def test_config_round_trip_through_json_and_yaml():
    import json

    yaml = pytest.importorskip("yaml")
    space = SearchSpace(
        {
            "x": [0, 1],
            "y": {"type": "float", "low": 0, "high": 1, "step": 0.1},
            "c": {"type": "choice", "values": [1, 2.5, True, None, "a"]},
            "m": {"type": "int", "low": 1, "high": 64, "log": True, "when": {"c": [True, None]}},
        },
        ["x + y <= 1.5"],
    )
    config = space.to_config()
    for text in (json.dumps(config), yaml.safe_dump(config)):
        loaded = json.loads(text) if text.startswith("{") else yaml.safe_load(text)
        again = SearchSpace.from_config(loaded["parameters"], loaded["parameter_constraints"])
        assert again == space
        assert [type(v) for v in again.parameters["c"].values] == [
            int,
            float,
            bool,
            type(None),
            str,
        ]


def test_from_box_and_copy_with_more_constraints():
    space = SearchSpace.from_box(["a", "b"], [(0.0, 1.0), (-2.0, 3.0)], integer=[1])
    assert space.parameters == {"a": Float(0.0, 1.0), "b": Int(-2, 3)}
    constrained = SearchSpace(space, ["a + b <= 2"])
    assert constrained.constraints[0].text == "a + b <= 2" and space.constraints == []
