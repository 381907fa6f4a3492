"""The five-line API: :func:`minimize` / :func:`maximize` a Python function over a search space,
and :class:`Tuner`, the same search as ask/tell handing out dicts of named values.

Example:
    >>> import dsbo
    >>> space = {"lr": dsbo.Float(1e-4, 1e-1, log=True), "width": dsbo.Int(16, 512, log=True),
    ...          "optimizer": dsbo.Choice(["adam", "sgd"])}
    >>> result = dsbo.minimize(train_and_score, space, budget=40)
    >>> print(result.best_params, result.best_value)

Several objectives and outcome constraints, in the same five lines (``f`` returns a mapping):

    >>> result = dsbo.minimize(f, space, objectives={"loss": "min", "latency": ("min", 50.0)},
    ...                        constraints=["memory <= 8"])
    >>> result.pareto_front          # the non-dominated feasible trials, as the user sees them

**What the function may return.** One number for a single objective: a Python ``int`` or
``float``, a NumPy scalar of any dtype (``np.float32``, ``np.int64``, ...), a 0-d or
one-element array or torch tensor (any dtype, any device, with grad), or a one-element list.
With several outcomes, a mapping ``{outcome: number}`` naming exactly the objectives and the
outcomes the constraints bound (or a flat list in that order). An exception, a NaN or an
infinity is a failed trial, never a crash; anything else (a string, a boolean, a missing or
unknown outcome) is a failed trial whose error says what was wrong.

**The user's direction, always.** The function's values are stored once through the
problem's :class:`~dsbo.space.Outcomes` (a minimized objective negated: dsbo maximizes) and
everything shown — :class:`TunerResult`, ``history``, ``history.csv``, the summary, the report,
W&B — is in the user's direction and names. Each call is a trial of a
:class:`~dsbo.campaign.Campaign` over the black-box problem of the space; with ``store=`` every
evaluation is committed before the next proposal and a second call on the same store resumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.errors import ConfigError, TooManyFailuresError
from dsbo.runtime.tuner_records import BestTrial, Suggestion, TunerResult
from dsbo.space import Outcomes, Parameter, SearchSpace
from dsbo.storage import IMPORTED

if TYPE_CHECKING:
    from dsbo.campaign.early_stopping import RunningTrial
    from dsbo.storage import Trial

#: ``surrogate="auto"`` fits an exact GP to spaces of at most this many searched parameters and
#: the MAP-SAAS ensemble to larger ones (:func:`auto_surrogate`).
AUTO_GP_MAX_PARAMETERS = 10
#: Evaluations of a search that gives no budget (nor a budget in steps).
DEFAULT_BUDGET = 40


def auto_surrogate(space: SearchSpace) -> str:
    """The surrogate ``surrogate="auto"`` picks for ``space``: ``"gp"`` (BoTorch's exact GP) for
    at most :data:`AUTO_GP_MAX_PARAMETERS` searched parameters, ``"map-saas"`` above.

    The SAAS prior (Eriksson & Jankowiak, UAI 2021) pays off when most of many inputs are
    irrelevant; on small spaces it mostly costs time. On three mixed spaces of 5-8 parameters
    (``experiments/mixed_spaces.py``, budget 40, both with the copula warping, seeds 0-4) the
    exact GP matched MAP-SAAS (better on 3 of 5 seeds on each problem) at 0.61-0.66x its
    median proposal time; MAP-SAAS is the measured choice on sparse problems of 20-50 inputs. Between
    11 and 19 parameters nothing was measured: the library's default, MAP-SAAS, is kept.
    """
    return "gp" if len(space.searched) <= AUTO_GP_MAX_PARAMETERS else "map-saas"


def optimizer_settings(optimizer: Any) -> Any:
    """``optimizer`` as :class:`~dsbo.acquisition.OptimizerSettings` (``None`` stays ``None``; a
    mapping gives its fields).

    Raises:
        ConfigError: for anything else, or a field the settings do not have.
    """
    from dsbo.acquisition import OptimizerSettings

    if optimizer is None or isinstance(optimizer, OptimizerSettings):
        return optimizer
    if not isinstance(optimizer, Mapping):
        raise ConfigError(
            f"optimizer must be OptimizerSettings or a mapping of its fields, got {optimizer!r}"
        )
    fields = OptimizerSettings.__dataclass_fields__
    unknown = sorted(set(optimizer) - set(fields))
    if unknown:
        raise ConfigError(
            f"optimizer.{unknown[0]} is not a setting; the settings are {', '.join(fields)}"
        )
    return OptimizerSettings(**optimizer)


class Tuner:
    """Ask/tell over a search space: hands out dicts of named values, takes results by trial.

    Args:
        space: ``{name: parameter}`` (:class:`~dsbo.space.Float`, ``Int``, ``Choice``,
            ``Fixed``, or their config mappings) or a :class:`~dsbo.space.SearchSpace`.
        budget: Number of evaluations (default 40; with ``budget_steps`` or a cost budget,
            as many as those allow).
        direction: ``"minimize"`` or ``"maximize"`` (also ``"min"``/``"max"``): of the
            objective, or of each objective ``objectives`` names without a direction.
        objective: Name of the single objective.
        objectives: Several objectives (or one, named): a list of names, or
            ``{name: "min" | "max" | ("min", threshold)}``; the threshold is the worst value
            still worth having (Ax's objective threshold, the hypervolume's reference). The
            function then returns ``{name: value}``; several objectives are searched with
            qLogNEHVI unless ``acquisition`` says otherwise (e.g. ``"qparego"``,
            ``"mobo-rs"``).
        constraints: Outcome constraints as strings, ``["memory <= 8", "accuracy >= 0.9"]``
            (one outcome each, the syntax of ``parameter_constraints``), or names of slacks
            the function computes (feasible when ``>= 0``); the function returns the outcomes
            they bound in its mapping.
        parameter_constraints: Linear constraints on parameters, ``["x + y <= 1"]`` (a single
            string is one constraint).
        default: The default configuration ``{name: value}`` (may name only some
            parameters): BONSAI prunes toward it, changes are counted from it.
        bonsai: ``True`` or BONSAI's options (``{"rho": 0.2}``): keep each proposal's changes
            from ``default`` to those that pay off (:mod:`dsbo.acquisition.bonsai`).
        surrogate: As for :class:`~dsbo.campaign.Campaign`, or ``"auto"`` (the default): an
            exact GP for at most 10 searched parameters, the MAP-SAAS ensemble above
            (:func:`auto_surrogate`).
        acquisition: As for the campaign (``"auto"``: qLogNEI; qLogNEHVI for several objectives).
        n_init: Quasi-random initial points (the campaign's default).
        q: Candidates per iteration.
        seed: The search's seed.
        store: A SQLite path or store: every evaluation committed, a second call resumes.
        executor: Any ``concurrent.futures.Executor`` for the evaluations.
        eval_timeout: Seconds an evaluation may run before it is a failed trial.
        optimizer: Acquisition optimizer settings (:class:`~dsbo.acquisition.OptimizerSettings`,
            or a mapping of its fields, e.g. ``{"num_restarts": 4}``).
        callbacks: Called as ``callback(campaign, trials)`` after every finished batch.
        include_default: Evaluate ``default`` first.
        outcome_warping: ``"copula"`` (the default) fits the surrogate to normal scores of
            the objective's ranks, ``"winsorize"`` to the values with the bad tail clipped
            (Tukey's fence), ``None`` to the values (:mod:`dsbo.campaign.outcome_warping`;
            single objective).
        workers: Evaluations run at once by :meth:`run` (through ``executor``, by default a
            thread pool of this size).
        threads: Torch's intra-op threads while dsbo fits and proposes (``None``: torch's
            default). 1, as the command lines: on small BO problems more threads made each
            step several times slower on a loaded 2-core machine.
        dry_run: Check every part with one dry iteration before anything is evaluated.
        early_stopping: Stop bad trials early: ``True`` for the recommended setting (ASHA,
            the surrogate fitted on every ended trial at its last value:
            :data:`~dsbo.campaign.early_stopping.RECOMMENDED`), or a rule of
            :mod:`dsbo.stopping` by name or as ``{"name": ..., **options}``, with ``model``
            saying what the surrogate is fitted on (``"last"``, the default; ``"bohb"``: the
            trials' values at the highest rung with enough of them; ``"final"``; ``"fidelity"``).
            Stopped trials always inform the next proposals, which never repeat one.
            The function then takes the trial, ``f(params, trial)``, and
            calls ``trial.report(step, value)`` and ``trial.should_stop()``
            (:mod:`dsbo.campaign.early_stopping`).
        max_steps: The steps (epochs) of a full trial.
        budget_steps: The budget in steps instead of trials: each trial costs the steps it
            used (needs ``max_steps``).

    Raises:
        ConfigError: for any bad setting or parameter, before anything is evaluated.
    """

    def __init__(
        self,
        space: Mapping[str, Parameter | Mapping[str, Any]] | SearchSpace,
        budget: int | None = None,
        *,
        direction: str = "minimize",
        objective: str = "objective",
        objectives: Sequence[str] | Mapping[str, Any] | None = None,
        constraints: str | Sequence[str] = (),
        parameter_constraints: str | Sequence[str] = (),
        default: Mapping[str, Any] | None = None,
        bonsai: bool | Mapping[str, Any] = False,
        surrogate: Any = "auto",
        acquisition: Any = "auto",
        n_init: int | None = None,
        q: int = 1,
        seed: int = 0,
        store: Any = None,
        workers: int = 1,
        executor: Executor | None = None,
        eval_timeout: float | None = None,
        optimizer: Any = None,
        callbacks: Sequence[Any] = (),
        include_default: bool = False,
        dry_run: bool = True,
        threads: int | None = 1,
        outcome_warping: str | None = "copula",
        early_stopping: Any = None,
        max_steps: int | None = None,
        budget_steps: int | None = None,
    ) -> None:
        from dsbo.campaign import Campaign
        from dsbo.problems import get_problem

        if budget is None and budget_steps is None:
            budget = DEFAULT_BUDGET

        if not isinstance(objective, str) or not objective:
            raise ConfigError(f"objective must be a non-empty name, got {objective!r}")
        if objectives is not None and objective != "objective":
            raise ConfigError("give objective= (one) or objectives= (several), not both")
        outcomes = Outcomes.declare(
            objective if objectives is None else objectives, constraints, direction
        )
        space = space if isinstance(space, SearchSpace) else SearchSpace(space)
        if isinstance(parameter_constraints, str):
            parameter_constraints = [parameter_constraints]
        if default is not None:
            if not isinstance(default, Mapping):
                raise ConfigError(f"default must be a mapping {{name: value}}, got {default!r}")
            space.default(
                default, where="default"
            )  # an unknown name or bad value, in the user's words
        problem = get_problem(
            "black-box",
            parameters=space,
            parameter_constraints=list(parameter_constraints),
            objectives={o.name: (o.direction, o.threshold) for o in outcomes.objectives},
            constraints=[c.text or c.metric for c in outcomes.constraints],
            target=dict(default or {}),
        )
        self.outcomes = problem.outcomes
        self.space = problem.space
        if isinstance(surrogate, str) and surrogate == "auto":
            surrogate = auto_surrogate(self.space)
        if not isinstance(bonsai, bool | Mapping):
            raise ConfigError(
                f"bonsai must be true, false or a mapping of BONSAI options, got {bonsai!r}"
            )
        postprocess = None
        if bonsai is not False:
            options = dict(bonsai) if isinstance(bonsai, Mapping) else {}
            if default is not None:
                options.setdefault("default", dict(default))
            postprocess = {"bonsai": options}
        if threads is not None and (
            not isinstance(threads, int) or isinstance(threads, bool) or threads < 1
        ):
            raise ConfigError(f"threads must be an integer >= 1 or None, got {threads!r}")
        self.threads = threads
        optimizer = optimizer_settings(optimizer)
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
        self._own_executor = None
        if workers > 1 and executor is None:
            from concurrent.futures import ThreadPoolExecutor

            executor = self._own_executor = ThreadPoolExecutor(workers)
        self._function: Callable[..., Any] | None = None
        self._takes_trial = False
        #: Trials this Tuner handed out by :meth:`ask` (pending ones it did not are handed out first).
        self._handed_out: set[int] = set()
        with self._torch_threads():  # the dry iteration fits and proposes too
            self.campaign = Campaign(
                problem,
                surrogate=surrogate,
                acquisition=acquisition,
                budget=budget,
                n_init=n_init,
                q=q,
                seed=seed,
                store=store,
                evaluator=self._evaluate,
                executor=executor,
                optimizer=optimizer,
                callbacks=callbacks,
                postprocess=postprocess,
                eval_timeout=eval_timeout,
                include_default=include_default,
                dry_run=dry_run,
                parallel=workers,
                outcome_warping=outcome_warping,
                early_stopping=early_stopping,
                max_steps=max_steps,
                budget_steps=budget_steps,
            )

    @property
    def direction(self) -> str:
        """The (first) objective's direction."""
        return self.outcomes.objectives[0].direction

    @contextmanager
    def _torch_threads(self, proposing: bool = True) -> Iterator[None]:
        """Torch's intra-op threads set to ``threads`` for the block, restored after; while
        ``proposing``, under the campaigns' :data:`~dsbo.campaign.model_lock.MODEL_LOCK` (the
        thread count is process-wide: two Tuners asking in two threads would restore each
        other's). A whole :meth:`run` sets it without the lock, so that the evaluations of
        runs in other threads are not held up."""
        from dsbo.campaign.model_lock import MODEL_LOCK

        with MODEL_LOCK if proposing else nullcontext():
            if self.threads is None:
                yield
                return
            import torch

            before = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                yield
            finally:
                torch.set_num_threads(before)

    # ------------------------------------------------------------------ ask / tell
    def ask(self, n: int | None = None, *, fixed: Mapping[str, Any] | None = None) -> Any:
        """The next trial to evaluate, or with ``n`` a list of up to ``n`` distinct trials.

        Each new proposal takes every pending trial into account (the ones handed out and not
        yet told, other workers' on a shared store), so several trials can be open at once.
        Trials already pending that this Tuner has not handed out (enqueued with
        :meth:`enqueue`, or left by an earlier session on this store) are handed out first.
        ``fixed``: ``{name: value}`` held fixed in the new proposals of this call.

        Returns:
            A :class:`Suggestion` (``None`` once the budget is spent), or with ``n`` a list of
            them (``[]`` once the budget is spent).
        """
        k = 1 if n is None else n
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"n must be an integer >= 1, got {n!r}")
        trials = []
        if fixed is None and not self.campaign.store.shared:
            trials = [
                t
                for t in self.campaign.store.trials("pending")
                if t.id not in self._handed_out and t.generator != IMPORTED
            ][:k]
        while len(trials) < k:  # the initial design's last points may come before proposals
            with self._torch_threads():
                new = self.campaign.ask(q=k - len(trials), fixed=fixed)
            if not new:
                break
            trials += [
                t for t in new if t.status == "pending"
            ]  # a trial whose cost failed is recorded already
        self._handed_out.update(t.id for t in trials)
        suggestions = [self._suggestion(t) for t in trials]
        if n is None:
            return suggestions[0] if suggestions else None
        return suggestions

    def ask_design_point(self, index: int) -> Suggestion:
        """The ``index``-th point of the initial design as a trial handed out now
        (:meth:`~dsbo.campaign.Campaign.add_design_point`): for a driver that numbers its trials
        itself, trial ``k`` taking design point ``k`` (Optuna's ``DsboSampler``)."""
        trial = self.campaign.add_design_point(index)
        self._handed_out.add(trial.id)
        return self._suggestion(trial)

    def _suggestion(self, trial: Trial) -> Suggestion:
        """A trial handed out: its values, its running handle and its segment."""
        params = self.campaign.problem.params(trial.x)
        running = self.campaign.running(trial)
        return Suggestion(trial.id, params, running, segment=running.segment)

    def import_trials(self, rows: Any, strict: bool = False) -> Any:
        """Bring in trials run elsewhere as prior data, not charged to the budget
        (:meth:`~dsbo.campaign.Campaign.import_trials`: rows of ``params``, ``values``,
        ``status``, ...; refused rows come back with the reason)."""
        return self.campaign.import_trials(rows, strict=strict)

    def enqueue(self, params: Mapping[str, Any]) -> Suggestion:
        """A configuration to try before any proposal (Optuna's ``enqueue_trial``): committed
        at once as a pending trial, counted against the budget, evaluated first by
        :meth:`run` and handed out first by :meth:`ask`.

        Raises:
            ConfigError: if ``params`` is not a point of the space.
            BudgetExhaustedError: if the budget has no room left.
        """
        trial = self.campaign.enqueue(params)
        return Suggestion(trial.id, self.campaign.problem.params(trial.x))

    def tell(
        self,
        trial: Suggestion | int | Mapping[str, Any],
        value: Any = None,
        error: str | BaseException | None = None,
    ) -> None:
        """Record the result of a trial (a :class:`Suggestion` or its id): ``value`` as the
        function would return it (module docstring) or ``error`` (the evaluation failed:
        why). Given a ``{name: value}`` mapping of parameters instead, the result is recorded
        as an observation made outside the search (e.g. the default configuration).

        Raises:
            OutcomeError: if ``value`` is malformed (nothing is recorded).
            ConfigError: if a named configuration is not a point of the space.
        """
        if isinstance(trial, Mapping):
            if error is not None:
                raise ConfigError("an outside observation is told with its value, not an error")
            self.campaign.attach(dict(trial), value)
            return
        trial_id = trial.trial_id if isinstance(trial, Suggestion) else trial
        segment = trial.segment if isinstance(trial, Suggestion) else None
        if error is not None:
            self.campaign.tell(trial_id, error=error, segment=segment)
        else:
            self.campaign.tell(trial_id, value, segment=segment)

    def _evaluate(self, x: Any, trial: RunningTrial) -> Any:
        if self._function is None:
            raise ConfigError(
                "this Tuner has no function to evaluate: use ask/tell, or dsbo.minimize/maximize"
            )
        if self._takes_trial:
            return self._function(self.campaign.problem.params(x), trial)
        return self._function(self.campaign.problem.params(x))

    # ------------------------------------------------------------------ driving
    def run(self, function: Callable[[dict[str, Any]], Any]) -> TunerResult:
        """Evaluate ``function`` (``{name: value} -> number or mapping``, or ``f(params,
        trial)`` to report intermediate values) until the budget is spent; returns
        :meth:`result`.

        Raises:
            TooManyFailuresError: after ``max_consecutive_failures`` failures in a row; its
                ``result`` is this Tuner's :meth:`result`, every evaluation so far.
        """
        if not callable(function):
            raise ConfigError(f"the function to optimize must be callable, got {function!r}")
        from dsbo.campaign.early_stopping import takes_trial

        self._function, self._takes_trial = function, takes_trial(function)
        if (
            self.campaign.early_stopping is not None
            and self.campaign.early_stopping.rule is not None
            and not self._takes_trial
        ):
            raise ConfigError(
                "early_stopping needs a function that takes the trial, f(params, trial), and calls "
                "trial.report(step, value) and trial.should_stop()"
            )
        try:
            with self._torch_threads(proposing=False):
                self.campaign.run()
        except TooManyFailuresError as exc:
            exc.result = self.result()
            raise
        finally:
            self._function = None
            if self._own_executor is not None:
                self._own_executor.shutdown(wait=False, cancel_futures=True)
        return self.result()

    def result(self) -> TunerResult:
        """The best trial (or the front) and the history so far, in the user's direction."""
        from dsbo.campaign.history import pareto_trials

        result = self.campaign.result()
        problem = self.campaign.problem
        front = pareto_trials(self.campaign.store.trials("completed"), problem)
        best_trials = [
            BestTrial(t.id, problem.params(t.x), self.outcomes.to_user(t.y)) for t in front
        ]
        columns = ["trial", *self.space.names, *self.outcomes.metrics]
        table = result.history
        pareto_front = table[table["trial"].isin([t.trial_id for t in best_trials])][
            columns
        ].reset_index(drop=True)
        several = problem.is_multi_objective
        return TunerResult(
            best_params=None if several else result.best_params,
            best_value=None
            if several or result.best_value is None or not math.isfinite(result.best_value)
            else result.best_value,
            history=result.history,
            num_completed=result.num_completed,
            num_failed=result.num_failed,
            changes_best=None if several else result.changes_best,
            campaign=self.campaign,
            best_trials=best_trials,
            pareto_front=pareto_front,
            hypervolume=result.best_value if several else None,
            warnings=dict(self.campaign.model_warnings),
        )

    def write(self, run_dir: str | Path) -> dict[str, Any]:
        """Write ``history.csv``, ``trace.png``, ``summary.json`` and ``report.html`` to
        ``run_dir`` (as ``python -m dsbo.optimize`` does, in the user's direction and names);
        returns the summary."""
        from dsbo.analysis.outputs import write_outputs

        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        return write_outputs(self.campaign, run_dir, {}, report=True)


def minimize(
    function: Callable[[dict[str, Any]], Any],
    space: Mapping[str, Parameter | Mapping[str, Any]] | SearchSpace,
    budget: int | None = None,
    **options: Any,
) -> TunerResult:
    """Minimize ``function`` over ``space`` in ``budget`` evaluations.

    Args:
        function: ``{name: value} -> number`` (or a mapping with the objective and outcome
            constraints); an exception or NaN is a failed trial.
        space: ``{name: dsbo.Float(...) | dsbo.Int(...) | dsbo.Choice(...) | dsbo.Fixed(...)}``.
        budget: Number of evaluations (default 40; with ``budget_steps``, as many as the
            steps allow).
        options: Any of :class:`Tuner`'s (``surrogate``, ``acquisition``, ``default``,
            ``bonsai``, ``store``, ``workers``, ``eval_timeout``, ``seed``, ...).

    Returns:
        A :class:`TunerResult`: ``best_params``, ``best_value``, ``history``.
    """
    _check_options(options, "minimize")
    return Tuner(space, budget, direction="minimize", **options).run(function)


def maximize(
    function: Callable[[dict[str, Any]], Any],
    space: Mapping[str, Parameter | Mapping[str, Any]] | SearchSpace,
    budget: int | None = None,
    **options: Any,
) -> TunerResult:
    """Maximize ``function`` over ``space`` (as :func:`minimize`, higher is better)."""
    _check_options(options, "maximize")
    return Tuner(space, budget, direction="maximize", **options).run(function)


def _check_options(options: Mapping[str, Any], caller: str) -> None:
    """A ConfigError naming an option :class:`Tuner` does not take (and the one meant)."""
    import difflib
    import inspect

    known = [
        p
        for p in inspect.signature(Tuner.__init__).parameters
        if p not in ("self", "space", "direction")
    ]
    for name in options:
        if name == "direction":
            raise ConfigError(
                f"{caller}() sets the direction; call dsbo.{'maximize' if caller == 'minimize' else 'minimize'} for the other one"
            )
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; options: {', '.join(known)}"
            raise ConfigError(f"{caller}() has no option {name!r}{hint}")


__all__ = [
    "AUTO_GP_MAX_PARAMETERS",
    "BestTrial",
    "Suggestion",
    "Tuner",
    "TunerResult",
    "auto_surrogate",
    "maximize",
    "minimize",
]
