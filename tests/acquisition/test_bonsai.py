"""BONSAI pruning: invariants of the pure pruning functions (hypothesis, synthetic scores), the
post-processor on fake acquisitions, and the integration with GPs, BoTorch acquisitions and
the campaign."""

from __future__ import annotations

import doctest
import functools
import itertools
import json
import math
import warnings

import pytest
import torch
from botorch.optim import optimize_acqf
from botorch.utils.sampling import draw_sobol_samples
from hypothesis import given, settings
from hypothesis import strategies as st

from dsbo.acquisition import History, OptimizerSettings, make_policy, make_postprocessor
from dsbo.acquisition import bonsai as bonsai_module
from dsbo.acquisition.base import POSTPROCESSORS
from dsbo.acquisition.bonsai import (
    Bonsai,
    duplicate_fn,
    exact_prune,
    greedy_prune,
)
from dsbo.acquisition.sparsity import num_changed
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate

PROPERTY = settings(max_examples=40, deadline=None, derandomize=True)
PRUNERS = {
    "greedy": greedy_prune,
    "exact": exact_prune,
    "prefix": functools.partial(greedy_prune, prefix=True),
}
META_KEYS = {
    "postprocess",
    "prune_mode",
    "exact_fallback",
    "rho",
    "num_active",
    "pruned_dims",
    "incremental_value",
    "tau",
    "gap",
    "relative_gap",
    "acq_evaluations",
    "prune_skipped",
    "skip_reason",
    "duplicate_fallback",
    "prune_time",
    "batch_conditioning",
}


def fast(**kwargs) -> OptimizerSettings:
    return OptimizerSettings(
        num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32, **kwargs
    )


# ----------------------------------------------------------------------------- synthetic cases
@st.composite
def pruning_cases(draw, max_dim: int = 7):
    """A random quadratic score with interactions, a dense point, a default and a tolerance."""
    d = draw(st.integers(1, max_dim))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    Q = torch.randn(d, d, generator=g, dtype=torch.double)
    b = torch.randn(d, generator=g, dtype=torch.double)
    x_star = torch.rand(d, generator=g, dtype=torch.double)
    default = torch.rand(d, generator=g, dtype=torch.double)
    same = torch.tensor(draw(st.lists(st.booleans(), min_size=d, max_size=d)))
    default[same] = x_star[same]  # coordinates already at their default are not active
    tau = draw(st.floats(0.0, 2.0))

    def score(X: torch.Tensor) -> torch.Tensor:
        return X @ b + ((X @ Q) * X).sum(-1)

    active = torch.nonzero(x_star != default).reshape(-1).tolist()
    return score, x_star, default, tau, active


def point(x_star: torch.Tensor, default: torch.Tensor, reset) -> torch.Tensor:
    x = x_star.clone()
    x[list(reset)] = default[list(reset)]
    return x


@PROPERTY
@given(case=pruning_cases())
def test_every_pruned_point_satisfies_the_gap_rule(case) -> None:
    score, x_star, default, tau, active = case
    alpha_star = float(score(x_star[None])[0])
    for name, prune in PRUNERS.items():
        x, info = prune(score, x_star, default, tau, active, alpha_star=alpha_star)
        assert set(info.pruned) <= set(active), name
        assert torch.equal(x, point(x_star, default, info.pruned)), name
        gap = alpha_star - float(score(x[None])[0])
        assert gap <= tau + 1e-12, name
        assert info.gap == pytest.approx(gap, abs=1e-12), name


@PROPERTY
@given(case=pruning_cases())
def test_greedy_needs_at_most_a_triangular_number_of_evaluations(case) -> None:
    score, x_star, default, tau, active = case
    calls = []

    def counted(X: torch.Tensor) -> torch.Tensor:
        calls.append(X.shape[0])
        return score(X)

    _, info = greedy_prune(
        counted, x_star, default, tau, active, alpha_star=float(score(x_star[None])[0])
    )
    n = len(active)
    assert info.evaluations == sum(calls) <= n * (n + 1) // 2
    assert len(calls) <= n  # one batched call per round (rounds with no reset left stop)


