"""Constrained test problems from ``botorch.test_functions.synthetic``.

``pressure-vessel``: the design of a cylindrical pressure vessel with hemispherical heads
(Coello Coello, *Constraint-handling using an evolutionary multiobjective optimization
technique*, 2002). The variables are the shell thickness ``T_s``, the head thickness
``T_h`` (both rounded to multiples of 0.0625 inside the function), the inner radius ``R``
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
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.test_functions.synthetic import PressureVessel

from dsbo.problems.base import Problem
from dsbo.problems.options import check_noise_std, from_test_problem
from dsbo.problems.registry import register_problem

PRESSURE_VESSEL_CONSTRAINTS = ("shell_thickness", "head_thickness", "volume", "length")


@register_problem("pressure-vessel")
def make_pressure_vessel(
    noise_std: float | None = None, target: str | Sequence[float] = "center"
) -> Problem:
    r"""Pressure vessel design, 4-d, 4 constraints; best known cost 6059.946341.

    ``noise_std`` perturbs the objective only; the constraint slacks stay noiseless.

    Example:
        >>> problem = make_pressure_vessel()
        >>> problem.evaluate(problem.default_point.unsqueeze(0)).shape  # cost + 4 slacks
        torch.Size([1, 5])
    """
    f = PressureVessel(noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double)
    return from_test_problem(
        "pressure-vessel",
        f,
        target=target,
        objective_names=("cost",),
        constraint_names=PRESSURE_VESSEL_CONSTRAINTS,
        description=make_pressure_vessel.__doc__.strip().split("\n")[0],
        metadata={"worst_feasible_value": f.worst_feasible_value},
    )
