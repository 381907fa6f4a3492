"""Inverted-index retrieval: exactly the dense top-k without a threshold; re-ranking; faiss
baselines; named errors for bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

from dsbo.data.retrieval import (
    DenseIndex,
    FaissFlatIndex,
    FaissIVFIndex,
    SparseIndex,
    TorchDenseIndex,
)
from dsbo.errors import ConfigError, DataError


def random_codes(n, d, density, seed, signed=False):
    rng = np.random.default_rng(seed)
    codes = sp.random(n, d, density=density, format="csr", random_state=rng, dtype=np.float32)
    if signed:
        codes.data = codes.data * rng.choice([-1.0, 1.0], size=codes.nnz).astype(np.float32)
    return codes


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("shortlist", [None, 40, 10_000])
def test_sparse_index_equals_dense_top_k_without_threshold(signed, shortlist):
    db, q = random_codes(400, 30, 0.15, 0, signed), random_codes(25, 30, 0.2, 1, signed)
    index = SparseIndex(db)
    dense = (q @ db.T).toarray()
    k = 10
    scores, ids = index.search(q, k=k, shortlist=None if shortlist is None else min(shortlist, 400))
    for i in range(25):
        order = np.lexsort((np.arange(400), -dense[i]))[:k]  # ties by row id, as the index does
        np.testing.assert_array_equal(ids[i], order)
        np.testing.assert_allclose(scores[i], dense[i, order], rtol=1e-5, atol=1e-6)
    assert index.flops_per_row() == pytest.approx(((np.diff(db.tocsc().indptr) / 400) ** 2).sum())


def test_queries_with_few_matches_are_padded_with_zero_score_rows():
    db = sp.csr_matrix(np.array([[1.0, 0], [0, 1.0], [0, 2.0], [0, 0.5]], dtype=np.float32))
    scores, ids = SparseIndex(db).search(np.array([[1.0, 0.0]]), k=3)
    np.testing.assert_array_equal(ids[0], [0, 1, 2])
    np.testing.assert_allclose(scores[0], [1.0, 0.0, 0.0])


def test_threshold_shortlist_and_dense_rerank():
    db = random_codes(300, 20, 0.2, 2)
    rng = np.random.default_rng(3)
    dense_db, dense_q = rng.standard_normal((300, 8)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)
    q = random_codes(5, 20, 0.3, 4)
    index = SparseIndex(db, dense=dense_db)
    scores, ids = index.search(q, k=3, shortlist=20, threshold=0.1, dense_queries=dense_q)
    sparse_scores = (q @ db.T).toarray()
    checked = 0
    for i in range(5):
        row = sparse_scores[i]
        shortlist = np.argsort(-np.where(row > 0.1, row, -np.inf), kind="stable")[: min(20, (row > 0.1).sum())]
        if len(shortlist) < 3:
            continue
        best = shortlist[np.argsort(-(dense_db[shortlist] @ dense_q[i]))[:3]]
        np.testing.assert_array_equal(np.sort(ids[i]), np.sort(best))
        np.testing.assert_allclose(scores[i], np.sort(dense_db[best] @ dense_q[i])[::-1], rtol=1e-5)
        checked += 1
    assert checked >= 3


def test_dense_baselines_agree():
    rng = np.random.default_rng(5)
    db, q = rng.standard_normal((500, 16)).astype(np.float32), rng.standard_normal((7, 16)).astype(np.float32)
    ref_scores, ref_ids = DenseIndex(db).search(q, 5)
    for index in (TorchDenseIndex(db), FaissFlatIndex(db), FaissIVFIndex(db, nlist=8, nprobe=8)):
        scores, ids = index.search(q, 5)
        np.testing.assert_array_equal(ids, ref_ids)
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-4, atol=1e-4)


def test_bad_input_is_named():
    codes = np.eye(4, dtype=np.float32)
    bad = codes.copy()
    bad[2, 1] = np.nan
    with pytest.raises(DataError, match=r"rows \[2\]"):
        SparseIndex(bad)
    with pytest.raises(DataError, match=r"rows \[2\]"):
        SparseIndex(sp.csr_matrix(bad))
    with pytest.raises(DataError, match="zero rows"):
        SparseIndex(np.zeros((0, 4)))
    index = SparseIndex(codes)
    with pytest.raises(ConfigError, match="k=5 is larger than the database"):
        index.search(codes[:1], k=5)
    with pytest.raises(DataError, match="queries have 3 dimensions, the index has 4"):
        index.search(np.ones((1, 3)), k=1)
    with pytest.raises(ConfigError, match="shortlist"):
        index.search(codes[:1], k=2, shortlist=1)
    with pytest.raises(ConfigError, match="without dense vectors"):
        index.search(codes[:1], k=1, dense_queries=codes[:1])
    with pytest.raises(DataError, match="queries have 3 dimensions"):
        DenseIndex(codes).search(np.ones((2, 3)), k=1)
    with pytest.raises(ConfigError, match="larger than the database"):
        FaissFlatIndex(codes).search(codes, k=9)


def test_dense_query_scores_through_the_posting_lists():
    db = random_codes(300, 20, 0.2, 6, signed=True)
    w = np.random.default_rng(7).standard_normal(20)
    index = SparseIndex(db)
    np.testing.assert_allclose(index.dense_query_scores(w), db @ w.astype(np.float32), rtol=1e-5, atol=1e-6)
    dims = np.array([1, 5, 7])
    truncated = np.zeros(20)
    truncated[dims] = w[dims]
    np.testing.assert_allclose(index.dense_query_scores(w, dims), db @ truncated, rtol=1e-5, atol=1e-6)
    # hits: exactly the rows with a non-zero in one of the query's dimensions
    scores, hits = index.dense_query_scores(w, dims, hits=True)
    np.testing.assert_array_equal(hits, np.flatnonzero((db[:, dims].toarray() != 0).any(axis=1)))
    np.testing.assert_allclose(scores, db @ truncated, rtol=1e-5, atol=1e-6)
    with pytest.raises(DataError, match="query has 3 dimensions"):
        index.dense_query_scores(np.ones(3))