@PROPERTY
@given(case=pruning_cases())
def test_pruning_is_idempotent(case) -> None:
    """Pruning the pruned point again, gaps still measured against the original x*, changes
    nothing: greedy stopped because no single reset fits, exact because no smaller set does."""
    score, x_star, default, tau, active = case
    alpha_star = float(score(x_star[None])[0])
    for name, prune in PRUNERS.items():
        x1, info1 = prune(score, x_star, default, tau, active, alpha_star=alpha_star)
        still = sorted(set(active) - set(info1.pruned))
        x2, info2 = prune(score, x1, default, tau, still, alpha_star=alpha_star)
        assert info2.pruned == [], name
        assert torch.equal(x2, x1), name


@PROPERTY
@given(case=pruning_cases(max_dim=6))
def test_exact_finds_the_smallest_feasible_active_set(case) -> None:
    score, x_star, default, tau, active = case
    alpha_star = float(score(x_star[None])[0])
    most = 0
    for k in range(len(active) + 1):
        for reset in itertools.combinations(active, k):
            if alpha_star - float(score(point(x_star, default, reset)[None])[0]) <= tau:
                most = k
    x, exact = exact_prune(score, x_star, default, tau, active, alpha_star=alpha_star)
    _, greedy = greedy_prune(score, x_star, default, tau, active, alpha_star=alpha_star)
    assert len(exact.pruned) == most
    small, info = exact_prune(
        score, x_star, default, tau, active, alpha_star=alpha_star, batch_size=3
    )
    assert torch.equal(small, x) and info == exact  # batches of 3 subsets: same answer
    assert len(greedy.pruned) <= most


@PROPERTY
@given(
    weights=st.lists(st.integers(-3, 20), min_size=1, max_size=8),
    tau=st.integers(0, 60),
)
def test_greedy_equals_exact_for_an_additive_acquisition(weights: list[int], tau: int) -> None:
    """alpha(x) = sum_j w_j x_j: resetting j costs w_j whatever else was reset (integer
    arithmetic, so no rounding decides a tie)."""
    w = torch.tensor(weights, dtype=torch.double)
    d = w.numel()
    x_star, default = torch.ones(d), torch.zeros(d)

    def score(X: torch.Tensor) -> torch.Tensor:
        return X @ w

    alpha_star = float(w.sum())
    xg, greedy = greedy_prune(score, x_star, default, tau, range(d), alpha_star=alpha_star)
    xe, exact = exact_prune(score, x_star, default, tau, range(d), alpha_star=alpha_star)
    xp, prefix = greedy_prune(
        score, x_star, default, tau, range(d), alpha_star=alpha_star, prefix=True
    )
    assert len(greedy.pruned) == len(exact.pruned)
    assert greedy.gap == exact.gap
    # the prefix speed-up is exactly greedy on an additive acquisition, in at most 2 calls + rounds
    assert (
        torch.equal(xp, xg)
        and sorted(prefix.pruned) == sorted(greedy.pruned)
        and prefix.gap == greedy.gap
    )
    # The sum of the k smallest weights is the least gap of k resets.
    assert greedy.gap == sum(sorted(weights)[: len(greedy.pruned)])


@PROPERTY
@given(
    d=st.integers(2, 10),
    data=st.data(),
)
def test_perfect_ard_recovers_the_relevant_changed_coordinates(d: int, data) -> None:
    """An acquisition that reads only the coordinates in R (infinite ARD lengthscales on the
    rest) and charges at least 0.1 for resetting one of them: both pruners keep exactly the
    changed coordinates in R (BONSAI, Theorem A.9)."""
    relevant = data.draw(st.sets(st.integers(0, d - 1), max_size=d), label="R")
    changed = data.draw(st.sets(st.integers(0, d - 1), min_size=1, max_size=d), label="A")
    offsets = data.draw(
        st.lists(st.floats(0.1, 0.5) | st.floats(-0.5, -0.1), min_size=d, max_size=d)
    )
    weights = data.draw(st.lists(st.floats(1.0, 5.0), min_size=d, max_size=d))
    tau = data.draw(st.floats(0.0, 0.09))
    default = torch.full((d,), 0.5, dtype=torch.double)
    x_star = default.clone()
    for j in changed:
        x_star[j] += offsets[j]
    R = sorted(relevant)
    w = torch.tensor(weights, dtype=torch.double)[R]

    def score(X: torch.Tensor) -> torch.Tensor:
        delta = (X[:, R] - 0.5).abs()
        pairs = (delta.sum(-1) ** 2 - (delta**2).sum(-1)) / 2  # sum_{j<k} |d_j||d_k| >= 0
        return delta @ w + pairs

    for name, prune in PRUNERS.items():
        x, _ = prune(score, x_star, default, tau, sorted(changed))
        kept = set(torch.nonzero(x != default).reshape(-1).tolist())
        assert kept == changed & relevant, name


