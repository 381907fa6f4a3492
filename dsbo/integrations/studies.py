"""Bringing studies in and out: trials another tool ran as rows for
:meth:`Campaign.import_trials <dsbo.campaign.given_points.GivenPoints.import_trials>`, and a
dsbo run written out where other tools read it.

**In.** Each reader returns an :class:`ImportedStudy`: the rows (:class:`ImportedTrial`), the
space and outcomes it read or was given, and the rows it refused while reading, each with
the row's number in the source (an Optuna trial's ``number``, an Ax trial's index, a CSV or
JSON row's position, from 0) and the reason. :meth:`ImportedStudy.tuner` makes a
:class:`~dsbo.runtime.tuner.Tuner` over that space holding the rows, so that a study goes on
in dsbo in a few lines; :meth:`ImportedStudy.import_into` brings them into a Tuner or
Campaign of your own; ``import_csv``/``import_json``/``import_optuna``/``import_ax`` read with
the target's space and outcomes and import at once. Imported trials are prior data: generator
``"imported"``, never charged to the budget, each completed one in place of an
initial-design point.

- :func:`from_csv`: a CSV with a column per parameter and per outcome, and optionally
  ``status``, ``error`` and ``curve`` (dsbo's own ``history.csv`` and :func:`to_csv` re-import
  exactly). Every cell is read strictly by the parameter's type: ``2.5`` in an integer column,
  a value that is not among a choice's values, a value outside the bounds or an empty cell of
  an active parameter refuse the row, with the reason; nothing is coerced.
- :func:`from_json`: what :func:`to_json` wrote (trials, space and outcomes).
- :func:`~dsbo.integrations.studies_optuna.from_optuna` and
  :func:`~dsbo.integrations.studies_optuna.from_ax` (in :mod:`dsbo.integrations.studies_optuna`,
  which imports Optuna / Ax inside its functions): an Optuna study (object, or name and
  storage URL) and an Ax experiment saved with Ax's JSON store.

**Out.** :func:`to_csv` and :func:`to_json` write a run's trials (named parameters, outcomes
in the user's direction, status, generator, error, learning curve) and :func:`to_json` the
space and outcomes too; :func:`~dsbo.integrations.studies_optuna.to_optuna` makes an Optuna
study of them (``optuna-dashboard`` and Optuna's plots then work on a dsbo run). Each takes a
:class:`~dsbo.runtime.tuner.TunerResult`, a ``Tuner`` or a ``Campaign``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.campaign.given_points import IMPORT_STATUSES, ImportedTrial, ImportResult
from dsbo.errors import ConfigError
from dsbo.space import Choice, Fixed, Float, Int, Outcomes, Parameter, SearchSpace

if TYPE_CHECKING:
    from dsbo.campaign import Campaign
    from dsbo.runtime.tuner import Tuner

#: ``format`` of the documents :func:`to_json` writes.
JSON_FORMAT = "dsbo-trials"
JSON_VERSION = 1
_INTEGER = re.compile(r"[+-]?\d+(\.0*)?")


@dataclass
class ImportedStudy:
    """Trials read from another tool, ready for :meth:`import_into` or :meth:`tuner`."""

    #: The rows, in the source's order.
    rows: list[ImportedTrial]
    #: Each row's number in the source (Optuna trial number, Ax trial index, CSV/JSON row).
    labels: list[int]
    #: The space read from the source (or given); ``None`` where none could be read.
    space: SearchSpace | None = None
    #: The objectives and outcome constraints read from the source (or given).
    outcomes: Outcomes | None = None
    #: Rows refused while reading: ``(number in the source, reason)``.
    refused: list[tuple[int, str]] = field(default_factory=list)
    #: Where the rows came from (``"optuna:<study>"``, ``"csv:<file>"``, ...).
    source: str = ""

    def import_into(self, target: Tuner | Campaign, strict: bool = False) -> ImportResult:
        """Import the rows into ``target`` (a Tuner or Campaign); the result's ``refused``
        holds the rows refused while reading and those the target refused, by their number in
        the source. ``strict=True``: a :class:`~dsbo.errors.ConfigError` naming the first
        refused row, and nothing is imported."""
        if strict and self.refused:
            label, reason = self.refused[0]
            raise ConfigError(f"{self.source} row {label}: {reason}")
        campaign = campaign_of(target)
        try:
            result = campaign.import_trials(self.rows, strict=strict)
        except ConfigError as exc:
            match = re.match(r"imported row (\d+): (.*)", str(exc), re.S)
            if match is None:
                raise
            raise ConfigError(
                f"{self.source} row {self.labels[int(match[1])]}: {match[2]}"
            ) from None
        refused = self.refused + [(self.labels[i], reason) for i, reason in result.refused]
        return ImportResult(trials=result.trials, refused=sorted(refused, key=lambda r: r[0]))

    def tuner(self, **options: Any) -> tuple[Tuner, ImportResult]:
        """A :class:`~dsbo.runtime.tuner.Tuner` over this study's space and outcomes (with
        ``options``: ``budget``, ``seed``, ``surrogate``, ...; they may override
        ``objectives``/``constraints``/``direction``) holding the rows, and what was imported."""
        from dsbo.runtime.tuner import Tuner

        if self.space is None:
            raise ConfigError(
                f"{self.source or 'this study'} has no space: read it with space=... or import_into a Tuner"
            )
        settings: dict[str, Any] = {}
        if self.outcomes is not None and "objective" not in options:
            settings["objectives"] = {
                o.name: (o.direction, o.threshold) for o in self.outcomes.objectives
            }
            settings["constraints"] = [c.stored_name for c in self.outcomes.constraints]
            if "direction" in options:  # the user's direction for every objective
                settings["objectives"] = [o.name for o in self.outcomes.objectives]
        tuner = Tuner(self.space, **{**settings, **options})
        return tuner, self.import_into(tuner)


# ----------------------------------------------------------------------------- shared helpers
def campaign_of(source: Any) -> Campaign:
    """The campaign of a TunerResult, a Tuner or a Campaign."""
    campaign = getattr(source, "campaign", source)
    if not hasattr(campaign, "store") or not hasattr(campaign, "problem"):
        raise ConfigError(
            f"expected a dsbo TunerResult, Tuner or Campaign, got {type(source).__name__}"
        )
    return campaign


def as_space(space: SearchSpace | Mapping[str, Any]) -> SearchSpace:
    """``space`` as a :class:`SearchSpace` (a mapping ``{name: parameter}`` is one)."""
    return space if isinstance(space, SearchSpace) else SearchSpace(space)


def values_of(user: Mapping[str, float], metrics: Sequence[str]) -> Any:
    """What :class:`ImportedTrial` takes as ``values``: the number for one outcome, else
    ``{metric: value}``."""
    return user[metrics[0]] if len(metrics) == 1 else {m: user[m] for m in metrics}


def _finite(value: Any) -> Any:
    """JSON holds no NaN or infinity: ``None`` for those."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def trial_records(source: Any) -> tuple[Campaign, list[dict[str, Any]]]:
    """The campaign of ``source`` and its trials as records: ``trial``, ``params``, ``values``
    (``{metric: value}`` in the user's direction, ``None`` when none), ``status``,
    ``generator``, ``error`` and ``curve`` (``[(step, value)]``, the user's direction)."""
    campaign = campaign_of(source)
    problem = campaign.problem
    sign = problem.outcomes.objectives[0].sign
    curves = campaign.store.curves()
    records = []
    for t in campaign.store.trials():
        user = problem.outcomes.to_user(t.y) if t.y is not None else None
        records.append(
            {
                "trial": t.id,
                "params": problem.params(t.x),
                "values": user,
                "status": t.status,
                "generator": t.generator,
                "error": t.error,
                "curve": [(step, sign * value + 0.0) for step, value in curves.get(t.id, [])],
            }
        )
    return campaign, records


