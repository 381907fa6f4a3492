"""``make_rule`` (names from the registry, mappings, validation), ``TrialCurve``, the docstring
examples and table, and the package's imports."""

from __future__ import annotations

import doctest
import json
import math
import re
import subprocess
import sys

import pytest

import dsbo.stopping
from dsbo.errors import ConfigError, DataError
from dsbo.stopping import (
    STOPPING_RULES,
    ASHARule,
    Decision,
    HyperbandRule,
    MedianRule,
    PercentileRule,
    StoppingRule,
    TrialCurve,
    make_rule,
    rule_choices,
    rule_options,
)
from dsbo.stopping.catalogue import CATALOGUE


# ---------------------------------------------------------------------- make_rule
@pytest.mark.parametrize("spec", [None, "none", {"name": "none"}])
def test_no_rule(spec):
    assert make_rule(spec) is None


def test_names_and_defaults():
    assert make_rule("median") == MedianRule()
    assert make_rule("percentile") == PercentileRule(25.0)
    assert make_rule("asha") == ASHARule() == make_rule("successive-halving")
    assert make_rule("hyperband") == HyperbandRule(max_resource=27)
    assert {"asha", "hyperband", "median", "percentile", "successive-halving"} <= set(
        STOPPING_RULES.names()
    )
    assert STOPPING_RULES.get("successive-halving") is ASHARule
    assert MedianRule().options() == {
        "n_startup_trials": 5,
        "n_warmup_steps": 0,
        "interval_steps": 1,
        "n_min_trials": 1,
    }
    assert ASHARule().options() == {
        "min_resource": 1,
        "reduction_factor": 3,
        "min_early_stopping_rate": 0,
        "bootstrap_count": 0,
    }
    assert HyperbandRule().options() == {
        "min_resource": 1,
        "max_resource": 27,
        "reduction_factor": 3,
        "bootstrap_count": 0,
    }


def test_mapping_options_and_round_trip():
    rule = make_rule(
        {"name": "percentile", "percentile": 10, "n_warmup_steps": 3, "interval_steps": 2}
    )
    assert isinstance(rule, PercentileRule) and rule.percentile == 10.0 and rule.n_warmup_steps == 3
    for name in STOPPING_RULES.names():
        made = make_rule(name)
        again = make_rule(json.loads(json.dumps({"name": made.name, **made.options()})))
        assert again == made and repr(again) == repr(made)
    hyperband = make_rule(
        {"name": "hyperband", "min_resource": 2, "max_resource": 100, "reduction_factor": 4}
    )
    assert hyperband.options() == {
        "min_resource": 2,
        "max_resource": 100,
        "reduction_factor": 4,
        "bootstrap_count": 0,
    }


def test_an_instance_is_returned_as_is():
    rule = ASHARule(reduction_factor=2)
    assert make_rule(rule) is rule


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "medain",
            "stopping.name='medain' is not a stopping rule; did you mean 'median'? Choose one of: {choices}",
        ),
        ("Median", "did you mean 'median'?"),
        (
            "wandb-hyperband",
            "Choose one of: {choices}",
        ),
        ({"name": "ahsa"}, "did you mean 'asha'?"),
        ({"percentile": 10}, "stopping.name is missing; choose one of: {choices}"),
        ({"name": 3}, "stopping.name must be a string"),
        (
            3,
            "stopping must be none, a rule name, a mapping with a name, or a StoppingRule; got 3 (int)",
        ),
        (["median"], "got ['median'] (list)"),
        (
            {"name": "none", "percentile": 3},
            "stopping.name='none' takes no options, got ['percentile']",
        ),
        (
            {"name": "asha", "reduction_factr": 2},
            "stopping.reduction_factr is not an option of 'asha'; did you mean 'reduction_factor'?",
        ),
        (
            {"name": "asha", "grace_period": 2},
            "Its options are: min_resource, reduction_factor, min_early_stopping_rate, bootstrap_count",
        ),
        ({"name": "median", "percentile": 30}, "stopping.percentile is not an option of 'median'"),
        ({"name": "hyperband", "max_t": 30}, "stopping.max_t is not an option of 'hyperband'"),
        ({"name": "asha", 1: 2}, "stopping.1 is not an option of 'asha'"),
    ],
)
def test_unknown_names_and_options(spec, message):
    """``{choices}``: every registered name, from the registry (``rule_choices``)."""
    with pytest.raises(ConfigError) as info:
        make_rule(spec)
    choices = ", ".join(["none", *STOPPING_RULES.names()])
    assert choices == ", ".join(rule_choices())
    assert message.replace("{choices}", choices) in str(info.value)


