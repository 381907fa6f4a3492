"""The registries' catalogues: every registering module is catalogued, every catalogued name is
registered by its module, names are known without torch, and package inits stay lazy.

The registries import the module of a name when it is first looked up (:mod:`dsbo.registry`);
a catalogue that missed a module would hide its names, one that named the wrong module would
fail the lookup. The checks that need a fresh interpreter run one (``sys.modules`` matters).
"""

from __future__ import annotations

import ast
import json
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
)
#: The functions (and ``Registry.register`` of a registry constant) whose calls register a name.
REGISTER_CALLS = {
    "register", "register_problem", "register_surrogate", "register_zoo_surrogate", "register_policy",
    "register_postprocessor", "register_context_policy",
}  # fmt: skip


def run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON value last."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
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
                if name == "register" and not (isinstance(func, ast.Attribute) and ast.unparse(func.value).isupper()):
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
    assert set(origins) == set(catalogue), "registered but not catalogued / catalogued but not registered"
    wrong = {name: (catalogue[name], origin) for name, origin in origins.items() if origin != catalogue[name]}
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
        "import dsbo.acquisition, dsbo.contexts, dsbo.data, dsbo.problems, dsbo.surrogates\n"
        "OptimizerSettings().validate(); ContextSettings.coerce({'policy': 'sadcbo'})\n"
        "names = {r.kind: r.names() for r in (PROBLEMS, SURROGATES, POLICIES, POSTPROCESSORS, CONTEXT_POLICIES)}\n"
        "assert 'bonsai' in POSTPROCESSORS and 'gp' in SURROGATES and 'branin-{D}d' in PROBLEMS\n"
        "print(json.dumps({'names': names, 'modules': sorted(m.split('.')[0] for m in sys.modules)}))"
    )
    assert not {"torch", "botorch", "gpytorch"} & set(loaded["modules"])
    assert {"qlognei", "sobol", "sebo"} <= set(loaded["names"]["acquisition"])
    assert {"sadcbo", "cubo"} <= set(loaded["names"]["contexts.policy"])
    assert {"simple-smb", "gp", "map-saas"} <= set(loaded["names"]["surrogate"])


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
    assert not {"dsbo.problems.hpo", "dsbo.problems.embedded", "dsbo.surrogates.neural"} & set(loaded["first"])
    # every surrogate registered (the zoo ones too) without importing Lightning or the zoo
    assert not {"pytorch_lightning", "lightning", "dsbo_zoo", "sklearn"} & set(loaded["modules"])


@pytest.mark.parametrize(
    "package", ["dsbo.acquisition", "dsbo.contexts", "dsbo.data", "dsbo.problems", "dsbo.surrogates"]
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

    assert OptimizerSettings is Settings and Environment is OldEnvironment and train_module is old_train_module
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
