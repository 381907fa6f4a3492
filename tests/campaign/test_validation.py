"""The dry iteration accepts every valid combination, leaves the random state alone, and
fixed features are checked, never clamped."""

import pytest
import torch

from dsbo.acquisition import OptimizerSettings, available_policies, make_policy
from dsbo.campaign import Campaign
from dsbo.campaign.validation import check_campaign, check_fixed_features, synthetic_history
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import SurrogateSpec, available_surrogates

FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=10, batch_limit=2, mc_samples=16)
#: Cheap but valid options for the surrogates whose defaults take long on a laptop.
CHEAP_OPTIONS = {
    "saasbo": {"warmup_steps": 16, "num_samples": 16, "thinning": 4},
    "simple-smb": {"width": 64, "max_epochs": 50},
    "posterior-smb": {"width": 64, "max_epochs": 50},
    "neural-ensemble": {"width": 64, "max_epochs": 50},
    "neural-lints": {"width": 64, "max_epochs": 50},
    "neural-ucb": {"max_epochs": 50},
    "vfe": {"maxiter": 20},
    "fitc": {"maxiter": 20},
}
#: A problem each policy is meant for.
PROBLEM_FOR = {
    "qlognehvi": "branin-currin",
    "qparego": "branin-currin",
    "mobo-rs": "branin-currin",
    "sebo": "branin-6d",
    "cost-ids": "cost-branin",
    "pool": "pool",
}
PROBLEM_OPTIONS = {"pool": {"size": 2000, "dim": 16, "density": 0.25}}


@pytest.mark.parametrize("name", sorted(available_surrogates()))
def test_every_surrogate_passes_the_dry_run_on_a_constrained_problem(name):
    spec = SurrogateSpec(name, CHEAP_OPTIONS.get(name, {}))
    # 4 outcome constraints: 5 outputs to fit (SAASBO: one, its NUTS compiles per output)
    problem = get_problem("branin" if name == "saasbo" else "pressure-vessel")
    check_campaign(problem, spec, make_policy("qlognei", {}, FAST), FAST, q=1)


@pytest.mark.parametrize("name", sorted(set(available_policies()) - {"sobol"}))
@pytest.mark.parametrize("q", [1, 2])
def test_every_policy_passes_the_dry_run_on_its_kind_of_problem(name, q):
    policy = make_policy(name, {}, FAST)
    if q > 1 and not getattr(policy, "supports_batch", True):
        with pytest.raises(ConfigError, match=f"q={q}"):
            check_campaign(get_problem("branin"), SurrogateSpec("gp"), policy, FAST, q=q)
        return
    problem = get_problem(PROBLEM_FOR.get(name, "branin"), **PROBLEM_OPTIONS.get(name, {}))
    surrogate = SurrogateSpec("sparse-linear" if name == "pool" else "gp")
    check_campaign(problem, surrogate, policy, FAST, q=q)


def test_bonsai_with_constraints_and_batches_passes():
    policy = make_policy("qlognei", {}, FAST)
    from dsbo.acquisition.base import make_postprocessor

    policy.postprocessor = make_postprocessor("bonsai", {"rho": 0.2})
    check_campaign(get_problem("pressure-vessel-8d"), SurrogateSpec("gp"), policy, FAST, q=2)


def test_the_dry_run_leaves_the_campaign_unchanged():
    problem = get_problem("branin")
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    Campaign(problem, surrogate="gp", budget=6, n_init=3, optimizer=FAST)
    assert torch.equal(torch.rand(3), expected), "the global RNG is restored"

    def proposals(dry_run):
        campaign = Campaign(
            problem, surrogate="gp", budget=6, n_init=3, seed=5, optimizer=FAST, dry_run=dry_run
        )
        return campaign.run().history[["x0", "x1"]].to_numpy()

    assert (proposals(True) == proposals(False)).all()


def test_dry_run_failures_name_the_part():
    problem = get_problem("branin")
    with pytest.raises(ConfigError, match="surrogate 'gp'.*kernel='foo'"):
        check_campaign(
            problem, SurrogateSpec("gp", {"kernel": "foo"}), make_policy("qlognei"), FAST, 1
        )
    bad = make_policy("qlognehvi", {}, FAST)
    with pytest.raises(ConfigError, match="needs >= 2 objectives"):
        check_campaign(problem, SurrogateSpec("gp"), bad, FAST, 1)


def test_synthetic_history_respects_the_domain():
    problem = get_problem("sourcing")  # integer policies in [0, 50]
    settings = OptimizerSettings(fixed_features={3: 7.0})
    history = synthetic_history(problem, settings, 6, seed=0)
    problem.validate(history.X)
    assert (history.X[:, 3] == 7.0).all() and history.Y.shape == (6, len(problem.outcome_names))


@pytest.mark.parametrize(
    "fixed, message",
    [
        ({2: 0.0}, r"dimension 2 does not exist; branin has dimensions 0..1"),
        ({-1: 0.0}, "dimension -1 does not exist"),
        ({True: 0.0}, "dimension True does not exist"),
        ({"0": 0.0}, "dimension '0' does not exist"),
        ({0: 99.0}, r"fixed_features\[0\]=99.0 lies outside the bounds \[-5, 10\]"),
        ({1: -0.1}, r"outside the bounds \[0, 15\]"),
        ({0: float("nan")}, "must be a finite number"),
        ({0: "1"}, "must be a finite number, got '1'"),
        ([0, 1], "must be a mapping"),
    ],
)
def test_fixed_features_are_checked_not_clamped(fixed, message):
    with pytest.raises(ConfigError, match=message):
        check_fixed_features(fixed, get_problem("branin"))


def test_fixed_features_on_integer_dimensions():
    problem = get_problem("sourcing")
    check_fixed_features({0: 3.0}, problem)
    with pytest.raises(ConfigError, match="takes integer values"):
        check_fixed_features({0: 3.5}, problem)
