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
  whole (a line starting ``Kept whole:``);
- no module reaches into another module's private names (:func:`private_accesses`): neither
  ``from dsbo.x import _name`` nor ``obj._name`` on anything but ``self``, ``cls`` or
  ``super()``, unless the module defines ``_name`` itself; the internals of other libraries
  that dsbo cannot reach otherwise are listed in :data:`THIRD_PARTY_PRIVATE`, each with its
  reason.

A second group of tests checks which heavy libraries an import pulls in (``sys.modules`` in
a fresh interpreter), so that commands start fast.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable
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
    unexpected = [
        f"{m}:{line} imports {t}" for (m, t), line in upward.items() if (m, t) not in UPWARD
    ]
    assert not unexpected, "imports from a lower layer to a higher one:\n" + "\n".join(unexpected)
    stale = [pair for pair in UPWARD if pair not in upward]
    assert not stale, f"listed upward imports that no longer exist: {stale}"


def test_no_import_circles():
    import networkx as nx

    graph = nx.DiGraph([(m, t) for m, targets in GRAPH.items() for t in targets])
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, f"import circles: {circles}"


def test_the_zoo_never_imports_dsbo():
    wrong = [
        (m, t)
        for m, ts in GRAPH.items()
        if m.startswith("dsbo_zoo")
        for t in ts
        if t.startswith("dsbo.") or t == "dsbo"
    ]
    assert not wrong


def test_nothing_imports_the_command_lines_or_the_experiments():
    entry = {"dsbo.optimize", "dsbo.blackbox", "dsbo.sweep", "dsbo.train", "dsbo.report"}
    wrong = [
        (m, t)
        for m, ts in GRAPH.items()
        for t in ts
        if (t == "dsbo.cli" or t.startswith("dsbo.cli."))
        and not m.startswith("dsbo.cli")
        and m not in entry
    ]
    assert not wrong, wrong
    for path in MODULES.values():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                assert not any(n.split(".")[0] == "experiments" for n in names), path


def test_storage_problems_and_the_zoo_stay_below_the_methods():
    for module, targets in GRAPH.items():
        if module.startswith("dsbo.storage"):
            assert not [
                t for t in targets if t.startswith(("dsbo.surrogates", "dsbo.acquisition"))
            ], module
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


#: Markers that turn formatting off (``fmt: skip``, ``fmt: off``) allowed in the repository's
#: Python: only where a table or a matrix reads better aligned; everything else is
#: ``ruff format``ted (CI runs ``ruff format --check``).
MAX_FORMAT_SKIPS = 20


