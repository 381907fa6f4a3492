"""The block-max traversal (issue 60) gives exactly the exhaustive answer: against a numpy brute
force over 600 random cases (dyadic values, so every float sum is exact and ties abound; signed
codes and queries, thresholds, every shortlist size, empty queries and rows), bitwise against the
exhaustive compiled scan on continuous codes, and for the pool's dense queries; the approximate
mode (``bound_factor < 1``) returns exact scores in order, never better than the exact answer."""

import numpy as np
import pytest
import scipy.sparse as sp
from sparse_cases import brute_force_mismatches

from dsbo.data import block_max, posting_lists
from dsbo.data.retrieval import SparseIndex
from dsbo.errors import ConfigError

pytestmark = pytest.mark.skipif(
    not posting_lists.available(), reason="numba is not installed (the retrieval extra)"
)


@pytest.fixture(autouse=True)
def always_prune(monkeypatch):
    """Every query through the pruned traversal (small test indexes would rather be scanned)."""
    monkeypatch.setattr(block_max, "COST", 1e12)
    monkeypatch.setattr(block_max, "ALIVE_MAX", 1.0)


def test_exact_block_max_equals_brute_force_over_600_random_cases(monkeypatch):
    def build(D, dense, options, seed):
        # the filter's bail-out to the exhaustive scan: never, at half the blocks, always
        monkeypatch.setattr(block_max, "ALIVE_MAX", [1.0, 0.5, 0.0][seed % 3])
        return SparseIndex(D, dense=dense, kernel="compiled", traversal="block-max", **options)

    assert brute_force_mismatches(build, range(600), 10_000) == []


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_block_max_is_bitwise_the_exhaustive_scan_on_continuous_codes(signed, threads):
    rng = np.random.default_rng(1)
    D = sp.random(4000, 48, density=0.1, format="csr", random_state=rng, dtype=np.float32)
    Q = sp.random(60, 48, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    if signed:
        D.data *= rng.choice([-1.0, 1.0], size=D.nnz).astype(np.float32)
        Q.data *= rng.choice([-1.0, 1.0], size=Q.nnz).astype(np.float32)
    dense, dq = (
        rng.standard_normal((4000, 8), dtype=np.float32),
        rng.standard_normal((60, 8), dtype=np.float32),
    )
    pruned = SparseIndex(D, dense=dense, kernel="compiled", threads=threads, traversal="block-max")
    full = SparseIndex(D, dense=dense, kernel="compiled", traversal="exhaustive")
    for k, shortlist, threshold in [
        (1, 1, None),
        (5, 40, 0.1),
        (3, 200, 0.0),
        (10, 10, -0.2),
        (2, 3999, 0.3),
    ]:
        for queries in (None, dq):
            got = pruned.search(Q, k, shortlist, threshold, dense_queries=queries)
            ref = full.search(Q, k, shortlist, threshold, dense_queries=queries)
            np.testing.assert_array_equal(got[1], ref[1])
            np.testing.assert_array_equal(got[0], ref[0])
        # the scan itself: the shortlist, its sparse scores and its length, bitwise
        got = pruned._query_scanner().top(Q, k, shortlist, threshold)
        ref = full._query_scanner().top(Q, k, shortlist, threshold)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)
    assert pruned._query_scanner().visited.sum() > 0


def test_pruning_visits_fewer_postings_on_clustered_codes():
    rng = np.random.default_rng(2)
    centers = rng.random((20, 64)) < 0.08
    rows = centers[rng.integers(0, 20, size=5000)] & (rng.random((5000, 64)) < 0.9)
    D = sp.csr_matrix((rows * rng.uniform(0.1, 1.0, size=rows.shape)).astype(np.float32))
    Q = D[:50]
    index = SparseIndex(D, kernel="compiled", traversal="block-max")
    np.testing.assert_array_equal(index.search(Q, 1)[1], SparseIndex(D).search(Q, 1)[1])
    scanner = index._query_scanner()
    full = sum(D.T.tocsr()[Q[i].indices].nnz for i in range(50))
    assert scanner.visited.sum() < 0.75 * full


