"""Context policies with every kind of surrogate: feature collapsing needs only Gaussian
moments; the regret-bound switch needs a noise model, and falls back to the median rule."""

import warnings

import pytest
import torch

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign.validation import synthetic_history
from dsbo.contexts import ContextState, make_context_policy
from dsbo.contexts.switching import noise_variance, regret_bound_check
from dsbo.problems import get_problem
from dsbo.surrogates import SurrogateSpec, fit_surrogate

CHEAP = OptimizerSettings(num_restarts=1, raw_samples=16, maxiter=5, mc_samples=16)
NEURAL = {"width": 16, "max_epochs": 5}


def state(name: str, options: dict, n: int = 8) -> ContextState:
    problem = get_problem("contextual-eggholder")
    history = synthetic_history(problem, CHEAP, n, seed=0)
    z = torch.full((len(problem.contexts),), 0.3, dtype=torch.double)
    return ContextState(
        problem=problem,
        X=history.X,
        Y=history.Y[:, 0],
        z=z,
        t=3,
        seed=0,
        surrogate=SurrogateSpec(name, options),
        optimizer=CHEAP,
    )


@pytest.mark.parametrize(
    "name, options",
    [
        ("gp", {}),
        ("map-saas", {}),
        ("neural-lints", NEURAL),
        ("neural-ucb", NEURAL),
        ("neural-ensemble", NEURAL),
    ],
)
def test_sadcbo_proposes_with_every_surrogate(name, options):
    warnings.simplefilter("ignore")
    s = state(name, options)
    proposal = make_context_policy("sadcbo", {"q_points": 2}, CHEAP).propose(s)
    s.problem.validate(proposal.x.reshape(1, -1))
    scores = proposal.metadata["scores"]
    assert set(scores) == set(s.problem.context_names) and abs(sum(scores.values()) - 1) < 1e-4
    check = proposal.metadata["switch_check"]
    assert check["delta_r"] >= 0 and check["kl"] >= 0
    # observed (not optimized) in the observational phase: the environment's values are kept
    for k, context in enumerate(s.problem.contexts):
        assert proposal.roles[s.problem.context_names[k]] in ("observed", "ignored")
        assert proposal.x[context.dim] == s.z[k]


@pytest.mark.parametrize(
    "name, options, rule",
    [
        ("gp", {}, "regret-bound"),
        ("neural-lints", NEURAL, "regret-bound"),
        ("neural-ucb", NEURAL, "median"),
    ],
)
def test_the_regret_bound_rule_needs_a_noise_model(name, options, rule):
    warnings.simplefilter("ignore")
    s = state(name, options)
    full = fit_surrogate(s.surrogate, s.X, s.Y.unsqueeze(-1), bounds=s.problem.bounds)
    previous = fit_surrogate(s.surrogate, s.X[:-1], s.Y[:-1].unsqueeze(-1), bounds=s.problem.bounds)
    assert (noise_variance(previous, s.X[-1]) > 1e-10) == (rule == "regret-bound")
    check = regret_bound_check(
        full,
        previous,
        s.X,
        s.Y,
        s.problem.bounds,
        beta=2.0,
        delta=0.05,
        optimizer=CHEAP,
        seed=0,
        rule="regret-bound",
    )
    assert check.rule == rule
