r"""The input rows every learning-curve model of the zoo reads: a configuration, a step, and the
curve observed before it.

A learning-curve observation is a triple (configuration :math:`x \in [0, 1]^d`, step
:math:`t \in \{1, \dots, T\}`, value :math:`y_{x, t}`), e.g. the validation loss after epoch
:math:`t` of a training run with hyperparameters :math:`x`. DyHPO (Wistuba, Schulz and Grabocka,
*Supervising the multi-fidelity race of hyperparameter configurations*, NeurIPS 2022, sec. 4)
predicts :math:`y_{x, t}` from :math:`x`, the budget :math:`t` and the curve observed before it,
:math:`Y_{x, s} = (y_{x, 1}, \dots, y_{x, s})` with :math:`s = t - 1`. :class:`CurveLayout`
packs the four into one row of width :math:`d + 2 + T`, so that a curve model is an ordinary
``x -> y`` regression over rows (the Lightning bridge trains it on ``(rows, y)`` batches):

.. code-block:: text

    [ x_1 ... x_d | t / T | s / T | y_1 ... y_s 0 ... 0 ]

The prefix values are in the units the model trains on (the caller standardizes them as it
standardizes the targets); positions after :math:`s` are zero and masked by :math:`s`.
A model that reads only :math:`(x, t)` (a parametric curve per configuration) ignores the
prefix columns.

To predict a *final* value :math:`y_{x, T}` from a prefix shorter than :math:`T - 1` (a
paused trial), a model must have seen rows whose prefix stops before :math:`t - 1`.
:meth:`CurveLayout.training_rows` therefore cuts the prefix of a share ``truncate`` of the
rows at a random :math:`s < t - 1` (``truncate = 0`` is DyHPO's training set).

Example:
    >>> layout = CurveLayout(num_params=2, max_steps=4)
    >>> rows, y = layout.training_rows(torch.tensor([[0.1, 0.9]]), [[1.0, 0.7, 0.6]])
    >>> rows[2]   # the third observation: step 3 of 4 after the prefix (1.0, 0.7)
    tensor([0.1000, 0.9000, 0.7500, 0.5000, 1.0000, 0.7000, 0.0000, 0.0000])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


class CurveLayout:
    """Rows ``[configuration | step / T | prefix length / T | prefix (T values)]``.

    Args:
        num_params: ``d``, the configuration's coordinates (in the unit cube).
        max_steps: ``T``, the steps of a full curve.
    """

    def __init__(self, num_params: int, max_steps: int) -> None:
        for name, value in (("num_params", num_params), ("max_steps", max_steps)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.num_params, self.max_steps = int(num_params), int(max_steps)

    @property
    def width(self) -> int:
        """The row width ``d + 2 + T``."""
        return self.num_params + 2 + self.max_steps

    def rows(
        self, configs: Tensor, steps: Tensor, prefixes: Tensor, prefix_lengths: Tensor
    ) -> Tensor:
        """Rows from ``configs`` (``n x d``), ``steps`` (``n``, in ``1..T``), ``prefixes``
        (``n x T``, only the first ``prefix_lengths[i]`` of row ``i`` read) and
        ``prefix_lengths`` (``n``, each ``< steps[i]``).

        Raises:
            ValueError: for a step outside ``1..T`` or a prefix that reaches the step.
        """
        steps, lengths = steps.reshape(-1).to(configs), prefix_lengths.reshape(-1).to(configs)
        if configs.ndim != 2 or configs.shape[-1] != self.num_params:
            raise ValueError(f"configs must be n x {self.num_params}, got {tuple(configs.shape)}")
        if ((steps < 1) | (steps > self.max_steps)).any():
            raise ValueError(f"steps must lie in 1..{self.max_steps}")
        if ((lengths < 0) | (lengths >= steps)).any():
            raise ValueError("a prefix must stop before its step (0 <= prefix length < step)")
        positions = torch.arange(1, self.max_steps + 1, device=configs.device, dtype=configs.dtype)
        kept = prefixes.to(configs)[:, : self.max_steps] * (positions <= lengths.unsqueeze(-1))
        scale = float(self.max_steps)
        return torch.cat(
            [configs, (steps / scale).unsqueeze(-1), (lengths / scale).unsqueeze(-1), kept], dim=-1
        )

    def split(self, rows: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``(configs, step fractions, prefix fractions, prefixes, mask)`` of ``rows``
        (``... x width``); ``mask`` (bool, ``... x T``) marks the observed prefix values."""
        d, T = self.num_params, self.max_steps
        prefix_fraction = rows[..., d + 1]
        positions = torch.arange(1, T + 1, device=rows.device, dtype=rows.dtype)
        mask = positions <= (prefix_fraction * T).round().unsqueeze(-1)
        return rows[..., :d], rows[..., d], prefix_fraction, rows[..., d + 2 :], mask

    def training_rows(
        self,
        configs: Tensor,
        curves: Sequence[Sequence[float]],
        truncate: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Every observed point of every curve as ``(rows, y)``.

        Args:
            configs: ``m x d``, one configuration per curve.
            curves: ``curves[i]`` holds the values of configuration ``i`` at steps
                ``1, 2, ..., len(curves[i])`` (at most ``T``).
            truncate: The share of rows whose prefix is cut at a random length below
                ``t - 1`` (drawn from ``generator``; rows at step 1 have no prefix to cut).
            generator: The random source of the cuts.

        Returns:
            ``rows`` (``n x width``) and ``y`` (``n``), ``n`` the number of observed values.
        """
        if not 0.0 <= truncate <= 1.0:
            raise ValueError(f"truncate must lie in [0, 1], got {truncate!r}")
        if len(curves) != configs.shape[0]:
            raise ValueError(f"{configs.shape[0]} configurations but {len(curves)} curves")
        T = self.max_steps
        index, steps, values = [], [], []
        padded = torch.zeros(len(curves), T, dtype=configs.dtype)
        for i, curve in enumerate(curves):
            if len(curve) > T:
                raise ValueError(f"curve {i} has {len(curve)} values, more than max_steps={T}")
            padded[i, : len(curve)] = torch.as_tensor(list(curve), dtype=configs.dtype)
            index += [i] * len(curve)
            steps += range(1, len(curve) + 1)
            values += list(curve)
        index_t = torch.tensor(index, dtype=torch.long)
        steps_t = torch.tensor(steps, dtype=configs.dtype)
        lengths = steps_t - 1
        if truncate > 0 and len(steps):
            cut = torch.rand(len(steps), generator=generator) < truncate
            shorter = torch.floor(torch.rand(len(steps), generator=generator) * lengths).to(lengths)
            lengths = torch.where(cut, shorter, lengths)
        rows = self.rows(configs.to(padded)[index_t], steps_t, padded[index_t], lengths)
        return rows, torch.tensor(values, dtype=configs.dtype)


__all__ = ["CurveLayout"]
