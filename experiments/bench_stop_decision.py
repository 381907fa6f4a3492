"""Benchmark: the latency of an early-stopping decision (``RunningTrial.should_stop()``) and of
a report (``RunningTrial.report()``) on a shared PostgreSQL store with 4 workers (issue 42's
goal: "a stop decision costs at most 50 ms on a shared PostgreSQL store with 4 workers").

For each store size N (default 100 and 300 trials) a store is pre-filled once with N completed
trials that each reported a full 27-step curve (the loss of
:func:`faults_early_stopping.loss_at`-like curves at Sobol points: N x 27 stored values); each
rule (median, asha, hyperband) then runs on a fresh copy of it (PostgreSQL: ``CREATE DATABASE
... TEMPLATE``; SQLite: a file copy). 4 worker processes, started together (after their
imports), each run ``--trials`` trials one after another, asynchronously (no barrier between
them): a trial is proposed (``Campaign.ask``, Sobol: no model, so proposals cost little), and
for each of its 27 steps the worker sleeps ``--step-seconds`` (the "training"), reports the
step's loss and asks ``should_stop()``; a trial told to stop ends there, a trial that reaches
step 27 is told its final loss. ``time.perf_counter`` is read around every ``report`` and every
``should_stop`` call. The store grows while they run (N + 4 x trials at the end).

The same runs on SQLite (one process, the 4 workers as threads sharing one campaign and its
connection) are the reference.

Afterwards, on the final store of each configuration and in one process with nothing else
running, the parts of a decision are timed on their own (``--repeats`` times each, median):
``store.get`` (the trial's reservation), ``store.curves()`` (every curve of every trial, what
a decision reads), ``store.statuses()``, ``store.curves([id])`` (one trial's curve), building
the rule's :class:`~dsbo.stopping.TrialCurve` of every trial from them (``curve_of``, which
validates every point), the rule's pure ``decide`` on curves already in memory, and the whole
``EarlyStopping.decide``.

Writes ``experiments/results/bench_stop_decision/{results.json, results.md}``.

    python experiments/bench_stop_decision.py --pg postgresql://postgres@127.0.0.1:54329/postgres
    python experiments/bench_stop_decision.py --smoke --pg ...   # N in {10, 40}, 2 trials of 9 steps a worker

PostgreSQL: ``--pg`` an admin URL (an account that may create databases; default from
``PG_HOST``/``PG_PORT``/``PG_USER``/``PG_PASSWORD``); every configuration gets fresh databases,
dropped afterwards. Without a server only SQLite runs, and the results say so.

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into
``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "bench_stop_decision"
RULES = ("median", "asha", "hyperband")
GOAL_MS = 50.0


def loss_at(params: dict[str, Any], epoch: int) -> float:
    """A deterministic learning curve: bad learning rates stay high, every curve falls as 1/epoch."""
    return abs(math.log10(params["lr"]) + 1.5) + 1.0 / epoch + 0.01 * params["width"]


def make_problem():
    import dsbo
    from dsbo.problems import get_problem

    space = dsbo.SearchSpace({"lr": dsbo.Float(1e-3, 1.0, log=True), "width": dsbo.Int(1, 8)})
    return get_problem("black-box", parameters=space, objectives={"loss": ("min", None)})


def make_campaign(store: Any, rule: str | None, budget: int, max_steps: int):
    """A campaign whose proposals are Sobol points (no model) with ``rule`` as its stopping rule."""
    from dsbo.campaign import Campaign

    return Campaign(
        make_problem(),
        surrogate="gp",
        acquisition="sobol",
        budget=budget,
        n_init=2,
        seed=0,
        store=store,
        dry_run=False,
        early_stopping=rule,
        max_steps=max_steps,
        lease=600.0,
    )


def run_trials(
    campaign, trials: int, max_steps: int, step_seconds: float, ask_lock: Any, rec: dict[str, list]
) -> None:
    """``trials`` trials of one worker: report each step, ask whether to stop after each
    report, timing both calls (module docstring)."""
    for _ in range(trials):
        with ask_lock:
            proposed = campaign.ask()
        if not proposed:
            return
        [trial] = proposed
        running = campaign.running(trial)
        loss = math.nan
        for step in range(1, max_steps + 1):
            time.sleep(step_seconds)
            loss = loss_at(running.params, step)
            t0 = time.perf_counter()
            running.report(step, loss)
            t1 = time.perf_counter()
            stop = running.should_stop()
            t2 = time.perf_counter()
            rec["report"].append(1000 * (t1 - t0))
            rec["decision"].append((1000 * (t2 - t1), stop))
            if stop:
                break
        rec["trials"].append("stopped" if running.stopped else "completed")
        if not running.stopped:
            campaign.tell(trial.id, loss)


def new_record() -> dict[str, list]:
    return {"report": [], "decision": [], "trials": []}


def _pg_worker(
    url: str, rule: str, settings: dict[str, Any], ready: str, go: str, out: str
) -> None:
    import torch

    torch.set_num_threads(1)
    campaign = make_campaign(url, rule, settings["budget"], settings["max_steps"])
    rec = new_record()
    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.005)
    run_trials(
        campaign,
        settings["trials"],
        settings["max_steps"],
        settings["step_seconds"],
        threading.Lock(),
        rec,
    )
    campaign.store.close()
    Path(out).write_text(json.dumps(rec))


# ---------------------------------------------------------------------- stores
def prefill(campaign, n: int, max_steps: int) -> None:
    """``n`` completed trials with a full ``max_steps`` curve each, through the campaign's API."""
    have = 0
    while have < n:
        trials = campaign.ask(q=n - have)
        for trial in trials:
            running = campaign.running(trial)
            for step in range(1, max_steps + 1):
                running.report(step, loss_at(running.params, step))
            campaign.tell(trial.id, loss_at(running.params, max_steps))
        have += len(trials)


