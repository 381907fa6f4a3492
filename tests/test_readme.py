"""The README is a front page whose quick start works: CI runs it, its examples run.

- The quick start is three commands — install, the main job, the tests — and ``.ci/run``
  (what CI runs on a fresh machine) installs the project with the README's install command and
  runs the README's test command; every extra the install names exists.
- The main job (``python -m dsbo.optimize`` without arguments) is the campaign the README
  describes.
- Its ``python`` blocks run (in a temporary directory, W&B disabled); its relative links
  resolve; it stays a front page (at most about 200 lines) and points nowhere outside the
  repository.

The zoo's doctest examples moved with the user guide to ``docs/guide/training.md``, where
``tests/test_docs.py`` runs them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
MAX_LINES = 200


def section(title: str) -> str:
    """The text of the README section whose ``##`` heading starts with ``title``."""
    text = README.read_text()
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def commands(block: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments dropped."""
    joined = block.replace("\\\n", " ")
    lines = [line.split(" #")[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def quick_start() -> list[str]:
    blocks = [body for lang, body in FENCE.findall(section("Quick start")) if lang == "bash"]
    assert len(blocks) == 1, "the quick start is one bash block"
    return commands(blocks[0])


def ci_commands() -> list[str]:
    return [" ".join(line.split()) for line in commands(CI.read_text())]


def test_the_quick_start_is_install_main_job_tests():
    install, main_job, tests = quick_start()  # exactly three commands
    words = shlex.split(install)
    assert words[:2] == ["pip", "install"] and "-e" in words, install
    assert words[words.index("-e") + 1].startswith(".["), "the project itself, with extras"
    assert main_job == "python -m dsbo.optimize"
    assert tests == "python -m pytest -q -n auto"  # pytest-xdist: one worker per core


def test_ci_installs_the_project_and_runs_the_tests_the_way_the_readme_says():
    install, _, tests = quick_start()
    ci = ci_commands()
    assert " ".join(install.split()) in ci, (
        f".ci/run must run the README's install command: {install}"
    )
    assert tests in ci, f".ci/run must run the README's test command: {tests}"
    assert ci.index(" ".join(install.split())) < ci.index(tests)


def test_every_extra_the_install_names_exists():
    install, _, _ = quick_start()
    target = shlex.split(install)[shlex.split(install).index("-e") + 1]
    extras = re.fullmatch(r"\.\[([\w,-]+)\]", target).group(1).split(",")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "dev" in extras, "the tests need the dev extra"
    assert not set(extras) - set(declared), (
        f"extras missing from pyproject.toml: {set(extras) - set(declared)}"
    )
    # the pinned torch satisfies the project's own torch requirement
    pin = re.search(r'"torch==([\d.]+)"', install)
    if pin:
        floor = next(
            d
            for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
            if d.startswith("torch")
        )
        low = tuple(int(p) for p in re.search(r">=([\d.]+)", floor).group(1).split("."))
        assert tuple(int(p) for p in pin.group(1).split(".")) >= low


def test_the_main_job_is_the_campaign_the_readme_describes(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dsbo.optimize", "--print_config"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    config = yaml.safe_load(done.stdout)
    text = section("Quick start")
    assert config["problem"]["name"] == "branin-20d" and "Branin embedded in 20 dimensions" in text
    assert config["surrogate"]["name"] == "map-saas" and "MAP-SAAS" in text
    assert "bonsai" in (config["postprocess"] or {}) and "BONSAI prunes" in text
    assert f"{config['budget']} evaluations" in text
    assert f"runs/{config['problem']['name']}-seed{config['seed']}/" in text


def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    blocks = [body for lang, body in FENCE.findall(README.read_text()) if lang == "python"]
    assert blocks, "the five-minute path has a Python example"
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"README.md, python block {number}", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "runs" / "first" / "trials.sqlite").is_file()


def test_a_front_page_that_points_into_the_repository_only():
    text = README.read_text()
    assert text.count("\n") <= MAX_LINES, (
        f"README.md has {text.count(chr(10))} lines; the docs hold the details"
    )
    for heading in ("## Quick start", "## Five minutes", "## Documentation", "## Development"):
        assert heading in text, heading
    assert not re.search(r"\.\.[/\\]shared\b|/work/|shared[/\\]data", text)
    prose = FENCE.sub("", text)
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"^[a-z]+:", link):
            continue
        target = link.partition("#")[0]
        if target and not (ROOT / target).exists():
            broken.append(link)
    assert not broken, f"README links to files that do not exist: {broken}"
    assert (ROOT / "mkdocs.yml").is_file() and "mkdocs serve" in text
