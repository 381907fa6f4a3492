r"""Query time of sparse-embedding retrieval against dense scans, and pool-BO proposals over
``10^6`` candidates, side by side in one run on one thread (Paria thesis ch. 5).

**Retrieval.** The models trained by ``experiments/sparse_embeddings.py`` (F~ and L1 at several
lambdas, and the dense baseline; loaded from ``--models``) embed a Megaface-like set built from
:class:`~dsbo.data.SyntheticClassesDataModule`: ``--queries`` unseen classes with two samples
each (one query, one match in the database) and ``--distractors`` single samples of further
unseen classes. Recall@1 is the share of queries whose top result is their match. Methods:

- sparse: :class:`~dsbo.data.retrieval.SparseIndex` on the model's codes, on each path
  (``--kernels``, ``--traversals``, ``--bound-factors``): the exhaustive compiled posting-list
  scan, the exact block-max traversal (issue 60: row blocks whose score bound cannot enter the
  shortlist are skipped; the same answers), its approximate mode (bound factor < 1), the
  clustered lists of SEISMIC (``--traversals clustered``: exact, and approximate at each
  ``--clusters`` spec) and scipy's sparse product; a shortlist of the best
  ``--shortlist`` sparse scores above ``--threshold`` (the thesis: 0.25, k = 1000 for 1M rows;
  several shortlist lengths may be given), re-ranked exactly with dense vectors: ``--rerank
  dense-model`` (default) the dense baseline's embeddings, as the thesis re-ranks with a
  separate dense model, or ``own`` the sparse network's unit-norm pre-activations;
- sparse, no re-ranking (top-1 of the sparse scores);
- dense baselines on the dense model's embeddings: numpy BLAS matmul + argpartition, torch
  matmul + topk, faiss ``IndexFlatIP`` (exact), faiss ``IndexIVFFlat`` (nlist 1024, nprobe
  1 / 4 / 16; training time excluded) and faiss ``IndexHNSWFlat`` (M 32, efSearch 16 = faiss'
  default and the ``--ef-search`` grid; build time excluded).

The retrieval part is :mod:`bench_retrieval_methods` (methods, timing, checks of each path's
answers against the exact ones) and the report :mod:`bench_retrieval_report` (``results.md``:
goals, faiss HNSW and F~ against L1 at matched recall; ``time_vs_recall.png`` with every model
and baseline).

Every method answers the same query batch; methods are timed in turns (round robin, so load
on the shared machine hits all alike), ``--repeats`` times; the median seconds per query are
reported, and the speed-up of each sparse configuration against faiss ``IndexFlatIP`` (the
fastest exact dense scan here) and against torch. Where the sparse query time goes: after the
round robin, each sparse configuration runs ``--breakdown-repeats`` more times (in turns) with
``SparseIndex.search(..., timings=...)``, which splits the wall time into scoring (the sparse
products into the dense score buffer), top-k (threshold counts, partition and sorts), re-rank
(the shortlist's dense inner products) and the Python overhead (the rest: input checks and
conversion, allocation, block slicing); reported as the median seconds per query of each part
and its share of the median total of those runs.

**Pool BO.** A generated pool (:mod:`dsbo.problems.pool`: ``--pool-size`` rows, 256 dims, 1%
active per row), a ``sparse-linear`` model fitted to 50 evaluated rows, one proposal of the
``pool`` policy: Thompson sampling through the index (exact: full query; and truncated to the
32 or 16 largest weights, shortlist 1000, exact re-rank) against the dense scan (a ``N x 256``
float32 matrix-vector product), and UCB through the index against the dense UCB. Then short
campaigns on a ``10^5`` pool with TS by index (truncated) and by dense scan: final simple
regret over ``--campaign-seeds`` seeds.

    python experiments/bench_retrieval.py --smoke   # seconds (a tiny model trained here)
    python experiments/bench_retrieval.py           # needs experiments/sparse_embeddings.py first

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from bench_retrieval_methods import retrieval_bench
from bench_retrieval_report import plot, report
from smoke_out import add_out_argument, output_folder
from threadpoolctl import threadpool_limits

from dsbo.acquisition import History, make_policy
from dsbo.campaign import Campaign
from dsbo.data import SyntheticClassesDataModule
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate
from dsbo_zoo.sparse_embedding import SparseEmbedding

RESULTS = Path(__file__).resolve().parent / "results" / "bench_retrieval"
MODELS = Path("runs/sparse_embeddings")
#: The benchmark's parts (``--parts``).
PARTS = ("retrieval", "pool", "campaigns")


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with every float to ``digits`` significant digits (the committed results.json:
    timings and ratios do not carry more, and the results folder has a size budget)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {key: rounded(v, digits) for key, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, digits) for v in value]
    return value


def load_models(directory: Path) -> dict[str, tuple[SparseEmbedding, dict[str, Any]]]:
    models = {}
    for path in sorted(directory.glob("*.pt")):
        saved = torch.load(path, weights_only=True)
        model = SparseEmbedding(**saved["hparams"])
        model.load_state_dict(saved["state_dict"])
        models[path.stem] = (model.float().eval(), saved["metrics"])
    if not models:
        raise SystemExit(f"no models in {directory}: run experiments/sparse_embeddings.py first")
    return models


def smoke_model(
    dm: SyntheticClassesDataModule,
) -> dict[str, tuple[SparseEmbedding, dict[str, Any]]]:
    """Untrained tiny models (the smoke mode checks the pipeline, not the numbers)."""
    torch.manual_seed(0)
    out = {}
    for name, activation, reg in (
        ("none-0-const-none", "none", "none"),
        ("flops-1-warm-relu", "relu", "flops"),
    ):
        model = (
            SparseEmbedding(
                dm.in_dim,
                dm.num_classes,
                embedding_dim=32,
                hidden=(32,),
                activation=activation,
                regularizer=reg,
            )
            .float()
            .eval()
        )
        out[name] = (model, {"regularizer": reg, "lam": 1.0})
    return out


def retrieval_set(
    queries: int, distractors: int, seed: int = 7
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query inputs, database inputs, index of each query's match in the database)."""
    dm = SyntheticClassesDataModule(
        total_classes=800 + queries + distractors,
        train_classes=800,
        eval_classes=queries,
        train_per_class=1,
        eval_per_class=2,
        noise=0.1,
        seed=0,
    )
    x, y = dm.split("eval")
    x, y = x.numpy(), y.numpy()
    classes = y >= 0
    xq, xm = x[classes][0::2], x[classes][1::2]  # per class: one query, one match
    database = np.concatenate([xm, x[~classes]])
    del seed
    return xq, database, np.arange(queries)


