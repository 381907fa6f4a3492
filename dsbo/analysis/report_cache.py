"""The report's data kept with the run: ``report_data.json``, so ``python -m dsbo.report``
takes well under a second instead of rebuilding the campaign.

Gathering a run's :class:`~dsbo.analysis.report_data.ReportData` means building its campaign:
the problem, the policy and their libraries (torch, BoTorch, JAX through BoTorch's acquisition
functions), seconds before anything is read. Yet everything the page shows but the model
panels depends only on the run's configuration and its trials. So whoever has the campaign at
hand (the end of ``python -m dsbo.optimize`` and every ``blackbox ask``/``tell``, through
:func:`~dsbo.analysis.outputs.write_outputs`, or a report that had to build it) writes that
data here, keyed by

- :data:`FORMAT` and dsbo's version (what the data are computed by),
- a digest of ``config.yaml`` (the problem, the policy, the budget), and
- :func:`trials_digest` of the store (every trial as stored, but the workers' heartbeats, and
  every intermediate value the trials reported: a running trial's new report changes it),

and :func:`load` hands it back only while all three match: a run that went on, a config edited
by hand, or another dsbo gathers the data afresh. :func:`save` checks that what it wrote reads
back equal (the history frame column by column, with its dtypes) and writes nothing otherwise.
The file also keeps the configuration as the report command shows it, per ``config.yaml``
digest and run directory as given (:func:`config_key`); what the model panels need to fit
the campaign's surrogate without the campaign (:class:`StoredCampaign`); and the model panels
themselves (importance, slices), under :func:`model_key`: the fit state the campaign keeps in
its store and the versions of torch, BoTorch and GPyTorch; and the parts of the page drawn from
them (the best-trials table and each panel's HTML, :func:`~dsbo.analysis.html_report.drawn_parts`),
under :func:`figures_key`: the code that draws them and plotly's version. So the report of a
finished run (whose own report drew it) needs neither torch nor pandas nor plotly's figures:
it writes the page around the kept parts with a new time, configuration and environment.

Kept free of torch and pandas at import; pandas is imported to read or write a frame.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.analysis.report_data import ReportData, environment
from dsbo.space import SearchSpace

if TYPE_CHECKING:
    import pandas as pd

    from dsbo.storage import Store

CACHE_NAME = "report_data.json"
#: Bump when what :func:`~dsbo.analysis.report_data.from_campaign` gathers changes.
FORMAT = 2
#: ReportData fields kept as JSON values as they are (``space`` and ``frame`` are encoded;
#: the model panels, the configuration and the environment are not kept).
PLAIN_FIELDS = (
    "title",
    "objective_names",
    "multi_objective",
    "signs",
    "optimal_value",
    "cost_budget",
    "sparsity",
    "changes_from",
    "num_relevant",
    "context_names",
    "preference_boxes",
    "value_vs_changes",
    "surrogate",
    "curves",
    "max_steps",
)
#: Configurations kept per :func:`config_key` (the most recent ones).
MAX_CONFIGS = 8
#: The store's meta key of the campaign's fit states (:data:`dsbo.surrogates.warm_start.META_KEY`;
#: not imported from there, which imports torch).
FIT_META_KEY = "surrogate_fit"
#: Packages whose versions the model panels are kept for.
MODEL_PACKAGES = ("torch", "botorch", "gpytorch")


def _version() -> str:
    from dsbo import __version__

    return __version__


def file_digest(path: Path) -> str | None:
    """SHA-256 of the file's bytes, ``None`` when there is no such file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def config_key(config_file: Path, run_dir: str | Path) -> str | None:
    """The key of the configuration the report command shows: ``config.yaml``'s bytes and
    the run directory as given (the command sets ``run_dir`` to it)."""
    digest = file_digest(config_file)
    return None if digest is None else hashlib.sha256(f"{digest}\0{run_dir}".encode()).hexdigest()


def trials_digest(store: Store) -> str:
    """A SHA-256 digest of every trial of ``store`` as stored (but the heartbeats of the
    workers evaluating them), of the intermediate values they reported (a running trial's
    report changes no trial row, yet the learning curves show it) and of the store's
    identity. A store whose trials reported nothing has the digest of its trials alone."""
    h = hashlib.sha256(json.dumps(store.get_meta("identity"), sort_keys=True, default=str).encode())
    for trial in store.trials():
        row = {
            f.name: getattr(trial, f.name)
            for f in dataclasses.fields(trial)
            if f.name != "heartbeat_at"
        }
        h.update(json.dumps(row, sort_keys=True, default=str).encode())
    curves = store.curves()
    if curves:
        h.update(b"\0curves")
        h.update(json.dumps(sorted(curves.items())).encode())
    return h.hexdigest()