def test_dense_query_top_through_block_max_is_the_exhaustive_one():
    """The pool's float64 queries (signed weights, subsets of dimensions): bitwise the tiles'."""
    rng = np.random.default_rng(7)
    dense = rng.choice([0.0] * 6 + [1.0, -1.0, 0.5, 0.3], size=(700, 16)).astype(np.float32)
    D = sp.csr_matrix(dense)
    pruned = SparseIndex(D, kernel="compiled", traversal="block-max", block_size=16)
    full = SparseIndex(D, kernel="compiled", traversal="exhaustive")
    for seed in range(30):
        w = np.random.default_rng(seed).standard_normal(16)
        dims = [None, np.array([3, 0, 7, 5, 11]), np.array([9])][seed % 3]
        for width in (1, 5, 60, 700):
            got, ref = pruned.dense_query_top(w, dims, width), full.dense_query_top(w, dims, width)
            np.testing.assert_array_equal(got[1], ref[1])
            np.testing.assert_array_equal(got[0], ref[0])


@pytest.mark.parametrize("factor", [0.9, 0.5, 0.2])
def test_approximate_mode_returns_exact_scores_never_above_the_exact_answer(factor):
    rng = np.random.default_rng(3)
    D = sp.random(3000, 40, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    Q = sp.random(80, 40, density=0.25, format="csr", random_state=rng, dtype=np.float32)
    exact = SparseIndex(D, kernel="compiled", traversal="block-max")
    approx = SparseIndex(D, kernel="compiled", traversal="block-max", bound_factor=factor)
    one = SparseIndex(D, kernel="compiled", traversal="block-max", bound_factor=1.0)
    full = (Q @ D.T).toarray()
    for k in (1, 10):
        got_scores, got_ids = approx.search(Q, k)
        ref_scores, ref_ids = exact.search(Q, k)
        np.testing.assert_array_equal(one.search(Q, k)[1], ref_ids)
        assert (got_scores <= ref_scores).all()  # the best of a subset, place by place
        assert (np.diff(got_scores, axis=1) <= 0).all()
        np.testing.assert_allclose(got_scores, np.take_along_axis(full, got_ids, 1), rtol=1e-5)
        assert (np.sort(got_ids, axis=1)[:, 1:] != np.sort(got_ids, axis=1)[:, :-1]).all()
        assert np.mean(got_ids[:, 0] == ref_ids[:, 0]) > (0.5 if factor >= 0.5 else 0.0)
    with_threshold = approx._query_scanner().top(Q, 1, 50, 0.2)
    reference = exact._query_scanner().top(Q, 1, 50, 0.2)
    for i in range(Q.shape[0]):
        got, ref = with_threshold[2][i], reference[2][i]
        assert got <= ref  # fewer rows found above the threshold
        # place by place never above the exact shortlist's sparse scores
        assert (with_threshold[0][i, :got] <= reference[0][i, :got]).all()
        if ref < 50:  # every row above the threshold was kept: the approximate ones among them
            assert set(with_threshold[1][i, :got]) <= set(reference[1][i, :ref])


def test_shortlist_sizes_and_options_are_checked():
    D = sp.csr_matrix(np.eye(6, 4, dtype=np.float32))
    index = SparseIndex(D, kernel="compiled", traversal="block-max", block_size=2)
    for k, shortlist in [(1, 1), (2, 4), (6, 6)]:  # 1, k < n, k = n
        assert index.search(D, k, shortlist, 0.0, dense_queries=None)[1].shape == (6, k)
    with pytest.raises(ConfigError, match="larger than the database"):
        index.search(D, 7)  # k > n
    with pytest.raises(ConfigError, match="traversal='wand'"):
        SparseIndex(D, traversal="wand")
    with pytest.raises(ConfigError, match="needs kernel"):
        SparseIndex(D, kernel="scipy", traversal="block-max")
    with pytest.raises(ConfigError, match="bound_factor must be in"):
        SparseIndex(D, bound_factor=1.5)
    with pytest.raises(ConfigError, match="approximate"):
        SparseIndex(D, traversal="exhaustive", bound_factor=0.5)
    for block in (0, 3, 48, True):
        with pytest.raises(ConfigError, match="block must be a power of two"):
            SparseIndex(D, block_size=block)
    assert SparseIndex(D).traversal == "exhaustive"
    assert SparseIndex(D, traversal="block-max").traversal == "block-max"
    assert SparseIndex(D, kernel="scipy").traversal == "exhaustive"
    assert block_max.dominant_order(sp.csr_matrix((3, 2), dtype=np.float32)).tolist() == [0, 1, 2]
