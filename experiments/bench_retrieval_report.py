"""The report of ``experiments/bench_retrieval.py``: ``results.md`` (tables, the recall budgets
of the issues' goals, faiss HNSW against the sparse paths at matched recall, F~ against L1 at
matched recall, where the sparse query time goes) and ``time_vs_recall.png``, every model and
baseline on one recall-vs-time plane (the split of the query time is a table only: a bar per
configuration made the figure larger than the results folder's budget allows)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from bench_retrieval_methods import is_approximate
from results_io import save_figure

from dsbo.data.retrieval import TIMING_PARTS

#: What ``--rerank`` re-ranks the shortlist with, as the report says it.
RERANK_TEXT = {
    "dense-model": "the dense model's embeddings (as the thesis re-ranks with a separate dense model)",
    "own": "each sparse network's own dense pre-activations",
}
#: Markers of the sparse configurations and fills of the paths in the figure.
CONFIG_MARKERS = {"no rerank": "^", "rerank@100": "s", "rerank@1000": "D"}


def config_marker(name: str) -> str:
    config = name.split(" | ")[-1]
    return next((m for key, m in CONFIG_MARKERS.items() if config.endswith(key)), "o")


def model_color(m: dict[str, Any], models: list[str]) -> Any:
    """F~ in blues (darker: larger lambda), L1 in reds, by the model's place in its family."""
    import matplotlib

    family = [name for name in models if name.split("-")[0] == m["model"].split("-")[0]]
    shade = 0.35 + 0.6 * family.index(m["model"]) / max(1, len(family) - 1)
    cmap = matplotlib.colormaps["Blues" if m["regularizer"] == "flops" else "Reds"]
    return cmap(shade)


