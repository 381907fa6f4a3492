"""Fault injection: an early-stopping campaign killed with SIGKILL again and again loses no
reported value and charges no step twice (issue 42).

A driver loop starts a campaign worker process (``early_stopping="asha", max_steps=27,
budget_steps=...``, GP + qLogNEI) on a store, kills it with SIGKILL at a random moment (seeded,
counted from when the worker says it runs, once it has warmed up: imports and a first GP fit;
half the kills after a uniform delay, landing anywhere in ``campaign.run()`` -- mostly in
proposals, which take longer than these short trials -- and half 1 to 6 reports into a trial's
training plus 0-60 ms, landing in an epoch, a ``report``, a ``should_stop``, a stop being
recorded or the side log's write), starts it again on the same store (a
resume: ``on_pending="retry"``, the default) and repeats until ``--kills`` kills are done; then
it lets the campaign finish. The worker's evaluator ``f(x, trial)`` trains for 27 "epochs":
each sleeps 20-50 ms (deterministic per trial and epoch), then reports a deterministic loss,
and right after ``trial.report`` returns the worker appends ``(trial, step, value)`` to a side
log, written with one ``write`` and ``fsync``ed: the evidence of what dsbo acknowledged as
reported. A retried trial replays the steps its curve holds (``report`` ignores them) without
sleeping, as an evaluation that resumes from a checkpoint at ``trial.resumed_from`` would, and
trains the rest. ``--rule freeze-thaw`` runs a freeze-thaw campaign instead (:data:`FREEZE_THAW`:
segments of 9 steps, a paused trial's cost its last step, a thawed one's its new reservation):
a kill then also lands in thaws, pauses and curve-model fits.

With ``--pg URL`` (an admin URL that may create databases) the store is a fresh PostgreSQL
database and 2 worker processes share it; each kill hits one of the live workers (seeded) and
restarts it at once; a killed worker's trial is taken over by a worker once its lease
(``--lease`` s) runs out (at most ``--worker-retries`` times, then it is a failed trial).

Checked afterwards (on SQLite also after every kill, on the store as the kill left it):

* (a) every acknowledged report of the side logs is in the store with the same value (in the
  store's sense, ``-loss``): ``lost`` counts the missing or changed ones; every stored value is
  also the loss the evaluator computes at that step (``wrong_values``);
* (b) each trial's stored steps increase strictly with no step stored twice, and are ``1..k``
  (no gap);
* (c) every ended trial (completed, stopped, failed) costs its last stored step (0 without
  one), every pending trial its reservation (metadata ``cost_reserved``), so the ledger
  ``store.cost_used()`` equals their sum: ``double_counted`` is the difference;
* (d) the ledger is at most ``budget_steps`` (``overspent``) and, at the end, nothing is pending.

Writes ``experiments/results/faults_early_stopping/{results.json, results.md}`` (one entry per
store and rule, e.g. ``sqlite asha``, ``postgres asha``; a run replaces its own entry).

    python experiments/faults_early_stopping.py                    # SQLite, 20 kills
    python experiments/faults_early_stopping.py --pg postgresql://postgres@127.0.0.1:54329/postgres
    python experiments/faults_early_stopping.py --smoke            # 3 kills, 45 steps

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into
``experiments/results/``. Workers are fresh interpreters (``--start-method spawn``, the
default) or forks of the driver (``fork``, the default with ``--smoke``: no import per restart).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "faults_early_stopping"


# ---------------------------------------------------------------------- the campaign
def loss_at(params: dict[str, Any], epoch: int) -> float:
    """A deterministic learning curve: bad learning rates stay high, every curve falls as 1/epoch."""
    return abs(math.log10(params["lr"]) + 1.5) + 1.0 / epoch + 0.01 * params["width"]


def epoch_seconds(trial_id: int, epoch: int, low: float, high: float) -> float:
    """The (deterministic) time an epoch of a trial takes, in ``[low, high)``."""
    return low + (high - low) * (((trial_id * 7919 + epoch * 104729) % 1000) / 1000)


def make_problem():
    import dsbo
    from dsbo.problems import get_problem

    space = dsbo.SearchSpace({"lr": dsbo.Float(1e-3, 1.0, log=True), "width": dsbo.Int(1, 8)})
    return get_problem("black-box", parameters=space, objectives={"loss": ("min", None)})


class Train:
    """The evaluator ``f(x, trial)``: 27 epochs that report a loss each, logging every
    acknowledged report to the side log (one ``write`` + ``fsync`` per line)."""

    takes_trial = True

    def __init__(self, log: str, max_steps: int, sleep: tuple[float, float]) -> None:
        self.fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.max_steps, self.sleep = max_steps, sleep

    def write(self, entry: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps(entry) + "\n").encode())
        os.fsync(self.fd)

    def __call__(self, x, trial) -> float:
        resumed = trial.resumed_from
        self.write(
            {"event": "start", "trial": trial.id, "resumed_from": resumed, "pid": os.getpid()}
        )
        loss = math.nan
        for epoch in range(1, self.max_steps + 1):
            loss = loss_at(trial.params, epoch)
            replay = resumed is not None and epoch <= resumed
            if not replay:
                time.sleep(epoch_seconds(trial.id, epoch, *self.sleep))
            trial.report(epoch, loss)
            self.write(
                {
                    "event": "report",
                    "trial": trial.id,
                    "step": epoch,
                    "value": loss,
                    "replay": replay,
                }
            )
            if trial.should_stop():
                self.write({"event": "stopped", "trial": trial.id, "step": epoch})
                break
        return loss


#: ``--rule freeze-thaw``: trials paused every 9 steps and thawed by a quick curve model's choice.
FREEZE_THAW = {
    "name": "freeze-thaw",
    "curve_model": "power-law-ensemble",
    "steps_per_thaw": 9,
    "epochs": 60,
    "warm_epochs": 10,
    "candidates": 64,
}


def build_campaign(settings: dict[str, Any], store: str, evaluator=None):
    """The campaign every worker (and the checker) builds, from the run's settings."""
    from dsbo.acquisition import OptimizerSettings
    from dsbo.campaign import Campaign

    return Campaign(
        make_problem(),
        surrogate="gp",
        acquisition="qlognei",
        seed=settings["seed"],
        store=store,
        optimizer=OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=30),
        dry_run=False,
        outcome_warping=None,
        n_init=settings["n_init"],
        evaluator=evaluator,
        early_stopping=FREEZE_THAW if settings["rule"] == "freeze-thaw" else settings["rule"],
        max_steps=settings["max_steps"],
        budget_steps=settings["budget_steps"],
        lease=settings["lease"],
        worker_retries=settings["worker_retries"],
    )


