r"""The retrieval part of ``experiments/bench_retrieval.py``: every method answers the same
query batch, timed in turns (issues 31, 46, 60).

Methods (each ``search(queries, k)``, top-1 here):

- sparse, per trained model and per *path*: ``compiled`` (the exhaustive posting-list scan of
  :mod:`dsbo.data.posting_lists`, every posting of every query term), ``block-max`` (the exact
  block-max traversal of :mod:`dsbo.data.block_max`: the same ids and scores, fewer postings
  read), ``block-max f=F`` (its **approximate** mode, ``bound_factor = F < 1``: a block is visited
  only if ``F`` times its score bound beats the heap, as SEISMIC's ``heap_factor``),
  ``clustered`` (SEISMIC's blocked lists with summaries, :mod:`dsbo.data.clustered_postings`,
  exact settings: the same ids and scores), ``clustered SPEC`` (its **approximate** settings,
  ``--clusters``: postings kept per list, rows per block, summary mass, query terms, heap
  factor) and ``scipy`` (scipy's sparse product); with a shortlist of the ``--shortlist`` best
  sparse scores above ``--threshold`` re-ranked by dense vectors, and without re-ranking;
- dense baselines on the dense model's embeddings: numpy BLAS, torch, faiss ``IndexFlatIP``,
  ``IndexIVFFlat`` (``--nprobe``) and ``IndexHNSWFlat`` (M = ``--hnsw-m``, faiss' default
  efConstruction 40; efSearch 16 is faiss' default, and the ``--ef-search`` grid; build time
  excluded).

Each sparse path is checked against the exact ones: ``same_ids_as_scipy`` (compiled),
``same_ids_as_exhaustive`` (block-max and clustered: the exhaustive compiled scan's ids), and
for the approximate modes ``top1_agreement_with_exact``, the share of queries whose top-1 is
the exact traversal's (its recall against the exact mode). ``postings_read_share``: postings the
traversal read per query over those of the query's posting lists (1 for the exhaustive scan;
clustered: the summary and forward-index entries it read).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from dsbo.data.clustered_postings import ClusterSettings
from dsbo.data.dense_indexes import faiss_module
from dsbo.data.retrieval import (
    TIMING_PARTS,
    DenseIndex,
    FaissFlatIndex,
    FaissIVFIndex,
    SparseIndex,
    TorchDenseIndex,
)
from dsbo.data.retrieval_checks import as_matrix
from dsbo_zoo.sparse_embedding import SparseEmbedding, flops_per_row

#: faiss' default efSearch of ``IndexHNSWFlat``.
HNSW_DEFAULT_EF = 16


class FaissHNSWIndex:
    """faiss ``IndexHNSWFlat`` (inner product, ``m`` links per node, faiss' default
    efConstruction): ``search(queries, k, ef)`` with ``efSearch = ef``. Approximate."""

    def __init__(self, vectors: Any, m: int = 32) -> None:
        faiss = faiss_module()
        X = np.ascontiguousarray(as_matrix(vectors, "index vectors"))
        self.index = faiss.IndexHNSWFlat(X.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        self.ef_construction = int(self.index.hnsw.efConstruction)
        started = time.perf_counter()
        self.index.add(X)
        self.build_seconds = time.perf_counter() - started

    def search(self, queries: Any, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        self.index.hnsw.efSearch = ef
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)


def sparse_paths(args: Any) -> dict[str, dict[str, Any]]:
    """The sparse paths timed (label: ``SparseIndex`` options), from ``--kernels``,
    ``--traversals`` and ``--bound-factors``."""
    paths: dict[str, dict[str, Any]] = {}
    for kernel in args.kernels:
        if kernel == "scipy":
            paths["scipy"] = {"kernel": "scipy"}
            continue
        if "exhaustive" in args.traversals:
            paths["compiled"] = {"kernel": "compiled", "traversal": "exhaustive"}
        if "block-max" in args.traversals:
            options = {
                "kernel": "compiled",
                "traversal": "block-max",
                "block_size": args.block_size,
            }
            paths["block-max"] = options
            for factor in args.bound_factors:
                paths[f"block-max f={factor:g}"] = {**options, "bound_factor": factor}
        if "clustered" in args.traversals:
            for spec in args.clusters:
                if spec == "exact":  # the full lists and summaries: memory grows with the data
                    paths["clustered"] = {"kernel": "compiled", "traversal": "clustered"}
                    continue
                paths[f"clustered {spec}"] = {
                    "kernel": "compiled",
                    "traversal": "clustered",
                    **cluster_options(spec),
                }
    return paths


#: ``--clusters`` keys: the :class:`~dsbo.data.clustered_postings.ClusterSettings` field each sets.
CLUSTER_KEYS = {
    "list": "list_size",
    "block": "block_size",
    "mass": "summary_mass",
    "terms": "query_terms",
}


def cluster_options(spec: str) -> dict[str, Any]:
    """``SparseIndex`` options of one ``--clusters`` spec, e.g.
    ``list=2000,mass=0.4,terms=10,f=0.9`` (``f``: the heap factor, ``bound_factor``); bad keys
    stop the run before anything is timed."""
    clusters: dict[str, Any] = {}
    options: dict[str, Any] = {"clusters": clusters}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        if key == "f":
            options["bound_factor"] = float(value)
        elif key in CLUSTER_KEYS:
            field = CLUSTER_KEYS[key]
            clusters[field] = float(value) if field == "summary_mass" else int(value)
        else:
            raise SystemExit(
                f"--clusters {spec!r}: unknown key {key!r} (use {', '.join(CLUSTER_KEYS)}, f)"
            )
    ClusterSettings(**clusters)  # checked now: a bad value names its field
    return options


def index_options(options: dict[str, Any]) -> dict[str, Any]:
    """A path's options as ``SparseIndex`` takes them (the clustered settings as their class)."""
    if "clusters" not in options:
        return options
    return {**options, "clusters": ClusterSettings(**options["clusters"])}