@pytest.mark.parametrize("name", ["greedy", "exact"])
def test_a_path_that_ends_on_a_seen_point_falls_back(name: str) -> None:
    """Flat acquisition: every reset is free, so pruning would end on the default point; the
    default is already evaluated, so the last non-duplicate point of the path is taken."""
    d = 4
    x_star, default = torch.full((d,), 0.9), torch.full((d,), 0.5)
    bounds = torch.stack([torch.zeros(d), torch.ones(d)])

    def flat(X: torch.Tensor) -> torch.Tensor:
        return torch.zeros(X.shape[0])

    is_duplicate = duplicate_fn(default[None], bounds)
    x, info = PRUNERS[name](flat, x_star, default, 0.1, range(d), is_duplicate=is_duplicate)
    assert info.duplicate_fallback
    assert len(info.pruned) == d - 1
    assert int((x != default).sum()) == 1
    if name == "greedy":
        assert len(info.path_gaps) == d  # the path did reach the default
    x, info = PRUNERS[name](flat, x_star, default, 0.1, range(d))  # no duplicate rule
    assert torch.equal(x, default) and not info.duplicate_fallback


def test_duplicates_are_judged_in_unit_cube_coordinates() -> None:
    bounds = torch.tensor([[0.0, -100.0], [1.0, 100.0]])
    is_duplicate = duplicate_fn(torch.tensor([[0.5, 10.0]]), bounds)
    X = torch.tensor([[0.5, 10.0001], [0.5, 10.01], [0.5000001, 10.0], [0.6, 10.0]])
    assert is_duplicate(X).tolist() == [True, False, True, False]
    assert not duplicate_fn(torch.zeros(0, 2), bounds)(X).any()


def test_docstring_examples_run() -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    globs = {**vars(bonsai_module), "torch": torch}
    for name in ("greedy_prune", "exact_prune"):
        test = doctest.DocTestParser().get_doctest(
            getattr(bonsai_module, name).__doc__, globs, name, None, 0
        )
        runner.run(test)
    module_test = doctest.DocTestParser().get_doctest(bonsai_module.__doc__, globs, "mod", None, 0)
    runner.run(module_test)
    assert runner.summarize(verbose=False).failed == 0


# ----------------------------------------------------------------------------- fake acquisitions
class FakeAcqf:
    """``acqf(X: b x 1 x d) -> b`` from ``fn(points: b x d)``; optionally takes pending points."""

    def __init__(self, fn, pending: bool = False) -> None:
        self.fn = fn
        self.X_pending = None
        self.points = 0
        if pending:
            self.set_X_pending = self._set_X_pending

    def _set_X_pending(self, X_pending=None) -> None:
        self.X_pending = None if X_pending is None else X_pending.clone()

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        assert X.ndim == 3 and X.shape[-2] == 1
        self.points += X.shape[0]
        return self.fn(X.squeeze(-2), self.X_pending)


def far_from(points: torch.Tensor | None, X: torch.Tensor, radius: float = 0.05) -> torch.Tensor:
    """1 away from ``points`` (max-norm), 0 within ``radius`` of one of them."""
    if points is None or points.shape[0] == 0:
        return torch.ones(X.shape[0], dtype=X.dtype)
    near = ((X.unsqueeze(-2) - points).abs().amax(-1) < radius).any(-1)
    return (~near).to(X)


@pytest.fixture(scope="module")
def branin15():
    return get_problem("branin-15d")


def history_at(points: torch.Tensor, **kwargs) -> History:
    return History(X=points, Y=torch.zeros(points.shape[0], 1), **kwargs)


def test_bonsai_is_registered() -> None:
    assert "bonsai" in POSTPROCESSORS.available()
    assert isinstance(make_postprocessor("bonsai", {"rho": "1/t"}), Bonsai)


