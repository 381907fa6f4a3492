"""The clustered traversal (issue 60, SEISMIC's blocked posting lists with summaries): with exact
settings the exhaustive answer, against a numpy brute force over 600 random cases and bitwise
against the exhaustive compiled scan on continuous codes; with its relaxations (static pruning,
pruned summaries, query cut, heap factor) exact scores in order, never better than the exact
answer, and fewer entries read; its settings are checked."""

import numpy as np
import pytest
import scipy.sparse as sp
from sparse_cases import brute_force_mismatches

from dsbo.data import clustered_postings, posting_lists
from dsbo.data.clustered_postings import ClusteredScanner, ClusterSettings, list_blocks
from dsbo.data.retrieval import SparseIndex
from dsbo.errors import ConfigError

pytestmark = pytest.mark.skipif(
    not posting_lists.available(), reason="numba is not installed (the retrieval extra)"
)


def test_exact_clustered_equals_brute_force_over_600_random_cases():
    def build(D, dense, options, seed):
        settings = ClusterSettings(block_size=options["block_size"])
        return SparseIndex(
            D, dense=dense, kernel="compiled", traversal="clustered", clusters=settings
        )

    assert brute_force_mismatches(build, range(600), 20_000) == []


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_clustered_is_bitwise_the_exhaustive_scan_on_continuous_codes(signed, threads):
    rng = np.random.default_rng(1)
    D = sp.random(4000, 48, density=0.1, format="csr", random_state=rng, dtype=np.float32)
    Q = sp.random(60, 48, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    if signed:
        D.data *= rng.choice([-1.0, 1.0], size=D.nnz).astype(np.float32)
        Q.data *= rng.choice([-1.0, 1.0], size=Q.nnz).astype(np.float32)
    clustered = SparseIndex(D, kernel="compiled", threads=threads, traversal="clustered")
    full = SparseIndex(D, kernel="compiled", traversal="exhaustive")
    for k, shortlist, threshold in [(1, 1, None), (5, 40, 0.1), (10, 10, -0.2), (2, 3999, 0.3)]:
        got = clustered._query_scanner().top(Q, k, shortlist, threshold)
        ref = full._query_scanner().top(Q, k, shortlist, threshold)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_array_equal(a, b)
    assert clustered.traversal_stats()["queries"] == 4 * 60


def test_blocks_hold_each_lists_kept_postings_once_and_summaries_bound_their_rows():
    rng = np.random.default_rng(4)
    D = sp.random(500, 30, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    D.data -= 0.3
    settings = ClusterSettings(list_size=40, block_size=8)
    postings = D.T.tocsr()
    scanner = ClusteredScanner(postings, settings)
    list_ptr, block_ptr = scanner.list_blocks, scanner.block_ptr
    rows = scanner.orig[scanner.rows]  # positions in the forward index's order: row ids
    again = list_blocks(D, settings, scanner.position)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(again, (list_ptr, block_ptr, scanner.rows), strict=True)
    )
    dense = D.toarray()
    for j in range(30):
        blocks = range(list_ptr[j], list_ptr[j + 1])
        held = np.concatenate([rows[block_ptr[b] : block_ptr[b + 1]] for b in blocks])
        values = np.abs(postings[j].toarray()[0])
        expected = np.argsort(-values, kind="stable")[: min(40, postings[j].nnz)]
        assert sorted(held.tolist()) == sorted(expected.tolist())  # the largest |value|s, once
        for b in blocks:
            members = dense[rows[block_ptr[b] : block_ptr[b + 1]]]
            assert len(members) <= 8
            at = slice(scanner.summary_ptr[b], scanner.summary_ptr[b + 1])
            upper = np.zeros(30, dtype=np.float32)
            lower = np.zeros(30, dtype=np.float32)
            upper[scanner.summary_dims[at]] = scanner.summary_hi[at]
            lower[scanner.summary_dims[at]] = scanner.summary_lo[at]
            np.testing.assert_array_equal(upper, np.maximum(members.max(axis=0), 0))
            np.testing.assert_array_equal(lower, np.minimum(members.min(axis=0), 0))


@pytest.mark.parametrize(
    "settings, factor",
    [
        (ClusterSettings(list_size=300), 1.0),
        (ClusterSettings(summary_mass=0.5), 1.0),
        (ClusterSettings(query_terms=3), 1.0),
        (ClusterSettings(), 0.5),
        (ClusterSettings(list_size=500, block_size=16, summary_mass=0.4, query_terms=5), 0.8),
    ],
)
def test_approximate_settings_return_exact_scores_never_above_the_exact_answer(settings, factor):
    rng = np.random.default_rng(3)
    D = sp.random(3000, 40, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    Q = sp.random(80, 40, density=0.25, format="csr", random_state=rng, dtype=np.float32)
    assert not settings.exact or factor < 1
    exact = SparseIndex(D, kernel="compiled", traversal="clustered")
    approx = SparseIndex(
        D, kernel="compiled", traversal="clustered", clusters=settings, bound_factor=factor
    )
    full = (Q @ D.T).toarray()
    for k in (1, 10):
        got_scores, got_ids = approx.search(Q, k)
        ref_scores, ref_ids = exact.search(Q, k)
        assert (got_scores <= ref_scores).all()  # the best of a subset, place by place
        assert (np.diff(got_scores, axis=1) <= 0).all()
        np.testing.assert_allclose(got_scores, np.take_along_axis(full, got_ids, 1), rtol=1e-5)
        assert (np.sort(got_ids, axis=1)[:, 1:] != np.sort(got_ids, axis=1)[:, :-1]).all()
    read = approx.traversal_stats()["postings_read"] / approx.traversal_stats()["queries"]
    exact_read = exact.traversal_stats()["postings_read"] / exact.traversal_stats()["queries"]
    assert read < exact_read


def test_clustered_settings_are_checked(monkeypatch):
    D = sp.csr_matrix(np.eye(6, 4, dtype=np.float32))
    for field, value in [
        ("list_size", 0),
        ("list_size", 2.5),
        ("query_terms", -1),
        ("block_size", 0),
        ("block_size", True),
        ("summary_mass", 0.0),
        ("summary_mass", 1.5),
    ]:
        with pytest.raises(ConfigError, match=field):
            ClusterSettings(**{field: value})
    with pytest.raises(ConfigError, match="needs kernel"):
        SparseIndex(D, kernel="scipy", traversal="clustered")
    with pytest.raises(ConfigError, match="use 'clustered'"):
        SparseIndex(D, traversal="block-max", clusters=ClusterSettings())
    with pytest.raises(ConfigError, match="ClusterSettings"):
        SparseIndex(D, traversal="clustered", clusters={"list_size": 3})
    assert SparseIndex(D, traversal="clustered", bound_factor=0.5).bound_factor == 0.5
    monkeypatch.setattr(clustered_postings, "MAX_SUMMARY_ENTRIES", 3)
    with pytest.raises(ConfigError, match="set ClusterSettings' list_size or summary_mass"):
        ClusteredScanner(D.T.tocsr())
    assert ClusterSettings().exact and not ClusterSettings(query_terms=2).exact
