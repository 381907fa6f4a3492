"""Context policies (SADCBO and its baselines) on their own and in cost-budgeted campaigns: the
cost ledger, the roles, observed and fixed contexts, SADCBO's phase switch and resuming."""

import math
import warnings

import pytest
import torch

import dsbo.contexts.policies as policies_module
from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.campaign.validation import synthetic_history
from dsbo.contexts import ContextSettings, ContextState, make_context_policy
from dsbo.contexts.policies import ContextPolicy
from dsbo.problems import get_problem
from dsbo.problems.base import CONTEXT_ROLES
from dsbo.storage import TrialStore
from dsbo.surrogates import SurrogateSpec

pytestmark = pytest.mark.filterwarnings("ignore")

CHEAP = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20)
FAST_SADCBO = {"q_points": 1}


def campaign(policy, budget_cost, n_init=8, store=None, seed=0, problem=None, **settings):
    contexts = {"policy": policy, **settings}
    return Campaign(
        problem or get_problem("contextual-hartmann4"),
        surrogate="gp",
        n_init=n_init,
        budget_cost=budget_cost,
        seed=seed,
        optimizer=CHEAP,
        contexts=contexts,
        store=store,
        dry_run=False,
    )


def check_ledger(c: Campaign) -> list:
    """The ledger is the sum of the trial costs, each ``lambda_x + sum of the optimized contexts'
    costs``; contexts not optimized keep the environment's values; the budget is spent."""
    trials = c.store.trials()
    problem = c.problem  # with the cost overrides applied
    costs = dict(zip(problem.context_names, (ctx.cost for ctx in problem.contexts), strict=True))
    assert (
        c.cost_used == c.store.cost_used() == pytest.approx(sum(t.cost for t in trials), abs=1e-12)
    )
    expected = 0.0
    for t in trials:
        roles = t.metadata["contexts"]
        assert set(roles) == set(problem.context_names) and set(roles.values()) <= set(
            CONTEXT_ROLES
        )
        paid = problem.design_cost + sum(
            costs[n] for n, role in roles.items() if role == "optimized"
        )
        assert t.cost == pytest.approx(paid, abs=1e-12)
        expected += paid
        for name, ctx in zip(problem.context_names, problem.contexts, strict=True):
            if roles[name] != "optimized":
                assert t.x[ctx.dim] == t.metadata["context_values"][name]
    assert c.cost_used == pytest.approx(expected, abs=1e-12)
    assert c.cost_used <= c.budget_cost + 1e-9 < c.cost_used + problem.design_cost
    return trials


def bo_trials(trials, name):
    return [t for t in trials if t.generator == name]


# ---------------------------------------------------------------- campaigns: the ledger and roles
def test_vbo_pays_for_every_context_while_the_budget_allows():
    c = campaign("vbo", budget_cost=23)
    c.run()
    trials = check_ledger(c)
    # 8 design points (1 each), two full VBO iterations (1 + 5 contexts), then 2 left for contexts
    assert [t.cost for t in trials] == [1.0] * 8 + [6.0, 6.0, 3.0]
    assert [t.generator for t in trials] == ["sobol-init"] * 8 + ["vbo"] * 3
    for t in trials[8:10]:
        assert set(t.metadata["contexts"].values()) == {"optimized"}
    assert list(trials[10].metadata["contexts"].values()).count("optimized") == 2
    for t in trials[:8]:  # the initial design observes every context
        assert set(t.metadata["contexts"].values()) == {"observed"}
    assert c.cost_used == 23.0


@pytest.mark.parametrize("policy, role", [("cbo", "observed"), ("cubo", "ignored")])
def test_cbo_and_cubo_pay_only_the_design_cost(policy, role):
    c = campaign(policy, budget_cost=12)
    c.run()
    trials = check_ledger(c)
    assert len(trials) == 12 and all(t.cost == 1.0 for t in trials)
    for t in bo_trials(trials, policy):
        assert set(t.metadata["contexts"].values()) == {role}
    assert len(bo_trials(trials, policy)) == 4


def test_observed_contexts_are_never_optimized():
    c = campaign("vbo", budget_cost=18, observed=["z2"])
    c.run()
    trials = check_ledger(c)
    dim = c.problem.contexts[c.problem.context_names.index("z2")].dim
    vbo = bo_trials(trials, "vbo")
    assert len(vbo) == 2
    for t in vbo:
        roles = t.metadata["contexts"]
        assert roles.pop("z2") == "observed" and set(roles.values()) == {"optimized"}
        assert t.x[dim] == t.metadata["context_values"]["z2"] and t.cost == 5.0


