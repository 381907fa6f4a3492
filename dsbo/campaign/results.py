"""What a campaign found, in the user's terms: the best trial, the history table and the
result object. A part of :class:`~dsbo.campaign.Campaign`, kept in a module of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dsbo.campaign.history import CampaignResult, best_trial, changed_parameters, history_frame

if TYPE_CHECKING:
    import pandas as pd

    from dsbo.storage import Trial


class CampaignResults:
    """The :class:`~dsbo.campaign.Campaign` methods that read its results."""

    def best(self) -> tuple[float | None, Trial | None]:
        """Best feasible objective (single objective, stored: maximization sense) or the
        hypervolume (multi-objective)."""
        return best_trial(self.store.trials("completed"), self.problem)

    def best_value(self) -> float | None:
        """The best feasible objective in the user's direction (lower is better when
        minimizing), or the hypervolume (multi-objective); ``None`` before any."""
        value, _ = self.best()
        return (
            value
            if self.problem.is_multi_objective
            else self.problem.outcomes.user_objective(value)
        )

    def history(self) -> pd.DataFrame:
        """Every trial as a row: parameters, outcomes, status, error, timings, best so far."""
        return history_frame(self.store.trials(), self.problem, self.store.curves())

    def result(self) -> CampaignResult:
        """What the campaign found, in the user's terms (:class:`~dsbo.space.Outcomes`): the best
        objective (lower is better when minimizing; several: the hypervolume) and the history."""
        value, trial = self.best()
        if not self.problem.is_multi_objective:
            value = self.problem.outcomes.user_objective(value)
        return CampaignResult(
            best_value=value,
            best_x=None if trial is None else trial.x,
            num_completed=self.store.count("completed"),
            num_failed=self.store.count("failed"),
            num_changed_best=None if trial is None else trial.metadata.get("num_changed"),
            history=self.history(),
            changes_from=self.changes_from,
            changes_best=None if trial is None else self.changes(trial.x),
            best_params=None if trial is None else self.problem.params(trial.x),
            cost_used=self.cost_used,
            cost_source=self.ledger.source,
            bayes_regret=self.bayes_regret(),
        )

    def bayes_regret(self) -> dict[str, Any] | None:
        """The Bayes regret of the completed points (multi-objective problems; else ``None``)."""
        if not self.problem.is_multi_objective:
            return None
        from dsbo.acquisition.scalarized import campaign_bayes_regret

        _, Y = self.store.completed_data()
        return campaign_bayes_regret(self.problem, self.policy, Y, seed=self.seed)

    def changes(self, x: Sequence[float]) -> list[dict[str, Any]]:
        """The parameters ``x`` changes from the reference point (see ``changes_from``)."""
        return changed_parameters(x, self.reference_point, self.problem, self.sparsity_tol)
