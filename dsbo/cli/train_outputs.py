"""What ``python -m dsbo.train predict`` writes: ``predictions.csv`` in raw units (observations)
or one row per node and forecast step (node forecasters such as HiReD)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from dsbo.data import ObservationDataModule


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
        frame: dict[str, Any] = {"node": [names[i] for i in nodes.tolist()] if names is not None else nodes.numpy()}
        frame["step"] = torch.arange(1, F + 1).repeat(B).numpy()
        if "t_fut" in out:
            frame["t"] = out["t_fut"].detach().cpu().long().reshape(-1, F).expand(B, F).reshape(-1).numpy()
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
            stds.append(draws.std(dim=0) if draws.shape[0] > 1 else torch.zeros(draws.shape[1], dtype=torch.double))
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


__all__ = ["write_node_forecasts", "write_predictions"]
