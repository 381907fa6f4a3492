"""The five-line API: :func:`minimize` / :func:`maximize` a Python function over a search space,
and :class:`Tuner`, the same search as ask/tell handing out dicts of named values.

Example:
    >>> import dsbo
    >>> space = {"lr": dsbo.Float(1e-4, 1e-1, log=True), "width": dsbo.Int(16, 512, log=True),
    ...          "optimizer": dsbo.Choice(["adam", "sgd"])}
    >>> result = dsbo.minimize(train_and_score, space, budget=40)
    >>> print(result.best_params, result.best_value)

The function receives ``{name: value}`` (conditional parameters only while active) and returns
a number, or a mapping ``{objective: value, <outcome constraint>: slack}``. Each call is a
trial of a :class:`~dsbo.campaign.Campaign` over the black-box problem of the space: an
exception or a NaN is a failed trial, never a crash; with ``store=`` every evaluation is
committed before the next proposal and a second call on the same store resumes.

A minimized objective is stored as its negation (dsbo maximizes), named ``-<objective>`` in the
store, ``history.csv`` and the plots; :class:`TunerResult` reports the value in its own sense.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.errors import ConfigError
from dsbo.space import Parameter, SearchSpace

if TYPE_CHECKING:
    import pandas as pd

    from dsbo.campaign import Campaign

DIRECTIONS = ("minimize", "maximize")
#: ``surrogate="auto"`` fits an exact GP to spaces of at most this many searched parameters and
#: the MAP-SAAS ensemble to larger ones (:func:`auto_surrogate`).
AUTO_GP_MAX_PARAMETERS = 10


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


@dataclass
class Suggestion:
    """A proposed trial: its id in the store and its named values (give it back to
    :meth:`Tuner.tell`)."""

    trial_id: int
    params: dict[str, Any]


@dataclass
class TunerResult:
    """What a search found, in the objective's own sense (lower is better when minimizing)."""

    #: The best completed trial's named values (``None`` before any trial completed).
    best_params: dict[str, Any] | None
    #: Its objective value.
    best_value: float | None
    #: One row per trial: named parameters, the objective (own sense), status, timings.
    history: pd.DataFrame
    num_completed: int
    num_failed: int
    #: The parameters the best trial changes from the default (BONSAI / the problem default).
    changes_best: list[dict[str, Any]] | None
    #: The campaign behind the search (store, model settings, raw history).
    campaign: Campaign