@pytest.mark.parametrize(
    ("name", "option", "value", "message"),
    [
        (
            "asha",
            "reduction_factor",
            True,
            "stopping.reduction_factor must be an int >= 2, got True (bool)",
        ),
        ("asha", "reduction_factor", "3", "got '3' (str)"),
        ("asha", "reduction_factor", 3.0, "got 3.0 (float)"),
        ("asha", "reduction_factor", 1, "stopping.reduction_factor must be an int >= 2, got 1"),
        ("asha", "min_resource", 0, "stopping.min_resource must be an int >= 1"),
        (
            "asha",
            "min_early_stopping_rate",
            -1,
            "stopping.min_early_stopping_rate must be an int >= 0",
        ),
        ("asha", "bootstrap_count", None, "stopping.bootstrap_count must be an int >= 0, got None"),
        (
            "successive-halving",
            "min_resource",
            "auto",
            "stopping.min_resource must be an int >= 1, got 'auto'",
        ),
        (
            "hyperband",
            "max_resource",
            "auto",
            "stopping.max_resource must be an int >= 1, got 'auto'",
        ),
        ("hyperband", "max_resource", 27.0, "got 27.0 (float)"),
        (
            "percentile",
            "percentile",
            101,
            "stopping.percentile must be a number in [0, 100], got 101",
        ),
        ("percentile", "percentile", -0.5, "got -0.5"),
        ("percentile", "percentile", math.nan, "got nan"),
        ("percentile", "percentile", True, "got True (bool)"),
        ("percentile", "percentile", "25", "got '25' (str)"),
        ("median", "n_startup_trials", -1, "stopping.n_startup_trials must be an int >= 0"),
        (
            "median",
            "n_warmup_steps",
            1.5,
            "stopping.n_warmup_steps must be an int >= 0, got 1.5 (float)",
        ),
        ("median", "interval_steps", 0, "stopping.interval_steps must be an int >= 1"),
        ("median", "n_min_trials", 0, "stopping.n_min_trials must be an int >= 1"),
        ("percentile", "n_min_trials", False, "got False (bool)"),
    ],
)
def test_options_are_validated_without_coercion(name, option, value, message):
    with pytest.raises(ConfigError) as info:
        make_rule({"name": name, option: value})
    assert message in str(info.value)


def test_hyperband_max_below_min():
    with pytest.raises(ConfigError, match="stopping.max_resource must be >= min_resource=5, got 4"):
        make_rule({"name": "hyperband", "min_resource": 5, "max_resource": 4})


def test_rule_options_and_json():
    assert rule_options("percentile") == [
        "percentile",
        "n_startup_trials",
        "n_warmup_steps",
        "interval_steps",
        "n_min_trials",
    ]
    assert rule_options("successive-halving") == rule_options("asha")
    for name in STOPPING_RULES.names():
        rule = make_rule(name)
        assert isinstance(rule, StoppingRule) and sorted(rule.options()) == sorted(
            rule_options(name)
        )
        json.dumps(rule.options())


# ---------------------------------------------------------------------- TrialCurve, Decision
def test_trial_curve_accessors():
    c = TrialCurve(3, "pending", [1, 3, 9], [0.2, 0.5, 0.4])
    assert c.steps == (1, 3, 9) and c.values == (0.2, 0.5, 0.4)
    assert (c.last_step, c.last_value, c.previous_step) == (9, 0.4, 3)
    assert [c.value_at(s) for s in (0, 1, 2, 3, 9, 10)] == [None, 0.2, None, 0.5, 0.4, None]
    assert [c.value_reaching(s) for s in (0, 2, 3, 4, 9, 10)] == [0.2, 0.5, 0.5, 0.4, 0.4, None]
    assert [c.best(s) for s in (0, 1, 2, 3, 100)] == [None, 0.2, 0.2, 0.5, 0.5] and c.best() == 0.5
    empty = TrialCurve(4, "completed")
    assert (
        empty.last_step,
        empty.last_value,
        empty.previous_step,
        empty.best(),
        empty.value_at(0),
    ) == (None,) * 5
    assert TrialCurve(5, "pending", (0,), (1,)).values == (1.0,) and isinstance(
        TrialCurve(5, "pending", (0,), (1,)).values[0], float
    )
    with pytest.raises(AttributeError):
        c.status = "completed"  # frozen


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trial_id": True}, "trial_id must be an int"),
        ({"trial_id": "1"}, "trial_id must be an int"),
        (
            {"status": "running"},
            "status must be one of pending, completed, stopped, paused, failed, abandoned; got 'running'",
        ),
        ({"steps": (1, 2), "values": (1.0,)}, "2 steps but 1 values"),
        ({"steps": (2, 1), "values": (1.0, 1.0)}, "steps must be strictly increasing, got [2, 1]"),
        ({"steps": (1, 1), "values": (1.0, 1.0)}, "strictly increasing"),
        ({"steps": (-1,), "values": (1.0,)}, "steps must be ints >= 0, got -1"),
        ({"steps": (1.0,), "values": (1.0,)}, "steps must be ints >= 0, got 1.0"),
        ({"steps": (True,), "values": (1.0,)}, "steps must be ints >= 0, got True"),
        ({"steps": (1,), "values": (math.nan,)}, "values must be finite numbers, got nan"),
        ({"steps": (1,), "values": (math.inf,)}, "got inf"),
        ({"steps": (1,), "values": ("1",)}, "got '1'"),
        ({"steps": (1,), "values": (False,)}, "got False"),
    ],
)
def test_trial_curve_is_validated(kwargs, message):
    fields = {"trial_id": 1, "status": "pending", "steps": (), "values": ()} | kwargs
    with pytest.raises(DataError) as info:
        TrialCurve(**fields)
    assert message in str(info.value)