def test_skips_when_the_incremental_value_is_not_positive(branin15) -> None:
    flat = FakeAcqf(lambda X, P: torch.ones(X.shape[0]))
    X = torch.full((1, 15), 0.9)
    proposal = Bonsai()(flat, X, history_at(torch.rand(3, 15)), branin15, fast(), False)
    [meta] = proposal.metadata
    assert torch.equal(proposal.X, X)
    assert meta["prune_skipped"] and "<= 0" in meta["skip_reason"]
    assert meta["incremental_value"] == 0.0 and meta["pruned_dims"] == []
    assert meta["acq_evaluations"] == 4  # x* and the 3 evaluated points, in one call
    assert flat.points == 4
    empty = Bonsai()(flat, X, history_at(torch.zeros(0, 15)), branin15, fast(), False)
    assert empty.metadata[0]["prune_skipped"] and "no evaluated" in empty.metadata[0]["skip_reason"]


def test_log_acquisitions_are_exponentiated_without_underflow(branin15) -> None:
    """The rule on exp(log alpha) equals the rule on alpha, even for log values near -800."""
    g = torch.Generator().manual_seed(0)
    w = torch.rand(15, generator=g, dtype=torch.double)
    evaluated = torch.rand(4, 15, generator=g, dtype=torch.double) * 0.2 + 0.4

    def value(X, P):
        return 1.0 + ((X - 0.5).abs() * w).sum(-1) ** 2

    X = torch.rand(1, 15, generator=g, dtype=torch.double)
    history = history_at(evaluated)
    plain = Bonsai()(FakeAcqf(value), X, history, branin15, fast(), False)
    for shift in (0.0, -800.0):
        logged = FakeAcqf(lambda X, P, s=shift: value(X, P).log() + s)
        out = Bonsai()(logged, X, history, branin15, fast(), True)
        assert torch.equal(out.X, plain.X)
        assert out.metadata[0]["pruned_dims"] == plain.metadata[0]["pruned_dims"]
        assert out.metadata[0]["relative_gap"] == pytest.approx(plain.metadata[0]["relative_gap"])
    assert 0 < len(plain.metadata[0]["pruned_dims"]) < 15
    assert out.metadata[0]["tau"] == 0.0  # exp(-800) underflows in the report, not in the rule
    logged = Bonsai()(FakeAcqf(lambda X, P: value(X, P).log()), X, history, branin15, fast(), True)
    meta, ref = logged.metadata[0], plain.metadata[0]
    assert meta["tau"] == pytest.approx(ref["tau"]) and meta["gap"] == pytest.approx(ref["gap"])


def test_fixed_features_and_coordinates_at_the_default_are_not_pruned(branin15) -> None:
    acqf = FakeAcqf(lambda X, P: far_from(torch.zeros(1, 15), X))
    X = torch.full((1, 15), 0.9)
    default = branin15.default_point
    X[0, 5] = default[5] + 1e-4 * (branin15.bounds[1, 5] - branin15.bounds[0, 5])  # within 1e-3
    X[0, 7] = default[7]  # exactly at the default
    opt = fast(fixed_features={0: 0.9, 3: 0.9})
    proposal = Bonsai()(acqf, X, history_at(torch.zeros(1, 15)), branin15, opt, False)
    x, meta = proposal.X[0], proposal.metadata[0]
    assert x[0] == 0.9 and x[3] == 0.9
    assert x[5] == default[5] and x[7] == default[7]  # the near-default coordinate is reset exactly
    assert meta["snapped_dims"] == [5]
    assert meta["num_active"] == 11
    assert sorted(meta["pruned_dims"]) == [j for j in range(15) if j not in (0, 3, 5, 7)]


def test_resets_that_break_a_linear_constraint_are_not_taken(branin15) -> None:
    acqf = FakeAcqf(lambda X, P: far_from(torch.zeros(1, 15), X))
    X = torch.full((1, 15), 0.9)
    constraints = [([0, 1], [1.0, 1.0], 1.5), (torch.tensor([2]), torch.tensor([1.0]), 0.5)]
    pruner = Bonsai(inequality_constraints=constraints)
    x = pruner(acqf, X, history_at(torch.zeros(1, 15)), branin15, fast(), False).X[0]
    assert x[0] == 0.9 and x[1] == 0.9  # 0.5 + 0.9 < 1.5: neither reset is allowed
    assert x[2] == 0.5  # 0.5 >= 0.5 holds on the boundary
    assert (x[3:] == 0.5).all()
    exact = Bonsai(mode="exact", max_exact=15, inequality_constraints=constraints)
    X[0, 4:] = 0.5  # |A| = 4
    x = exact(acqf, X, history_at(torch.zeros(1, 15)), branin15, fast(), False).X[0]
    assert x[:4].tolist() == [0.9, 0.9, 0.5, 0.5]


