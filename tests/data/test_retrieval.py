"""Inverted-index retrieval: exactly the dense top-k without a threshold; re-ranking; faiss
baselines; named errors for bad input. Every test runs on both paths of ``SparseIndex``: the
compiled posting-list scan and scipy's sparse product (what ``kernel="auto"`` picks without
numba)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dsbo.data import posting_lists
from dsbo.data.retrieval import (
    DenseIndex,
    FaissFlatIndex,
    FaissIVFIndex,
    SparseIndex,
    TorchDenseIndex,
)
from dsbo.errors import ConfigError, DataError


@pytest.fixture(autouse=True, params=["compiled", "scipy"])
def kernel(request, monkeypatch):
    """The path ``kernel="auto"`` takes: compiled, or scipy as where numba is not installed."""
    if request.param == "compiled" and not posting_lists.available():
        pytest.skip("numba is not installed (the retrieval extra)")
    if request.param == "scipy":
        monkeypatch.setattr(posting_lists, "available", lambda: False)
    return request.param


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
    dense_db, dense_q = (
        rng.standard_normal((300, 8)).astype(np.float32),
        rng.standard_normal((5, 8)).astype(np.float32),
    )
    q = random_codes(5, 20, 0.3, 4)
    index = SparseIndex(db, dense=dense_db)
    scores, ids = index.search(q, k=3, shortlist=20, threshold=0.1, dense_queries=dense_q)
    sparse_scores = (q @ db.T).toarray()
    checked = 0
    for i in range(5):
        row = sparse_scores[i]
        shortlist = np.argsort(-np.where(row > 0.1, row, -np.inf), kind="stable")[
            : min(20, (row > 0.1).sum())
        ]
        if len(shortlist) < 3:
            continue
        best = shortlist[np.argsort(-(dense_db[shortlist] @ dense_q[i]))[:3]]
        np.testing.assert_array_equal(np.sort(ids[i]), np.sort(best))
        np.testing.assert_allclose(scores[i], np.sort(dense_db[best] @ dense_q[i])[::-1], rtol=1e-5)
        checked += 1
    assert checked >= 3


def test_dense_baselines_agree():
    rng = np.random.default_rng(5)
    db, q = (
        rng.standard_normal((500, 16)).astype(np.float32),
        rng.standard_normal((7, 16)).astype(np.float32),
    )
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
    np.testing.assert_allclose(
        index.dense_query_scores(w), db @ w.astype(np.float32), rtol=1e-5, atol=1e-6
    )
    dims = np.array([1, 5, 7])
    truncated = np.zeros(20)
    truncated[dims] = w[dims]
    np.testing.assert_allclose(
        index.dense_query_scores(w, dims), db @ truncated, rtol=1e-5, atol=1e-6
    )
    # hits: exactly the rows with a non-zero in one of the query's dimensions
    scores, hits = index.dense_query_scores(w, dims, hits=True)
    np.testing.assert_array_equal(hits, np.flatnonzero((db[:, dims].toarray() != 0).any(axis=1)))
    np.testing.assert_allclose(scores, db @ truncated, rtol=1e-5, atol=1e-6)
    with pytest.raises(DataError, match="query has 3 dimensions"):
        index.dense_query_scores(np.ones(3))


@pytest.mark.parametrize("width", [1, 7, 60, 300])
def test_dense_query_top_is_the_brute_force_shortlist(width):
    """The ``width`` best rows of one dense query over every row (untouched rows score 0),
    ties by id: with many positive touched rows (only they are ranked) and with few (every row
    is ranked, zeros before negative scores); dyadic values tie exactly."""
    D = signed_sparse_codes(300, 40, 2, 31)
    index = SparseIndex(D)
    rng = np.random.default_rng(32)
    for dims in (None, np.array([4, 9, 2]), np.array([11])):
        w = rng.choice([-1.0, 0.5, 1.0], size=40)
        scores, ids = index.dense_query_top(w, dims, width)
        kept = np.zeros(40)
        kept[np.arange(40) if dims is None else dims] = w[np.arange(40) if dims is None else dims]
        full = np.asarray(D.toarray(), dtype=np.float64) @ kept
        order = np.lexsort((np.arange(300), -full))[:width]
        np.testing.assert_array_equal(ids, order)
        np.testing.assert_array_equal(scores, full[order])
    with pytest.raises(ConfigError, match="width=301 is larger"):
        index.dense_query_top(w, None, 301)


def signed_sparse_codes(n, d, nnz, seed, values=(-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)):
    """``nnz`` non-zeros per row drawn from a dyadic set: every inner product is exact in
    float32, so the dense reference ties exactly where the index does."""
    rng = np.random.default_rng(seed)
    cols = np.stack([rng.choice(d, nnz, replace=False) for _ in range(n)])
    data = rng.choice(values, size=(n, nnz)).astype(np.float32)
    return sp.csr_matrix((data.ravel(), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))


def dense_top_k(Q, D, k):
    """Brute force: ``Q @ D.T`` densely, top-k by score, ties by row id."""
    S = np.asarray(Q.toarray(), dtype=np.float64) @ np.asarray(D.toarray(), dtype=np.float64).T
    order = np.lexsort((np.broadcast_to(np.arange(S.shape[1]), S.shape), -S), axis=1)[:, :k]
    return np.take_along_axis(S, order, axis=1), order


def test_issue_31_signed_example_ranks_implicit_zeros_above_negative_scores():
    db = sp.csr_matrix(np.array([[-1, 0], [-2, 0], [0, 1], [0, 1]], dtype=np.float32))
    index = SparseIndex(db)
    scores, ids = index.search(sp.csr_matrix(np.array([[1.0, 0.0]], dtype=np.float32)), 1)
    np.testing.assert_array_equal(ids, [[2]])
    np.testing.assert_array_equal(scores, [[0.0]])
    scores, ids = index.search(sp.csr_matrix(np.array([[1.0, 0.0]], dtype=np.float32)), 4)
    np.testing.assert_array_equal(ids, [[2, 3, 0, 1]])
    np.testing.assert_array_equal(scores, [[0.0, 0.0, -1.0, -2.0]])


@pytest.mark.parametrize("k", [1, 5, 298])
@pytest.mark.parametrize("shortlist", [None, 299])
def test_exact_top_k_in_the_sparse_signed_regime(k, shortlist):
    """SThresh-like codes: 3 non-zeros of 512 per row, so most rows share no dimension with a
    query (score 0, never stored) and some score below 0: the index equals the dense top-k
    exactly (scores, and ids with ties by row id); blocks smaller than the query batch."""
    D, Q = signed_sparse_codes(300, 512, 3, 0), signed_sparse_codes(150, 512, 3, 1)
    ref_scores, ref_ids = dense_top_k(Q, D, k)
    everything = dense_top_k(Q, D, 300)[0]
    assert (everything[:, 0] == 0).any() and (
        everything[:, 0] > 0
    ).any()  # some queries match no row
    assert (ref_scores < 0).any() == (k > 250)  # with k near n the list reaches the negative scores
    index = SparseIndex(D)
    index.chunk = 16  # several blocks
    scores, ids = index.search(Q, k, shortlist=shortlist)
    assert (
        scores.shape == ids.shape == (150, k)
        and scores.dtype == np.float32
        and ids.dtype == np.int64
    )
    np.testing.assert_array_equal(scores, ref_scores)
    np.testing.assert_array_equal(ids, ref_ids)


def test_exact_top_k_for_continuous_signed_codes():
    """Continuous signed values: scores equal the dense brute force, ids equal up to ties."""
    D, Q = (
        random_codes(3000, 128, 3 / 128, 2, signed=True),
        random_codes(200, 128, 3 / 128, 3, signed=True),
    )
    k = 10
    ref_scores, _ = dense_top_k(Q, D, k)
    scores, ids = SparseIndex(D).search(Q, k)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-6)
    full = np.asarray(Q.toarray(), dtype=np.float64) @ np.asarray(D.toarray(), dtype=np.float64).T
    np.testing.assert_allclose(
        np.take_along_axis(full, ids, axis=1), ref_scores, rtol=1e-5, atol=1e-6
    )
    assert all(len(set(row)) == k for row in ids.tolist())


def test_threshold_keeps_scores_above_it_and_completes_with_the_next_best():
    """With a threshold the re-ranked shortlist holds only rows scoring > threshold; a query
    with fewer than k such rows is completed by the next best sparse scores (ties by id)."""
    D, Q = signed_sparse_codes(500, 32, 3, 4), signed_sparse_codes(40, 32, 3, 5)
    rng = np.random.default_rng(6)
    dense_db, dense_q = (
        rng.standard_normal((500, 8)).astype(np.float32),
        rng.standard_normal((40, 8)).astype(np.float32),
    )
    index = SparseIndex(D, dense=dense_db)
    k, shortlist, threshold = 5, 30, 1.0
    scores, ids = index.search(
        Q, k, shortlist=shortlist, threshold=threshold, dense_queries=dense_q
    )
    sparse_scores, sparse_ids = dense_top_k(Q, D, 500)
    for i in range(40):
        passing = int((sparse_scores[i] > threshold).sum())
        candidates = sparse_ids[i, : min(shortlist, max(k, passing))]
        dense = dense_db[candidates] @ dense_q[i]
        best = candidates[np.lexsort((candidates, -dense))[:k]]
        np.testing.assert_array_equal(ids[i], best)
        np.testing.assert_allclose(scores[i], dense_db[best] @ dense_q[i], rtol=1e-5, atol=1e-6)
    # without re-ranking a threshold does not change the (exact) top-k
    np.testing.assert_array_equal(
        index.search(Q, k, shortlist=shortlist, threshold=threshold)[1], sparse_ids[:, :k]
    )


@pytest.mark.parametrize("threshold", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("k, shortlist", [(1, 1), (1, 4), (3, 3), (3, 50)])
def test_threshold_path_from_stored_scores_equals_the_brute_force(threshold, k, shortlist):
    """A threshold >= 0 selects from the sparse product's stored scores (no n-wide buffer):
    dyadic codes with many exact ties, queries with no, few and many passing rows, a shortlist
    that cuts through ties, several blocks: the same rows as the brute force (shortlist = the
    best passing rows by sparse score, ties by id; completed to k by the next best sparse
    scores; then the dense re-rank, ties by id)."""
    D, Q = signed_sparse_codes(400, 48, 3, 21), signed_sparse_codes(90, 48, 3, 22)
    rng = np.random.default_rng(23)
    dense_db = rng.choice([-1.0, 0.0, 1.0], size=(400, 4)).astype(
        np.float32
    )  # ties in the re-rank too
    dense_q = rng.choice([-1.0, 1.0], size=(90, 4)).astype(np.float32)
    index = SparseIndex(D, dense=dense_db)
    index.chunk = 16
    scores, ids = index.search(
        Q, k, shortlist=shortlist, threshold=threshold, dense_queries=dense_q
    )
    sparse_scores, sparse_ids = dense_top_k(Q, D, 400)
    passing = (sparse_scores > threshold).sum(axis=1)
    if (k, shortlist, threshold) == (3, 3, 2.0):
        assert (passing < k).any() and (
            passing > shortlist
        ).any()  # both the completion and the cut happen
    for i in range(90):
        candidates = sparse_ids[i, : min(shortlist, max(k, passing[i]))]
        dense = dense_db[candidates] @ dense_q[i]
        best = candidates[np.lexsort((candidates, -dense))[:k]]
        np.testing.assert_array_equal(ids[i], best)
        np.testing.assert_array_equal(scores[i], dense_db[best] @ dense_q[i])


def test_search_has_no_per_query_python_loop():
    """The selection is vectorized over a block of queries: the number of Python and C calls
    made by a search does not grow with the number of queries in a block."""
    import sys

    D = signed_sparse_codes(1000, 64, 3, 7)
    rng = np.random.default_rng(8)
    index = SparseIndex(D, dense=rng.standard_normal((1000, 8)).astype(np.float32))
    index.chunk = 256

    def calls(m):
        Q = signed_sparse_codes(m, 64, 3, 9)
        dq = rng.standard_normal((m, 8)).astype(np.float32)
        count = [0]

        def profile(frame, event, arg):
            if event in ("call", "c_call"):
                count[0] += 1

        for kwargs in (
            {},
            {"shortlist": 50, "dense_queries": dq},
            {"shortlist": 50, "threshold": 0.5, "dense_queries": dq},
        ):
            sys.setprofile(profile)
            try:
                index.search(Q, 3, **kwargs)
            finally:
                sys.setprofile(None)
        return count[0]

    few, many = calls(2), calls(200)
    assert many < 1.2 * few, (few, many)


def test_score_buffer_is_bounded():
    """The dense score block is at most ``buffer`` entries (one query at least)."""
    index = SparseIndex(signed_sparse_codes(5000, 16, 2, 10))
    index.buffer = 20_000
    assert index.block_rows() == 4
    index.buffer = 10
    assert index.block_rows() == 1
    index.buffer, index.chunk = 10**9, 64
    assert index.block_rows() == 64


def timing_setup():
    """A search of several blocks with a threshold shortlist and a dense re-rank; the queries
    are a dense float64 ndarray, so the input checks and conversion (timed as overhead) take
    milliseconds."""
    D = signed_sparse_codes(4000, 4096, 4, 11)
    rng = np.random.default_rng(12)
    index = SparseIndex(D, dense=rng.standard_normal((4000, 16)).astype(np.float32))
    index.chunk = 32
    Q = signed_sparse_codes(300, 4096, 4, 13).toarray().astype(np.float64)
    return index, Q, rng.standard_normal((300, 16)).astype(np.float32)


def test_search_timings_parts_add_up_to_the_total_of_the_call():
    import time

    from dsbo.data.retrieval import TIMING_PARTS

    index, Q, dq = timing_setup()
    gaps = []
    for _ in range(3):  # the gap is the call itself; best of 3 against a preemption in it
        timings = {}
        started = time.perf_counter()
        index.search(Q, 5, shortlist=50, threshold=0.5, dense_queries=dq, timings=timings)
        outside = time.perf_counter() - started
        assert set(timings) == {*TIMING_PARTS, "total"}
        assert all(timings[part] > 0 for part in TIMING_PARTS), timings
        assert sum(timings[part] for part in TIMING_PARTS) == pytest.approx(
            timings["total"], rel=1e-9, abs=1e-12
        )
        assert timings["total"] <= outside
        gaps.append(outside - timings["total"])
    assert min(gaps) < 1e-3, gaps
    # the seconds are added to the dict: a second call accumulates
    before = dict(timings)
    index.search(Q, 5, shortlist=50, threshold=0.5, dense_queries=dq, timings=timings)
    assert all(timings[key] > before[key] for key in timings)


def test_search_results_do_not_depend_on_timings_and_no_dense_means_no_rerank_time():
    index, Q, dq = timing_setup()
    for kwargs in (
        {},
        {"shortlist": 50},
        {"shortlist": 50, "dense_queries": dq},
        {"shortlist": 50, "threshold": 0.5, "dense_queries": dq},
    ):
        timings = {}
        scores, ids = index.search(Q, 5, **kwargs)
        timed_scores, timed_ids = index.search(Q, 5, timings=timings, **kwargs)
        np.testing.assert_array_equal(timed_scores, scores)
        np.testing.assert_array_equal(timed_ids, ids)
        # the compiled scan selects while it scores: its top-k time is the re-ranked part only
        topk_timed = index.kernel == "scipy" or "dense_queries" in kwargs
        assert (
            timings["scoring"] > 0
            and (timings["topk"] > 0) == topk_timed
            and timings["overhead"] >= 0
        )
        assert (timings["rerank"] > 0) == ("dense_queries" in kwargs), (kwargs, timings)
        if "dense_queries" not in kwargs:
            assert timings["rerank"] == 0.0


def test_search_reads_no_clock_without_timings():
    """Off by default at no cost: ``time.perf_counter`` is not called (it is, with timings)."""
    import gc
    import sys
    import time

    index, Q, dq = timing_setup()

    def clock_reads(**kwargs):
        count = [0]

        def profile(frame, event, arg):
            if event == "c_call" and arg is time.perf_counter:
                count[0] += 1

        # no garbage collection inside: a finalizer of another test's objects (a store that
        # times its calls) would read the clock in this thread
        gc.collect()
        gc.disable()
        sys.setprofile(profile)
        try:
            index.search(Q, 5, shortlist=50, threshold=0.5, dense_queries=dq, **kwargs)
        finally:
            sys.setprofile(None)
            gc.enable()
        return count[0]

    assert clock_reads() == 0
    assert clock_reads(timings={}) >= 2 * (300 // 32)
