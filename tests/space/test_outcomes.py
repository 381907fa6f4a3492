"""dsbo.space.outcomes: the one map between what a function returns and the maximized store."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError, OutcomeError
from dsbo.space import Outcomes
from dsbo.space.outcomes import parse_outcome_constraint, to_number


def test_minimized_objectives_are_stored_negated_and_constraints_as_slacks():
    spec = Outcomes.declare(
        {"loss": "min", "acc": "max", "latency": ("min", 50.0)}, ["memory <= 8", "acc >= 0.9"]
    )
    assert spec.metrics == ("loss", "acc", "latency", "memory")
    assert spec.stored_names == ("-loss", "acc", "-latency", "memory <= 8", "acc >= 0.9")
    y = spec.to_stored({"loss": 0.25, "acc": 0.95, "latency": 12, "memory": 6.0})
    assert y == pytest.approx([-0.25, 0.95, -12.0, 2.0, 0.05])
    assert spec.to_user(y) == pytest.approx(
        {"loss": 0.25, "acc": 0.95, "latency": 12.0, "memory": 6.0}
    )
    assert spec.ref_point()[2] == -50.0 and math.isnan(spec.ref_point()[0])
    assert spec.label(0) == "loss (lower is better)" and spec.label(1) == "acc (higher is better)"


def test_bare_constraint_names_are_slacks_as_before():
    spec = Outcomes.declare(["yield"], ["purity_margin"])
    assert spec.stored_names == ("yield", "purity_margin") and not spec.declares_directions
    assert spec.to_stored([0.8, -0.1]) == [0.8, -0.1]


@pytest.mark.parametrize(
    "text, coefficient, rhs",
    [
        ("memory <= 8", -1.0, -8.0),
        ("8 >= memory", -1.0, -8.0),
        ("2 * latency <= 30", -2.0, -30.0),
        ("acc >= 0.9", 1.0, 0.9),
    ],
)
def test_outcome_constraints_use_the_parameter_constraint_syntax(text, coefficient, rhs):
    c = parse_outcome_constraint(text)
    assert (c.coefficient, c.rhs) == (coefficient, rhs)
    assert c.value(c.slack(3.5)) == pytest.approx(3.5)


@pytest.mark.parametrize(
    "objectives, constraints, match",
    [
        ({"loss": "lower"}, (), "objectives.loss.direction='lower'"),
        ({"loss": ("min", "x")}, (), "threshold must be a finite number"),
        (["loss", "loss"], (), "named once"),
        (["loss"], ["a + b <= 1"], "bounds one outcome"),
        (["loss"], ["memory = 8"], "write one comparison"),
        (["loss"], [3], "strings such as 'memory <= 8'"),
        (["bad name"], (), "outcome name must match"),
        (["loss"], ["loss", "loss"], "must be unique"),
    ],
)
def test_bad_declarations_name_the_field(objectives, constraints, match):
    with pytest.raises(ConfigError, match=match):
        Outcomes.declare(objectives, constraints)


@pytest.mark.parametrize(
    "value",
    [
        0.5,
        1,
        np.float16(0.5),
        np.float32(0.5),
        np.int64(1),
        np.uint8(1),
        np.array(0.5),
        np.array([0.5]),
        [0.5],
        torch.tensor(0.5),
        torch.tensor([0.5]),
        torch.tensor(0.5, dtype=torch.bfloat16),
        torch.tensor(0.5, requires_grad=True) * 1.0,
        torch.tensor(1, dtype=torch.int32),
    ],
)
def test_any_real_scalar_is_a_number(value):
    assert to_number(value, "f") in (0.5, 1.0)


@pytest.mark.parametrize(
    "value, match",
    [
        (True, "got True"),
        (np.bool_(True), "got np.True_"),
        ("0.5", "got '0.5'"),
        (None, "got None"),
        (np.array([0.5, 1.0]), "got an array of 2 values"),
        ([0.5, 1.0], "got 2 values"),
        (torch.tensor(True), "real number"),
        (np.array("a"), "dtype"),
        (1 + 2j, "must be a number"),
    ],
)
def test_anything_else_is_refused_by_name(value, match):
    with pytest.raises(OutcomeError, match=f"outcome 'f'.*{match}"):
        to_number(value, "f")


directions = st.sampled_from(["min", "max", "minimize", "maximize"])
finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(directions, min_size=1, max_size=3),
    st.lists(st.tuples(st.sampled_from(["<=", ">="]), finite), max_size=3),
    st.data(),
)
def test_to_user_inverts_to_stored(objective_directions, bounds, data):
    objectives = {f"o{i}": d for i, d in enumerate(objective_directions)}
    constraints = [f"m{i} {op} {b!r}" for i, (op, b) in enumerate(bounds)]
    spec = Outcomes.declare(objectives, constraints)
    values = {name: data.draw(finite) for name in spec.metrics}
    stored = spec.to_stored(values)
    for o, y in zip(spec.objectives, stored, strict=False):  # higher stored is better, always
        assert y == (values[o.name] if o.direction == "maximize" else -values[o.name])
    assert spec.to_user(stored) == pytest.approx(values, rel=1e-9, abs=1e-6)