def test_a_fixed_context_is_optimized_every_iteration():
    c = campaign("cbo", budget_cost=14, fixed=["z3"])
    c.run()
    trials = check_ledger(c)
    cbo = bo_trials(trials, "cbo")
    assert len(cbo) == 3
    for t in cbo:
        roles = t.metadata["contexts"]
        assert (
            roles.pop("z3") == "optimized" and set(roles.values()) == {"observed"} and t.cost == 2.0
        )


def test_cost_overrides_enter_the_ledger():
    c = campaign("vbo", budget_cost=8 + 7.5, costs={"z2": 2.5})
    assert (
        c.problem.contexts[0].cost == 2.5
        and get_problem("contextual-hartmann4").contexts[0].cost == 1.0
    )
    c.run()
    trials = check_ledger(c)
    assert [t.cost for t in trials[8:]] == [7.5]


@pytest.mark.parametrize(
    "policy, options", [("sadcbo", FAST_SADCBO), ("cabo", {}), ("dropout", {}), ("mmdbo", {})]
)
def test_every_policy_keeps_the_ledger(policy, options):
    c = campaign(policy, budget_cost=10, n_init=6, options=options)
    c.run()
    trials = check_ledger(c)
    assert len(bo_trials(trials, policy)) >= 1
    if policy == "dropout":  # half of the 5 contexts, rounded up, while affordable
        first = bo_trials(trials, policy)[0]
        assert (
            list(first.metadata["contexts"].values()).count("optimized") == 3 and first.cost == 4.0
        )


# ---------------------------------------------------------------- SADCBO's phases
def phases(trials):
    return [t.metadata["phase"] for t in bo_trials(trials, "sadcbo")]


def test_switch_after_forces_the_optimization_phase_from_that_iteration():
    c = campaign("sadcbo", budget_cost=14, n_init=6, options={**FAST_SADCBO, "switch_after": 2})
    c.run()
    trials = check_ledger(c)
    sad = bo_trials(trials, "sadcbo")
    assert phases(trials) == ["observational"] + ["optimization"] * (len(sad) - 1) and len(sad) >= 3
    assert not any("switch_check" in t.metadata for t in sad)
    # observational: nothing paid for; optimization: the kept contexts are optimized (and paid)
    assert sad[0].cost == 1.0 and "optimized" not in sad[0].metadata["contexts"].values()
    kept = sad[1].metadata["kept"]
    optimized = [n for n, r in sad[1].metadata["contexts"].items() if r == "optimized"]
    assert optimized and set(optimized) <= set(kept)
    for t in sad:
        assert abs(sum(t.metadata["scores"].values()) - 1) < 1e-4


def test_the_switch_fires_at_most_once_and_then_no_more_checks():
    # delta and beta chosen so that the regret-bound rule fires early on this seed
    c = campaign(
        "sadcbo", budget_cost=16, n_init=6, options={"q_points": 1, "delta": 1e-12, "beta": 0.2}
    )
    c.run()
    trials = check_ledger(c)
    sad = bo_trials(trials, "sadcbo")
    fired = [i for i, t in enumerate(sad) if t.metadata.get("switch_check", {}).get("fired")]
    assert len(fired) == 1
    k = fired[0]
    assert k < len(sad) - 1  # at least one iteration after the switch
    assert all("switch_check" in t.metadata for t in sad[1 : k + 1])
    assert not any("switch_check" in t.metadata for t in sad[k + 1 :])
    assert phases(trials) == ["observational"] * k + ["optimization"] * (len(sad) - k)
    assert all(t.metadata["switch_check"]["rule"] == "regret-bound" for t in sad[1 : k + 1])


def test_the_median_rule_never_switches_in_fewer_than_twenty_iterations():
    c = campaign("sadcbo", budget_cost=10, n_init=5, options={"q_points": 0, "switch": "median"})
    c.run()
    trials = check_ledger(c)
    sad = bo_trials(trials, "sadcbo")
    assert len(sad) == 5 and set(phases(trials)) == {"observational"}
    checks = [t.metadata["switch_check"] for t in sad[1:]]
    assert len(checks) == 4 and all(ch["rule"] == "median" and not ch["fired"] for ch in checks)
    assert all(t.cost == 1.0 for t in sad)


