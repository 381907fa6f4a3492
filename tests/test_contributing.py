"""docs/contributing.md's worked examples work as written: adding a kind is one module, one
registry entry and one test, and no dsbo file is edited.

For each kind the page shows three fenced blocks, told apart by their ``title``: the module
(``dsbo/<package>/<module>.py``), its catalogue line (``catalogue entry``) and its test
(``tests/<package>/test_<module>.py``). Here each module and test is written into a temporary
package on ``sys.path``; importing the module registers its name (the decorator, as a plugin
would), which must be the name its catalogue line gives, with the module dsbo would ship it
as; then the test's functions run (each a tiny real campaign that checks the new kind was
used). The registered names are removed afterwards.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "contributing.md"
BLOCK = re.compile(r'^```python title="([^"]+)"\n(.*?)^```\s*$', re.M | re.S)

#: Each kind's section heading and its registry (``module:attribute``).
KINDS = {
    "A problem": "dsbo.problems.registry:PROBLEMS",
    "A surrogate": "dsbo.surrogates.catalogue:SURROGATES",
    "An acquisition policy": "dsbo.acquisition.catalogue:POLICIES",
    "A post-processor": "dsbo.acquisition.catalogue:POSTPROCESSORS",
    "A context policy": "dsbo.contexts.catalogue:CONTEXT_POLICIES",
    "A stopping rule": "dsbo.stopping.catalogue:STOPPING_RULES",
    "A curve model": "dsbo.surrogates.curve_catalogue:CURVE_MODELS",
}


def sections() -> dict[str, str]:
    """``{heading: text}`` of the page's ``##`` sections."""
    parts = re.split(r"^## (.+)$", PAGE.read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def example(heading: str) -> tuple[tuple[str, str], dict[str, tuple[str, ...]], tuple[str, str]]:
    """The section's module ``(path, code)``, catalogue entry ``{module: names}`` and test
    ``(path, code)``."""
    blocks = BLOCK.findall(sections()[heading])
    assert [title.split("/")[0] for title, _ in blocks] == ["dsbo", "catalogue entry", "tests"], (
        f"{heading}: the module, the catalogue entry and the test, in this order"
    )
    (module, catalogue, test) = blocks
    return module, ast.literal_eval("{" + catalogue[1] + "}"), test


def registry(spec: str):
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def test_the_page_covers_every_registry_with_a_worked_example():
    from test_registries import REGISTRIES

    assert sorted(KINDS.values()) == sorted(REGISTRIES)
    assert set(KINDS) <= set(sections())
    text = PAGE.read_text()
    adding = (ROOT / "docs" / "architecture.md").read_text().split("## Adding a method")[1]
    assert "(contributing.md)" in adding
    for spec in KINDS.values():  # both pages' tables of kinds name each catalogue's file
        path = f"`{spec.partition(':')[0].replace('.', '/')}.py`"
        assert path in text and path in adding, spec


def test_the_examples_are_formatted_and_lint_clean():
    """As the code they stand for: ``ruff format`` and ``ruff check`` with the repository's
    settings, each block read as the file its title names."""
    for title, code in BLOCK.findall(PAGE.read_text()):
        if title == "catalogue entry":
            continue
        for command in (["format", "--check"], ["check", "--quiet"]):
            ruff = [sys.executable, "-m", "ruff", *command, "--stdin-filename", title, "-"]
            done = subprocess.run(ruff, input=code, cwd=ROOT, capture_output=True, text=True)
            assert done.returncode == 0, f"{title}: ruff {command[0]}\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("heading", list(KINDS))
def test_a_worked_example_registers_and_runs_without_editing_dsbo(heading, tmp_path, monkeypatch):
    (module_path, module_code), catalogue, (test_path, test_code) = example(heading)
    shipped = module_path.removesuffix(".py").replace("/", ".")
    assert list(catalogue) == [shipped], "the catalogue line names the module's dsbo path"
    package = "contrib_" + re.sub(r"\W", "_", heading.lower())
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    module_name, test_name = (Path(p).stem for p in (module_path, test_path))
    (folder / f"{module_name}.py").write_text(module_code)
    (folder / f"{test_name}.py").write_text(test_code)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = registry(KINDS[heading])
    before = set(names.names())
    try:
        importlib.import_module(f"{package}.{module_name}")
        added = set(names.names()) - before
        assert added == set(catalogue[shipped]), "the module registers the catalogued names"
        for name in added:
            assert names.origin(name) == f"{package}.{module_name}"
        tests = importlib.import_module(f"{package}.{test_name}")
        functions = [f for n, f in vars(tests).items() if n.startswith("test_") and callable(f)]
        assert functions
        for function in functions:
            function()
    finally:
        for name in set(names.names()) - before:
            names.unregister(name)
        for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[loaded]
