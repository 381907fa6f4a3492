"""BONSAI's tolerance rules (issue 33): the paper's ``incremental`` rule, ``dense-scale`` and
``outcome-floor``: each rule's tau by hand, the paper's rule unchanged, and a converged case (the
incremental value is tiny) in which only the new rules prune the irrelevant coordinates."""

from __future__ import annotations

import pytest
import torch

from dsbo.acquisition import History, OptimizerSettings, make_postprocessor
from dsbo.acquisition.bonsai import RULES, Bonsai
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem

RELEVANT = (4, 14)  # branin-15d's relevant coordinates
#: the value lost by resetting one irrelevant / one relevant coordinate to the default
IRRELEVANT_COST, RELEVANT_COST = 0.002, 0.5


@pytest.fixture(scope="module")
def branin15():
    problem = get_problem("branin-15d")
    assert tuple(problem.relevant_dims) == RELEVANT
    return problem


class FakeAcqf:
    """``acqf(X: b x 1 x d) -> b`` from ``fn(points: b x d)``."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        assert X.ndim == 3 and X.shape[-2] == 1
        return self.fn(X.squeeze(-2))


def converged_value(X: torch.Tensor) -> torch.Tensor:
    """1 at the dense candidate; each coordinate reset to the default (0.5) costs a little
    (irrelevant) or a lot (relevant): a model that is unsure about 13 inputs."""
    at_default = (X == 0.5).to(X)
    relevant = torch.zeros(X.shape[-1], dtype=torch.bool)
    relevant[list(RELEVANT)] = True
    return (
        1.0
        - IRRELEVANT_COST * at_default[:, ~relevant].sum(-1)
        - RELEVANT_COST * at_default[:, relevant].sum(-1)
    )


def converged_case() -> tuple[torch.Tensor, History]:
    """x* changes all 15 coordinates; the best evaluated point reaches alpha = 0.996 (it
    resets two irrelevant coordinates), so alpha~(x*) = 0.004 and 0.2 alpha~ = 0.0008 is less
    than the cost of any single reset. The observed y are 0 and 10 (std 7.07)."""
    x_star = torch.full((1, 15), 0.8, dtype=torch.double)
    best = x_star[0].clone()
    best[[0, 1]] = 0.5
    evaluated = torch.stack([torch.full((15,), 0.5, dtype=torch.double), best])  # default first
    return x_star, History(X=evaluated, Y=torch.tensor([[0.0], [10.0]], dtype=torch.double))


def settings() -> OptimizerSettings:
    return OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2)


def test_the_default_rule_is_the_outcome_floor() -> None:
    assert (Bonsai().rule, Bonsai().outcome_floor, Bonsai().repeat_tol) == (
        "outcome-floor",
        1e-2,
        0.01,
    )
    assert RULES == ("incremental", "dense-scale", "outcome-floor")


@pytest.mark.parametrize(
    ("rule", "outcome_floor", "expected"),
    [
        ("incremental", 1e-3, 0.2 * 0.5),  # rho alpha~
        ("dense-scale", 1e-3, 0.2 * 2.0),  # rho alpha(x*)
        ("outcome-floor", 1e-3, 0.2 * 0.5),  # max(0.1, 1e-3 * 40 = 0.04): the paper's term
        ("outcome-floor", 1e-2, 0.4),  # max(0.1, 1e-2 * 40 = 0.4): the floor
    ],
)
def test_each_rules_tau_by_hand(rule: str, outcome_floor: float, expected: float) -> None:
    """alpha(x*) = 2, b_t = 1.5: alpha~ = 0.5; rho = 0.2; std(y) = 40."""
    bonsai = Bonsai(rho=0.2, rule=rule, outcome_floor=outcome_floor)
    tau = bonsai.tolerance(0.2, alpha_star=2.0, incremental=0.5, outcome_std=40.0)
    assert tau == pytest.approx(expected)


def test_a_negative_dense_value_gives_no_dense_scale() -> None:
    assert Bonsai(rule="dense-scale").tolerance(0.2, -1.0, 0.5) == 0.0
    floor = Bonsai(rule="outcome-floor", outcome_floor=0.01)
    assert floor.tolerance(0.2, -1.0, -0.5, outcome_std=10.0) == pytest.approx(0.1)


@pytest.mark.parametrize("rule", RULES)
def test_tau_in_the_metadata_follows_the_rule(branin15, rule: str) -> None:
    """alpha(x) = 1 + sum |x - 0.5| w: the recorded tau is the rule's, the gap within it."""
    w = torch.linspace(0.01, 0.3, 15, dtype=torch.double)

    def value(X):
        return 1.0 + ((X - 0.5).abs() * w).sum(-1)

    x_star = torch.full((1, 15), 0.9, dtype=torch.double)
    history = History(
        X=torch.full((2, 15), 0.6, dtype=torch.double), Y=torch.tensor([[0.0], [400.0]])
    )  # std(y) = 282.8: the floor 0.283 beats rho alpha~
    proposal = Bonsai(rho=0.2, rule=rule, outcome_floor=1e-3)(
        FakeAcqf(value), x_star, history, branin15, settings(), False
    )
    [meta] = proposal.metadata
    alpha_star, baseline = float(value(x_star)[0]), float(value(history.X)[0])
    incremental = alpha_star - baseline
    expected = {
        "incremental": 0.2 * incremental,
        "dense-scale": 0.2 * alpha_star,
        "outcome-floor": 1e-3 * 400 / 2**0.5,
    }[rule]
    assert meta["rule"] == rule
    assert meta["incremental_value"] == pytest.approx(incremental)
    assert meta["tau"] == pytest.approx(expected)
    assert meta["gap"] <= meta["tau"] + 1e-12
    assert meta["scale_gap"] == pytest.approx(meta["gap"] / alpha_star)
    assert float(value(proposal.X)[0]) >= alpha_star - expected - 1e-12


