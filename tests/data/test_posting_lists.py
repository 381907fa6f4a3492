"""The compiled posting-list scan gives the ids of scipy's sparse product, and bitwise its
sparse scores (float32 sums in the same order), in every selection mode, on one thread and
several; re-ranked scores are BLAS products of the same rows."""

import numpy as np
import pytest
import scipy.sparse as sp

from dsbo.data import posting_lists
from dsbo.data.retrieval import SparseIndex
from dsbo.errors import ConfigError

pytestmark = pytest.mark.skipif(
    not posting_lists.available(), reason="numba is not installed (the retrieval extra)"
)


def codes(n, d, density, seed, signed):
    rng = np.random.default_rng(seed)
    matrix = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float32)
    if signed:
        matrix.data *= rng.choice([-1.0, 1.0], size=matrix.nnz).astype(np.float32)
    return matrix


@pytest.mark.parametrize("traversal", ["exhaustive", "block-max"])
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_compiled_scan_equals_the_scipy_path_bitwise(signed, threads, traversal):
    D, Q = codes(3000, 64, 0.08, 1, signed), codes(150, 64, 0.1, 2, signed)
    rng = np.random.default_rng(3)
    dense, dense_q = (
        rng.standard_normal((3000, 8)).astype(np.float32),
        rng.standard_normal((150, 8)).astype(np.float32),
    )
    compiled = SparseIndex(D, dense=dense, kernel="compiled", threads=threads, traversal=traversal)
    scipy_path = SparseIndex(D, dense=dense, kernel="scipy")
    compiled.chunk = scipy_path.chunk = 32  # several blocks
    cases = [
        dict(k=5),
        dict(k=5, shortlist=40, dense_queries=dense_q),
        dict(k=3, shortlist=50, threshold=0.0, dense_queries=dense_q),
        dict(k=3, shortlist=20, threshold=0.3, dense_queries=dense_q),
        dict(k=10, shortlist=10, threshold=5.0, dense_queries=dense_q),  # nearly no row passes
        dict(k=4, shortlist=30, threshold=-0.2, dense_queries=dense_q),  # a negative threshold
        dict(k=7, threshold=0.3),
    ]  # without a re-rank a threshold changes nothing
    for case in cases:
        scores, ids = compiled.search(Q, **case)
        ref_scores, ref_ids = scipy_path.search(Q, **case)
        np.testing.assert_array_equal(ids, ref_ids, err_msg=str(case))
        if (
            "dense_queries" in case
        ):  # BLAS float32 products: the last bit depends on the batch shape
            np.testing.assert_allclose(scores, ref_scores, rtol=1e-6, atol=1e-6, err_msg=str(case))
        else:
            np.testing.assert_array_equal(scores, ref_scores, err_msg=str(case))


def test_ties_go_to_the_lowest_row_id():
    D = sp.csr_matrix(np.array([[1, 0], [2, 0], [2, 0], [0, 1], [2, 0], [0, 0]], dtype=np.float32))
    index = SparseIndex(D, kernel="compiled")
    scores, ids = index.search(np.array([[1.0, 0.0]]), k=4)
    np.testing.assert_array_equal(ids, [[1, 2, 4, 0]])
    np.testing.assert_array_equal(scores, [[2, 2, 2, 1]])
    scores, ids = index.search(
        np.array([[0.0, -1.0]]), k=3
    )  # implicit zeros before a negative score
    np.testing.assert_array_equal(ids, [[0, 1, 2]])


def test_shortlist_is_the_rows_above_the_threshold_completed_to_k():
    D = sp.csr_matrix(np.array([[0.9], [0.1], [0.5], [0.7], [0.2]], dtype=np.float32))
    scanner = posting_lists.PostingScanner(SparseIndex(D, kernel="compiled").postings)
    Q = sp.csr_matrix(np.array([[1.0], [1.0]], dtype=np.float32))
    for threshold, k, width, kept in [
        (0.6, 1, 4, 2),
        (0.6, 3, 4, 3),
        (0.0, 1, 4, 4),
        (None, 1, 3, 3),
    ]:
        scores, ids, counts = scanner.top(Q, k, width, threshold)
        assert counts.tolist() == [kept, kept], (threshold, k, width)
        np.testing.assert_array_equal(ids[0, :kept], [0, 3, 2, 4][:kept])


def test_dense_query_scores_are_bitwise_the_scipy_paths():
    D = codes(2000, 50, 0.1, 4, signed=True)
    w = np.random.default_rng(5).standard_normal(50)
    compiled, scipy_path = SparseIndex(D, kernel="compiled"), SparseIndex(D, kernel="scipy")
    for dims in (None, np.array([3, 17, 4, 40])):
        scores, hits = compiled.dense_query_scores(w, dims, hits=True)
        ref_scores, ref_hits = scipy_path.dense_query_scores(w, dims, hits=True)
        np.testing.assert_array_equal(scores, ref_scores)
        np.testing.assert_array_equal(hits, ref_hits)


def test_kernel_and_threads_are_checked(monkeypatch):
    D = codes(50, 8, 0.3, 6, signed=False)
    assert SparseIndex(D).kernel == "compiled"
    assert SparseIndex(D, kernel="scipy").kernel == "scipy"
    with pytest.raises(ConfigError, match="kernel='fast'"):
        SparseIndex(D, kernel="fast")
    with pytest.raises(ConfigError, match="threads must be a positive integer"):
        SparseIndex(D, threads=0)
    monkeypatch.setattr(posting_lists, "available", lambda: False)
    assert SparseIndex(D).kernel == "scipy"
    with pytest.raises(ConfigError, match="needs numba"):
        SparseIndex(D, kernel="compiled")


@pytest.mark.parametrize("tile", [4, 16, 64])
def test_dense_query_top_in_small_tiles_with_cancelling_sums(monkeypatch, tile):
    """Row tiles smaller than the pool, read whole or through the list of touched rows, with
    sums that come back to exactly 0 (a row listed twice): the same rows and scores as the
    scipy path."""
    monkeypatch.setattr(posting_lists.DenseQueryScanner, "tile", tile)
    rng = np.random.default_rng(7)
    dense = rng.choice([0.0] * 5 + [1.0, -1.0, 0.5], size=(200, 12)).astype(np.float32)
    D = sp.csr_matrix(dense)
    compiled = SparseIndex(D, kernel="compiled", traversal="exhaustive")  # the tiles
    scipy_path = SparseIndex(D, kernel="scipy")
    for seed in range(9):
        w = np.random.default_rng(seed).choice(
            [1.0, -1.0, 0.5, 2.0], size=12
        )  # dyadic: cancellations are exact
        # every dimension (tiles read whole), four (some tiles listed), two (tiles listed)
        dims = [None, np.array([3, 0, 7, 5]), np.array([3, 0])][seed % 3]
        for width in (1, 5, 40):
            got, ref = (
                compiled.dense_query_top(w, dims, width),
                scipy_path.dense_query_top(w, dims, width),
            )
            np.testing.assert_array_equal(got[1], ref[1])
            np.testing.assert_array_equal(got[0], ref[0])
