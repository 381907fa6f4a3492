"""Classic single-objective test functions from ``botorch.test_functions.synthetic``.

Every function here is minimized in the literature. BoTorch maximizes, so each is built
once with ``negate=True`` (and float64); ``Problem.optimal_value`` is therefore minus the
literature optimum. All dimensions are relevant.

=============  =====  ==========================  =====================================
name           d      domain                      literature minimum
=============  =====  ==========================  =====================================
``branin``     2      [-5, 10] x [0, 15]          0.397887 at 3 points
``hartmann6``  6      [0, 1]^6                    -3.32237
``ackley``     any    [-32.768, 32.768]^d         0 at 0
``levy``       any    [-10, 10]^d                 0 at (1, ..., 1)
``rastrigin``  any    [-5.12, 5.12]^d             0 at 0
``griewank``   any    [-600, 600]^d               0 at 0
``schwefel``   any    [-500, 500]^d               0 at (420.9687, ..., 420.9687)
=============  =====  ==========================  =====================================

The scalable functions also register as ``{name}-{D}d`` (e.g. ``ackley-5d``); without the
suffix they take BoTorch's default dimension. Reference for the formulas: Surjanovic &
Bingham, *Virtual Library of Simulation Experiments* (https://www.sfu.ca/~ssurjano/).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.test_functions.synthetic import (
    Ackley,
    Branin,
    Griewank,
    Hartmann,
    Levy,
    Rastrigin,
    SyntheticTestFunction,
)
from torch import Tensor

from dsbo.problems.base import Problem
from dsbo.problems.options import check_int, check_noise_std, from_test_problem
from dsbo.problems.registry import register_problem

Target = str | Sequence[float]


class Schwefel(SyntheticTestFunction):
    r"""Schwefel test function (not in BoTorch 0.18.1).

    ``d``-dimensional function, usually evaluated on ``[-500, 500]^d``:

        f(x) = 418.9829 d - sum_{i=1}^d x_i sin(sqrt(|x_i|))

    Many deep local minima, far from each other; the global minimum is ``f(z) ~= 0`` at
    ``z = (420.9687, ..., 420.9687)`` (more precisely ``f(z) ~= 1.3e-5 d``, a rounding of
    the constant).

    Example:
        >>> f = Schwefel(dim=3, negate=True)
        >>> f(torch.full((1, 3), 420.9687, dtype=torch.double)).item()  # doctest: +ELLIPSIS
        -3.818...e-05
    """

    _optimal_value = 0.0

    def __init__(
        self,
        dim: int = 2,
        noise_std: float | None = None,
        negate: bool = False,
        bounds: list[tuple[float, float]] | None = None,
        dtype: torch.dtype = torch.double,
    ) -> None:
        r"""
        Args:
            dim: The (input) dimension.
            noise_std: Standard deviation of the observation noise.
            negate: If True, negate the function.
            bounds: Custom bounds for the function specified as (lower, upper) pairs.
            dtype: The dtype that is used for the bounds of the function.
        """
        self.dim = dim
        self.continuous_inds = list(range(dim))
        if bounds is None:
            bounds = [(-500.0, 500.0) for _ in range(dim)]
        self._optimizers = [tuple(420.9687 for _ in range(dim))]
        super().__init__(noise_std=noise_std, negate=negate, bounds=bounds, dtype=dtype)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        return 418.9829 * self.dim - (X * torch.sin(torch.sqrt(X.abs()))).sum(dim=-1)


def _scalable(
    name: str,
    cls: type[SyntheticTestFunction],
    dim: int | None,
    noise_std: float | None,
    target: Target,
    description: str,
) -> Problem:
    """Build ``cls`` in ``dim`` dimensions (BoTorch's default if ``None``), negated."""
    kwargs = {} if dim is None else {"dim": check_int(dim, f"{name}: dim", minimum=1)}
    f = cls(noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double, **kwargs)
    full_name = name if dim is None else f"{name}-{f.dim}d"
    return from_test_problem(full_name, f, target=target, description=description)


def _summary(factory: object) -> str:
    """The first line of a factory's docstring."""
    return (factory.__doc__ or "").strip().split("\n")[0]


@register_problem("branin")
def make_branin(noise_std: float | None = None, target: Target = "center") -> Problem:
    r"""Branin, 2-d on [-5, 10] x [0, 15]; minimum 0.397887 at three points.

        f(x) = (x_2 - b x_1^2 + c x_1 - r)^2 + 10 (1 - t) cos(x_1) + 10

    with ``b = 5.1 / (4 pi^2)``, ``c = 5 / pi``, ``r = 6``, ``t = 1 / (8 pi)``; minimizers
    ``(-pi, 12.275)``, ``(pi, 2.275)``, ``(9.42478, 2.475)``.

    Example:
        >>> problem = make_branin()
        >>> problem.optimal_value
        -0.397887
    """
    f = Branin(noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double)
    return from_test_problem("branin", f, target=target, description=_summary(make_branin))


@register_problem("hartmann6")
def make_hartmann6(noise_std: float | None = None, target: Target = "center") -> Problem:
    r"""Hartmann6, 6-d on [0, 1]^6; minimum -3.32237.

        f(x) = - sum_{i=1}^4 alpha_i exp(- sum_{j=1}^6 A_ij (x_j - P_ij)^2)

    minimizer ``(0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573)``.

    Example:
        >>> problem = make_hartmann6()
        >>> problem.optimal_value
        3.32237
    """
    f = Hartmann(dim=6, noise_std=check_noise_std(noise_std), negate=True, dtype=torch.double)
    return from_test_problem("hartmann6", f, target=target, description=_summary(make_hartmann6))


@register_problem("ackley")
@register_problem("ackley-{D}d")
def make_ackley(
    dim: int | None = None, noise_std: float | None = None, target: Target = "center"
) -> Problem:
    r"""Ackley, any d on [-32.768, 32.768]^d; minimum 0 at the origin.

        f(x) = -20 exp(-0.2 sqrt(mean_i x_i^2)) - exp(mean_i cos(2 pi x_i)) + 20 + e

    Example:
        >>> get_problem("ackley-5d").dim
        5
    """
    return _scalable("ackley", Ackley, dim, noise_std, target, _summary(make_ackley))


@register_problem("levy")
@register_problem("levy-{D}d")
def make_levy(
    dim: int | None = None, noise_std: float | None = None, target: Target = "center"
) -> Problem:
    r"""Levy, any d on [-10, 10]^d; minimum 0 at (1, ..., 1).

        f(x) = sin^2(pi w_1) + sum_{i<d} (w_i - 1)^2 (1 + 10 sin^2(pi w_i + 1))
               + (w_d - 1)^2 (1 + sin^2(2 pi w_d)),   w_i = 1 + (x_i - 1) / 4

    Example:
        >>> get_problem("levy-4d").optimal_value
        0.0
    """
    return _scalable("levy", Levy, dim, noise_std, target, _summary(make_levy))


@register_problem("rastrigin")
@register_problem("rastrigin-{D}d")
def make_rastrigin(
    dim: int | None = None, noise_std: float | None = None, target: Target = "center"
) -> Problem:
    r"""Rastrigin, any d on [-5.12, 5.12]^d; minimum 0 at the origin.

        f(x) = 10 d + sum_i (x_i^2 - 10 cos(2 pi x_i))

    Example:
        >>> get_problem("rastrigin-10d").bounds[:, 0].tolist()
        [-5.12, 5.12]
    """
    return _scalable("rastrigin", Rastrigin, dim, noise_std, target, _summary(make_rastrigin))


@register_problem("griewank")
@register_problem("griewank-{D}d")
def make_griewank(
    dim: int | None = None, noise_std: float | None = None, target: Target = "center"
) -> Problem:
    r"""Griewank, any d on [-600, 600]^d; minimum 0 at the origin.

        f(x) = sum_i x_i^2 / 4000 - prod_i cos(x_i / sqrt(i)) + 1

    Example:
        >>> get_problem("griewank-3d").dim
        3
    """
    return _scalable("griewank", Griewank, dim, noise_std, target, _summary(make_griewank))


@register_problem("schwefel")
@register_problem("schwefel-{D}d")
def make_schwefel(
    dim: int | None = None, noise_std: float | None = None, target: Target = "center"
) -> Problem:
    r"""Schwefel, any d on [-500, 500]^d; minimum 0 at (420.9687, ..., 420.9687).

        f(x) = 418.9829 d - sum_i x_i sin(sqrt(|x_i|))

    Example:
        >>> get_problem("schwefel-2d").default_point.tolist()
        [0.0, 0.0]
    """
    return _scalable("schwefel", Schwefel, dim, noise_std, target, _summary(make_schwefel))
