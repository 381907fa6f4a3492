"""One command-line convention for dsbo's four programs.

The same spelling means the same thing in ``python -m dsbo.optimize``, ``dsbo.blackbox``,
``dsbo.sweep`` and ``dsbo.train`` (underscores, as jsonargparse and LightningCLI spell their
options):

============== ===========================================================================
``--config``   the YAML file that describes the run (a sweep file for ``dsbo.sweep``)
``--run_dir``  where the run writes (store, outputs, W&B run)
``--seed``     the seed (``dsbo.train``: Lightning's ``--seed_everything``)
``--workers``  evaluations (optimize) or runs (sweep) at once
``--dry_run``  check everything and say what would run; run nothing
``--progress`` ``true``: a progress bar; ``false``: one line per step
============== ===========================================================================

Spellings from before this convention (``dsbo.sweep FILE``, ``--sweep-dir``, ``--dry-run``,
``--no-progress``) still work for one release and print a deprecation message naming the new
one. Messages are printed without rich markup, so text in brackets (``[lower, upper]``)
survives.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

#: The shared options: name -> what it means (the docs' command-line page lists them).
CONVENTION = {
    "--config": "the YAML file that describes the run",
    "--run_dir": "where the run writes",
    "--seed": "the seed",
    "--workers": "evaluations or runs at once",
    "--dry_run": "check everything, run nothing",
    "--progress": "a progress bar (true) or one line per step (false)",
}
#: Which programs take which shared option (``dsbo.train`` runs one process: no workers).
PROGRAM_OPTIONS = {
    "optimize": ("--config", "--run_dir", "--seed", "--workers", "--dry_run", "--progress"),
    "blackbox": ("--config", "--run_dir"),
    "sweep": ("--config", "--run_dir", "--seed", "--workers", "--dry_run", "--progress"),
    "train": ("--config", "--run_dir", "--seed", "--dry_run"),
}


def deprecated(old: str, new: str) -> None:
    """Tell the user (stderr) that ``old`` is spelled ``new`` now."""
    print(
        f"warning: {old} is deprecated; use {new} (the old spelling goes in dsbo 0.3)",
        file=sys.stderr,
    )


class DeprecatedSpelling(argparse.Action):
    """An argparse action for an old spelling: stores like the new option, and warns."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, new: str, value: Any = None, **kwargs: Any
    ) -> None:
        self.new, self.value = new, value
        if value is not None:
            kwargs["nargs"] = 0
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self, parser: Any, namespace: Any, values: Any, option_string: str | None = None
    ) -> None:
        deprecated(option_string or self.option_strings[0], self.new)
        setattr(namespace, self.dest, self.value if self.value is not None else values)


def parse_bool(text: str) -> bool:
    """``true``/``false`` (any case) as a boolean; argparse's error otherwise."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lowered == "true"


def add_run_dir_argument(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--run_dir", default=None, help=help)


def run_dir_override(args: argparse.Namespace) -> list[str]:
    """``["--run_dir", DIR]`` when the command line gave one (it overrides the config)."""
    return [] if getattr(args, "run_dir", None) is None else ["--run_dir", args.run_dir]


def print_error(console: Any, message: str) -> None:
    """``error: message`` on the console: the message as it is (no markup, so text in brackets
    survives) and on one line (the terminal wraps it; a copied message stays whole)."""
    from rich.text import Text

    console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