def test_default_point_options(branin15) -> None:
    first = torch.full((1, 15), 0.2)
    evaluated = torch.cat([first, torch.ones(1, 15)])
    acqf = FakeAcqf(lambda X, P: far_from(evaluated, X))
    X, history = torch.full((1, 15), 0.9), history_at(evaluated)
    x = Bonsai(default=[0.3] * 15)(acqf, X, history, branin15, fast(), False).X[0]
    assert torch.equal(x, torch.full((15,), 0.3))
    x = Bonsai()(acqf, X, history, branin15, fast(), False).X[0]
    assert torch.equal(x, branin15.default_point)
    # The first evaluated point itself is out of reach (alpha there <= b_t): one change is left.
    x = Bonsai(default="first")(acqf, X, history, branin15, fast(), False).X[0]
    assert int((x != first[0]).sum()) == 1


def test_exact_falls_back_to_greedy_on_a_large_active_set(branin15) -> None:
    acqf = FakeAcqf(lambda X, P: 1.0 + (X - 0.5).abs().sum(-1))
    X = torch.full((1, 15), 0.9)
    history = history_at(torch.full((1, 15), 0.5))
    meta = Bonsai(mode="exact", max_exact=3)(acqf, X, history, branin15, fast(), False).metadata[0]
    assert meta["exact_fallback"] and meta["prune_mode"] == "greedy"
    X[0, 3:] = 0.5
    meta = Bonsai(mode="exact", max_exact=3)(acqf, X, history, branin15, fast(), False).metadata[0]
    assert not meta["exact_fallback"] and meta["prune_mode"] == "exact"


def test_a_pruned_candidate_never_repeats_a_pending_point(branin15) -> None:
    """All resets are free, so pruning would propose the default, which is already pending:
    the duplicate rule keeps one coordinate changed and says so."""
    evaluated = torch.zeros(1, 15)
    acqf = FakeAcqf(lambda X, P: far_from(evaluated, X))
    X = torch.full((1, 15), 0.9)
    history = history_at(evaluated, X_pending=branin15.default_point[None])
    proposal = Bonsai()(acqf, X, history, branin15, fast(), False)
    meta = proposal.metadata[0]
    assert meta["duplicate_fallback"]
    assert len(meta["pruned_dims"]) == 14
    assert int(num_changed(proposal.X, branin15.default_point, branin15.bounds)[0]) == 1
    history = history_at(evaluated)
    proposal = Bonsai()(acqf, X, history, branin15, fast(), False)
    assert torch.equal(proposal.X[0], branin15.default_point)
    assert not proposal.metadata[0]["duplicate_fallback"]


def test_batches_are_pruned_conditioned_on_the_earlier_points(branin15, monkeypatch) -> None:
    """Two equal dense points under a flat acquisition that is 0 near pending points: the
    first prunes to the default; conditioned on it, the second cannot."""
    evaluated = torch.zeros(1, 15)
    acqf = FakeAcqf(
        lambda X, P: far_from(evaluated if P is None else torch.cat([evaluated, P]), X),
        pending=True,
    )
    X = torch.full((2, 15), 0.9)
    history = history_at(evaluated)
    proposal = Bonsai()(acqf, X, history, branin15, fast(), False)
    assert torch.equal(proposal.X[0], branin15.default_point)
    assert not torch.equal(proposal.X[1], proposal.X[0])
    assert [m["batch_conditioning"] for m in proposal.metadata] == [False, True]
    assert not any(m["duplicate_fallback"] for m in proposal.metadata)
    assert acqf.X_pending is None and acqf.points == 0  # a copy was conditioned
    # Without deepcopy, the acquisition is conditioned in place and restored afterwards.
    monkeypatch.setattr(
        bonsai_module.copy, "deepcopy", lambda obj: (_ for _ in ()).throw(RuntimeError)
    )
    pending = torch.full((1, 15), 0.1)
    history = history_at(evaluated, X_pending=pending)
    acqf.set_X_pending(pending)
    again = Bonsai()(acqf, X, history, branin15, fast(), False)
    assert torch.equal(acqf.X_pending, pending) and acqf.points > 0
    assert [m["batch_conditioning"] for m in again.metadata] == [False, True]


