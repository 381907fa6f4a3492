"""Shrink committed plots losslessly (issue 59: experiments/results at most 20 MB).

Each PNG is recompressed with ``zopflipng`` (Debian/Ubuntu package ``zopfli``) when it is on the
PATH, else with Pillow's ``optimize``, an alpha channel that is opaque everywhere dropped; the
smaller file replaces the PNG only when its pixels are the same. With zopflipng, 56 committed
plots and browser screenshots (``report/``) went from 6.80 to 4.80 MB (issue 59). A plot a
script redraws (:func:`results_io.save_figure`) goes through this again before it is committed.

    python experiments/shrink_plots.py                 # every tracked PNG under experiments/results
    python experiments/shrink_plots.py experiments/results/contextual/*.png
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def pixels(data: bytes) -> np.ndarray:
    """The image's RGBA pixels (an RGB image read as opaque)."""
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGBA"))


def recompressed(data: bytes) -> bytes:
    """The same image, compressed as hard as the tools at hand allow."""
    zopflipng = shutil.which("zopflipng")
    if zopflipng:
        with tempfile.TemporaryDirectory() as tmp:
            source, target = Path(tmp) / "in.png", Path(tmp) / "out.png"
            source.write_bytes(data)
            subprocess.run(
                [zopflipng, "-y", str(source), str(target)], check=True, capture_output=True
            )
            return target.read_bytes()
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        if image.mode == "RGBA" and image.getextrema()[3] == (255, 255):
            image = image.convert("RGB")
        out = io.BytesIO()
        image.save(out, "PNG", optimize=True)
        return out.getvalue()


def shrink(path: Path) -> tuple[int, int]:
    """Recompress ``path`` in place when that makes it smaller with the same pixels; returns its
    bytes before and after."""
    data = path.read_bytes()
    smaller = recompressed(data)
    if len(smaller) >= len(data):
        return len(data), len(data)
    old, new = pixels(data), pixels(smaller)
    if old.shape != new.shape or not (old == new).all():
        raise RuntimeError(f"{path}: the recompressed image has other pixels; left as it was")
    path.write_bytes(smaller)
    return len(data), len(smaller)


def tracked_plots() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "experiments/results/*.png"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [ROOT / p.decode() for p in listed.split(b"\0") if p]


def main(argv: list[str] | None = None) -> tuple[int, int]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="PNGs (default: every tracked plot)")
    args = parser.parse_args(argv)
    total_before = total_after = 0
    for path in args.paths or tracked_plots():
        before, after = shrink(path)
        total_before, total_after = total_before + before, total_after + after
        print(f"{before:9d} -> {after:9d}  {path}", flush=True)
    print(f"{total_before} -> {total_after} bytes")
    return total_before, total_after


if __name__ == "__main__":
    main()