def test_decision():
    assert Decision(True, "why") == Decision(stop=True, reason="why", rung=None)


# ---------------------------------------------------------------------- docs and imports
@pytest.mark.parametrize(
    "module",
    [
        "dsbo.stopping",
        "dsbo.stopping.base",
        "dsbo.stopping.percentile",
        "dsbo.stopping.successive_halving",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(sys.modules[module], verbose=False)
    assert result.failed == 0 and result.attempted > 0


def test_package_reexports_and_docstring():
    for name in dsbo.stopping.__all__:
        assert hasattr(dsbo.stopping, name)
    doc = dsbo.stopping.__doc__
    for peer in (
        "grace_period",
        "max_t",
        "min_iter",
        "max_iter",
        "eta",
        "percentile_threshold",
        "min_resource",
    ):
        assert peer in doc
    for cls in (MedianRule, PercentileRule, ASHARule, HyperbandRule):
        assert "Optuna" in cls.__doc__ and "Example:" in cls.__doc__


def test_importing_loads_neither_torch_nor_the_store():
    code = (
        "import sys, dsbo.stopping; "
        "print(sorted(m for m in ('torch', 'optuna', 'dsbo.storage', 'dsbo.campaign', 'dsbo.runtime') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_names_are_known_without_importing_a_rule_module():
    code = (
        "import sys; from dsbo.stopping import STOPPING_RULES, rule_choices; "
        "print(rule_choices(), sorted(m for m in sys.modules if m.startswith('dsbo.stopping.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    choices = ["none", *sorted(name for names in CATALOGUE.values() for name in names)]
    assert out.strip() == f"{choices} ['dsbo.stopping.base', 'dsbo.stopping.catalogue']"


def docstring_table() -> dict[str, str]:
    """``{name: class}`` of the rule table of the package docstring (an alias in parentheses
    under its rule's name: ``(``"successive-halving"``)``)."""
    lines = dsbo.stopping.__doc__.splitlines()
    borders = [i for i, line in enumerate(lines) if line.startswith("=====")][:3]
    width = len(lines[borders[0]].split()[0])  # the name column
    table, current = {}, None
    for line in lines[borders[1] + 1 : borders[2]]:
        column = line[:width]
        cls = re.search(r":class:`(\w+)`", line)
        current = cls.group(1) if cls else current
        for name in re.findall(r'``"([a-z0-9-]+)"``', column):
            table[name] = current
    return table


def test_the_docstring_table_lists_the_registered_rules():
    table = docstring_table()
    assert sorted(table) == STOPPING_RULES.names(), "the rule table of dsbo/stopping/__init__.py"
    for name, cls in table.items():
        assert STOPPING_RULES.get(name).__name__ == cls, name


def test_the_docstring_peer_table_lists_the_rules_that_take_each_optuna_option():
    lines = dsbo.stopping.__doc__.splitlines()
    rows = [line for line in lines if line.startswith("Optuna ``")]
    assert len(rows) == 10
    own = [n for n in STOPPING_RULES.names() if STOPPING_RULES.get(n).name == n]
    for row in rows:
        option = re.findall(r"``(\w+)``", row)[1]  # the dsbo option (the first is Optuna's)
        listed = set(row.rsplit("  ", 1)[1].strip().split(", "))
        assert listed == {n for n in own if option in rule_options(n)}, row


def test_each_rule_is_named_by_its_registered_name_or_is_an_alias():
    for name in STOPPING_RULES.names():
        factory = STOPPING_RULES.get(name)
        own = factory.name
        assert own == name or STOPPING_RULES.get(own) is factory, (name, own)
        assert make_rule(name).name == own


def test_a_checked_curve_equals_the_validated_one():
    from dsbo.stopping import TrialCurve

    a = TrialCurve(3, "pending", (1, 3), (0.5, 0.25))
    b = TrialCurve.checked(3, "pending", (1, 3), (0.5, 0.25))
    assert a == b and b.last_step == 3 and b.best() == 0.5 and b.value_at(3) == 0.25