def test_batch_points_after_the_first_are_measured_against_the_batch_so_far(branin15) -> None:
    """Paper section 6.3: with a joint acquisition alpha(x | P) = g(x) + sum_p g(p), the
    incremental value of the second point is alpha(x_2 | x_1) - alpha(x_1) = g(x_2), not
    alpha(x_2 | x_1) - max_s alpha(x_s | x_1) = g(x_2) - max_s g(x_s)."""
    w = torch.linspace(1.0, 2.0, 15)

    def g(X):
        return ((X - branin15.default_point).abs() * w).sum(-1)

    def joint(X, P):
        return g(X) + (0.0 if P is None else float(g(P).sum()))

    evaluated = branin15.default_point + 0.3 * (branin15.bounds[1] - branin15.bounds[0]) * (
        torch.arange(15) % 2
    )
    X = branin15.default_point + 0.4 * (branin15.bounds[1] - branin15.bounds[0]) * torch.ones(2, 15)
    X[1, :7] = branin15.default_point[:7]
    proposal = Bonsai(rho=0.0)(
        FakeAcqf(joint, pending=True), X, history_at(evaluated[None]), branin15, fast(), False
    )
    first, second = proposal.metadata
    assert first["baseline"] == "evaluated points" and second["baseline"] == "previous batch point"
    assert first["incremental_value"] == pytest.approx(float(g(X[:1]) - g(evaluated[None])))
    assert second["incremental_value"] == pytest.approx(float(g(X[1:])))
    assert torch.equal(proposal.X, X)  # rho = 0: nothing may be pruned


def test_rho_schedule() -> None:
    assert Bonsai(rho="1/t").rho_at(4) == 0.25
    assert Bonsai(rho="1/t").rho_at(0) == 1.0  # t < 1 counts as 1
    assert Bonsai(rho="0.5 / t").rho_at(5) == 0.1
    assert Bonsai(rho=0.3).rho_at(100) == 0.3


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"rho": 1.5}, "rho"),
        ({"rho": -0.1}, "rho"),
        ({"rho": True}, "rho"),
        ({"rho": "1/x"}, "rho"),
        ({"rho": "-1/t"}, "rho"),
        ({"mode": "fast"}, "mode"),
        ({"default": "center"}, "default"),
        ({"default": [0.1, "a"]}, "default"),
        ({"default": [[0.1]]}, "default"),
        ({"inequality_constraints": "x0 >= 1"}, "inequality_constraints"),
        ({"inequality_constraints": [([0], [1.0, 2.0], 1.0)]}, "inequality_constraints[0]"),
        ({"inequality_constraints": [([0.5], [1.0], 1.0)]}, "inequality_constraints[0]"),
        ({"inequality_constraints": [([[0, 1]], [1.0], 1.0)]}, "inequality_constraints[0]"),
        ({"inequality_constraints": [([0], [1.0])]}, "inequality_constraints[0]"),
        ({"max_exact": 0}, "max_exact"),
        ({"max_exact": 21}, "max_exact"),
        ({"tol": 1.0}, "tol"),
    ],
)
def test_option_errors_name_the_option(options: dict, field: str) -> None:
    with pytest.raises(
        ConfigError, match=f"bonsai.{field}".replace("[", r"\[").replace("]", r"\]")
    ):
        make_postprocessor("bonsai", options)


def test_call_time_errors_name_the_option(branin15) -> None:
    acqf = FakeAcqf(lambda X, P: torch.ones(X.shape[0]))
    X, history = torch.full((1, 15), 0.9), history_at(torch.zeros(1, 15))
    with pytest.raises(ConfigError, match="bonsai.default has 3 entries"):
        Bonsai(default=[0.5] * 3)(acqf, X, history, branin15, fast(), False)
    with pytest.raises(ConfigError, match="bonsai.default lies outside"):
        Bonsai(default=[2.0] * 15)(acqf, X, history, branin15, fast(), False)
    sourcing = get_problem("sourcing")
    with pytest.raises(ConfigError, match="bonsai.default must be integer-valued"):
        Bonsai(default=[0.5] * sourcing.dim)(
            acqf,
            torch.zeros(1, sourcing.dim),
            history_at(torch.zeros(1, sourcing.dim)),
            sourcing,
            fast(),
            False,
        )
    with pytest.raises(ConfigError, match=r"inequality_constraints\[0\]: index 15"):
        Bonsai(inequality_constraints=[([15], [1.0], 0.0)])(
            acqf, X, history, branin15, fast(), False
        )
    with pytest.raises(ConfigError, match="has no option"):
        make_postprocessor("bonsai", {"rhoo": 0.2})
    with pytest.raises(ConfigError, match="bonsai.rho"):
        Campaign(branin15, surrogate="gp", postprocess={"bonsai": {"rho": 2}}, budget=5)


