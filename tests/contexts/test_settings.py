"""The campaign's ``contexts:`` settings and the environment: every bad input is a ConfigError
raised before anything is evaluated; names, costs and values are checked against the problem."""

import dataclasses
import math

import pytest
import torch

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.campaign.validation import synthetic_history
from dsbo.contexts import ContextSettings, ContextState, Environment, make_context_policy
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.problems.base import Context
from dsbo.storage import TrialStore
from dsbo.surrogates import SurrogateSpec

pytestmark = pytest.mark.filterwarnings("ignore")

CHEAP = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20)


def refused(match, problem="contextual-hartmann4", contexts="cbo", **kwargs):
    """The campaign is refused with a ConfigError; nothing was evaluated or stored."""
    store, calls = TrialStore(":memory:"), []

    def evaluator(x):
        calls.append(x)
        return 0.5

    settings = dict(
        surrogate="gp",
        n_init=4,
        budget_cost=10,
        seed=0,
        optimizer=CHEAP,
        store=store,
        evaluator=evaluator,
        contexts=contexts,
    )
    with pytest.raises(ConfigError, match=match):
        Campaign(get_problem(problem), **{**settings, **kwargs}).run()
    assert store.count() == 0 and calls == []


@pytest.mark.parametrize(
    "contexts, match",
    [
        ({"policy": "cbo", "costs": {"z9": 1.0}}, r"contexts\.costs: \['z9'\]"),
        ({"policy": "cbo", "observed": ["x1"]}, r"contexts\.observed: \['x1'\]"),
        ({"policy": "cbo", "fixed": ["z7"]}, r"contexts\.fixed: \['z7'\]"),
        ({"policy": "cbo", "observed": "z2"}, r"contexts\.observed must be a list"),
        (
            {"policy": "vbo", "costs": {"z2": -1.0}},
            r"contexts\.costs\.z2 must be a finite number >= 0",
        ),
        ({"policy": "vbo", "costs": {"n1": math.nan}}, r"contexts\.costs\.n1"),
        ({"policy": "vbo", "costs": {"n1": "cheap"}}, r"contexts\.costs\.n1"),
        (
            {"policy": "cbo", "fixed": ["z3"], "observed": ["z3", "z2"]},
            r"\['z3'\] cannot be both fixed",
        ),
        ({"policy": "sadcbo", "options": {"eta": 0}}, "eta"),
        ({"policy": "sadcbo", "options": {"eta": 1.5}}, "eta"),
        ({"policy": "mmdbo", "options": {"eta": 0.0}}, "eta"),
        ({"policy": "sadcbo", "options": {"gamma": 1.2}}, "gamma"),
        ({"policy": "sadcbo", "options": {"switch": "never"}}, "switch"),
        ({"policy": "sadcbo", "options": {"q_points": -1}}, "q_points"),
        ({"policy": "cbo", "options": {"beta": -1.0}}, "beta"),
        ({"policy": "cbo", "options": {"delta": 1.0}}, "delta"),
        ({"policy": "cabo", "options": {"lengthscale": 0}}, "lengthscale"),
        ({"policy": "nope"}, "nope"),
        ({"policy": "cbo", "wrong": 1}, r"no field\(s\) \['wrong'\]"),
        (3, "policy name or a mapping"),
    ],
)
def test_bad_contexts_settings_are_refused_before_any_evaluation(contexts, match):
    refused(match, contexts=contexts)


def test_unknown_policy_options_are_refused():
    refused("tau", contexts={"policy": "sadcbo", "options": {"tau": 1}})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"q": 2}, "q=2"),
        ({"acquisition": "qlognei"}, "context policy"),
        ({"acquisition": {"name": "ucb"}}, "context policy"),
        ({"postprocess": {"bonsai": {}}}, "postprocess"),
        ({"environment": 3}, "environment must be a callable"),
        ({"budget_cost": 0}, "budget_cost must be a finite number > 0"),
        ({"budget_cost": -2.0}, "budget_cost"),
        ({"budget_cost": math.inf}, "budget_cost"),
        ({"budget_cost": math.nan}, "budget_cost"),
        ({"budget_cost": True}, "budget_cost"),
    ],
)
def test_bad_campaign_settings_are_refused_before_any_evaluation(kwargs, match):
    refused(match, **kwargs)


def test_contexts_on_a_problem_without_contexts_are_refused():
    refused("branin has no context variables", problem="branin", contexts="vbo")


def test_resolve_applies_costs_and_returns_the_indices():
    problem = get_problem("contextual-hartmann4")
    settings = ContextSettings(
        policy="vbo", costs={"z3": 4.0, "n2": 0.0}, observed=["n1"], fixed=["z2", "n3"]
    )
    resolved, policy, fixed, observed = settings.resolve(problem, CHEAP)
    assert [c.cost for c in resolved.contexts] == [1.0, 4.0, 1.0, 0.0, 1.0]
    assert [c.cost for c in problem.contexts] == [1.0] * 5  # the problem itself is untouched
    assert fixed == frozenset({0, 4}) and observed == frozenset({2})
    assert policy.name == "vbo" and resolved.context_dims == problem.context_dims


