r"""Hierarchical time series on disk: reading and writing the HierE2E layout.

The layout of the HierE2E benchmark data (Rangapuram et al., "End-to-end learning of coherent
probabilistic forecasts for hierarchical time series", ICML 2021), which most hierarchical
forecasting papers use (the *common format* of this package's messages), is a folder of three CSV
files:

- ``data.csv``: a header row, then one row per time step; the first column is the date, then
  one column per node of the hierarchy, aggregates first, bottom level last;
- ``agg_mat.csv``: the summing matrix :math:`S` (``all nodes = S @ bottom``): a header row of
  bottom-series names, then one row per node, named, in ``data.csv``'s column order, holding
  0/1 per bottom series;
- ``tags.csv``: no header; one row per bottom series, in ``data.csv``'s bottom order, giving
  its path from the root, one column per level.

:func:`read_hierarchical` checks all three against each other and the data for coherence
(:meth:`~dsbo.data.hierarchy.Hierarchy.check_coherent`); every problem raises
:class:`~dsbo.errors.DataError` naming the file, row and column. :func:`write_hierarchical`
writes a :class:`~dsbo.data.hierarchy.HierarchicalSeries` in the same layout.
"""

from __future__ import annotations

import csv
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dsbo.data.dates import infer_frequency, step_seconds
from dsbo.data.hierarchy import COHERENCE_RTOL, HierarchicalSeries, Hierarchy
from dsbo.errors import DataError

#: Files of the common format.
FILES = ("data.csv", "agg_mat.csv", "tags.csv")


def _read_rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise DataError(f"{path}: file not found (the common format needs {', '.join(FILES)})")
    with path.open(newline="") as fh:
        rows = [row for row in csv.reader(fh)]
    while rows and not any(cell.strip() for cell in rows[-1]):
        rows.pop()
    if not rows:
        raise DataError(f"{path}: the file is empty")
    return rows


def _check_ragged(path: Path, rows: list[list[str]], width: int, first_line: int) -> None:
    for i, row in enumerate(rows):
        if len(row) != width:
            raise DataError(
                f"{path}: row {first_line + i} has {len(row)} fields, expected {width} "
                f"(a ragged row{'; the header has ' + str(width) if first_line > 1 else ''})"
            )


def _numeric(
    path: Path, rows: list[list[str]], columns: list[str], labels: list[str], first_line: int
) -> np.ndarray:
    """Cells (without the first column) to float64; names file, row and column of a bad cell."""
    frame = pd.DataFrame([row[1:] for row in rows], dtype=object)
    values = frame.apply(lambda col: pd.to_numeric(col, errors="coerce")).to_numpy(dtype=np.float64)
    bad = np.argwhere(~np.isfinite(values))
    if len(bad):
        i, j = bad[0]
        cell = rows[i][j + 1]
        what = (
            "missing value"
            if not cell.strip()
            else (
                f"non-numeric value {cell!r}"
                if np.isnan(values[i, j]) and cell.strip().lower() not in ("nan", "na", "null")
                else f"non-finite value {cell!r}"
            )
        )
        raise DataError(
            f"{path}: row {first_line + i} ({labels[i]}), column {j + 2} ({columns[j]!r}): {what}; "
            "every value must be a finite number"
        )
    return values


