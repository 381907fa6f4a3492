"""Griffe extension: dsbo's docstrings as the API reference shows them.

dsbo's docstrings are Google style with two habits of Sphinx: an ``Example:`` section (Griffe
reads only ``Examples:`` as examples, and would show the ``>>>`` lines as quoted text) and
roles such as ``:class:`~dsbo.campaign.Campaign``` or ``:math:`x```. This extension renames the
section and turns each role into inline code before the docstrings are parsed. The source
files are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

SECTION = re.compile(r"^(\s*)Example:\s*$", re.M)
ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|math|ref|const|term):`~?([^`]+)`"
)


def _code(match: re.Match) -> str:
    text = match.group(1)
    if "<" in text and text.endswith(">"):  # :ref:`title <target>`
        text = text[: text.index("<")].strip()
    return f"`{text}`"


class DocstringHabits(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            value = SECTION.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = ROLE.sub(_code, value)
