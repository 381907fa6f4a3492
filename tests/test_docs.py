"""The docs site (``mkdocs.yml``, ``docs/``): its examples run and its links resolve.

- Every ```` ```python ```` block of the getting-started, user-guide and method pages runs, page
  by page, in order, in one fresh namespace per page, in a temporary directory, with W&B
  disabled. A block written as doctest (``>>>``) is run as a doctest in that namespace.
  Blocks that must not run (shell commands, long jobs, sketches with placeholders) use
  another fence: ```` ```bash ````, ```` ```text ```` or ```` ```py ````.
- Every page of the nav exists and every page is in the nav; every relative link of a page
  (to another page, an anchor of one, or a file of the repository) resolves.
- Nothing in the docs points outside the repository's own files.

``mkdocs build --strict`` itself (strict: every warning, such as a broken link or a docstring
the API reference cannot read, fails it) runs in CI (``.ci/run``), before the tests.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def nav_pages() -> list[str]:
    """The Markdown files of ``mkdocs.yml``'s nav, relative to ``docs/``."""

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may hold tags for Python objects (!!python/name:...); none matter here
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    pages: list[str] = []

    def walk(item: object) -> None:
        if isinstance(item, str):
            pages.append(item)
        elif isinstance(item, list):
            for entry in item:
                walk(entry)
        elif isinstance(item, dict):
            for value in item.values():
                walk(value)

    walk(config["nav"])
    return [p for p in pages if not p.startswith(("http://", "https://"))]


def runnable_pages() -> list[Path]:
    pages = [
        DOCS / "getting-started.md",
        *sorted((DOCS / "guide").glob("*.md")),
        *sorted((DOCS / "methods").glob("*.md")),
    ]
    return [p for p in pages if "```python" in p.read_text()]


def python_blocks(page: Path) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text()) if lang == "python"]


def test_the_runnable_pages_have_examples():
    names = {p.relative_to(DOCS).as_posix() for p in runnable_pages()}
    assert {
        "getting-started.md",
        "guide/campaign.md",
        "guide/problems.md",
        "guide/surrogates.md",
        "guide/training.md",
    } <= names


@pytest.mark.parametrize("page", runnable_pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the repository: runs/ and friends land here
    monkeypatch.setenv("WANDB_MODE", "disabled")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for number, code in enumerate(python_blocks(page), start=1):
        where = f"{page.relative_to(ROOT)}, python block {number}"
        if code.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(code, namespace, where, str(page), 0)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, clear_globs=False)
            assert runner.summarize(verbose=False).failed == 0, where
        else:
            exec(compile(code, where, "exec"), namespace)  # noqa: S102


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    nav = nav_pages()
    missing = [p for p in nav if not (DOCS / p).is_file()]
    assert not missing, f"pages in mkdocs.yml's nav that do not exist: {missing}"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_hooks" not in p.parts}
    assert pages - set(nav) == set(), "pages missing from the nav"
    assert len(nav) == len(set(nav)), "a page appears twice in the nav"


def test_the_api_reference_covers_every_package():
    """Each package of dsbo (but the command lines) and the zoo has a ``::: name`` directive;
    ``show_submodules`` then brings in every module, new ones included."""
    directives = set(
        re.findall(
            r"^::: ([\w.]+)",
            "\n".join(p.read_text() for p in (DOCS / "reference").glob("*.md")),
            re.M,
        )
    )
    packages = {
        f"dsbo.{p.name}" for p in (ROOT / "dsbo").iterdir() if (p / "__init__.py").is_file()
    }
    modules = {
        f"dsbo.{p.stem}" for p in (ROOT / "dsbo").glob("*.py") if p.stem in ("errors", "registry")
    }
    missing = (packages - {"dsbo.cli"}) | modules | {"dsbo_zoo"}
    assert not missing - directives, f"add these to docs/reference/: {sorted(missing - directives)}"


def _anchors(page: Path) -> set[str]:
    """The heading ids MkDocs gives a page (its ``toc`` slugs) plus explicit ``{#id}``s."""
    anchors = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            explicit = re.search(r"\{#([\w-]+)\}\s*$", title)
            if explicit:
                anchors.add(explicit.group(1))
                continue
            title = re.sub(r"`([^`]*)`", r"\1", title)
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
            slug = re.sub(r"[^\w\s-]", "", title).strip().lower()
            anchors.add(re.sub(r"[-\s]+", "-", slug))
    return anchors


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())  # links inside code blocks are code
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize(
    "page",
    sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts),
    ids=lambda p: p.relative_to(DOCS).as_posix(),
)
def test_relative_links_resolve(page):
    broken = []
    for link in _links(page):
        if re.match(r"^[a-z]+:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(link)
            continue
        if not path.is_relative_to(ROOT):
            broken.append(f"{link} (outside the repository)")
        elif (
            anchor
            and path.suffix == ".md"
            and path.is_relative_to(DOCS)
            and anchor not in _anchors(path)
        ):
            broken.append(f"{link} (no heading #{anchor})")
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_nothing_points_outside_the_repository():
    offenders = []
    for path in [ROOT / "mkdocs.yml", *DOCS.rglob("*")]:
        if path.is_file() and path.suffix in {".md", ".yml", ".py"}:
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if re.search(r"\.\.[/\\]shared\b|/work/|shared[/\\]data", line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