def test_an_uncontrollable_context_cannot_be_fixed_and_is_never_optimized():
    base = get_problem("contextual-hartmann4")
    contexts = tuple(
        Context(c.dim, c.cost, controllable=(k != 1)) for k, c in enumerate(base.contexts)
    )
    problem = dataclasses.replace(base, contexts=contexts)
    with pytest.raises(ConfigError, match=r"contexts\.fixed: \['z3'\] can only be observed"):
        ContextSettings(policy="cbo", fixed=["z3"]).resolve(problem, CHEAP)
    history = synthetic_history(problem, CHEAP, 8, seed=0)
    z = torch.full((5,), 0.25, dtype=torch.double)
    state = ContextState(
        problem=problem,
        X=history.X,
        Y=history.Y[:, 0],
        z=z,
        t=2,
        seed=0,
        surrogate=SurrogateSpec("gp", {}),
        optimizer=CHEAP,
    )
    proposal = make_context_policy("vbo", {}, CHEAP).propose(state)
    assert proposal.roles["z3"] == "observed" and proposal.x[problem.contexts[1].dim] == 0.25
    assert proposal.cost == 5.0


# ---------------------------------------------------------------- the environment
@pytest.fixture
def environment():
    return Environment(get_problem("contextual-hartmann4"), seed=3)


@pytest.mark.parametrize(
    "given, match",
    [
        ({"z2": 0.1, "z3": 0.2, "n1": 0.3, "n2": 0.4}, r"missing \['n3'\]"),
        ({"z2": 0.1, "z3": 0.2, "n1": 0.3, "n2": 0.4, "n3": 0.5, "x1": 0.5}, r"unknown \['x1'\]"),
        (
            {"z2": 1.5, "z3": 0.2, "n1": 0.3, "n2": 0.4, "n3": 0.5},
            r"contexts\.z2=1\.5 is outside its bounds",
        ),
        ({"z2": 0.1, "z3": -0.01, "n1": 0.3, "n2": 0.4, "n3": 0.5}, r"contexts\.z3"),
        (
            {"z2": 0.1, "z3": 0.2, "n1": math.nan, "n2": 0.4, "n3": 0.5},
            r"contexts\.n1=nan must be a finite number",
        ),
        ({"z2": 0.1, "z3": 0.2, "n1": 0.3, "n2": math.inf, "n3": 0.5}, r"contexts\.n2"),
        ({"z2": True, "z3": 0.2, "n1": 0.3, "n2": 0.4, "n3": 0.5}, r"contexts\.z2"),
        ({"z2": "0.1", "z3": 0.2, "n1": 0.3, "n2": 0.4, "n3": 0.5}, r"contexts\.z2"),
        ([0.1, 0.2, 0.3], "3 values for the 5 contexts"),
    ],
)
def test_environment_parse_refuses_bad_values(environment, given, match):
    with pytest.raises(ConfigError, match=match):
        environment.parse(given)


def test_environment_parse_accepts_a_mapping_or_a_sequence(environment):
    given = {"n3": 0.5, "z2": 0.0, "z3": 1.0, "n1": 0.3, "n2": 0.4}
    assert environment.parse(given).tolist() == [0.0, 1.0, 0.3, 0.4, 0.5]  # in context order
    assert environment.parse([0.0, 1, 0.3, 0.4, 0.5]).tolist() == [0.0, 1.0, 0.3, 0.4, 0.5]


def test_simulated_draws_are_reproducible_and_within_p_z(environment):
    a, b = environment.values(7), environment.values(7)
    assert torch.equal(a, b) and not torch.equal(a, environment.values(8))
    draws = torch.stack([environment.values(i) for i in range(200)])
    assert (draws >= 0).all() and (draws <= 1).all() and 0.4 < float(draws.mean()) < 0.6
    # a source and given values take precedence over the simulation
    with_source = Environment(environment.problem, seed=3, source=lambda: [0.5] * 5)
    assert with_source.values(7).tolist() == [0.5] * 5
    assert with_source.values(7, given=[0.25] * 5).tolist() == [0.25] * 5


def test_a_campaign_uses_its_environment_and_given_contexts():
    reading = {"z2": 0.9, "z3": 0.1, "n1": 0.2, "n2": 0.3, "n3": 0.4}
    c = Campaign(
        get_problem("contextual-hartmann4"),
        surrogate="gp",
        n_init=3,
        budget_cost=5,
        seed=0,
        optimizer=CHEAP,
        contexts="cbo",
        environment=lambda: reading,
    )
    c.run()
    problem = c.problem
    for t in c.store.trials():
        assert t.metadata["context_values"] == reading
        assert [t.x[d] for d in problem.context_dims] == list(reading.values())
    # given values (a black box that reports its contexts) override the environment
    other = Campaign(
        get_problem("contextual-hartmann4"),
        surrogate="gp",
        n_init=3,
        budget_cost=5,
        seed=0,
        optimizer=CHEAP,
        contexts="cbo",
    )
    [trial] = other.ask(contexts=[0.5, 0.5, 0.5, 0.5, 0.125])
    assert [trial.x[d] for d in problem.context_dims] == [0.5, 0.5, 0.5, 0.5, 0.125]
    with pytest.raises(ConfigError, match="outside its bounds"):
        other.ask(contexts=[0.5, 0.5, 0.5, 0.5, 2.0])
    assert other.store.count() == 1
