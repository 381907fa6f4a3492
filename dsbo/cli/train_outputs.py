"""What ``python -m dsbo.train`` derives and writes around its subcommands: the model settings
that follow from the data module (:func:`derive_model_settings`), what a fit concludes about a
node forecaster against seasonal naive (:func:`fit_warnings`, :func:`floor_choice`), and what
``predict`` writes,
``predictions.csv`` in raw units (observations) or one row per node and forecast step (node
forecasters such as HiReD)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from dsbo.data import ObservationDataModule
from dsbo.errors import ConfigError

#: Logged by a node forecaster next to ``val_wape``: the seasonal naive forecasts' validation WAPE.
SNAIVE_METRIC = "val_wape_seasonal_naive"


def derive_model_settings(cfg: Any) -> dict[str, int]:
    """Set the model's arguments that follow from the data module (its ``model_settings()``:
    HierarchicalDataModule's history, horizon, num_nodes, num_representatives) in the parsed
    config ``cfg`` (``data`` and ``model`` as ``class_path``/``init_args``), for every one the
    model class accepts: a model value left at the class default (or equal to the data's) takes
    the data's; one set to something else is a :class:`~dsbo.errors.ConfigError` naming both.
    The data module is built here to learn its settings (its own errors surface, one line).
    Returns what was set (empty when the data module has no ``model_settings``)."""
    data, model = cfg.get("data"), cfg.get("model")
    data_path = getattr(data, "class_path", None) if data is not None else None
    model_path = getattr(model, "class_path", None) if model is not None else None
    if not data_path or not model_path:
        return {}
    module, _, name = str(data_path).rpartition(".")
    data_cls = getattr(importlib.import_module(module), name)
    if not callable(getattr(data_cls, "model_settings", None)):
        return {}
    init = data.get("init_args")
    dm = data_cls(**(init.as_dict() if hasattr(init, "as_dict") else dict(init or {})))
    module, _, name = str(model_path).rpartition(".")
    params = inspect.signature(getattr(importlib.import_module(module), name)).parameters
    args = model.get("init_args")
    derived = {}
    for key, value in dm.model_settings().items():
        if key not in params:
            continue
        given = args.get(key) if args is not None else None
        if given is not None and given != value and given != params[key].default:
            raise ConfigError(
                f"model.init_args.{key}={given} but the data module has {key} {value}: the model's {key} follows "
                f"the data; drop it from the model's settings (or set the data's, e.g. data.init_args.{key})"
            )
        args[key] = value
        derived[key] = value
    return derived


def write_node_forecasts(outputs: Sequence[dict[str, Tensor]], datamodule: Any, path: Path) -> Path:
    """Write the ``predict`` outputs of a node forecaster (dicts with ``nodes`` ``B`` and
    ``forecast`` ``B x F`` in original units; optional ``t_fut`` ``F``, the data's step index of
    each forecast step, and ``target`` ``B x F``) as a CSV with one row per node and step:
    ``node`` (its name from ``datamodule.hierarchy.node_names``, else its index), ``step``
    (``1..F``), ``t`` (with ``t_fut``), ``forecast`` and ``target`` (when given)."""
    names = getattr(getattr(datamodule, "hierarchy", None), "node_names", None)
    frames = []
    for out in outputs:
        forecast = out["forecast"].detach().cpu().double()
        B, F = forecast.shape
        nodes = out["nodes"].detach().cpu().long().repeat_interleave(F)
        frame: dict[str, Any] = {
            "node": [names[i] for i in nodes.tolist()] if names is not None else nodes.numpy()
        }
        frame["step"] = torch.arange(1, F + 1).repeat(B).numpy()
        if "t_fut" in out:
            frame["t"] = (
                out["t_fut"].detach().cpu().long().reshape(-1, F).expand(B, F).reshape(-1).numpy()
            )
        frame["forecast"] = forecast.reshape(-1).numpy()
        if "target" in out:
            frame["target"] = out["target"].detach().cpu().double().reshape(-1).numpy()
        frames.append(pd.DataFrame(frame))
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)
    return path


def write_predictions(outputs: Any, datamodule: Any, path: Path) -> Path | None:
    """Write ``predict`` outputs (dicts of ``index``/``mean``/``std`` or tensors ``members x n``
    or ``n``, in standardized units) as a CSV in raw units next to the inputs and target; node
    forecasts (dicts with ``nodes`` and ``forecast``) go through :func:`write_node_forecasts`.
    Returns the path, or ``None`` when the outputs are of another kind."""
    if outputs and all(isinstance(o, dict) and "nodes" in o and "forecast" in o for o in outputs):
        return write_node_forecasts(outputs, datamodule, path)
    if not isinstance(datamodule, ObservationDataModule) or not outputs:
        return None
    means, stds = [], []
    for out in outputs:
        if isinstance(out, dict) and "mean" in out:
            means.append(out["mean"].detach().cpu().double())
            stds.append(out.get("std", torch.zeros_like(out["mean"])).detach().cpu().double())
        elif isinstance(out, Tensor) and out.ndim in (1, 2):
            draws = out.detach().cpu().double().reshape(-1, out.shape[-1])
            means.append(draws.mean(dim=0))
            stds.append(
                draws.std(dim=0)
                if draws.shape[0] > 1
                else torch.zeros(draws.shape[1], dtype=torch.double)
            )
        else:
            return None
    mean, std = torch.cat(means), torch.cat(stds)
    X, y = datamodule.raw_data("all")
    if len(mean) != len(y):
        return None
    frame = pd.DataFrame(X.numpy(), columns=datamodule.inputs)
    frame[datamodule.target] = y.numpy()
    frame["pred_mean"] = datamodule.untransform_y(mean).numpy()
    frame["pred_std"] = (std * datamodule.y_std).numpy()
    frame.to_csv(path, index=False)
    return path


def fit_warnings(summary: dict[str, Any], model: Any = None) -> list[str]:
    """Warnings about a fit's ``summary``: a best ``val_wape`` (``best_val_wape``, else the last
    ``val_wape``) worse than the seasonal naive forecasts' (:data:`SNAIVE_METRIC`); the message is
    the zoo's ``seasonal_naive_warning`` (``experiments/hired.py`` prints the same)."""
    from dsbo_zoo.hierarchical_forecaster import seasonal_naive_warning

    found = seasonal_naive_warning(
        summary.get("best_val_wape", summary.get("val_wape")),
        summary.get(SNAIVE_METRIC),
        bool(getattr(model, "uses_seasonal_naive", False)),
    )
    return [found] if found else []


