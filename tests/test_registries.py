"""The registries' catalogues: every registering module is catalogued, every catalogued name is
registered by its module, names are known without torch, and package inits stay lazy; and the
names that messages and docs list are the registry's (a rule or curve model registered here
shows up in them without any other edit).

The registries import the module of a name when it is first looked up (:mod:`dsbo.registry`);
a catalogue that missed a module would hide its names, one that named the wrong module would
fail the lookup. The checks that need a fresh interpreter run one (``sys.modules`` matters).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsbo.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
#: Every registry with a catalogue: ``module:attribute``.
REGISTRIES = (
    "dsbo.problems.registry:PROBLEMS",
    "dsbo.surrogates.catalogue:SURROGATES",
    "dsbo.acquisition.catalogue:POLICIES",
    "dsbo.acquisition.catalogue:POSTPROCESSORS",
    "dsbo.contexts.catalogue:CONTEXT_POLICIES",
    "dsbo.stopping.catalogue:STOPPING_RULES",
    "dsbo.surrogates.curve_catalogue:CURVE_MODELS",
)
#: The functions (and ``Registry.register`` of a registry constant) whose calls register a name.
REGISTER_CALLS = {
    "register",
    "register_problem",
    "register_surrogate",
    "register_zoo_surrogate",
    "register_policy",
    "register_postprocessor",
    "register_context_policy",
    "register_stopping_rule",
    "register_curve_model",
}


def run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON value last."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def registering_modules() -> set[str]:
    """Modules of dsbo whose code calls a register function (outside the definitions of the
    register functions themselves)."""
    found = set()
    for path in sorted((ROOT / "dsbo").rglob("*.py")):
        tree = ast.parse(path.read_text())
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in REGISTER_CALLS:
                skip.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and id(node) not in skip:
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                # ``X.register`` counts for a registry constant (``POLICIES.register``), not
                # for e.g. ``atexit.register``
                if name == "register" and not (
                    isinstance(func, ast.Attribute) and ast.unparse(func.value).isupper()
                ):
                    continue
                if name in REGISTER_CALLS:
                    parts = path.relative_to(ROOT).with_suffix("").parts
                    found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@pytest.fixture(scope="module")
def loaded() -> dict:
    """In a fresh interpreter: every registering module imported; per registry, its catalogue
    and the module whose import registered each name."""
    modules = sorted(registering_modules())
    return run(
        "import importlib, json\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "out = {}\n"
        f"for spec in {list(REGISTRIES)!r}:\n"
        "    module, _, attr = spec.partition(':')\n"
        "    registry = getattr(importlib.import_module(module), attr)\n"
        "    out[spec] = {'catalogue': registry.catalogue,\n"
        "                 'origins': {n: registry.origin(n) for n in registry.available()}}\n"
        "print(json.dumps(out))"
    )


def test_every_registering_module_is_catalogued(loaded):
    catalogued = {module for entry in loaded.values() for module in entry["catalogue"].values()}
    missing = registering_modules() - catalogued
    assert not missing, f"modules that register names but are in no catalogue: {sorted(missing)}"


@pytest.mark.parametrize("spec", REGISTRIES)
def test_each_catalogue_names_the_module_that_registers_each_name(loaded, spec):
    catalogue, origins = loaded[spec]["catalogue"], loaded[spec]["origins"]
    assert set(origins) == set(catalogue), (
        "registered but not catalogued / catalogued but not registered"
    )
    wrong = {
        name: (catalogue[name], origin)
        for name, origin in origins.items()
        if origin != catalogue[name]
    }
    assert not wrong, f"name: (catalogued module, registering module): {wrong}"


def test_names_and_settings_need_no_torch():
    loaded = run(
        "import json, sys\n"
        "from dsbo.acquisition.catalogue import POLICIES, POSTPROCESSORS\n"
        "from dsbo.acquisition.settings import OptimizerSettings\n"
        "from dsbo.contexts.catalogue import CONTEXT_POLICIES\n"
        "from dsbo.contexts.settings import ContextSettings\n"
        "from dsbo.problems.registry import PROBLEMS\n"
        "from dsbo.surrogates.catalogue import SURROGATES\n"
        "from dsbo.stopping import STOPPING_RULES\n"
        "from dsbo.surrogates.curve_catalogue import CURVE_MODELS\n"
        "from dsbo.campaign.freeze_thaw import FreezeThawSettings\n"
        "import dsbo.acquisition, dsbo.contexts, dsbo.data, dsbo.problems, dsbo.surrogates\n"
        "OptimizerSettings().validate(); ContextSettings.coerce({'policy': 'sadcbo'})\n"
        "FreezeThawSettings.build({'curve_model': 'power-law-ensemble'}, 9, 60)\n"
        "registries = (PROBLEMS, SURROGATES, POLICIES, POSTPROCESSORS, CONTEXT_POLICIES, STOPPING_RULES, CURVE_MODELS)\n"
        "names = {r.kind: r.names() for r in registries}\n"
        "assert 'bonsai' in POSTPROCESSORS and 'gp' in SURROGATES and 'branin-{D}d' in PROBLEMS\n"
        "print(json.dumps({'names': names, 'modules': sorted(m.split('.')[0] for m in sys.modules)}))"
    )
    assert not {"torch", "botorch", "gpytorch"} & set(loaded["modules"])
    assert {"qlognei", "sobol", "sebo"} <= set(loaded["names"]["acquisition"])
    assert {"sadcbo", "cubo"} <= set(loaded["names"]["contexts.policy"])
    assert {"simple-smb", "gp", "map-saas"} <= set(loaded["names"]["surrogate"])
    assert {"median", "asha", "hyperband"} <= set(loaded["names"]["stopping"])
    assert {"deep-kernel-gp", "power-law-ensemble"} <= set(loaded["names"]["curve_model"])


def test_a_lookup_imports_only_the_module_of_the_name():
    loaded = run(
        "import json, sys\n"
        "from dsbo.problems import get_problem\n"
        "from dsbo.surrogates import available_surrogates\n"
        "from dsbo.surrogates.catalogue import SURROGATES\n"
        "get_problem('branin'); SURROGATES.get('gp')\n"
        "first = sorted(m for m in sys.modules if m.startswith(('dsbo.problems.', 'dsbo.surrogates.')))\n"
        "available_surrogates()\n"
        "print(json.dumps({'first': first, 'modules': sorted(m.split('.')[0] for m in sys.modules)}))"
    )
    assert "dsbo.problems.classic" in loaded["first"] and "dsbo.surrogates.gp" in loaded["first"]
    assert not {"dsbo.problems.hpo", "dsbo.problems.embedded", "dsbo.surrogates.neural"} & set(
        loaded["first"]
    )
    # every surrogate registered (the zoo ones too) without importing Lightning or the zoo
    assert not {"pytorch_lightning", "lightning", "dsbo_zoo", "sklearn"} & set(loaded["modules"])


@pytest.mark.parametrize(
    "package",
    [
        "dsbo.acquisition",
        "dsbo.contexts",
        "dsbo.data",
        "dsbo.problems",
        "dsbo.stopping",
        "dsbo.surrogates",
    ],
)
def test_lazy_packages_still_export_every_name(package):
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is not None, name
        assert name in dir(module)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_old_import_paths_still_work():
    from dsbo.acquisition.base import POSTPROCESSORS, OptimizerSettings, register_policy
    from dsbo.acquisition.settings import OptimizerSettings as Settings
    from dsbo.contexts.environment import Environment
    from dsbo.contexts.settings import Environment as OldEnvironment
    from dsbo.surrogates.lightning_bridge import train_module
    from dsbo.surrogates.neural import train_module as old_train_module
    from dsbo.surrogates.registry import SURROGATES, available_surrogates

    assert (
        OptimizerSettings is Settings
        and Environment is OldEnvironment
        and train_module is old_train_module
    )
    assert "bonsai" in POSTPROCESSORS and "gp" in available_surrogates() and "gp" in SURROGATES
    assert callable(register_policy)


# ---------------------------------------------------------------------- the mechanism
@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A registry (module ``dsbo_test_widgets``) whose catalogue says that the module
    ``dsbo_test_plugin`` registers ``round``; neither module is imported yet."""
    (tmp_path / "dsbo_test_widgets.py").write_text(
        "from dsbo.registry import Registry\n"
        "WIDGETS = Registry('widget', {'dsbo_test_plugin': ('round',)})\n"
    )
    (tmp_path / "dsbo_test_plugin.py").write_text(
        "from dsbo_test_widgets import WIDGETS\n"
        "@WIDGETS.register('round', 'a round widget')\n"
        "def make_round(radius=1.0):\n    return radius\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import dsbo_test_widgets

    yield dsbo_test_widgets.WIDGETS
    for name in ("dsbo_test_widgets", "dsbo_test_plugin"):
        sys.modules.pop(name, None)


def test_a_catalogued_name_loads_its_module_on_lookup(plugin):
    assert "round" in plugin and plugin.names() == ["round"]
    assert "dsbo_test_plugin" not in sys.modules
    assert plugin.get("round")(2.0) == 2.0
    assert plugin.origin("round") == "dsbo_test_plugin"
    assert plugin.available() == {"round": "a round widget"}


def test_registering_a_catalogued_name_elsewhere_is_refused(plugin):
    with pytest.raises(ConfigError, match="already registered"):
        plugin.register("round")(lambda: None)
    with pytest.raises(ConfigError, match="choose one of: round"):
        plugin.get("square")


def test_unregister_forgets_a_catalogued_name(plugin):
    plugin.unregister("round")
    assert "round" not in plugin and plugin.available() == {}


# ---------------------------------------------------------------------- names come from the registry
@pytest.fixture
def new_kinds():
    """A stopping rule ``test-patience`` and a curve model ``test-curve`` registered as a plugin
    would (no dsbo file edited), unregistered afterwards."""
    from dsbo.stopping import STOPPING_RULES, MedianRule, register_stopping_rule
    from dsbo.surrogates.curve_catalogue import CURVE_MODELS, register_curve_model

    @register_stopping_rule("test-patience", "the median rule under another name")
    class Patience(MedianRule):
        name = "test-patience"

        def __init__(self, *, patience: int = 2) -> None:
            super().__init__()
            self.patience = patience

    @register_curve_model("test-curve", "a curve model of the tests")
    def test_curve(num_params, max_steps, **options):
        return ("test-curve", num_params, max_steps, options)

    yield Patience, test_curve
    STOPPING_RULES.unregister("test-patience")
    CURVE_MODELS.unregister("test-curve")


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        call(*args, **kwargs)
    return str(info.value)


def test_a_new_rule_is_made_and_listed_in_every_message(new_kinds):
    from dsbo.cli.config import OptimizeConfig, check_early_stopping
    from dsbo.stopping import STOPPING_RULES, make_rule, rule_choices, rule_options

    patience, _ = new_kinds
    assert type(make_rule({"name": "test-patience", "patience": 3})) is patience
    assert rule_options("test-patience") == ["patience"] and "test-patience" in rule_choices()
    listed = ", ".join(["none", *STOPPING_RULES.names()])
    assert "test-patience" in listed
    assert error_of(make_rule, "nope").endswith(f"Choose one of: {listed}")
    assert error_of(make_rule, {"patience": 3}).endswith(f"choose one of: {listed}")
    assert "did you mean 'test-patience'?" in error_of(make_rule, "test-patiense")
    assert "Its options are: patience" in error_of(make_rule, {"name": "test-patience", "x": 1})
    empty = error_of(check_early_stopping, OptimizeConfig(early_stopping=" "))
    assert f"({', '.join(STOPPING_RULES.names())})" in empty and "test-patience" in empty
    unknown = error_of(check_early_stopping, OptimizeConfig(early_stopping="nope"))
    assert unknown.startswith("early_stopping.name='nope'") and unknown.endswith(listed)


def test_a_new_curve_model_is_accepted_and_listed(new_kinds):
    from dsbo.campaign.freeze_thaw import FreezeThawSettings
    from dsbo.cli.config import OptimizeConfig, check_early_stopping
    from dsbo.surrogates.curve_catalogue import CURVE_MODELS

    _, factory = new_kinds
    settings = FreezeThawSettings.build({"curve_model": "test-curve"}, 9, 60)
    assert settings.curve_model == "test-curve" and CURVE_MODELS.get("test-curve") is factory
    spec = {"name": "freeze-thaw", "curve_model": "nope"}
    message = error_of(
        check_early_stopping, OptimizeConfig(early_stopping=spec, max_steps=9, budget_steps=60)
    )
    assert message == "early_stopping.curve_model='nope': choose one of " + ", ".join(
        CURVE_MODELS.names()
    )
    assert "test-curve" in message and "power-law-ensemble" in message


def test_the_guide_lists_every_rule_but_the_aliases():
    """The guide's "Which rule" table names each rule once (an alias registers the class of
    another name: ``successive-halving`` is ``asha``)."""
    from dsbo.stopping import STOPPING_RULES

    text = (ROOT / "docs" / "guide" / "early-stopping.md").read_text()
    table = text.split("## Which rule", 1)[1].split("\n\n")[1]
    rows = [line.split("|")[2] for line in table.splitlines()[2:]]
    # the cell is a name (`"asha"`) or a mapping with one (`{"name": "percentile", ...}`)
    found = [
        re.search(r'"name": "([^"]+)"', cell) or re.search(r'"([^"]+)"', cell) for cell in rows
    ]
    listed = {match.group(1) for match in found}
    own = {name for name in STOPPING_RULES.names() if STOPPING_RULES.get(name).name == name}
    assert listed == own
