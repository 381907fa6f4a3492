"""The reference point of objectives without thresholds (dsbo.acquisition.reference_point):
inferred from the observed fronts, never moved outward."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.acquisition import History
from dsbo.acquisition.plain import QLogNEHVI
from dsbo.acquisition.reference_point import inferred_point, stable_reference_point
from dsbo.problems import get_problem


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 40),
    n_design=st.integers(1, 12),
    seed=st.integers(0, 10_000),
)
def test_the_point_only_moves_inward_and_is_at_least_each_prefix_inferred_point(n, n_design, seed):
    Y = torch.randn(n, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.double)
    feasible = torch.ones(n, dtype=torch.bool)
    points = [stable_reference_point(Y[:t], feasible[:t], n_design) for t in range(1, n + 1)]
    for t in range(max(n_design, 1), n):  # past the design: never outward (never lower)
        assert torch.all(points[t] >= points[t - 1])
    start = min(n_design, n)
    torch.testing.assert_close(points[start - 1], inferred_point(Y[:start]))
    for t in range(start, n + 1):
        assert torch.all(points[t - 1] >= inferred_point(Y[:t]) - 1e-12)


def test_extending_the_front_ends_does_not_push_the_point_out():
    # a design front near (-1, -1) (maximized), then points at the far ends of the front
    design = torch.tensor([[-1.0, -1.2], [-1.2, -1.0], [-1.1, -1.1], [-2.0, -2.0]])
    ends = torch.tensor([[0.0, -2.5], [-2.5, 0.0]])
    Y = torch.cat([design, ends]).double()
    feasible = torch.ones(6, dtype=torch.bool)
    before = stable_reference_point(Y[:4], feasible[:4], n_design=4)
    after = stable_reference_point(Y, feasible, n_design=4)
    assert torch.all(inferred_point(Y) < before)  # BoTorch's point drifts outward
    torch.testing.assert_close(after, before)  # this one does not


def test_infeasible_rows_are_left_out_once_a_prefix_has_a_feasible_one():
    Y = torch.tensor([[-5.0, -5.0], [-1.0, -2.0], [-2.0, -1.0], [-9.0, -9.0]], dtype=torch.double)
    feasible = torch.tensor([False, True, True, False])
    point = stable_reference_point(Y, feasible, n_design=1)
    # prefix 1: only the infeasible row; later prefixes: their feasible rows
    expected = torch.stack([inferred_point(Y[:1]), inferred_point(Y[1:2]), inferred_point(Y[1:3])])
    expected = expected.max(dim=0).values
    torch.testing.assert_close(point, expected)


def test_qlognehvi_keeps_given_thresholds_and_infers_the_open_ones():
    problem = get_problem("branin-currin")
    Y = torch.tensor([[-10.0, -3.0], [-20.0, -1.0], [-5.0, -8.0]], dtype=torch.double)
    history = History(X=torch.rand(3, 2, dtype=torch.double), Y=Y, n_design=2)
    problem.ref_point = [-18.0, math.nan]
    point = QLogNEHVI().reference_point(history, problem)
    assert float(point[0]) == -18.0
    feasible = torch.ones(3, dtype=torch.bool)
    assert float(point[1]) == float(stable_reference_point(Y, feasible, 2)[1])
