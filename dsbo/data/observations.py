r"""BO observations as a LightningDataModule: ``(x, y, index)`` batches for the zoo models.

The observations come either from a CSV table (one row per evaluated configuration) or from
samples of a registered problem (:func:`dsbo.problems.get_problem`). Either way the module

- maps the inputs to the unit cube, :math:`x' = (x - l) / (u - l)`, with the bounds ``l, u``
  of the problem, the ``bounds`` given, or (CSV without ``bounds``) the range of the data;
- standardizes the target, :math:`y' = (y - \mu) / \sigma`, with the mean and the unbiased
  standard deviation of the *training* rows (what BoTorch's ``Standardize`` computes), in the
  maximization sense: ``minimize=True`` negates a CSV target once, here; problems already are
  in the maximization sense (BoTorch maximizes, so dsbo negates a minimization problem once,
  at the problem boundary, and works in the maximization sense everywhere else);
- splits the rows into train / val / test with a seeded permutation and yields batches
  ``(x, y, index)``: ``x`` is ``n x d``, ``y`` is ``n`` and ``index`` (long) is each point's row
  in its split (the training set for ``train_dataloader``).

Rows with a missing or non-finite value in an input or the target are dropped with a warning
(``nan_policy="drop"``, the default: a failed evaluation is data to exclude, not a crash) or
rejected (``nan_policy="error"``). Every other problem with the data raises
:class:`~dsbo.errors.DataError` or :class:`~dsbo.errors.ConfigError` naming the field at fault.

The bounds and the target's mean and standard deviation are the module's ``state_dict``, which
Lightning stores in every checkpoint; :func:`dsbo.surrogates.checkpoint.load_surrogate` rebuilds
BoTorch's ``Normalize`` / ``Standardize`` from it.

Example:
    >>> dm = ObservationDataModule(problem="branin", num_samples=64, seed=0)
    >>> dm.in_dim
    2
    >>> x, y, index = next(iter(dm.train_dataloader()))
    >>> x.shape, y.shape, index.dtype
    (torch.Size([52, 2]), torch.Size([52]), torch.int64)
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, TensorDataset

from dsbo.errors import ConfigError, DataError

#: Splits a datamodule serves; ``"all"`` is every usable row in file (or sample) order.
SPLITS = ("train", "val", "test", "all")
SAMPLING = ("sobol", "uniform")
NAN_POLICIES = ("drop", "error")
#: Fewest training rows a standardized target needs (mean and standard deviation).
MIN_TRAIN_ROWS = 2
#: Keys of :meth:`ObservationDataModule.state_dict`.
STATE_KEYS = ("inputs", "target", "minimize", "bounds", "y_mean", "y_std", "num_train")


class ObservationDataModule(pl.LightningDataModule):
    """BO observations from a CSV file or from samples of a registered problem.

    Args:
        csv_path: A CSV file with a header row (exclusive with ``problem``).
        target: The CSV column to model (required with ``csv_path``).
        inputs: The CSV input columns (default: every column but ``target``).
        minimize: The CSV target is to be minimized: negate it (BoTorch maximizes).
        bounds: ``2 x d`` lower and upper bounds of the inputs, ``[[l_1, ...], [u_1, ...]]``
            (CSV only; default: the range of the data).
        problem: A registered problem name, e.g. ``"branin"`` (exclusive with ``csv_path``).
        problem_options: Options of the problem factory, e.g. ``{"target": "zero"}``.
        objective: The problem objective to model (default: its only objective).
        num_samples: How many points of the problem to sample.
        noise_std: Observation noise of the problem samples (default: the problem's own).
        sampling: ``"sobol"`` (scrambled Sobol points) or ``"uniform"``.
        val_fraction: Fraction of the rows held out for validation.
        test_fraction: Fraction of the rows held out for testing.
        batch_size: Training batch size; ``None`` trains on the full training set each step.
        seed: Seeds the samples, their noise, the split and the shuffling.
        nan_policy: ``"drop"`` rows with missing/non-finite values (with a warning) or raise
            (``"error"``).
    """

    def __init__(
        self,
        csv_path: str | None = None,
        target: str | None = None,
        inputs: list[str] | None = None,
        minimize: bool = False,
        bounds: list[list[float]] | None = None,
        problem: str | None = None,
        problem_options: dict[str, Any] | None = None,
        objective: str | None = None,
        num_samples: int = 200,
        noise_std: float | None = None,
        sampling: Literal["sobol", "uniform"] = "sobol",
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        batch_size: int | None = None,
        seed: int = 0,
        nan_policy: Literal["drop", "error"] = "drop",
    ) -> None:
        super().__init__()
        # Not merged into the logger's hparams: Lightning refuses a key the model shares with a
        # different value (SimpleSMB's num_samples); dsbo.train logs them under "data".
        self.save_hyperparameters(logger=False)
        if (csv_path is None) == (problem is None):
            raise ConfigError(
                "data: set exactly one of csv_path (a CSV file) or problem (a registered problem name)"
            )
        _check_fraction("val_fraction", val_fraction)
        _check_fraction("test_fraction", test_fraction)
        if val_fraction + test_fraction >= 1:
            raise ConfigError(
                f"val_fraction + test_fraction = {val_fraction + test_fraction:g} must be < 1 "
                "(no rows would be left for training)"
            )
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ConfigError(
                f"batch_size={batch_size!r} must be an integer >= 1 or None (full batch)"
            )
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"seed={seed!r} must be an integer")
        if nan_policy not in NAN_POLICIES:
            raise ConfigError(f"nan_policy={nan_policy!r} must be one of {NAN_POLICIES}")
        self.batch_size = batch_size
        self.seed = seed
        self.minimize = bool(minimize)

        if csv_path is not None:
            for name, value in (
                ("problem_options", problem_options),
                ("objective", objective),
                ("noise_std", noise_std),
            ):
                if value is not None:
                    raise ConfigError(
                        f"{name} applies to problem samples, not to csv_path={csv_path!r}"
                    )
            X, y, self.inputs, self.target = _read_csv(csv_path, target, inputs, nan_policy)
            if self.minimize:
                y = -y
        else:
            if minimize:
                raise ConfigError(
                    "minimize applies to a CSV target; problems are already in the maximization sense"
                )
            if bounds is not None:
                raise ConfigError(
                    f"bounds: problem {problem!r} has its own bounds; set bounds only with csv_path"
                )
            if inputs is not None or target is not None:
                raise ConfigError(
                    "inputs and target name CSV columns; with a problem use objective"
                )
            X, y, self.inputs, self.target, problem_bounds = _sample_problem(
                problem, problem_options or {}, objective, num_samples, noise_std, sampling, seed
            )
            bounds = problem_bounds.tolist()
        self.X_raw: Tensor = X
        self.y_raw: Tensor = y

        self.split_index = _split(len(y), val_fraction, test_fraction, seed)
        n_train = len(self.split_index["train"])
        if n_train < MIN_TRAIN_ROWS:
            raise DataError(
                f"{self._source()}: only {len(y)} usable row(s), {n_train} left for training after "
                f"val_fraction={val_fraction:g} and test_fraction={test_fraction:g}; "
                f"need at least {MIN_TRAIN_ROWS} training rows"
            )
        self.bounds: Tensor = _resolve_bounds(bounds, X, self.inputs, self._source())
        y_train = y[self.split_index["train"]]
        self.y_mean = float(y_train.mean())
        self.y_std = float(y_train.std())
        if not self.y_std > 0:
            warnings.warn(
                f"{self._source()}: target {self.target!r} is constant on the training rows; "
                "it is only centred (y_std = 1)",
                stacklevel=2,
            )
            self.y_std = 1.0

    # ------------------------------------------------------------------ facts
    @property
    def in_dim(self) -> int:
        """Input dimension ``d`` (what the zoo models take as ``in_dim``)."""
        return len(self.inputs)

    def _source(self) -> str:
        hp = self.hparams
        return f"csv_path={hp.csv_path!r}" if hp.csv_path is not None else f"problem={hp.problem!r}"

    # ------------------------------------------------------------------ transforms
    def transform_x(self, X: Tensor) -> Tensor:
        """Raw inputs ``... x d`` to the unit cube."""
        lb, ub = self.bounds.to(X)
        return (X - lb) / (ub - lb)

    def transform_y(self, y: Tensor) -> Tensor:
        """Raw targets (maximization sense) to standardized units."""
        return (y - self.y_mean) / self.y_std

    def untransform_y(self, y: Tensor) -> Tensor:
        """Standardized targets back to raw units (maximization sense)."""
        return y * self.y_std + self.y_mean

    def raw_data(self, split: str = "train") -> tuple[Tensor, Tensor]:
        """Raw inputs ``n x d`` and targets ``n`` (float64, maximization sense) of ``split``."""
        index = self._index(split)
        return self.X_raw[index], self.y_raw[index]

    def _index(self, split: str) -> Tensor:
        if split == "all":
            return torch.arange(len(self.y_raw))
        if split not in self.split_index:
            raise ConfigError(f"split={split!r} must be one of {SPLITS}")
        return self.split_index[split]

    # ------------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        needed = {"validate": ("val", "val_fraction"), "test": ("test", "test_fraction")}.get(stage)
        if needed is not None and len(self.split_index[needed[0]]) == 0:
            raise ConfigError(
                f"{stage} needs a {needed[0]} split but {needed[1]}={self.hparams[needed[1]]:g} "
                f"leaves it empty: set data.{needed[1]} > 0"
            )

    def dataset(self, split: str) -> TensorDataset:
        """``(x, y, index)`` tensors of ``split`` in the default dtype; ``index`` numbers the
        rows of the split (of the cleaned table for ``"all"``)."""
        index = self._index(split)
        dtype = torch.get_default_dtype()
        x = self.transform_x(self.X_raw[index]).to(dtype)
        y = self.transform_y(self.y_raw[index]).to(dtype)
        return TensorDataset(x, y, torch.arange(len(index)))

    def _loader(self, split: str, shuffle: bool) -> DataLoader | list:
        data = self.dataset(split)
        if len(data) == 0:
            return []
        batch_size = self.batch_size or len(data)
        generator = torch.Generator().manual_seed(self.seed) if shuffle else None
        return DataLoader(
            data,
            batch_size=batch_size,
            shuffle=shuffle and batch_size < len(data),
            generator=generator,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader | list:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader | list:
        return self._loader("test", shuffle=False)

    def predict_dataloader(self) -> DataLoader:
        """Every usable row in file (or sample) order; ``index`` is the row number."""
        return self._loader("all", shuffle=False)

    # ------------------------------------------------------------------ checkpoint state
    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint needs to rebuild the transforms: plain Python values only, so
        checkpoints load with ``weights_only=True``."""
        return {
            "inputs": list(self.inputs),
            "target": self.target,
            "minimize": self.minimize,
            "bounds": self.bounds.tolist(),
            "y_mean": self.y_mean,
            "y_std": self.y_std,
            "num_train": len(self.split_index["train"]),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the transforms a checkpoint was trained with (resuming must not re-scale)."""
        check_state(state_dict)
        if list(state_dict["inputs"]) != list(self.inputs):
            raise DataError(
                f"the checkpoint was trained on inputs {list(state_dict['inputs'])}, "
                f"this datamodule has {list(self.inputs)}"
            )
        self.bounds = torch.tensor(state_dict["bounds"], dtype=torch.double)
        self.y_mean = float(state_dict["y_mean"])
        self.y_std = float(state_dict["y_std"])


def check_state(state: Any) -> dict[str, Any]:
    """Check a saved :meth:`ObservationDataModule.state_dict`; raise DataError naming the key."""
    if not isinstance(state, dict):
        raise DataError(f"datamodule state must be a dict, got {type(state).__name__}")
    missing = [k for k in STATE_KEYS if k not in state]
    if missing:
        raise DataError(f"datamodule state lacks {missing} (has {sorted(state)})")
    bounds = torch.as_tensor(state["bounds"], dtype=torch.double)
    d = len(state["inputs"])
    if bounds.shape != (2, d) or not bool((bounds[1] > bounds[0]).all()):
        raise DataError(
            f"datamodule state: bounds must be 2 x {d} with lower < upper, got {state['bounds']}"
        )
    if not (
        math.isfinite(state["y_mean"]) and math.isfinite(state["y_std"]) and state["y_std"] > 0
    ):
        raise DataError(
            f"datamodule state: y_mean={state['y_mean']} and y_std={state['y_std']} must be finite, y_std > 0"
        )
    return state


# ---------------------------------------------------------------------- helpers
def _check_fraction(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ConfigError(f"{name}={value!r} must be a number in [0, 1)")


def _read_csv(
    csv_path: str, target: str | None, inputs: list[str] | None, nan_policy: str
) -> tuple[Tensor, Tensor, list[str], str]:
    path = Path(csv_path)
    if not path.is_file():
        raise DataError(f"csv_path={csv_path!r}: no such file")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"csv_path={csv_path!r}: not a readable CSV table ({exc})") from None
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    if target is None:
        raise ConfigError(
            f"target: required with csv_path={csv_path!r}; one of the columns {columns}"
        )
    if target not in columns:
        raise DataError(f"target={target!r} is not a column of {csv_path!r} (columns: {columns})")
    if inputs is None:
        inputs = [c for c in columns if c != target]
    inputs = [str(c) for c in inputs]
    if not inputs:
        raise ConfigError(f"inputs: no input columns in {csv_path!r} besides target={target!r}")
    missing = [c for c in inputs if c not in columns]
    if missing:
        raise DataError(f"inputs {missing} are not columns of {csv_path!r} (columns: {columns})")
    if target in inputs:
        raise ConfigError(f"inputs must not contain the target column {target!r}")
    if len(set(inputs)) != len(inputs):
        raise ConfigError(f"inputs {inputs} name a column twice")

    numeric = {}
    for column in [*inputs, target]:
        raw = frame[column]
        values = pd.to_numeric(raw, errors="coerce")
        bad = values.isna() & raw.notna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            field = "target" if column == target else "inputs"
            raise DataError(
                f"{field}: column {column!r} of {csv_path!r} is not numeric: row {row} "
                f"(line {row + 2}) holds {raw.iloc[row]!r}"
            )
        numeric[column] = values.to_numpy(dtype=float)
    table = torch.from_numpy(np.stack([numeric[c] for c in [*inputs, target]], axis=1)).to(
        torch.double
    )
    finite = torch.isfinite(table)
    bad_rows = (~finite.all(dim=1)).nonzero().flatten().tolist()
    if bad_rows:
        names = [*inputs, target]
        bad_columns = sorted({names[j] for j in (~finite[bad_rows]).nonzero()[:, 1].tolist()})
        shown = ", ".join(str(r) for r in bad_rows[:10]) + (" ..." if len(bad_rows) > 10 else "")
        message = (
            f"csv_path={csv_path!r}: {len(bad_rows)} of {len(table)} row(s) have missing or non-finite "
            f"values in {bad_columns} (rows {shown})"
        )
        if nan_policy == "error":
            raise DataError(message + "; fix the file or set nan_policy='drop'")
        warnings.warn(message + "; dropped them (nan_policy='drop')", stacklevel=3)
        table = table[finite.all(dim=1)]
    return table[:, :-1].contiguous(), table[:, -1].contiguous(), inputs, target


def _sample_problem(
    name: str,
    options: dict[str, Any],
    objective: str | None,
    num_samples: int,
    noise_std: float | None,
    sampling: str,
    seed: int,
) -> tuple[Tensor, Tensor, list[str], str, Tensor]:
    from dsbo.problems import get_problem

    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ConfigError(f"num_samples={num_samples!r} must be an integer >= 1")
    if sampling not in SAMPLING:
        raise ConfigError(f"sampling={sampling!r} must be one of {SAMPLING}")
    if not isinstance(options, dict):
        raise ConfigError(f"problem_options must be a mapping, got {options!r}")
    options = dict(options)
    if noise_std is not None:
        if "noise_std" in options:
            raise ConfigError("noise_std is set twice: as noise_std and in problem_options")
        options["noise_std"] = noise_std
    problem = get_problem(name, **options)
    if objective is None:
        if problem.num_objectives > 1:
            raise ConfigError(
                f"problem {name!r} has {problem.num_objectives} objectives {problem.objective_names}: "
                "set objective to the one to model"
            )
        objective = problem.objective_names[0]
    if objective not in problem.objective_names:
        raise ConfigError(
            f"objective={objective!r} is not an objective of {name!r} ({problem.objective_names})"
        )
    d = problem.dim
    if sampling == "sobol":
        unit = torch.quasirandom.SobolEngine(d, scramble=True, seed=seed).draw(
            num_samples, dtype=torch.double
        )
    else:
        unit = torch.rand(
            num_samples, d, generator=torch.Generator().manual_seed(seed), dtype=torch.double
        )
    lb, ub = problem.bounds
    X = problem.round_to_domain(lb + (ub - lb) * unit)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        Y = problem.evaluate(X, noise=problem.noise_std is not None)
    y = Y[:, problem.objective_names.index(objective)]
    if not torch.isfinite(y).all():
        raise DataError(f"problem={name!r}: objective {objective!r} is not finite at some samples")
    return X, y.contiguous(), list(problem.parameter_names), objective, problem.bounds


def _split(n: int, val_fraction: float, test_fraction: float, seed: int) -> dict[str, Tensor]:
    """Seeded train/val/test row indices; a positive fraction always gets at least one row."""

    def size(fraction: float) -> int:
        return 0 if fraction == 0 else max(1, round(fraction * n))

    n_val, n_test = size(val_fraction), size(test_fraction)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    n_train = max(n - n_val - n_test, 0)
    return {
        "train": perm[:n_train].sort().values,
        "val": perm[n_train : n_train + n_val].sort().values,
        "test": perm[n_train + n_val :].sort().values,
    }


def _resolve_bounds(bounds: Any, X: Tensor, inputs: list[str], source: str) -> Tensor:
    d = len(inputs)
    if bounds is None:
        lb, ub = X.min(dim=0).values, X.max(dim=0).values
        flat = (ub <= lb).nonzero().flatten().tolist()
        if flat:
            names = [inputs[j] for j in flat]
            raise ConfigError(
                f"{source}: inputs {names} are constant, so the data range cannot scale them: "
                "give bounds or leave these columns out of inputs"
            )
        return torch.stack([lb, ub])
    try:
        B = torch.as_tensor(bounds, dtype=torch.double)
    except (TypeError, ValueError):
        raise ConfigError(
            f"bounds={bounds!r} must be 2 x {d} numbers [[lower...], [upper...]]"
        ) from None
    if B.shape != (2, d):
        raise ConfigError(
            f"bounds must be 2 x {d} (lower and upper row for inputs {inputs}), got shape {tuple(B.shape)}"
        )
    if not torch.isfinite(B).all() or not bool((B[1] > B[0]).all()):
        raise ConfigError(f"bounds={bounds!r} must be finite with lower < upper in every column")
    outside = (X < B[0]) | (X > B[1])
    if outside.any():
        i, j = outside.nonzero()[0].tolist()
        raise DataError(
            f"{source}: row {i} has {inputs[j]}={X[i, j].item():g} outside the bounds "
            f"[{B[0, j].item():g}, {B[1, j].item():g}]"
        )
    return B