def test_formatting_is_skipped_only_for_a_few_aligned_tables():
    markers = tuple("# fmt: " + word for word in ("skip", "off"))  # spelt so: not a marker here
    skips = []
    for folder in ("dsbo", "models", "tests", "experiments", "configs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if any(marker in line for marker in markers):
                    skips.append(f"{path.relative_to(ROOT)}:{number}")
    assert len(skips) <= MAX_FORMAT_SKIPS, f"{len(skips)} fmt: skip/off markers: {skips[:30]}"


# ---------------------------------------------------------------------- private names
#: Private names of other libraries that dsbo reaches, each with why no public way exists.
#: A key is ``(module or package, expression)``: the expression as :func:`private_accesses`
#: writes it, allowed in that module or anywhere in that package (so that splitting a module
#: keeps its entry). An entry that matches nothing fails the test: the list stays honest.
THIRD_PARTY_PRIVATE: dict[tuple[str, str], str] = {
    ("dsbo._compat", "sys._getframe"): "the deprecation shim walks the caller's frames to "
    "attribute its warning to the first frame outside importlib (warnings.warn's stacklevel "
    "counts importlib's frames); inspect.currentframe().f_back is the public spelling of the "
    "same CPython frame access, the way to retire this entry",
    ("dsbo.registry", "sys._getframe"): "a registration records the module whose top-level "
    "code registers it (the innermost <module> frame), without inspect.stack()'s cost of "
    "reading every frame's source; inspect.currentframe() would retire this entry too",
    ("dsbo.runtime.executors", "os._exit"): "a worker process ends without running the "
    "parent's atexit handlers or flushing its copied buffers: the documented use of os._exit "
    "in a child process",
    ("dsbo.problems.sourcing", "torch._standard_gamma"): "Dirichlet draws from a given "
    "torch.Generator: torch.distributions.Dirichlet/Gamma take no generator, and "
    "_standard_gamma is what they call",
    ("dsbo.surrogates.gp", "outcome_transform._batch_shape"): "botorch's Standardize keeps "
    "its m, outputs, batch_shape and min_stdv only as private attributes; the ensemble GP "
    "re-declares the same standardization for a batch shape",
    ("dsbo.surrogates.gp", "outcome_transform._m"): "see outcome_transform._batch_shape",
    ("dsbo.surrogates.gp", "outcome_transform._outputs"): "see outcome_transform._batch_shape",
    ("dsbo.surrogates.gp", "outcome_transform._min_stdv"): "see outcome_transform._batch_shape",
    ("dsbo.surrogates.sparse_gp", "covar._linear_op"): "the low-rank part of linear_operator's "
    "LowRankRootAddedDiagLinearOperator (its public linear_ops holds it beside the diagonal, "
    "in either order)",
    ("dsbo.acquisition.regularized", "from botorch.acquisition.analytic import _log_ei_helper"): (
        "log(phi(u) + u Phi(u)), the core of BoTorch's LogEI, stable for very negative u (an "
        "erfcx branch); BoTorch exports it under no public name, and rebuilding it from the "
        "public log_phi and log_ndtr would copy its numerics"
    ),
    ("dsbo.acquisition.sparse_ehvi", "from botorch.acquisition.analytic import _log_ei_helper"): (
        "see dsbo.acquisition.regularized"
    ),
    # Optuna's internals that a sampler needs, all in one module (its docstring says which)
    ("dsbo.integrations.optuna_internals", "trial._trial_id"): "a trial's storage-wide id "
    "(FrozenTrial.number counts within a study only): the key of per-trial state, as Optuna's "
    "samplers key it, and what the storage's setters take",
    ("dsbo.integrations.optuna_internals", "study._storage"): "the study's storage, for one "
    "key per study and for writing a system attribute of the frozen trial being sampled: "
    "Study offers a sampler neither",
    ("dsbo.integrations.optuna_internals", "study._study_id"): "see study._storage",
    ("dsbo.integrations.optuna_internals", "study._get_trials"): "the trials as Optuna read "
    "them once for the trial being sampled (use_cache, its per-trial cache, which its own "
    "samplers read); Study.get_trials reads the storage again",
    ("dsbo.integrations.optuna_internals", "distribution._contains"): "whether a value belongs "
    "to a distribution: BaseDistribution has no public membership test",
    (
        "dsbo.integrations.optuna_internals",
        "from optuna.samplers._base import _process_constraints_after_trial",
    ): "records constraints_func's values as Optuna's samplers do (the system attribute its "
    "constraint-aware samplers read); Optuna exports it under no public name",
    ("dsbo.cli", "logger._experiment"): "whether Lightning's WandbLogger has started its W&B "
    "run: its public .experiment property would start one",
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_names(tree: ast.AST) -> set[str]:
    """Names a module defines for itself: functions and classes, names assigned at module or
    class level, and every attribute it assigns (``obj._x = ...``)."""
    names: set[str] = set()
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.attr)
    for scope in scopes:
        for statement in scope.body:
            targets = []
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
                targets = [statement.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _is_own_receiver(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: an object's own attributes, wherever defined."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def private_accesses(
    source: str, module: str, is_package: bool = False, modules: Iterable[str] = ()
) -> list[tuple[int, str, bool]]:
    """Every access in ``source`` (the module ``module``) to a private name of another module:
    ``(line, expression, ours)``, ``ours`` when the name is dsbo's or the zoo's.

    - ``from x import _name`` (relative imports resolved), and a path through a private
      module (``from x._m import name``, ``import x._m``). A package may import its own
      private modules (``from dsbo import _compat`` in :mod:`dsbo`, for its side effect;
      ``from dsbo._compat import ...`` anywhere in dsbo): a private module is private to its
      package, not to itself. ``modules`` names the modules that exist, which tells a private
      module from a private name.
    - ``obj._name`` and ``getattr(obj, "_name")`` (``hasattr``, ``setattr``, ``delattr``)
      where ``obj`` is not ``self``, ``cls`` or ``super()`` and ``_name`` is not defined in
      this module (:func:`_defined_names`): another module's internals, even on an object
      this module was handed.
    """
    tree = ast.parse(source)
    known = set(modules)
    defined = _defined_names(tree)
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str, bool]] = []

    def ours(name: str) -> bool:
        return name.split(".")[0] in ("dsbo", "dsbo_zoo")

    def inside(path: list[str]) -> bool:
        """Whether ``module`` may reach the dotted ``path``: each private segment's package
        holds ``module``."""
        for i, part in enumerate(path):
            owner = ".".join(path[:i])
            if _is_private(part) and not (module == owner or module.startswith(owner + ".")):
                return False
        return True

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                private_module = target in known and inside(target.split("."))
                if not inside(base.split(".")) or (_is_private(alias.name) and not private_module):
                    found.append((node.lineno, f"from {base} import {alias.name}", ours(base)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not inside(alias.name.split(".")):
                    found.append((node.lineno, f"import {alias.name}", ours(alias.name)))
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            if not _is_own_receiver(node.value) and node.attr not in defined:
                found.append((node.lineno, ast.unparse(node), False))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
            and not _is_own_receiver(node.args[0])
            and node.args[1].value not in defined
        ):
            found.append((node.lineno, f"{ast.unparse(node.args[0])}.{node.args[1].value}", False))
    return found


def _allowed(module: str, expression: str) -> tuple[str, str] | None:
    for key in THIRD_PARTY_PRIVATE:
        where, allowed = key
        if allowed == expression and (module == where or module.startswith(where + ".")):
            return key
    return None


def test_no_module_reaches_into_another_modules_private_names():
    wrong, used = [], set()
    for module, path in MODULES.items():
        package = path.name == "__init__.py"
        for line, expression, ours in private_accesses(path.read_text(), module, package, MODULES):
            key = None if ours else _allowed(module, expression)
            if key is None:
                wrong.append(f"{module}:{line}: {expression}")
            used.add(key)
    listed = "\n".join(wrong)
    assert not wrong, (
        "private names of other modules (make them public, or list a library's internals in "
        f"THIRD_PARTY_PRIVATE with the reason):\n{listed}"
    )
    stale = sorted(set(THIRD_PARTY_PRIVATE) - used)
    assert not stale, f"THIRD_PARTY_PRIVATE entries that match nothing: {stale}"


PLANTED = """
import os
from dsbo.acquisition.thompson import _helper
from dsbo.space._internal import parse
from . import _sibling_module
from .pruning import _gaps


class Mine:
    _cache = {}

    def __init__(self, other):
        self._own = 1
        super()._setup()
        other._own = 2  # assigned here: this module's own attribute
        print(other._cache, other._own)
        print(other._theirs, getattr(other, "_hidden", None), os._exit)
"""


def test_the_private_name_check_finds_a_planted_access():
    """The check run on a module that reaches into others' private names reports each, and
    none of the names this module defines or reaches through ``self``/``super()``."""
    modules = {"dsbo.acquisition._sibling_module", "dsbo.acquisition.pruning"}
    found = private_accesses(PLANTED, "dsbo.acquisition.planted", modules=modules)
    assert {(e, o) for _, e, o in found} == {
        ("from dsbo.acquisition.thompson import _helper", True),
        ("from dsbo.space._internal import parse", True),
        ("from dsbo.acquisition.pruning import _gaps", True),
        ("other._theirs", False),
        ("other._hidden", False),
        ("os._exit", False),
    }
    assert _allowed("dsbo.acquisition.planted", "os._exit") is None
    assert _allowed("dsbo.runtime.executors", "os._exit") is not None
    assert _allowed("dsbo.cli.train_steps", "logger._experiment") is not None


# ---------------------------------------------------------------------- heavy imports
HEAVY = (
    "pytorch_lightning",
    "lightning",
    "wandb",
    "matplotlib",
    "sklearn",
    "statsforecast",
    "faiss",
    "dask",
    "numba",
)


def loaded_after(statement: str) -> set[str]:
    """Top-level packages in ``sys.modules`` after ``statement`` in a fresh interpreter."""
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
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
    [
        "import dsbo.storage",
        "import dsbo.cli.blackbox",
        "import dsbo.cli.optimize",
        "import dsbo.cli.sweep",
    ],
)
def test_command_lines_and_the_store_start_without_torch(statement):
    loaded = loaded_after(statement)
    assert not loaded & {"torch", "botorch", *HEAVY}, sorted(loaded & {"torch", "botorch", *HEAVY})
