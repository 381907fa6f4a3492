"""``python -m dsbo.blackbox report`` without building the campaign: no torch, no BoTorch.

A shell loop reports every epoch of every trial, so each ``report`` is a process start; building
the campaign for it (the problem, the policy, the surrogate settings) imports torch and BoTorch,
seconds per call, for what is a store write and a stopping rule's decision. :func:`quick_report`
reads what the report needs from the config and the store (the search space, the outcomes, the
stopping rule, the budget) and hands a :class:`ReportView` to the same
:class:`~dsbo.campaign.early_stopping.RunningTrial` the campaign's reports use, so the decision
and what is recorded are the campaign's. It applies to a black-box problem without contexts
whose store exists and was recorded for the config's search space and outcomes; anything else
returns ``None`` and the command builds the campaign as before (which names what is wrong).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsbo.campaign.early_stopping import EarlyStopping, RunningTrial
from dsbo.campaign.ledger import DESIGN_COST, STEPS, Ledger
from dsbo.cli.optimize import STORE_NAME
from dsbo.errors import DsboError
from dsbo.space import Outcomes, SearchSpace
from dsbo.storage import Store, Trial, is_store_url, open_store

#: The black-box problem options the quick path reads; any other (``contexts``, ``integer``,
#: ...) sends the report through the campaign.
OPTIONS = {
    "parameters",
    "objectives",
    "constraints",
    "direction",
    "parameter_constraints",
    "target",
}


@dataclass
class ProblemView:
    """What a running trial reads of the problem: the space and the outcomes."""

    space: SearchSpace
    outcomes: Outcomes

    @property
    def is_multi_objective(self) -> bool:
        return len(self.outcomes.objectives) > 1

    def params(self, x: Sequence[float]) -> dict[str, Any]:
        return self.space.decode(list(x))


@dataclass
class ReportView:
    """What a running trial reads of its campaign (:class:`~dsbo.campaign.Campaign`'s names)."""

    problem: ProblemView
    store: Store
    early_stopping: EarlyStopping | None
    ledger: Ledger
    budget: int

    def running(self, trial: Trial | int) -> RunningTrial:
        return RunningTrial(self, trial if isinstance(trial, Trial) else self.store.get(trial))  # type: ignore[arg-type]


def quick_view(cfg: Any) -> ReportView | None:
    """The report's view of the campaign ``cfg`` describes, or ``None`` where only the campaign
    itself can tell (another problem, contexts, a store recorded for another space)."""
    options = cfg.problem.options or {}
    if (
        cfg.problem.name != "black-box"
        or not isinstance(options, Mapping)
        or set(options) - OPTIONS
    ):
        return None
    run_dir = Path(
        cfg.run_dir or f"runs/black-box-seed{cfg.seed}"
    )  # as the campaign's (dsbo.cli.optimize)
    target = cfg.store if cfg.store is not None else run_dir / STORE_NAME
    if not is_store_url(str(target)) and not Path(target).is_file():
        return None
    try:
        space = SearchSpace.from_config(
            dict(options["parameters"]), options.get("parameter_constraints") or ()
        )
        outcomes = Outcomes.declare(
            options["objectives"],
            options.get("constraints") or (),
            options.get("direction", "maximize"),
            field="objectives",
        )
        early_stopping = EarlyStopping.build(cfg.early_stopping, cfg.max_steps, cfg.budget_steps)
    except (DsboError, KeyError, TypeError):
        return None  # the campaign's checks word it
    store = open_store(target)
    identity, settings = store.get_meta("identity"), store.get_meta("settings")
    names = list(outcomes.stored_names)
    if (
        not isinstance(identity, dict)
        or not isinstance(settings, dict)
        or identity.get("space") != space.to_config()
        or identity.get("outcomes") != names
        or not isinstance(settings.get("budget"), int)
    ):
        store.close()
        return None
    source = STEPS if cfg.budget_steps is not None else DESIGN_COST  # a report settles steps only
    ledger = Ledger(settings["budget"], cfg.budget_steps, 1.0, source, cfg.max_steps)
    return ReportView(
        ProblemView(space, outcomes), store, early_stopping, ledger, settings["budget"]
    )
