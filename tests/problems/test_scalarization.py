"""The MOBO-RS problems: the circle toy, Branin-4 x CurrinExp-4 and the six GP samples."""

from __future__ import annotations

import math

import torch
from botorch.test_functions.multi_objective import BraninCurrin

from dsbo.problems import get_problem
from dsbo.problems.scalarization import branin, currin


def test_circle_front_formula_and_exact_front():
    problem = get_problem("circle-front")
    X = torch.tensor([[0.6, 1.0], [0.3, 0.5], [1.0, 0.2]])
    Y = problem.evaluate_true(X)
    expected = torch.stack([X[:, 0] * X[:, 1], X[:, 1] * torch.sqrt(1 - X[:, 0] ** 2)], -1)
    assert torch.allclose(Y, expected)
    front = problem.metadata["pareto_front"]()
    assert torch.allclose(front.norm(dim=-1), torch.ones(front.shape[0]))  # f1^2 + f2^2 = 1
    assert torch.allclose(Y[0].norm(), torch.tensor(1.0))  # y = 1 is on the front


def test_branin4_currin4_is_a_sum_of_two_blocks_of_botorch_branin_currin():
    problem = get_problem("branin4-currin4")
    bc = BraninCurrin(dtype=torch.double)  # both minimized, on [0, 1]^2 (Branin rescaled)
    X = torch.rand(20, 4, generator=torch.Generator().manual_seed(0), dtype=torch.double)
    Y = problem.evaluate_true(X)
    blocks = bc.evaluate_true(X[:, :2]) + bc.evaluate_true(X[:, 2:])
    assert torch.allclose(Y[:, 0], -blocks[:, 0]) and torch.allclose(Y[:, 1], blocks[:, 1])
    low, high = problem.metadata["objective_bounds"]
    assert high[1] > 27 and high[1] < 2 * 13.8  # the thesis' top box [23, 27] sits below max f2
    assert abs(float(branin(torch.tensor(math.pi), torch.tensor(2.275))) - 0.397887) < 1e-5
    assert (
        abs(
            float(currin(torch.tensor(1.0), torch.tensor(0.0)))
            - float(bc.evaluate_true(torch.tensor([[1.0, 0.0]]))[0, 1])
        )
        < 1e-6
    )


def test_gp_samples_are_fixed_smooth_draws():
    a, b = get_problem("gp-samples-6"), get_problem("gp-samples-6")
    X = torch.rand(50, 6, generator=torch.Generator().manual_seed(1), dtype=torch.double)
    assert torch.equal(a.evaluate_true(X), b.evaluate_true(X))  # the same seed: the same functions
    other = get_problem("gp-samples-6", seed=1)
    assert not torch.allclose(a.evaluate_true(X), other.evaluate_true(X))
    Y = a.evaluate_true(
        torch.rand(4000, 6, generator=torch.Generator().manual_seed(2), dtype=torch.double)
    )
    # random Fourier features of a unit-variance SE kernel: mean ~ 0, variance ~ 1
    assert Y.mean().abs() < 0.3 and 0.5 < Y.var() < 1.6
    assert a.num_objectives == 6 and a.metadata["pareto_front"]().shape[1] == 6


def test_faiss_tuning_measures_a_real_index():
    import pytest

    from dsbo.errors import ConfigError

    problem = get_problem("faiss-ivf-tuning")
    assert problem.parameter_names == (
        "log2_nlist",
        "log2_nprobe",
        "log2_pq_m",
    ) and problem.integer_dims == (0, 1, 2)
    Y = problem.evaluate_true(torch.tensor([[4.0, 0.0, 2.0], [4.0, 4.0, 2.0]]))
    assert (Y[:, 0] < 0).all() and (Y[:, 2] < 0).all()  # -ms per query, -MB
    assert float(Y[1, 1]) > float(Y[0, 1])  # 16 probes of 16 lists find more true neighbours than 1
    with pytest.raises(ConfigError, match="multiple of 32"):
        get_problem("faiss-ivf-tuning", dim=48)
