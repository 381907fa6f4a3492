r"""A GP over configuration and training steps, read at full training: the surrogate of
early stopping's ``model: "fidelity"`` (:mod:`dsbo.campaign.early_stopping`).

Every reported point of every learning curve is an observation ``(x, s, y)``, with ``s`` the
step as a fraction of a full trial (``s = step / max_steps``). BoTorch's
:class:`~botorch.models.SingleTaskMultiFidelityGP` with ``iteration_fidelity`` models them
jointly: its kernel is the product of a Matérn-5/2 kernel over the configuration and
:class:`~botorch.models.kernels.ExponentialDecayKernel` over ``s`` (``linear_truncated=False``),

.. math::

    k_s(s, s') = w + \frac{\beta^\alpha}{(s + s' + \beta)^\alpha},

the kernel of an infinite mixture of exponentially decaying learning curves (Swersky, Snoek
and Adams 2014, *Freeze-Thaw Bayesian Optimization*, eq. 6; BoTorch's multi-fidelity GP of
Wu et al. 2019, *Practical Multi-fidelity Bayesian Optimization for Hyperparameter Tuning*). So
a stopped trial's curve prefix informs the prediction of its configuration's (and its
neighbours') value at full training. :class:`TargetFidelityModel` exposes that prediction,
``f(x, s = 1)``, as a model over the configuration alone, so that every acquisition of
:mod:`dsbo.acquisition` proposes from it unchanged.
"""

from __future__ import annotations

import torch
from botorch.models.model import Model
from torch import Tensor

from dsbo.errors import DataError
from dsbo.surrogates.fixed_column import FixedColumnModel


class TargetFidelityModel(FixedColumnModel):
    """A model over configurations ``x`` (the problem's box): the multi-fidelity GP ``model``
    over ``(unit-cube x, s)`` read at ``s = 1``.

    Attributes:
        model: The fitted :class:`~botorch.models.SingleTaskMultiFidelityGP`.
        bounds: ``2 x d`` bounds of ``x`` (what maps it to the unit cube the GP was fitted in).
    """

    def __init__(self, model: Model, bounds: Tensor) -> None:
        super().__init__(model, bounds, 1.0)

    def at_full_training(self, X: Tensor) -> Tensor:
        """``X`` (``batch x q x d``) mapped to the unit cube, with ``s = 1`` appended."""
        return self.with_column(X)


def fit_fidelity_gp(
    X: Tensor, steps: Tensor, Y: Tensor, bounds: Tensor, max_steps: int
) -> TargetFidelityModel:
    """Fit the multi-fidelity GP on curve points: configurations ``X`` (``n x d``, in the
    box ``bounds``), the ``steps`` at which they were observed (``n``) and the values ``Y``
    (``n x 1``, maximized); returns it read at full training (``steps = max_steps``).

    Raises:
        DataError: for fewer than two points, a step outside ``[0, max_steps]`` or a value
            that is not finite.
    """
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskMultiFidelityGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    X, Y = X.to(torch.double), Y.to(torch.double).reshape(-1, 1)
    s = steps.to(torch.double).reshape(-1, 1) / max_steps
    if X.shape[0] < 2:
        raise DataError(f"the fidelity GP needs at least 2 curve points, got {X.shape[0]}")
    if not ((s >= 0) & (s <= 1)).all():
        raise DataError(f"curve steps must lie in [0, max_steps={max_steps}]")
    if not torch.isfinite(Y).all():
        raise DataError("curve values must be finite")
    lower, upper = bounds[0].to(X), bounds[1].to(X)
    train_X = torch.cat([(X - lower) / (upper - lower), s], dim=-1)
    gp = SingleTaskMultiFidelityGP(
        train_X, Y, iteration_fidelity=X.shape[-1], linear_truncated=False
    )
    fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    return TargetFidelityModel(gp, bounds.to(X))


__all__ = ["TargetFidelityModel", "fit_fidelity_gp"]
