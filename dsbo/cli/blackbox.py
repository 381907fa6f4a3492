"""``python -m dsbo.blackbox``: ask/tell from the shell, for black boxes outside Python.

The campaign is described by the same YAML config as ``python -m dsbo.optimize`` (usually
with ``problem.name: black-box``) and lives in its run directory, so each command is a short
process and nothing is kept in memory between them::

    python -m dsbo.blackbox ask    --config lab.yaml            # prints new trials as JSON
    python -m dsbo.blackbox tell   --config lab.yaml --trial 3 --values '{yield: 0.82}'
    python -m dsbo.blackbox tell   --config lab.yaml --trial 4 --failed "sample spoiled"
    python -m dsbo.blackbox tell   --config lab.yaml --parameters '{temperature: 37, ph: 7}' --values '{yield: 0.6}'

    python -m dsbo.blackbox status --config lab.yaml            # counts, best, remaining
    python -m dsbo.blackbox report --config hpo.yaml --trial 3 --step 1 --value 0.93

**Early stopping** (config keys ``early_stopping``, ``max_steps``, ``budget_steps``): a trial
that trains for several steps (epochs) reports each step's value, in the objective's own
direction (a loss as measured), and is told whether to go on. ``report`` records the value
(:meth:`Campaign.running(trial).report <dsbo.campaign.early_stopping.RunningTrial.report>`),
asks the stopping rule and prints ``{"trial": 3, "step": 1, "decision": "continue" | "stop",
"reason": "..."}`` (exit code 0 for both). A trial told ``stop`` is recorded at once as
``stopped`` with its last value; stop training it (a later ``tell`` of it records nothing and
prints its status, ``stopped``). With ``max_steps`` in the config, ``ask`` gives each trial its
``max_steps``: the steps to train it at most (less than the config's when a budget in steps
has less left, or a multi-fidelity proposal planned fewer). A shell loop::

    while true; do
        trials=$(python -m dsbo.blackbox ask --config hpo.yaml)
        [ "$(echo "$trials" | jq '.trials | length')" = 0 ] && break
        for id in $(echo "$trials" | jq '.trials[].trial'); do
            for step in $(seq 1 27); do
                loss=$(./train_one_epoch.sh "$id" "$step")      # your training, one epoch
                decision=$(python -m dsbo.blackbox report --config hpo.yaml \
                    --trial "$id" --step "$step" --value="$loss" | jq -r .decision)
                [ "$decision" = stop ] && break
            done
            [ "$decision" = continue ] && python -m dsbo.blackbox tell --config hpo.yaml --trial "$id" --values="$loss"
        done
    done

**Freeze-thaw** (``early_stopping: {name: freeze-thaw, ...}``, with ``max_steps`` and
``budget_steps``): ``ask`` gives each trial the step to train it up to (``max_steps``), and
``report`` answers ``"decision": "pause"`` there: keep the trial's checkpoint and stop training
it. A later ``ask`` may list it again (the same ``trial`` id) with ``from_step``, the last step
it reported: resume from that checkpoint, report from ``from_step + 1``, up to its new
``max_steps``. A trial reaching the config's ``max_steps`` is told as usual.

``report`` is refused (one line ``error: ...``, exit code 2, nothing recorded) for an unknown
trial, a trial that has ended (a stopped one: ``TrialStoppedError``), a step that does not come
after the trial's last reported step, and a value that is not a finite number (``.nan``,
``nan``, ``abc``). It builds no model, nor even the campaign (no torch: :mod:`dsbo.cli.blackbox_report`),
and leaves ``history.csv`` and ``trace.png`` alone, so it costs a process start and a few store reads (``status`` rebuilds the outputs when a stopped
trial made them stale).

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
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsbo.analysis.outputs import write_outputs
from dsbo.cli.blackbox_report import quick_view
from dsbo.cli.common import add_run_dir_argument, run_dir_override
from dsbo.cli.optimize import STORE_NAME, build_campaign, parse_config
from dsbo.cli.strict_yaml import load_value
from dsbo.errors import ConfigError, DsboError, OutcomeError, StoreError
from dsbo.storage import IMPORTED, Store, Trial, is_store_url, open_store
from dsbo.storage.segments import segment_of

#: The ``summary.json`` key that records the store's state the outputs describe.
STATE_KEY = "store_state"
#: Trial statuses counted by ``status`` and in the store's state.
COUNTED = ("completed", "failed", "pending", "stopped", "paused", "abandoned")
#: ``report --value`` spellings of the non-finite numbers (refused, with the store's message).
NON_FINITE = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}


def _trial_json(trial: Trial, campaign: Any, max_steps: int | None = None) -> dict[str, Any]:
    out = {
        "trial": trial.id,
        "status": trial.status,
        "parameters": campaign.problem.params(trial.x),
    }
    if "contexts" in trial.metadata:
        out["contexts"] = trial.metadata["contexts"]
        out["cost"] = trial.cost
    if max_steps is not None:  # the steps to train it at most: fewer when the budget in steps
        # has less left or a multi-fidelity proposal planned fewer (the trial is stopped there)
        limits = [
            max_steps,
            campaign.ledger.reserved_steps(trial),
            trial.metadata.get("planned_steps"),
            trial.metadata.get("until_step"),
        ]
        out["max_steps"] = int(min(limit for limit in limits if limit is not None))
        curve = campaign.store.curves([trial.id]).get(trial.id)
        if curve:  # a thawed (freeze-thaw) or retried trial: go on after the last step reported
            out["from_step"] = curve[-1][0]
        # the freeze-thaw segment: give it back with tell/report --segment, so that a late
        # result of a segment that has ended never changes the trial thawed since
        out["segment"] = segment_of(trial.metadata)
    return out


def _parse_values(text: str) -> Any:
    try:
        return load_value(text, "--values")
    except DsboError as exc:
        raise OutcomeError(str(exc)) from None


def _parse_int(text: str, what: str) -> int:
    value = load_value(text, what)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what} must be a decimal integer, got {text!r}")
    return value


def _parse_number(text: str) -> Any:
    """``report --value``: a number as strict YAML reads it (``nan`` and ``inf`` too, so that
    they are refused as non-finite rather than as text)."""
    value = load_value(text, "--value")
    if isinstance(value, str) and value.strip().lower() in NON_FINITE:
        return NON_FINITE[value.strip().lower()]
    return value


def _no_store_yet(cfg: Any) -> bool:
    """Whether the config's SQLite store is known not to exist yet."""
    if cfg.store is not None:
        return not is_store_url(cfg.store) and not Path(cfg.store).is_file()
    return cfg.run_dir is not None and not (Path(cfg.run_dir) / STORE_NAME).is_file()


