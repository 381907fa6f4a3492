"""The layering of docs/architecture.md, checked on the code's own imports (``ast``).

Every ``import`` in a module counts, at the top or inside a function, except those under
``if TYPE_CHECKING:`` (they never run). The rules:

- each package of dsbo sits in a layer and imports only its own layer and the ones below,
  apart from the few upward imports listed in :data:`UPWARD` (each with its reason);
- no import circles between modules;
- the zoo (``models/``, installed as ``dsbo_zoo``) never imports dsbo;
- nothing imports :mod:`dsbo.cli` but the ``python -m`` entry modules, and nothing in dsbo
  imports ``experiments``;
- no module is longer than :data:`MAX_LINES` lines unless its docstring says why it must stay
  whole (a line starting ``Kept whole:``).

A second group of tests checks which heavy libraries an import pulls in (``sys.modules`` in
a fresh interpreter), so that commands start fast.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600

#: dsbo's packages by layer, lowest first (docs/architecture.md).
LAYERS: list[tuple[str, ...]] = [
    ("dsbo._compat", "dsbo.errors", "dsbo.registry"),
    ("dsbo.space",),
    ("dsbo.storage",),
    ("dsbo.problems",),
    ("dsbo.data",),
    ("dsbo.surrogates",),
    ("dsbo.acquisition", "dsbo.stopping"),
    ("dsbo.contexts",),
    ("dsbo.campaign",),
    ("dsbo.analysis",),
    ("dsbo.runtime",),
    ("dsbo.cli", "dsbo.integrations"),
    ("dsbo", "dsbo.optimize", "dsbo.blackbox", "dsbo.sweep", "dsbo.train", "dsbo.report"),
]
#: Imports from a lower layer to a higher one, and why each is allowed (at most three).
UPWARD = {
    ("dsbo.campaign.campaign", "dsbo.runtime.driver"): "Campaign.evaluate/step/run hand the "
    "campaign to the runtime's driver (imported inside the method; the driver never imports "
    "the campaign)",
}


def _modules() -> dict[str, Path]:
    found = {}
    for folder, name in (("dsbo", "dsbo"), ("models", "dsbo_zoo")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [name, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _owner(name: str) -> str | None:
    """The module of ours that ``name`` (a module or ``module.attribute``) refers to."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(module: str) -> dict[str, int]:
    """``{imported module: line}`` for every import of ours in ``module``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]  # a module or an attribute
        for name in names:
            target = _owner(name)
            if target is not None and target != module:
                found.setdefault(target, node.lineno)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def layer_of(module: str) -> int:
    best, depth = None, -1
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and len(package) > depth:
                best, depth = index, len(package)
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS and the docs"
    return best


def test_every_module_has_a_layer():
    for module in MODULES:
        if module.startswith("dsbo."):
            layer_of(module)


def test_no_module_imports_a_higher_layer_but_the_listed_ones():
    assert len(UPWARD) <= 3
    upward = {
        (module, target): line
        for module, targets in GRAPH.items()
        if module.startswith("dsbo") and not module.startswith("dsbo_zoo")
        for target, line in targets.items()
        if target.startswith("dsbo.") and layer_of(target) > layer_of(module)
    }
    unexpected = [f"{m}:{line} imports {t}" for (m, t), line in upward.items() if (m, t) not in UPWARD]
    assert not unexpected, "imports from a lower layer to a higher one:\n" + "\n".join(unexpected)
    stale = [pair for pair in UPWARD if pair not in upward]
    assert not stale, f"listed upward imports that no longer exist: {stale}"


def test_no_import_circles():
    import networkx as nx

    graph = nx.DiGraph([(m, t) for m, targets in GRAPH.items() for t in targets])
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def test_the_zoo_never_imports_dsbo():
    wrong = [(m, t) for m, ts in GRAPH.items() if m.startswith("dsbo_zoo") for t in ts if t.startswith("dsbo.") or t == "dsbo"]
    assert not wrong


def test_nothing_imports_the_command_lines_or_the_experiments():
    entry = {"dsbo.optimize", "dsbo.blackbox", "dsbo.sweep", "dsbo.train", "dsbo.report"}
    wrong = [
        (m, t) for m, ts in GRAPH.items() for t in ts
        if (t == "dsbo.cli" or t.startswith("dsbo.cli.")) and not m.startswith("dsbo.cli") and m not in entry
    ]  # fmt: skip
    assert not wrong, wrong
    for path in MODULES.values():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] == "experiments" for n in names), path


def test_storage_problems_and_the_zoo_stay_below_the_methods():
    for module, targets in GRAPH.items():
        if module.startswith("dsbo.storage"):
            assert not [t for t in targets if t.startswith(("dsbo.surrogates", "dsbo.acquisition"))], module
        if module.startswith("dsbo.problems"):
            assert not [t for t in targets if t.startswith("dsbo.acquisition")], module


def test_modules_are_short_or_say_why_not():
    long = []
    for module, path in MODULES.items():
        text = path.read_text()
        if text.count("\n") > MAX_LINES:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "Kept whole:" not in doc:
                long.append(f"{module} ({text.count(chr(10))} lines)")
    assert not long, f"modules over {MAX_LINES} lines without a 'Kept whole:' reason: {long}"


# ---------------------------------------------------------------------- heavy imports
HEAVY = ("pytorch_lightning", "lightning", "wandb", "matplotlib", "sklearn", "statsforecast", "faiss", "dask", "numba")


def loaded_after(statement: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after ``statement`` in a fresh interpreter."""
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "statement",
    [
        "import dsbo.campaign",
        "import dsbo.problems, dsbo.surrogates, dsbo.acquisition, dsbo.contexts",
        "from dsbo.campaign import Campaign; from dsbo.problems import get_problem; "
        "Campaign(get_problem('branin'), surrogate='gp', budget=3, dry_run=False)",
        "import dsbo.runtime.parallel, dsbo.runtime.executors, dsbo.storage",
    ],
)
def test_the_core_imports_no_heavy_library(statement):
    assert not loaded_after(statement) & set(HEAVY)


@pytest.mark.parametrize(
    "statement",
    ["import dsbo.storage", "import dsbo.cli.blackbox", "import dsbo.cli.optimize", "import dsbo.cli.sweep"],
)
def test_command_lines_and_the_store_start_without_torch(statement):
    loaded = loaded_after(statement)
    assert not loaded & {"torch", "botorch", *HEAVY}, sorted(loaded & {"torch", "botorch", *HEAVY})
