"""A model over configurations read from a GP with one more input held fixed: the shared
shape of :class:`~dsbo.surrogates.fidelity.TargetFidelityModel` (a GP over ``(x, s)`` read at
full training, ``s = 1``) and :class:`~dsbo.surrogates.multi_task.TargetTaskModel` (a GP over
``(x, task)`` read as this campaign's task). Every acquisition of :mod:`dsbo.acquisition` then
proposes configurations from it unchanged."""

from __future__ import annotations

from typing import Any

import torch
from botorch.models.model import Model
from botorch.posteriors import Posterior
from torch import Tensor


class FixedColumnModel(Model):
    """``model`` (fitted over ``(unit-cube x, c)``) as a model over ``x`` in the box ``bounds``,
    read at ``c = value``.

    Attributes:
        model: The fitted GP over ``d + 1`` inputs, the last one ``c``.
        bounds: ``2 x d`` bounds of ``x`` (what maps it to the unit cube the GP was fitted in).
        value: The value of ``c`` it is read at.
    """

    def __init__(self, model: Model, bounds: Tensor, value: float) -> None:
        super().__init__()
        self.model = model
        self.value = float(value)
        self.register_buffer("bounds", bounds.to(torch.double))

    @property
    def num_outputs(self) -> int:
        return self.model.num_outputs

    @property
    def batch_shape(self) -> torch.Size:
        return self.model.batch_shape

    def with_column(self, X: Tensor) -> Tensor:
        """``X`` (``batch x q x d``) mapped to the unit cube, with ``c = value`` appended."""
        lower, upper = self.bounds[0], self.bounds[1]
        Z = (X - lower) / (upper - lower)
        return torch.cat([Z, torch.full_like(Z[..., :1], self.value)], dim=-1)

    def posterior(
        self,
        X: Tensor,
        output_indices: list[int] | None = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> Posterior:
        return self.model.posterior(
            self.with_column(X),
            output_indices=output_indices,
            observation_noise=observation_noise,
            posterior_transform=posterior_transform,
            **kwargs,
        )


__all__ = ["FixedColumnModel"]
