"""The BO campaign: ask/tell over a durable store, and a ``run()`` driver.

A :class:`Campaign` proposes points (``ask``), records outcomes (``tell``) and drives a problem
to its budget (``run``). Every proposal is committed to the :class:`~dsbo.storage.TrialStore` as
``pending`` before it is evaluated, and every outcome is committed before the next proposal,
so a crash loses nothing: re-creating the campaign on the same store resumes it.

Reproducibility: the seed of each proposal is derived from the campaign seed and the number of
trials proposed so far, so the same seed and configuration give the same proposals on CPU, also
across a crash and resume.

Example:
    >>> from dsbo.campaign import Campaign
    >>> from dsbo.problems import get_problem
    >>> campaign = Campaign(get_problem("branin"), surrogate="gp", budget=12, n_init=6,
    ...                     store="runs/demo/trials.sqlite")
    >>> result = campaign.run()
    >>> result.best_value
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gpytorch
import torch
from torch import Tensor

from dsbo.acquisition import OptimizerSettings, Policy, make_policy
from dsbo.acquisition.base import PostProcessor, make_postprocessor
from dsbo.acquisition.sparsity import DEFAULT_TOLERANCE, num_changed
from dsbo.campaign.ask_timer import AskTimer
from dsbo.campaign.early_stopping import (
    EarlyStopping,
    fit_fidelity_model,
)
from dsbo.campaign.execution import MAX_SEED, Execution, positive_int
from dsbo.campaign.freeze_thaw import FreezeThawStep
from dsbo.campaign.given_points import GivenPoints
from dsbo.campaign.history import CampaignResult, sparsity_reference
from dsbo.campaign.ledger import STEPS, Ledger, cost_source, design_sequence
from dsbo.campaign.model_lock import MODEL_LOCK
from dsbo.campaign.model_warnings import ModelWarnings
from dsbo.campaign.outcome_warping import WARPINGS, warp_outcomes
from dsbo.campaign.proposals import (
    EXACT_CHOLESKY_SIZE,
    InitialDesign,
    ModelProposal,
    Proposed,
)
from dsbo.campaign.results import CampaignResults
from dsbo.campaign.trial_outcomes import TrialOutcomes
from dsbo.campaign.validation import (
    check_campaign,
    check_context_policy,
    check_store_identity,
    named_fixed_features,
)
from dsbo.contexts import ContextSettings
from dsbo.contexts.settings import ContextValues
from dsbo.errors import BudgetExhaustedError, ConfigError
from dsbo.problems.base import Problem
from dsbo.storage import Store, Trial, new_worker_id, open_store
from dsbo.surrogates import SurrogateSpec, fit_surrogate, warm_start

Callback = Callable[["Campaign", list[Trial]], None]
if TYPE_CHECKING:
    from dsbo.campaign.contextual import ContextStep
    from dsbo.runtime.evaluation import Evaluator


class Campaign(GivenPoints, TrialOutcomes, CampaignResults):
    """Bayesian optimization of ``problem`` with a durable, resumable record.

    Args:
        problem: The :class:`~dsbo.problems.base.Problem`: search box, default point, outcome
            names (objectives then constraint slacks), and, unless ``evaluator`` is given, the
            function to evaluate.
        surrogate: Surrogate spec for :func:`~dsbo.surrogates.fit_surrogate`.
        acquisition: A registered policy name (``"auto"``: qLogNEI, or qLogNEHVI for
            multi-objective problems), a mapping ``{"name": ..., **options}``, or a policy.
        budget: Total number of evaluations (completed + failed); default 30, or as many as
            ``budget_cost`` can pay for.
        n_init: Scrambled-Sobol initial points (default: ``max(5, 2 * p)`` for ``p`` searched
            parameters, capped at a third of the budget, at least 2).
        q: Candidates proposed (and evaluated concurrently) per iteration.
        seed: The campaign seed.
        store: A :class:`~dsbo.storage.Store`, a path to a SQLite file, a ``postgresql://`` URL
            (a store several workers share, :mod:`dsbo.storage.postgres`), or ``None`` for an
            in-memory store.
        evaluator: ``x (d-tensor) -> outcomes`` (number, sequence, tensor, or mapping by
            outcome name); defaults to the problem itself.
        executor: Any ``concurrent.futures.Executor`` (thread/process pool, Dask's
            ``client.get_executor()``); ``None`` evaluates in this process.
        optimizer: Acquisition optimizer settings.
        on_pending: What resuming does with trials a crash left pending: ``"retry"``
            re-evaluates them (same points, same budget slot), ``"abandon"`` marks them
            abandoned (not fitted, not counted in the budget).
        max_consecutive_failures: Stop with an :class:`~dsbo.errors.EvaluationError` after this
            many failed evaluations in a row (a broken evaluator should not burn the budget).
        callbacks: Called as ``callback(campaign, trials)`` after every finished batch.
        sparsity_tol: Tolerance (unit-cube coordinates) for counting changed parameters.
        postprocess: A post-processor of the acquisition's candidates, as
            ``{"bonsai": {"rho": 0.2}}`` (a registered name and its options) or an instance.
        eval_timeout: Seconds an evaluation may run before it is stopped and recorded as a
            failed trial (:mod:`dsbo.runtime.evaluation`); ``None``: no limit.
        worker_retries: Times a trial whose executor worker died is evaluated again before
            it counts as failed.
        dry_run: Check every part against the problem with one dry iteration on synthetic
            data before anything is evaluated (:mod:`dsbo.campaign.validation`).
        include_default: Evaluate the problem's default point first (generator
            ``"default"``, a batch of its own), then the ``n_init`` Sobol points: the initial
            design is ``n_init + 1`` evaluations, all counted in the budget. Fixed features
            apply to it.
        contexts: For a problem with context variables: the context policy and its settings
            (:class:`~dsbo.contexts.ContextSettings`, a policy name or a mapping; default
            SADCBO). Each iteration then proposes one point whose contexts are optimized,
            observed or ignored as the policy decides; the initial design observes them all.
        budget_cost: A budget in cost units (:mod:`dsbo.campaign.ledger`): each trial is
            charged the design cost, ``lambda(x)`` of ``problem.cost_function`` (when it is
            proposed), or, for a policy whose cost model is learned from evaluation times on a
            problem without a cost function, the seconds its evaluation took (when it ends).
            Only affordable points are proposed (the policy is told what is left; initial
            Sobol points it cannot pay for are skipped), and the run ends when nothing
            affordable remains.
        environment: A callable returning the contexts as they are now (``{name: value}``),
            e.g. a sensor; simulated problems draw from ``p(z)`` without one.
        parallel: Trials evaluated at once by ``run()`` (through ``executor``); each new
            proposal is conditioned on the pending ones (:mod:`dsbo.runtime.parallel`).
        outcome_warping: ``"copula"``: fit the surrogate to normal scores of the objective's
            ranks; ``"winsorize"``: to the values with the bad tail clipped at the Tukey fence
            ``Q1 - 1.5 IQR`` (:mod:`dsbo.campaign.outcome_warping`; single objective, robust to
            outliers such as diverged training runs); ``None``: to the raw values.
        early_stopping: ``True`` for the recommended setting
            (:data:`~dsbo.campaign.early_stopping.RECOMMENDED`), or a stopping rule for trials that
            report intermediate values (a name registered in :mod:`dsbo.stopping`, listed by
            :func:`~dsbo.stopping.catalogue.available_stopping_rules`, or ``{"name": ...,
            **options}``), optionally with ``model`` (what the surrogate is fitted on: ``"last"``
            by default, :data:`~dsbo.campaign.early_stopping.MODELS`); ``None``: curves are recorded, nothing is
            stopped (:mod:`dsbo.campaign.early_stopping`). An evaluator ``f(x, trial)`` gets
            the running trial to report to.
        max_steps: The steps (epochs) of a full trial.
        budget_steps: A budget in steps (needs ``max_steps``): each trial is charged the steps
            it used, so a stopped trial costs less than a full one.
        lease: Seconds a pending trial stays its worker's without a heartbeat; on a shared
            store (PostgreSQL) a trial whose lease ran out (its worker died) is taken over by
            another worker and retried (``on_pending="retry"``, at most ``worker_retries``
            times) or abandoned.

    Raises:
        ConfigError: for any bad setting, before anything is evaluated or stored.
        StoreLockedError: if another process has the store open.
    """

    def __init__(
        self,
        problem: Problem,
        surrogate: SurrogateSpec | str | Mapping[str, Any] = "map-saas",
        acquisition: str | Mapping[str, Any] | Policy = "auto",
        budget: int | None = None,
        n_init: int | None = None,
        q: int = 1,
        seed: int = 0,
        store: Store | str | Path | None = None,
        evaluator: Evaluator | None = None,
        executor: Executor | None = None,
        optimizer: OptimizerSettings | None = None,
        on_pending: str = "retry",
        max_consecutive_failures: int = 10,
        callbacks: Sequence[Callback] = (),
        sparsity_tol: float = DEFAULT_TOLERANCE,
        postprocess: Mapping[str, Mapping[str, Any] | None] | PostProcessor | None = None,
        eval_timeout: float | None = None,
        worker_retries: int = 1,
        dry_run: bool = True,
        include_default: bool = False,
        contexts: ContextSettings | str | Mapping[str, Any] | None = None,
        budget_cost: float | None = None,
        environment: Callable[[], ContextValues] | None = None,
        parallel: int = 1,
        lease: float = 60.0,
        outcome_warping: str | None = None,
        early_stopping: Any = None,
        max_steps: int | None = None,
        budget_steps: int | None = None,
    ) -> None:
        self.problem = problem
        self.surrogate = SurrogateSpec.coerce(surrogate)
        self.optimizer = optimizer or OptimizerSettings()
        fixed = named_fixed_features(self.optimizer.fixed_features, problem)
        if fixed is not self.optimizer.fixed_features:  # given by parameter name
            self.optimizer = dataclasses.replace(self.optimizer, fixed_features=fixed)
        self.policy = self._make_policy(acquisition)
        settings = ContextSettings.coerce(contexts)
        if settings is None and problem.is_contextual:
            settings = ContextSettings()
        #: Early stopping: the rule and the steps of a full trial (``None``: no curves asked for).
        self.early_stopping = EarlyStopping.build(early_stopping, max_steps, budget_steps)
        EarlyStopping.check_policy(self.policy, self.early_stopping)
        #: Freeze-thaw's proposals after the initial design (:mod:`dsbo.campaign.freeze_thaw`), or ``None``.
        self.freeze_thaw = (
            FreezeThawStep(self.early_stopping.freeze_thaw, max_steps)
            if self.early_stopping and self.early_stopping.freeze_thaw
            else None
        )
        if budget_steps is not None and budget_cost is not None:
            raise ConfigError("give budget_cost or budget_steps, not both")
        source = (
            STEPS
            if budget_steps is not None
            else cost_source(problem, self.policy, contextual=settings is not None)
        )
        #: The budget (trials, cost units), what each trial is charged, and what is left.
        self.ledger = Ledger(
            budget,
            budget_steps if budget_steps is not None else budget_cost,
            problem.design_cost,
            source,
            max_steps,
        )
        self.q = positive_int("q", q)
        n_init_given = n_init
        if n_init is None:
            # counted in parameters, not model columns: a categorical's one-hot columns are one
            # counted in full trials when the budget is in steps
            trials = (
                self.budget
                if budget_steps is None or not max_steps
                else max(1, budget_steps // max_steps)
            )
            n_init = max(2, min(trials // 3, max(5, 2 * len(problem.space.searched))))
        self.n_init = positive_int("n_init", n_init)
        if not isinstance(include_default, bool):
            raise ConfigError(f"include_default must be true or false, got {include_default!r}")
        self.include_default = include_default
        if (
            self.n_init + include_default > self.budget
            and n_init_given is None
            and budget is not None
        ):
            raise ConfigError(
                f"budget={budget} is too small: the initial design alone takes {self.n_init + include_default} "
                f"evaluations; give budget >= {self.n_init + include_default}"
            )
        if self.n_init + include_default > self.budget:
            raise ConfigError(
                f"n_init={n_init}"
                + (" + the default point" if include_default else "")
                + f" exceeds budget={self.budget}"
                + (
                    ""
                    if budget is not None
                    else f" (budget_cost={budget_cost:g} / design_cost={problem.design_cost:g}; set budget)"
                )
            )
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"seed must be an integer in [0, {MAX_SEED}], got {seed!r}")
        self.seed = seed
        #: How trials are evaluated: what the runtime reads to drive this campaign.
        self.execution = Execution(
            evaluator=evaluator if evaluator is not None else problem,
            executor=executor,
            eval_timeout=eval_timeout,
            worker_retries=worker_retries,
            parallel=parallel,
            lease=lease,
            max_consecutive_failures=max_consecutive_failures,
            on_pending=on_pending,
            callbacks=callbacks,
        )
        #: The context step of a contextual campaign (``None`` for a plain one).
        self.context_step: ContextStep | None = None
        if settings is not None:
            from dsbo.campaign.contextual import ContextStep  # contexts load only when used

            self.context_step = ContextStep(
                settings,
                problem,
                self.optimizer,
                seed,
                self.q,
                acquisition,
                postprocess,
                environment,
            )
            self.problem = self.context_step.problem
        if postprocess:
            self._attach_postprocessor(postprocess)
        self.sparsity_tol = sparsity_tol
        if outcome_warping is not None and outcome_warping not in WARPINGS:
            raise ConfigError(
                f"outcome_warping={outcome_warping!r}: choose one of {', '.join(WARPINGS)} or None"
            )
        self.outcome_warping = outcome_warping
        if self.context_step is None:
            check_campaign(
                problem, self.surrogate, self.policy, self.optimizer, self.q, seed, dry_run
            )
        else:
            check_context_policy(
                self.problem, self.surrogate, self.context_step.policy, seed, dry_run
            )
        self.changes_from, self.reference_point = sparsity_reference(self.policy, self.problem)
        sequence = functools.partial(
            design_sequence, self.problem, self.optimizer, seed, include_default
        )
        self.ledger.bind(self.problem, sequence, self.n_init + self.include_default)
        self.worker = new_worker_id()
        self.store: Store = open_store(store)
        check_store_identity(
            self.store,
            self.problem,
            {"seed": seed, "budget": self.budget, "budget_cost": self.budget_cost},
        )
        if (
            self.early_stopping is not None
        ):  # a resumed campaign, a worker joining: the ended curves once
            self.early_stopping.load_ended(self.store)
        self.timings: list[dict[str, float]] = []
        #: The ask paths this campaign composes besides contexts and freeze-thaw.
        self.design, self.model_proposal = InitialDesign(), ModelProposal()
        #: The last ask's seconds (``fit``, ``acquisition``, ``store``, ``ask_total``).
        self.last_ask: dict[str, float] | None = None
        #: The model stack's warnings during proposals, counted by message, never printed
        #: (:mod:`dsbo.campaign.model_warnings`).
        self.model_warnings: Counter[str] = Counter()

    # ------------------------------------------------------------------ setup
    def _make_policy(self, acquisition: str | Mapping[str, Any] | Policy) -> Policy:
        if hasattr(acquisition, "propose"):
            return acquisition  # type: ignore[return-value]
        if isinstance(acquisition, str):
            name, options = acquisition, {}
        elif isinstance(acquisition, Mapping):
            options = dict(acquisition)
            name = options.pop("name", "auto")
            options.update(options.pop("options", {}) or {})
        else:
            raise ConfigError(f"acquisition must be a name or mapping, got {acquisition!r}")
        if name == "auto":
            name = "qlognehvi" if self.problem.is_multi_objective else "qlognei"
        return make_policy(name, options, self.optimizer)

    def _attach_postprocessor(
        self, postprocess: Mapping[str, Mapping[str, Any] | None] | PostProcessor
    ) -> None:
        if not hasattr(self.policy, "postprocessor"):
            raise ConfigError(
                f"postprocess needs an acquisition that is optimized; "
                f"{getattr(self.policy, 'name', self.policy)!r} is not (set postprocess: null)"
            )
        if isinstance(postprocess, Mapping):
            if len(postprocess) != 1:
                raise ConfigError(
                    f"postprocess takes one post-processor, e.g. {{bonsai: {{rho: 0.2}}}}; "
                    f"got {sorted(postprocess)}"
                )
            [(name, options)] = postprocess.items()
            postprocess = make_postprocessor(name, options or {})
        self.policy.postprocessor = postprocess  # type: ignore[attr-defined]

    def initial_design(self) -> Tensor:
        """The initial points in order: the default point (with ``include_default``), then
        ``n_init`` scrambled Sobol points, fixed features applied, rounded to the domain (the
        start of :meth:`design_sequence`; a cost budget may skip points it cannot pay for)."""
        return self.design_sequence(self.n_init + self.include_default)

    def design_sequence(self, n: int) -> Tensor:
        """The first ``n`` points of the campaign's sequence: the default point (with
        ``include_default``), then scrambled Sobol points (each a prefix of the next)."""
        return design_sequence(self.problem, self.optimizer, self.seed, self.include_default, n)

    # ------------------------------------------------------------------ counts
    @property
    def budget(self) -> int:
        """Total number of trials (completed + failed + pending) the campaign may spend."""
        return self.ledger.trials

    @property
    def budget_cost(self) -> float | None:
        """The budget in cost units, if there is one."""
        return self.ledger.cost

    @property
    def num_used(self) -> int:
        """Trials that count against the budget: pending, completed and failed."""
        return self.ledger.used(self.store)

    @property
    def cost_used(self) -> float:
        """The cost ledger: summed cost of every trial (abandoned ones were paid for too)."""
        return self.store.cost_used()

    @property
    def remaining(self) -> int:
        """Evaluations still allowed by the budget (0 once the cost budget cannot pay for the
        cheapest evaluation: :meth:`~dsbo.campaign.ledger.Ledger.remaining`)."""
        return self.ledger.remaining(self.store)

    def proposal_seed(self) -> int:
        """The seed of the next proposal: derived from the campaign seed and the number of
        trials stored so far, so a resumed campaign proposes as the uninterrupted one would."""
        return (self.seed * 1_000_003 + self.store.count()) % (2**31 - 1)

    # ------------------------------------------------------------------ ask / tell
    def ask(
        self,
        q: int | None = None,
        contexts: ContextValues | None = None,
        fixed: Mapping[str, Any] | None = None,
    ) -> list[Trial]:
        """Propose up to ``q`` new points, committed as pending trials; ``[]`` when the budget
        is used up. Initial points come from one scrambled Sobol sequence of length ``n_init``.

        The proposal holds the store's proposal lock from reading the data to committing the
        new trials, and is conditioned on every pending trial (this worker's and others'), so
        workers sharing a store never propose without seeing each other's pending points.
        Stopped and paused trials inform it too, and it never lands within the repeat
        tolerance of one (:mod:`dsbo.campaign.proposals`).

        ``contexts``: for a contextual problem, the contexts as the environment has them now
        (``{name: value}``); simulated problems draw them from ``p(z)`` when not given.

        ``fixed``: ``{parameter name: value}`` held fixed in this call's proposals only (on
        top of the optimizer's ``fixed_features``), initial-design points included.

        A candidate whose cost cannot be computed (``problem.cost_function`` fails or gives a
        value that is not a finite number > 0) is returned already failed, with the reason:
        evaluate only the trials whose ``status`` is ``"pending"``.
        """
        with MODEL_LOCK, ModelWarnings(self.model_warnings), self.store.proposal_lock():
            with self._fixed_for_ask(fixed):
                return self._ask(q, contexts)

    def _ask(self, q: int | None, contexts: ContextValues | None) -> list[Trial]:
        """Pick the ask path (contexts, freeze-thaw, initial design, model) and commit its points."""
        q = min(self.q if q is None else positive_int("q", q), self.remaining)
        if q == 0:
            return []
        if self.context_step is not None:
            return [self.context_step.propose(self, contexts)]
        if contexts is not None:
            raise ConfigError(
                f"contexts were given but {self.problem.name} has no context variables"
            )
        if self.freeze_thaw is not None and not self.design.applies(self):
            return self.freeze_thaw.propose(self)
        timer = AskTimer(self.store)
        seed = self.proposal_seed()
        # every ask reseeds torch, so a noisy problem evaluated in this process draws the same
        # noise for the same seed, whatever ran in the process before (initial design included)
        torch.manual_seed(seed)
        if self.design.applies(self):
            proposed = self.design.propose(self, q)
        else:
            proposed = self.model_proposal.propose(self, q, seed)
        if proposed is None:  # nothing affordable is left in the dense set
            self.ledger.exhausted = True
            return []
        return self.commit(proposed, seed, timer)

    def commit(self, proposed: Proposed, seed: int, timer: AskTimer) -> list[Trial]:
        """Store ``proposed`` as pending trials (under the proposal lock the caller holds):
        validated, changes from the reference counted, costs charged (unaffordable points
        replaced or dropped, :meth:`~dsbo.campaign.ledger.Ledger.afford`), ``seed`` kept with
        each; a point whose cost failed is recorded failed. Sets :attr:`last_ask`."""
        X, metadata = proposed.X, proposed.metadata
        self.problem.validate(X, what="proposed candidates")
        changed = num_changed(
            X,
            self.reference_point,
            self.problem.bounds,
            self.sparsity_tol,
            self.problem.space.groups,
        )
        for meta, n in zip(metadata, changed.tolist(), strict=True):
            meta["num_changed"] = int(n)
        costs, cost_errors = self.ledger.charge(self.problem, X, metadata, self.store)
        X, costs, cost_errors, metadata = self.ledger.afford(
            self.store, X, costs, cost_errors, metadata
        )
        if X.shape[0] == 0:  # no candidate, nor any replacement, is affordable
            self.ledger.exhausted = True
            return []
        try:
            ids = self.store.add_trials(
                X,
                proposed.generator,
                fit_time=proposed.fit_time,
                acq_time=proposed.acq_time,
                metadata=[dict(m, seed=seed) for m in metadata],
                budget=self.budget,
                cost=costs,
                budget_cost=self.budget_cost,
                worker=self.worker,
            )
        except BudgetExhaustedError:
            if self.budget_cost is None or self.num_used + X.shape[0] > self.budget:
                raise
            # the proposal costs more than is left (a measured cost's estimate, or a cost the
            # ledger could not screen): nothing affordable was proposed, so the run ends
            self.ledger.exhausted = True
            return []
        # after the commit: a crash refits from the same state
        if (kept := warm_start.states_to_json(proposed.fit_states)) is not None:
            self.store.set_meta(warm_start.META_KEY, kept)
        for trial_id, error in zip(ids, cost_errors, strict=True):
            if error is not None:  # recorded like a failed evaluation, never evaluated
                self.store.fail(trial_id, error, budget=self.budget)
        trials = [self.store.get(i) for i in ids]
        self.last_ask = timer.done(proposed.fit_time, proposed.acq_time)
        return trials

    # ------------------------------------------------------------------ driving
    # Evaluating and driving are the runtime's (dsbo.runtime.driver): these hand the campaign to it.
    def evaluate(self, trials: Sequence[Trial]) -> list[Trial]:
        """Evaluate pending trials (through the executor, if any), telling each as it ends
        (:func:`dsbo.runtime.driver.evaluate`)."""
        return _driver().evaluate(self, trials)

    def resume_pending(self) -> list[Trial]:
        """Handle trials a crash left pending, as ``on_pending`` says
        (:func:`dsbo.runtime.driver.resume_pending`)."""
        return _driver().resume_pending(self)

    def step(self) -> list[Trial]:
        """One iteration: ask for ``q`` points, evaluate them, tell the outcomes
        (:func:`dsbo.runtime.driver.step`)."""
        return _driver().step(self)

    def run(self) -> CampaignResult:
        """Drive the campaign to its budget, resuming pending trials first
        (:func:`dsbo.runtime.driver.run`; with ``parallel > 1`` or a shared store,
        :func:`dsbo.runtime.parallel.run_parallel`)."""
        return _driver().run(self)

    def fit_model(self, X: Tensor | None = None, Y: Tensor | None = None) -> Any:
        """The campaign's surrogate fitted on ``(X, Y)``, as a BO step fits it; by default on
        the completed trials, outcomes warped as the campaign warps them (the run report's);
        warm-started from the fit states the last proposal kept (:mod:`dsbo.surrogates.warm_start`)."""
        with MODEL_LOCK, gpytorch.settings.max_cholesky_size(EXACT_CHOLESKY_SIZE):
            if self.early_stopping is not None and self.early_stopping.model == "fidelity":
                return fit_fidelity_model(self.store, self.early_stopping, self.problem.bounds)
            if X is None or Y is None:
                X, Y = self.store.completed_data()
                Y = warp_outcomes(Y, self.problem.num_objectives, self.outcome_warping)
            if (
                related := self._related_model(X, Y)
            ) is not None:  # a multi-task GP with related tasks
                return related
            previous = self.store.get_meta(warm_start.META_KEY)
            return fit_surrogate(
                self.surrogate,
                X,
                Y,
                self.problem.bounds,
                selection_seed=self.seed,
                previous_fits=previous,
                categorical_groups=self.problem.space.one_hot_groups,
            )


def _driver() -> Any:
    """The runtime's driver module (this layer's one import from a higher one; it never imports us)."""
    from dsbo.runtime import driver

    return driver


__all__ = ["EXACT_CHOLESKY_SIZE", "MAX_SEED", "Campaign"]