def figures_key() -> str:
    """What the drawn parts of the page depend on besides the data: the code that draws them
    (``report_figures`` and the panel modules it lists in ``FIGURE_MODULES``,
    ``html_report``) and plotly's version."""
    from importlib import metadata

    from dsbo.analysis import html_report, report_figures

    h = hashlib.sha256()
    for module in (report_figures, *report_figures.FIGURE_MODULES, html_report):
        h.update(Path(module.__file__).read_bytes())
    try:
        h.update(metadata.version("plotly").encode())
    except metadata.PackageNotFoundError:
        pass
    return h.hexdigest()


def model_key(store: Store) -> str:
    """What the model panels depend on besides the trials and ``config.yaml``: the fit state
    the campaign keeps in its store and the versions of torch, BoTorch and GPyTorch."""
    from importlib import metadata

    versions = {}
    for name in MODEL_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    text = json.dumps(
        {"fit": store.get_meta(FIT_META_KEY), "versions": versions}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------- frames
def encode_frame(frame: pd.DataFrame) -> dict[str, Any]:
    """``{"columns", "dtypes", "data"}``: the frame column by column as plain values."""
    return {
        "columns": list(frame.columns),
        "dtypes": [str(t) for t in frame.dtypes],
        "data": [frame[c].tolist() for c in frame.columns] if frame.columns.is_unique else [],
    }


def decode_frame(value: Mapping[str, Any]) -> pd.DataFrame:
    import pandas as pd

    columns, dtypes, data = value["columns"], value["dtypes"], value["data"]
    frame = pd.DataFrame(
        {
            i: pd.Series(col, dtype=dtype)
            for i, (col, dtype) in enumerate(zip(data, dtypes, strict=True))
        }
    )
    frame.columns = pd.Index(columns, dtype=object)
    return frame


def _plain(value: Any) -> Any:
    item = getattr(value, "item", None)  # a NumPy scalar in an object column
    if callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _same(a: Any, b: Any) -> bool:
    """Equal as the page uses them: sequences item by item, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------- the model's inputs
@dataclasses.dataclass
class StoredCampaign:
    """What :meth:`Campaign.fit_model <dsbo.campaign.Campaign.fit_model>` reads of a
    campaign, rebuilt from the cache and the open store: the report fits the surrogate with
    the campaign's own code, without building the campaign (its policy imports BoTorch's
    acquisition functions and JAX)."""

    store: Any
    problem: Any
    surrogate: Any
    seed: int
    outcome_warping: str | None
    #: The report fits the campaign's surrogate on the completed trials (not the fidelity GP).
    early_stopping: Any = None

    def fit_model(self) -> Any:
        from dsbo.campaign.campaign import Campaign

        return Campaign.fit_model(self)  # type: ignore[arg-type]

    def _related_model(self, X: Any, Y: Any) -> Any:
        """The multi-task GP with the store's related tasks, as the campaign's fit makes it."""
        from dsbo.campaign.given_points import GivenPoints

        return GivenPoints._related_model(self, X, Y)  # type: ignore[arg-type]


@dataclasses.dataclass
class _ModelProblem:
    """The problem as :meth:`Campaign.fit_model` reads it."""

    bounds: Any
    num_objectives: int
    space: SearchSpace


def model_inputs(campaign: Any) -> dict[str, Any] | None:
    """What :class:`StoredCampaign` needs of ``campaign`` as JSON (``None`` for a surrogate
    fitted on selected rows: the report then builds the campaign)."""
    spec = campaign.surrogate
    if spec.selector is not None:
        return None
    return {
        "surrogate": {"name": spec.name, "options": dict(spec.options)},
        "seed": campaign.seed,
        "outcome_warping": campaign.outcome_warping,
        "bounds": campaign.problem.bounds.tolist(),
        "num_objectives": campaign.problem.num_objectives,
    }


# ---------------------------------------------------------------------- the file
@dataclasses.dataclass
class Cached:
    """The report's data read back from the cache (the history frame decoded on demand:
    :meth:`decode_frame`), with the page's parts drawn from them where they were kept."""

    data: ReportData
    best_x: list[float] | None
    model: dict[str, Any] | None
    panels: dict[str, Any] | None = None
    frame: dict[str, Any] | None = None
    drawn_parts: dict[str, Any] | None = None

    def decode_frame(self) -> None:
        """Put the history frame in :attr:`data` (pandas)."""
        if self.data.frame is None and self.frame is not None:
            self.data.frame = decode_frame(self.frame)

    @property
    def drawn(self) -> dict[str, Any] | None:
        """:func:`~dsbo.analysis.html_report.drawn_parts` of the data, if kept by this code."""
        kept = self.drawn_parts
        if not kept or kept.get("figures") != figures_key():
            return None
        return {k: kept[k] for k in ("counts", "best", "stopped", "panels") if k in kept}

    @property
    def model_html(self) -> dict[str, str | None] | None:
        """:func:`~dsbo.analysis.html_report.panel_html` of the kept model panels, if kept by
        this code (valid after :meth:`fill_panels`)."""
        kept = (self.panels or {}).get("html")
        if not kept or kept.get("figures") != figures_key():
            return None
        return dict(kept["html"])

    def fill_panels(self, key: str) -> bool:
        """Fill in the model panels kept for the fit state and versions of ``key``
        (:func:`model_key`); whether there were any."""
        from dsbo.analysis.importance import Importance, Slice

        if not self.panels or self.panels.get("key") != key:
            return False
        try:
            importance = [Importance(**i) for i in self.panels["importance"]]
            slices = [Slice(**s) for s in self.panels["slices"]]
        except (TypeError, KeyError):
            return False
        self.data.importance, self.data.slices = importance, slices
        self.data.model_note, self.data.model_fit = (
            self.panels["model_note"],
            self.panels["model_fit"],
        )
        return True

    def campaign(self, store: Store) -> StoredCampaign | None:
        """The campaign as the model panels need it, on ``store`` (``None``: not kept)."""
        if self.model is None:
            return None
        import torch

        from dsbo.surrogates import SurrogateSpec

        m = self.model
        bounds = torch.tensor(m["bounds"], dtype=torch.double)
        problem = _ModelProblem(bounds, int(m["num_objectives"]), self.data.space)
        spec = SurrogateSpec(m["surrogate"]["name"], dict(m["surrogate"]["options"]))
        return StoredCampaign(store, problem, spec, int(m["seed"]), m["outcome_warping"])


