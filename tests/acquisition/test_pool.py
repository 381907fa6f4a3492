"""The pool policy: TS through the inverted index picks the brute-force argmax (no query
truncation); UCB over a full shortlist equals the dense UCB; evaluated rows are skipped; a
campaign runs on a pool; named errors."""

import numpy as np
import pytest
import torch

from dsbo.acquisition import History, make_policy
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate


@pytest.fixture(scope="module")
def setup():
    problem = get_problem("pool", size=3000, dim=24, density=0.15, seed=3)
    rows = np.arange(0, 3000, 150)
    X = torch.as_tensor(problem.pool.dense(rows))
    Y = problem.evaluate(X, noise=False)
    model = fit_surrogate("sparse-linear", X, Y)
    return problem, X, Y, model


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_thompson_through_the_index_equals_brute_force_argmax(setup, seed):
    problem, X, Y, model = setup
    history = History(X, Y, seed=seed)
    index = make_policy("pool", {"rule": "thompson", "search": "index", "shortlist": 5}).propose(
        model, history, problem, 3
    )
    dense = make_policy("pool", {"rule": "thompson", "search": "dense"}).propose(
        model, history, problem, 3
    )
    rows = [m["pool_row"] for m in index.metadata]
    assert rows == [m["pool_row"] for m in dense.metadata]
    # brute force with the same draws: w = mu + L^-T z (L L^T = the precision), z from the seed
    rng = np.random.default_rng(seed)
    mu, L = model.weight_mean.numpy(), model.precision_cholesky.numpy()
    Z = problem.pool.features.toarray()
    seen = set(problem.pool.rows_of(X).tolist())
    expected = []
    for _ in range(3):
        scores = Z @ (mu + np.linalg.solve(L.T, rng.standard_normal(len(mu))))
        order = np.argsort(-scores, kind="stable")
        expected.append(
            next(int(i) for i in order if int(i) not in seen and int(i) not in expected)
        )
    assert rows == expected
    np.testing.assert_array_equal(problem.pool.rows_of(index.X), rows)


def test_truncated_query_scores_are_exact_after_re_ranking(setup):
    problem, X, Y, model = setup
    proposal = make_policy("pool", {"query_nnz": 6, "shortlist": 200}).propose(
        model, History(X, Y, seed=5), problem, 1
    )
    rng = np.random.default_rng(5)
    mu, L = model.weight_mean.numpy(), model.precision_cholesky.numpy()
    w = mu + np.linalg.solve(L.T, rng.standard_normal(len(mu)))
    row = proposal.metadata[0]["pool_row"]
    assert proposal.metadata[0]["score_std_units"] == pytest.approx(
        float(problem.pool.dense([row])[0] @ w), rel=1e-4
    )


def test_ucb_with_a_full_shortlist_equals_the_dense_ucb(setup):
    problem, X, Y, model = setup
    history = History(X, Y, seed=0)
    full = make_policy("pool", {"rule": "ucb", "shortlist": 3000}).propose(
        model, history, problem, 2
    )
    dense = make_policy("pool", {"rule": "ucb", "search": "dense"}).propose(
        model, history, problem, 2
    )
    assert [m["pool_row"] for m in full.metadata] == [m["pool_row"] for m in dense.metadata]
    short = make_policy("pool", {"rule": "ucb", "shortlist": 50}).propose(
        model, history, problem, 1
    )
    assert short.metadata[0]["score_std_units"] <= dense.metadata[0]["score_std_units"] + 1e-6


def test_campaign_on_a_pool_evaluates_only_rows(tmp_path):
    problem = get_problem("pool", size=2000, dim=16, density=0.2, seed=4)
    campaign = Campaign(
        problem,
        surrogate="sparse-linear",
        acquisition={"name": "pool", "rule": "thompson"},
        budget=14,
        n_init=4,
        seed=0,
        store=tmp_path / "store.db",
    )
    campaign.run()
    frame = campaign.history()
    X = torch.as_tensor(frame[list(problem.parameter_names)].to_numpy().copy())
    rows = problem.pool.rows_of(X)
    assert (rows >= 0).all() and len(set(rows.tolist())) == len(rows) == 14


@pytest.mark.parametrize("query_nnz", [None, 6])
def test_compiled_and_scipy_scans_propose_the_same_rows(setup, query_nnz):
    pytest.importorskip("numba")
    problem, X, Y, model = setup
    for seed in range(4):
        history = History(X, Y, seed=seed)
        rows = {
            kernel: [
                m["pool_row"]
                for m in make_policy(
                    "pool", {"query_nnz": query_nnz, "shortlist": 40, "kernel": kernel}
                )
                .propose(model, history, problem, 3)
                .metadata
            ]
            for kernel in ("compiled", "scipy")
        }
        assert rows["compiled"] == rows["scipy"], seed


def test_errors_are_named(setup):
    problem, X, Y, model = setup
    with pytest.raises(ConfigError, match="rule"):
        make_policy("pool", {"rule": "ei"})
    with pytest.raises(ConfigError, match="shortlist"):
        make_policy("pool", {"shortlist": 0})
    with pytest.raises(ConfigError, match="acquisition.options.kernel='numpy'"):
        make_policy("pool", {"kernel": "numpy"})
    branin = get_problem("branin")
    with pytest.raises(ConfigError, match="needs a pool problem"):
        make_policy("pool").check(branin, 1)
    with pytest.raises(ConfigError, match="larger than the pool"):
        make_policy("pool").check(problem, 5000)
    gp = fit_surrogate("gp", X[:, :3], Y)
    with pytest.raises(ConfigError, match="needs the sparse-linear surrogate"):
        make_policy("pool").propose(gp, History(X, Y), problem, 1)
