"""Counting changed parameters: the exact L0 distance to a default configuration.

``||x - x^def||_0`` counts the coordinates a configuration changes from its default. Continuous
optimizers rarely return a default value exactly, so a coordinate counts as changed only when
``|x_j - x^def_j| >= tol`` in unit-cube coordinates, ``tol = 1e-3`` as in BONSAI (Daulton et al.,
appendix C, "active-dimension tolerance"). Report the tolerance with the count.
"""

from __future__ import annotations

from torch import Tensor

DEFAULT_TOLERANCE = 1e-3


def changed_mask(X: Tensor, default: Tensor, bounds: Tensor, tol: float = DEFAULT_TOLERANCE) -> Tensor:
    """Boolean ``... x d`` mask of the coordinates of ``X`` that differ from ``default``."""
    scale = (bounds[1] - bounds[0]).to(X)
    return ((X - default.to(X)).abs() / scale) >= tol


def num_changed(X: Tensor, default: Tensor, bounds: Tensor, tol: float = DEFAULT_TOLERANCE) -> Tensor:
    """Number of changed coordinates per point (a ``...`` integer tensor)."""
    return changed_mask(X, default, bounds, tol).sum(dim=-1)


__all__ = ["DEFAULT_TOLERANCE", "changed_mask", "num_changed"]