# ---------------------------------------------------------------- resuming
def test_a_resumed_campaign_keeps_its_ledger_and_its_phase(tmp_path):
    path = tmp_path / "trials.sqlite"
    first = campaign(
        "sadcbo",
        budget_cost=16,
        n_init=6,
        store=TrialStore(path),
        options={**FAST_SADCBO, "switch_after": 2},
    )
    while len(first.store.trials()) < 8:
        first.step()
    before = {t.id: t.cost for t in first.store.trials()}
    assert phases(first.store.trials()) == ["observational", "optimization"]
    first.store.close()

    # no switch_after now: the phase comes from the store, so no check is made any more
    resumed = campaign(
        "sadcbo", budget_cost=16, n_init=6, store=TrialStore(path), options=FAST_SADCBO
    )
    resumed.run()
    trials = check_ledger(resumed)
    assert {t.id: t.cost for t in trials[:8]} == before
    new = bo_trials(trials[8:], "sadcbo")
    assert new and all(t.metadata["phase"] == "optimization" for t in new)
    assert not any("switch_check" in t.metadata for t in new)
    resumed.store.close()
    with TrialStore(path) as store:
        assert store.cost_used() == pytest.approx(sum(t.cost for t in trials))


def test_a_resumed_campaign_continues_the_switch_checks(tmp_path, monkeypatch):
    path = tmp_path / "trials.sqlite"
    options = {"q_points": 0, "switch": "median"}
    first = campaign("sadcbo", budget_cost=8, n_init=4, store=TrialStore(path), options=options)
    for _ in range(6):
        first.step()
    earlier = [
        t.metadata["switch_check"]["delta_r"]
        for t in first.store.trials()
        if "switch_check" in t.metadata
    ]
    assert len(earlier) == 1
    first.store.close()

    histories = []
    real = policies_module.regret_bound_check

    def spy(*args, **kwargs):
        histories.append(list(kwargs["history"]))
        return real(*args, **kwargs)

    resumed = campaign("sadcbo", budget_cost=8, n_init=4, store=TrialStore(path), options=options)
    monkeypatch.setattr(policies_module, "regret_bound_check", spy)
    resumed.run()
    trials = check_ledger(resumed)
    assert len(trials) == 8 and len(histories) == 2
    assert histories[0] == earlier and histories[1][:1] == earlier and len(histories[1]) == 2
    assert histories[1][1] == trials[6].metadata["switch_check"]["delta_r"]
    resumed.store.close()


# ---------------------------------------------------------------- policies on their own
@pytest.fixture(scope="module")
def problem():
    return get_problem("contextual-hartmann4", context_cost=[1.0, 2.0, 1.0, 1.0, 1.0])


def make_state(problem, **overrides):
    history = synthetic_history(problem, CHEAP, 10, seed=0)
    z = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.6], dtype=torch.double)
    fields = dict(
        problem=problem,
        X=history.X,
        Y=history.Y[:, 0],
        z=z,
        t=3,
        seed=0,
        surrogate=SurrogateSpec("gp", {}),
        optimizer=CHEAP,
    )
    return ContextState(**{**fields, **overrides})


def test_affordable_spends_at_most_the_available_cost_fixed_contexts_first(problem):
    state = make_state(problem, affordable=2.0, fixed=frozenset({4}))
    chosen = ContextPolicy.affordable(state, [1, 0, 4, 2, 3])
    assert chosen[0] == 4 and sum(state.cost(k) for k in chosen) <= 2.0 and 1 not in chosen
    assert ContextPolicy.affordable(make_state(problem), [3, 1, 0]) == [3, 1, 0]  # no cost budget
    assert ContextPolicy.affordable(make_state(problem, affordable=0.5), [0, 1, 2]) == []


def test_beta_follows_srinivas_or_a_number():
    policy = make_context_policy("cbo", {}, CHEAP)
    assert policy.beta_at(3, 7) == pytest.approx(2 * math.log(7 * 9 * math.pi**2 / (6 * 0.05)))
    assert make_context_policy("cbo", {"beta": 0.2}, CHEAP).beta_at(3, 7) == 0.2


@pytest.mark.parametrize(
    "name, roles", [("cubo", {"ignored"}), ("cbo", {"observed"}), ("vbo", {"optimized"})]
)
def test_baseline_roles_and_the_environments_values(problem, name, roles):
    state = make_state(problem)
    proposal = make_context_policy(name, {}, CHEAP).propose(state)
    assert set(proposal.roles.values()) == roles
    problem.validate(proposal.x.reshape(1, -1))
    for k, ctx in enumerate(problem.contexts):
        if name != "vbo":
            assert proposal.x[ctx.dim] == state.z[k]
    assert proposal.cost == 1.0 + (6.0 if name == "vbo" else 0.0)


