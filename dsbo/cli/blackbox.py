"""``python -m dsbo.blackbox``: ask/tell from the shell, for black boxes outside Python.

The campaign is described by the same YAML config as ``python -m dsbo.optimize`` (usually
with ``problem.name: black-box``) and lives in its run directory, so each command is a short
process and nothing is kept in memory between them::

    python -m dsbo.blackbox ask    --config lab.yaml            # prints new trials as JSON
    python -m dsbo.blackbox tell   --config lab.yaml --trial 3 --values '{yield: 0.82}'
    python -m dsbo.blackbox tell   --config lab.yaml --trial 4 --failed "sample spoiled"
    python -m dsbo.blackbox tell   --config lab.yaml --parameters '{temperature: 37, ph: 7}' --values '{yield: 0.6}'

    python -m dsbo.blackbox status --config lab.yaml            # counts, best, remaining

A black box with context variables (problem option ``contexts``) is asked with the contexts
as the environment has them now: ``ask --contexts '{humidity: 0.41}'``. Each new trial then
lists every context's role (``optimized``: set it to the proposed value, at its cost;
``observed`` / ``ignored``: leave it as it is) and the trial's cost.

``ask`` prints each trial's parameters by name, in their own types (``{"lr": 0.001, "width": 64,
"optimizer": "adam"}``; a conditional parameter only while it is active). ``tell --parameters``
records an observation made outside dsbo (e.g. the configuration in production), named the
same way.

``ask`` first re-lists trials that are still pending (proposed, not yet told), then proposes
new ones while the budget allows. The first ``ask`` of a new run directory checks the whole
config with a dry iteration (:mod:`dsbo.campaign.validation`) before proposing anything.

``status`` is quick: ``ask`` and ``tell`` rewrite the run directory's ``history.csv``,
``trace.png`` and ``summary.json`` after they record, and ``status`` reads the counts from the
store and the best value from ``summary.json`` when it describes the store as it is now (no
torch, no model); otherwise (a run directory written by ``python -m dsbo.optimize``, or an edit
to the store) it rebuilds the outputs first.

``tell`` is strict: ``--values`` must give exactly one number per outcome (a number, a flat
list, or a mapping with exactly the outcome names; no strings, booleans, nested lists or
repeated keys). Anything else is refused with a message and the trial stays pending, so the
right values can still be told. Only ``--failed`` (or a reported ``.nan`` / ``.inf``)
records a failure. A trial abandoned by a resume with ``on_pending: abandon`` is still
recorded (and counts) while the budget has room.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsbo.analysis.outputs import write_outputs
from dsbo.cli.common import add_run_dir_argument, run_dir_override
from dsbo.cli.optimize import STORE_NAME, build_campaign, parse_config
from dsbo.cli.strict_yaml import load_value
from dsbo.errors import DsboError, OutcomeError
from dsbo.storage import Store, Trial, open_store

#: The ``summary.json`` key that records the store's state the outputs describe.
STATE_KEY = "store_state"


def _trial_json(trial: Trial, problem: Any) -> dict[str, Any]:
    out = {
        "trial": trial.id,
        "status": trial.status,
        "parameters": problem.params(trial.x),
    }
    if "contexts" in trial.metadata:
        out["contexts"] = trial.metadata["contexts"]
        out["cost"] = trial.cost
    return out


def _parse_values(text: str) -> Any:
    try:
        return load_value(text, "--values")
    except DsboError as exc:
        raise OutcomeError(str(exc)) from None


def store_state(store: Store, budget: int | None, budget_cost: float | None) -> dict[str, Any]:
    """What the run directory's outputs depend on: the trial counts by status, the cost spent
    and the budget they were computed for."""
    counts = {status: store.count(status) for status in ("completed", "failed", "pending", "abandoned")}
    return {**counts, "cost_used": round(store.cost_used(), 9), "budget": budget, "budget_cost": budget_cost}


def quick_status(cfg: Any) -> dict[str, Any] | None:
    """The status from the store's counts and the run directory's ``summary.json``, when the
    summary describes the store as it is now; ``None`` when the outputs must be rebuilt."""
    target: str | Path | None = cfg.store
    run_dir = Path(cfg.run_dir) if cfg.run_dir is not None else None
    summary_path = None if run_dir is None else run_dir / "summary.json"
    if summary_path is None or not summary_path.is_file():
        return None
    if target is None:
        target = run_dir / STORE_NAME
        if not Path(target).is_file():
            return None
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    with open_store(target, lock=False) as store:
        state = store_state(store, cfg.budget, cfg.budget_cost)
    saved = summary.get(STATE_KEY) if isinstance(summary, dict) else None
    if saved is None or saved.get("state") != state:
        return None
    out = {k: summary.get(k) for k in ("best_value", "best_params", "best_x")}
    out.update(completed=state["completed"], failed=state["failed"], pending=state["pending"])
    out["remaining_budget"] = saved["remaining_budget"]
    return out


def write_run_outputs(campaign: Any, run_dir: Path, cfg: Any) -> dict[str, Any]:
    """``history.csv``, ``trace.png`` and ``summary.json``, the summary marked with the
    store's state it describes (see :func:`quick_status`)."""
    state = store_state(campaign.store, cfg.budget, cfg.budget_cost)
    return write_outputs(campaign, run_dir, {STATE_KEY: {"state": state, "remaining_budget": campaign.remaining}})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsbo.blackbox", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="print pending and new trials as JSON")
    ask.add_argument("--q", type=int, default=None, help="new trials to propose (default: config q)")
    ask.add_argument("--contexts", default=None, help="the contexts now, {name: value} (contextual problems)")
    tell = sub.add_parser("tell", help="report the outcome of a trial")
    which = tell.add_mutually_exclusive_group(required=True)
    which.add_argument("--trial", type=int, help="the id of the trial (as ask printed it)")
    which.add_argument("--parameters", help="or record an observation made outside: {name: value, ...}")
    group = tell.add_mutually_exclusive_group(required=True)
    group.add_argument("--values", help="a number, a list, or a mapping {outcome: value}")
    group.add_argument("--failed", "--error", dest="error", help="the evaluation failed: why")
    status = sub.add_parser("status", help="counts and best value (history.csv, trace.png are kept current)")
    for command in (ask, tell, status):
        command.add_argument("--config", required=True, help="the campaign's YAML config (as for dsbo.optimize)")
        add_run_dir_argument(command, "run directory (default: the config's run_dir)")
    args = parser.parse_args(argv)

    try:
        cfg, _ = parse_config(["--config", args.config, "--progress", "false", *run_dir_override(args)])
        if args.command == "status":
            quick = quick_status(cfg)
            if quick is not None:
                print(json.dumps(quick, indent=2))
                return 0
        campaign, run_dir, _ = build_campaign(
            cfg, dry_run=None if args.command == "ask" else False, ask_tell=True
        )
        if args.command == "ask":
            pending = campaign.store.trials("pending")
            contexts = None if args.contexts is None else load_value(args.contexts, "--contexts")
            new = campaign.ask(args.q, contexts=contexts)
            out: dict[str, Any] = {
                "trials": [_trial_json(t, campaign.problem) for t in pending + new],
                "remaining_budget": campaign.remaining,
            }
        elif args.command == "tell" and args.parameters is not None:  # an outside observation
            if args.values is None:
                raise OutcomeError("tell --parameters records an observation: give its --values")
            params = load_value(args.parameters, "--parameters")
            trial = campaign.attach(params, _parse_values(args.values))
            out = {"trial": trial.id, "status": trial.status, "parameters": campaign.problem.params(trial.x)}
        elif args.command == "tell":
            values = None if args.values is None else _parse_values(args.values)
            trial = campaign.tell(args.trial, values=values, error=args.error)
            out = {"trial": trial.id, "status": trial.status, "error": trial.error}
        if args.command == "status" or campaign.store.count() > 0:
            info = write_run_outputs(campaign, run_dir, cfg)
        if args.command == "status":
            out = {k: info[k] for k in ("best_value", "best_params", "best_x", "completed", "failed")}
            out["pending"] = campaign.store.count("pending")
            out["remaining_budget"] = campaign.remaining
        campaign.store.close()
    except DsboError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
