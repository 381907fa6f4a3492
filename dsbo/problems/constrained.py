"""Constrained test problems from ``botorch.test_functions.synthetic``.

``pressure-vessel``: the design of a cylindrical pressure vessel with hemispherical heads
(Coello Coello, *Constraint-handling using an evolutionary multiobjective optimization
technique*, 2002). The variables are the shell thickness ``T_s``, the head thickness
``T_h`` (both rounded to the nearest multiple of 0.0625, the plate thicknesses available),
the inner radius ``R``
and the length ``L``; the cost (material, forming and welding) is minimized:

    f(x) = 0.6224 T_s R L + 1.7781 T_h R^2 + 3.1661 T_s^2 L + 19.84 T_s^2 R

subject to four constraints, returned as slacks that are ``>= 0`` when satisfied:

    shell_thickness:  T_s - 0.0193 R >= 0
    head_thickness:   T_h - 0.00954 R >= 0
    volume:           pi R^2 L + 4/3 pi R^3 - 1296000 >= 0
    length:           240 - L >= 0

on ``[0, 10] x [0, 10] x [10, 50] x [150, 200]``. BoTorch quotes the best cost 6059.946341
of Coello Coello (2002), so ``Problem.optimal_value = -6059.946341`` (maximization sense);
later designs reach about 6059.72 (e.g. ``(0.8125, 0.4375, 42.0984, 176.6372)``), so a
method may slightly beat ``optimal_value`` and regret can be marginally negative. ``pressure-vessel-{D}d``
embeds it in ``[0, 1]^D`` (:mod:`dsbo.problems.embedded`).

Rounding: BoTorch's ``PressureVessel`` rounds ``T_s`` and ``T_h`` in the cost but not in the
constraints, so a design such as ``(0.78, 0.39, 40.4, 199)`` counts as feasible while its
cost (5646) is that of the rounded, infeasible thicknesses ``(0.75, 0.375)``: "feasible"
costs below the literature optimum. dsbo rounds both the same way (``thickness_rounding:
consistent``, :class:`RoundedPressureVessel`); ``cost-only`` keeps BoTorch's behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.test_functions.synthetic import PressureVessel
from botorch.test_functions.utils import round_nearest
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.problems.options import check_noise_std, from_test_problem
from dsbo.problems.registry import register_problem

PRESSURE_VESSEL_CONSTRAINTS = ("shell_thickness", "head_thickness", "volume", "length")
THICKNESS_ROUNDING = ("consistent", "cost-only")
THICKNESS_INCREMENT = 0.0625


class RoundedPressureVessel(PressureVessel):
    """BoTorch's ``PressureVessel`` with the thicknesses ``T_s``, ``T_h`` rounded to the nearest
    multiple of 0.0625 in the constraint slacks too, as they already are in the cost."""

    def rounded(self, X: Tensor) -> Tensor:
        X = X.clone()
        for j in (0, 1):
            X[..., j] = round_nearest(
                X[..., j], increment=THICKNESS_INCREMENT, bounds=self._bounds[j]
            )
        return X

    def _evaluate_slack_true(self, X: Tensor) -> Tensor:
        return super()._evaluate_slack_true(self.rounded(X))


@register_problem("pressure-vessel")
def make_pressure_vessel(
    noise_std: float | None = None,
    target: str | Sequence[float] = "center",
    thickness_rounding: str = "consistent",
) -> Problem:
    r"""Pressure vessel design, 4-d, 4 constraints; best known cost 6059.946341.

    ``noise_std`` perturbs the objective only; the constraint slacks stay noiseless.
    ``thickness_rounding``: ``consistent`` (the thicknesses are rounded in the cost and the
    constraints) or ``cost-only`` (BoTorch's, see the module docstring).

    Example:
        >>> problem = make_pressure_vessel()
        >>> problem.evaluate(problem.default_point.unsqueeze(0)).shape  # cost + 4 slacks
        torch.Size([1, 5])
    """
    if thickness_rounding not in THICKNESS_ROUNDING:
        raise ConfigError(
            f"problem.options.thickness_rounding={thickness_rounding!r}: choose one of "
            f"{', '.join(THICKNESS_ROUNDING)}"
        )
    cls = RoundedPressureVessel if thickness_rounding == "consistent" else PressureVessel
    f = cls(noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double)
    return from_test_problem(
        "pressure-vessel",
        f,
        target=target,
        objective_names=("cost",),
        constraint_names=PRESSURE_VESSEL_CONSTRAINTS,
        description=make_pressure_vessel.__doc__.strip().split("\n")[0],
        metadata={"worst_feasible_value": f.worst_feasible_value},
    )