# ----------------------------------------------------------------------------- GPs and BoTorch
@pytest.fixture(scope="module")
def branin_state(branin15):
    X = draw_sobol_samples(branin15.bounds, n=12, q=1, seed=0).squeeze(1)
    Y = branin15.evaluate(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_surrogate("gp", X, Y, bounds=branin15.bounds)
    return model, History(X=X, Y=Y, seed=3, t=12)


def dense_candidates(acqf, problem, q: int = 1) -> torch.Tensor:
    X, _ = optimize_acqf(
        acqf,
        problem.bounds,
        q=q,
        num_restarts=2,
        raw_samples=32,
        options={"maxiter": 25, "seed": 0},
    )
    return X.detach()


def test_campaign_with_bonsai_changes_fewer_coordinates(branin15) -> None:
    changed = {}
    for name, postprocess in (("plain", None), ("bonsai", {"bonsai": {"rho": 0.2}})):
        campaign = Campaign(
            branin15,
            surrogate="gp",
            acquisition="qlognei",
            postprocess=postprocess,
            budget=12,
            n_init=11,
            optimizer=fast(),
        )
        campaign.run()
        [trial] = [t for t in campaign.store.trials() if t.generator == "qlognei"]
        changed[name] = trial.metadata["num_changed"]
    meta = trial.metadata
    assert changed["bonsai"] < changed["plain"]
    assert META_KEYS <= set(meta)
    assert json.loads(json.dumps(meta)) == meta  # stored as JSON, read back
    assert not meta["prune_skipped"] and meta["prune_mode"] == "prefix" and meta["rho"] == 0.2
    assert changed["bonsai"] == meta["num_active"] - len(meta["pruned_dims"])
    assert meta["gap"] <= meta["tau"] and 0 < meta["relative_gap"] <= 0.2
    assert meta["acq_evaluations"] > 11


def test_linear_constraints_reach_the_optimizer_of_the_dense_candidate(branin15) -> None:
    """x0 + x1 >= 1.6 excludes the default (0.5, 0.5) and most of the box: every BO proposal
    and its dense candidate satisfy it."""
    constraint = ([0, 1], [1.0, 1.0], 1.6)
    campaign = Campaign(
        branin15,
        surrogate="gp",
        acquisition="qlognei",
        budget=13,
        n_init=11,
        optimizer=fast(),
        postprocess={"bonsai": {"rho": 0.2, "inequality_constraints": [constraint]}},
    )
    campaign.run()
    bo = [t for t in campaign.store.trials() if t.generator == "qlognei"]
    assert len(bo) == 2
    for trial in bo:
        assert trial.x[0] + trial.x[1] >= 1.6 - 1e-6
    with pytest.raises(ConfigError, match="acquisition.method='lbfgsb'"):
        Campaign(
            branin15,
            surrogate="gp",
            acquisition="qlognei",
            budget=13,
            n_init=11,
            optimizer=fast(method="adam"),
            postprocess={"bonsai": {"inequality_constraints": [constraint]}},
        )


def test_campaign_batch_with_fixed_features(branin15) -> None:
    campaign = Campaign(
        branin15,
        surrogate="gp",
        acquisition="qlognei",
        postprocess={"bonsai": {}},
        q=2,
        budget=13,
        n_init=11,
        optimizer=fast(fixed_features={0: 0.9, 3: 0.1}),
    )
    campaign.run()
    trials = [t for t in campaign.store.trials() if t.generator == "qlognei"]
    assert len(trials) == 2 and trials[0].x != trials[1].x
    for t in trials:
        assert t.x[0] == 0.9 and t.x[3] == 0.1
        assert not {0, 3} & set(t.metadata["pruned_dims"])
        assert t.metadata["num_changed"] < 15
    assert [t.metadata["batch_conditioning"] for t in trials] == [False, True]


def test_campaign_ucb_with_the_one_over_t_schedule(branin15) -> None:
    campaign = Campaign(
        branin15,
        surrogate="gp",
        acquisition="ucb",
        postprocess={"bonsai": {"rho": "1/t"}},
        budget=12,
        n_init=11,
        optimizer=fast(),
    )
    campaign.run()
    meta = campaign.store.trials()[-1].metadata
    assert meta["rho"] == pytest.approx(1 / 11)  # t = 11 completed observations
    assert not meta["prune_skipped"] and meta["num_changed"] < 15


def test_acquisition_values_are_deterministic_during_pruning(branin15, branin_state) -> None:
    model, history = branin_state
    acqf = make_policy("qlognei", {}, fast()).build(model, history, branin15, 1)
    X = dense_candidates(acqf, branin15)
    Z = torch.rand(9, 1, 15, generator=torch.Generator().manual_seed(1), dtype=torch.double)
    with torch.no_grad():
        first, second, alone = acqf(Z), acqf(Z), acqf(Z[4:5])
    assert torch.equal(first, second)  # same x twice: identical
    assert first[4].item() == pytest.approx(alone.item(), rel=1e-12)  # batch size: rounding only
    pruner = Bonsai()
    a, b = (
        pruner(acqf, X, history, branin15, fast(), True),
        pruner(acqf, X, history, branin15, fast(), True),
    )
    assert torch.equal(a.X, b.X)
    strip = [
        {k: v for k, v in m.items() if k != "prune_time"} for m in (a.metadata[0], b.metadata[0])
    ]
    assert strip[0] == strip[1]
    with torch.no_grad():
        assert torch.equal(acqf(Z), first)  # pruning left the acquisition as it was


def test_exact_and_greedy_on_qlognei(branin15, branin_state) -> None:
    model, history = branin_state
    acqf = make_policy("qlognei", {}, fast()).build(model, history, branin15, 1)
    X = dense_candidates(acqf, branin15)
    X[:, 6:] = branin15.default_point[6:]  # |A| <= 6: 64 subsets
    greedy = Bonsai()(acqf, X, history, branin15, fast(), True).metadata[0]
    exact = Bonsai(mode="exact")(acqf, X, history, branin15, fast(), True).metadata[0]
    assert exact["prune_mode"] == "exact" and exact["num_active"] <= 6
    assert len(exact["pruned_dims"]) >= len(greedy["pruned_dims"])
    for meta in (greedy, exact):
        assert meta["gap"] <= meta["tau"]


def test_logei_on_a_map_saas_ensemble(branin15, branin_state) -> None:
    _, history = branin_state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_surrogate("map-saas", history.X, history.Y, bounds=branin15.bounds)
    policy = make_policy("logei", {}, fast())
    policy.postprocessor = Bonsai()
    proposal = policy.propose(model, history, branin15, 1)
    meta = proposal.metadata[0]
    assert not meta["prune_skipped"] and meta["pruned_dims"]
    assert int(num_changed(proposal.X, branin15.default_point, branin15.bounds)[0]) < 15


def test_qlognehvi_batch_on_dtlz2() -> None:
    problem = get_problem("dtlz2")
    X = draw_sobol_samples(problem.bounds, n=12, q=1, seed=0).squeeze(1)
    Y = problem.evaluate(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_surrogate("gp", X, Y, bounds=problem.bounds)
    history = History(X=X, Y=Y, seed=1, t=12)
    acqf = make_policy("qlognehvi", {}, fast()).build(model, history, problem, 2)
    dense = dense_candidates(acqf, problem, q=2)
    Z = torch.rand(5, 1, 6, generator=torch.Generator().manual_seed(2), dtype=torch.double)
    with torch.no_grad():
        before = acqf(Z)
    proposal = Bonsai()(acqf, dense, history, problem, fast(), True)
    with torch.no_grad():
        assert torch.equal(acqf(Z), before)  # conditioned a copy: the cached boxes are intact
    assert proposal.X.shape == (2, 6)
    assert [m["batch_conditioning"] for m in proposal.metadata] == [False, True]
    first = proposal.metadata[0]
    assert not first["prune_skipped"] and first["pruned_dims"]  # pruning really ran
    assert first["gap"] <= first["tau"]
    assert torch.equal(
        proposal.X[0, first["pruned_dims"]], problem.default_point[first["pruned_dims"]]
    )
    for meta in proposal.metadata:
        assert META_KEYS <= set(meta)
        assert meta["prune_skipped"] or meta["gap"] <= meta["tau"]
        assert math.isfinite(meta["prune_time"])
