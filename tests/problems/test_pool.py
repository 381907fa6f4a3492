"""Pool problems: rows are the only valid points, the initial design snaps to the nearest row,
files load with named errors."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from dsbo.errors import ConfigError, DataError, ProblemError
from dsbo.problems import get_problem
from dsbo.problems.pool import CandidatePool


def test_generated_pool_rows_values_and_bounds():
    problem = get_problem("pool", size=2000, dim=32, density=0.1, seed=1)
    pool = problem.pool
    assert pool.size == 2000 and problem.dim == 32
    norms = np.sqrt(np.asarray(pool.features.multiply(pool.features).sum(1)).ravel())
    np.testing.assert_allclose(norms, 1.0)
    assert (
        2.5 <= pool.features.nnz / 2000 <= 3.2
    )  # round(0.1 * 32) = 3 draws per row (with replacement)
    rows = [0, 7, 1999]
    X = torch.as_tensor(pool.dense(rows))
    np.testing.assert_allclose(problem.evaluate(X, noise=False).ravel().numpy(), pool.values[rows])
    assert problem.optimal_value == pool.values.max()
    assert (problem.bounds[0] <= X).all() and (X <= problem.bounds[1]).all()
    np.testing.assert_array_equal(pool.rows_of(X), rows)


def test_non_members_are_refused_and_points_snap_to_the_nearest_row():
    problem = get_problem("pool", size=500, dim=8, density=0.25, seed=2)
    x = torch.as_tensor(problem.pool.dense([3])) + 1e-3
    with pytest.raises(ProblemError, match="row 0 of X is not a candidate"):
        problem.evaluate(x)
    g = torch.Generator().manual_seed(0)
    points = torch.rand(6, 8, generator=g, dtype=torch.double) * 0.5
    snapped = problem.round_to_domain(points)
    dense = problem.pool.features.toarray()
    brute = ((dense[None] - points.numpy()[:, None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(problem.pool.rows_of(snapped), brute)


def test_pool_from_files(tmp_path):
    rng = np.random.default_rng(0)
    features = sp.random(50, 6, density=0.3, random_state=rng, format="csr")
    sp.save_npz(tmp_path / "f.npz", features)
    np.save(tmp_path / "v.npy", np.arange(50.0))
    np.save(tmp_path / "dense.npy", features.toarray())
    for name in ("f.npz", "dense.npy"):
        problem = get_problem("pool", features=str(tmp_path / name), values=str(tmp_path / "v.npy"))
        assert problem.pool.size == 50 and problem.optimal_value == 49.0
        X = torch.as_tensor(problem.pool.dense([10, 20]))
        # duplicate rows (e.g. all-zero rows) map to one of them; values differ only there
        rows = problem.pool.rows_of(X)
        np.testing.assert_array_equal(problem.pool.dense(rows), X.numpy())


def test_bad_pools_are_named(tmp_path):
    bad = np.ones((5, 3))
    bad[3, 1] = np.nan
    with pytest.raises(DataError, match=r"rows \[3\]"):
        CandidatePool(bad, np.zeros(5))
    with pytest.raises(DataError, match=r"rows \[3\]"):
        CandidatePool(sp.csr_matrix(bad), np.zeros(5))
    with pytest.raises(DataError, match="zero rows"):
        CandidatePool(np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(DataError, match="4 values for 5 candidate rows"):
        CandidatePool(np.ones((5, 3)), np.zeros(4))
    with pytest.raises(DataError, match=r"values are NaN or inf in rows \[1\]"):
        CandidatePool(np.ones((2, 3)), np.array([0.0, np.inf]))
    with pytest.raises(ConfigError, match="is not a file"):
        get_problem("pool", features=str(tmp_path / "none.npy"), values=str(tmp_path / "none.npy"))
    with pytest.raises(ConfigError, match="values .* is required"):
        get_problem("pool", features=str(tmp_path / "none.npy"))
    with pytest.raises(ConfigError, match="density"):
        get_problem("pool", density=0.0)
    np.save(tmp_path / "empty.npy", np.zeros((0, 4)))
    np.save(tmp_path / "empty_v.npy", np.zeros(0))
    with pytest.raises(DataError, match="zero rows"):
        get_problem(
            "pool", features=str(tmp_path / "empty.npy"), values=str(tmp_path / "empty_v.npy")
        )