def warm_up() -> None:
    """One untimed GP fit and acquisition in this process (lazy imports, first-call costs), so
    that a worker's first proposal after it says it runs is as fast as its later ones."""
    from dsbo.acquisition import OptimizerSettings
    from dsbo.campaign import Campaign
    from dsbo.problems import get_problem

    c = Campaign(
        get_problem("branin"),
        surrogate="gp",
        budget=4,
        n_init=2,
        seed=1,
        dry_run=False,
        optimizer=OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=30),
    )
    c.run()
    c.store.close()


def worker(settings: dict[str, Any], store: str, log: str, ready: str, err: str) -> None:
    """One worker process: warm up, build the campaign, say it runs (``ready``), run it to the end."""
    fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.dup2(fd, 1)
    try:
        import torch

        torch.set_num_threads(1)
        warm_up()
        campaign = build_campaign(
            settings, store, Train(log, settings["max_steps"], tuple(settings["sleep"]))
        )
        Path(ready).touch()
        campaign.run()
        campaign.store.close()
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ---------------------------------------------------------------------- the checks
def read_logs(work: Path) -> tuple[list[dict[str, Any]], int]:
    """Every complete line of the side logs, and the number of torn last lines (a kill in the
    middle of a write: not evidence of anything)."""
    entries, torn = [], 0
    for path in sorted(work.glob("log-*.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            if not line:
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                torn += 1
    return entries, torn


def check(store, problem, settings: dict[str, Any], work: Path, final: bool) -> dict[str, Any]:
    """The checks (a)-(d) of the module docstring on ``store`` against the side logs."""
    sign = problem.outcomes.objectives[0].sign
    entries, torn = read_logs(work)
    reports = [e for e in entries if e["event"] == "report"]
    curves = store.curves()
    stored = {(tid, step): value for tid, curve in curves.items() for step, value in curve}
    lost = [e for e in reports if stored.get((e["trial"], e["step"])) != sign * e["value"] + 0.0]
    acknowledged = {(e["trial"], e["step"]) for e in reports}
    trials = store.trials()
    params = {t.id: problem.params(t.x) for t in trials}
    wrong = [
        (tid, step)
        for (tid, step), v in stored.items()
        if v != sign * loss_at(params[tid], step) + 0.0
    ]
    duplicates = non_increasing = gaps = 0
    for curve in curves.values():
        steps = [s for s, _ in curve]
        duplicates += len(steps) - len(set(steps))
        non_increasing += any(b <= a for a, b in zip(steps, steps[1:], strict=False))
        gaps += steps != list(range(1, len(steps) + 1))
    mismatches, expected_ledger, by_status = [], 0.0, {}
    for t in trials:
        by_status[t.status] = by_status.get(t.status, 0) + 1
        last = curves[t.id][-1][0] if t.id in curves else None
        if t.status == "pending":
            expected = float(t.metadata.get("cost_reserved", math.nan))
        elif t.status in ("completed", "stopped", "paused", "failed"):
            expected = (
                float(last) if last is not None else (0.0 if t.status == "failed" else math.nan)
            )
        else:  # abandoned: keeps what it was charged (none expected with on_pending="retry")
            expected = t.cost
        expected_ledger += expected
        if t.cost != expected:
            mismatches.append(
                {
                    "trial": t.id,
                    "status": t.status,
                    "cost": t.cost,
                    "expected": expected,
                    "last_step": last,
                }
            )
    ledger = store.cost_used()
    starts = [e for e in entries if e["event"] == "start"]
    evaluations: dict[int, int] = {}
    for e in starts:
        evaluations[e["trial"]] = evaluations.get(e["trial"], 0) + 1
    result = {
        "reports_acknowledged": len(reports),
        "reports_new": sum(not e["replay"] for e in reports),
        "reports_replayed": sum(e["replay"] for e in reports),
        "torn_log_lines": torn,
        "lost": len(lost),
        "lost_examples": lost[:5],
        "stored_points": len(stored),
        "stored_not_acknowledged": len(set(stored) - acknowledged),
        "wrong_values": len(wrong),
        "duplicate_steps": duplicates,
        "trials_with_non_increasing_steps": non_increasing,
        "trials_with_gaps": gaps,
        "trials": len(trials),
        "by_status": by_status,
        "last_steps": {
            str(k): n for k, n in sorted(Counter(c[-1][0] for c in curves.values()).items())
        },
        "evaluations_started": len(starts),
        "trials_evaluated_more_than_once": sum(n > 1 for n in evaluations.values()),
        "resumed_evaluations": sum(e["resumed_from"] is not None for e in starts),
        "cost_mismatches": len(mismatches),
        "cost_mismatch_examples": mismatches[:5],
        "cost_used": ledger,
        "expected_cost_used": expected_ledger,
        "double_counted": ledger - expected_ledger,
        "budget_steps": settings["budget_steps"],
        "overspent": max(0.0, ledger - settings["budget_steps"]),
    }
    result["ok"] = not (
        result["lost"]
        or result["wrong_values"]
        or duplicates
        or non_increasing
        or gaps
        or mismatches
        or abs(result["double_counted"]) > 1e-9
        or result["overspent"] > 1e-9
        or (final and by_status.get("pending", 0))
    )
    return result


def snapshot(
    store_target: str, settings: dict[str, Any], work: Path, final: bool
) -> dict[str, Any]:
    from dsbo.storage import open_store

    store = open_store(store_target, lock=False)
    try:
        return check(store, make_problem(), settings, work, final)
    finally:
        store.close()


# ---------------------------------------------------------------------- the driver
def reports_in(log: Path) -> int:
    try:
        return log.read_bytes().count(b'"event": "report"')
    except FileNotFoundError:
        return 0


def kill_moment(proc, log: Path, rng: random.Random, args: argparse.Namespace) -> str:
    """Wait for the moment to kill ``proc`` (seeded), and say which kind it was: ``"timed"``, a
    uniform delay in ``[min_delay, max_delay]``; or (a ``--report-kills`` share of the kills)
    ``"in training"``, 1 to 6 reports after now, then a uniform 0-60 ms: in an epoch's sleep,
    a ``report``, a ``should_stop``, a stop being recorded or the side log's write."""
    if rng.random() >= args.report_kills:
        proc.join(rng.uniform(args.min_delay, args.max_delay))
        return "timed"
    target, delay = reports_in(log) + rng.randint(1, 6), rng.uniform(0.0, 0.06)
    deadline = time.monotonic() + args.max_wait
    while proc.exitcode is None and reports_in(log) < target and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.join(delay)
    return "in training"


class Workers:
    """Starts worker processes (numbered runs, one log and one stderr file each)."""

    def __init__(
        self, args: argparse.Namespace, settings: dict[str, Any], store: str, work: Path
    ) -> None:
        self.ctx = multiprocessing.get_context(args.start_method)
        self.settings, self.store, self.work = settings, store, work
        self.runs = 0
        self.crashes: list[dict[str, Any]] = []

    def start(self) -> tuple[Any, Path, Path, Path]:
        self.runs += 1
        n = self.runs
        ready, err, log = (
            self.work / f"ready-{n}",
            self.work / f"err-{n}.txt",
            self.work / f"log-{n:03d}.jsonl",
        )
        proc = self.ctx.Process(
            target=worker, args=(self.settings, self.store, str(log), str(ready), str(err))
        )
        proc.start()
        return proc, ready, err, log

    def wait_ready(self, proc, ready: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready.exists() and proc.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.01)

    def ended(self, proc, err: Path) -> None:
        """Record a worker that ended by itself with an error (a crash, e.g. on resume)."""
        if proc.exitcode not in (0, -9):
            text = err.read_text() if err.exists() else ""
            self.crashes.append(
                {"run": err.stem, "exitcode": proc.exitcode, "stderr_tail": text[-3000:]}
            )


def run_sqlite(args: argparse.Namespace, settings: dict[str, Any], work: Path) -> dict[str, Any]:
    store = str(work / "store.sqlite")
    rng = random.Random(args.seed)
    workers = Workers(args, settings, store, work)
    kills, kinds, after_kill, finished_early = 0, [], [], False
    while True:
        proc, ready, err, log = workers.start()
        workers.wait_ready(proc, ready, args.start_timeout)
        if kills < args.kills and proc.exitcode is None:
            kind = kill_moment(proc, log, rng, args)
            if proc.exitcode is None:
                proc.kill()
                proc.join()
                kills += 1
                kinds.append(kind)
                after_kill.append(snapshot(store, settings, work, final=False))
                print(f"kill {kills} ({kind}): {summary_line(after_kill[-1])}", flush=True)
                continue
        else:
            proc.join(args.final_timeout)
            if proc.exitcode is None:
                proc.kill()
                proc.join()
                workers.crashes.append(
                    {"run": err.stem, "exitcode": None, "stderr_tail": "final run timed out"}
                )
                break
        workers.ended(proc, err)
        if proc.exitcode != 0:
            if len(workers.crashes) >= args.max_crashes:
                break
            continue  # a crashed worker is restarted (and the crash reported)
        finished_early = kills < args.kills
        break
    return {
        "kills": kills,
        "kill_kinds": kinds,
        "worker_runs": workers.runs,
        "crashes": workers.crashes,
        "finished_before_kills": finished_early,
        "after_each_kill": after_kill,
        "final": snapshot(store, settings, work, final=True),
    }


def run_postgres(args: argparse.Namespace, settings: dict[str, Any], work: Path) -> dict[str, Any]:
    import psycopg

    name = f"dsbo_faults_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.pg, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = args.pg.rsplit("/", 1)[0] + "/" + name
    try:
        build_campaign(
            settings, url
        ).store.close()  # the campaign (identity, settings), created once
        rng = random.Random(args.seed)
        workers = Workers(args, settings, url, work)
        slots = [workers.start() for _ in range(args.workers)]
        kills, kinds, finished_early = 0, [], False
        while kills < args.kills:
            for proc, ready, _, _ in slots:
                workers.wait_ready(proc, ready, args.start_timeout)
            for i, (proc, _, err, _) in enumerate(slots):  # restart crashed ones
                if proc.exitcode not in (None, 0):
                    workers.ended(proc, err)
                    if len(workers.crashes) < args.max_crashes:
                        slots[i] = workers.start()
                        workers.wait_ready(slots[i][0], slots[i][1], args.start_timeout)
            alive = [i for i, (p, _, _, _) in enumerate(slots) if p.exitcode is None]
            if not alive:
                finished_early = True
                break
            i = rng.choice(alive)
            proc, _, err, log = slots[i]
            kind = kill_moment(proc, log, rng, args)
            if proc.exitcode is not None:
                continue  # it ended by itself (its campaign is done, or a crash)
            proc.kill()
            proc.join()
            kills += 1
            kinds.append(kind)
            print(f"kill {kills} ({kind}): worker slot {i}", flush=True)
            slots[i] = workers.start()
        deadline = time.monotonic() + args.final_timeout
        for i in range(len(slots)):
            while True:
                proc, _, err, _ = slots[i]
                proc.join(max(0.0, deadline - time.monotonic()))
                if proc.exitcode is None:
                    proc.kill()
                    proc.join()
                    workers.crashes.append(
                        {"run": err.stem, "exitcode": None, "stderr_tail": "final run timed out"}
                    )
                    break
                workers.ended(proc, err)
                if proc.exitcode == 0 or len(workers.crashes) >= args.max_crashes:
                    break
                slots[i] = workers.start()
        return {
            "kills": kills,
            "kill_kinds": kinds,
            "worker_runs": workers.runs,
            "crashes": workers.crashes,
            "finished_before_kills": finished_early,
            "after_each_kill": [],
            "final": snapshot(url, settings, work, final=True),
        }
    finally:
        with psycopg.connect(args.pg, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def summary_line(c: dict[str, Any]) -> str:
    return (
        f"{c['reports_acknowledged']} acknowledged, {c['lost']} lost, {c['duplicate_steps']} duplicate steps, "
        f"double-counted {c['double_counted']:g}, ledger {c['cost_used']:g}/{c['budget_steps']:g}, "
        f"{c['by_status']}"
    )


def write_markdown(result: dict[str, Any], path: Path) -> None:
    lines = [
        "# faults_early_stopping",
        "",
        "An early-stopping campaign (a stopping rule, 27 steps a trial, a budget in steps, GP + qLogNEI) killed with SIGKILL "
        "at seeded random moments and resumed on the same store until the kills were done, then run to its end. "
        "Every `trial.report` that returned was logged (write + fsync) by the evaluator; afterwards each logged "
        "report is looked up in the store, each curve's steps are checked, and each trial's charge is compared "
        "with its last stored step (`experiments/faults_early_stopping.py`, module docstring).",
        "",
        "| store, rule | workers | kills (timed + in training) | worker runs | crashes | reports acknowledged (new + replayed) | lost | wrong values "
        "| duplicate steps | gaps | cost mismatches | ledger (steps) | double-counted | budget | overspent | pending at end "
        "| trials (by status) | evaluations resumed | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, run in sorted(result["runs"].items()):
        f = run["final"]
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(f["by_status"].items()))
        lines.append(
            f"| {key} | {run['workers']} | {run['kills']} ({run['kill_kinds'].count('timed')} + "
            f"{run['kill_kinds'].count('in training')}) | {run['worker_runs']} | {len(run['crashes'])} | "
            f"{f['reports_acknowledged']} ({f['reports_new']} + {f['reports_replayed']}) | {f['lost']} | "
            f"{f['wrong_values']} | {f['duplicate_steps']} | {f['trials_with_gaps']} | {f['cost_mismatches']} | "
            f"{f['cost_used']:g} | {f['double_counted']:g} | {f['budget_steps']} | {f['overspent']:g} | "
            f"{f['by_status'].get('pending', 0)} | {f['trials']} ({statuses}) | {f['resumed_evaluations']} | "
            f"{run['wall_seconds']:.0f} |"
        )
    lines.append("")
    for key, run in sorted(result["runs"].items()):
        checks = run["after_each_kill"]
        bad = [i + 1 for i, c in enumerate(checks) if not c["ok"]]
        lines.append(
            f"- **{key}**: {'all checks passed' if run['ok'] else 'CHECKS FAILED'}; "
            f"settings {json.dumps(run['settings'])}; machine: {run['machine']}; dsbo commit {run['commit']}."
        )
        if checks:
            lines.append(
                f"  - Checked after each of the {len(checks)} kills too (store as the kill left it): "
                + ("every check held." if not bad else f"checks failed after kills {bad}.")
            )
        if run["finished_before_kills"]:
            lines.append(
                "  - The campaign finished before all kills were done (raise `--budget-steps`)."
            )
        for crash in run["crashes"]:
            lines.append(
                f"  - Worker run {crash['run']} ended with exit code {crash['exitcode']}: "
                f"`{crash['stderr_tail'].strip().splitlines()[-1] if crash['stderr_tail'].strip() else ''}`"
            )
        f = run["final"]
        lines.append(
            f"  - Trials by last stored step: {', '.join(f'{k}: {n}' for k, n in f['last_steps'].items())}; "
            f"{f['trials_evaluated_more_than_once']} trials were evaluated more than once (a kill or a lost "
            f"lease), {f['resumed_evaluations']} of those evaluations resumed a stored curve."
        )
        lines.append(
            f"  - {run['final']['stored_not_acknowledged']} stored reports were not in the side log (a kill "
            "between the store's commit and the log's write: expected, at most one per kill); "
            f"{run['final']['torn_log_lines']} torn log lines."
        )
    lines += [f"- {note}" for note in result.get("notes", [])]
    path.write_text("\n".join(lines) + "\n")


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="3 kills, a 45-step budget")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--budget-steps", type=int, default=900)
    parser.add_argument("--max-steps", type=int, default=27)
    parser.add_argument(
        "--rule",
        default="asha",
        help="the stopping rule's name (its default options), or "
        "freeze-thaw (FREEZE_THAW: trials paused and thawed)",
    )
    parser.add_argument("--n-init", type=int, default=5)
    parser.add_argument(
        "--seed", type=int, default=0, help="the campaign's seed and the kills' random moments"
    )
    parser.add_argument(
        "--min-delay",
        type=float,
        default=0.1,
        help="seconds after a worker starts running, at least",
    )
    parser.add_argument(
        "--max-delay", type=float, default=4.0, help="... and at most, before it is killed"
    )
    parser.add_argument(
        "--report-kills",
        type=float,
        default=0.5,
        help="share of the kills timed a few reports into a trial's training (the rest: a uniform delay)",
    )
    parser.add_argument(
        "--max-wait", type=float, default=60.0, help="seconds a kill waits for reports at most"
    )
    parser.add_argument(
        "--sleep", type=float, nargs=2, default=[0.02, 0.05], help="seconds an epoch takes (range)"
    )
    parser.add_argument(
        "--pg",
        default=None,
        help="admin URL of a PostgreSQL server: run on a fresh database with --workers workers",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes on PostgreSQL")
    parser.add_argument(
        "--lease",
        type=float,
        default=5.0,
        help="seconds before a killed PostgreSQL worker's trial is taken over",
    )
    parser.add_argument("--worker-retries", type=int, default=10)
    parser.add_argument(
        "--start-method",
        default=None,
        choices=["spawn", "fork", "forkserver"],
        help="how workers start (default spawn: a fresh interpreter; fork with --smoke)",
    )
    parser.add_argument("--start-timeout", type=float, default=300.0)
    parser.add_argument("--final-timeout", type=float, default=1800.0)
    parser.add_argument(
        "--max-crashes",
        type=int,
        default=3,
        help="worker crashes (not kills) before the run gives up",
    )
    add_out_argument(parser, RESULTS)
    parser.add_argument(
        "--render",
        action="store_true",
        help="rewrite results.md from the folder's results.json, run nothing",
    )
    args = parser.parse_args(argv)
    out = output_folder(args.out, args.smoke, RESULTS)
    if args.render:
        result = json.loads((out / "results.json").read_text())
        write_markdown(result, out / "results.md")
        return result
    if args.smoke:
        args.kills, args.budget_steps, args.max_delay, args.lease = 3, 45, 1.5, 2.0
    args.start_method = args.start_method or ("fork" if args.smoke else "spawn")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    if args.start_method == "fork":
        warm_up()  # the forked workers inherit warm modules
    kind = "postgres" if args.pg else "sqlite"
    settings = {
        "seed": args.seed,
        "n_init": args.n_init,
        "rule": args.rule,
        "max_steps": args.max_steps,
        "budget_steps": args.budget_steps,
        "lease": args.lease,
        "worker_retries": args.worker_retries,
        "sleep": list(args.sleep),
    }
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dsbo-faults-") as tmp:
        run = (run_postgres if args.pg else run_sqlite)(args, settings, Path(tmp))
    run.update(
        {
            "store": kind,
            "workers": args.workers if args.pg else 1,
            "wall_seconds": time.perf_counter() - start,
            "settings": settings,
            "start_method": args.start_method,
            "kills_asked": args.kills,
            "min_delay": args.min_delay,
            "max_delay": args.max_delay,
            "report_kills": args.report_kills,
            "commit": commit(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        }
    )
    run["ok"] = (
        run["final"]["ok"] and all(c["ok"] for c in run["after_each_kill"]) and not run["crashes"]
    )
    path = out / "results.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    key = f"{kind} {args.rule}"
    result.setdefault("runs", {})[key] = run
    result["smoke"] = args.smoke
    path.write_text(json.dumps(result, indent=2))
    write_markdown(result, out / "results.md")
    f = run["final"]
    print(
        f"{key}: {run['kills']} kills, {summary_line(f)}, ok={run['ok']}, {run['wall_seconds']:.0f} s",
        flush=True,
    )
    return result


if __name__ == "__main__":
    main()