def _own(name: str, space: SearchSpace, metrics: Sequence[str]) -> str:
    """The history's column for a trial's own ``name`` (``trial_<name>`` where a parameter or
    outcome takes the name; :func:`dsbo.campaign.history.own_column`)."""
    return f"trial_{name}" if name in space.names or name in metrics else name


# ----------------------------------------------------------------------------- CSV
def to_csv(source: Any, path: str | Path) -> Path:
    """Write the trials of ``source`` (TunerResult, Tuner or Campaign) as ``history.csv`` has
    them (:func:`~dsbo.campaign.history.history_frame`: a column per parameter and outcome in
    the user's direction, ``status``, ``generator``, ``error``, ...) plus ``curve``, the
    reported ``[[step, value], ...]`` as JSON, when any trial reported; returns the path."""
    from dsbo.campaign.history import history_frame, own_column

    campaign, records = trial_records(source)
    problem = campaign.problem
    frame = history_frame(campaign.store.trials(), problem, campaign.store.curves())
    if any(r["curve"] for r in records):
        frame[own_column(problem, "curve")] = [
            json.dumps([list(p) for p in r["curve"]]) if r["curve"] else "" for r in records
        ]
    path = Path(path)
    frame.to_csv(path, index=False)
    return path


def _cell(text: str, parameter: Parameter, name: str) -> Any:
    """The value of a CSV cell for ``parameter``, read strictly (ConfigError naming it)."""
    if isinstance(parameter, Float):
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"{name}={text!r} is not a number") from None
        if not math.isfinite(value):
            raise ConfigError(f"{name}={text!r} is not a finite number")
        return value
    if isinstance(parameter, Int):
        if not _INTEGER.fullmatch(text):
            raise ConfigError(f"{name}={text!r} is not an integer")
        return int(float(text)) if "." in text else int(text)
    choices = parameter.values if isinstance(parameter, Choice) else (parameter.value,)  # type: ignore[attr-defined]
    for value in choices:
        if isinstance(value, bool):
            if text.lower() == str(value).lower():
                return value
        elif isinstance(value, int | float):
            try:
                if float(text) == value:
                    return value
            except ValueError:
                pass
        elif value is None:
            if text in ("None", "null"):
                return None
        elif text == value:
            return value
    raise ConfigError(f"{name}={text!r} is not one of {list(choices)}")


