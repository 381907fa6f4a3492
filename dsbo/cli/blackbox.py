"""``python -m dsbo.blackbox``: ask/tell from the shell, for black boxes outside Python.

The campaign is described by the same YAML config as ``python -m dsbo.optimize`` (usually
with ``problem.name: black-box``) and lives in its run directory, so each command is a short
process and nothing is kept in memory between them::

    python -m dsbo.blackbox ask    --config lab.yaml            # prints new trials as JSON
    python -m dsbo.blackbox tell   --config lab.yaml --trial 3 --values '{yield: 0.82}'
    python -m dsbo.blackbox tell   --config lab.yaml --trial 4 --failed "sample spoiled"
    python -m dsbo.blackbox status --config lab.yaml            # counts, best, history.csv

A black box with context variables (problem option ``contexts``) is asked with the contexts
as the environment has them now: ``ask --contexts '{humidity: 0.41}'``. Each new trial then
lists every context's role (``optimized``: set it to the proposed value, at its cost;
``observed`` / ``ignored``: leave it as it is) and the trial's cost.

``ask`` first re-lists trials that are still pending (proposed, not yet told), then proposes
new ones while the budget allows. The first ``ask`` of a new run directory checks the whole
config with a dry iteration (:mod:`dsbo.campaign.validation`) before proposing anything.

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
from typing import Any

from dsbo.cli.optimize import build_campaign, parse_config, write_outputs
from dsbo.cli.strict_yaml import load_value
from dsbo.errors import DsboError, OutcomeError
from dsbo.storage import Trial


def _trial_json(trial: Trial, names: Sequence[str]) -> dict[str, Any]:
    out = {
        "trial": trial.id,
        "status": trial.status,
        "parameters": dict(zip(names, trial.x, strict=True)),
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsbo.blackbox", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="print pending and new trials as JSON")
    ask.add_argument("--config", required=True)
    ask.add_argument("--q", type=int, default=None, help="new trials to propose (default: config q)")
    ask.add_argument("--contexts", default=None, help="the contexts now, {name: value} (contextual problems)")
    tell = sub.add_parser("tell", help="report the outcome of a trial")
    tell.add_argument("--config", required=True)
    tell.add_argument("--trial", type=int, required=True)
    group = tell.add_mutually_exclusive_group(required=True)
    group.add_argument("--values", help="a number, a list, or a mapping {outcome: value}")
    group.add_argument("--failed", "--error", dest="error", help="the evaluation failed: why")
    status = sub.add_parser("status", help="counts and best value; writes history.csv, trace.png")
    status.add_argument("--config", required=True)
    args = parser.parse_args(argv)

    try:
        cfg, _ = parse_config(["--config", args.config, "--progress", "false"])
        campaign, run_dir, _ = build_campaign(cfg, dry_run=None if args.command == "ask" else False)
        names = campaign.problem.parameter_names
        if args.command == "ask":
            pending = campaign.store.trials("pending")
            contexts = None if args.contexts is None else load_value(args.contexts, "--contexts")
            new = campaign.ask(args.q, contexts=contexts)
            out: dict[str, Any] = {
                "trials": [_trial_json(t, names) for t in pending + new],
                "remaining_budget": campaign.remaining,
            }
        elif args.command == "tell":
            values = None if args.values is None else _parse_values(args.values)
            trial = campaign.tell(args.trial, values=values, error=args.error)
            out = {"trial": trial.id, "status": trial.status, "error": trial.error}
        else:
            info = write_outputs(campaign, run_dir)
            out = {k: info[k] for k in ("best_value", "best_x", "completed", "failed")}
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
