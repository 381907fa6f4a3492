"""Where an experiment script writes: shared by every script in ``experiments/``.

A ``--smoke`` run checks that a script runs; its numbers are not results. So ``--smoke``
without an explicit ``--out`` writes to a fresh temporary folder (``dsbo-smoke-<name>-*``) and
prints where, never over the committed results under ``experiments/results/``. An explicit
``--out`` is always honoured; without ``--smoke`` the default is the script's results folder.

Kept free of heavy imports: the benchmarks of start-up time use it too.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def add_out_argument(
    parser: argparse.ArgumentParser, default: Path | str, help: str | None = None
) -> None:
    """``--out`` with no default of its own: :func:`output_folder` picks the folder."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=help or f"default {default}; with --smoke a fresh temporary folder",
    )


def output_folder(
    out: Path | str | None, smoke: bool, default: Path | str, name: str | None = None
) -> Path:
    """``out`` when given; else a fresh temporary folder with ``smoke`` (printed); else ``default``.

    ``name`` names the temporary folder (default: the last part of ``default``).
    """
    if out is not None:
        return Path(out)
    if smoke:
        folder = Path(tempfile.mkdtemp(prefix=f"dsbo-smoke-{name or Path(default).name}-"))
        print(f"--smoke without --out: writing to {folder}", flush=True)
        return folder
    return Path(default)
