r"""Windows of hierarchical time series for HiReD (Paria thesis, ch. 6): the LightningDataModule.

:class:`HierarchicalDataModule` reads or generates a hierarchy with its data, scales it, splits
it into training, validation and test ranges and serves windows of it as ready batches. Its
pieces are modules of their own, and their names are importable from here too:

- :mod:`dsbo.data.hierarchy`: the :class:`~dsbo.data.hierarchy.Hierarchy` given by its summing
  matrix :math:`S` (depths, reporting levels, the pairs of the regularizer eq. 6.4, the
  coherence check) and the :class:`~dsbo.data.hierarchy.HierarchicalSeries` (a hierarchy with
  its data);
- :mod:`dsbo.data.hierarchical_io`: reading and writing the HierE2E layout
  (:func:`~dsbo.data.hierarchical_io.read_hierarchical`,
  :func:`~dsbo.data.hierarchical_io.write_hierarchical`);
- :mod:`dsbo.data.synthetic_hierarchies`: exactly coherent synthetic hierarchies (section 6.6);
- :mod:`dsbo.data.dates`: the frequency of the dates and the calendar covariates
  derived from it;
- :mod:`dsbo.data.separable_nmf`: the representative series (separable NMF);
- :mod:`dsbo.data.hierarchical_arguments`: the module's arguments and where its data come from;
- :mod:`dsbo.data.hierarchical_defaults`: the history, horizon and windows of each data set;
- :mod:`dsbo.data.hierarchical_windows`: the datasets that serve windows, and the
  level-weighted node sampling.

**Scaling** (section 6.3 and 6.8.1): node :math:`i` is divided by its leaf count, so coherent data
satisfy the *mean* property eq. 6.1, and every value by one global :math:`\sigma`, the standard
deviation of those leaf-count-scaled values over the training range (all nodes and steps). The
thesis also centres the data ("standardized to mean zero"); here it is not centred, so that one
multiplicative ``scale = |L(i)| * sigma`` per node brings a scaled value back to original units
(the batch contract), and a global shift would not change the mean property anyway.

**Windows** (table 6.5, section 6.8.1): with history :math:`H` and horizon :math:`F`, the last
``test_windows * F`` steps are the test range, the ``val_windows * F`` steps before them the
validation range, the rest the training range. Validation and test windows roll by :math:`F`
(their forecast steps tile their range; their history may reach back into earlier ranges, as
inputs only). Training windows (length :math:`H + F`) lie entirely inside the training range,
so no validation or test value is ever a training input or target, and no test value is a
validation input or target. A training window's origin :math:`s` (its first forecast step)
is at least :math:`\max(H, m)`, so that its seasonal naive forecast (below) has a full season
before it; with :math:`H \ge m` that is every window that fits.

**Seasonal naive forecast** (``y_snaive``, every batch of every split, also
``predict_split="future"``): :math:`\hat y_{s+h} = y_{s - m + (h \bmod m)}` from the window's
origin :math:`s` with the data's season :math:`m` (``season``; default from the frequency:
:data:`~dsbo.data.hierarchical_settings.SEASONS`), in the same scaled units as ``y_fut``: the
forecast of :func:`dsbo.analysis.forecast_baselines.seasonal_naive` divided by ``scale``. It
uses only values before :math:`s`, so it is an input (a residual base for a model), never a
leak.

**Representatives** (section 6.4 "Summary vector", 6.8.2): :math:`R` series chosen by separable
NMF (:func:`successive_projection`, Gillis & Vavasis 2014) on the training range of the scaled
matrix only; their histories :math:`Z_\mathcal H` go into every batch.

**Level-weighted sampling** (eq. 6.6): training batches draw nodes with probability
:math:`\pi_i \propto \alpha^{-d(i)}` (:mod:`dsbo.data.hierarchical_windows`, which also holds
the datasets that serve the windows).

**Settings per data set**: ``None`` arguments among ``history``, ``horizon``, ``val_windows``
and ``test_windows`` take the defaults of the three data sets that were run
(:data:`~dsbo.data.hierarchical_defaults.DATASET_DEFAULTS`), else settings derived from the
data's frequency and length; the module's ``settings``, ``season``, ``preset`` and
``settings_origin`` say what was chosen and why (:mod:`dsbo.data.hierarchical_defaults`). The
arguments are checked before any I/O, and the data found, by
:mod:`dsbo.data.hierarchical_arguments`.

Example:
    >>> dm = HierarchicalDataModule(synthetic={"branching": [2, 3], "num_steps": 96},
    ...                             history=12, horizon=4)
    >>> dm.num_nodes, dm.in_dim, dm.hierarchy.num_levels
    (9, 3, 3)
    >>> batch = next(iter(dm.train_dataloader()))
    >>> batch["y_hist"].shape, batch["y_fut"].shape, batch["z_hist"].shape, batch["y_snaive"].shape
    (torch.Size([9, 12]), torch.Size([9, 4]), torch.Size([12, 6]), torch.Size([9, 4]))
    >>> HierarchicalDataModule(synthetic="synthetic-daily").settings.preset
    'm5'
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader

from dsbo.data.dates import calendar_covariates, extend_dates
from dsbo.data.hierarchical_arguments import (
    PREDICT_SPLITS,
    check_arguments,
    data_folder,
    load_series,
)
from dsbo.data.hierarchical_defaults import (
    DATASET_DEFAULTS,
    PAPER_DEFAULTS,
    name_path_message,
    not_given,
    resolve_settings,
)
from dsbo.data.hierarchical_io import FILES, read_hierarchical, write_hierarchical
from dsbo.data.hierarchical_settings import DataSettings, data_settings, season_of
from dsbo.data.hierarchical_windows import FixedWindows, TrainWindows, level_weights, sample_nodes
from dsbo.data.hierarchy import COHERENCE_RTOL, HierarchicalSeries, Hierarchy
from dsbo.data.separable_nmf import successive_projection
from dsbo.data.synthetic_hierarchies import SYNTHETIC_SETS, synthetic_hierarchy
from dsbo.errors import ConfigError, DataError

#: Batch keys (every split; ``y_fut`` is absent from ``predict_split="future"`` batches).
BATCH_KEYS = (
    "y_hist",
    "y_fut",
    "nodes",
    "level",
    "scale",
    "x_hist",
    "x_fut",
    "z_hist",
    "t_fut",
    "y_snaive",
)
#: Keys of :meth:`HierarchicalDataModule.state_dict`.
STATE_KEYS = (
    "node_names",
    "global_scale",
    "representatives",
    "history",
    "horizon",
    "covariate_names",
)


class HierarchicalDataModule(pl.LightningDataModule):
    r"""Windows of a hierarchy for HiReD: one window and up to ``batch_nodes`` nodes per batch.

    The data come from a folder in the common format (``path``, or ``$DSBO_DATA/<name>``, or
    ``$DSBO_DATA/hierarchical/<name>``), or from :func:`synthetic_hierarchy` (``synthetic``: its
    keyword arguments), or from a :class:`HierarchicalSeries` (:meth:`from_series`). They are read
    and checked when the module is built (after its arguments are checked), so ``in_dim``,
    ``num_nodes`` and ``hierarchy`` are there for ``dsbo.train``'s argument links; ``setup`` has
    nothing left to do.

    Every dataloader yields ready batches (``batch_size=None``), a dict of tensors:

    - ``y_hist`` ``B x H``, ``y_fut`` ``B x F`` (float32, scaled; ``y_fut`` absent when predicting
      the steps after the data), ``nodes`` ``B`` and ``level`` ``B`` (long),
    - ``scale`` ``B`` (float32): scaled value times ``scale`` = original units
      (:math:`|\mathcal L(i)|\,\sigma`),
    - ``x_hist`` ``H x D``, ``x_fut`` ``F x D`` (float32 calendar covariates),
    - ``z_hist`` ``H x R`` (float32, scaled histories of the representatives),
    - ``t_fut`` ``F`` (long): the step index of each forecast step (``>= T`` past the data),
    - ``y_snaive`` ``B x F`` (float32, scaled like ``y_fut``): the seasonal naive forecast
      :math:`y_{s - m + (h \bmod m)}` from the window's origin :math:`s` (module docstring).

    Args:
        path: A folder with ``data.csv``, ``agg_mat.csv``, ``tags.csv``.
        name: A data set under ``$DSBO_DATA`` (used when ``path`` is None); also selects the
            :data:`DATASET_DEFAULTS` when ``path`` is None. With ``path``, the defaults follow
            ``path``'s folder name, and a different ``name`` draws a warning.
        synthetic: Keyword arguments of :func:`synthetic_hierarchy`, or the name of one of
            :data:`~dsbo.data.synthetic_hierarchies.SYNTHETIC_SETS` (exclusive with path/name).
        history: :math:`H`. horizon: :math:`F`. val_windows, test_windows: rolling windows of
            :math:`F` steps at the end of the data. ``None``: :data:`DATASET_DEFAULTS` of the
            data set, else derived from the data's frequency and length (module docstring).
        season: :math:`m` of ``y_snaive`` (default: from the data's frequency).
        batch_nodes: Most nodes per batch (512, table 6.5); evaluation chunks the nodes.
        alpha: Level weighting :math:`\alpha` of eq. 6.6 (1: uniform).
        num_representatives: :math:`R` (table 6.5, Tourism: 6).
        windows_per_epoch: Training batches per epoch (default: the number of training windows
            times :math:`\lceil N / \text{batch\_nodes} \rceil`).
        seed: Seeds the training windows and node samples.
        predict_split: ``"test"``: predict the test windows; ``"future"``: the :math:`F` steps
            after the data.
        trend: Add the linear trend covariate.
        coherence_rtol: Tolerance of the coherence check of the files.
    """

    def __init__(
        self,
        path: str | None = None,
        name: str | None = None,
        synthetic: dict[str, Any] | str | None = None,
        history: int | None = None,
        horizon: int | None = None,
        val_windows: int | None = None,
        test_windows: int | None = None,
        season: int | None = None,
        batch_nodes: int = 512,
        alpha: float = 1.0,
        num_representatives: int = 6,
        windows_per_epoch: int | None = None,
        seed: int = 0,
        predict_split: Literal["test", "future"] = "test",
        trend: bool = True,
        coherence_rtol: float = COHERENCE_RTOL,
        _series: HierarchicalSeries | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(logger=False, ignore=["_series"])
        # ---- arguments, before any I/O
        given = {
            "history": history,
            "horizon": horizon,
            "val_windows": val_windows,
            "test_windows": test_windows,
        }
        check_arguments(
            path=path,
            name=name,
            synthetic=synthetic,
            series=_series,
            windows={**given, "season": season, "windows_per_epoch": windows_per_epoch},
            batch_nodes=batch_nodes,
            num_representatives=num_representatives,
            seed=seed,
            alpha=alpha,
            predict_split=predict_split,
            coherence_rtol=coherence_rtol,
        )
        folder = data_folder(path, name)
        defaults_name = folder.name if path is not None else name
        self.batch_nodes = batch_nodes
        self.alpha = float(alpha)
        self.seed = seed
        self.predict_split = predict_split

        # ---- data
        series = load_series(folder, synthetic, _series, coherence_rtol)
        self.series = series
        self.hierarchy: Hierarchy = series.hierarchy
        self.Y: np.ndarray = series.values  # T x N, original units
        self.dates: pd.DatetimeIndex = series.dates
        num_steps, n = self.Y.shape
        self._set_settings(*resolve_settings(series, given, season, defaults_name))
        if name is not None and path is not None and name != defaults_name:
            if not_given(self.settings_origin):
                message = name_path_message(
                    name, defaults_name, self.settings, self.settings_origin
                )
                warnings.warn(message, UserWarning, stacklevel=2)
        H, F, m = self.history, self.horizon, self.season
        held_out = (self.val_windows + self.test_windows) * F
        first = max(H, m)
        if num_steps < first + F + held_out:
            if H >= m:
                what = f"history {H}"
            else:
                what = (
                    f"season {m} (> history {H}: a training window's origin needs a full "
                    "season before it)"
                )
            raise DataError(
                f"{series.source}: {num_steps} steps are too few for {what} + horizon {F} (one "
                f"training window) + {self.val_windows} validation and {self.test_windows} test "
                f"windows of {F} steps = {first + F + held_out}; shorten history (or season) or "
                "use fewer windows"
            )
        if num_representatives > n:
            raise ConfigError(
                f"HierarchicalDataModule: num_representatives={num_representatives} exceeds the "
                f"{n} nodes of {series.source}"
            )
        self.train_end = num_steps - held_out
        self.val_end = num_steps - self.test_windows * F
        self.num_steps = num_steps

        # ---- covariates over the data and the F steps after it
        all_dates = self.dates.append(extend_dates(self.dates, series.frequency, F))
        X, self.covariate_names = calendar_covariates(
            all_dates, series.frequency, num_data_steps=num_steps, trend=trend
        )
        self.X = torch.as_tensor(X, dtype=torch.float32)

        # ---- scaling (training range only)
        mean_units = self.Y / self.hierarchy.leaf_count[None, :]
        sigma = float(mean_units[: self.train_end].std())
        self.global_scale = sigma if sigma > 0 else 1.0
        self.representatives = torch.as_tensor(
            successive_projection(mean_units[: self.train_end], num_representatives),
            dtype=torch.long,
        )
        self._refresh_scaling()
        self.node_probs = torch.as_tensor(level_weights(self.hierarchy.depth, self.alpha))
        train_windows = len(self.forecast_starts("train"))
        self.windows_per_epoch = windows_per_epoch or train_windows * math.ceil(n / batch_nodes)

    def _set_settings(self, settings: DataSettings, origin: dict[str, str]) -> None:
        """``settings``, ``settings_origin`` and the attributes ``history`` ... ``season``,
        ``preset`` (:func:`~dsbo.data.hierarchical_defaults.resolve_settings`)."""
        self.settings: DataSettings = settings
        self.settings_origin: dict[str, str] = origin
        self.history, self.horizon = settings.history, settings.horizon
        self.val_windows, self.test_windows = settings.val_windows, settings.test_windows
        self.season, self.preset = settings.season, settings.preset
        self._snaive_offset = torch.arange(self.horizon) % self.season - self.season

    @classmethod
    def from_series(cls, series: HierarchicalSeries, **kwargs: Any) -> HierarchicalDataModule:
        """A datamodule over an in-memory :class:`HierarchicalSeries` (e.g. a modified synthetic one)."""
        return cls(_series=series, **kwargs)

    def _refresh_scaling(self) -> None:
        self.scale = torch.as_tensor(
            self.hierarchy.leaf_count * self.global_scale, dtype=torch.float64
        )
        self.Y_scaled = torch.as_tensor(self.Y / self.scale.numpy()[None, :], dtype=torch.float32)
        self._scale32 = self.scale.float()
        self._level = torch.as_tensor(self.hierarchy.level, dtype=torch.long)

    # ------------------------------------------------------------------ facts
    @property
    def num_nodes(self) -> int:
        return self.hierarchy.num_nodes

    @property
    def in_dim(self) -> int:
        """Number of calendar covariates ``D`` (``dsbo.train`` links it to ``model.init_args.in_dim``)."""
        return self.X.shape[1]

    def model_settings(self) -> dict[str, int]:
        """What a node forecaster must share with these windows: ``history``, ``horizon``,
        ``num_nodes`` and ``num_representatives`` (``dsbo.train`` passes them to the model's
        arguments of the same names, with ``in_dim``, so a config pointed at new data need not
        repeat them)."""
        return {
            "history": self.history,
            "horizon": self.horizon,
            "num_nodes": self.num_nodes,
            "num_representatives": len(self.representatives),
        }

    @property
    def num_levels(self) -> int:
        return self.hierarchy.num_levels

    @property
    def leaf_pairs(self) -> Tensor:
        return self.hierarchy.leaf_pairs

    def ranges(self) -> dict[str, tuple[int, int]]:
        """``[first, last + 1)`` step ranges of ``train``, ``val`` and ``test``."""
        return {
            "train": (0, self.train_end),
            "val": (self.train_end, self.val_end),
            "test": (self.val_end, self.num_steps),
        }

    def forecast_starts(self, split: str) -> list[int]:
        """First forecast step of every window of ``split`` (``train``: every valid window)."""
        H, F = self.history, self.horizon
        if split == "train":  # origins >= season: y_snaive needs a full season before them
            return list(range(max(H, self.season), self.train_end - F + 1))
        if split == "val":
            return [self.train_end + k * F for k in range(self.val_windows)]
        if split == "test":
            return [self.val_end + k * F for k in range(self.test_windows)]
        if split == "future":
            return [self.num_steps]
        raise ConfigError(f"split must be one of train, val, test, future; got {split!r}")

    def unscale(self, values: Tensor, nodes: Tensor) -> Tensor:
        """Scaled ``B x ...`` values of ``nodes`` back to original units."""
        return values * self.scale.to(values)[nodes.to(values.device)].reshape(
            (-1,) + (1,) * (values.dim() - 1)
        )

    # ------------------------------------------------------------------ batches
    def sample_nodes(self, generator: torch.Generator) -> Tensor:
        """Training nodes: a uniform subset (``alpha == 1``) or ``min(batch_nodes, N)`` draws
        from eq. 6.6 (:func:`~dsbo.data.hierarchical_windows.sample_nodes`)."""
        return sample_nodes(self.node_probs, self.batch_nodes, self.alpha, generator)

    def make_batch(self, start: int, nodes: Tensor) -> dict[str, Tensor]:
        """The batch of the window forecasting steps ``start .. start + F - 1`` for ``nodes``."""
        H, F = self.history, self.horizon
        hist = self.Y_scaled[start - H : start]
        batch = {
            "y_hist": hist[:, nodes].T.contiguous(),
            "nodes": nodes,
            "level": self._level[nodes],
            "scale": self._scale32[nodes],
            "x_hist": self.X[start - H : start],
            "x_fut": self.X[start : start + F],
            "z_hist": hist[:, self.representatives].contiguous(),
            "t_fut": torch.arange(start, start + F),
            "y_snaive": self.Y_scaled[start + self._snaive_offset][:, nodes].T.contiguous(),
        }
        if start + F <= self.num_steps:
            batch["y_fut"] = self.Y_scaled[start : start + F, nodes].T.contiguous()
        return batch

    # ------------------------------------------------------------------ Lightning
    def setup(self, stage: str | None = None) -> None:
        """Nothing to do: the data are read and checked when the module is built."""

    def train_dataloader(self) -> DataLoader:
        if not hasattr(self, "_train_windows"):
            self._train_windows = TrainWindows(self, self.windows_per_epoch)
        return DataLoader(self._train_windows, batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(FixedWindows(self, self.forecast_starts("val")), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(FixedWindows(self, self.forecast_starts("test")), batch_size=None)

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(
            FixedWindows(self, self.forecast_starts(self.predict_split)), batch_size=None
        )

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to rebuild the scaling: node names, sigma, representatives, H, F."""
        return {
            "node_names": list(self.hierarchy.node_names),
            "global_scale": self.global_scale,
            "representatives": self.representatives.tolist(),
            "history": self.history,
            "horizon": self.horizon,
            "covariate_names": list(self.covariate_names),
            "season": self.season,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        missing = [k for k in STATE_KEYS if k not in state_dict]
        if missing:
            raise DataError(f"HierarchicalDataModule state: missing keys {missing}")
        mine = {
            "node_names": list(self.hierarchy.node_names),
            "history": self.history,
            "horizon": self.horizon,
            "covariate_names": list(self.covariate_names),
        }
        for key, value in mine.items():
            if state_dict[key] != value:
                raise DataError(
                    f"HierarchicalDataModule state: the checkpoint's {key} differ from this data's"
                )
        # the season is absent from checkpoints written before y_snaive
        if state_dict.get("season", self.season) != self.season:
            raise DataError(
                f"HierarchicalDataModule state: the checkpoint's season {state_dict['season']} "
                f"differs from this data's {self.season}"
            )
        self.global_scale = float(state_dict["global_scale"])
        self.representatives = torch.as_tensor(state_dict["representatives"], dtype=torch.long)
        self._refresh_scaling()


__all__ = [
    "BATCH_KEYS",
    "COHERENCE_RTOL",
    "DATASET_DEFAULTS",
    "FILES",
    "PAPER_DEFAULTS",
    "PREDICT_SPLITS",
    "STATE_KEYS",
    "SYNTHETIC_SETS",
    "DataSettings",
    "HierarchicalDataModule",
    "HierarchicalSeries",
    "Hierarchy",
    "calendar_covariates",
    "data_settings",
    "extend_dates",
    "level_weights",
    "read_hierarchical",
    "season_of",
    "successive_projection",
    "synthetic_hierarchy",
    "write_hierarchical",
]