def is_approximate(path: str) -> bool:
    """Whether a sparse path may miss rows (block-max with a factor, clustered with a spec)."""
    return path.startswith(("block-max f=", "clustered "))


def embed(model: SparseEmbedding, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sparse codes, dense unit-norm pre-activations), float32, in chunks."""
    codes, dense = [], []
    with torch.no_grad():
        for start in range(0, len(x), 65536):
            t = torch.as_tensor(x[start : start + 65536])
            codes.append(model(t).numpy())
            dense.append(model.dense_embedding(t).numpy())
    return np.concatenate(codes), np.concatenate(dense)


def timed_round_robin(methods: dict[str, Any], repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(repeats):
        for name, fn in methods.items():
            started = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - started)
    return times


def sparse_search(index: SparseIndex, queries: Any, k: int, **options: Any) -> Any:
    """``search(timings=None)``: the index's search of ``queries`` with ``options``."""

    def search(timings: dict[str, float] | None = None) -> Any:
        return index.search(queries, k, timings=timings, **options)

    return search


def time_breakdown(
    searches: dict[str, Any], repeats: int, n_queries: int
) -> dict[str, dict[str, Any]]:
    """Each search run ``repeats`` times in turns with a timings dict: per part the median
    seconds per query and its share of the median total (shares need not add to 1 exactly)."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in searches}
    for _ in range(repeats):
        for name, search in searches.items():
            timings: dict[str, float] = {}
            search(timings)
            runs[name].append(timings)
    out = {}
    for name, timed in runs.items():
        total = statistics.median(t["total"] for t in timed)
        parts = {part: statistics.median(t[part] for t in timed) for part in TIMING_PARTS}
        out[name] = {
            "total_seconds_per_query": total / n_queries,
            "repeats": repeats,
            "seconds_per_query": {part: v / n_queries for part, v in parts.items()},
            "share": {part: v / total for part, v in parts.items()},
            "all_seconds": {key: [t[key] for t in timed] for key in (*TIMING_PARTS, "total")},
        }
    return out


def dense_methods(ddb: np.ndarray, args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``{label: search(queries, k)}`` of the dense baselines, and what their build reported."""
    nlist = min(args.nlist, len(ddb) // 39)
    methods: dict[str, Any] = {}
    if not args.no_numpy:
        methods["numpy BLAS"] = DenseIndex(ddb).search
    methods["torch matmul+topk"] = TorchDenseIndex(ddb).search
    methods["faiss IndexFlatIP"] = FaissFlatIndex(ddb).search
    for nprobe in args.nprobe:
        index = FaissIVFIndex(ddb, nlist=nlist, nprobe=min(nprobe, nlist))
        methods[f"faiss IVF nprobe={nprobe}"] = index.search
    info: dict[str, Any] = {"ivf_nlist": nlist}
    if args.ef_search:
        hnsw = FaissHNSWIndex(ddb, m=args.hnsw_m)
        info["hnsw"] = {
            "M": args.hnsw_m,
            "efConstruction": hnsw.ef_construction,
            "build_seconds": hnsw.build_seconds,
        }
        for ef in args.ef_search:
            label = f"faiss HNSW efSearch={ef}" + (" (default)" if ef == HNSW_DEFAULT_EF else "")
            methods[label] = lambda q, k, ef=ef: hnsw.search(q, k, ef)
    return methods, info


def check_paths(results: dict[str, Any], outputs: dict[str, Any]) -> None:
    """Each sparse path's answers against the exact ones of the same model and configuration."""
    for name, out in outputs.items():
        if results[name]["kind"] != "sparse":
            continue
        model, path, config = name.split(" | ")
        exhaustive = outputs.get(f"{model} | compiled | {config}")
        exact = outputs.get(f"{model} | block-max | {config}", exhaustive)
        if path == "compiled" and f"{model} | scipy | {config}" in outputs:
            scipy_ids = outputs[f"{model} | scipy | {config}"][1]
            results[name]["same_ids_as_scipy"] = bool(np.array_equal(out[1], scipy_ids))
        elif path in ("block-max", "clustered") and exhaustive is not None:
            results[name]["same_ids_as_exhaustive"] = bool(
                np.array_equal(out[1], exhaustive[1]) and np.array_equal(out[0], exhaustive[0])
            )
        elif is_approximate(path) and exact is not None:
            agree = np.asarray(out[1])[:, 0] == np.asarray(exact[1])[:, 0]
            results[name]["top1_agreement_with_exact"] = float(agree.mean())


def retrieval_bench(models, xq, xdb, match, args) -> dict[str, Any]:
    dense_name = next(name for name, (_, m) in models.items() if m["regularizer"] == "none")
    dq, ddb = embed(models[dense_name][0], xq)[0], embed(models[dense_name][0], xdb)[0]
    k = 1
    baselines, info = dense_methods(ddb, args)
    methods: dict[str, Any] = {}
    searches: dict[str, Any] = {}  # the sparse searches, taking a timings dict
    results: dict[str, dict[str, Any]] = {}
    outputs: dict[str, Any] = {}
    read: dict[str, Any] = {}  # the pruning indexes: postings (entries) read per query

    def runner(name, fn):
        def run():
            outputs[name] = fn()

        methods[name] = run

    for name, search in baselines.items():
        runner(name, lambda search=search: search(dq, k))
        results[name] = {"model": dense_name, "kind": "dense"}
    paths = sparse_paths(args)
    for name, (model, meta) in models.items():
        if meta["regularizer"] == "none":
            continue
        cq, cq_dense = embed(model, xq)
        cdb, cdb_dense = embed(model, xdb)
        if args.rerank == "dense-model":  # one shared matrix: the dense baseline's embeddings
            cq_dense, cdb_dense = dq, ddb
        database = sp.csr_matrix(cdb)
        indexes = {
            path: SparseIndex(database, dense=cdb_dense, **index_options(options))
            for path, options in paths.items()
        }
        del cdb_dense
        qcsr = sp.csr_matrix(cq)
        lengths = np.diff(next(iter(indexes.values())).postings.indptr)
        full_postings = float(np.add.reduceat(lengths[qcsr.indices], qcsr.indptr[:-1]).sum())
        configs = [
            (f"sparse+rerank@{s}", {"shortlist": min(s, len(cdb)), "threshold": args.threshold})
            for s in args.shortlist
        ]
        configs.append(("sparse, no rerank", {}))
        labels = []
        for path, index in indexes.items():
            for config, options in configs:
                label = f"{name} | {path} | {config}"
                dense_q = cq_dense if "shortlist" in options else None
                searches[label] = sparse_search(index, qcsr, k, dense_queries=dense_q, **options)
                labels.append(label)
                if path.startswith(("block-max", "clustered")):
                    read[label] = (index, full_postings)
        stats = {
            "model": name,
            "kind": "sparse",
            "regularizer": meta["regularizer"],
            "lam": meta["lam"],
            "flops_per_row_db": indexes[next(iter(indexes))].flops_per_row(),
            "nnz_per_row_db": database.nnz / database.shape[0],
            "flops_per_row_eval": float(flops_per_row(torch.as_tensor(cdb[:5000]))),
        }
        for label in labels:
            runner(label, searches[label])
            results[label] = dict(stats, kernel=label.split(" | ")[1])
    for name in methods:  # warm up (and record the answers and the postings read)
        before = read[name][0].traversal_stats()["postings_read"] if name in read else 0
        methods[name]()
        if name in read:
            index, full = read[name]
            results[name]["postings_read_share"] = (
                index.traversal_stats()["postings_read"] - before
            ) / max(full, 1.0)
    times = timed_round_robin(methods, args.repeats)
    for name, breakdown in time_breakdown(searches, args.breakdown_repeats, len(xq)).items():
        results[name]["time_breakdown"] = breakdown
    check_paths(results, outputs)
    for name, out in outputs.items():
        ids = np.asarray(out[1])[:, 0]
        results[name]["recall@1"] = float((ids == match).mean())
        results[name]["seconds_per_query"] = statistics.median(times[name]) / len(xq)
        results[name]["all_seconds"] = times[name]
    flat = results["faiss IndexFlatIP"]["seconds_per_query"]
    torch_time = results["torch matmul+topk"]["seconds_per_query"]
    dense_recall = results["faiss IndexFlatIP"]["recall@1"]
    for r in results.values():
        r["speedup_vs_faiss_flat"] = flat / r["seconds_per_query"]
        r["speedup_vs_torch"] = torch_time / r["seconds_per_query"]
        r["recall_loss_points"] = 100 * (dense_recall - r["recall@1"])
    return {
        "methods": results,
        "dense_model": dense_name,
        "n_database": len(xdb),
        "n_queries": len(xq),
        **info,
        "paths": {path: {k: v for k, v in o.items()} for path, o in paths.items()},
    }
