"""The neural-greedy policy: the surrogate is the acquisition."""

import pytest
import torch

from dsbo.acquisition import History, make_policy
from dsbo.acquisition.plain import neural_greedy_exploration
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate


def test_greedy_proposes_the_maximizer_of_the_posterior_mean(fast_optimizer):
    problem = get_problem("branin")
    X = torch.tensor([[-2.0, 5.0], [3.0, 2.0], [8.0, 10.0], [0.0, 14.0], [9.0, 3.0], [-4.0, 1.0]])
    Y = problem.evaluate(X)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    proposal = make_policy("greedy", {}, fast_optimizer).propose(
        model, History(X=X, Y=Y, seed=0, t=6), problem, 1
    )
    grid = torch.stack(
        torch.meshgrid(torch.linspace(-5, 10, 61), torch.linspace(0, 15, 61), indexing="ij"), -1
    )
    grid_best = model.posterior(grid.reshape(-1, 2)).mean.max()
    with torch.no_grad():
        found = model.posterior(proposal.X).mean.squeeze()
    assert found >= grid_best - 1e-2 * grid_best.abs()
    assert proposal.metadata[0]["acquisition"] == "greedy"


def test_greedy_refuses_batches_and_constraints(fast_optimizer):
    problem = get_problem("pressure-vessel")
    X = problem.default_point.unsqueeze(0).repeat(3, 1) * torch.tensor([[1.0], [0.9], [1.1]])
    Y = problem.evaluate(X)
    model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    with pytest.raises(ConfigError, match="constraints"):
        make_policy("greedy", {}, fast_optimizer).propose(
            model, History(X=X, Y=Y, seed=0, t=3), problem, 1
        )
    with pytest.raises(ConfigError, match="q: 1"):
        make_policy("greedy", {}, fast_optimizer).propose(
            model, History(X=X, Y=Y, seed=0, t=3), problem, 2
        )


@pytest.mark.parametrize(
    ("dim", "budget", "expected"), [(2, 50, 4), (6, 80, 6), (2, 1000, 25), (5, 100, 8), (1, 10, 1)]
)
def test_exploration_phase_is_clipped_to_the_budget(dim, budget, expected):
    """T_e = clip(5d, 2.5% T, 7.5% T): Branin T=50 -> 3.75 -> 4, Hartmann6 T=80 -> 6."""
    assert neural_greedy_exploration(dim, budget) == expected
