"""The installed packages: the zoo installs as ``dsbo_zoo`` and leaves the name ``models`` free."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_lists_every_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"dsbo_zoo": "models"}
    zoo = [
        "dsbo_zoo" + name.removeprefix("models")
        for name in find_packages(ROOT, include=["models*"])
    ]
    assert sorted(config["packages"]) == sorted(find_packages(ROOT, include=["dsbo*"]) + zoo)


def test_a_users_own_models_package_is_not_shadowed(tmp_path):
    """A project with its own ``models`` package imports it, and dsbo's zoo, side by side."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("OWNER = 'user'\n")
    code = (
        "import models, dsbo_zoo, dsbo.surrogates\n"
        "from dsbo_zoo import SimpleSMB\n"
        "print(models.OWNER, SimpleSMB.__module__, dsbo_zoo.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["user", "dsbo_zoo.smb", "dsbo_zoo"]


def test_the_zoo_imports_without_dsbo_or_botorch(tmp_path):
    """DESIGN's dependency rule: ``dsbo_zoo`` never imports ``dsbo`` (nor BoTorch)."""
    code = (
        "import sys\n"
        "import dsbo_zoo\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('dsbo', 'botorch', 'gpytorch'))\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
