"""Dense re-ranking of a shortlist: the compiled kernel and the numpy fallback (gathered in
blocks within the buffer) give the inner products of float64 numpy, to float32 rounding."""

import numpy as np
import pytest

from dsbo.data import rerank


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("buffer", [1, 50, 1 << 22])
def test_gathered_dots_are_the_shortlists_inner_products(monkeypatch, compiled, buffer):
    if compiled and not rerank.available():
        pytest.skip("numba is not installed (the retrieval extra)")
    monkeypatch.setattr(rerank, "available", lambda: compiled)
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((300, 37)).astype(np.float32)
    queries = rng.standard_normal((9, 37)).astype(np.float32)
    cand = rng.integers(0, 300, size=(9, 13))
    got = rerank.gathered_dots(dense, cand, queries, buffer)
    expected = np.einsum("ile,ie->il", dense[cand].astype(np.float64), queries.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == (9, 13)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # small integers: every order of the sums is exact
    ints = rng.integers(-3, 4, size=(300, 37)).astype(np.float32)
    exact = rerank.gathered_dots(ints, cand, np.round(queries), buffer)
    np.testing.assert_array_equal(exact, np.einsum("ile,ie->il", ints[cand], np.round(queries)))
