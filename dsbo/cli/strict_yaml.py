"""YAML that never guesses: the loader behind every config file and command-line value.

PyYAML follows YAML 1.1, which reads ``0x10`` as 16, ``010`` as 8, ``1_000`` as 1000,
``yes``/``on`` as true, and lets a repeated key silently replace the first. A typo in a budget
or an outcome then becomes a different number without a word. This loader keeps the YAML 1.2
core schema for scalars and refuses repeated keys:

- integers are decimal without leading zeros (``-12``, ``0``, ``42``); anything else
  (``0x10``, ``010``, ``1_000``) stays a string, so a typed field rejects it by name;
- floats are decimal with a dot or an exponent (``1.5``, ``1e-3``, ``-2.5E+4``), plus
  ``.inf``, ``-.inf`` and ``.nan``;
- booleans are ``true`` / ``false`` (any case); ``yes``, ``no``, ``on``, ``off`` stay strings;
- a mapping with the same key twice is an error naming the key and its line.

Example:
    >>> load("budget: 0x10")
    {'budget': '0x10'}
    >>> load("lr: 1e-3")
    {'lr': 0.001}
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from dsbo.errors import ConfigError

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(
    r"""[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z
    |[-+]?[0-9]+[eE][-+]?[0-9]+\Z
    |[-+]?\.(inf|Inf|INF)\Z
    |\.(nan|NaN|NAN)\Z""",
    re.X,
)
_BOOL = re.compile(r"(true|True|TRUE|false|False|FALSE)\Z")
_REPLACED = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"}


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core scalars and no repeated keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} appears twice (lines {seen[key]} and {line}); keep one",
                    key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        return int(self.construct_scalar(node))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        text = str(self.construct_scalar(node)).lower()
        if text.lstrip("+-") == ".inf":
            return float("-inf") if text.startswith("-") else float("inf")
        return float("nan") if text == ".nan" else float(text)

    def construct_yaml_bool(self, node: yaml.ScalarNode) -> bool:
        return str(self.construct_scalar(node)).lower() == "true"


StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)
StrictLoader.add_constructor("tag:yaml.org,2002:bool", StrictLoader.construct_yaml_bool)


def load(text: str) -> Any:
    """Parse ``text`` with :class:`StrictLoader` (raises ``yaml.YAMLError`` on bad input)."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass


def load_value(text: str, what: str) -> Any:
    """Parse one user-given value; a :class:`~dsbo.errors.ConfigError` naming ``what``."""
    try:
        return load(text)
    except yaml.YAMLError as exc:
        reason = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
        raise ConfigError(f"{what}: {text!r} is not valid YAML ({reason})") from None


__all__ = ["StrictLoader", "load", "load_value"]