def test_the_papers_rule_is_unchanged(branin15) -> None:
    """rule='incremental' is the paper's rule (and the outcome floor without a floor): same
    point, tau = rho alpha~, and it still skips when x* does not beat the evaluated points."""
    x_star, history = converged_case()
    acqf = FakeAcqf(converged_value)
    default = Bonsai(outcome_floor=0.0)(acqf, x_star, history, branin15, settings(), False)
    paper = Bonsai(rule="incremental")(acqf, x_star, history, branin15, settings(), False)
    assert torch.equal(default.X, paper.X)
    assert default.metadata[0]["tau"] == pytest.approx(0.2 * 0.004)
    flat = FakeAcqf(lambda X: torch.ones(X.shape[0], dtype=X.dtype))
    [meta] = Bonsai(rule="incremental")(flat, x_star, history, branin15, settings(), False).metadata
    assert meta["prune_skipped"] and "<= 0" in meta["skip_reason"]


@pytest.mark.parametrize(
    ("rule", "options"), [("dense-scale", {}), ("outcome-floor", {"outcome_floor": 0.01})]
)
def test_converged_new_rules_prune_what_the_paper_rule_keeps(branin15, rule, options) -> None:
    """alpha~ tiny (0.004): the paper's tau = 0.0008 resets nothing, so all 15 coordinates stay
    changed; tau = 0.2 alpha(x*) = 0.2 (or the floor 0.01 std(y) = 0.0707) resets the 13
    irrelevant coordinates (0.026 in total) and keeps the two relevant ones (0.5 each)."""
    x_star, history = converged_case()
    acqf = FakeAcqf(converged_value)
    paper = Bonsai(rho=0.2, rule="incremental")(acqf, x_star, history, branin15, settings(), False)
    assert not paper.metadata[0]["prune_skipped"] and paper.metadata[0]["pruned_dims"] == []
    assert int((paper.X != 0.5).sum()) == 15
    new = Bonsai(rho=0.2, rule=rule, **options)(acqf, x_star, history, branin15, settings(), False)
    [meta] = new.metadata
    assert sorted(torch.nonzero(new.X[0] != 0.5).reshape(-1).tolist()) == list(RELEVANT)
    assert meta["gap"] == pytest.approx(13 * IRRELEVANT_COST)
    assert meta["relative_gap"] > 0.2  # beyond the paper's rule, by design


