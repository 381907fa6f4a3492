r"""Weight priors :math:`p(\lambda)` of random scalarizations (MOBO-RS, Paria thesis ch. 2).

Paria, Kandasamy & Poczos, *A flexible framework for multi-objective Bayesian optimization
using random scalarizations* (UAI 2019), section 2.4: the prior on the weights says which part
of the Pareto front the user cares about. :class:`WeightPrior` is one of:

- ``flat``: Dirichlet(1, ..., 1) on the simplex; for the hypervolume scalarization
  :math:`|g| / \|g\|_2`, :math:`g \sim N(0, I)`
  (:meth:`~dsbo.acquisition.scalarizations.Scalarization.flat_weights`);
- a bounding box ``[[a_1, b_1], ...]`` of the objective space in the problem's units
  (maximization sense, :class:`Region`);
- a mixture of boxes, each with a weight.

A box becomes weights by the thesis' heuristic: draw :math:`u_k \sim U(a_k, b_k)` (normalized
by the :class:`~dsbo.acquisition.scalarizations.ObjectiveScale`) and set :math:`\lambda = u /
\|u\|_1` (linear); Chebyshev reuses it as :math:`\lambda' \propto 1 / \lambda`; the
hypervolume scalarization uses :math:`u / \|u\|_2` (its optimum has :math:`y - z \propto
\lambda`) (:meth:`~dsbo.acquisition.scalarizations.Scalarization.weights_from_direction`).

Example:
    >>> prior = WeightPrior.parse({"box": [[0, 1], [2, 3]]}, num_objectives=2)
    >>> prior.is_flat, prior.regions[0].upper.tolist()
    (False, [1.0, 3.0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from dsbo.acquisition.scalarizations import ObjectiveScale, Scalarization
from dsbo.errors import ConfigError

#: Smallest normalized box coordinate: weights stay strictly positive.
MIN_DIRECTION = 1e-6


@dataclass
class Region:
    """A bounding box ``[lower_k, upper_k]`` of the objective space (problem units,
    maximization sense) and its mixture weight."""

    lower: Tensor
    upper: Tensor
    weight: float = 1.0


class WeightPrior:
    """``p(lambda)``: flat, one bounding box, or a mixture of boxes (see the module doc).

    Args:
        num_objectives: ``m``.
        regions: The boxes; ``None`` or empty: the flat prior.
    """

    def __init__(self, num_objectives: int, regions: Sequence[Region] | None = None) -> None:
        self.num_objectives = num_objectives
        self.regions = list(regions or [])
        self.probabilities = None
        if self.regions:
            total = sum(r.weight for r in self.regions)
            weights = [r.weight / total for r in self.regions]
            self.probabilities = torch.tensor(weights, dtype=torch.double)

    @property
    def is_flat(self) -> bool:
        return not self.regions

    @classmethod
    def parse(
        cls, spec: Any, num_objectives: int, field: str = "acquisition.options.prior"
    ) -> WeightPrior:
        """``"flat"``, ``{"box": [[a_1, b_1], ..., [a_m, b_m]]}`` or
        ``{"mixture": [{"box": ..., "weight": w}, ...]}``."""
        if spec is None or spec == "flat":
            return cls(num_objectives)
        if not isinstance(spec, Mapping) or set(spec) not in ({"box"}, {"mixture"}):
            raise ConfigError(
                f"{field} must be 'flat', {{box: [[a, b], ...]}} or "
                f"{{mixture: [{{box: ..., weight: w}}, ...]}}, got {spec!r}"
            )
        if "box" in spec:
            return cls(num_objectives, [parse_box(spec["box"], num_objectives, f"{field}.box")])
        items = spec["mixture"]
        if not isinstance(items, Sequence) or isinstance(items, str) or not items:
            raise ConfigError(f"{field}.mixture must be a non-empty list of boxes, got {items!r}")
        regions = []
        for i, item in enumerate(items):
            where = f"{field}.mixture[{i}]"
            if not isinstance(item, Mapping) or "box" not in item or set(item) - {"box", "weight"}:
                raise ConfigError(
                    f"{where} must be {{box: [[a, b], ...], weight: w}}, got {item!r}"
                )
            weight = item.get("weight", 1.0)
            number = not isinstance(weight, bool) and isinstance(weight, int | float)
            if not (number and math.isfinite(weight) and weight > 0):
                raise ConfigError(f"{where}.weight must be a finite number > 0, got {weight!r}")
            region = parse_box(item["box"], num_objectives, f"{where}.box")
            region.weight = float(weight)
            regions.append(region)
        return cls(num_objectives, regions)

    def sample(
        self,
        n: int,
        scalarization: Scalarization,
        scale: ObjectiveScale,
        generator: torch.Generator,
    ) -> tuple[Tensor, Tensor]:
        """``n x m`` weights and the ``n`` region indices they came from (-1: flat)."""
        m = self.num_objectives
        if self.is_flat:
            flat = torch.full((n,), -1, dtype=torch.long)
            return scalarization.flat_weights(n, m, generator), flat
        which = torch.multinomial(self.probabilities, n, replacement=True, generator=generator)
        lower = torch.stack([scale(self.regions[i].lower) for i in which.tolist()])
        upper = torch.stack([scale(self.regions[i].upper) for i in which.tolist()])
        u = lower + (upper - lower) * torch.rand(n, m, generator=generator, dtype=torch.double)
        u = u.clamp(min=MIN_DIRECTION)
        return scalarization.weights_from_direction(u), which


def parse_box(box: Any, m: int, field: str) -> Region:
    """``box`` (``m`` pairs ``[lower, upper]`` of finite numbers) as a :class:`Region`;
    ``field`` names it in the error."""
    try:
        B = torch.as_tensor(box, dtype=torch.double)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{field} must be {m} pairs [lower, upper] of numbers, got {box!r}"
        ) from exc
    if B.shape != (m, 2):
        raise ConfigError(
            f"{field} must give one [lower, upper] pair per objective ({m}), got shape "
            f"{tuple(B.shape)}"
        )
    if not torch.isfinite(B).all():
        raise ConfigError(f"{field} must be finite numbers, got {box!r}")
    bad = torch.nonzero(B[:, 0] > B[:, 1]).reshape(-1)
    if bad.numel():
        k = int(bad[0])
        raise ConfigError(f"{field}[{k}]: lower {B[k, 0].item():g} > upper {B[k, 1].item():g}")
    return Region(lower=B[:, 0], upper=B[:, 1])
