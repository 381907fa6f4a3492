"""Embedded problems: irrelevant dimensions, the seeded subset, optima, negation, targets."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions.base import ConstrainedBaseTestProblem, MultiObjectiveTestProblem
from botorch.test_functions.synthetic import Branin
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.errors import ConfigError, ProblemError
from dsbo.problems import get_problem
from dsbo.problems.embedded import EMBEDDABLE, EmbeddedTestProblem, embed

BASE_DIMS = {"branin": 2, "hartmann6": 6, "dtlz2": 6, "pressure-vessel": 4, "branin-currin": 2}


def _rand(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.rand(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.double)


@settings(max_examples=25, deadline=None)
@given(
    base=st.sampled_from(EMBEDDABLE),
    extra=st.integers(0, 40),
    embedding_seed=st.integers(0, 2**31 - 1),
    data_seed=st.integers(0, 2**31 - 1),
)
def test_irrelevant_dimensions_have_no_effect(
    base: str, extra: int, embedding_seed: int, data_seed: int
) -> None:
    dim = BASE_DIMS[base] + extra
    problem = get_problem(f"{base}-{dim}d", embedding_seed=embedding_seed)
    X = _rand(4, dim, data_seed)
    irrelevant = [j for j in range(dim) if j not in problem.relevant_dims]
    X_perturbed = X.clone()
    X_perturbed[:, irrelevant] = _rand(4, len(irrelevant), data_seed + 1)
    assert torch.equal(problem.evaluate_true(X), problem.evaluate_true(X_perturbed))


@settings(max_examples=25, deadline=None)
@given(base=st.sampled_from(EMBEDDABLE), data_seed=st.integers(0, 2**31 - 1))
def test_equals_the_base_problem_at_the_mapped_point(base: str, data_seed: int) -> None:
    """Objectives (negated once), slacks and the reference point are the base problem's."""
    problem = get_problem(f"{base}-30d", embedding_seed=3)
    base_problem = get_problem(base)
    X = _rand(4, 30, data_seed)
    Z = problem.test_problem.to_base(X)
    assert torch.allclose(problem.evaluate_true(X), base_problem.evaluate_true(Z), rtol=1e-12)
    assert torch.allclose(
        problem.test_problem.from_base(Z)[:, list(problem.relevant_dims)],
        X[:, list(problem.relevant_dims)],
    )
    assert problem.optimal_value == base_problem.optimal_value
    assert problem.objective_names == base_problem.objective_names
    assert problem.constraint_names == base_problem.constraint_names
    if base_problem.ref_point is not None:
        assert torch.equal(problem.ref_point, base_problem.ref_point)


@pytest.mark.parametrize("base", EMBEDDABLE)
def test_relevant_dims_are_a_seeded_random_subset(base: str) -> None:
    d = BASE_DIMS[base]
    dims = get_problem(f"{base}-50d").relevant_dims
    assert len(dims) == d == len(set(dims)) and list(dims) == sorted(dims)
    assert dims != tuple(range(d))
    assert get_problem(f"{base}-50d", embedding_seed=0).relevant_dims == dims
    others = {get_problem(f"{base}-50d", embedding_seed=s).relevant_dims for s in range(1, 6)}
    assert len(others | {dims}) > 1
    assert get_problem(f"{base}-{d}d").relevant_dims == tuple(range(d))  # D == d: all dims


def test_relevant_dims_are_pinned_for_seed_0() -> None:
    """Guards reproducibility across releases: changing the draw changes every benchmark."""
    assert get_problem("branin-50d").relevant_dims == (39, 44)
    assert get_problem("hartmann6-50d").relevant_dims == (6, 7, 17, 29, 39, 44)


def test_embedded_optimum_equals_the_base_optimum() -> None:
    for name in ["branin-50d", "branin-15d"]:
        problem = get_problem(name, embedding_seed=7)
        minimizers = problem.test_problem.base_problem.optimizers  # the three of Branin
        X = problem.test_problem.from_base(minimizers)
        X[:, [j for j in range(problem.dim) if j not in problem.relevant_dims]] = 0.123
        Y = problem.evaluate_true(X)
        assert torch.allclose(Y, torch.full_like(Y, problem.optimal_value), atol=1e-4)
    problem = get_problem("hartmann6-50d", embedding_seed=2)
    x = problem.test_problem.from_base(problem.test_problem.base_problem.optimizers, fill=0.9)
    assert problem.evaluate_true(x).item() == pytest.approx(3.32237, abs=1e-4)


