"""Trials whose points the user gives rather than the policy: observations made outside the
campaign (:meth:`GivenPoints.attach`), points to evaluate before any proposal
(:meth:`GivenPoints.enqueue`, Optuna's ``enqueue_trial``), and parameters held fixed in one
ask (``Campaign.ask(fixed=...)``). A part of :class:`~dsbo.campaign.Campaign`, kept in a module
of its own; each given point is validated against the problem and charged like a proposal."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from dsbo.campaign.validation import with_fixed_features
from dsbo.errors import BudgetExhaustedError

if TYPE_CHECKING:
    from dsbo.storage import Trial


class GivenPoints:
    """The :class:`~dsbo.campaign.Campaign` methods for points the user gives."""

    def attach(self, x: Tensor | Sequence[float] | Mapping[str, Any], values: Any, generator: str = "manual") -> Trial:
        """Add an observation made outside the campaign (e.g. the default configuration) at the
        model point ``x`` or the named user values ``{name: value}``, charged like a proposal
        (:meth:`~dsbo.campaign.ledger.Ledger.charge`; 0 where its cost is unusable).

        Raises:
            ProblemError: if ``x`` has the wrong dimension or lies outside the bounds.
            EvaluationError: if ``values`` is not a finite outcome vector.
        """
        X = self._point(x, "parameters")
        y = self.problem.parse_outcomes(values)
        self.problem.outcomes.finite_or_error(y)
        trial_id = self._add_given(X, generator, {"attached": True})
        self.store.complete(trial_id, y)
        return self.store.get(trial_id)

    def enqueue(self, x: Tensor | Sequence[float] | Mapping[str, Any]) -> Trial:
        """A point to evaluate before any proposal (Optuna's ``enqueue_trial``), given as for
        :meth:`attach`: committed as a pending trial (generator ``"enqueued"``), charged and
        counted like a proposal (the initial design takes that many fewer Sobol points);
        ``run()`` evaluates it first.

        Raises:
            ProblemError / ConfigError: if ``x`` is not a point of the problem.
            BudgetExhaustedError: if the budget has no room left.
        """
        X = self._point(x, "enqueued parameters")
        if self.remaining < 1:
            raise BudgetExhaustedError(f"the budget of {self.budget} evaluations is spent: nothing more can be enqueued")
        return self.store.get(self._add_given(X, "enqueued", {"enqueued": True}))

    def _point(self, x: Tensor | Sequence[float] | Mapping[str, Any], what: str) -> Tensor:
        if isinstance(x, Mapping):  # named user values
            x = self.problem.point(dict(x), what=what)
        return self.problem.validate(torch.as_tensor(x, dtype=torch.double).reshape(1, -1), what="x")

    def _add_given(self, X: Tensor, generator: str, meta: dict[str, Any]) -> int:
        """A trial at a point the user gave, charged like a proposal (0 where its cost is unusable)."""
        costs, errors = self.ledger.charge(self.problem, X, [meta], self.store)
        [trial_id] = self.store.add_trials(X, generator, metadata=[meta], budget=self.budget, worker=self.worker,
                                           cost=[0.0 if e else c for c, e in zip(costs, errors, strict=True)],
                                           budget_cost=self.budget_cost)  # fmt: skip
        return trial_id

    @contextlib.contextmanager
    def _fixed_for_ask(self, fixed: Mapping[str, Any] | None) -> Iterator[None]:
        """The campaign's and its policy's optimizer settings with ``fixed`` added, for one ask."""
        if fixed is None:
            yield
            return
        saved = self.optimizer, getattr(self.policy, "optimizer", None)
        self.optimizer = with_fixed_features(self.optimizer, fixed, self.problem)
        if saved[1] is not None:
            self.policy.optimizer = self.optimizer  # type: ignore[attr-defined]
        try:
            yield
        finally:
            self.optimizer = saved[0]
            if saved[1] is not None:
                self.policy.optimizer = saved[1]  # type: ignore[attr-defined]
