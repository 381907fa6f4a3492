r"""Scalarizations of several objectives, and the map of each objective to :math:`[0, 1]`.

MOBO-RS (Paria, Kandasamy & Poczos, *A flexible framework for multi-objective Bayesian
optimization using random scalarizations*, UAI 2019; Paria thesis ch. 2) maximizes
:math:`s_\lambda(f(x))` for random weights :math:`\lambda`. The scalarizations act on
objectives :math:`y` normalized to :math:`[0, 1]` (:class:`ObjectiveScale`: the thesis maps
every objective linearly to [0, 1]; dsbo uses the problem's ``objective_bounds`` when known,
else the observed range), with reference point :math:`z` (default 0, the worst value):

* linear (eq. 2.8): :math:`s_\lambda(y) = \sum_k \lambda_k y_k`;
* Chebyshev (eq. 2.8): :math:`s_\lambda(y) = \min_k \lambda_k (y_k - z_k)
  + \alpha \sum_k \lambda_k (y_k - z_k)`, augmentation :math:`\alpha = 0` as in the thesis
  (BoTorch's ParEGO uses 0.05);
* hypervolume (Golovin & Zhang, "Random Hypervolume Scalarizations for Provable
  Multi-Objective Black Box Optimization", ICML 2020; not in the thesis):
  :math:`s_\lambda(y) = \min_k \max(0, (y_k - z_k) / \lambda_k)^K` with :math:`\lambda` on the
  positive unit sphere; its mean over :math:`\lambda` is proportional to the dominated
  hypervolume.

:class:`Scalarization` also knows its flat weight prior and how a direction of objective space
becomes weights whose optimum lies in it (thesis section 2.4), which the weight priors of
:mod:`dsbo.acquisition.weight_priors` use.

Example:
    >>> import torch
    >>> Y, w = torch.tensor([[0.2, 0.8]]), torch.tensor([0.5, 0.5])
    >>> linear_scalarization(Y, w).item(), round(chebyshev_scalarization(Y, w).item(), 3)
    (0.5, 0.1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

SCALARIZATIONS = ("linear", "chebyshev", "hypervolume")


def linear_scalarization(Y: Tensor, weights: Tensor) -> Tensor:
    r""":math:`\sum_k \lambda_k y_k` over the last dimension (thesis eq. 2.8)."""
    return (Y * weights).sum(-1)


def chebyshev_scalarization(
    Y: Tensor, weights: Tensor, reference: Tensor | float = 0.0, augmentation: float = 0.0
) -> Tensor:
    r""":math:`\min_k \lambda_k (y_k - z_k) + \alpha \sum_k \lambda_k (y_k - z_k)` (thesis
    eq. 2.8 at :math:`\alpha = 0`)."""
    D = weights * (Y - reference)
    return D.min(-1).values + augmentation * D.sum(-1)


def hypervolume_scalarization(
    Y: Tensor, weights: Tensor, reference: Tensor | float = 0.0
) -> Tensor:
    r""":math:`\min_k \max(0, (y_k - z_k) / \lambda_k)^K` (Golovin & Zhang 2020)."""
    K = Y.shape[-1]
    return ((Y - reference) / weights).clamp_min(0.0).min(-1).values ** K


@dataclass
class Scalarization:
    """A scalarization family ``s_lambda`` over normalized objectives.

    Args:
        name: ``linear``, ``chebyshev`` or ``hypervolume``.
        reference: ``z`` in normalized units (Chebyshev, hypervolume); default 0.
        augmentation: Chebyshev's ``alpha``.
    """

    name: str = "chebyshev"
    reference: Tensor | float = 0.0
    augmentation: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in SCALARIZATIONS:
            raise ConfigError(
                f"scalarization={self.name!r}: choose one of {', '.join(SCALARIZATIONS)}"
            )
        a = self.augmentation
        number = not isinstance(a, bool) and isinstance(a, int | float)
        if not (number and math.isfinite(a) and a >= 0):
            raise ConfigError(f"augmentation must be a finite number >= 0, got {a!r}")

    def __call__(self, Y: Tensor, weights: Tensor) -> Tensor:
        if self.name == "linear":
            return linear_scalarization(Y, weights)
        if self.name == "chebyshev":
            return chebyshev_scalarization(Y, weights, self.reference, self.augmentation)
        return hypervolume_scalarization(Y, weights, self.reference)

    def weights_from_direction(self, u: Tensor) -> Tensor:
        """Weights whose optimum lies in the direction ``u > 0`` of normalized objective space
        (thesis section 2.4's bounding-box heuristic)."""
        if self.name == "linear":
            return u / u.sum(-1, keepdim=True)
        if self.name == "chebyshev":
            inverse = 1.0 / u
            return inverse / inverse.sum(-1, keepdim=True)
        return u / u.norm(dim=-1, keepdim=True)

    def flat_weights(self, n: int, m: int, generator: torch.Generator) -> Tensor:
        """``n x m`` draws of the flat prior: Dirichlet(1) on the simplex (linear, Chebyshev),
        ``|g| / ||g||_2`` on the positive unit sphere (hypervolume)."""
        if self.name == "hypervolume":
            g = torch.randn(n, m, generator=generator, dtype=torch.double).abs()
            return g / g.norm(dim=-1, keepdim=True)
        uniform = torch.rand(n, m, generator=generator, dtype=torch.double)
        e = -torch.log(uniform.clamp_min(1e-300))
        return e / e.sum(-1, keepdim=True)  # normalized exponentials are Dirichlet(1, ..., 1)


@dataclass
class ObjectiveScale:
    """The affine map of each objective to [0, 1]: ``(y - lower) / (upper - lower)``."""

    lower: Tensor
    upper: Tensor

    @classmethod
    def for_problem(cls, problem: Problem, Y: Tensor | None = None) -> ObjectiveScale:
        """The problem's ``metadata["objective_bounds"]`` (``2 x m``, maximization sense) when
        known, else the range of the observed objectives ``Y``."""
        m = problem.num_objectives
        bounds = problem.metadata.get("objective_bounds")
        if bounds is not None:
            bounds = torch.as_tensor(bounds, dtype=torch.double)
            return cls(bounds[0], bounds[1])
        if Y is None or Y.shape[0] == 0:
            raise ConfigError(
                f"{problem.name} has no objective_bounds in its metadata and there are no "
                "observations to normalize the objectives with"
            )
        Y = Y[:, :m]
        lower, upper = Y.min(0).values, Y.max(0).values
        upper = torch.where(upper > lower, upper, lower + 1.0)
        return cls(lower, upper)

    def __call__(self, Y: Tensor) -> Tensor:
        return (Y - self.lower) / (self.upper - self.lower)

    def scale_only(self, S: Tensor) -> Tensor:
        """Standard deviations (or any difference) in normalized units."""
        return S / (self.upper - self.lower)