def floor_choice(model: Any, metrics: dict[str, float], checkpoint: Any) -> dict[str, Any]:
    """For a model that can keep its seasonal-naive floor (``keep_floor``; HiReD with the
    residual): keep it when the best epoch's ``val_wape`` (the ``checkpoint`` callback's best
    score when it monitors ``val_wape``, else the last) is not below :data:`SNAIVE_METRIC`, and
    say which was selected (``selected``: ``seasonal_naive`` or ``trained``, with both values);
    ``{}`` for other models or without the two values."""
    keep = getattr(model, "keep_floor", None)
    if not callable(keep) or not getattr(model, "uses_seasonal_naive", False):
        return {}
    from dsbo_zoo.hierarchical_forecaster import SEASONAL_NAIVE

    score, snaive = metrics.get("val_wape"), metrics.get(SNAIVE_METRIC)
    if (
        checkpoint is not None
        and checkpoint.monitor == "val_wape"
        and checkpoint.best_model_score is not None
    ):
        score = float(checkpoint.best_model_score)
    if score is None or snaive is None:
        return {}
    if score >= snaive:
        keep()
    return {
        "selected": SEASONAL_NAIVE if score >= snaive else "trained",
        "best_val_wape": score,
        SNAIVE_METRIC: snaive,
    }


__all__ = [
    "SNAIVE_METRIC",
    "derive_model_settings",
    "fit_warnings",
    "floor_choice",
    "write_node_forecasts",
    "write_predictions",
]