def read_hierarchical(
    path: str | os.PathLike, coherence_rtol: float = COHERENCE_RTOL
) -> HierarchicalSeries:
    """Read ``data.csv``, ``agg_mat.csv`` and ``tags.csv`` from a folder (the common format).

    ``agg_mat.csv``'s rows must name ``data.csv``'s columns in the same order. Its columns are
    matched to the bottom series by the rows of S that equal a unit vector (each bottom series is
    a node of its own), not by the header: the published labour file's header lists the bottom
    series in another order than its (coherent) columns; a header that disagrees is a warning.
    ``tags.csv`` (no header) gives each bottom series' path in ``data.csv``'s bottom order; each
    group of bottom series sharing a path prefix must be the leaf set of a node of S.

    Raises:
        DataError: naming the file, row and column of: a missing file, a ragged row, a missing or
            non-numeric value, an unparsable or non-increasing date, ``agg_mat.csv`` rows that do
            not match ``data.csv``'s columns, a value of S other than 0/1, a bottom series without
            a row or a path, a path inconsistent with S, and values that are not coherent.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise DataError(f"{folder}: not a folder (expected a folder holding {', '.join(FILES)})")
    data_path, agg_path, tags_path = (folder / f for f in FILES)

    # data.csv -------------------------------------------------------------------------------
    rows = _read_rows(data_path)
    header, body = rows[0], rows[1:]
    if len(header) < 2:
        raise DataError(
            f"{data_path}: row 1 (header) has {len(header)} field(s); expected a date column and one column per node"
        )
    if not body:
        raise DataError(f"{data_path}: no data rows after the header")
    _check_ragged(data_path, body, len(header), first_line=2)
    node_names = [h.strip() for h in header[1:]]
    seen: dict[str, int] = {}
    for j, name in enumerate(node_names):
        if not name:
            raise DataError(f"{data_path}: row 1 (header), column {j + 2}: empty node name")
        if name in seen:
            raise DataError(
                f"{data_path}: row 1 (header), columns {seen[name] + 2} and {j + 2}: node {name!r} appears twice"
            )
        seen[name] = j
    date_cells = [row[0] for row in body]
    values = _numeric(
        data_path, body, node_names, [f"date {d!r}" for d in date_cells], first_line=2
    )
    dates = _parse_dates(data_path, date_cells)

    # agg_mat.csv ----------------------------------------------------------------------------
    rows = _read_rows(agg_path)
    agg_header, agg_body = rows[0], rows[1:]
    num_leaves = len(agg_header) - 1
    if num_leaves < 1:
        raise DataError(f"{agg_path}: row 1 (header) names no bottom series")
    _check_ragged(agg_path, agg_body, len(agg_header), first_line=2)
    leaf_headers = [h.strip() for h in agg_header[1:]]
    row_names = [row[0].strip() for row in agg_body]
    for i, (got, want) in enumerate(zip(row_names, node_names, strict=False)):
        if got != want:
            raise DataError(
                f"{agg_path}: row {i + 2}, column 1: node {got!r}, but data.csv column {i + 2} is {want!r}; "
                "agg_mat.csv's rows must name data.csv's columns in the same order"
            )
    if len(row_names) != len(node_names):
        extra = (
            f"data.csv column {len(row_names) + 2} ({node_names[len(row_names)]!r}) has no row"
            if len(row_names) < len(node_names)
            else f"row {len(node_names) + 2} ({row_names[len(node_names)]!r}) is not a data.csv column"
        )
        raise DataError(
            f"{agg_path}: {len(row_names)} rows of S for the {len(node_names)} nodes of data.csv: {extra}"
        )
    S = _numeric(agg_path, agg_body, leaf_headers, [f"node {n!r}" for n in row_names], first_line=2)
    bad = np.argwhere((S != 0) & (S != 1))
    if len(bad):
        i, j = bad[0]
        raise DataError(
            f"{agg_path}: row {i + 2} (node {row_names[i]!r}), column {j + 2} ({leaf_headers[j]!r}): "
            f"value {agg_body[i][j + 1]!r}; S holds only 0 and 1"
        )
    B = S.astype(bool)
    empty = np.flatnonzero(~B.any(1))
    if len(empty):
        i = empty[0]
        raise DataError(
            f"{agg_path}: row {i + 2} (node {row_names[i]!r}) selects no bottom series (all zeros)"
        )
    single = B.sum(1) == 1
    leaf_index = np.full(num_leaves, -1, dtype=np.int64)
    for p in np.flatnonzero(single):
        leaf_index[np.flatnonzero(B[p])[0]] = p
    missing = np.flatnonzero(leaf_index < 0)
    if len(missing):
        j = missing[0]
        raise DataError(
            f"{agg_path}: column {j + 2} ({leaf_headers[j]!r}): no row selects only this bottom series, "
            "so it has no column in data.csv (every bottom series must be a node of its own)"
        )
    leaf_names = [node_names[i] for i in leaf_index]
    if leaf_names != leaf_headers:
        j = next(j for j in range(num_leaves) if leaf_names[j] != leaf_headers[j])
        warnings.warn(
            f"{agg_path}: row 1 (header), column {j + 2} names {leaf_headers[j]!r} but that column is the "
            f"unit row of node {leaf_names[j]!r}; columns are matched to bottom series by S's unit rows, "
            "not by the header",
            stacklevel=2,
        )

    # tags.csv -------------------------------------------------------------------------------
    paths = _read_tags(tags_path, leaf_names, B, leaf_index, agg_path)

    hierarchy = Hierarchy(S, tuple(node_names), leaf_index=leaf_index, paths=paths)
    hierarchy.check_coherent(
        values,
        rtol=coherence_rtol,
        source=str(data_path),
        step_names=[f"row {t + 2}, date {d}" for t, d in enumerate(date_cells)],
    )
    return HierarchicalSeries(
        hierarchy, values, dates, infer_frequency(data_path, dates), folder.name, str(folder)
    )


def _parse_dates(path: Path, cells: list[str]) -> pd.DatetimeIndex:
    try:
        dates = pd.DatetimeIndex(pd.to_datetime(cells))
    except (ValueError, TypeError):
        for i, cell in enumerate(cells):
            try:
                pd.Timestamp(cell)
            except (ValueError, TypeError):
                raise DataError(
                    f"{path}: row {i + 2}, column 1 (date): {cell!r} is not a date"
                ) from None
        raise DataError(f"{path}: column 1 (date): the dates do not parse as one format") from None
    if dates.isna().any():
        i = int(np.flatnonzero(dates.isna())[0])
        raise DataError(f"{path}: row {i + 2}, column 1 (date): missing date")
    steps = step_seconds(dates)
    if len(steps) and (steps <= 0).any():
        i = int(np.flatnonzero(steps <= 0)[0])
        raise DataError(
            f"{path}: row {i + 3}, column 1 (date): {cells[i + 1]!r} does not come after {cells[i]!r}"
        )
    return dates


def _read_tags(
    path: Path, leaf_names: list[str], B: np.ndarray, leaf_index: np.ndarray, agg_path: Path
) -> tuple:
    rows = _read_rows(path)
    num_leaves = len(leaf_names)
    if len(rows) < num_leaves:
        j = len(rows)
        raise DataError(
            f"{path}: {len(rows)} rows for {num_leaves} bottom series: bottom series {leaf_names[j]!r} "
            f"(the {j + 1}th bottom column of data.csv) has no path (expected at row {j + 1})"
        )
    if len(rows) > num_leaves:
        raise DataError(
            f"{path}: row {num_leaves + 1} is one row too many: there are {num_leaves} bottom series"
        )
    width = len(rows[0])
    _check_ragged(path, rows, width, first_line=1)
    for i, row in enumerate(rows):
        for k, cell in enumerate(row):
            if not cell.strip():
                raise DataError(
                    f"{path}: row {i + 1}, column {k + 1}: empty path element for bottom series {leaf_names[i]!r}"
                )
    paths = tuple(tuple(cell.strip() for cell in row) for row in rows)
    # each prefix must be the leaf set of a node of S (a path inconsistent with S is an error)
    row_sets = {B[p].tobytes() for p in range(B.shape[0])}
    for k in range(width):
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, pth in enumerate(paths):
            groups.setdefault(pth[: k + 1], []).append(i)
        for prefix, members in groups.items():
            mask = np.zeros(num_leaves, dtype=bool)
            mask[members] = True
            if mask.tobytes() not in row_sets:
                rows_txt = ", ".join(str(m + 1) for m in members[:5]) + (
                    " ..." if len(members) > 5 else ""
                )
                raise DataError(
                    f"{path}: column {k + 1}, tag {prefix[-1]!r} (rows {rows_txt}): its {len(members)} bottom "
                    f"series are not the leaves of any node in {agg_path.name}"
                )
    return paths


def write_hierarchical(series: HierarchicalSeries, path: str | os.PathLike) -> Path:
    """Write ``series`` in the common format (``data.csv``, ``agg_mat.csv``, ``tags.csv``) to a folder."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    h = series.hierarchy
    data = pd.DataFrame(
        series.values, columns=list(h.node_names), index=series.dates.strftime("%Y-%m-%d")
    )
    data.to_csv(folder / "data.csv", float_format="%.10g")
    pd.DataFrame(h.S, index=list(h.node_names), columns=list(h.leaf_names)).to_csv(
        folder / "agg_mat.csv"
    )
    paths = h.paths if h.paths is not None else tuple((n,) for n in h.leaf_names)
    with (folder / "tags.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows(paths)
    return folder


__all__ = ["FILES", "read_hierarchical", "write_hierarchical"]
