r"""Low-dimensional test problems hidden in a high-dimensional unit cube.

A base problem ``f`` on a box ``[l, u] \subset R^d`` is embedded in ``[0, 1]^D`` (``D >= d``)
by choosing ``d`` *relevant* coordinates ``r_1 < ... < r_d`` of the ``D``:

    F(x) = f(l + (u - l) * x_r),    x_r = (x_{r_1}, ..., x_{r_d})

The other ``D - d`` coordinates have no effect. The relevant coordinates are a random subset
drawn with a ``torch.Generator`` seeded by ``embedding_seed`` (not simply the first ``d``,
which would favour methods that prefer low indices). This is the benchmark of SEBO (Liu et
al., *Sparse Bayesian optimization*, 2023: Branin-50d, Hartmann6-50d, target ``x^s = 0``,
option ``target="zero"``) and BONSAI (Daulton et al., 2025: DTLZ2-50d and others, target at
the centre, ``target="center"``, the default).

Registered families: ``branin-{D}d``, ``hartmann6-{D}d``, ``dtlz2-{D}d``,
``pressure-vessel-{D}d`` and ``branin-currin-{D}d``, e.g. ``branin-15d``, ``branin-50d``,
``hartmann6-15d``, ``hartmann6-50d``, ``dtlz2-50d``, ``pressure-vessel-50d``.

Negation happens exactly once: the base problem is built with ``negate=True`` and the
embedded problem copies its ``negate`` flag and noise level, evaluating the base problem's
*un-negated, noiseless* ``evaluate_true``; BoTorch's ``forward`` then adds noise and negates,
as for any test problem. Constraint slacks and the multi-objective reference point are
passed through unchanged (BoTorch does not negate slacks; ``ref_point`` is already negated).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import torch
from botorch.test_functions.base import (
    BaseTestProblem,
    ConstrainedBaseTestProblem,
    MultiObjectiveTestProblem,
)
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.problems.options import check_int, check_noise_std, from_test_problem
from dsbo.problems.registry import get_problem, register_problem


class EmbeddedTestProblem(BaseTestProblem):
    r"""A ``d``-dimensional test problem embedded in ``[0, 1]^D``.

    Use :func:`embed` to get the subclass matching the base problem (constrained and/or
    multi-objective), so that slacks and ``ref_point`` work as in BoTorch.

    Example:
        >>> from botorch.test_functions.synthetic import Branin
        >>> f = embed(Branin(negate=True), dim=50, seed=0)
        >>> f(torch.rand(3, 50, dtype=torch.double)).shape
        torch.Size([3])
    """

    def __init__(self, base_problem: BaseTestProblem, dim: int, seed: int = 0) -> None:
        r"""
        Args:
            base_problem: The ``d``-dimensional problem, continuous in every dimension
                (negated already, if it is to be maximized).
            dim: The ambient dimension ``D >= d``.
            seed: Seed of the ``torch.Generator`` drawing the relevant coordinates.
        """
        d = base_problem.dim
        if dim < d:
            raise ConfigError(f"dim={dim} is smaller than the base problem's dimension {d}")
        if sorted(base_problem.continuous_inds) != list(range(d)):
            raise ConfigError(
                f"{type(base_problem).__name__} has discrete or categorical inputs; "
                "only continuous problems can be embedded"
            )
        generator = torch.Generator().manual_seed(seed)
        perm = torch.randperm(dim, generator=generator)
        self.relevant_dims: tuple[int, ...] = tuple(sorted(perm[:d].tolist()))
        self.seed = seed
        self.dim = dim
        self.continuous_inds = list(range(dim))
        self._bounds = [(0.0, 1.0)] * dim
        self.num_objectives = getattr(base_problem, "num_objectives", 1)
        self._is_minimization_by_default = base_problem._is_minimization_by_default
        super().__init__(
            noise_std=base_problem.noise_std,
            negate=base_problem.negate,
            dtype=base_problem.bounds.dtype,
        )
        self.base_problem = base_problem

    def to_base(self, X: Tensor) -> Tensor:
        r"""Map ``batch x D`` points of the unit cube to ``batch x d`` base-problem points."""
        lb, ub = self.base_problem.bounds
        Z = lb + (ub - lb) * X[..., list(self.relevant_dims)]
        return torch.min(torch.max(Z, lb), ub)  # guard against rounding past a bound

    def from_base(self, Z: Tensor, fill: float = 0.5) -> Tensor:
        r"""Map ``batch x d`` base-problem points into the cube; irrelevant coordinates
        are set to ``fill``."""
        lb, ub = self.base_problem.bounds
        X = torch.full((*Z.shape[:-1], self.dim), fill, dtype=Z.dtype, device=Z.device)
        X[..., list(self.relevant_dims)] = (Z - lb) / (ub - lb)
        return X

    @property
    def optimal_value(self) -> float:
        return self.base_problem.optimal_value

    def _evaluate_true(self, X: Tensor) -> Tensor:
        return self.base_problem.evaluate_true(self.to_base(X))


class ConstrainedEmbeddedTestProblem(EmbeddedTestProblem, ConstrainedBaseTestProblem):
    r"""An embedded constrained problem: slacks are the base problem's at ``to_base(X)``."""

    def __init__(self, base_problem: ConstrainedBaseTestProblem, dim: int, seed: int = 0) -> None:
        self.num_constraints = base_problem.num_constraints
        self._worst_feasible_value = base_problem._worst_feasible_value
        super().__init__(base_problem, dim=dim, seed=seed)
        self.constraint_noise_std = base_problem.constraint_noise_std

    def _evaluate_slack_true(self, X: Tensor) -> Tensor:
        return self.base_problem.evaluate_slack_true(self.to_base(X))


