"""The budget of a campaign and its cost ledger.

A campaign's budget is a number of trials and, optionally, a number of cost units
(``budget_cost``). Each trial records the cost paid for it in the store, so the ledger, the
summed cost of every trial (pending, completed, failed and abandoned: an abandoned trial was
paid for; :meth:`~dsbo.storage.base.Store.cost_used`), is exact after any crash.

**What a trial is charged** (:attr:`Ledger.source`, ``cost_source`` in ``summary.json``):

* ``"design cost"``: every evaluation costs ``problem.design_cost``; charged when proposed.
* ``"cost function"``: ``lambda(x)`` of ``problem.cost_function``, known before evaluating;
  charged when proposed. A candidate whose cost cannot be computed is a failed trial at cost 0.
* ``"design and context costs"``: a contextual campaign, ``lambda_x`` plus the costs of the
  contexts it optimizes (:mod:`dsbo.campaign.contextual`); charged when proposed.
* ``"measured seconds"``: the policy learns its cost model from evaluation times (``cost:
  learned``, or ``auto`` on a problem without a cost function) and the problem has no cost
  function, so the cost is the time an evaluation takes, unknown until it ends. The proposal
  *reserves* an estimate (the policy's ``predicted_cost`` if it gives one, else the smallest
  cost measured so far, 0 before the first), so pending trials count against the budget
  while they run; ``tell`` *settles* it to the measured seconds in the same write as the
  outcome (a failed evaluation is charged its seconds too). A trial told without a time (a
  black box's ``tell``) keeps its reservation. The cost is known only afterwards, so the last
  evaluation can take the ledger past ``budget_cost`` by what it took beyond its estimate:
  the ledger records what was measured, never a capped number.

* ``"steps"``: a budget in steps (``budget_steps``, early stopping:
  :mod:`dsbo.campaign.early_stopping`). A trial reserves ``max_steps`` when it is proposed (or
  what is left, if less) and is charged the last step it reported when it ends, so a stopped
  trial costs the steps it used; a completed trial that reported nothing keeps its reservation.

**Affordability** (issue 32, item 3): a run with a cost budget proposes only what it can pay
for, and stops only when nothing affordable remains. The ledger knows the cheapest evaluation
(:meth:`Ledger.cheapest`): the design cost; for a cost function the smallest valid
``lambda(x)`` over a dense set, the first :data:`DENSE_POINTS` points after the initial
design of the campaign's own scrambled Sobol sequence (the default point first with
``include_default``; computed once, a cost function being deterministic); the smallest
measured cost for measured seconds. :meth:`Ledger.remaining` is 0 once what is left is below
it. Measured seconds before the first measurement have no cheapest cost to divide what is
left by (the next evaluation's cost is unknown), so :meth:`Ledger.remaining` is then at most 1
while cost units are left, not the trial cap: each ask proposes one point until an evaluation's
measured seconds tell how many more fit. With a cost function every proposal is affordable: the
initial design skips the Sobol points it cannot pay for and takes the next affordable ones of
the same sequence (:meth:`Ledger.design_points`), the policy is told what is left
(``History.cost_left``), and a candidate that still costs more than is left is replaced by the
next affordable point of that sequence (:meth:`Ledger.afford`, metadata ``unaffordable``). Each
such point records its position in the sequence (metadata ``design_index``), so no point is
taken twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dsbo.campaign.execution import positive_int
from dsbo.errors import ConfigError, CostError
from dsbo.storage import BUDGETED, IMPORTED, Store

if TYPE_CHECKING:
    from torch import Tensor

    from dsbo.acquisition.settings import OptimizerSettings
    from dsbo.problems.base import Problem

DESIGN_COST = "design cost"
COST_FUNCTION = "cost function"
CONTEXT_COSTS = "design and context costs"
MEASURED_SECONDS = "measured seconds"
STEPS = "steps"
#: What a campaign's trials can be charged (module doc).
COST_SOURCES = (DESIGN_COST, COST_FUNCTION, CONTEXT_COSTS, MEASURED_SECONDS, STEPS)
#: Points of the campaign's Sobol sequence past the initial design on which the cheapest
#: ``lambda(x)`` is taken (and from which unaffordable candidates are replaced): in 3
#: dimensions the smallest of 2048 scrambled Sobol costs is within about 0.2 % of a range's
#: end, and a cheap cost function evaluates them in milliseconds, once per campaign.
DENSE_POINTS = 2048
#: The trial cap of a budget in measured seconds when ``budget`` is not given: seconds have no
#: "cheapest evaluation" to divide by before one is measured, so the cost budget ends such a
#: run (set ``budget`` for a tighter cap). It is not what :meth:`Ledger.remaining` reports
#: before the first measurement (at most 1: module doc).
MEASURED_TRIAL_CAP = 1000
#: Generators of the initial design (whose trials carry ``design_index``).
DESIGN_GENERATORS = ("default", "sobol-init")


def cost_source(problem: Problem, policy: Any, contextual: bool = False) -> str:
    """What the trials of a campaign of ``policy`` on ``problem`` are charged (module doc):
    measured seconds when the policy's cost model is learned from times and the problem has
    no cost function (a problem's cost function defines its cost, whatever the policy
    models)."""
    if contextual:
        return CONTEXT_COSTS
    if problem.cost_function is not None:
        return COST_FUNCTION
    if getattr(policy, "cost", None) in ("learned", "auto"):  # auto without a cost function
        return MEASURED_SECONDS
    return DESIGN_COST


def design_sequence(
    problem: Problem, optimizer: OptimizerSettings, seed: int, include_default: bool, n: int
) -> Tensor:
    """The first ``n`` points of a campaign's sequence (:meth:`Campaign.design_sequence`): the
    default point (with ``include_default``), then scrambled Sobol points (``seed``), fixed
    features applied, rounded to the domain; each a prefix of the next. A function, so that
    the ledger holding it does not hold the campaign (which is then freed, and its store
    lock released, as soon as it is dropped, even when it fails to start).

    Where only unordered categories are free (a space of only categoricals, or every other
    column fixed), the Sobol points are the sequence's *untried* configurations
    (:func:`~dsbo.acquisition.discrete_search.untried_design`): raw Sobol points of a
    six-configuration space repeat one as often as not, which spends a design point on nothing.
    Elsewhere each unordered categorical's values are balanced over the Sobol points
    (:func:`~dsbo.acquisition.branches.balanced_categories`): any prefix holds every value
    ``floor(n / k)`` or ``ceil(n / k)`` times."""
    import torch

    from dsbo.acquisition.branches import balanced_categories
    from dsbo.acquisition.discrete_search import free_categoricals, untried_design

    n_sobol = n - include_default
    groups = free_categoricals(problem, optimizer) if n_sobol > 0 else None
    if groups:
        default = problem.default_point.reshape(1, -1) if include_default else None
        design = untried_design(problem, optimizer, n_sobol, seed, groups, avoid=default)[0]
    elif n_sobol > 0:
        design = problem.sobol_design(n_sobol, seed, optimizer.apply_fixed_features)
        design = balanced_categories(problem, design, seed, optimizer)
    else:
        design = torch.empty(0, problem.dim, dtype=torch.double)
    if include_default:
        design = torch.cat([problem.default_point.to(design).reshape(1, -1), design])
    return problem.round_to_domain(optimizer.apply_fixed_features(design))


def completed_eval_times(store: Store) -> Tensor:
    """Measured evaluation seconds of the completed trials, in ``completed_data`` order (NaN
    where none was recorded): what a learned cost model fits."""
    import torch

    times = [t.eval_time for t in store.trials("completed")]
    return torch.tensor([math.nan if v is None else v for v in times], dtype=torch.double)


def report_interval(store: Store) -> int:
    """The most steps any trial trained between two reports, its first report counted from
    step 0 (1 before any report). Under a budget in steps a reservation short of ``max_steps``
    is a whole number of these intervals, and a running trial stops once its next report would
    pass its reservation (:meth:`RunningTrial.should_stop
    <dsbo.campaign.early_stopping.RunningTrial.should_stop>`), so a function that validates
    every ``k`` epochs never trains past what it was charged. A trial proposed before any
    trial has reported is reserved in whole steps: with several workers, the first trials'
    partial reservations (a budget smaller than ``workers * max_steps``) may then be passed
    by less than one interval."""
    widest = 1
    for curve in store.curves().values():
        previous = 0
        for step, _ in curve:
            widest = max(widest, step - previous)
            previous = step
    return widest


class Ledger:
    """What a campaign may spend, in trials and in cost units, and what is left.

    Args:
        budget: Trials (completed + failed + pending); default 30, or as many as
            ``budget_cost`` can pay for at the problem's design cost
            (:data:`MEASURED_TRIAL_CAP` for a budget in measured seconds).
        budget_cost: Cost units, or ``None`` for a budget in trials only.
        design_cost: The cost of an evaluation without a cost function
            (``problem.design_cost``).
        source: What each trial is charged, one of :data:`COST_SOURCES` (module doc).

    Raises:
        ConfigError: for a budget that is not a positive integer or a cost budget that is not
            a finite number > 0.
    """

    def __init__(
        self,
        budget: int | None,
        budget_cost: float | None,
        design_cost: float,
        source: str = DESIGN_COST,
        max_steps: int | None = None,
    ) -> None:
        if budget_cost is not None and (
            isinstance(budget_cost, bool)
            or not isinstance(budget_cost, int | float)
            or not 0 < budget_cost < math.inf
        ):
            raise ConfigError(f"budget_cost must be a finite number > 0, got {budget_cost!r}")
        if source not in COST_SOURCES:
            raise ConfigError(f"cost source {source!r}: choose one of {', '.join(COST_SOURCES)}")
        self.cost = None if budget_cost is None else float(budget_cost)
        self.source = source
        if budget is None:
            if budget_cost is None:
                budget = 30
            elif source in (MEASURED_SECONDS, STEPS):
                budget = MEASURED_TRIAL_CAP
            else:
                budget = max(1, int(budget_cost / design_cost))
        self.trials = positive_int("budget", budget)
        self.design_cost = design_cost
        #: The steps a full trial reserves of a budget in steps.
        self.max_steps = max_steps
        if source == STEPS and max_steps is None:
            raise ConfigError("a budget in steps needs max_steps, the steps of a full trial")
        #: Set once the store refused a proposal's cost (it exceeded what was left).
        self.exhausted = False
        self._problem: Problem | None = None
        self._sequence: Callable[[int], Tensor] | None = None
        self._n_design = 0
        self._dense: tuple[Tensor, list[float]] | None = None

    def bind(self, problem: Problem, sequence: Callable[[int], Tensor], n_design: int) -> None:
        """Give the ledger the campaign's problem and its design sequence: ``sequence(n)`` is
        the first ``n`` points (default point first, then scrambled Sobol), of which the first
        ``n_design`` are the initial design."""
        self._problem, self._sequence, self._n_design = problem, sequence, n_design
        self._dense = None

    # ------------------------------------------------------------------ counts
    def used(self, store: Store) -> int:
        """Trials that count against the budget: pending, completed, failed and stopped ones,
        imported trials left out."""
        return store.budget_used()

    def left(self, store: Store) -> float:
        """Cost units left (``inf`` without a cost budget)."""
        return math.inf if self.cost is None else self.cost - store.cost_used()

    def cheapest(self, store: Store) -> float:
        """The cheapest evaluation (module doc): the design cost, the smallest valid
        ``lambda(x)`` over the dense set, or the smallest measured cost (0 before any). A
        cost function valid nowhere on the dense set counts at the design cost, so that its
        trials are proposed and fail with the cost's error (and the run stops after
        ``max_consecutive_failures`` of them, naming it) rather than end silently."""
        if self.source == MEASURED_SECONDS:
            times = self.measured(store)
            return min(times) if times else 0.0
        if self.source == STEPS:  # a trial needs one reporting interval (1 step before any report)
            return float(report_interval(store))
        if self._screens():
            valid = [c for c in self.dense()[1] if math.isfinite(c)]
            return min(valid) if valid else self.design_cost
        return self.design_cost

    def remaining(self, store: Store) -> int:
        """Evaluations still allowed: what the trial budget leaves and, with a cost budget, at
        most what the rest of it pays for at the cheapest evaluation's cost; 0 once nothing
        affordable remains (or the store refused a proposal's cost).

        A budget in measured seconds before any evaluation was measured has no cheapest cost
        (the next evaluation's is unknown): then at most 1 while cost units are left, not the
        whole trial cap (:data:`MEASURED_TRIAL_CAP`), so that one evaluation is proposed at a
        time until a measurement tells how many more fit (module doc)."""
        left = max(0, self.trials - self.used(store))
        if self.cost is None:
            return left
        if self.exhausted:
            return 0
        money, cheapest = self.left(store), self.cheapest(store)
        if money <= 0:
            return 0
        if cheapest <= 0:  # measured seconds, nothing measured yet: one evaluation is known to fit
            return min(left, 1)
        return max(0, min(left, math.floor(money / cheapest + 1e-9)))

    @staticmethod
    def measured(store: Store) -> list[float]:
        """Measured evaluation seconds (> 0) of the completed and failed trials."""
        return [
            t.eval_time
            for t in store.trials(("completed", "failed"))
            if t.eval_time and t.eval_time > 0
        ]

    # ------------------------------------------------------------------ charges
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

    def charge(
        self, problem: Problem, X: Tensor, metadata: Sequence[dict[str, Any]], store: Store
    ) -> tuple[list[float], list[str | None]]:
        """What each candidate is charged when proposed, and the reason where its cost is
        unusable. Measured seconds reserve an estimate (module doc), noted in the metadata
        as ``cost_reserved``."""
        if self.source == STEPS:
            left, costs, interval = self.left(store), [], report_interval(store)
            for meta in metadata:  # a multi-fidelity proposal plans fewer steps
                planned = meta.get("planned_steps", self.max_steps)
                reserved = min(planned, self.max_steps, max(left, 0.0))
                if reserved < self.max_steps:  # whole reporting intervals, so it stops there
                    reserved = math.floor(reserved / interval + 1e-9) * interval
                meta["cost_reserved"] = float(reserved)
                costs.append(meta["cost_reserved"])
                left -= costs[-1]
            return costs, [None] * len(costs)
        if self.source != MEASURED_SECONDS:
            return self.evaluation_costs(problem, X)
        floor = self.cheapest(store)
        costs = []
        for meta in metadata:
            predicted = meta.get("predicted_cost")
            ok = isinstance(predicted, int | float) and math.isfinite(predicted) and predicted >= 0
            meta["cost_reserved"] = float(predicted) if ok else floor
            costs.append(meta["cost_reserved"])
        return costs, [None] * len(costs)

    def settle(self, eval_time: float | None, steps: int | None = None) -> float | None:
        """The cost to record when a trial ends: its measured seconds for a measured-seconds
        ledger (``None``, keeping the reservation, when it was not timed); the last step it
        reported for a budget in steps (``None``, keeping the reservation, when ``steps`` is
        not given); ``None`` otherwise (the cost was known when it was proposed)."""
        if self.source == STEPS:
            return None if steps is None else float(steps)
        if self.source != MEASURED_SECONDS or eval_time is None or not 0 <= eval_time < math.inf:
            return None
        return float(eval_time)

    def reserved_steps(self, trial: Any) -> float | None:
        """The steps a pending trial reserved of a budget in steps (``None`` for other budgets)."""
        return float(trial.cost) if self.source == STEPS else None

    # ------------------------------------------------------------------ affordable points
    def dense(self) -> tuple[Tensor, list[float]]:
        """The design sequence up to :data:`DENSE_POINTS` past the initial design and the
        cost of each point (``inf`` where the cost is unusable); computed once."""
        if self._dense is None:
            if self._sequence is None or self._problem is None:
                raise RuntimeError("Ledger.bind was not called")  # a programming error
            X = self._sequence(self._n_design + DENSE_POINTS)
            costs, errors = self.evaluation_costs(self._problem, X)
            self._dense = (
                X,
                [c if e is None else math.inf for c, e in zip(costs, errors, strict=True)],
            )
        return self._dense

    def _screens(self) -> bool:
        """Whether points are screened for affordability: a cost budget and a known cost."""
        return self.cost is not None and self.source == COST_FUNCTION and self._sequence is not None

    @staticmethod
    def cursor(store: Store) -> int:
        """The next position in the design sequence: one past the largest ``design_index`` of
        the trials that count against the budget (an abandoned design point is proposed
        again), and at least the number of initial-design and attached trials that carry no
        position (a store written before positions were recorded, where the design's next
        point was the number of trials proposed)."""
        trials = [t for t in store.trials(BUDGETED) if t.generator != IMPORTED]
        indexed = [t.metadata["design_index"] + 1 for t in trials if "design_index" in t.metadata]
        unindexed = sum(
            "design_index" not in t.metadata
            and (t.generator in DESIGN_GENERATORS or bool(t.metadata.get("attached")))
            for t in trials
        )
        return max([*indexed, unindexed])

    def design_points(self, store: Store, k: int) -> list[int]:
        """Positions of the next ``k`` initial-design points from :meth:`cursor`: with a cost
        budget and a cost function the ones it can pay for, in order (each one's cost
        counted against what is left; a point whose cost is unusable is taken, to be
        recorded as a failed trial with the reason); fewer (or none) when the dense set runs
        out of affordable points."""
        start = self.cursor(store)
        if not self._screens():
            return list(range(start, start + k))
        return self._affordable_from(start, k, self.left(store), invalid_too=True)

    def _affordable_from(self, start: int, k: int, left: float, invalid_too: bool) -> list[int]:
        costs = self.dense()[1]
        chosen: list[int] = []
        for i in range(start, len(costs)):
            if len(chosen) == k:
                break
            if not math.isfinite(costs[i]):
                if invalid_too:
                    chosen.append(i)
            elif costs[i] <= left + 1e-9:
                chosen.append(i)
                left -= costs[i]
        return chosen

    def points(self, indices: Sequence[int]) -> Tensor:
        """The points at positions ``indices`` of the design sequence (``len(indices) x d``)."""
        if self._screens():
            return self.dense()[0][list(indices)]
        if self._sequence is None:
            raise RuntimeError("Ledger.bind was not called")  # a programming error
        return self._sequence(max(indices) + 1)[list(indices)]

    def afford(
        self,
        store: Store,
        X: Tensor,
        costs: list[float],
        errors: list[str | None],
        metadata: list[dict[str, Any]],
    ) -> tuple[Tensor, list[float], list[str | None], list[dict[str, Any]]]:
        """Replace each candidate that costs more than is left (after the candidates before
        it) by the next affordable point of the design sequence, noting the candidate and its
        cost in its metadata (``unaffordable``); candidates with no affordable replacement are
        dropped. Nothing changes without a cost budget and a cost function, and a candidate
        whose cost is unusable is kept (it becomes a failed trial)."""
        if not self._screens():
            return X, costs, errors, metadata
        left, start = self.left(store), self.cursor(store)
        rows, out_costs, out_errors, out_meta = [], [], [], []
        for x, cost, error, meta in zip(X, costs, errors, metadata, strict=True):
            if error is None and cost > left + 1e-9:
                found = self._affordable_from(start, 1, left, invalid_too=False)
                if not found:
                    continue
                [i] = found
                meta = {**meta, "unaffordable": {"x": x.tolist(), "cost": cost}, "design_index": i}
                x, cost, start = self.dense()[0][i], self.dense()[1][i], i + 1
            rows.append(x)
            out_costs.append(cost)
            out_errors.append(error)
            out_meta.append(meta)
            if error is None:
                left -= cost
        import torch

        X = torch.stack(rows) if rows else X[:0]
        return X, out_costs, out_errors, out_meta