def test_new_rules_prune_when_x_star_does_not_beat_the_evaluated_points(branin15) -> None:
    """alpha~ <= 0 skips the paper's rule; the dense scale still prunes (relative_gap undefined)."""
    x_star, history = converged_case()
    better = torch.cat([history.X, torch.full((1, 15), 0.1, dtype=torch.double)])

    def value(X):
        return torch.where((X == 0.1).all(-1), 2.0, converged_value(X))

    history = History(X=better, Y=torch.zeros(3, 1))  # outcome-floor: std 0, no floor
    [meta] = Bonsai(rule="dense-scale")(
        FakeAcqf(value), x_star, history, branin15, settings(), False
    ).metadata
    assert not meta["prune_skipped"] and meta["relative_gap"] is None
    assert len(meta["pruned_dims"]) == 13


def test_dense_scale_skips_without_a_positive_dense_value(branin15) -> None:
    x_star, history = converged_case()
    negative = FakeAcqf(lambda X: converged_value(X) - 2.0)  # e.g. a UCB below zero
    proposal = Bonsai(rule="dense-scale")(negative, x_star, history, branin15, settings(), False)
    [meta] = proposal.metadata
    assert meta["prune_skipped"] and "dense scale" in meta["skip_reason"]
    assert torch.equal(proposal.X, x_star)


def test_an_evaluated_point_within_the_dense_scale_is_not_reproposed(branin15) -> None:
    """The new rules can accept an evaluated point by the gap rule (alpha(x_s) may be within
    rho alpha(x*)); the duplicate check then takes the last non-duplicate point of the path."""
    x_star, history = converged_case()
    sparse = torch.full((15,), 0.5, dtype=torch.double)
    sparse[list(RELEVANT)] = 0.8  # the pruned point the rule would pick, already evaluated
    history = History(X=torch.cat([history.X, sparse[None]]), Y=torch.zeros(3, 1))
    for mode in ("prefix", "greedy", "exact"):
        proposal = Bonsai(rule="dense-scale", mode=mode)(
            FakeAcqf(converged_value), x_star, history, branin15, settings(), False
        )
        [meta] = proposal.metadata
        assert meta["duplicate_fallback"], mode
        assert not (proposal.X[0] == sparse).all(), mode
        assert int((proposal.X[0] != 0.5).sum()) == 3, mode  # one irrelevant input kept


class ModelWithLengthscales(torch.nn.Module):
    """A surrogate stand-in whose kernel considers only the relevant coordinates (lengthscale
    0.1 against 1e4): enough for the lengthscale-scaled distance of the near-repeat guard."""

    def __init__(self) -> None:
        from gpytorch.kernels import MaternKernel

        super().__init__()
        self.covar_module = MaternKernel(ard_num_dims=15)
        lengthscale = torch.full((1, 15), 1e4)
        lengthscale[0, list(RELEVANT)] = 0.1
        self.covar_module.lengthscale = lengthscale


