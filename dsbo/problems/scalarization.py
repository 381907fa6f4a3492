r"""The multi-objective problems of the random-scalarization experiments (Paria thesis ch. 2).

All are in the maximization sense, on the unit cube, and carry what the Bayes regret
(:func:`dsbo.acquisition.scalarized.bayes_regret`) needs in their metadata:
``objective_bounds`` (``2 x m``, the affine map of each objective to [0, 1], as the thesis
normalizes objectives) and ``pareto_front`` (a function returning a sample of the true
Pareto front, exact where it is known in closed form, else the non-dominated points of a
dense scrambled Sobol set).

- ``circle-front`` (thesis figure 2.3): :math:`f_1 = x y`, :math:`f_2 = y\sqrt{1 - x^2}` on
  :math:`[0, 1]^2`; the front is the quarter circle :math:`f_1^2 + f_2^2 = 1` (``y = 1``).
- ``branin4-currin4`` (section 2.4): :math:`f_1 = -(b(x_1, x_2) + b(x_3, x_4))` and
  :math:`f_2 = c(x_1, x_2) + c(x_3, x_4)`, with :math:`b` Branin on
  :math:`[-5, 10] \times [0, 15]` and :math:`c` Currin's exponential function on
  :math:`[0, 1]^2`. The thesis calls them the 4-dimensional counterparts of Branin and
  CurrinExp without a formula; dsbo reads them as sums of two 2-D blocks, which is what the
  thesis' bounding boxes fit: its ``top`` box :math:`f_2 \in [23, 27]` lies just below the
  maximum 27.6 of the sum (one block peaks at 13.8), and :math:`f_1 \in [-110, -95]` is
  inside the range [-616, -0.8] of the negated sum.
- ``gp-samples-6`` (section 2.4): six objectives :math:`f_k \sim GP(0, \kappa)` on
  :math:`[0, 1]^6` with a squared-exponential kernel, drawn once with random Fourier
  features (Rahimi & Recht 2007): :math:`f_k(x) = \sqrt{2/M} \sum_j a_{kj}\cos(\omega_{kj}^T x
  + b_{kj})`, :math:`\omega \sim N(0, \ell^{-2} I)`, :math:`a \sim N(0, 1)`,
  :math:`b \sim U(0, 2\pi)`, with a fixed seed.
"""

from __future__ import annotations

import functools
import math

import torch
from botorch.test_functions.base import MultiObjectiveTestProblem
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.problems.options import check_int, check_noise_std, from_test_problem
from dsbo.problems.registry import register_problem

#: Scrambled Sobol points whose non-dominated subset stands in for an unknown front.
FRONT_SAMPLE_SIZE = 2**14


def branin(x1: Tensor, x2: Tensor) -> Tensor:
    """Branin on ``[-5, 10] x [0, 15]`` (minimum 0.397887)."""
    a, b, c = 1.0, 5.1 / (4 * math.pi**2), 5.0 / math.pi
    r, s, t = 6.0, 10.0, 1.0 / (8 * math.pi)
    return a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * torch.cos(x1) + s


def currin(x1: Tensor, x2: Tensor) -> Tensor:
    """Currin's exponential function on ``[0, 1]^2`` (maximum about 13.8)."""
    x2 = x2.clamp_min(1e-12)  # the limit at x2 = 0 is 1 - exp(-inf) = 1
    factor = 1 - torch.exp(-1 / (2 * x2))
    return (
        factor
        * (2300 * x1**3 + 1900 * x1**2 + 2092 * x1 + 60)
        / (100 * x1**3 + 500 * x1**2 + 4 * x1 + 20)
    )


class CircleFront(MultiObjectiveTestProblem):
    """f1 = x y, f2 = y sqrt(1 - x^2) on [0, 1]^2 (maximized; thesis figure 2.3)."""

    dim = 2
    continuous_inds = [0, 1]
    num_objectives = 2
    _bounds = [(0.0, 1.0), (0.0, 1.0)]
    _ref_point = [0.0, 0.0]
    _max_hv = math.pi / 4

    def _evaluate_true(self, X: Tensor) -> Tensor:
        x, y = X[..., 0], X[..., 1]
        return torch.stack([x * y, y * torch.sqrt((1 - x**2).clamp_min(0.0))], dim=-1)


class BraninCurrin4(MultiObjectiveTestProblem):
    """-(Branin + Branin) and Currin + Currin over two 2-D blocks of [0, 1]^4 (maximized)."""

    dim = 4
    continuous_inds = [0, 1, 2, 3]
    num_objectives = 2
    _bounds = [(0.0, 1.0)] * 4
    _ref_point = [-616.3, 0.0]

    def _evaluate_true(self, X: Tensor) -> Tensor:
        f1 = sum(branin(15 * X[..., i] - 5, 15 * X[..., i + 1]) for i in (0, 2))
        f2 = sum(currin(X[..., i], X[..., i + 1]) for i in (0, 2))
        return torch.stack([-f1, f2], dim=-1)