class MultiObjectiveEmbeddedTestProblem(EmbeddedTestProblem, MultiObjectiveTestProblem):
    r"""An embedded multi-objective problem with the base problem's reference point."""

    def __init__(self, base_problem: MultiObjectiveTestProblem, dim: int, seed: int = 0) -> None:
        self._ref_point = list(base_problem._ref_point)  # negated by BoTorch iff negate
        super().__init__(base_problem, dim=dim, seed=seed)

    @property
    def max_hv(self) -> float:
        return self.base_problem.max_hv


class ConstrainedMultiObjectiveEmbeddedTestProblem(
    ConstrainedEmbeddedTestProblem, MultiObjectiveEmbeddedTestProblem
):
    r"""An embedded constrained multi-objective problem."""


def embed(base_problem: BaseTestProblem, dim: int, seed: int = 0) -> EmbeddedTestProblem:
    r"""Embed ``base_problem`` in ``[0, 1]^dim`` with the class matching its kind.

    Example:
        >>> from botorch.test_functions.synthetic import PressureVessel
        >>> f = embed(PressureVessel(negate=True), dim=50)
        >>> f.evaluate_slack(torch.rand(3, 50, dtype=torch.double)).shape
        torch.Size([3, 4])
    """
    constrained = isinstance(base_problem, ConstrainedBaseTestProblem)
    multi_objective = isinstance(base_problem, MultiObjectiveTestProblem)
    cls = {
        (False, False): EmbeddedTestProblem,
        (True, False): ConstrainedEmbeddedTestProblem,
        (False, True): MultiObjectiveEmbeddedTestProblem,
        (True, True): ConstrainedMultiObjectiveEmbeddedTestProblem,
    }[(constrained, multi_objective)]
    return cls(base_problem, dim=dim, seed=seed)


def make_embedded_problem(
    base: str,
    dim: int,
    noise_std: float | None = None,
    target: str | Sequence[float] = "center",
    embedding_seed: int = 0,
) -> Problem:
    r"""The registered problem ``base`` embedded in ``[0, 1]^dim``.

    Args:
        base: A registered fixed-dimension problem, e.g. ``"branin"``.
        dim: The ambient dimension ``D``, at least the base problem's.
        noise_std: Observation noise of the objectives.
        target: ``"center"`` (BONSAI), ``"zero"`` (SEBO's ``x^s = 0``) or ``D`` floats.
        embedding_seed: Seed choosing the relevant coordinates.

    Example:
        >>> problem = make_embedded_problem("hartmann6", dim=50, target="zero")
        >>> problem.name, len(problem.relevant_dims), problem.optimal_value
        ('hartmann6-50d', 6, 3.32237)
    """
    base_problem = get_problem(base, noise_std=check_noise_std(noise_std))
    dim = check_int(dim, f"{base}-{{D}}d: D", minimum=base_problem.dim)
    seed = check_int(embedding_seed, f"{base}-{dim}d: embedding_seed", minimum=0)
    f = embed(base_problem.test_problem, dim=dim, seed=seed)
    return from_test_problem(
        f"{base}-{dim}d",
        f,
        target=target,
        relevant_dims=f.relevant_dims,
        optimal_value=base_problem.optimal_value,
        objective_names=base_problem.objective_names,
        constraint_names=base_problem.constraint_names,
        description=f"{base_problem.description} Embedded in [0, 1]^{dim}.",
        metadata={**base_problem.metadata, "base_problem": base, "embedding_seed": seed},
    )


EMBEDDABLE = ("branin", "hartmann6", "dtlz2", "pressure-vessel", "branin-currin")

for _base in EMBEDDABLE:
    register_problem(
        f"{_base}-{{D}}d",
        f"{_base} embedded in [0, 1]^D: D - d random coordinates have no effect "
        f"(option embedding_seed)",
    )(partial(make_embedded_problem, _base))
