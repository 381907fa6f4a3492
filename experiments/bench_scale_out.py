"""Benchmark: one campaign with 1, 2 and 4 workers, on a SQLite store and on PostgreSQL.

A 64-evaluation campaign (Hartmann-6, GP + qLogNEI, 8 Sobol points) whose evaluator sleeps 2 s
before returning Hartmann-6 (a simulated expensive evaluation). Each configuration runs the
whole campaign, side by side in one run, in the order sqlite-1, postgres-1, sqlite-2, ...:

* SQLite, N workers: one process holds the store and keeps N evaluations in flight on a
  thread pool (``Campaign(parallel=N, executor=...)``, :mod:`dsbo.runtime.parallel`);
* PostgreSQL, N workers: N separate worker processes (spawned) share the campaign through the
  database (proposal lock, leases, heartbeats). Their wall time is measured from a common
  start signal, after every worker has imported its modules (as it is for SQLite).

Reported per configuration: the wall time; the ideal wall time ``(budget * eval_seconds + P) /
N``, where ``P`` is the summed time of the campaign's proposals (fit + acquisition + store,
measured in that run): the run's whole work divided evenly over the workers (perfect scaling,
a lower bound) and the wall time's ratio to it (the goal: at most 1.3 with 4 workers); for
reference also ``budget * eval_seconds / N + P`` (:func:`dsbo.runtime.parallel.ideal_wall_time`: the
proposals run one after another, since each holds the proposal lock, and here they are not
overlapped with evaluations, so a run can beat it); the speed-up over the one-worker run on the
same store; store operations, per second of wall time and their mean latency; and the best
value reached (Hartmann-6's maximum is 3.32237).

Writes ``experiments/results/bench_scale_out/{results.json, results.md, bench_scale_out.png}``.

    python experiments/bench_scale_out.py            # 64 evaluations of 2 s; 1/2/4 workers
    python experiments/bench_scale_out.py --smoke    # 6 evaluations of 0.05 s; 1/2 workers

PostgreSQL: ``--pg postgresql://user@host:port/postgres`` (an account that may create
databases; default from ``PG_HOST``/``PG_PORT``/``PG_USER``/``PG_PASSWORD``); each configuration gets a fresh database.
Without a server only SQLite runs, and the results say so.

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import OptimizerSettings  # noqa: E402
from dsbo.campaign import Campaign  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402
from dsbo.runtime.parallel import ideal_wall_time  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bench_scale_out"
#: Light acquisition optimizer settings: a proposal should cost well under an evaluation.
OPTIMIZER = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=50)


class SleepyProblem:
    """``problem(x)`` after ``seconds`` of sleep: a simulated expensive evaluation."""

    def __init__(self, name: str, seconds: float) -> None:
        self.problem, self.seconds = get_problem(name), seconds

    def __call__(self, x):
        time.sleep(self.seconds)
        return self.problem(x)


def campaign(args: argparse.Namespace, store, **kwargs) -> Campaign:
    return Campaign(
        get_problem(args.problem),
        surrogate="gp",
        acquisition="qlognei",
        budget=args.budget,
        n_init=args.n_init,
        seed=args.seed,
        store=store,
        optimizer=OPTIMIZER,
        evaluator=SleepyProblem(args.problem, args.eval_seconds),
        dry_run=False,
        **kwargs,
    )


def warm_up(args: argparse.Namespace) -> None:
    """One untimed GP fit and acquisition in this process (imports, first-call costs), so that
    every configuration, in the parent or in a fresh worker process, is timed warm."""
    c = Campaign(
        get_problem(args.problem),
        surrogate="gp",
        budget=4,
        n_init=2,
        seed=1,
        optimizer=OPTIMIZER,
        dry_run=False,
    )
    c.run()
    c.store.close()


def proposal_seconds(c: Campaign) -> float:
    return sum(t["ask_total"] for t in c.timings)


def run_sqlite(args: argparse.Namespace, workers: int, workdir: Path) -> dict:
    path = workdir / f"sqlite-{workers}-{uuid.uuid4().hex[:6]}.sqlite"
    with ThreadPoolExecutor(workers) as pool:
        extra = {"executor": pool, "parallel": workers} if workers > 1 else {}
        c = campaign(args, str(path), **extra)
        start = time.perf_counter()
        c.run()
        wall = time.perf_counter() - start
    if workers == 1:  # the serial loop records timings per step: ask_total is the proposal
        proposals = sum(t["ask_total"] for t in c.timings)
    else:
        proposals = proposal_seconds(c)
    row = summarize(
        args, "sqlite", workers, wall, proposals, c.store.operations, c.store.busy_seconds, c
    )
    c.store.close()
    return row


def _pg_worker(args: argparse.Namespace, url: str, ready: str, go: str, out: str) -> None:
    torch.set_num_threads(1)
    warm_up(args)
    c = campaign(args, url, lease=60.0)
    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.01)
    c.run()
    Path(out).write_text(
        json.dumps(
            {
                "proposals": proposal_seconds(c),
                "operations": c.store.operations,
                "busy": c.store.busy_seconds,
                "trials": sum(1 for t in c.store.trials() if t.worker == c.worker),
            }
        )
    )
    c.store.close()


def run_postgres(args: argparse.Namespace, workers: int, workdir: Path) -> dict:
    import psycopg

    name = f"dsbo_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = args.pg.rsplit("/", 1)[0] + "/" + name
    try:
        campaign(args, url).store.close()  # create the campaign (identity, settings) once
        tag = uuid.uuid4().hex[:6]
        go = workdir / f"go-{tag}"
        files = [(workdir / f"ready-{tag}-{i}", workdir / f"out-{tag}-{i}") for i in range(workers)]
        ctx = multiprocessing.get_context(args.start_method)
        procs = [
            ctx.Process(target=_pg_worker, args=(args, url, str(r), str(go), str(o)))
            for r, o in files
        ]
        for p in procs:
            p.start()
        while not all(r.exists() for r, _ in files):
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError("a PostgreSQL worker died while starting")
            time.sleep(0.01)
        start = time.perf_counter()
        go.touch()
        for p in procs:
            p.join()
        wall = time.perf_counter() - start
        if any(p.exitcode != 0 for p in procs):
            raise RuntimeError(f"PostgreSQL workers exited with {[p.exitcode for p in procs]}")
        reports = [json.loads(o.read_text()) for _, o in files]
        reader = campaign(args, url)
        row = summarize(
            args,
            "postgres",
            workers,
            wall,
            sum(r["proposals"] for r in reports),
            sum(r["operations"] for r in reports),
            sum(r["busy"] for r in reports),
            reader,
        )
        row["trials_per_worker"] = [r["trials"] for r in reports]
        reader.store.close()
        return row
    finally:
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def summarize(
    args,
    store: str,
    workers: int,
    wall: float,
    proposals: float,
    ops: int,
    busy: float,
    c: Campaign,
) -> dict:
    best, _ = c.best()
    trials = c.store.trials()
    return {
        "store": store,
        "workers": workers,
        "wall_seconds": wall,
        "proposal_seconds": proposals,
        **ideals(args.budget, args.eval_seconds, workers, wall, proposals),
        "proposal_seconds_mean": proposals
        / max(1, sum(t.generator != "sobol-init" for t in trials) + args.n_init),
        "store_operations": ops,
        "store_ops_per_wall_second": ops / wall,
        "store_op_latency_ms": 1000 * busy / max(ops, 1),
        "best_value": best,
        "completed": c.store.count("completed"),
        "total_trials": len(trials),
        "distinct_points": len({tuple(t.x) for t in trials}),
        "repeats": repeats(trials),
    }


def repeats(trials: list) -> list[dict]:
    """Trials at exactly the point of an earlier trial, and whether that earlier trial was
    still pending (in flight) or already finished when the repeat was proposed."""
    seen, out = {}, []
    for t in trials:
        key = tuple(t.x)
        if key in seen:
            first = seen[key]
            pending = first.completed_at is None or first.completed_at > t.created_at
            out.append(
                {
                    "trial": t.id,
                    "repeats": first.id,
                    "generator": t.generator,
                    "earlier_was": "pending" if pending else first.status,
                }
            )
        else:
            seen[key] = t
    return out


def ideals(budget: int, eval_seconds: float, workers: int, wall: float, proposals: float) -> dict:
    """Perfect scaling ``(budget * eval + P) / N`` and the serialized-proposal bound."""
    ideal = (budget * eval_seconds + proposals) / workers
    serial = ideal_wall_time(budget, eval_seconds, workers, proposals)
    return {
        "ideal_seconds": ideal,
        "ratio_to_ideal": wall / ideal,
        "serialized_proposals_seconds": serial,
        "ratio_to_serialized": wall / serial,
    }


def speedups(rows: list[dict]) -> None:
    for row in rows:
        one = next((r for r in rows if r["store"] == row["store"] and r["workers"] == 1), None)
        row["speedup"] = None if one is None else one["wall_seconds"] / row["wall_seconds"]


def plot(rows: list[dict], path: Path, optimum: float | None) -> None:
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for i, store in enumerate(sorted({r["store"] for r in rows})):
        sub = [r for r in rows if r["store"] == store]
        xs = [r["workers"] + (i - 0.5) * 0.3 for r in sub]
        a.bar(xs, [r["ratio_to_ideal"] for r in sub], width=0.3, label=store)
        b.bar(xs, [r["best_value"] for r in sub], width=0.3, label=store)
    a.axhline(1.3, color="k", ls="--", lw=0.8, label="goal (4 workers)")
    a.set_xlabel("workers")
    a.set_ylabel("wall time / ideal")
    a.legend(fontsize=8)
    if optimum is not None:
        b.axhline(optimum, color="k", ls="--", lw=0.8, label="optimum")
    b.set_xlabel("workers")
    b.set_ylabel("best value reached")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_markdown(result: dict, path: Path) -> None:
    a = result["args"]
    lines = [
        "# bench_scale_out",
        "",
        f"One {a['problem']} campaign of {a['budget']} evaluations (GP + qLogNEI, {a['n_init']} Sobol points, seed "
        f"{a['seed']}); each evaluation sleeps {a['eval_seconds']} s first. Configurations ran one after another "
        f"in one run, in the order of the table. Machine: {result['machine']}."
        + (" **Smoke mode** (reduced budget and evaluation time)." if result["smoke"] else ""),
        "",
        "ideal = (budget x eval seconds + P) / workers, P = summed proposal time of that run (perfect scaling); "
        "ratio = wall / ideal. serial-P bound = budget x eval seconds / workers + P (proposals one after another, "
        "not overlapped with evaluations). speed-up = wall time of 1 worker on the same store / wall time.",
        "",
        "| store | workers | wall s | ideal s | ratio | serial-P bound s (ratio) | speed-up | proposals s (mean) | store ops | ops / wall s | op latency ms | best value | trials (distinct points) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        best = "-" if r["best_value"] is None else f"{r['best_value']:.4f}"
        lines.append(
            f"| {r['store']} | {r['workers']} | {r['wall_seconds']:.1f} | {r['ideal_seconds']:.1f} | "
            f"{r['ratio_to_ideal']:.2f} | {r['serialized_proposals_seconds']:.1f} ({r['ratio_to_serialized']:.2f}) | "
            f"{'-' if r.get('speedup') is None else format(r['speedup'], '.2f') + 'x'} | "
            f"{r['proposal_seconds']:.1f} ({r['proposal_seconds_mean']:.2f}) | "
            f"{r['store_operations']} | {r['store_ops_per_wall_second']:.1f} | {r['store_op_latency_ms']:.2f} | "
            f"{best} | {r['total_trials']} ({r['distinct_points']}) |"
        )
    lines += ["", *result.get("notes", [])]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke", action="store_true", help="6 evaluations of 0.05 s, 1 and 2 workers"
    )
    parser.add_argument("--problem", default="hartmann6")
    parser.add_argument("--budget", type=int, default=64)
    parser.add_argument("--n-init", type=int, default=8)
    parser.add_argument("--eval-seconds", type=float, default=2.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--stores", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"]
    )
    login = os.environ.get("PG_USER", "postgres") + (
        f":{os.environ['PG_PASSWORD']}" if os.environ.get("PG_PASSWORD") else ""
    )
    default_pg = (
        f"postgresql://{login}@{os.environ['PG_HOST']}:{os.environ.get('PG_PORT', '5432')}/postgres"
        if os.environ.get("PG_HOST")
        else None
    )
    parser.add_argument(
        "--pg", default=default_pg, help="admin URL of a PostgreSQL server (creates databases)"
    )
    parser.add_argument(
        "--start-method",
        default=None,
        choices=["spawn", "fork", "forkserver"],
        help="how PostgreSQL workers start (default spawn; fork in --smoke)",
    )
    add_out_argument(parser, RESULTS)
    parser.add_argument(
        "--render",
        metavar="RESULTS_JSON",
        default=None,
        help="recompute the derived columns and rewrite results.md/png from a results.json, run nothing",
    )
    parser.add_argument(
        "--note",
        action="append",
        default=[],
        help="a line for results.md's notes (e.g. the machine's load)",
    )
    args = parser.parse_args(argv)
    args.out = str(
        output_folder(args.out, args.smoke, RESULTS)
    )  # a string: results.json records the args
    if args.render:
        result = json.loads(Path(args.render).read_text())
        a = result["args"]
        for r in result["rows"]:
            r.update(
                ideals(
                    a["budget"],
                    a["eval_seconds"],
                    r["workers"],
                    r["wall_seconds"],
                    r["proposal_seconds"],
                )
            )
        speedups(result["rows"])
        result["notes"] = list(dict.fromkeys(result.get("notes", []) + args.note))
        out = Path(args.out)
        (out / "results.json").write_text(json.dumps(result, indent=2))
        plot(result["rows"], out / "bench_scale_out.png", result["optimal_value"])
        write_markdown(result, out / "results.md")
        return result
    if args.smoke:
        args.budget, args.n_init, args.eval_seconds, args.workers = 6, 4, 0.05, [1, 2]
    args.start_method = args.start_method or ("fork" if args.smoke else "spawn")
    torch.set_num_threads(1)
    warm_up(args)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    notes = list(args.note)
    stores = list(args.stores)
    if "postgres" in stores and args.pg is None:
        stores.remove("postgres")
        notes.append("PostgreSQL was not run: no server (set PG_HOST/PG_PORT or --pg).")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-out-") as tmp:
        for workers in args.workers:
            for store in stores:
                row = (run_sqlite if store == "sqlite" else run_postgres)(args, workers, Path(tmp))
                rows.append(row)
                print(json.dumps(row), flush=True)
    speedups(rows)
    problem = get_problem(args.problem)
    result = {
        "smoke": args.smoke,
        "args": {k: v for k, v in vars(args).items() if k != "pg"},
        "rows": rows,
        "optimal_value": problem.optimal_value,
        "notes": notes,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, torch {torch.__version__}",
    }
    (out / "results.json").write_text(json.dumps(result, indent=2))
    plot(rows, out / "bench_scale_out.png", problem.optimal_value)
    write_markdown(result, out / "results.md")
    return result


if __name__ == "__main__":
    main()
