"""The README's runnable examples: the zoo section's doctests."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def section(title: str) -> str:
    """The text of the README section whose heading starts with ``title``."""
    text = README.read_text()
    start = text.index(f"### {title}")
    end = text.find("\n### ", start + 1)
    return text[start : end if end > 0 else None]


def test_using_the_zoo_without_dsbo_examples_run(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # outside the repository: nothing resolves through the folder models/
    code = "\n".join(re.findall(r"```python\n(.*?)```", section("Using the zoo without dsbo"), flags=re.S))
    assert code.count(">>>") >= 10
    test = doctest.DocTestParser().get_doctest(code, {}, "README: Using the zoo without dsbo", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