def _number(text: str, name: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a number") from None


def _csv_row(
    record: Mapping[str, str], space: SearchSpace, metrics: Sequence[str], source: str
) -> ImportedTrial:
    """One CSV record (every cell a string) as an :class:`ImportedTrial` (ConfigError if not one)."""
    params: dict[str, Any] = {}
    for name, parameter in space.parameters.items():
        text = record.get(name, "").strip()
        if text == "":
            if isinstance(parameter, Choice) and None in parameter.values and name in record:
                params[name] = None
            continue  # an inactive parameter (an active one missing: the space says "no value")
        params[name] = _cell(text, parameter, name)
    status = record.get("status", "").strip() or "completed"
    if status not in IMPORT_STATUSES:
        raise ConfigError(
            f"status {status!r} cannot be imported; use one of {', '.join(IMPORT_STATUSES)}"
        )
    cells = {m: record[m].strip() for m in metrics}
    values: Any = None
    if status in ("completed", "stopped") and any(cells.values()):
        empty = [m for m, text in cells.items() if not text]
        if empty:
            raise ConfigError(f"no value for the outcome(s) {empty}")
        values = values_of({m: _number(text, m) for m, text in cells.items()}, metrics)
    elif status == "completed":
        raise ConfigError(f"a completed trial needs its value(s): {list(metrics)} empty")
    error = record.get(_own("error", space, metrics), "").strip() or None
    curve: list[tuple[int, float]] = []
    text = record.get(_own("curve", space, metrics), "").strip()
    if text:
        try:
            points = json.loads(text)
            curve = [(step, float(value)) for step, value in points]
        except (ValueError, TypeError):
            raise ConfigError(f"curve={text!r} is not a JSON list of [step, value]") from None
    return ImportedTrial(
        params=params, values=values, status=status, error=error, curve=curve, source=source
    )


def from_csv(
    path: str | Path,
    space: SearchSpace | Mapping[str, Any],
    objectives: str | Sequence[str] | Mapping[str, Any] = "objective",
    constraints: str | Sequence[str] = (),
    direction: str = "minimize",
    columns: Mapping[str, str] | None = None,
) -> ImportedStudy:
    """The rows of a CSV with one column per parameter of ``space`` and one per outcome.

    Args:
        path: The CSV (dsbo's ``history.csv`` and :func:`to_csv`'s included: their other
            columns are ignored).
        space: The search space (a :class:`SearchSpace` or ``{name: parameter}``).
        objectives, constraints, direction: The outcomes, as :class:`~dsbo.runtime.tuner.Tuner`
            takes them; the CSV has a column per objective and per constrained outcome.
        columns: ``{column in the CSV: parameter or outcome name}`` for other names.

    Optional columns: ``status`` (``completed`` when absent or empty; ``failed``, ``stopped``,
    ``pending``), ``error`` (a failed trial's error, a stopped one's reason) and ``curve``
    (``[[step, value], ...]`` as JSON). A row whose cell does not fit its parameter (a number
    that is not an integer in an integer column, a value not among a choice's, an empty cell
    of an active parameter, a value outside the bounds) or whose outcome is missing is refused
    with the reason (by its position among the data rows, from 0); nothing is coerced.

    Raises:
        ConfigError: if a column of an unconditional parameter or of an outcome is missing.
    """
    import pandas as pd  # here: the module imports without pandas

    space = as_space(space)
    outcomes = Outcomes.declare(objectives, constraints, direction)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if columns:
        frame = frame.rename(columns=dict(columns))
    needed = [n for n, p in space.parameters.items() if p.width and not p.conditions] + list(
        outcomes.metrics
    )
    missing = [n for n in needed if n not in frame.columns]
    if missing:
        raise ConfigError(
            f"{path}: no column {', '.join(map(repr, missing))}; its columns: {list(frame.columns)}"
        )
    rows, labels, refused = [], [], []
    name = Path(path).name
    for i, record in enumerate(frame.to_dict("records")):
        try:
            rows.append(_csv_row(record, space, outcomes.metrics, f"csv:{name}#{i}"))
        except ConfigError as exc:
            refused.append((i, str(exc)))
            continue
        labels.append(i)
    return ImportedStudy(rows, labels, space, outcomes, refused, f"csv:{name}")


def import_csv(
    target: Tuner | Campaign,
    path: str | Path,
    strict: bool = False,
    columns: Mapping[str, str] | None = None,
) -> ImportResult:
    """Read ``path`` (:func:`from_csv`) with the space and outcomes of ``target`` (a Tuner or
    Campaign) and import the rows."""
    problem = campaign_of(target).problem
    objectives = {o.name: (o.direction, o.threshold) for o in problem.outcomes.objectives}
    constraints = [c.stored_name for c in problem.outcomes.constraints]
    study = from_csv(path, problem.space, objectives, constraints, columns=columns)
    return study.import_into(target, strict=strict)


# ----------------------------------------------------------------------------- JSON
def to_json(source: Any, path: str | Path) -> Path:
    """Write the trials of ``source`` (TunerResult, Tuner or Campaign) with the space and the
    outcomes as JSON (``{"format": "dsbo-trials", "space", "outcomes", "trials"}``; each
    trial's ``params``, ``values`` as ``{metric: value}`` in the user's direction, ``status``,
    ``generator``, ``error``, ``curve``), which :func:`from_json` reads back; returns the path."""
    campaign, records = trial_records(source)
    problem = campaign.problem
    for r in records:
        r["values"] = (
            None if r["values"] is None else {k: _finite(v) for k, v in r["values"].items()}
        )
        r["curve"] = [list(p) for p in r["curve"]]
    document = {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "space": problem.space.to_config(),
        "outcomes": problem.outcomes.to_config(),
        "trials": records,
    }
    path = Path(path)
    path.write_text(json.dumps(document, indent=1, allow_nan=False))
    return path


def _json_row(entry: Any, metrics: Sequence[str], source: str) -> ImportedTrial:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("params"), Mapping):
        raise ConfigError(f"a trial must be a mapping with params, got {entry!r}")
    values = entry.get("values")
    if isinstance(values, Mapping):  # a mapping that misses an outcome: import_trials says which
        if all(values.get(m) is None for m in metrics):
            values = None
        elif all(m in values for m in metrics):
            values = values_of(values, metrics)
    curve = entry.get("curve") or []
    if not isinstance(curve, list) or not all(
        isinstance(p, list | tuple) and len(p) == 2 for p in curve
    ):
        raise ConfigError(f"curve must be a list of [step, value], got {curve!r}")
    return ImportedTrial(
        params=dict(entry["params"]),
        values=values,
        status=entry.get("status", "completed"),
        error=entry.get("error"),
        curve=[tuple(p) for p in curve],
        source=source,
    )