class GPSamples(MultiObjectiveTestProblem):
    """``m`` draws of a squared-exponential GP on [0, 1]^d by random Fourier features."""

    def __init__(
        self,
        dim: int = 6,
        num_objectives: int = 6,
        lengthscale: float = 0.3,
        features: int = 512,
        seed: int = 0,
        noise_std: float | None = None,
    ) -> None:
        self.dim = dim
        self.continuous_inds = list(range(dim))
        self.num_objectives = num_objectives
        self._bounds = [(0.0, 1.0)] * dim
        self._ref_point = [-10.0] * num_objectives
        super().__init__(noise_std=noise_std, dtype=torch.double)
        g = torch.Generator().manual_seed(seed)
        self.register_buffer(
            "omega",
            torch.randn(num_objectives, features, dim, generator=g, dtype=torch.double)
            / lengthscale,
        )
        self.register_buffer(
            "phase",
            2 * math.pi * torch.rand(num_objectives, features, generator=g, dtype=torch.double),
        )
        self.register_buffer(
            "amplitude", torch.randn(num_objectives, features, generator=g, dtype=torch.double)
        )
        self.features = features

    def _evaluate_true(self, X: Tensor) -> Tensor:
        # ... x d -> ... x m
        proj = torch.einsum("...d,mfd->...mf", X, self.omega) + self.phase
        return math.sqrt(2.0 / self.features) * (self.amplitude * torch.cos(proj)).sum(-1)


def sampled_front(f: MultiObjectiveTestProblem, n: int = FRONT_SAMPLE_SIZE) -> Tensor:
    """Non-dominated noiseless values of ``n`` scrambled Sobol points (seed 0) of the box."""
    sobol = torch.quasirandom.SobolEngine(f.dim, scramble=True, seed=0)
    lower, upper = f.bounds
    X = lower + (upper - lower) * sobol.draw(n, dtype=torch.double)
    Y = f.evaluate_true(X)
    return Y[is_non_dominated(Y)]


def _range_of(f: MultiObjectiveTestProblem, n: int = FRONT_SAMPLE_SIZE) -> Tensor:
    """``2 x m`` min and max of the noiseless objectives over ``n`` Sobol points."""
    sobol = torch.quasirandom.SobolEngine(f.dim, scramble=True, seed=1)
    lower, upper = f.bounds
    Y = f.evaluate_true(lower + (upper - lower) * sobol.draw(n, dtype=torch.double))
    return torch.stack([Y.min(0).values, Y.max(0).values])


def circle_front(n: int = 2001) -> Tensor:
    """The exact front of ``circle-front``: ``(cos t, sin t)``, ``t`` in ``[0, pi/2]``."""
    t = torch.linspace(0, math.pi / 2, n, dtype=torch.double)
    return torch.stack([torch.cos(t), torch.sin(t)], dim=-1)


@register_problem("circle-front")
def make_circle_front(noise_std: float | None = None, target: str = "center") -> Problem:
    r"""Two objectives x y and y sqrt(1 - x^2) on [0, 1]^2 (Paria thesis fig. 2.3); quarter-circle front."""
    f = CircleFront(noise_std=check_noise_std(noise_std))
    return from_test_problem(
        "circle-front",
        f,
        target=target,
        objective_names=("f1", "f2"),
        description=make_circle_front.__doc__.strip().split("\n")[0],
        metadata={
            "max_hv": math.pi / 4,
            "objective_bounds": [[0.0, 0.0], [1.0, 1.0]],
            "pareto_front": circle_front,
        },
    )


@functools.cache
def _branin_currin4_facts() -> tuple[list, Tensor]:
    f = BraninCurrin4()
    return _range_of(f).tolist(), sampled_front(f, 2**17)


@register_problem("branin4-currin4")
def make_branin_currin4(noise_std: float | None = None, target: str = "center") -> Problem:
    r"""-(Branin-4) and CurrinExp-4 as sums of two 2-D blocks on [0, 1]^4 (Paria thesis sec. 2.4)."""
    f = BraninCurrin4(noise_std=check_noise_std(noise_std))
    bounds, _ = _branin_currin4_facts()
    return from_test_problem(
        "branin4-currin4",
        f,
        target=target,
        objective_names=("neg_branin4", "currin4"),
        description=make_branin_currin4.__doc__.strip().split("\n")[0],
        metadata={"objective_bounds": bounds, "pareto_front": lambda: _branin_currin4_facts()[1]},
        ref_point=torch.tensor(bounds[0], dtype=torch.double),
    )


@functools.cache
def _gp_samples_facts(dim: int, m: int, lengthscale: float, seed: int) -> tuple[list, Tensor]:
    f = GPSamples(dim, m, lengthscale, seed=seed)
    return _range_of(f).tolist(), sampled_front(f)


@register_problem("gp-samples-6")
def make_gp_samples(
    noise_std: float | None = None,
    target: str = "center",
    num_objectives: int = 6,
    lengthscale: float = 0.3,
    seed: int = 0,
) -> Problem:
    r"""Six GP-sample objectives (squared-exponential, random Fourier features) on [0, 1]^6 (Paria sec. 2.4)."""
    m = check_int(num_objectives, "num_objectives", 2)
    if (
        isinstance(lengthscale, bool)
        or not isinstance(lengthscale, int | float)
        or not lengthscale > 0
    ):
        raise ConfigError(f"lengthscale={lengthscale!r} must be a number > 0")
    seed = check_int(seed, "seed", 0)
    f = GPSamples(6, m, float(lengthscale), seed=seed, noise_std=check_noise_std(noise_std))
    bounds, _ = _gp_samples_facts(6, m, float(lengthscale), seed)
    return from_test_problem(
        "gp-samples-6",
        f,
        target=target,
        objective_names=tuple(f"f{k + 1}" for k in range(m)),
        description=make_gp_samples.__doc__.strip().split("\n")[0],
        metadata={
            "objective_bounds": bounds,
            "pareto_front": lambda: _gp_samples_facts(6, m, float(lengthscale), seed)[1],
        },
        ref_point=torch.tensor(bounds[0], dtype=torch.double),
    )


__all__ = ["BraninCurrin4", "CircleFront", "GPSamples", "branin", "currin", "sampled_front"]