def test_a_near_repeat_for_the_model_is_not_proposed(branin15) -> None:
    """A relevant input cheap enough to reset (cost 0.0005, within tau) leads the rule to a
    point whose relevant coordinates were evaluated already, with an irrelevant coordinate
    different: no exact duplicate, but a near-repeat for the model (scaled distance ~1e-5).
    With ``repeat_tol`` that reset is not taken and the irrelevant inputs are still pruned:
    both relevant inputs kept. Evaluated points ``x*`` is a near-repeat of do not count."""
    x_star, _ = converged_case()

    def value(X: torch.Tensor) -> torch.Tensor:  # resetting relevant input 14 costs little
        return converged_value(X) + (RELEVANT_COST - 0.0005) * (X[:, RELEVANT[1]] == 0.5).to(X)

    seen = torch.full((15,), 0.5, dtype=torch.double)
    seen[RELEVANT[0]], seen[0] = 0.8, 0.9  # the sparsest point, tried with x_0 changed
    history = History(
        X=torch.stack([torch.full((15,), 0.5, dtype=torch.double), seen]),
        Y=torch.tensor([[0.0], [5.0]]),
    )
    acqf = FakeAcqf(value)
    acqf.model = ModelWithLengthscales()
    plain = Bonsai(rule="dense-scale", repeat_tol=0)(
        acqf, x_star, history, branin15, settings(), False
    )
    assert int((plain.X[0] != 0.5).sum()) == 1 and not plain.metadata[0]["duplicate_fallback"]
    guarded = Bonsai(rule="dense-scale", repeat_tol=0.01)(
        acqf, x_star, history, branin15, settings(), False
    )
    assert torch.nonzero(guarded.X[0] != 0.5).reshape(-1).tolist() == list(RELEVANT)
    seen_dense = x_star[0].clone()
    seen_dense[0] = 0.9  # x* is a near-repeat of this point: it does not count, the other does
    history = History(X=torch.cat([history.X, seen_dense[None]]), Y=torch.zeros(3, 1))
    again = Bonsai(rule="dense-scale", repeat_tol=0.01)(
        acqf, x_star, history, branin15, settings(), False
    )
    assert torch.equal(again.X, guarded.X)
    history = History(X=torch.stack([history.X[0], seen_dense]), Y=torch.zeros(2, 1))
    alone = Bonsai(rule="dense-scale", repeat_tol=0.01)(
        acqf, x_star, history, branin15, settings(), False
    )
    assert int((alone.X[0] != 0.5).sum()) == 1  # nothing else tried: the rule prunes as without


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rule": "dense"}, "rule"),
        ({"rule": None}, "rule"),
        ({"outcome_floor": 1.5}, "outcome_floor"),
        ({"outcome_floor": True}, "outcome_floor"),
        ({"repeat_tol": -0.1}, "repeat_tol"),
        ({"repeat_tol": "0.01"}, "repeat_tol"),
    ],
)
def test_rule_option_errors_name_the_field(options: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=f"postprocess.bonsai.{field}"):
        make_postprocessor("bonsai", options)


def test_the_rule_flows_from_configs(branin15) -> None:
    assert make_postprocessor("bonsai", {"rule": "dense-scale"}).rule == "dense-scale"
    floor = make_postprocessor("bonsai", {"rule": "outcome-floor", "outcome_floor": 0.1})
    assert (floor.rule, floor.outcome_floor) == ("outcome-floor", 0.1)
    with pytest.raises(ConfigError, match="postprocess.bonsai.rule"):
        Campaign(branin15, surrogate="gp", postprocess={"bonsai": {"rule": "nope"}}, budget=5)
    campaign = Campaign(
        branin15,
        surrogate="gp",
        postprocess={"bonsai": {"rule": "dense-scale"}},
        budget=6,
        n_init=5,
        seed=0,
        optimizer=settings(),
    )
    campaign.run()
    meta = campaign.store.trials()[-1].metadata
    assert meta["rule"] == "dense-scale"
    campaign.store.close()