def _read(run_dir: Path) -> dict[str, Any]:
    try:
        value = json.loads((run_dir / CACHE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) and value.get("format") == FORMAT else {}


def _key(run_dir: Path, trials: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "dsbo": _version(),
        "config": file_digest(run_dir / "config.yaml"),
        "trials": trials,
    }


def load(
    run_dir: Path, trials: str, config: str | None = None
) -> tuple[Cached | None, dict[str, Any] | None]:
    """The cached data of ``run_dir`` if they were gathered from these trials (their
    :func:`trials_digest`) and the present ``config.yaml`` (else ``None``), and the
    configuration kept under :func:`config_key` ``config`` (else ``None``). The data come
    without configuration; their environment is this process's."""
    cache = _read(run_dir)
    configs = cache.get("configs") or {}
    kept_config = configs.get(config) if config is not None else None
    key = _key(run_dir, trials)
    if not cache or any(cache.get(k) != v for k, v in key.items()) or key["config"] is None:
        return None, kept_config
    try:
        d = cache["data"]
        space = SearchSpace.from_config(
            d["space"]["parameters"], d["space"].get("parameter_constraints", ())
        )
        data = ReportData(space=space, frame=None, **{k: d[k] for k in PLAIN_FIELDS})  # type: ignore[arg-type]
        data.environment = environment(d["seed"])
        cached = Cached(
            data,
            cache.get("best_x"),
            cache.get("model"),
            cache.get("panels"),
            d["frame"],
            cache.get("drawn"),
        )
        return cached, kept_config
    except Exception:  # a file of another layout: gathered afresh
        return None, kept_config


def save(
    run_dir: Path,
    trials: str,
    data: ReportData | None = None,
    seed: int | None = None,
    best_x: list[float] | None = None,
    model: dict[str, Any] | None = None,
    config: tuple[str, dict[str, Any]] | None = None,
    panels: tuple[str, ReportData] | None = None,
    drawn: dict[str, Any] | None = None,
    model_html: dict[str, str | None] | None = None,
) -> bool:
    """Keep ``data`` (gathered from the trials of digest ``trials``, without the model
    panels) with ``best_x`` and ``model`` (:func:`model_inputs`); and/or a ``config``
    (:func:`config_key`, the configuration the report command shows); and/or ``panels``, the
    model panels of a ReportData under their :func:`model_key` (kept with the data of the same
    trials); and/or the page's ``drawn`` parts and the ``model_html`` of the model panels
    (:mod:`~dsbo.analysis.html_report`, under :func:`figures_key`), in ``run_dir``. Returns
    whether what was given was kept (not what does not read back equal)."""
    cache = _read(run_dir)
    key = _key(run_dir, trials)
    if key["config"] is None:
        return False
    configs = dict(cache.get("configs") or {})
    if config is not None:
        configs.pop(config[0], None)
        configs[config[0]] = config[1]
        configs = dict(list(configs.items())[-MAX_CONFIGS:])
    same = all(cache.get(k) == v for k, v in key.items())
    entry: dict[str, Any] = {**key, "configs": configs}
    kept = True
    if data is not None:
        encoded = _encode(data, seed, best_x, model)
        kept = encoded is not None
        if kept:
            entry.update(encoded)
            for k in (
                ("panels", "drawn") if same else ()
            ):  # the same trials and config: still theirs
                if k in cache:
                    entry[k] = cache[k]
    elif same and "data" in cache:
        entry.update(
            {k: cache[k] for k in ("data", "best_x", "model", "panels", "drawn") if k in cache}
        )
    if panels is not None and "data" in entry:
        encoded_panels = _encode_panels(*panels)
        kept = kept and encoded_panels is not None
        entry["panels"] = encoded_panels
    figures = figures_key() if drawn is not None or model_html is not None else None
    if drawn is not None and "data" in entry:
        entry["drawn"] = {"figures": figures, **drawn}
    if model_html is not None and entry.get("panels"):
        entry["panels"] = {**entry["panels"], "html": {"figures": figures, "html": model_html}}
    if "data" not in entry and not configs:
        return False
    _write(run_dir / CACHE_NAME, entry)
    return kept


def _encode_panels(key: str, data: ReportData) -> dict[str, Any] | None:
    """The model panels of ``data`` as JSON, or ``None`` when they do not read back equal."""
    value = {
        "key": key,
        "importance": [dataclasses.asdict(i) for i in data.importance],
        "slices": [dataclasses.asdict(s) for s in data.slices],
        "model_note": data.model_note,
        "model_fit": list(data.model_fit),
    }
    try:
        back = json.loads(json.dumps(value, default=_plain))
    except (TypeError, ValueError):
        return None
    return back if _same(back, value) else None


def _encode(
    data: ReportData, seed: int | None, best_x: list[float] | None, model: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The entry's data, or ``None`` when they do not read back equal."""
    import pandas as pd

    d = {k: getattr(data, k) for k in PLAIN_FIELDS}
    d.update(space=data.space.to_config(), frame=encode_frame(data.frame), seed=seed)
    value = {"data": d, "best_x": best_x, "model": model}
    try:
        text = json.dumps(value, default=_plain)
        back = json.loads(text)
        frame = decode_frame(back["data"]["frame"])
        pd.testing.assert_frame_equal(frame, data.frame, check_exact=True)
        space = back["data"]["space"]
        same_space = (
            SearchSpace.from_config(space["parameters"], space.get("parameter_constraints", ()))
            == data.space
        )
    except (TypeError, ValueError, AssertionError, KeyError, ImportError):
        return None
    plain = all(_same(back["data"][k], d[k]) for k in PLAIN_FIELDS)
    others = _same(back["best_x"], best_x) and _same(back["model"], model)
    return back if same_space and plain and others else None


def _write(path: Path, value: dict[str, Any]) -> None:
    """Write atomically (a reader never sees half a file); a run directory that cannot be
    written to keeps no cache."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f, default=_plain)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


__all__ = [
    "CACHE_NAME",
    "FORMAT",
    "Cached",
    "StoredCampaign",
    "config_key",
    "figures_key",
    "load",
    "model_inputs",
    "model_key",
    "save",
    "trials_digest",
]