def pool_bench(args) -> dict[str, Any]:
    problem = get_problem("pool", size=args.pool_size, dim=256, density=0.01, seed=0)
    rng = np.random.default_rng(0)
    rows = rng.choice(problem.pool.size, 50, replace=False)
    X = torch.as_tensor(problem.pool.dense(rows))
    Y = problem.evaluate(X, noise=False)
    model = fit_surrogate("sparse-linear", X, Y)
    index_policies = {
        "TS index (exact, full query)": {"rule": "thompson", "search": "index"},
        "TS index (32 of 256 weights, shortlist 1000)": {
            "rule": "thompson",
            "query_nnz": 32,
            "shortlist": 1000,
        },
        "TS index (16 of 256 weights, shortlist 1000)": {
            "rule": "thompson",
            "query_nnz": 16,
            "shortlist": 1000,
        },
        "UCB index (shortlist 1000, 4 directions)": {"rule": "ucb", "shortlist": 1000},
    }
    # the index policies on the first of --kernels (named as before), the others beside them
    policies = {
        f"{name} [{kernel}]" if kernel != args.kernels[0] else name: make_policy(
            "pool", {**options, "kernel": kernel}
        )
        for name, options in index_policies.items()
        for kernel in args.kernels
    }
    policies["TS dense scan"] = make_policy("pool", {"rule": "thompson", "search": "dense"})
    policies["UCB dense scan"] = make_policy("pool", {"rule": "ucb", "search": "dense"})
    build = {}
    for (
        name,
        policy,
    ) in policies.items():  # build the caches (index, dense matrix) outside the clock
        started = time.perf_counter()
        policy.searcher(problem, model)
        build[name] = time.perf_counter() - started
    picks: dict[str, list[int]] = {name: [] for name in policies}
    times: dict[str, list[float]] = {name: [] for name in policies}
    for rep in range(args.pool_repeats):
        history = History(X, Y, seed=rep)
        for name, policy in policies.items():
            started = time.perf_counter()
            proposal = policy.propose(model, history, problem, 1)
            times[name].append(time.perf_counter() - started)
            picks[name].append(proposal.metadata[0]["pool_row"])
    med = {name: statistics.median(t) for name, t in times.items()}
    out = {
        "pool_size": problem.pool.size,
        "nnz_per_row": problem.pool.features.nnz / problem.pool.size,
        "median_seconds": med,
        "all_seconds": times,
        "cache_build_seconds": build,
        "picks": picks,
        "ts_speedup_exact": med["TS dense scan"] / med["TS index (exact, full query)"],
        "ts_speedup_truncated": med["TS dense scan"]
        / med["TS index (32 of 256 weights, shortlist 1000)"],
        "ts_speedup_truncated16": med["TS dense scan"]
        / med["TS index (16 of 256 weights, shortlist 1000)"],
        "ts_truncated16_same_pick_share": float(
            np.mean(
                [
                    a == b
                    for a, b in zip(
                        picks["TS index (16 of 256 weights, shortlist 1000)"],
                        picks["TS dense scan"],
                        strict=True,
                    )
                ]
            )
        ),
        "ucb_speedup": med["UCB dense scan"] / med["UCB index (shortlist 1000, 4 directions)"],
        "ts_exact_same_pick": picks["TS index (exact, full query)"] == picks["TS dense scan"],
        "ts_truncated_same_pick_share": float(
            np.mean(
                [
                    a == b
                    for a, b in zip(
                        picks["TS index (32 of 256 weights, shortlist 1000)"],
                        picks["TS dense scan"],
                        strict=True,
                    )
                ]
            )
        ),
        "ucb_same_pick_share": float(
            np.mean(
                [
                    a == b
                    for a, b in zip(
                        picks["UCB index (shortlist 1000, 4 directions)"],
                        picks["UCB dense scan"],
                        strict=True,
                    )
                ]
            )
        ),
        "kernels": list(args.kernels),
    }
    for kernel in args.kernels[1:]:  # the first kernel's speed-up over each other one, same policy
        out[f"speedup_over_{kernel}"] = {
            name: med[f"{name} [{kernel}]"] / med[name] for name in index_policies
        }
        out[f"same_picks_as_{kernel}"] = {
            name: picks[f"{name} [{kernel}]"] == picks[name] for name in index_policies
        }
    return out


