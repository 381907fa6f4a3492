"""Multi-objective test problems from ``botorch.test_functions.multi_objective``.

Both objectives of each problem are minimized in the literature; they are built once with
``negate=True``. BoTorch then negates the reference point too (``ref_point = -_ref_point``),
so :attr:`Problem.ref_point` is already in the maximization sense. ``Problem.metadata``
holds ``max_hv``, the (approximate) maximal hypervolume with respect to that point.

- ``branin-currin``: Branin (rescaled to ``[0, 1]^2``) and Currin's exponential function,
  2-d, reference point ``(-18, -6)``.
- ``dtlz2``: DTLZ2 of Deb et al. (2005), ``d = 6``, two objectives on a spherical Pareto
  front ``f_1^2 + f_2^2 = 1``, reference point ``(-1.1, -1.1)``. BONSAI uses it embedded
  in 50 dims: ``dtlz2-50d`` (:mod:`dsbo.problems.embedded`).

References: Deb, Thiele, Laumanns & Zitzler, *Scalable test problems for evolutionary
multiobjective optimization* (2005); Belakaria et al., *Max-value entropy search for
multi-objective Bayesian optimization* (2019) for Branin-Currin.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.test_functions.multi_objective import DTLZ2, BraninCurrin

from dsbo.problems.base import Problem
from dsbo.problems.options import check_noise_std, from_test_problem
from dsbo.problems.registry import register_problem


@register_problem("branin-currin")
def make_branin_currin(
    noise_std: float | None = None, target: str | Sequence[float] = "center"
) -> Problem:
    r"""Branin-Currin, 2-d on [0, 1]^2, two objectives (Branin, Currin).

        f_1(x) = Branin(15 x_1 - 5, 15 x_2)
        f_2(x) = (1 - exp(-1 / (2 x_2))) (2300 x_1^3 + 1900 x_1^2 + 2092 x_1 + 60)
                 / (100 x_1^3 + 500 x_1^2 + 4 x_1 + 20)

    Example:
        >>> problem = make_branin_currin()
        >>> problem.ref_point.tolist()
        [-18.0, -6.0]
    """
    f = BraninCurrin(noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double)
    return from_test_problem(
        "branin-currin",
        f,
        target=target,
        objective_names=("branin", "currin"),
        description=make_branin_currin.__doc__.strip().split("\n")[0],
        metadata={"max_hv": float(f.max_hv)},
    )


@register_problem("dtlz2")
def make_dtlz2(noise_std: float | None = None, target: str | Sequence[float] = "center") -> Problem:
    r"""DTLZ2, 6-d on [0, 1]^6, two objectives with a spherical Pareto front.

    With ``k = d - M + 1 = 5`` distance variables and ``g(x) = sum_{i >= 2} (x_i - 0.5)^2``,

        f_1(x) = (1 + g(x)) cos(pi x_1 / 2)
        f_2(x) = (1 + g(x)) sin(pi x_1 / 2)

    Pareto optimal: ``x_2 = ... = x_6 = 0.5``.

    Example:
        >>> problem = make_dtlz2()
        >>> problem.evaluate(problem.default_point.unsqueeze(0)).shape
        torch.Size([1, 2])
    """
    f = DTLZ2(
        dim=6,
        num_objectives=2,
        noise_std=check_noise_std(noise_std),
        negate=True,
        dtype=torch.double,
    )
    return from_test_problem(
        "dtlz2",
        f,
        target=target,
        objective_names=("f1", "f2"),
        description=make_dtlz2.__doc__.strip().split("\n")[0],
        metadata={"max_hv": float(f.max_hv)},
    )
