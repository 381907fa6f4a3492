r"""Sparsity measures: how far a configuration is from a target (default) configuration.

Every measure is computed in **unit-cube coordinates** ``z = (x - lb) / (ub - lb)`` of the
problem's box, so dimensions with different ranges count alike. With ``z^s`` the target
``x^s`` in the same coordinates (Liu et al., *Sparse Bayesian Optimization*, AISTATS 2023,
sections 3 and 5):

- exact L0: ``||x - x^s||_0 = #{i : |z_i - z^s_i| >= tol}``. Continuous optimizers rarely
  return a default value exactly, so a coordinate counts as changed only when it moved by at
  least ``tol = 1e-3`` of its range, as in BONSAI (Daulton et al., appendix C,
  "active-dimension tolerance"). Report the tolerance with the count.
- smooth L0 (SEBO, section 5; BoTorch's ``L0Approximation``):

      xi_a(x) = sum_i (1 - exp(-(z_i - z^s_i)^2 / (2 a^2)))
              = d - sum_i exp(-0.5 ((z_i - z^s_i) / a)^2),

  the paper's ``phi_a`` with ``x`` measured from the target. Each term tends to the indicator
  ``1[z_i != z^s_i]`` as ``a -> 0``, so ``xi_a -> ||x - x^s||_0`` pointwise; ``xi_a`` is
  smooth for ``a > 0`` and ``xi_a <= ||x - x^s||_0``.
- L1: ``sum_i |z_i - z^s_i|``.
- group lasso: ``sum_g sqrt(|g|) ||z_g - z^s_g||_2`` over groups ``g`` of parameter indices
  (BoTorch's ``group_lasso_regularizer``); dimensions in no group are not penalized.

Example:
    >>> bounds = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 10.0]])
    >>> X = torch.tensor([[0.0, 0.5, 10.0]])
    >>> num_changed(X, torch.zeros(3), bounds).item()
    2
    >>> measure = SparsityMeasure(torch.zeros(3), bounds, penalty="l0", a=1e-3)
    >>> measure(X).item()  # the smooth L0 at a small a is the count
    2.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from botorch.acquisition.penalized import L0Approximation, group_lasso_regularizer
from torch import Tensor

from dsbo.errors import ConfigError

DEFAULT_TOLERANCE = 1e-3
PENALTIES = ("l0", "l1", "group")


DUPLICATE_TOLERANCE = 1e-6


def changed_mask(
    X: Tensor, default: Tensor, bounds: Tensor, tol: float = DEFAULT_TOLERANCE
) -> Tensor:
    """Boolean ``... x d`` mask of the coordinates of ``X`` that differ from ``default``."""
    scale = (bounds[1] - bounds[0]).to(X)
    return ((X - default.to(X)).abs() / scale) >= tol


def is_duplicate(
    X: Tensor, seen: Tensor | None, bounds: Tensor, tol: float = DUPLICATE_TOLERANCE
) -> Tensor:
    """``n`` mask: rows of ``X`` (``n x d``) closer than ``tol`` to a row of ``seen`` in every
    unit-cube coordinate (max-norm via ``torch.cdist``: memory ``n x m``, not ``n x m x d``).
    ``tol <= 0`` or no ``seen`` rows: nothing is a duplicate."""
    if seen is None or seen.shape[0] == 0 or tol <= 0:
        return torch.zeros(X.shape[0], dtype=torch.bool)
    distance = torch.cdist(to_unit_cube(X, bounds), to_unit_cube(seen.to(X), bounds), p=math.inf)
    return (distance < tol).any(dim=-1)


def num_changed(
    X: Tensor,
    default: Tensor,
    bounds: Tensor,
    tol: float = DEFAULT_TOLERANCE,
    groups: Sequence[Sequence[int]] | None = None,
) -> Tensor:
    """Number of changed coordinates per point (a ``...`` integer tensor); with ``groups``
    (the columns of each parameter, e.g. a one-hot categorical's), the number of groups with a
    changed column: a categorical counts once when its value changes."""
    mask = changed_mask(X, default, bounds, tol)
    if groups is None:
        return mask.sum(dim=-1)
    return torch.stack([mask[..., list(g)].any(dim=-1) for g in groups], dim=-1).sum(dim=-1)


def to_unit_cube(X: Tensor, bounds: Tensor) -> Tensor:
    """``(X - lb) / (ub - lb)``: raw coordinates to unit-cube coordinates."""
    bounds = bounds.to(X)
    return (X - bounds[0]) / (bounds[1] - bounds[0])


def smooth_l0(X: Tensor, target: Tensor, bounds: Tensor, a: float | Tensor) -> Tensor:
    r"""``xi_a(x) = sum_i (1 - exp(-(z_i - z^s_i)^2 / (2 a^2)))`` per point (a ``...`` tensor)."""
    Z, Zs = to_unit_cube(X, bounds), to_unit_cube(target.to(X), bounds)
    return L0Approximation(target_point=Zs, a=float(a), dtype=X.dtype)(Z).squeeze(-1)


def l1_distance(X: Tensor, target: Tensor, bounds: Tensor) -> Tensor:
    """``sum_i |z_i - z^s_i|`` per point, in unit-cube coordinates."""
    return (to_unit_cube(X, bounds) - to_unit_cube(target.to(X), bounds)).abs().sum(dim=-1)


def group_lasso_distance(
    X: Tensor, target: Tensor, bounds: Tensor, groups: Sequence[Sequence[int]]
) -> Tensor:
    """``sum_g sqrt(|g|) ||z_g - z^s_g||_2`` per point, in unit-cube coordinates."""
    diff = to_unit_cube(X, bounds) - to_unit_cube(target.to(X), bounds)
    return group_lasso_regularizer(diff, [list(g) for g in groups])


def check_groups(groups: object, dim: int) -> list[list[int]]:
    """Validate ``groups`` (non-empty lists of distinct indices in ``0..dim-1``)."""
    if not isinstance(groups, Sequence) or isinstance(groups, str) or len(groups) == 0:
        raise ConfigError(
            f"groups={groups!r} must be a non-empty list of lists of dimension indices"
        )
    seen: set[int] = set()
    out = []
    for g in groups:
        if isinstance(g, str) or not isinstance(g, Sequence) or len(g) == 0:
            raise ConfigError(f"groups: {g!r} must be a non-empty list of dimension indices")
        group = []
        for i in g:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < dim:
                raise ConfigError(f"groups: index {i!r} is not a dimension in 0..{dim - 1}")
            if i in seen:
                raise ConfigError(f"groups: dimension {i} appears in more than one group")
            seen.add(i)
            group.append(i)
        out.append(group)
    return out


class SparsityMeasure(torch.nn.Module):
    r"""A sparsity measure ``xi(x)`` of raw inputs relative to a target, to be minimized.

    ``penalty="l0"`` is the smooth L0 ``xi_a`` (a BoTorch ``L0Approximation`` on unit-cube
    inputs; its buffer ``a`` is what a ``botorch.optim.homotopy.Homotopy`` drives), or the
    exact count when :attr:`exact` is set; ``"l1"`` and ``"group"`` have no relaxation.

    Args:
        target: The target ``x^s`` (a ``d``-vector in raw coordinates).
        bounds: ``2 x d`` box defining the unit-cube coordinates.
        penalty: ``"l0"``, ``"l1"`` or ``"group"``.
        a: Initial relaxation width of the smooth L0 (unit-cube units).
        groups: Groups of dimension indices (``penalty="group"`` only).
        tol: Tolerance of the exact L0 count (unit-cube units).

    Example:
        >>> measure = SparsityMeasure(torch.zeros(2), torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
        >>> measure(torch.rand(5, 3, 2)).shape  # batch x q
        torch.Size([5, 3])
    """

    def __init__(
        self,
        target: Tensor,
        bounds: Tensor,
        penalty: str = "l0",
        a: float = 10**-0.5,
        groups: Sequence[Sequence[int]] | None = None,
        tol: float = DEFAULT_TOLERANCE,
    ) -> None:
        super().__init__()
        if penalty not in PENALTIES:
            raise ConfigError(f"penalty={penalty!r} is unknown; choose one of {list(PENALTIES)}")
        d = bounds.shape[-1]
        if penalty == "group":
            if groups is None:
                raise ConfigError("penalty='group' needs groups, e.g. groups: [[0, 1], [2, 3]]")
            groups = check_groups(groups, d)
        elif groups is not None:
            raise ConfigError(f"groups are only used with penalty='group', not {penalty!r}")
        self.penalty = penalty
        self.groups = groups
        self.tol = tol
        #: Evaluate the exact L0 count instead of its relaxation (``penalty="l0"`` only).
        self.exact = False
        self.register_buffer("target", torch.as_tensor(target, dtype=torch.double).reshape(-1))
        self.register_buffer("bounds", torch.as_tensor(bounds, dtype=torch.double))
        self.l0 = L0Approximation(
            target_point=to_unit_cube(self.target, self.bounds), a=a, dtype=torch.double
        )

    @property
    def a(self) -> Tensor:
        """The relaxation width buffer (a homotopy parameter)."""
        return self.l0.a

    def forward(self, X: Tensor) -> Tensor:
        """``xi`` of ``batch x q x d`` raw inputs: a ``batch x q`` tensor."""
        if self.penalty == "l1":
            return l1_distance(X, self.target, self.bounds)
        if self.penalty == "group":
            return group_lasso_distance(X, self.target, self.bounds, self.groups)
        if self.exact:
            return num_changed(X, self.target, self.bounds, self.tol).to(X)
        return self.l0(to_unit_cube(X, self.bounds)).squeeze(-1)

    def exact_value(self, X: Tensor) -> Tensor:
        """The unrelaxed measure (the exact count for L0) of ``... x d`` inputs."""
        if self.penalty == "l0":
            return num_changed(X, self.target, self.bounds, self.tol).to(X)
        return self(X)


__all__ = [
    "DEFAULT_TOLERANCE",
    "PENALTIES",
    "SparsityMeasure",
    "changed_mask",
    "check_groups",
    "group_lasso_distance",
    "l1_distance",
    "num_changed",
    "smooth_l0",
    "to_unit_cube",
]