def campaign_bench(args) -> dict[str, Any]:
    problem = get_problem(
        "pool", size=args.campaign_pool, dim=256, density=0.01, seed=1, noise_std=0.05
    )
    regrets: dict[str, list[float]] = {
        "TS index (32 weights, shortlist 1000)": [],
        "TS dense scan": [],
    }
    options = {
        "TS index (32 weights, shortlist 1000)": {
            "rule": "thompson",
            "query_nnz": 32,
            "shortlist": 1000,
        },
        "TS dense scan": {"rule": "thompson", "search": "dense"},
    }
    for seed in range(args.campaign_seeds):
        for name, opts in options.items():
            campaign = Campaign(
                problem,
                surrogate="sparse-linear",
                acquisition={"name": "pool", **opts},
                budget=args.campaign_budget,
                n_init=10,
                seed=seed,
                dry_run=False,
            )
            campaign.run()
            X = torch.as_tensor(campaign.history()[list(problem.parameter_names)].to_numpy().copy())
            best = problem.pool.values[problem.pool.rows_of(X)].max()
            regrets[name].append(float(problem.optimal_value - best))
    return {
        "pool_size": args.campaign_pool,
        "budget": args.campaign_budget,
        "seeds": args.campaign_seeds,
        "simple_regret": regrets,
        "optimal_value": problem.optimal_value,
        "mean": {k: float(np.mean(v)) for k, v in regrets.items()},
        "std": {k: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for k, v in regrets.items()},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    add_out_argument(parser, RESULTS)
    parser.add_argument("--models", type=Path, default=MODELS)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--distractors", type=int, default=200_000)
    parser.add_argument(
        "--shortlist", type=int, nargs="+", default=[1000], help="shortlist lengths re-ranked"
    )
    parser.add_argument(
        "--rerank",
        choices=("dense-model", "own"),
        default="dense-model",
        help="re-rank with the dense model's embeddings (the thesis) or the sparse network's pre-activations",
    )
    parser.add_argument("--threshold", type=float, default=0.25)
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=("compiled", "scipy"),
        default=["compiled", "scipy"],
        help="SparseIndex paths timed side by side (the compiled one needs numba)",
    )
    parser.add_argument(
        "--no-numpy",
        action="store_true",
        help="leave out the numpy BLAS scan (the slowest exact baseline, a minute per repeat at d = 1024)",
    )
    parser.add_argument(
        "--traversals",
        nargs="+",
        choices=("exhaustive", "block-max", "clustered"),
        default=["exhaustive", "block-max", "clustered"],
        help="walks of the compiled kernel timed side by side",
    )
    parser.add_argument(
        "--clusters",
        nargs="*",
        default=[
            "list=1000,block=16,mass=0.4,terms=10,f=0.9",
            "list=500,block=16,mass=0.4,terms=5,f=0.9",
        ],
        help="clustered paths: 'exact' (the full lists and summaries: large on large data; the "
        "smoke run's), or approximate, each KEY=VALUE,... of list (postings kept per list), "
        "block (rows per block), mass (summary mass), terms (query terms), f (heap factor)",
    )
    parser.add_argument(
        "--bound-factors",
        type=float,
        nargs="*",
        default=[0.9, 0.7, 0.5],
        help="approximate block-max paths: bound factors < 1 (none: exact paths only)",
    )
    parser.add_argument("--block-size", type=int, default=64, help="rows per block (block-max)")
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument(
        "--ef-search",
        type=int,
        nargs="*",
        default=[16, 32, 64, 128, 256],
        help="faiss HNSW efSearch grid (16: faiss' default; none: no HNSW)",
    )
    parser.add_argument("--nlist", type=int, default=1024)
    parser.add_argument("--nprobe", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--breakdown-repeats",
        type=int,
        default=3,
        help="timed runs per sparse configuration for the split of its query time",
    )
    parser.add_argument("--pool-size", type=int, default=1_000_000)
    parser.add_argument("--pool-repeats", type=int, default=7)
    parser.add_argument("--campaign-pool", type=int, default=100_000)
    parser.add_argument("--campaign-budget", type=int, default=60)
    parser.add_argument("--campaign-seeds", type=int, default=5)
    parser.add_argument(
        "--parts",
        nargs="*",
        default=list(PARTS),
        choices=list(PARTS),
        help="parts to run; the others are kept from the previous results.json in --out",
    )
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    if args.smoke:
        args.queries, args.distractors, args.repeats, args.nlist, args.nprobe = (
            50,
            2000,
            2,
            16,
            [1, 4],
        )
        args.breakdown_repeats = 2
        args.clusters = ["exact", *args.clusters]
        (
            args.pool_size,
            args.pool_repeats,
            args.campaign_pool,
            args.campaign_budget,
            args.campaign_seeds,
        ) = 5000, 2, 3000, 14, 1
    torch.set_num_threads(1)
    threadpool_limits(1)  # numpy/scipy BLAS (the dense scans, the factorizations) on one thread too
    try:
        import faiss

        faiss.omp_set_num_threads(1)
    except ImportError:
        pass
    warnings.simplefilter("ignore")
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    args.out.mkdir(parents=True, exist_ok=True)

    previous_path = args.out / "results.json"
    previous = json.loads(previous_path.read_text()) if previous_path.exists() else {}
    missing = [part for part in PARTS if part not in args.parts and part not in previous]
    if missing:
        raise SystemExit(
            f"--parts leaves out {missing}, which {previous_path} does not hold: run them too"
        )
    parts: dict[str, Any] = {part: previous[part] for part in PARTS if part not in args.parts}
    if "retrieval" in args.parts:
        xq, xdb, match = retrieval_set(args.queries, args.distractors)
        models = (
            smoke_model(
                SyntheticClassesDataModule(total_classes=10, train_classes=8, eval_classes=1)
            )
            if args.smoke
            else load_models(args.models)
        )
        parts["retrieval"] = retrieval_bench(models, xq, xdb, match, args)
        # what the retrieval table's header states, kept with the part (a later --parts run keeps it)
        parts["retrieval"]["settings"] = {
            key: getattr(args, key) for key in ("repeats", "threshold", "shortlist", "rerank")
        }
    if "pool" in args.parts:
        parts["pool"] = pool_bench(args)
    if "campaigns" in args.parts:
        parts["campaigns"] = campaign_bench(args)
    for part in args.parts:
        parts[part]["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    result = {
        "smoke": args.smoke,
        **parts,
        "settings": settings,
        "threads": {"torch": torch.get_num_threads(), "faiss": 1, "blas": 1},
        "carried_over": {
            part: parts[part].get("measured_at", previous.get("run_at", "an earlier run"))
            for part in PARTS
            if part not in args.parts
        },
        "run_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    (args.out / "results.json").write_text(json.dumps(rounded(result), separators=(",", ":")))
    (args.out / "results.md").write_text(report(result))
    plot(result, args.out)
    return result


if __name__ == "__main__":
    main()