def test_sparse_protocol_rules_smoke(tmp_path) -> None:
    """experiments/sparse_protocol.py --bonsai-rule: only plain qLogNEI and the rule arms run,
    into their own files; a second seed with fewer arms is summarized next to the first."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))
    import sparse_protocol

    argv = ["--smoke", "--workers", "1", "--parts", "bonsai", "--out", str(tmp_path)]
    result = sparse_protocol.main(
        [*argv, "--bonsai-rule", "incremental", "--bonsai-rule", "dense-scale:0.3"]
    )
    arms = result["parts"]["bonsai"]["arms"]
    assert set(arms) == {"qlognei", "bonsai-incremental", "bonsai-dense-scale-0.3"}
    result = sparse_protocol.main([*argv, "--seed-list", "1", "--bonsai-rule", "dense-scale:0.3"])
    arms = result["parts"]["bonsai"]["arms"]
    assert arms["qlognei"]["seeds"] == 2 and arms["bonsai-incremental"]["seeds"] == 1
    assert arms["bonsai-dense-scale-0.3"]["seeds"] == 2
    assert {"mean_changed_after_found", "mean_changed_last10"} <= set(
        arms["qlognei"]["per_seed"][0]
    )
    assert (tmp_path / "results_branin-10d.md").read_text().count("| bonsai-dense-scale-0.3 |") == 3
    assert not (tmp_path / "results.md").exists()


def test_outcome_floor_on_log_acquisitions(branin15) -> None:
    """log alpha: the floor is compared in acquisition units (exp(log alpha)), so the result
    equals the plain acquisition's; a log value of -800 (alpha underflows) is negligible
    against any floor, and everything but the duplicate of an evaluated point is reset."""
    x_star, history = converged_case()
    bonsai = Bonsai(rule="outcome-floor", outcome_floor=0.01)

    def positive(X):  # the evaluated default has a negative converged_value
        return converged_value(X) + 1.0

    plain = bonsai(FakeAcqf(positive), x_star, history, branin15, settings(), False)
    logged = bonsai(
        FakeAcqf(lambda X: positive(X).log()), x_star, history, branin15, settings(), True
    )
    assert plain.metadata[0]["pruned_dims"] and not logged.metadata[0]["prune_skipped"]
    assert torch.equal(plain.X, logged.X)
    assert logged.metadata[0]["outcome_scale"] == pytest.approx(50**0.5)
    tiny = bonsai(
        FakeAcqf(lambda X: positive(X).log() - 800), x_star, history, branin15, settings(), True
    )
    [meta] = tiny.metadata
    assert meta["tau"] is None  # infinite in scoring units: not a JSON number
    assert len(meta["pruned_dims"]) >= 14


def test_outcome_floor_is_the_papers_rule_on_multi_objective_problems() -> None:
    """Hypervolume acquisitions are not in outcome units: no floor, the paper's rule."""
    dtlz2 = get_problem("dtlz2")
    w = torch.linspace(0.1, 1.0, dtlz2.dim, dtype=torch.double)
    acqf = FakeAcqf(lambda X: 1.0 + ((X - 0.5).abs() * w).sum(-1))
    history = History(
        X=torch.full((1, dtlz2.dim), 0.6, dtype=torch.double), Y=torch.rand(1, 2) * 100
    )
    X = torch.full((1, dtlz2.dim), 0.9, dtype=torch.double)
    paper = Bonsai(rule="incremental")(acqf, X, history, dtlz2, settings(), False)
    default = Bonsai()(acqf, X, history, dtlz2, settings(), False)
    assert torch.equal(paper.X, default.X) and default.metadata[0]["outcome_scale"] == 0.0
    assert default.metadata[0]["tau"] == pytest.approx(paper.metadata[0]["tau"])


def test_outcome_floor_without_a_floor_is_the_papers_rule(branin15) -> None:
    """A zero floor (outcome_floor = 0, or all observed values equal) gives the paper's rule,
    its skip when alpha~ <= 0 included."""
    x_star, history = converged_case()
    acqf = FakeAcqf(converged_value)
    paper = Bonsai(rule="incremental")(acqf, x_star, history, branin15, settings(), False)
    zero = Bonsai(rule="outcome-floor", outcome_floor=0.0)(
        acqf, x_star, history, branin15, settings(), False
    )
    assert torch.equal(paper.X, zero.X) and zero.metadata[0]["tau"] == paper.metadata[0]["tau"]
    flat = FakeAcqf(lambda X: torch.ones(X.shape[0], dtype=X.dtype))
    same_y = History(X=history.X, Y=torch.ones(2, 1))
    [meta] = Bonsai(rule="outcome-floor")(
        flat, x_star, same_y, branin15, settings(), False
    ).metadata
    assert meta["prune_skipped"] and "<= 0" in meta["skip_reason"]