class Tuner:
    """Ask/tell over a search space: hands out dicts of named values, takes results by trial.

    Args:
        space: ``{name: parameter}`` (:class:`~dsbo.space.Float`, ``Int``, ``Choice``,
            ``Fixed``, or their config mappings) or a :class:`~dsbo.space.SearchSpace`.
        budget: Number of evaluations.
        direction: ``"minimize"`` or ``"maximize"``.
        objective: Name of the objective.
        outcome_constraints: Names of outcomes the function also returns, feasible when
            ``>= 0`` (the function then returns a mapping).
        parameter_constraints: Linear constraints, ``["x + y <= 1"]``.
        default: The default configuration ``{name: value}`` (may name only some
            parameters): BONSAI prunes toward it, changes are counted from it.
        bonsai: ``True`` or BONSAI's options (``{"rho": 0.2}``): keep each proposal's changes
            from ``default`` to those that pay off (:mod:`dsbo.acquisition.bonsai`).
        surrogate: As for :class:`~dsbo.campaign.Campaign`, or ``"auto"`` (the default): an
            exact GP for at most 10 searched parameters, the MAP-SAAS ensemble above
            (:func:`auto_surrogate`).
        acquisition: As for the campaign (``"auto"``: qLogNEI).
        n_init: Quasi-random initial points (the campaign's default).
        q: Candidates per iteration.
        seed: The search's seed.
        store: A SQLite path or store: every evaluation committed, a second call resumes.
        executor: Any ``concurrent.futures.Executor`` for the evaluations.
        eval_timeout: Seconds an evaluation may run before it is a failed trial.
        optimizer: Acquisition optimizer settings (:class:`~dsbo.acquisition.OptimizerSettings`).
        callbacks: Called as ``callback(campaign, trials)`` after every finished batch.
        include_default: Evaluate ``default`` first.
        outcome_warping: ``"copula"`` (the default) fits the surrogate to normal scores of
            the objective's ranks, ``"winsorize"`` to the values with the bad tail clipped
            (Tukey's fence), ``None`` to the values (:mod:`dsbo.campaign.outcome_warping`).
        workers: Evaluations run at once by :meth:`run` (through ``executor``, by default a
            thread pool of this size).
        threads: Torch's intra-op threads while dsbo fits and proposes (``None``: torch's
            default). 1, as the command lines: on small BO problems more threads made each
            step several times slower on a loaded 2-core machine.
        dry_run: Check every part with one dry iteration before anything is evaluated.

    Raises:
        ConfigError: for any bad setting or parameter, before anything is evaluated.
    """

    def __init__(
        self,
        space: Mapping[str, Parameter | Mapping[str, Any]] | SearchSpace,
        budget: int = 40,
        *,
        direction: str = "minimize",
        objective: str = "objective",
        outcome_constraints: Sequence[str] = (),
        parameter_constraints: Sequence[str] = (),
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
    ) -> None:
        from dsbo.campaign import Campaign
        from dsbo.problems import get_problem

        if direction not in DIRECTIONS:
            raise ConfigError(f"direction={direction!r}: choose minimize or maximize")
        if not isinstance(objective, str) or not objective:
            raise ConfigError(f"objective must be a non-empty name, got {objective!r}")
        self.direction = direction
        self.objective = objective
        #: The objective's name in the store: ``-<objective>`` when minimizing (dsbo maximizes).
        self.stored_objective = f"-{objective}" if direction == "minimize" else objective
        space = space if isinstance(space, SearchSpace) else SearchSpace(space)
        problem = get_problem(
            "black-box",
            parameters=space,
            parameter_constraints=list(parameter_constraints),
            objectives=[self.stored_objective],
            constraints=list(outcome_constraints),
            target=dict(default or {}),
        )
        self.space = problem.space
        if isinstance(surrogate, str) and surrogate == "auto":
            surrogate = auto_surrogate(self.space)
        if not isinstance(bonsai, bool | Mapping):
            raise ConfigError(f"bonsai must be true, false or a mapping of BONSAI options, got {bonsai!r}")
        postprocess = None
        if bonsai is not False:
            options = dict(bonsai) if isinstance(bonsai, Mapping) else {}
            if default is not None:
                options.setdefault("default", dict(default))
            postprocess = {"bonsai": options}
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ConfigError(f"threads must be an integer >= 1 or None, got {threads!r}")
        self.threads = threads
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
        self._own_executor = None
        if workers > 1 and executor is None:
            from concurrent.futures import ThreadPoolExecutor

            executor = self._own_executor = ThreadPoolExecutor(workers)
        self._function: Callable[[dict[str, Any]], Any] | None = None
        with self._torch_threads():  # the dry iteration fits and proposes too
            self.campaign = Campaign(
                problem, surrogate=surrogate, acquisition=acquisition, budget=budget, n_init=n_init, q=q,
                seed=seed, store=store, evaluator=self._evaluate, executor=executor, optimizer=optimizer,
                callbacks=callbacks, postprocess=postprocess, eval_timeout=eval_timeout,
                include_default=include_default, dry_run=dry_run, parallel=workers,
                outcome_warping=outcome_warping,
            )  # fmt: skip

    @contextmanager
    def _torch_threads(self) -> Iterator[None]:
        """Torch's intra-op threads set to ``threads`` for the block, restored after."""
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
    def ask(self) -> Suggestion | None:
        """The next trial to evaluate (``None`` once the budget is spent). A trial left
        pending by an earlier session is handed out again first."""
        pending = self.campaign.store.trials("pending")
        with self._torch_threads():
            trials = pending[:1] or self.campaign.ask(q=1)
        if not trials:
            return None
        trial = trials[0]
        return Suggestion(trial.id, self.campaign.problem.params(trial.x))

    def tell(
        self,
        trial: Suggestion | int | Mapping[str, Any],
        value: Any = None,
        error: str | BaseException | None = None,
    ) -> None:
        """Record the result of a trial (a :class:`Suggestion` or its id): ``value`` (a number,
        or a mapping by outcome name) or ``error`` (the evaluation failed: why). Given a
        ``{name: value}`` mapping of parameters instead, the result is recorded as an
        observation made outside the search (e.g. the default configuration).

        Raises:
            OutcomeError: if ``value`` is malformed (nothing is recorded).
            ConfigError: if a named configuration is not a point of the space.
        """
        if isinstance(trial, Mapping):
            if error is not None:
                raise ConfigError("an outside observation is told with its value, not an error")
            self.campaign.attach(dict(trial), self._stored(value))
            return
        trial_id = trial.trial_id if isinstance(trial, Suggestion) else trial
        if error is not None:
            self.campaign.tell(trial_id, error=error)
        else:
            self.campaign.tell(trial_id, self._stored(value))

    def _stored(self, value: Any) -> Any:
        """The value in the campaign's (maximization) sense, by outcome name where it is a
        mapping. Anything malformed is passed through for the campaign's strict parser."""
        sign = -1.0 if self.direction == "minimize" else 1.0
        if isinstance(value, Mapping):
            out = dict(value)
            if self.objective in out and self.stored_objective not in out:
                raw = out.pop(self.objective)
                out[self.stored_objective] = sign * raw if _is_real(raw) else raw
            return out
        return sign * value if _is_real(value) else value

    def _evaluate(self, x: Any) -> Any:
        if self._function is None:
            raise ConfigError("this Tuner has no function to evaluate: use ask/tell, or dsbo.minimize/maximize")
        return self._stored(self._function(self.campaign.problem.params(x)))

    # ------------------------------------------------------------------ driving
    def run(self, function: Callable[[dict[str, Any]], Any]) -> TunerResult:
        """Evaluate ``function`` (``{name: value} -> number or mapping``) until the budget is
        spent; returns :meth:`result`."""
        if not callable(function):
            raise ConfigError(f"the function to optimize must be callable, got {function!r}")
        self._function = function
        try:
            with self._torch_threads():
                self.campaign.run()
        finally:
            self._function = None
            if self._own_executor is not None:
                self._own_executor.shutdown(wait=False, cancel_futures=True)
        return self.result()

    def result(self) -> TunerResult:
        """The best trial and the history so far, in the objective's own sense."""
        result = self.campaign.result()
        history = result.history.copy()
        sign = -1.0 if self.direction == "minimize" else 1.0
        if self.direction == "minimize":
            position = list(history.columns).index(self.stored_objective)
            history.insert(position, self.objective, -history[self.stored_objective])
            history = history.drop(columns=[self.stored_objective])
            history["best_so_far"] = -history["best_so_far"]
        best = result.best_value
        return TunerResult(
            best_params=result.best_params,
            best_value=None if best is None or not math.isfinite(best) else sign * best,
            history=history,
            num_completed=result.num_completed,
            num_failed=result.num_failed,
            changes_best=result.changes_best,
            campaign=self.campaign,
        )

    def write(self, run_dir: str | Path) -> dict[str, Any]:
        """Write ``history.csv``, ``trace.png``, ``summary.json`` and ``report.html`` to ``run_dir`` (as
        ``python -m dsbo.optimize`` does; values in the stored, maximized sense, the summary's
        ``best_objective`` in the objective's own); returns the summary."""
        from dsbo.analysis.outputs import write_outputs

        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        best = self.result().best_value
        extra = {"direction": self.direction, "objective": self.objective, "best_objective": best}
        return write_outputs(self.campaign, run_dir, extra, report=True)


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def minimize(
    function: Callable[[dict[str, Any]], Any],
    space: Mapping[str, Parameter | Mapping[str, Any]] | SearchSpace,
    budget: int = 40,
    **options: Any,
) -> TunerResult:
    """Minimize ``function`` over ``space`` in ``budget`` evaluations.

    Args:
        function: ``{name: value} -> number`` (or a mapping with the objective and outcome
            constraints); an exception or NaN is a failed trial.
        space: ``{name: dsbo.Float(...) | dsbo.Int(...) | dsbo.Choice(...) | dsbo.Fixed(...)}``.
        budget: Number of evaluations.
        options: Any of :class:`Tuner`'s (``surrogate``, ``acquisition``, ``default``,
            ``bonsai``, ``store``, ``workers``, ``eval_timeout``, ``seed``, ...).

    Returns:
        A :class:`TunerResult`: ``best_params``, ``best_value``, ``history``.
    """
    return Tuner(space, budget, direction="minimize", **options).run(function)


def maximize(
    function: Callable[[dict[str, Any]], Any],
    space: Mapping[str, Parameter | Mapping[str, Any]] | SearchSpace,
    budget: int = 40,
    **options: Any,
) -> TunerResult:
    """Maximize ``function`` over ``space`` (as :func:`minimize`, higher is better)."""
    return Tuner(space, budget, direction="maximize", **options).run(function)


__all__ = ["AUTO_GP_MAX_PARAMETERS", "Suggestion", "Tuner", "TunerResult", "auto_surrogate", "maximize", "minimize"]
