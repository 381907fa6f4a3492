"""Random sparse retrieval cases with a numpy brute force, shared by the tests of the pruning
traversals (block-max and clustered): dyadic values, so every float sum is exact and ties
abound; signed codes and queries, thresholds, every shortlist size, empty queries and rows."""

import numpy as np

VALUES = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 3.0], dtype=np.float32)


def dyadic(rng, rows, d, density, signed, empty_rows=True):
    """Codes whose products and sums are exact in float32 (small dyadic values)."""
    dense = rng.choice(VALUES, size=(rows, d)) * (rng.random((rows, d)) < density)
    if signed:
        dense *= rng.choice([-1.0, 1.0], size=(rows, d))
    if empty_rows and rows > 1:
        dense[rng.random(rows) < 0.1] = 0.0
    return dense.astype(np.float32)


def brute_force(D, Q, k, shortlist, threshold, dense, dq):
    """The semantics of SparseIndex.search from dense numpy scores (exact for dyadic values)."""
    S = Q.astype(np.float64) @ D.astype(np.float64).T
    ids_out, scores_out = [], []
    for i, s in enumerate(S):
        order = np.lexsort((np.arange(len(s)), -s))
        if dq is None:
            ids_out.append(order[:k])
            scores_out.append(s[order[:k]])
            continue
        count = len(s) if threshold is None else int((s > threshold).sum())
        cand = order[: min(max(count, k), shortlist)]
        exact = dense[cand].astype(np.float64) @ dq[i].astype(np.float64)
        best = np.lexsort((cand, -exact))[:k]
        ids_out.append(cand[best])
        scores_out.append(exact[best])
    return np.array(scores_out), np.array(ids_out)


def random_case(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 160)), int(rng.integers(1, 14))
    signed = bool(rng.random() < 0.5)
    D = dyadic(rng, n, d, rng.uniform(0.05, 0.6), signed)
    Q = dyadic(rng, int(rng.integers(1, 6)), d, rng.uniform(0.1, 0.9), signed or rng.random() < 0.3)
    k = int(rng.choice([1, rng.integers(1, n + 1), n]))
    shortlist = int(rng.choice([k, rng.integers(k, n + 1), n]))
    threshold = rng.choice([None, -1.0, 0.0, 0.5, 2.0, 100.0])
    rerank = bool(rng.random() < 0.6)
    options = dict(
        block_size=int(rng.choice([1, 2, 4, 8, 16, 64])), reorder=bool(rng.random() < 0.7)
    )
    return D, Q, k, shortlist, threshold, rerank, options


def brute_force_mismatches(build, seeds, rng_offset):
    """The seeds of :func:`random_case` whose ``build(D, options, seed)`` index answers
    differently from :func:`brute_force` (random integer dense vectors re-rank when the case
    asks)."""
    mismatches = []
    for seed in seeds:
        D, Q, k, shortlist, threshold, rerank, options = random_case(seed)
        rng = np.random.default_rng(rng_offset + seed)
        dense = rng.integers(-4, 5, size=(len(D), 3)).astype(np.float32)
        dq = rng.integers(-4, 5, size=(len(Q), 3)).astype(np.float32) if rerank else None
        index = build(D, dense, options, seed)
        kwargs = dict(threshold=threshold, shortlist=shortlist if rerank else None)
        scores, ids = index.search(Q, k, dense_queries=dq, **kwargs)
        ref_scores, ref_ids = brute_force(D, Q, k, shortlist, threshold, dense, dq)
        if not (np.array_equal(ids, ref_ids) and np.array_equal(scores, ref_scores)):
            mismatches.append(seed)
    return mismatches