def report(
    campaign: Any, trial_id: int, step: int, value: Any, segment: int | None = None
) -> dict[str, Any]:
    """Record ``value`` at ``step`` for pending trial ``trial_id`` and ask the stopping rule;
    the JSON ``report`` prints. ``segment`` (as ``ask`` printed it): refused with a
    :class:`~dsbo.errors.StaleSegmentError` if the trial has been thawed into another since.

    Raises:
        StoreError: for an unknown trial or one that has ended.
        TrialStoppedError: for a stopped trial.
        ReportError: for a step that does not come after the last, or a value that is not a
            finite number; OutcomeError for a value that is not a number. Nothing is recorded.
    """
    running = campaign.running(trial_id)
    # each report is its own process, not a retried evaluation: a step the store holds already
    # is a mistake to refuse, not a replay to skip (RunningTrial.resumed_from)
    running.resumed_from = None
    if segment is not None:
        running.segment = segment
    running.report(step, value)
    if running.should_stop():
        return {
            "trial": trial_id,
            "step": step,
            "decision": "pause" if running.paused else "stop",
            "reason": running.reason,
        }
    settings = campaign.early_stopping
    if settings is None:
        reason = "no early stopping in the config"
    else:  # the rule's reason (rules are pure: the decision should_stop just took), as it words a stop
        sign = campaign.problem.outcomes.objectives[0].sign
        reason = settings.decide(campaign.store, trial_id, sign).reason
    return {"trial": trial_id, "step": step, "decision": "continue", "reason": reason}


def store_state(
    store: Store, budget: int | None, budget_cost: float | None, budget_steps: int | None = None
) -> dict[str, Any]:
    """What the run directory's outputs depend on: the trial counts by status, the cost spent
    and the budget they were computed for."""
    counts = {status: store.count(status) for status in COUNTED}
    return {
        **counts,
        "cost_used": round(store.cost_used(), 9),
        "budget": budget,
        "budget_cost": budget_cost,
        "budget_steps": budget_steps,
    }


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
        state = store_state(store, cfg.budget, cfg.budget_cost, cfg.budget_steps)
    saved = summary.get(STATE_KEY) if isinstance(summary, dict) else None
    if saved is None or saved.get("state") != state:
        return None
    out = {k: summary.get(k) for k in ("best_value", "best_params", "best_x")}
    out.update(
        completed=state["completed"],
        failed=state["failed"],
        stopped=state["stopped"],
        paused=state["paused"],
        pending=state["pending"],
    )
    out["remaining_budget"] = saved["remaining_budget"]
    return out


