"""HiReD against its baselines on real hierarchies (Paria thesis ch. 6, tables 6.1-6.3).

For each data set (labour, tourismsmall, tourismlarge from ``--data-root``, default
``$DSBO_DATA``; ``docs/data.md`` says where to get them) and seed, Lightning trains on the
windows of :class:`dsbo.data.HierarchicalDataModule` with the settings of ``configs/train/hired-<set>.yaml``
(table 6.5's Tourism column; 40 epochs, early stopping on validation mean WAPE, patience 10) and
the checkpoint with the best ``val_wape`` is scored on the test windows:

- ``hired``: HiReD (TVAR + basis decomposition, lambda_e of its config, or of the preset for ``--data``; the default
  residual on the batch's seasonal naive forecast ``y_snaive``);
- ``hired-lambda0``: the same with lambda_E = 0 (table 6.2's first ablation);
- ``hired-no-snaive``: the same without the seasonal naive residual base (``baseline="none"``,
  the thesis' model);
- ``hired-ar``: TVAR only (table 6.2's second); ``hired-basis``: basis decomposition only;
- ``rnn``: the shared seq2seq LSTM of table 6.1 (:class:`dsbo_zoo.seq2seq_rnn.Seq2SeqRNN`);
- ``seasonal-naive``, ``ets`` (statsforecast AutoETS per node, unreconciled), ``ets-bu`` and
  ``ets-mint`` (reconciled bottom-up and by MinT-shrink with hierarchicalforecast): fitted on
  everything before each test window, deterministic (one "seed"). One job fits AutoETS once per
  data set and records all three (``--methods ets-bu`` runs that job); its forecasts (test and
  validation windows, with the in-sample fitted values) are cached under ``--cache`` for the
  combination below.

Issue 46, HiReD against the statistical state of the art and its own floor:

- ``hired-mint``: HiReD's base forecasts (the best checkpoint) reconciled by MinT-shrink, the
  covariance from its in-sample residuals on the training windows
  (:func:`dsbo.analysis.forecast_baselines.mint_reconcile`); the same job records
  ``hired+ets`` (the mean of HiReD's and ETS's base forecasts, a forecast combination) and
  ``hired+ets-mint`` (that combination reconciled by MinT-shrink, the residuals of the
  combination: the mean of both in-sample residuals) and ``hired+ets-mint-w`` (HiReD's weight in
  the combination, of :data:`MIX_WEIGHTS` with 0: ETS alone and 1: HiReD alone, chosen on the
  validation windows, then reconciled: a learned mix); validation scores too.
- ``hired-select`` (computed from the runs, nothing fitted): per seed, the forecaster with the
  lowest validation mean WAPE among ``hired`` (residual), ``hired-no-snaive`` (if run) and
  seasonal naive (the untrained residual model), a tie going to seasonal naive
  (:func:`dsbo_zoo.hired.select_on_validation` does the same for models in memory);
  ``hired+ets-mint-floor`` and ``hired+ets-mint-w-floor``: that combination or seasonal naive,
  by validation.

A neural fit whose best validation WAPE is worse than seasonal naive's prints the warning of
``python -m dsbo.train`` (:func:`dsbo_zoo.hierarchical_forecaster.seasonal_naive_warning`) and
records it; the report lists them. Every report covers all the runs recorded in ``runs.jsonl``
(other methods, seeds and data sets too), so a ``--methods`` subset run adds to the results.

Metrics on the original scale: WAPE and SMAPE per level and their mean over levels; the
coherence WAPE of table 6.3 (a node's forecast against the sum of its leaves' forecasts).
Per data set, paired differences of mean WAPE and SMAPE (HiReD minus hired-lambda0,
seasonal-naive, rnn and hired-no-snaive; same seed, the deterministic baselines' one run for
every seed) as mean +- standard error over the seeds.

**Data it was not tuned on** (issue 31): ``--data NAME=PATH ...`` adds any hierarchy in the
HierE2E layout (data.csv, agg_mat.csv, tags.csv), and ``--data synthetic-daily
synthetic-weekly`` the named synthetic sets of :mod:`dsbo.data.synthetic_hierarchies`. Their
windows, season and table 6.5 column come from the data (frequency and length:
:func:`dsbo.data.hierarchical_settings.data_settings`), the model is ``HiReD.preset`` of that
column (the data module takes its NMF rank R; its other settings as in the configs: lr halved every 6 epochs, early stopping patience
10, 40 epochs). With ``--data`` alone, only those sets run (no ``--data-root`` needed).

Part ``alpha``: HiReD with level-weighted node sampling (eq. 6.6, probability proportional to
alpha^-depth) for alpha in 0.5, 1, 2, 4: top-level and mean WAPE.
Part ``cost``: one full tourismlarge fit with 1 and with 2 torch threads: training throughput
(windows per second) and fit time.

    python experiments/hired.py --smoke            # a synthetic hierarchy, a minute
    python experiments/hired.py --seeds 3          # what was run (see results.md)
    python experiments/hired.py --parts main --data synthetic-daily synthetic-weekly mine=/path/to/mine --out OUT

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytorch_lightning as pl  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402
from campaign_runs import mean_and_se, run_resumable  # noqa: E402
from pytorch_lightning.callbacks import ModelCheckpoint  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.analysis.forecast_baselines import (  # noqa: E402
    baseline_forecasts,
    ets_reconciled,
    insample_residuals,
    insample_starts,
    mint_reconcile,
    model_forecasts,
    score_forecasts,
)
from dsbo.data import HierarchicalDataModule  # noqa: E402
from dsbo.data.hierarchical import DATASET_DEFAULTS  # noqa: E402
from dsbo.data.synthetic_hierarchies import SYNTHETIC_SETS  # noqa: E402
from dsbo.errors import ConfigError  # noqa: E402
from dsbo_zoo.hierarchical_forecaster import seasonal_naive_warning  # noqa: E402
from dsbo_zoo.hired import PRESETS, HiReD  # noqa: E402
from dsbo_zoo.seq2seq_rnn import Seq2SeqRNN  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "hired"
DATASETS = ("labour", "tourismsmall", "tourismlarge")
NEURAL = (
    "hired",
    "hired-lambda0",
    "hired-no-snaive",
    "hired-ar",
    "hired-basis",
    "rnn",
    "hired-mint",
)
#: Records of the ``hired-mint`` job besides its own (issue 46).
RECONCILED = ("hired+ets", "hired+ets-mint", "hired+ets-mint-w")
#: HiReD's weights in the combination with ETS that ``hired+ets-mint-w`` chooses from on validation.
MIX_WEIGHTS = (0.5, 0.25, 0.75, 0.0, 1.0)
#: Chosen per seed on validation from recorded runs: method -> its candidates (seasonal naive last).
SELECTED = {
    "hired-select": ("hired", "hired-no-snaive", "seasonal-naive"),
    "hired+ets-mint-floor": ("hired+ets-mint", "seasonal-naive"),
    "hired+ets-mint-w-floor": ("hired+ets-mint-w", "seasonal-naive"),
}
#: Rows of the report, in order.
ROWS = (
    "hired",
    "hired-lambda0",
    "hired-no-snaive",
    "hired-ar",
    "hired-basis",
    "rnn",
    *SELECTED,
    "hired-mint",
    *RECONCILED,
    "seasonal-naive",
    "ets",
    "ets-bu",
    "ets-mint",
)
#: The job that records a method (the others are their own job).
JOB_OF = {"ets-bu": "ets", "ets-mint": "ets", **dict.fromkeys(RECONCILED, "hired-mint")}
#: Issue 46's comparisons: these methods minus ETS + MinT and seasonal naive, per seed.
ISSUE46 = (
    "hired",
    "hired-select",
    "hired-mint",
    "hired+ets-mint",
    "hired+ets-mint-floor",
    "hired+ets-mint-w",
    "hired+ets-mint-w-floor",
)
#: Paired differences reported per data set: HiReD minus each of these.
PAIRED = ("hired-lambda0", "seasonal-naive", "rnn", "hired-no-snaive")
#: Data given by ``--data`` (not tuned on): the configs' schedule, the data's table 6.5 column.
CUSTOM_EPOCHS = 40
CUSTOM_MODEL = {"lr_decay": 0.5, "decay_every": 6, "early_stopping_patience": 10}
#: Smoke runs on ``--data`` sets: few training windows per epoch.
SMOKE_WINDOWS = 4
BASELINES = {
    "seasonal-naive": "seasonal_naive",
    "ets": "ets",
    "ets-bu": "ets_bottom_up",
    "ets-mint": "ets_mint_shrink",
}
ALPHAS = (0.5, 1.0, 2.0, 4.0)
KEY = ("part", "dataset", "method", "seed", "alpha", "threads", "smoke")
#: The smoke run's synthetic hierarchy and its settings (monthly, 3 levels).
SMOKE_DATA = {
    "synthetic": {"branching": [2, 3], "num_steps": 72, "seed": 0},
    "history": 12,
    "horizon": 4,
    "val_windows": 1,
    "test_windows": 1,
}


def data_root(arg: str | None) -> Path:
    """Where the hierarchical data sets are: ``--data-root``, else ``$DSBO_DATA``."""
    if not (arg or os.environ.get("DSBO_DATA")):
        raise ConfigError(
            "experiments/hired.py needs the real hierarchies (labour, tourismsmall, tourismlarge): "
            "give --data-root or set DSBO_DATA to the folder that holds hierarchical/<name>/ "
            "(docs/data.md says where to get them and the layout), or run --smoke"
        )
    root = Path(arg or os.environ["DSBO_DATA"])
    return root / "hierarchical" if (root / "hierarchical").is_dir() else root


def train_settings(dataset: str) -> tuple[dict[str, Any], dict[str, Any], int]:
    """``(model init_args, data init_args, max_epochs)`` of ``configs/train/hired-<dataset>.yaml``."""
    cfg = yaml.safe_load((ROOT / "configs" / "train" / f"hired-{dataset}.yaml").read_text())
    data = dict(cfg["data"]["init_args"])
    data.pop("name", None)
    return dict(cfg["model"]["init_args"]), data, int(cfg["trainer"]["max_epochs"])


def parse_data(items: list[str] | None) -> dict[str, dict[str, str]]:
    """``--data`` items: ``NAME=PATH`` (a HierE2E folder) or a name of ``SYNTHETIC_SETS``."""
    out: dict[str, dict[str, str]] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if sep:
            if not name or not path or not (Path(path) / "data.csv").is_file():
                raise ConfigError(
                    f"--data {item}: NAME=PATH needs a name and a folder with data.csv, agg_mat.csv, tags.csv"
                )
            spec = {"path": str(Path(path).resolve())}
        elif item in SYNTHETIC_SETS:
            spec = {"synthetic": item}
        else:
            raise ConfigError(
                f"--data {item}: give NAME=PATH (a folder in the HierE2E layout) or one of {', '.join(SYNTHETIC_SETS)}"
            )
        if name in out or name in DATASETS or name == "synthetic":
            raise ConfigError(f"--data {item}: the name {name!r} is taken; choose another")
        out[name] = spec
    return out


def datamodule(job: dict[str, Any], root: str | None, alpha: float = 1.0) -> HierarchicalDataModule:
    if job.get("data"):
        extra = {"windows_per_epoch": SMOKE_WINDOWS} if job["smoke"] else {}
        dm = HierarchicalDataModule(**job["data"], alpha=alpha, seed=job["seed"], **extra)
        rank = min(
            PRESETS[dm.preset]["num_representatives"], dm.num_nodes
        )  # the preset's NMF rank R
        if rank != len(dm.representatives):
            dm = HierarchicalDataModule(
                **job["data"], alpha=alpha, seed=job["seed"], num_representatives=rank, **extra
            )
        return dm
    if job["smoke"]:
        return HierarchicalDataModule(**SMOKE_DATA, alpha=alpha, seed=job["seed"])
    _, data, _ = train_settings(job["dataset"])
    data.update(alpha=alpha, seed=job["seed"], **job.get("data_overrides", {}))
    return HierarchicalDataModule(path=str(data_root(root) / job["dataset"]), **data)


def build_model(job: dict[str, Any], dm: HierarchicalDataModule) -> pl.LightningModule:
    """The job's model with the data set's config settings (smoke: the constructors' defaults)."""
    method = job["method"]
    if job.get("data"):
        model_args = {
            k: v for k, v in PRESETS[dm.preset].items() if k not in ("history", "horizon")
        } | CUSTOM_MODEL
    else:
        model_args = {} if job["smoke"] else train_settings(job["dataset"])[0]
    model_args.update(job.get("model_overrides", {}))
    common = {
        "in_dim": dm.in_dim,
        "history": dm.history,
        "horizon": dm.horizon,
        "num_representatives": len(dm.representatives),
    }
    if method == "rnn":
        keep = ("lr", "lr_decay", "decay_every", "early_stopping_patience")
        return Seq2SeqRNN(**common, **{k: model_args[k] for k in keep if k in model_args})
    args = {**model_args, **common}
    if method == "hired-lambda0":
        args["lambda_e"] = 0.0
    elif method == "hired-no-snaive":
        args["baseline"] = "none"
    elif method == "hired-ar":
        args["components"] = "ar"
    elif method == "hired-basis":
        args["components"] = "basis"
    return HiReD(**args)


def fit_and_test(job: dict[str, Any], root: str | None, max_epochs: int) -> dict[str, Any]:
    """Train one model, test the checkpoint with the best ``val_wape``; metrics and timings
    (``hired-mint``: then reconcile and combine, :func:`reconciled_runs`)."""
    torch.set_num_threads(job.get("threads") or 1)
    warnings.simplefilter("ignore")
    pl.seed_everything(job["seed"], verbose=False)
    dm = datamodule(job, root, alpha=job.get("alpha") or 1.0)
    model = build_model(job, dm)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = ModelCheckpoint(dirpath=tmp, monitor="val_wape", mode="min", save_top_k=1)
        trainer = pl.Trainer(
            max_epochs=max_epochs,
            accelerator="cpu",
            logger=False,
            callbacks=[checkpoint],
            enable_progress_bar=False,
            enable_model_summary=False,
            default_root_dir=tmp,
        )
        started = time.perf_counter()
        trainer.fit(model, datamodule=dm)
        fit_seconds = time.perf_counter() - started
        val = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val_")}
        best_val = (
            float(checkpoint.best_model_score)
            if checkpoint.best_model_score is not None
            else math.nan
        )
        test = trainer.test(model, datamodule=dm, ckpt_path="best", verbose=False)[
            0
        ]  # the model keeps the best weights
        forecasts = None
        if job["seed"] == 0 and job["part"] == "main" and job["method"] in ("hired", "rnn"):
            forecasts = predictions(trainer, model, dm)
    warning = seasonal_naive_warning(
        best_val, val.get("val_wape_seasonal_naive"), bool(model.uses_seasonal_naive)
    )
    if warning:
        print(
            f"warning: {job['dataset']} {job['method']} seed {job['seed']}: {warning}", flush=True
        )
    extra = reconciled_runs(job, model, dm) if job["method"] == "hired-mint" else {}
    return {
        **public(job),
        "settings": settings_of(dm),
        "test": {k[len("test_") :]: float(v) for k, v in test.items() if k.startswith("test_")},
        "best_val_wape": best_val,
        "last_val": val,
        "epochs": int(trainer.current_epoch),
        "steps": int(trainer.global_step),
        "fit_seconds": fit_seconds,
        "seconds": time.perf_counter() - started,
        "windows_per_second": trainer.global_step / fit_seconds,
        "forecasts": forecasts,
        **({"warning": warning} if warning else {}),
        **extra,
    }


def ets_forecasts(
    job: dict[str, Any], dm: HierarchicalDataModule, split: str, cache: str | None
) -> dict[str, Any]:
    """AutoETS of every node for the windows of ``split``, reconciled (:func:`ets_reconciled` with
    its in-sample fitted values), from ``cache`` when there (deterministic: keyed by the data
    set and its settings), else fitted once and written there."""
    folder = Path(cache or Path(tempfile.gettempdir()) / "dsbo-hired-ets")
    key = json.dumps(
        [job["dataset"], job.get("data"), job["smoke"], split, settings_of(dm)],
        sort_keys=True,
        default=str,
    )
    path = folder / f"{job['dataset']}-{split}-{abs(hash_text(key)):x}.npz"
    if path.is_file():
        with np.load(path) as z:
            return {
                "ets": z["ets"],
                "ets_bottom_up": z["ets_bottom_up"],
                "ets_mint_shrink": z["ets_mint_shrink"],
                "ets_insample": [z[f"insample{w}"] for w in range(len(z["ets"]))],
            }
    out = ets_reconciled(
        dm.hierarchy, dm.Y, dm.forecast_starts(split), dm.horizon, dm.season, insample=True
    )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.npz")
    np.savez(
        tmp,
        **{k: out[k] for k in ("ets", "ets_bottom_up", "ets_mint_shrink")},
        **{f"insample{w}": f for w, f in enumerate(out["ets_insample"])},
    )
    tmp.replace(path)
    return out


def hash_text(text: str) -> int:
    import hashlib

    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def reconciled_runs(job: dict[str, Any], model: Any, dm: HierarchicalDataModule) -> dict[str, Any]:
    """HiReD's base forecasts (the model in its best state) reconciled by MinT, and combined with
    ETS's then reconciled: ``hired-mint``'s test and validation scores and ``extra_runs`` for
    :data:`RECONCILED`, each with its own. The combination's residuals are the same mix of both
    forecasters' in-sample residuals (HiReD's on the training windows, ETS's one-step fitted
    values at the same steps); ``hired+ets-mint-w`` takes the HiReD weight of :data:`MIX_WEIGHTS`
    whose reconciled combination validates best (ties: the earlier weight)."""
    h = dm.hierarchy
    ins = insample_starts(dm)
    residuals = insample_residuals(model_forecasts(model, dm, ins), dm.Y, ins)
    steps = np.arange(ins[0], ins[-1] + dm.horizon)
    scores: dict[str, dict[str, dict[str, float]]] = {
        m: {} for m in ("hired", "hired-mint", *RECONCILED)
    }
    mixed: dict[str, dict[float, dict[str, float]]] = {"val": {}, "test": {}}
    for split in ("test", "val"):
        starts = dm.forecast_starts(split)
        base = model_forecasts(model, dm, starts)
        ets = ets_forecasts(job, dm, split, job.get("cache"))

        def mix(weight: float, base=base, ets=ets, starts=starts) -> np.ndarray:
            combined = weight * base + (1 - weight) * ets["ets"]
            return np.concatenate(
                [
                    mint_reconcile(
                        h,
                        combined[w : w + 1],
                        weight * residuals
                        + (1 - weight) * (dm.Y[steps].T - ets["ets_insample"][w][:, steps]),
                    )
                    for w in range(len(starts))
                ]
            )

        found = {
            "hired": base,
            "hired-mint": mint_reconcile(h, base, residuals),
            "hired+ets": (base + ets["ets"]) / 2,
        }
        for weight in MIX_WEIGHTS:
            mixed[split][weight] = normalize_scores(score_forecasts(mix(weight), dm.Y, starts, h))
        found = {m: normalize_scores(score_forecasts(f, dm.Y, starts, h)) for m, f in found.items()}
        found["hired+ets-mint"] = mixed[split][0.5]
        for method, value in found.items():
            scores[method][split] = value
    weight = min(MIX_WEIGHTS, key=lambda w: (mixed["val"][w]["wape"], MIX_WEIGHTS.index(w)))
    scores["hired+ets-mint-w"] = {"test": mixed["test"][weight], "val": mixed["val"][weight]}
    extra = [
        {
            **public(job),
            "method": m,
            "settings": settings_of(dm),
            "test": scores[m]["test"],
            "val_wape": scores[m]["val"]["wape"],
        }
        for m in RECONCILED
    ]
    extra[-1].update(
        weight=weight,
        val_wape_by_weight={str(w): mixed["val"][w]["wape"] for w in MIX_WEIGHTS},
        test_wape_by_weight={str(w): mixed["test"][w]["wape"] for w in MIX_WEIGHTS},
    )
    return {
        "base_test_wape": scores["hired"]["test"]["wape"],
        "base_val_wape": scores["hired"]["val"]["wape"],
        "reconciled_test": scores["hired-mint"]["test"],
        "val_wape_reconciled": scores["hired-mint"]["val"]["wape"],
        "extra_runs": extra,
    }


def predictions(
    trainer: pl.Trainer, model: pl.LightningModule, dm: HierarchicalDataModule
) -> dict[str, Any]:
    """Test-window forecasts of a few nodes per level (for the forecast plot), original units."""
    outputs = trainer.predict(model, datamodule=dm, ckpt_path="best")
    level = dm.hierarchy.level
    picks = [int(i) for k in range(dm.hierarchy.num_levels) for i in np.flatnonzero(level == k)[:2]]
    series: dict[str, Any] = {}
    for out in outputs:
        for row, node in enumerate(out["nodes"].tolist()):
            if node in picks:
                entry = series.setdefault(str(node), {"t": [], "forecast": []})
                entry["t"] += out["t_fut"].tolist()
                entry["forecast"] += out["forecast"][row].tolist()
    return {
        "nodes": {
            n: {**v, "name": dm.hierarchy.node_names[int(n)], "level": int(level[int(n)])}
            for n, v in series.items()
        }
    }


def run_baseline(job: dict[str, Any], root: str | None) -> dict[str, Any]:
    dm = datamodule(job, root)
    started = time.perf_counter()
    name = BASELINES[job["method"]]
    methods = ["seasonal_naive"] if name == "seasonal_naive" else [name]
    forecast = baseline_forecasts(dm, split="test", methods=methods)[name]
    scores = score_forecasts(forecast, dm.Y, dm.forecast_starts("test"), dm.hierarchy)
    return {
        **public(job),
        "settings": settings_of(dm),
        "test": normalize_scores(scores),
        "seconds": time.perf_counter() - started,
    }


def public(job: dict[str, Any]) -> dict[str, Any]:
    """The job as recorded in runs.jsonl: a ``--data`` folder by its name only (no local path)."""
    job = {k: v for k, v in job.items() if k != "cache"}
    data = job.get("data")
    if data and "path" in data:
        return {**job, "data": {"folder": Path(data["path"]).name}}
    return job


def settings_of(dm: HierarchicalDataModule) -> dict[str, Any]:
    """The data module's window settings, season and table 6.5 column (for the report)."""
    keys = ("history", "horizon", "val_windows", "test_windows", "season", "preset")
    return {k: getattr(dm, k) for k in keys} | {
        "nodes": dm.num_nodes,
        "steps": dm.num_steps,
        "frequency": dm.series.frequency,
    }


def normalize_scores(scores: dict[str, float]) -> dict[str, float]:
    """``score_forecasts`` keys in the names the Lightning models log (``wape``, ``wape_level0``,
    ``coherence``, ...)."""
    out = {}
    for key, value in scores.items():
        metric, _, part = key.partition("/") if "/" in key else key.partition("_")
        out[metric if part == "mean" else f"{metric}_{part}"] = value
    return out


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    root = job.get("root")
    if job["method"] == "ets":
        return run_ets(job, root)
    if job["method"] in BASELINES:
        return run_baseline(job, root)
    if job["smoke"]:
        epochs = 3
    elif job.get("data"):
        epochs = CUSTOM_EPOCHS
    else:
        _, _, epochs = train_settings(job["dataset"])
    run = fit_and_test(job, root, epochs)
    if (
        job["method"] == "hired-mint"
    ):  # its own scores are the reconciled ones; the plain fit's stay beside
        run["plain_test"], run["test"] = run["test"], run.pop("reconciled_test")
        run["val_wape"] = run.pop("val_wape_reconciled")
    return run


def run_ets(job: dict[str, Any], root: str | None) -> dict[str, Any]:
    """AutoETS fitted once (per test window) and its three forecasts scored: the ``ets`` run,
    with ``ets-bu`` and ``ets-mint`` as ``extra_runs``."""
    dm = datamodule(job, root)
    started = time.perf_counter()
    out = ets_forecasts(job, dm, "test", job.get("cache"))
    starts = dm.forecast_starts("test")
    runs = {
        m: {
            **public(job),
            "method": m,
            "settings": settings_of(dm),
            "test": normalize_scores(
                score_forecasts(out[BASELINES[m]], dm.Y, starts, dm.hierarchy)
            ),
        }
        for m in ("ets", "ets-bu", "ets-mint")
    }
    seconds = time.perf_counter() - started
    return {
        **runs["ets"],
        "seconds": seconds,
        "extra_runs": [{**runs[m], "seconds": 0.0} for m in ("ets-bu", "ets-mint")],
    }


def jobs_for(
    parts: list[str],
    datasets: list[str],
    seeds: int,
    smoke: bool,
    root: str | None,
    custom: dict[str, dict[str, str]] | None = None,
    cache: str | None = None,
) -> list[dict[str, Any]]:
    """Every job; a data set in ``custom`` (``--data``) carries its data module arguments."""
    base = {
        "alpha": 1.0,
        "threads": 1,
        "smoke": smoke,
        "root": root,
        **({"cache": cache} if cache else {}),
    }
    custom = custom or {}

    def job(d: str, **fields: Any) -> dict[str, Any]:
        return {**base, "dataset": d, **({"data": custom[d]} if d in custom else {}), **fields}

    jobs: list[dict[str, Any]] = []
    if "main" in parts:
        jobs += [
            job(d, part="main", method=m, seed=0)
            for d in datasets
            for m in ("seasonal-naive", "ets")
        ]
        jobs += [
            job(d, part="main", method=m, seed=s)
            for s in range(seeds)
            for d in datasets
            for m in NEURAL
        ]
    if "alpha" in parts:
        jobs += [
            job(d, part="alpha", method="hired", seed=s, alpha=a)
            for s in range(seeds)
            for d in datasets
            for a in ALPHAS
            if a != 1.0
        ]
    if "cost" in parts:
        jobs += [job(datasets[-1], part="cost", method="hired", seed=0, threads=t) for t in (1, 2)]
    return jobs


# ---------------------------------------------------------------------- the report
def recorded_runs(out: Path, smoke: bool) -> list[dict[str, Any]]:
    """Every run in ``out/runs.jsonl`` of this kind (smoke or not), a job's ``extra_runs`` as runs
    of their own; a later record of the same key replaces an earlier one."""
    log = out / "runs.jsonl"
    done: dict[tuple, dict[str, Any]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        if line.strip():
            run = json.loads(line)
            for r in (run, *run.pop("extra_runs", [])):
                done[tuple(r.get(k) for k in KEY)] = r
    return [r for r in done.values() if bool(r.get("smoke")) == smoke]


def validation_wape(run: dict[str, Any]) -> float:
    """A run's validation mean WAPE as selected on: a fit's best, a combination's."""
    return float(run["best_val_wape"] if "best_val_wape" in run else run.get("val_wape", math.nan))


def selected_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:data:`SELECTED`'s runs: per data set and seed, the candidate with the lowest validation
    mean WAPE (seasonal naive's: ``val_wape_seasonal_naive`` of that data set's fits; a tie goes
    to it), with that candidate's test scores; a method whose first candidate or seasonal naive
    is missing is left out."""
    main_runs = [r for r in runs if r["part"] == "main"]
    out = []
    for d in dict.fromkeys(r["dataset"] for r in main_runs):
        mine = [r for r in main_runs if r["dataset"] == d]
        snaive_val = next(
            (
                r["last_val"]["val_wape_seasonal_naive"]
                for r in mine
                if "val_wape_seasonal_naive" in r.get("last_val", {})
            ),
            None,
        )
        snaive = next((r for r in mine if r["method"] == "seasonal-naive"), None)
        if snaive_val is None or snaive is None:
            continue
        for method, candidates in SELECTED.items():
            for first in [r for r in mine if r["method"] == candidates[0]]:
                pool = {
                    m: r
                    for m in candidates[1:-1]
                    for r in mine
                    if r["method"] == m and r["seed"] == first["seed"]
                }
                pool = {"seasonal-naive": snaive, candidates[0]: first, **pool}
                scores = {
                    m: float(snaive_val) if m == "seasonal-naive" else validation_wape(r)
                    for m, r in pool.items()
                }
                best = min(pool, key=lambda m: (scores[m], list(pool).index(m)))
                out.append(
                    {
                        **{k: first[k] for k in KEY},
                        "method": method,
                        "selected": best,
                        "val_scores": scores,
                        "test": pool[best]["test"],
                        "settings": first.get("settings"),
                    }
                )
    return out


def table_rows(
    runs: list[dict[str, Any]], dataset: str, methods: tuple[str, ...], part: str = "main"
) -> list[dict[str, Any]]:
    rows = []
    for method in methods:
        mine = [
            r
            for r in runs
            if r["part"] == part and r["dataset"] == dataset and r["method"] == method
        ]
        if not mine:
            continue
        keys = sorted({k for r in mine for k in r["test"]})
        rows.append(
            {
                "method": method,
                "seeds": len(mine),
                **{k: mean_and_se([r["test"][k] for r in mine]) for k in keys},
            }
        )
    return rows


def paired_differences(
    runs: list[dict[str, Any]],
    dataset: str,
    metrics: tuple[str, ...] = ("wape", "smape"),
    left: str = "hired",
    others: tuple[str, ...] = PAIRED,
) -> list[dict[str, Any]]:
    """``left`` (HiReD) minus each method of ``others`` (:data:`PAIRED`) on ``dataset``'s main runs,
    paired by seed (a deterministic baseline's one run pairs with every seed): mean +- standard
    error over seeds."""
    mine = [r for r in runs if r["part"] == "main" and r["dataset"] == dataset]
    hired = {r["seed"]: r["test"] for r in mine if r["method"] == left}
    rows = []
    for other in others:
        theirs = {r["seed"]: r["test"] for r in mine if r["method"] == other}
        if other in BASELINES and theirs:
            theirs = dict.fromkeys(hired, next(iter(theirs.values())))
        seeds = sorted(set(hired) & set(theirs))
        if not seeds:
            continue
        diffs = {
            m: mean_and_se([hired[s].get(m, math.nan) - theirs[s].get(m, math.nan) for s in seeds])
            for m in metrics
        }
        rows.append(
            {"minus": other, "seeds": len(seeds), **diffs}
            | ({"method": left} if left != "hired" else {})
        )
    return rows


def summarize(runs: list[dict[str, Any]], datasets: list[str], smoke: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"smoke": smoke, "datasets": {}, "alpha": {}, "cost": []}
    runs = [*runs, *selected_runs(runs)]
    for d in datasets:
        rows = table_rows(runs, d, ROWS)
        if not rows:
            continue
        levels = sorted(
            {int(k.rsplit("level", 1)[1]) for r in rows for k in r if k.startswith("wape_level")}
        )
        settings = next(
            (r["settings"] for r in runs if r["dataset"] == d and r.get("settings")), None
        )
        result["datasets"][d] = {
            "levels": levels,
            "rows": rows,
            "paired": paired_differences(runs, d),
            "settings": settings,
            "issue46": [
                row
                for m in ISSUE46
                for row in paired_differences(
                    runs, d, left=m, others=("ets-mint", "seasonal-naive")
                )
            ],
            "selected": {
                m: sorted(
                    counts_of(
                        r["selected"] for r in runs if r["method"] == m and r["dataset"] == d
                    ).items()
                )
                for m in SELECTED
            },
            "warnings": [
                f"{r['method']} seed {r['seed']}: best val_wape {r['best_val_wape']:.4g} > seasonal naive's "
                f"{r['last_val']['val_wape_seasonal_naive']:.4g}"
                for r in runs
                if r["dataset"] == d
                and r["part"] == "main"
                and seasonal_naive_warning(
                    r.get("best_val_wape"),
                    r.get("last_val", {}).get("val_wape_seasonal_naive"),
                    False,
                )
            ],
        }
        alpha_rows = []
        for a in ALPHAS:
            mine = [
                r
                for r in runs
                if r["dataset"] == d
                and r["method"] == "hired"
                and r["part"] in ("main", "alpha")
                and r["alpha"] == a
            ]
            if mine:
                alpha_rows.append(
                    {
                        "alpha": a,
                        "seeds": len(mine),
                        **{
                            k: mean_and_se([r["test"][k] for r in mine])
                            for k in ("wape_level0", "wape", "smape")
                        },
                    }
                )
        if len(alpha_rows) > 1:
            result["alpha"][d] = alpha_rows
    for r in runs:
        if r["part"] == "cost":
            result["cost"].append(
                {
                    k: r[k]
                    for k in (
                        "dataset",
                        "threads",
                        "fit_seconds",
                        "windows_per_second",
                        "epochs",
                        "steps",
                    )
                }
            )
    result["pass_marks"] = pass_marks(result)
    result["issue46"] = issue46_goals(result)
    return result


def counts_of(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def issue46_goals(result: dict[str, Any]) -> list[str]:
    """Issue 46's goals per method of :data:`ISSUE46`: below ETS + MinT on at least half of the
    data sets, at or below seasonal naive on all (mean test WAPE over the seeds)."""
    lines = []
    for method in ISSUE46:
        below_ets, not_above_snaive, n = [], [], 0
        for d, t in result["datasets"].items():
            by = {r["method"]: r["wape"][0] for r in t["rows"]}
            if not {method, "ets-mint", "seasonal-naive"} <= set(by):
                continue
            n += 1
            if by[method] < by["ets-mint"]:
                below_ets.append(d)
            if by[method] <= by["seasonal-naive"]:
                not_above_snaive.append(d)
        if n:
            lines.append(
                f"{method}: below ETS + MinT on {len(below_ets)} of {n} ({', '.join(below_ets) or 'none'}; goal: at least "
                f"half), at or below seasonal naive on {len(not_above_snaive)} of {n} "
                f"({', '.join(not_above_snaive) or 'none'}; goal: all)"
            )
    return lines


def pass_marks(result: dict[str, Any]) -> list[str]:
    """The issue's pass marks, each as measured."""
    lines, below_rnn, below_l0 = [], 0, 0
    datasets = result["datasets"]
    for d, t in datasets.items():
        by = {r["method"]: r for r in t["rows"]}
        if not {"hired", "rnn", "hired-lambda0"} <= set(by):
            continue
        h, rnn, l0 = (by[m]["wape"][0] for m in ("hired", "rnn", "hired-lambda0"))
        below_rnn += h < rnn
        below_l0 += h < l0
        c = [by[m].get("coherence", (math.nan,))[0] for m in ("hired", "hired-lambda0", "rnn")]
        lines.append(
            f"{d}: mean WAPE HiReD {h:.4f} vs RNN {rnn:.4f} vs lambda_E = 0 {l0:.4f}; coherence "
            f"HiReD {c[0]:.4f}, lambda_E = 0 {c[1]:.4f}, RNN {c[2]:.4f} (ranks HiReD < lambda0 < RNN: "
            f"{'yes' if c[0] < c[1] < c[2] else 'no'})"
        )
    n = len(lines)
    if n:
        lines.append(
            f"HiReD below the RNN on {below_rnn} of {n} data sets and below lambda_E = 0 on {below_l0} of {n} "
            f"(pass mark: 2 of 3): {'met' if below_rnn >= 2 and below_l0 >= 2 else 'missed'}"
        )
    for d, rows in result["alpha"].items():
        top = [r["wape_level0"][0] for r in rows]
        monotone = all(b <= a for a, b in zip(top, top[1:], strict=False))
        lines.append(
            f"{d}: top-level WAPE over alpha {[r['alpha'] for r in rows]}: {[round(x, 4) for x in top]} "
            f"(larger alpha lowers it: {'yes' if monotone else 'no'})"
        )
    return lines


def fmt(pair: Any, digits: int = 3) -> str:
    mean, se = pair
    if isinstance(mean, float) and math.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" + (f" +- {se:.{digits}f}" if se else "")


def write_markdown(result: dict[str, Any], path: Path) -> None:
    out = [
        "# HiReD on real hierarchies (Paria thesis ch. 6)",
        "",
        "Written by `python experiments/hired.py`. Scored on the last `test_windows` horizons of each set ("
        + "; ".join(
            f"{d}: H {v['history']}, F {v['horizon']}, {v['val_windows']} validation and {v['test_windows']} "
            f"test window(s)"
            for d, v in DATASET_DEFAULTS.items()
            if d in result["datasets"]
        )
        + ("; " if set(result["datasets"]) & set(DATASET_DEFAULTS) else "")
        + "other sets: derived from the data, given under each table"
        + ") with the checkpoint of the best validation mean WAPE; mean +- standard error over the seeds in column "
        "`seeds` (baselines are deterministic: one run). Original units.",
        "",
    ]
    if result["smoke"]:
        out += ["**Smoke run** (synthetic hierarchy, 3 epochs): not a result.", ""]
    for d, t in result["datasets"].items():
        levels = t["levels"]
        out += [
            f"## {d}",
            "",
            "| method | seeds | "
            + " | ".join(f"L{k} WAPE / SMAPE" for k in levels)
            + " | mean WAPE | mean SMAPE | coherence WAPE |",
            "|---|---|" + "---|" * (len(levels) + 3),
        ]
        for r in t["rows"]:
            cells = [
                f"{fmt(r.get(f'wape_level{k}', (math.nan, 0)))} / {fmt(r.get(f'smape_level{k}', (math.nan, 0)))}"
                for k in levels
            ]
            out.append(
                f"| {r['method']} | {r['seeds']} | "
                + " | ".join(cells)
                + f" | {fmt(r['wape'])} | {fmt(r['smape'])} | {fmt(r.get('coherence', (math.nan, 0)), 4)} |"
            )
        out.append("")
        if t.get("settings"):
            st = t["settings"]
            out += [
                f"Data: {st['nodes']} nodes, {st['steps']} steps (frequency {st['frequency']}); H {st['history']}, "
                f"F {st['horizon']}, {st['val_windows']} validation and {st['test_windows']} test window(s), season "
                f"{st['season']}, table 6.5 column {st['preset']}.",
                "",
            ]
        if t.get("paired"):
            out += [
                f"Paired differences on {d} (HiReD minus the method, same seed; negative: HiReD better):",
                "",
                "| HiReD minus | seeds | mean WAPE | mean SMAPE |",
                "|---|---|---|---|",
            ]
            out += [
                f"| {r['minus']} | {r['seeds']} | {fmt(r['wape'], 4)} | {fmt(r['smape'], 4)} |"
                for r in t["paired"]
            ]
            out.append("")
        if t.get("issue46"):
            out += [
                f"Issue 46 on {d}: each method minus ETS + MinT and minus seasonal naive (same seed; negative: the method better):",
                "",
                "| method | minus | seeds | mean WAPE | mean SMAPE |",
                "|---|---|---|---|---|",
            ]
            out += [
                f"| {r.get('method', 'hired')} | {r['minus']} | {r['seeds']} | {fmt(r['wape'], 4)} | {fmt(r['smape'], 4)} |"
                for r in t["issue46"]
            ]
            out.append("")
        chosen = {m: c for m, c in t.get("selected", {}).items() if c}
        if chosen:
            out += [
                "Chosen on validation (seeds): "
                + "; ".join(
                    f"{m}: " + ", ".join(f"{k} {v}" for k, v in c) for m, c in chosen.items()
                ),
                "",
            ]
        if t.get("warnings"):
            out += [
                f"Fits worse than seasonal naive on validation ({len(t['warnings'])}): "
                + "; ".join(t["warnings"]),
                "",
            ]
        if d in result["alpha"]:
            out += [
                f"Level weighting on {d} (HiReD, eq. 6.6):",
                "",
                "| alpha | seeds | top-level WAPE | mean WAPE | mean SMAPE |",
                "|---|---|---|---|---|",
            ]
            out += [
                f"| {r['alpha']} | {r['seeds']} | {fmt(r['wape_level0'])} | {fmt(r['wape'])} | {fmt(r['smape'])} |"
                for r in result["alpha"][d]
            ]
            out.append("")
        out += [f"![forecasts {d}](forecasts_{d}.png)", ""]
    if result["cost"]:
        out += [
            "## Cost (one fit, CPU)",
            "",
            "| data set | torch threads | fit s | epochs | windows / s |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {c['dataset']} | {c['threads']} | {c['fit_seconds']:.1f} | {c['epochs']} | {c['windows_per_second']:.1f} |"
            for c in result["cost"]
        ]
        out.append("")
    out += ["## Pass marks (issue 18)", "", *[f"- {line}" for line in result["pass_marks"]], ""]
    if result.get("issue46"):
        out += ["## Goals (issue 46)", "", *[f"- {line}" for line in result["issue46"]], ""]
    path.write_text("\n".join(out))


def plot_forecasts(
    runs: list[dict[str, Any]],
    dataset: str,
    root: str | None,
    smoke: bool,
    out: Path,
    data: dict[str, str] | None = None,
) -> None:
    """Test-window forecasts of HiReD and the RNN (seed 0) against the data, two nodes per level."""
    mine = {
        r["method"]: r["forecasts"] for r in runs if r["dataset"] == dataset and r.get("forecasts")
    }
    if "hired" not in mine:
        return
    dm = datamodule({"dataset": dataset, "smoke": smoke, "seed": 0, "data": data}, root)
    nodes = sorted(
        mine["hired"]["nodes"], key=lambda n: (mine["hired"]["nodes"][n]["level"], int(n))
    )
    cols = 2
    rows = math.ceil(len(nodes) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(10, 2.4 * rows), squeeze=False)
    for ax, node in zip(axes.flat, nodes, strict=False):
        info = mine["hired"]["nodes"][node]
        lo = max(0, min(info["t"]) - 3 * dm.horizon)
        ax.plot(range(lo, dm.num_steps), dm.Y[lo:, int(node)], color="black", lw=1, label="data")
        for method, color in (("hired", "C0"), ("rnn", "C1")):
            if method in mine and node in mine[method]["nodes"]:
                f = mine[method]["nodes"][node]
                order = np.argsort(f["t"])
                ax.plot(
                    np.asarray(f["t"])[order],
                    np.asarray(f["forecast"])[order],
                    "o-",
                    ms=2,
                    color=color,
                    label=method,
                )
        ax.set_title(f"L{info['level']}: {info['name']}", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(nodes) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"forecasts_{dataset}.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--datasets", nargs="*", default=None, choices=list(DATASETS))
    parser.add_argument(
        "--parts", nargs="*", default=["main", "alpha", "cost"], choices=["main", "alpha", "cost"]
    )
    parser.add_argument("--methods", nargs="*", default=None, choices=list(ROWS))
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: write the report of the runs recorded in --out",
    )
    parser.add_argument(
        "--cache",
        default=None,
        help="folder of the cached ETS forecasts (default: <tmp>/dsbo-hired-ets)",
    )
    parser.add_argument(
        "--data-root",
        default=None,
        help="folder with the data sets (default $DSBO_DATA; docs/data.md)",
    )
    parser.add_argument(
        "--data",
        nargs="+",
        action="extend",
        default=None,
        metavar="NAME=PATH",
        help=f"other hierarchies (HierE2E layout: data.csv, agg_mat.csv, tags.csv) or synthetic sets "
        f"({', '.join(SYNTHETIC_SETS)}); settings derived from the data",
    )
    parser.add_argument("--workers", type=int, default=2)
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    seeds = args.seeds or (1 if args.smoke else 3)
    custom = parse_data(args.data)
    if args.smoke:
        datasets = list(custom) or ["synthetic"]
    else:
        datasets = [
            *(args.datasets if args.datasets is not None else ([] if custom else DATASETS)),
            *custom,
        ]
    if not args.smoke and any(d in DATASETS for d in datasets):
        data_root(args.data_root)  # a ConfigError saying what to do, before any job starts
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = jobs_for(args.parts, datasets, seeds, args.smoke, args.data_root, custom, args.cache)
    if args.methods:
        wanted = {JOB_OF.get(m, m) for m in args.methods}
        for m in set(args.methods) & set(SELECTED):
            wanted |= {JOB_OF.get(c, c) for c in SELECTED[m]}
        jobs = [j for j in jobs if j["method"] in wanted]
    if not args.report_only:
        run_resumable(
            run_job,
            [j for j in jobs if j["part"] != "cost"],
            args.out,
            args.workers,
            key_fields=KEY,
        )
        # the cost part times one fit at a time, alone
        run_resumable(
            run_job, [j for j in jobs if j["part"] == "cost"], args.out, 1, key_fields=KEY
        )
    # the report covers every run recorded (other methods, seeds and data sets too), not only this call's
    runs = recorded_runs(args.out, args.smoke)
    recorded = list(dict.fromkeys(r["dataset"] for r in runs))
    result = summarize(
        runs,
        [*[d for d in DATASETS if d in recorded], *[d for d in recorded if d not in DATASETS]],
        args.smoke,
    )
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    for d in [] if args.report_only else datasets:
        plot_forecasts(runs, d, args.data_root, args.smoke, args.out, custom.get(d))
    return result


if __name__ == "__main__":
    main()
