"""The --smoke modes of experiments/sparse_embeddings.py and experiments/bench_retrieval.py run
and write their results (kept apart from tests/test_experiments.py, which other work edits)."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def test_sparse_embeddings_smoke(tmp_path):
    import sparse_embeddings

    result = sparse_embeddings.main(["--smoke", "--out", str(tmp_path)])
    toy = result["toy"]
    # section 5.6: F and F~ sparsify the denser activation faster than L1 (closer to balance)
    assert toy["F"]["p1_over_p2_at_sum_0.25"] < toy["L1"]["p1_over_p2_at_sum_0.25"]
    assert toy["F~"]["p1_over_p2_at_sum_0.25"] < toy["L1"]["p1_over_p2_at_sum_0.25"]
    assert result["toy_gradient_check_max_abs_diff"] < 1e-10
    names = {r["name"] for r in result["runs"]}
    assert {
        "none-0-const-none",
        "flops-0.03-warm-relu",
        "l1-0.01-warm-relu",
        "flops-30-const-relu",
    } <= names
    dense = next(r for r in result["runs"] if r["regularizer"] == "none")
    assert dense["nnz"] == result["embedding_dim"] and dense["r_sub"] == 1.0
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (tmp_path / "results.md").read_text().startswith("# Sparse embeddings")
    assert (tmp_path / "sparse_embeddings.png").stat().st_size > 0
    # --report-only trains nothing and redraws from results.json
    (tmp_path / "sparse_embeddings.png").unlink()
    again = sparse_embeddings.main(["--smoke", "--out", str(tmp_path), "--report-only"])
    assert again["runs"] == json.loads(json.dumps(result["runs"]))
    assert (tmp_path / "sparse_embeddings.png").stat().st_size > 0


def test_bench_retrieval_smoke(tmp_path):
    import bench_retrieval
    from bench_retrieval_methods import is_approximate

    result = bench_retrieval.main(["--smoke", "--out", str(tmp_path)])
    methods = result["retrieval"]["methods"]
    # exact dense scans agree with each other
    assert (
        methods["numpy BLAS"]["recall@1"]
        == methods["faiss IndexFlatIP"]["recall@1"]
        == methods["torch matmul+topk"]["recall@1"]
    )
    assert all(m["seconds_per_query"] > 0 for m in methods.values())
    # where the sparse query time goes: every sparse configuration, parts adding up to the total
    sparse = {name: m for name, m in methods.items() if m["kind"] == "sparse"}
    assert sparse and all("time_breakdown" in m for m in sparse.values())
    assert not any("time_breakdown" in m for name, m in methods.items() if name not in sparse)
    for name, m in sparse.items():
        b = m["time_breakdown"]
        assert all(len(v) == 2 for v in b["all_seconds"].values())
        for run in range(2):
            parts = sum(
                b["all_seconds"][part][run] for part in ("scoring", "topk", "rerank", "overhead")
            )
            assert parts == pytest.approx(b["all_seconds"]["total"][run], rel=1e-9)
        assert (b["seconds_per_query"]["rerank"] > 0) == ("sparse+rerank@" in name)
        assert all(0 <= share <= 1 for share in b["share"].values())
    assert "### Where the sparse query time goes" in (tmp_path / "results.md").read_text()
    # the compiled scan and the scipy path, side by side: the same answers
    compiled = [name for name in sparse if " | compiled | " in name]
    assert compiled and all(sparse[name]["same_ids_as_scipy"] for name in compiled)
    # the exact block-max traversal: the exhaustive scan's ids and scores, fewer postings read
    pruned = [name for name in sparse if " | block-max | " in name]
    assert pruned and all(sparse[name]["same_ids_as_exhaustive"] for name in pruned)
    assert all(0 < sparse[name]["postings_read_share"] <= 1 for name in pruned)
    # the clustered lists (SEISMIC): exact settings give the exhaustive answer; a spec is approximate
    clustered = [name for name in sparse if " | clustered | " in name]
    assert clustered and all(sparse[name]["same_ids_as_exhaustive"] for name in clustered)
    assert all(sparse[name]["postings_read_share"] > 0 for name in clustered)
    approximate = [name for name in sparse if is_approximate(name.split(" | ")[1])]
    assert any(" | clustered list=" in name for name in approximate)
    assert approximate and all(
        0 <= sparse[name]["top1_agreement_with_exact"] <= 1 for name in approximate
    )
    assert any(name.startswith("faiss HNSW efSearch=16 (default)") for name in methods)
    assert "### F~ against L1 at matched recall" not in (tmp_path / "results.md").read_text()
    assert "### faiss HNSW against the sparse paths" in (tmp_path / "results.md").read_text()
    assert (
        "### Fastest configuration within a recall budget" in (tmp_path / "results.md").read_text()
    )
    pool = result["pool"]
    assert all(pool["same_picks_as_scipy"].values()) and set(pool["speedup_over_scipy"]) == set(
        pool["same_picks_as_scipy"]
    )
    assert pool["ts_exact_same_pick"] is True  # the index without truncation is exact
    assert set(result["campaigns"]["simple_regret"]) == {
        "TS index (32 weights, shortlist 1000)",
        "TS dense scan",
    }
    assert (tmp_path / "results.md").read_text().startswith("# Retrieval and pool-BO benchmark")
    assert (tmp_path / "time_vs_recall.png").stat().st_size > 0
    # --parts reruns one part and keeps the others from results.json, saying so
    again = bench_retrieval.main(["--smoke", "--out", str(tmp_path), "--parts", "pool"])
    # (results.json keeps floats to 4 significant digits)
    carried = json.loads(json.dumps(bench_retrieval.rounded(result["retrieval"])))
    assert again["retrieval"] == carried and set(again["carried_over"]) == {
        "retrieval",
        "campaigns",
    }
    assert "The retrieval part is carried over" in (tmp_path / "results.md").read_text()
    # a carried-over retrieval part from before the split of the query time still reports
    previous = json.loads((tmp_path / "results.json").read_text())
    for m in previous["retrieval"]["methods"].values():
        m.pop("time_breakdown", None)
    (tmp_path / "results.json").write_text(json.dumps(previous))
    bench_retrieval.main(["--smoke", "--out", str(tmp_path), "--parts", "campaigns"])
    report = (tmp_path / "results.md").read_text()
    assert "| faiss IndexFlatIP |" in report and "Where the sparse query time goes" not in report


def test_bench_retrieval_rerank_with_the_dense_model(tmp_path):
    """A shortlist of every row re-ranked with the dense model's embeddings is the dense scan."""
    import bench_retrieval

    result = bench_retrieval.main(
        [
            "--smoke",
            "--out",
            str(tmp_path),
            "--parts",
            "retrieval",
            "pool",
            "campaigns",
            "--shortlist",
            "100000",
            "50",
            "--threshold",
            "-1",
            "--rerank",
            "dense-model",
            "--no-numpy",
        ]
    )
    methods = result["retrieval"]["methods"]
    assert "numpy BLAS" not in methods
    full = [m for name, m in methods.items() if name.endswith("sparse+rerank@100000")]
    assert full and all(m["recall@1"] == methods["faiss IndexFlatIP"]["recall@1"] for m in full)
    assert any(name.endswith("sparse+rerank@50") for name in methods)
    assert "the dense model's embeddings" in (tmp_path / "results.md").read_text()