def write_run_outputs(campaign: Any, run_dir: Path, cfg: Any) -> dict[str, Any]:
    """``history.csv``, ``trace.png`` and ``summary.json``, the summary marked with the
    store's state it describes (see :func:`quick_status`)."""
    state = store_state(campaign.store, cfg.budget, cfg.budget_cost, cfg.budget_steps)
    return write_outputs(
        campaign, run_dir, {STATE_KEY: {"state": state, "remaining_budget": campaign.remaining}}
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dsbo.blackbox", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="print pending and new trials as JSON")
    ask.add_argument(
        "--q", type=int, default=None, help="new trials to propose (default: config q)"
    )
    ask.add_argument(
        "--contexts", default=None, help="the contexts now, {name: value} (contextual problems)"
    )
    tell = sub.add_parser("tell", help="report the outcome of a trial")
    which = tell.add_mutually_exclusive_group(required=True)
    which.add_argument("--trial", type=int, help="the id of the trial (as ask printed it)")
    which.add_argument(
        "--parameters", help="or record an observation made outside: {name: value, ...}"
    )
    group = tell.add_mutually_exclusive_group(required=True)
    group.add_argument("--values", help="a number, a list, or a mapping {outcome: value}")
    group.add_argument("--failed", "--error", dest="error", help="the evaluation failed: why")
    status = sub.add_parser(
        "status", help="counts and best value (history.csv, trace.png are kept current)"
    )
    reporting = sub.add_parser(
        "report", help="record an intermediate value of a running trial; prints continue or stop"
    )
    reporting.add_argument("--trial", required=True, help="the id of the trial (as ask printed it)")
    reporting.add_argument(
        "--step", required=True, help="the step (epoch) just finished: 1, 2, ... increasing"
    )
    reporting.add_argument(
        "--value",
        required=True,
        help="the objective's value at that step, as measured (a negative one: --value=-0.5)",
    )
    for command in (tell, reporting):
        command.add_argument(
            "--segment",
            type=int,
            default=None,
            help="the trial's segment as ask printed it (freeze-thaw: a result of a segment that has ended is ignored)",
        )
    for command in (ask, tell, status, reporting):
        command.add_argument(
            "--config", required=True, help="the campaign's YAML config (as for dsbo.optimize)"
        )
        add_run_dir_argument(command, "run directory (default: the config's run_dir)")
    args = parser.parse_args(argv)

    try:
        if args.command == "report":  # checked before anything is opened
            trial_id, step = _parse_int(args.trial, "--trial"), _parse_int(args.step, "--step")
            value = _parse_number(args.value)
        cfg, _ = parse_config(
            ["--config", args.config, "--progress", "false", *run_dir_override(args)]
        )
        if args.command == "status":
            quick = quick_status(cfg)
            if quick is not None:
                print(json.dumps(quick, indent=2))
                return 0
        if args.command == "report" and _no_store_yet(cfg):  # nothing to report to: create nothing
            raise StoreError(
                f"trial {trial_id} does not exist: the run directory holds no trials yet (ask first)"
            )
        if args.command == "report" and (view := quick_view(cfg)) is not None:
            try:  # no campaign built: no torch (dsbo.cli.blackbox_report)
                out = report(view, trial_id, step, value, args.segment)
            finally:
                view.store.close()
            print(json.dumps(out, indent=2))
            return 0
        campaign, run_dir, _ = build_campaign(
            cfg, dry_run=None if args.command == "ask" else False, ask_tell=True
        )
        if args.command == "ask":
            pending = [t for t in campaign.store.trials("pending") if t.generator != IMPORTED]
            contexts = None if args.contexts is None else load_value(args.contexts, "--contexts")
            new = campaign.ask(args.q, contexts=contexts)
            out: dict[str, Any] = {
                "trials": [_trial_json(t, campaign, cfg.max_steps) for t in pending + new],
                "remaining_budget": campaign.remaining,
            }
        elif args.command == "report":  # no outputs rewritten: a report is one store write
            try:
                out = report(campaign, trial_id, step, value, args.segment)
            finally:
                campaign.store.close()
            print(json.dumps(out, indent=2))
            return 0
        elif args.command == "tell" and args.parameters is not None:  # an outside observation
            if args.values is None:
                raise OutcomeError("tell --parameters records an observation: give its --values")
            params = load_value(args.parameters, "--parameters")
            trial = campaign.attach(params, _parse_values(args.values))
            out = {
                "trial": trial.id,
                "status": trial.status,
                "parameters": campaign.problem.params(trial.x),
            }
        elif args.command == "tell":
            values = None if args.values is None else _parse_values(args.values)
            trial = campaign.tell(args.trial, values=values, error=args.error, segment=args.segment)
            out = {"trial": trial.id, "status": trial.status, "error": trial.error}
        if args.command == "status" or campaign.store.count() > 0:
            info = write_run_outputs(campaign, run_dir, cfg)
        if args.command == "status":
            out = {
                k: info[k] for k in ("best_value", "best_params", "best_x", "completed", "failed")
            }
            out["stopped"] = campaign.store.count("stopped")
            out["paused"] = campaign.store.count("paused")
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