class PostgresStores:
    """Fresh databases on the server ``admin`` (an admin URL), dropped by :meth:`drop_all`."""

    def __init__(self, admin: str) -> None:
        self.admin, self.names = admin, []

    def url(self, name: str) -> str:
        return self.admin.rsplit("/", 1)[0] + "/" + name

    def create(self, template: str | None = None) -> str:
        import psycopg

        name = f"dsbo_stop_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        self.names.append(name)
        return name

    def drop_all(self) -> None:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            for name in self.names:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.names = []


# ---------------------------------------------------------------------- one configuration
def run_postgres(
    args: argparse.Namespace, dbs: PostgresStores, base: str, size: int, rule: str, work: Path
) -> dict:
    url = dbs.url(dbs.create(template=base))
    settings = {
        "budget": budget(args, size),
        "max_steps": args.max_steps,
        "trials": args.trials,
        "step_seconds": args.step_seconds,
    }
    tag = uuid.uuid4().hex[:6]
    go = work / f"go-{tag}"
    files = [(work / f"ready-{tag}-{i}", work / f"out-{tag}-{i}") for i in range(args.workers)]
    ctx = multiprocessing.get_context(args.start_method)
    procs = [
        ctx.Process(target=_pg_worker, args=(url, rule, settings, str(r), str(go), str(o)))
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
    rec = new_record()
    for _, out in files:
        for key, values in json.loads(out.read_text()).items():
            rec[key] += [tuple(v) if isinstance(v, list) else v for v in values]
    return summarize("postgres", size, rule, args.workers, wall, rec, url, args)


def run_sqlite(args: argparse.Namespace, base: Path, size: int, rule: str, work: Path) -> dict:
    path = work / f"sqlite-{size}-{rule}-{uuid.uuid4().hex[:6]}.sqlite"
    shutil.copy(base, path)
    campaign = make_campaign(str(path), rule, budget(args, size), args.max_steps)
    records = [new_record() for _ in range(args.workers)]
    lock = threading.Lock()
    threads = [
        threading.Thread(
            target=run_trials,
            args=(campaign, args.trials, args.max_steps, args.step_seconds, lock, r),
        )
        for r in records
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    campaign.store.close()
    rec = new_record()
    for r in records:
        for key in rec:
            rec[key] += r[key]
    return summarize("sqlite", size, rule, args.workers, wall, rec, str(path), args)


def budget(args: argparse.Namespace, size: int) -> int:
    return size + args.workers * args.trials + 4


def stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {
        "n": len(ordered),
        "median_ms": statistics.median(ordered),
        "p95_ms": p95,
        "max_ms": ordered[-1],
        "mean_ms": statistics.fmean(ordered),
    }


def summarize(
    store: str, size: int, rule: str, workers: int, wall: float, rec: dict, target: str, args
) -> dict:
    decisions = [ms for ms, _ in rec["decision"]]
    row = {
        "store": store,
        "size": size,
        "rule": rule,
        "workers": workers,
        "wall_seconds": wall,
        "decision": stats(decisions),
        "decision_continue": stats([ms for ms, stop in rec["decision"] if not stop]),
        "decision_stop": stats([ms for ms, stop in rec["decision"] if stop]),
        "report": stats(rec["report"]),
        "decisions_over_goal": sum(ms > GOAL_MS for ms in decisions),
        "trials_run": len(rec["trials"]),
        "trials_stopped": rec["trials"].count("stopped"),
    }
    row.update(breakdown(target, rule, args))
    return row


def breakdown(target: str, rule: str, args: argparse.Namespace) -> dict:
    """The parts of a decision timed on their own on the final store (module docstring)."""
    from dsbo.campaign.early_stopping import EarlyStopping, curve_of
    from dsbo.storage import open_store

    store = open_store(target, lock=False)
    try:
        settings = EarlyStopping.build(rule, args.max_steps, None)
        statuses = store.statuses()
        curves = store.curves()
        tid = max(curves)  # the last trial that reported
        trial = curve_of(tid, "pending", curves[tid])
        others = [curve_of(i, s, curves.get(i, [])) for i, s in statuses.items() if i != tid]

        def median_ms(call) -> float:
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                call()
                times.append(1000 * (time.perf_counter() - t0))
            return statistics.median(times)

        return {
            "trials_at_end": len(statuses),
            "curve_rows_at_end": sum(len(c) for c in curves.values()),
            "parts_ms": {
                "store.get": median_ms(lambda: store.get(tid)),
                "store.curves()": median_ms(store.curves),
                "store.statuses()": median_ms(store.statuses),
                "store.curves([id])": median_ms(lambda: store.curves([tid])),
                "curve_of (every trial)": median_ms(
                    lambda: [curve_of(i, s, curves.get(i, [])) for i, s in statuses.items()]
                ),
                "rule.decide (in memory)": median_ms(lambda: settings.rule.decide(trial, others)),
                "EarlyStopping.decide": median_ms(lambda: settings.decide(store, tid)),
            },
        }
    finally:
        store.close()


# ---------------------------------------------------------------------- output
def fmt(s: dict | None, key: str) -> str:
    return "-" if s is None else f"{s[key]:.1f}"


def write_markdown(result: dict, path: Path) -> None:
    a = result["args"]
    lines = [
        "# bench_stop_decision",
        "",
        f"Latency of `RunningTrial.should_stop()` (a stop decision) and `RunningTrial.report()` with {a['workers']} "
        f"workers running trials concurrently (no barrier), on a store pre-filled with N completed trials of "
        f"{a['max_steps']} reported steps each; each worker runs {a['trials']} trials of up to {a['max_steps']} "
        f"steps, sleeping {a['step_seconds']} s before each report. PostgreSQL: {a['workers']} worker processes; "
        f"SQLite (reference): {a['workers']} threads of one process. Goal (issue 42): a stop decision costs at "
        f"most {GOAL_MS:g} ms on PostgreSQL with 4 workers. Machine: {result['machine']}."
        + (
            " **Smoke mode** (small stores, few trials: the numbers are not results)."
            if result["smoke"]
            else ""
        ),
        "",
        "## should_stop() and report() latency (ms)",
        "",
        "| store | N | rule | decisions | median | p95 | max | > goal | stop decisions: median (n) | report median | report p95 | report max | trials (stopped) | trials at end | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        d, s, rep = r["decision"], r["decision_stop"], r["report"]
        lines.append(
            f"| {r['store']} | {r['size']} | {r['rule']} | {0 if d is None else d['n']} | {fmt(d, 'median_ms')} | "
            f"{fmt(d, 'p95_ms')} | {fmt(d, 'max_ms')} | {r['decisions_over_goal']} | "
            f"{fmt(s, 'median_ms')} ({0 if s is None else s['n']}) | {fmt(rep, 'median_ms')} | {fmt(rep, 'p95_ms')} | "
            f"{fmt(rep, 'max_ms')} | {r['trials_run']} ({r['trials_stopped']}) | {r['trials_at_end']} | "
            f"{r['wall_seconds']:.1f} |"
        )
    parts = list(result["rows"][0]["parts_ms"]) if result["rows"] else []
    lines += [
        "",
        "## The parts of one decision, timed alone on the final store (median ms, one process, nothing else running)",
        "",
        "| store | N | rule | curve rows | " + " | ".join(f"`{p}`" for p in parts) + " |",
        "|---|---|---|---|" + "---|" * len(parts),
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['store']} | {r['size']} | {r['rule']} | {r['curve_rows_at_end']} | "
            + " | ".join(f"{r['parts_ms'][p]:.2f}" for p in parts)
            + " |"
        )
    lines += ["", *[f"- {n}" for n in result.get("notes", [])]]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke", action="store_true", help="N in {10, 40}, 2 trials of 9 steps a worker"
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[100, 300], help="trials pre-filled in the store"
    )
    parser.add_argument("--rules", nargs="+", default=list(RULES), choices=RULES)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--trials", type=int, default=12, help="trials each worker runs")
    parser.add_argument("--max-steps", type=int, default=27)
    parser.add_argument(
        "--step-seconds", type=float, default=0.02, help="simulated training before each report"
    )
    parser.add_argument(
        "--repeats", type=int, default=20, help="timings of each part of a decision (median)"
    )
    parser.add_argument(
        "--stores", nargs="+", default=["postgres", "sqlite"], choices=["postgres", "sqlite"]
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
    parser.add_argument("--note", action="append", default=[], help="a line for results.md's notes")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    out = output_folder(args.out, args.smoke, RESULTS)
    if args.smoke:
        args.sizes, args.trials, args.max_steps, args.step_seconds, args.repeats = (
            [10, 40],
            2,
            9,
            0.002,
            3,
        )
    args.start_method = args.start_method or ("fork" if args.smoke else "spawn")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    notes = list(args.note)
    stores = list(args.stores)
    if "postgres" in stores and args.pg is None:
        stores.remove("postgres")
        notes.append("PostgreSQL was not run: no server (set PG_HOST/PG_PORT or --pg).")
    rows: list[dict] = []
    dbs = PostgresStores(args.pg) if "postgres" in stores else None
    try:
        with tempfile.TemporaryDirectory(prefix="bench-stop-decision-") as tmp:
            work = Path(tmp)
            for size in args.sizes:
                bases: dict[str, Any] = {}
                t0 = time.perf_counter()
                if dbs is not None:  # one pre-filled database per size, the template of each rule's
                    name = dbs.create()
                    c = make_campaign(dbs.url(name), None, budget(args, size), args.max_steps)
                    prefill(c, size, args.max_steps)
                    c.store.close()
                    bases["postgres"] = name
                if "sqlite" in stores:
                    path = work / f"base-{size}.sqlite"
                    c = make_campaign(str(path), None, budget(args, size), args.max_steps)
                    prefill(c, size, args.max_steps)
                    c.store.close()
                    bases["sqlite"] = path
                print(f"pre-filled N={size} in {time.perf_counter() - t0:.1f} s", flush=True)
                for rule in args.rules:
                    for store in stores:
                        if store == "postgres":
                            row = run_postgres(args, dbs, bases["postgres"], size, rule, work)
                        else:
                            row = run_sqlite(args, bases["sqlite"], size, rule, work)
                        rows.append(row)
                        d = row["decision"]
                        print(
                            f"{store} N={size} {rule}: should_stop median {fmt(d, 'median_ms')} p95 {fmt(d, 'p95_ms')} "
                            f"max {fmt(d, 'max_ms')} ms; report median {fmt(row['report'], 'median_ms')} ms; "
                            f"parts {json.dumps({k: round(v, 2) for k, v in row['parts_ms'].items()})}",
                            flush=True,
                        )
    finally:
        if dbs is not None:
            dbs.drop_all()
    result = {
        "smoke": args.smoke,
        "goal_ms": GOAL_MS,
        "rows": rows,
        "notes": notes,
        "args": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "pg"
        },
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end, "
        f"Python {sys.version.split()[0]}",
    }
    (out / "results.json").write_text(json.dumps(result, indent=2))
    write_markdown(result, out / "results.md")
    return result


if __name__ == "__main__":
    main()