def test_cubo_models_the_design_only_and_vbo_everything(problem):
    state = make_state(problem)
    assert ContextPolicy.columns(state, []) == list(problem.design_dims) == [0, 3]
    assert ContextPolicy.columns(state, [0, 1, 2, 3, 4]) == list(range(problem.dim))


def test_observe_only_contexts_are_not_optimized_by_vbo(problem):
    state = make_state(problem, observe_only=frozenset({0, 2}))
    proposal = make_context_policy("vbo", {}, CHEAP).propose(state)
    assert proposal.roles == {
        "z2": "observed",
        "z3": "optimized",
        "n1": "observed",
        "n2": "optimized",
        "n3": "optimized",
    }
    assert (
        proposal.x[problem.contexts[0].dim] == state.z[0]
        and proposal.x[problem.contexts[2].dim] == state.z[2]
    )
    assert proposal.cost == 1.0 + 2.0 + 1.0 + 1.0


def test_sadcbo_scores_per_unit_cost_eq_9(problem):
    policy = make_context_policy("sadcbo", {}, CHEAP)
    scaled = policy.per_unit_cost(
        make_state(problem), torch.tensor([0.4, 0.4, 0.2, 0.0, 0.0], dtype=torch.double)
    )
    # costs 1, 2, 1, 1, 1: [0.4, 0.2, 0.2, 0, 0] / 0.8
    assert torch.allclose(scaled, torch.tensor([0.5, 0.25, 0.25, 0.0, 0.0], dtype=torch.double))


def test_sadcbo_in_the_optimization_phase_checks_nothing_and_optimizes_the_kept(problem):
    state = make_state(problem, phase="optimization")
    proposal = make_context_policy("sadcbo", {"q_points": 2}, CHEAP).propose(state)
    meta = proposal.metadata
    assert "switch_check" not in meta and meta["phase"] == "optimization"
    optimized = sorted(n for n, r in proposal.roles.items() if r == "optimized")
    assert optimized == sorted(meta["kept"])
    assert all(r == "ignored" for n, r in proposal.roles.items() if n not in meta["kept"])
    assert proposal.cost == 1.0 + sum(state.cost(problem.context_names.index(n)) for n in optimized)


def test_sadcbo_observational_phase_observes_the_kept(problem):
    state = make_state(problem, t=1)
    proposal = make_context_policy("sadcbo", {"q_points": 2}, CHEAP).propose(state)
    meta = proposal.metadata
    assert (
        meta["phase"] == "observational" and "switch_check" not in meta
    )  # t = 1: no earlier model
    assert {n for n, r in proposal.roles.items() if r == "observed"} == set(meta["kept"])
    assert proposal.cost == 1.0
    top = int(
        torch.count_nonzero(
            (state.Y - state.Y.min()) / (state.Y.max() - state.Y.min()) >= 0.8 - 1e-12
        )
    )
    assert meta["num_scored"] == top + 2


def test_q_ucb_points_keep_the_environments_contexts(problem):
    from dsbo.surrogates import fit_surrogate

    warnings.simplefilter("ignore")
    state = make_state(problem)
    policy = make_context_policy("sadcbo", {"q_points": 3}, CHEAP)
    model = fit_surrogate(state.surrogate, state.X, state.Y.unsqueeze(-1), bounds=problem.bounds)
    points = policy.q_ucb_points(state, model)
    assert points.shape == (3, problem.dim)
    assert torch.equal(points[:, list(problem.context_dims)], state.z.expand(3, -1))


def test_context_settings_coerce():
    assert ContextSettings.coerce("vbo") == ContextSettings(policy="vbo")
    assert ContextSettings.coerce(None) is None
    settings = ContextSettings.coerce({"policy": "cbo", "fixed": ["z3"]})
    assert settings.policy == "cbo" and settings.fixed == ["z3"]


@pytest.mark.parametrize(
    "name, options, phase, seed",
    [
        ("sadcbo", {"q_points": 2}, "optimization", 0),
        ("mmdbo", {}, "observational", 0),
        ("dropout", {}, "observational", 2),
        ("cabo", {}, "observational", 0),
    ],
)
def test_fixed_contexts_are_optimized_by_every_policy(problem, name, options, phase, seed):
    # ContextSettings / policies docstrings: "contexts marked fixed are optimized (and paid for)
    # every iteration", whatever the policy would choose on its own
    state = make_state(problem, fixed=frozenset({0, 4}), phase=phase, seed=seed)
    proposal = make_context_policy(name, options, CHEAP).propose(state)
    assert proposal.roles["z2"] == proposal.roles["n3"] == "optimized"
