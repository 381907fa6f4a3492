"""The budget of a campaign and its cost ledger.

A campaign's budget is a number of trials and, optionally, a number of cost units
(``budget_cost``). Each trial records the cost paid for it (``problem.evaluation_cost``: the
design cost, ``lambda(x)`` for a varying cost, plus the costs of optimized contexts) when it is
proposed, so the ledger, the summed cost of the trials that count against the budget (pending,
completed and failed; :meth:`~dsbo.storage.base.Store.cost_used`), is exact after any crash.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dsbo.campaign.execution import positive_int
from dsbo.errors import ConfigError, CostError
from dsbo.storage import BUDGETED, Store

if TYPE_CHECKING:
    from torch import Tensor

    from dsbo.problems.base import Problem


class Ledger:
    """What a campaign may spend, in trials and in cost units, and what is left.

    Args:
        budget: Trials (completed + failed + pending); default 30, or as many as
            ``budget_cost`` can pay for at the problem's design cost.
        budget_cost: Cost units, or ``None`` for a budget in trials only.
        design_cost: The cheapest evaluation (``problem.design_cost``).

    Raises:
        ConfigError: for a budget that is not a positive integer or a cost budget that is not
            a finite number > 0.
    """

    def __init__(self, budget: int | None, budget_cost: float | None, design_cost: float) -> None:
        if budget_cost is not None and (
            isinstance(budget_cost, bool)
            or not isinstance(budget_cost, int | float)
            or not 0 < budget_cost < math.inf
        ):
            raise ConfigError(f"budget_cost must be a finite number > 0, got {budget_cost!r}")
        self.cost = None if budget_cost is None else float(budget_cost)
        if budget is None:
            budget = 30 if budget_cost is None else max(1, int(budget_cost / design_cost))
        self.trials = positive_int("budget", budget)
        self.design_cost = design_cost
        #: Set once a proposal's cost (``problem.cost_function``) exceeds what is left.
        self.exhausted = False

    def used(self, store: Store) -> int:
        """Trials that count against the budget: pending, completed and failed."""
        return store.count(BUDGETED)

    def remaining(self, store: Store) -> int:
        """Evaluations still allowed: what the trial budget leaves and, with a cost budget, at
        most what the rest of it pays for at the cheapest evaluation's cost (0 once a
        proposal's cost exceeded what was left)."""
        left = max(0, self.trials - self.used(store))
        if self.cost is None:
            return left
        if self.exhausted:
            return 0
        affordable = math.floor((self.cost - store.cost_used()) / self.design_cost + 1e-9)
        return max(0, min(left, affordable))

    @staticmethod
    def evaluation_costs(problem: Problem, X: Tensor) -> tuple[list[float], list[str | None]]:
        """``lambda(x)`` of each candidate and, for a candidate whose cost is unusable, the
        reason (its trial is then recorded as failed at cost 0)."""
        try:
            return problem.evaluation_cost(X).tolist(), [None] * X.shape[0]
        except CostError:
            costs: list[float] = []
            errors: list[Any] = []
            for x in X:
                try:
                    costs.append(float(problem.evaluation_cost(x.unsqueeze(0))[0]))
                    errors.append(None)
                except CostError as exc:
                    costs.append(0.0)
                    errors.append(f"CostError: {exc}")
            return costs, errors