def from_json(path: str | Path) -> ImportedStudy:
    """The rows, space and outcomes of a file :func:`to_json` wrote (a trial that cannot be a
    row is refused with the reason, by its position among the trials)."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, Mapping) or document.get("format") != JSON_FORMAT:
        raise ConfigError(
            f"{path}: not a {JSON_FORMAT} document (written by dsbo.integrations.studies.to_json)"
        )
    space_config = document.get("space") or {}
    space = SearchSpace.from_config(
        space_config.get("parameters"), space_config.get("parameter_constraints", ())
    )
    outcomes_config = document.get("outcomes") or {}
    outcomes = Outcomes.declare(
        outcomes_config.get("objectives"), outcomes_config.get("constraints", ())
    )
    rows, labels, refused = [], [], []
    for i, entry in enumerate(document.get("trials") or []):
        try:
            rows.append(_json_row(entry, outcomes.metrics, f"json:{path.name}#{i}"))
        except ConfigError as exc:
            refused.append((i, str(exc)))
            continue
        labels.append(i)
    return ImportedStudy(rows, labels, space, outcomes, refused, f"json:{path.name}")


def import_json(target: Tuner | Campaign, path: str | Path, strict: bool = False) -> ImportResult:
    """Import the trials of a file :func:`to_json` wrote into ``target`` (a Tuner or
    Campaign; each row is checked against the target's own space)."""
    return from_json(path).import_into(target, strict=strict)


def space_parameter(
    kind: str,
    low: Any = None,
    high: Any = None,
    log: bool = False,
    step: Any = None,
    choices: Sequence[Any] = (),
    ordered: bool = False,
) -> Parameter:
    """A dsbo parameter from another tool's description (``kind`` ``"float"``, ``"int"`` or
    ``"choice"``): a range of one value or a single choice is :class:`Fixed`."""
    if kind == "choice":
        choices = list(choices)
        return Fixed(choices[0]) if len(choices) == 1 else Choice(choices, ordered=ordered)
    if low == high:
        return Fixed(low)
    if kind == "int":
        return Int(int(low), int(high), log=bool(log), step=int(step or 1))
    return Float(float(low), float(high), log=bool(log), step=None if step is None else float(step))


__all__ = [
    "ImportedStudy",
    "as_space",
    "campaign_of",
    "from_csv",
    "from_json",
    "import_csv",
    "import_json",
    "space_parameter",
    "to_csv",
    "to_json",
    "trial_records",
    "values_of",
]