def test_target_zero_center_explicit() -> None:
    assert torch.equal(
        get_problem("branin-50d", target="zero").default_point, torch.zeros(50).double()
    )
    assert torch.equal(get_problem("branin-50d").default_point, torch.full((50,), 0.5).double())
    point = torch.linspace(0, 1, 15).tolist()
    assert get_problem("hartmann6-15d", target=point).default_point.tolist() == point
    with pytest.raises(ConfigError, match="target has 6 entries, the problem has 15 dimensions"):
        get_problem("hartmann6-15d", target=[0.5] * 6)


def test_evaluate_shapes_slacks_and_objectives() -> None:
    X = _rand(7, 50, 0)
    pv = get_problem("pressure-vessel-50d")
    assert isinstance(pv.test_problem, ConstrainedBaseTestProblem)
    assert pv.evaluate(X).shape == (7, 1 + 4)
    assert pv.constraint_names == ("shell_thickness", "head_thickness", "volume", "length")
    assert pv.optimal_value == pytest.approx(-6059.946341)
    dtlz2 = get_problem("dtlz2-50d")
    assert isinstance(dtlz2.test_problem, MultiObjectiveTestProblem)
    assert dtlz2.evaluate(X).shape == (7, 2) and dtlz2.is_multi_objective
    assert dtlz2.ref_point.tolist() == pytest.approx([-1.1, -1.1])
    assert dtlz2.test_problem.max_hv == dtlz2.metadata["max_hv"]
    assert dtlz2.metadata["embedding_seed"] == 0 and dtlz2.metadata["base_problem"] == "dtlz2"


def test_the_unit_cube_corners_evaluate() -> None:
    """``l + (u - l) * 1`` may round past ``u``; the map clamps so BoTorch accepts it."""
    for base in EMBEDDABLE:
        problem = get_problem(f"{base}-20d")
        X = torch.stack([torch.zeros(20), torch.ones(20)]).double()
        assert torch.isfinite(problem.evaluate_true(X)).all()


def test_bad_points_raise_problem_error() -> None:
    problem = get_problem("branin-50d")
    with pytest.raises(ProblemError, match=r"X\[0, 3\] = 1.5 is outside the bounds \[0, 1\]"):
        X = torch.full((1, 50), 0.5, dtype=torch.double)
        X[0, 3] = 1.5
        problem.evaluate(X)
    with pytest.raises(ProblemError, match="must have shape n x 50"):
        problem.evaluate(torch.zeros(2, 2, dtype=torch.double))


def test_bad_embedding_options_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="hartmann6-{D}d: D=5 must be an integer >= 6"):
        get_problem("hartmann6-5d")
    with pytest.raises(ConfigError, match="embedding_seed=-1"):
        get_problem("branin-50d", embedding_seed=-1)
    with pytest.raises(ConfigError, match="embedding_seed=1.5"):
        get_problem("branin-50d", embedding_seed=1.5)


def test_noise_on_embedded_problems_only_when_asked() -> None:
    problem = get_problem("branin-50d", noise_std=2.0)
    X = problem.default_point.expand(1000, -1)
    torch.manual_seed(0)
    residual = problem.evaluate(X) - problem.evaluate(X, noise=False)
    assert residual.std().item() == pytest.approx(2.0, rel=0.1)
    assert torch.equal(problem.evaluate(X, noise=False), problem.evaluate_true(X))


def test_embed_directly() -> None:
    f = embed(Branin(negate=True), dim=10, seed=1)
    assert type(f) is EmbeddedTestProblem
    assert f.negate and f.optimal_value == pytest.approx(-0.397887)
    assert f(torch.rand(3, 10, dtype=torch.double)).shape == (3,)
    with pytest.raises(ConfigError, match="dim=1 is smaller"):
        embed(Branin(), dim=1)