def plot(result: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = result["retrieval"]["methods"]
    models = sorted(
        {m["model"] for m in methods.values() if m["kind"] == "sparse"},
        key=lambda name: float(name.split("-")[1]) if name.count("-") >= 2 else 0.0,
    )
    fig, ax = plt.subplots(figsize=(7.5, 5))
    fronts: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name, r in methods.items():
        x, y = r["seconds_per_query"] * 1e3, r["recall@1"]
        if r["kind"] == "dense":
            style = (
                ("P", "tab:green")
                if "HNSW" in name
                else ("+", "tab:gray")
                if "IVF" in name
                else ("*", "k")
            )
            ax.scatter(x, y, marker=style[0], s=80, color=style[1], zorder=3)
            ax.annotate(name.replace("faiss ", ""), (x, y), fontsize=5)
            continue
        path = r.get("kernel", "compiled")
        color = model_color(r, models)
        face = "none" if path in ("compiled", "scipy") else color
        size = 14 if is_approximate(path) else 30
        ax.scatter(x, y, marker=config_marker(name), s=size, facecolors=face, edgecolors=color)
        if path.startswith(("block-max", "clustered")):
            family = path.split(" ")[0]
            fronts.setdefault((r["model"], family, name.split(" | ")[-1]), []).append((x, y))
    for points in fronts.values():
        points.sort()
        ax.plot(*zip(*points, strict=True), lw=0.6, alpha=0.6, color="0.5")
    ax.set(
        xscale="log",
        xlabel="ms per query (one thread, median of interleaved repeats)",
        ylabel="recall@1",
        title="F~ (blues, darker: larger lambda) and L1 (reds); hollow: exhaustive scan, filled: "
        "block-max or clustered,\nsmall: approximate (lines join a model's points of one "
        "traversal); diamonds re-rank "
        "1000, squares 100, triangles none;\nblack stars exact dense, grey + IVF, green HNSW",
    )
    ax.title.set_fontsize(8)
    fig.tight_layout()
    save_figure(fig, out / "time_vs_recall.png")
    plt.close(fig)


def breakdown_table(methods: dict[str, Any]) -> list[str]:
    """The markdown table of where the sparse query time goes (none for results without it)."""
    timed = {name: m["time_breakdown"] for name, m in methods.items() if "time_breakdown" in m}
    if not timed:
        return []
    repeats = next(iter(timed.values()))["repeats"]
    lines = [
        "",
        "### Where the sparse query time goes",
        "",
        f"`SparseIndex.search(..., timings=...)`, {repeats} more runs per configuration after the round robin "
        "(in turns); median ms per query of each part and its share of the median total of those runs. "
        "Scoring: the sparse products into the dense score buffer (compiled: the posting-list scan, which "
        "also selects the shortlist while the scores are in cache); top-k: threshold counts, partition and "
        "sorts (compiled: the best of the re-ranked shortlist); re-rank: the shortlist's dense inner "
        "products; overhead: the rest (input checks and conversion, allocation, block slicing, Python "
        "between the parts).",
        "",
        "| method | ms/query (timed runs) | scoring | top-k | re-rank | overhead |",
        "|---|---|---|---|---|---|",
    ]
    for name, b in sorted(timed.items(), key=lambda kv: kv[1]["total_seconds_per_query"]):
        cells = [
            f"{1e3 * b['seconds_per_query'][part]:.3f} ({100 * b['share'][part]:.0f}%)"
            for part in TIMING_PARTS
        ]
        lines.append(f"| {name} | {1e3 * b['total_seconds_per_query']:.3f} | {' | '.join(cells)} |")
    return lines


def fastest(methods: dict[str, Any], recall: float, keep: Any) -> tuple[str, dict] | None:
    """The fastest method passing ``keep(name, m)`` with recall@1 ``>= recall``."""
    within = [(m["seconds_per_query"], name) for name, m in methods.items() if keep(name, m)]
    within = [(t, name) for t, name in within if methods[name]["recall@1"] >= recall - 1e-12]
    if not within:
        return None
    _, name = min(within)
    return name, methods[name]


def describe(found: tuple[str, dict] | None) -> str:
    if found is None:
        return "none"
    name, m = found
    return (
        f"{name.split(' | ')[0]}, {name.split(' | ')[-1]} ({1e3 * m['seconds_per_query']:.3f} ms, "
        f"recall {m['recall@1']:.3f}, {m['speedup_vs_faiss_flat']:.2f}x Flat)"
    )


def path_groups(sparse: dict[str, Any]) -> dict[str, Any]:
    """Sparse paths grouped for the goal tables: each path, and every exact / every path."""
    paths = sorted({m.get("kernel", "scipy") for m in sparse.values()})
    groups = {path: (lambda n, m, p=path: m.get("kernel", "scipy") == p) for path in paths}
    groups["any exact path"] = lambda n, m: not is_approximate(m.get("kernel", ""))
    groups["any path (approximate included)"] = lambda n, m: True
    return groups


def goal_lines(methods: dict[str, Any]) -> list[str]:
    """Per path, the fastest sparse configuration within 2 and within 5 points of the dense
    recall@1 (the goals: >= 5x and >= 20x faiss Flat), and how the paths' answers compare."""
    sparse = {name: m for name, m in methods.items() if m["kind"] == "sparse"}
    dense_recall = methods["faiss IndexFlatIP"]["recall@1"]
    lines = [
        "",
        "### Fastest configuration within a recall budget",
        "",
        "| path | loss <= 2 points | loss <= 5 points |",
        "|---|---|---|",
    ]
    for group, keep in path_groups(sparse).items():
        cells = []
        for budget in (2.0, 5.0):
            found = fastest(sparse, dense_recall - budget / 100, keep)
            cells.append(describe(found))
        lines.append(f"| {group} | {' | '.join(cells)} |")
    checks = [
        ("same_ids_as_scipy", "compiled scan: the scipy path's ids"),
        ("same_ids_as_exhaustive", "block-max and clustered: the exhaustive scan's ids and scores"),
    ]
    for key, text in checks:
        flags = [m[key] for m in sparse.values() if key in m]
        if flags:
            lines += ["", f"{text} in {sum(flags)} of {len(flags)} configurations."]
    agreement = {
        n: m["top1_agreement_with_exact"]
        for n, m in sparse.items()
        if "top1_agreement_with_exact" in m
    }
    for path in sorted({sparse[n]["kernel"] for n in agreement}):
        values = [v for n, v in agreement.items() if sparse[n]["kernel"] == path]
        lines.append(
            f"\n{path} (approximate): top-1 the exact traversal's in {100 * min(values):.1f}% to "
            f"{100 * max(values):.1f}% of the queries (median {100 * statistics.median(values):.1f}%, "
            f"{len(values)} configurations)."
        )
    for path, what in (("block-max", "postings"), ("clustered", "entries (summaries and rows)")):
        shares = [m["postings_read_share"] for m in sparse.values() if m.get("kernel") == path]
        if shares:
            lines.append(
                f"\n{path} (exact) read {100 * min(shares):.1f}% to {100 * max(shares):.1f}% as "
                f"many {what} as the queries' lists hold postings (median "
                f"{100 * statistics.median(shares):.1f}%)."
            )
    return lines


def hnsw_lines(methods: dict[str, Any]) -> list[str]:
    """faiss HNSW at each efSearch against the fastest sparse configuration reaching its recall."""
    hnsw = {name: m for name, m in methods.items() if "HNSW" in name}
    if not hnsw:
        return []
    sparse = {name: m for name, m in methods.items() if m["kind"] == "sparse"}
    groups = path_groups(sparse)
    lines = [
        "",
        "### faiss HNSW against the sparse paths at matched recall",
        "",
        "For each efSearch: the fastest sparse configuration with at least HNSW's recall@1, exact "
        "paths only and any path; `yes` where it is at least as fast as HNSW.",
        "",
        "| HNSW | recall@1 | ms/query | fastest exact sparse | as fast? | fastest sparse, any path | as fast? |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, h in sorted(hnsw.items(), key=lambda kv: kv[1]["seconds_per_query"]):
        cells = []
        for group in ("any exact path", "any path (approximate included)"):
            found = fastest(sparse, h["recall@1"], groups[group])
            faster = found is not None and found[1]["seconds_per_query"] <= h["seconds_per_query"]
            cells += [describe(found), "yes" if faster else "no"]
        lines.append(
            f"| {name} | {h['recall@1']:.3f} | {1e3 * h['seconds_per_query']:.3f} | {' | '.join(cells)} |"
        )
    return lines


def family_lines(methods: dict[str, Any]) -> list[str]:
    """F~ against L1 at matched recall: at recall levels below the dense one, the fastest
    configuration of each family per path, and the ratio of their times."""
    sparse = {name: m for name, m in methods.items() if m["kind"] == "sparse"}
    if not {"flops", "l1"} <= {m["regularizer"] for m in sparse.values()}:
        return []
    dense_recall = methods["faiss IndexFlatIP"]["recall@1"]
    lines = [
        "",
        "### F~ against L1 at matched recall",
        "",
        "The fastest configuration of each regularizer (any lambda, shortlist or none) reaching "
        "the recall@1; ratio: L1's time over F~'s (> 1: F~ faster).",
        "",
        "| path | recall >= | fastest F~ | fastest L1 | L1 / F~ time |",
        "|---|---|---|---|---|",
    ]
    groups = path_groups(sparse)
    for group in ("compiled", "block-max", "clustered", "any path (approximate included)"):
        if group not in groups:
            continue
        for loss in (0, 1, 2, 5, 10, 20):
            level = dense_recall - loss / 100
            found = {
                family: fastest(
                    sparse,
                    level,
                    lambda n, m, f=family, g=groups[group]: m["regularizer"] == f and g(n, m),
                )
                for family in ("flops", "l1")
            }
            ratio = (
                f"{found['l1'][1]['seconds_per_query'] / found['flops'][1]['seconds_per_query']:.2f}"
                if found["l1"] and found["flops"]
                else "-"
            )
            lines.append(
                f"| {group} | {level:.3f} (dense - {loss}) | {describe(found['flops'])} | "
                f"{describe(found['l1'])} | {ratio} |"
            )
    return lines


def report(result: dict[str, Any]) -> str:
    r, p, c = result["retrieval"], result["pool"], result["campaigns"]
    s = result["settings"]
    rs = {**s, **r.get("settings", {})}  # the retrieval part's own settings where it kept them
    hnsw = r.get("hnsw")
    lines = [
        "# Retrieval and pool-BO benchmark (Paria thesis ch. 5)",
        "",
        "Written by `python experiments/bench_retrieval.py"
        + (" --smoke" if result["smoke"] else "")
        + "`; "
        "one thread (torch, faiss and numpy/scipy BLAS), methods timed in turns, median of "
        f"{rs['repeats']} repeats (retrieval) and {s.get('pool_repeats', 7)} (pool); raw numbers in "
        "`results.json` (floats to 4 significant digits), figure `time_vs_recall.png` (every "
        "model and baseline).",
        "",
        *[
            f"The {part} part is carried over from {when} (this run: `--parts {' '.join(s.get('parts', []))}`)."
            for part, when in result.get("carried_over", {}).items()
        ],
        "",
        f"## Retrieval: {r['n_queries']} queries against {r['n_database']} rows "
        f"({r['n_queries']} matches + {r['n_database'] - r['n_queries']} distractors), top-1",
        "",
        f"Sparse: threshold {rs['threshold']}, shortlist {rs['shortlist']} (`sparse+rerank@S`: the S best sparse scores), "
        f"re-ranked with {RERANK_TEXT[rs.get('rerank', 'own')]}; paths: `compiled` the exhaustive "
        "posting-list scan, `block-max` the exact pruned traversal, `block-max f=F` its approximate "
        "mode (bound factor F), `clustered` SEISMIC's blocked lists with summaries (exact "
        "settings), `clustered SPEC` its approximate settings (list: postings kept per list, "
        "block: rows per block, mass: summary mass, terms: query terms, f: heap factor), `scipy` "
        "scipy's sparse product. Dense baselines on the dense model "
        f"`{r['dense_model']}`; IVF nlist {r['ivf_nlist']}"
        + (
            f"; HNSW M {hnsw['M']}, efConstruction {hnsw['efConstruction']} (built in "
            f"{hnsw['build_seconds']:.0f} s, not timed)."
            if hnsw
            else "."
        ),
        "",
        "| method | recall@1 | loss vs dense (points) | ms/query | speed-up vs faiss Flat | vs torch | nnz/row | FLOPs/row | postings read |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, m in sorted(r["methods"].items(), key=lambda kv: kv[1]["seconds_per_query"]):
        share = m.get("postings_read_share")
        lines.append(
            f"| {name} | {m['recall@1']:.3f} | {m['recall_loss_points']:.1f} | {1e3 * m['seconds_per_query']:.3f} | "
            f"{m['speedup_vs_faiss_flat']:.2f}x | {m['speedup_vs_torch']:.2f}x | "
            f"{m.get('nnz_per_row_db', float('nan')):.1f} | {m.get('flops_per_row_db', float('nan')):.2f} | "
            f"{'' if share is None else f'{100 * share:.1f}%'} |"
        )
    lines += goal_lines(r["methods"])
    lines += hnsw_lines(r["methods"])
    lines += family_lines(r["methods"])
    lines += breakdown_table(r["methods"])
    lines += pool_lines(p) + campaign_lines(c)
    return "\n".join(lines) + "\n"


def pool_lines(p: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"## Pool BO: one proposal over {p['pool_size']} candidates ({p['nnz_per_row']:.2f} non-zeros per row of 256)",
        "",
        "| policy | median seconds | cache build seconds (once per pool) |",
        "|---|---|---|",
    ]
    for name, t in p["median_seconds"].items():
        lines.append(f"| {name} | {t:.4f} | {p['cache_build_seconds'][name]:.2f} |")
    return lines + [
        "",
        f"TS speed-up, index vs dense scan: {p['ts_speedup_exact']:.2f}x exact (same pick: {p['ts_exact_same_pick']}), "
        f"{p['ts_speedup_truncated']:.2f}x with 32 weights (same pick in {100 * p['ts_truncated_same_pick_share']:.0f}% of draws), "
        f"{p['ts_speedup_truncated16']:.2f}x with 16 (same pick in {100 * p['ts_truncated16_same_pick_share']:.0f}%); "
        f"UCB: {p['ucb_speedup']:.2f}x (same pick in {100 * p['ucb_same_pick_share']:.0f}%).",
        *[
            f"\nThe {p['kernels'][0]} scan against the {kernel} path, same policy: "
            + ", ".join(
                f"{name} {ratio:.2f}x (same picks: {p[f'same_picks_as_{kernel}'][name]})"
                for name, ratio in p[f"speedup_over_{kernel}"].items()
            )
            + "."
            for kernel in p.get("kernels", [])[1:]
        ],
    ]


def campaign_lines(c: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"## Campaigns: pool of {c['pool_size']}, budget {c['budget']} (10 initial), {c['seeds']} seeds, noise 0.05",
        "",
        "| policy | simple regret mean | std | per seed |",
        "|---|---|---|---|",
    ]
    for name, v in c["simple_regret"].items():
        lines.append(
            f"| {name} | {c['mean'][name]:.3f} | {c['std'][name]:.3f} | {', '.join(f'{x:.3f}' for x in v)} |"
        )
    return lines
