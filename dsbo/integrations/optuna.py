"""Optuna: :class:`DsboSampler`, an Optuna sampler that proposes with dsbo's default search.

The sampler is dsbo's counterpart of Optuna's ``GPSampler`` and optuna-integration's
``BoTorchSampler``: each trial's parameters come from a :class:`~dsbo.runtime.tuner.Tuner`
(the same search as :func:`dsbo.minimize`: the surrogate ``"auto"``, the copula outcome
warping, the acquisition optimizer's ``min_distance``) fed with the study's trials.

Example:
    >>> import optuna
    >>> from dsbo.integrations.optuna import DsboSampler
    >>> sampler = DsboSampler(default={"lr": 1e-3}, n_startup_trials=10, seed=0)
    >>> study = optuna.create_study(sampler=sampler)
    >>> study.optimize(objective, n_trials=40)

**Optuna's contract.** The relative search space is Optuna's intersection search space
(:class:`optuna.search_space.IntersectionSearchSpace` of the complete and pruned trials, as
``TPESampler`` computes it; single-value distributions left out, as ``GPSampler`` does);
``sample_relative`` proposes all of it at once, and a parameter outside it (a conditional or
dynamic one) is sampled by ``independent_sampler`` with Optuna's warning.

**A dsbo space** (``space=``: ``{name: dsbo.Float/Int/Choice/Fixed}`` with ``when=`` conditions,
or a :class:`~dsbo.space.SearchSpace`) is the relative search space instead, conditional
parameters included (a Float as ``FloatDistribution(low, high, log, step)``, an Int as
``IntDistribution``, a Choice as ``CategoricalDistribution(values)``; a Fixed is left out):
dsbo proposes the whole point from that space, conditions kept, and ``sample_relative`` returns
the parameters active there, so the objective's define-by-run ``suggest_*`` calls find each
active one (under the same name, a choice as itself) and never an inactive one. The study's
trials are imported with their active parameters; a trial that does not fit the space is
refused by ``import_trials`` (which logs it) and left out. A parameter the objective suggests
outside the space is sampled independently, with the warning. The objective must suggest a
parameter of the space from the same distribution (bounds, log, step, choices): Optuna would
sample another one independently, or raise its own ``ValueError`` (other choices of a
categorical that dsbo proposed); the sampler raises a
:class:`~dsbo.errors.ConfigError` naming the parameter at the first trial that does (from the
``suggest_*`` call when the parameter is sampled independently, as in the startup trials,
else when the trial is told, after it ran). Trials that other samplers ran in the study are
only data: imported where their values fit the space.

**Startup.** With ``space=`` (and no ``independent_sampler`` given), trial ``k <
n_startup_trials`` is point ``k`` of dsbo's own initial design (scrambled Sobol over the dsbo
space, conditions respected; :meth:`~dsbo.runtime.tuner.Tuner.ask_design_point`), numbered by
the trial so that workers sharing the study never repeat one: on one worker the study is then
``dsbo.minimize``'s search trial for trial. Otherwise, until ``n_startup_trials`` trials are
complete or pruned, each new trial is entirely the ``independent_sampler``'s (its relative and
independent sampling both): by default ``QMCSampler(scramble=True, seed=seed)``, a scrambled
Sobol sequence shared through the study by every worker that uses the same seed (Optuna's own
samplers start with random points). A pruned trial counts, as ``TPESampler`` counts it
(:data:`STARTUP_STATES`; ``GPSampler``, which fits complete trials only, counts those only):
under a pruner that prunes most trials, counting complete ones only would keep the study in its
startup for good (issue 57: 0 dsbo proposals in 100 trials). Those trials are then dsbo's
initial design, so its own design (``n_init``) is a single point, proposed only when none of
them completed.

**The study's trials** are mirrored into the Tuner (:mod:`dsbo.integrations.optuna_study`):
COMPLETE ones as completed, FAIL as failed, PRUNED as stopped with their intermediate values,
running ones as pending points that the proposals avoid. The surrogate is fitted on the
complete trials and on each pruned one at the last value it reported (the early-stopping model
``"last"``): the pruned trials inform the proposals, which keep the acquisition optimizer's
``min_distance`` from a pruned configuration as from any evaluated one. One Tuner is kept per
study and search space and synced by trial number, so each proposal only imports what changed.

**Directions, objectives, constraints.** A minimized or maximized study is searched in its
direction; a multi-objective study as dsbo's objectives ``objective_0``, ``objective_1``, ...
with their directions. Constraint values (``constraints_func``, or ``trial.set_constraint``)
are dsbo outcome constraints ``constraint_<key> <= 0`` (feasible when every value is ``<= 0``,
as in Optuna); a complete trial without them is imported as failed.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import random
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.exceptions import ExperimentalWarning
from optuna.samplers import BaseSampler, QMCSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from dsbo.campaign.execution import MAX_SEED
from dsbo.errors import ConfigError
from dsbo.integrations.optuna_internals import (
    process_constraints,
    study_key,
    study_trials,
    trial_key,
)
from dsbo.integrations.optuna_space import DsboSpace, OptunaSpace, searchable
from dsbo.integrations.optuna_study import (
    ATTR_MAX_LENGTH,
    PARAMS_KEY,
    Rebuild,
    StudyMirror,
    constraint_keys,
    constraint_name,
    pruned_trials_model,
    share_proposal,
)
from dsbo.runtime.tuner import Tuner
from dsbo.space import Float, SearchSpace

logger = logging.getLogger(__name__)

#: The Tuner's budget in trials: imported trials are never charged, only this sampler's own
#: proposals, so this is never reached.
BUDGET = 2**31 - 1
#: Tuner options the study or the sampler sets, with what to use instead.
SET_BY_STUDY = {
    "budget": "the study's n_trials",
    "direction": "the study's direction",
    "objective": "the study",
    "objectives": "the study's directions",
    "constraints": "constraints_func or trial.set_constraint",
    "store": "the study's storage",
    "workers": "the study's n_jobs or several processes",
    "executor": "the study",
    "eval_timeout": "the study",
    "callbacks": "the study's callbacks",
    "include_default": "study.enqueue_trial",
    "dry_run": "the sampler (no dry run)",
    "early_stopping": "an Optuna pruner",
    "max_steps": "an Optuna pruner",
    "budget_steps": "the study's n_trials",
    "q": "the study's n_jobs",
}
#: The trial states that end the startup: complete and pruned trials, as ``TPESampler``
#: counts them (the surrogate is fitted on both:
#: :func:`~dsbo.integrations.optuna_study.pruned_trials_model`).
STARTUP_STATES = (TrialState.COMPLETE, TrialState.PRUNED)
_TUNER_OPTIONS = [
    p for p in inspect.signature(Tuner.__init__).parameters if p not in ("self", "space")
]
#: The sampler's own options that a Tuner does not take (suggested for a misspelled option).
_SAMPLER_OPTIONS = ("n_startup_trials", "independent_sampler", "constraints_func")
_INDEPENDENT_WARNING = (
    "The parameter `{param}` in Trial#{number} is sampled independently using `{independent}` "
    "instead of `DsboSampler`, potentially degrading the optimization performance. This fallback "
    "happened because the parameter is {reason}. You can suppress this warning by setting "
    "`warn_independent_sampling` to `False` in the constructor of `DsboSampler` if this "
    "independent sampling is intended behavior."
)
_OUTSIDE_INTERSECTION = (
    "not in the study's intersection search space (a conditional or dynamic parameter)"
)
_OUTSIDE_SPACE = "not in DsboSampler's space=, or inactive there at the proposed point"


class DsboSampler(BaseSampler):
    """An Optuna sampler whose proposals come from dsbo's search (module docstring).

    Args:
        surrogate: dsbo's surrogate (``"auto"``: an exact GP up to 10 parameters, MAP-SAAS above).
        acquisition: dsbo's acquisition (``"auto"``: qLogNEI; qLogNEHVI for several objectives).
        default: A default configuration ``{name: value}`` (Optuna names and values): BONSAI
            prunes toward it; changes are counted from it.
        bonsai: ``True`` or BONSAI's options: keep each proposal's changes from ``default`` to
            those that pay off (no Optuna sampler offers it).
        n_startup_trials: Complete or pruned trials before dsbo proposes; until then the
            ``independent_sampler`` samples whole trials.
        seed: The seed of dsbo's search and of the default independent sampler (``None``: random).
        independent_sampler: Samples the startup trials and the parameters outside the relative
            search space (default ``QMCSampler(scramble=True, seed=seed)``).
        constraints_func: As Optuna's samplers: ``FrozenTrial -> sequence of floats``, feasible
            when all are ``<= 0``; called after each complete or pruned trial.
        warn_independent_sampling: Warn when a parameter is sampled independently after startup.
        space: A dsbo search space (``{name: dsbo parameter}`` with ``when=`` conditions, or a
            :class:`~dsbo.space.SearchSpace`) to search instead of Optuna's intersection search
            space, its names and choices the objective's (module docstring); ``None``: the
            intersection search space.
        tuner_options: Any other option of :class:`~dsbo.runtime.tuner.Tuner` that a search of
            dsbo takes (``outcome_warping``, ``optimizer`` e.g. ``{"min_distance": 0.01}``,
            ``n_init``, ``parameter_constraints``, ``threads``); ``optimizer`` may be a mapping of
            :class:`~dsbo.acquisition.OptimizerSettings` fields.

    Raises:
        ConfigError: for an option the study sets, an unknown option, or a bad value (a bad
            ``space``, or a ``default`` outside it), at once; for a parameter the objective
            suggests from another distribution than ``space``'s, at that trial.
    """

    def __init__(
        self,
        *,
        surrogate: Any = "auto",
        acquisition: Any = "auto",
        default: Mapping[str, Any] | None = None,
        bonsai: bool | Mapping[str, Any] = False,
        n_startup_trials: int = 10,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
        warn_independent_sampling: bool = True,
        space: Mapping[str, Any] | SearchSpace | None = None,
        **tuner_options: Any,
    ) -> None:
        for name in tuner_options:
            if name in SET_BY_STUDY:
                raise ConfigError(
                    f"DsboSampler: {name!r} is not a sampler option: "
                    f"it is set by {SET_BY_STUDY[name]}"
                )
            if name not in _TUNER_OPTIONS:
                options = [*_TUNER_OPTIONS, *_SAMPLER_OPTIONS]
                close = difflib.get_close_matches(name, options, n=1)
                raise ConfigError(
                    f"DsboSampler has no option {name!r}"
                    + (f"; did you mean {close[0]!r}?" if close else "")
                )
        if (
            isinstance(n_startup_trials, bool)
            or not isinstance(n_startup_trials, int)
            or n_startup_trials < 0
        ):
            raise ConfigError(
                f"DsboSampler: n_startup_trials must be an integer >= 0, got {n_startup_trials!r}"
            )
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED
        ):
            raise ConfigError(
                f"DsboSampler: seed must be None or an integer in [0, {MAX_SEED}], got {seed!r}"
            )
        if independent_sampler is not None and not isinstance(independent_sampler, BaseSampler):
            raise ConfigError(
                "DsboSampler: independent_sampler must be an Optuna sampler, "
                f"got {independent_sampler!r}"
            )
        if constraints_func is not None and not callable(constraints_func):
            raise ConfigError(
                f"DsboSampler: constraints_func must be callable, got {constraints_func!r}"
            )
        if default is not None and not isinstance(default, Mapping):
            raise ConfigError(
                f"DsboSampler: default must be a mapping {{name: value}}, got {default!r}"
            )
        if not isinstance(bonsai, bool | Mapping):
            raise ConfigError(
                "DsboSampler: bonsai must be true, false or a mapping of BONSAI options, "
                f"got {bonsai!r}"
            )
        if isinstance(tuner_options.get("optimizer"), Mapping):  # {"min_distance": 0.01, ...}
            from dsbo.acquisition import OptimizerSettings

            try:
                tuner_options["optimizer"] = OptimizerSettings(**tuner_options["optimizer"])
            except TypeError as exc:
                raise ConfigError(f"DsboSampler: optimizer: {exc}") from None
        self._seed = seed if seed is not None else random.SystemRandom().randint(0, MAX_SEED)
        self._options: dict[str, Any] = {
            "surrogate": surrogate,
            "acquisition": acquisition,
            **tuner_options,
        }
        self._default = dict(default) if default is not None else None
        self._bonsai = bonsai
        self._given = DsboSpace(space) if space is not None else None
        self._check_options()
        self._n_startup_trials = n_startup_trials
        #: With ``space=`` and no independent sampler given, trial ``k < n_startup_trials`` is
        #: dsbo's initial-design point ``k`` (the search of dsbo.minimize, trial for trial).
        self._design_startup = space is not None and independent_sampler is None
        if independent_sampler is None:
            # QMCSampler is "experimental": our default, not the user's choice
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)
                independent_sampler = QMCSampler(
                    scramble=True, seed=seed, warn_independent_sampling=False
                )
        self._independent_sampler = independent_sampler
        self._constraints_func = constraints_func
        self._warn_independent_sampling = warn_independent_sampling
        self._studies: dict[tuple[Any, int], StudyMirror] = {}
        self._startup: dict[int, bool] = {}  # trial id -> sampled by the independent sampler
        self._lock = threading.RLock()
        #: One entry per dsbo proposal: ``total`` (seconds in ``sample_relative``), ``dsbo``
        #: (the Tuner's own ask), ``sync`` (reading the study and importing it), ``rebuilt``
        #: (1 if the Tuner was built for it), ``pending`` (the running trials it avoided).
        self.timings: list[dict[str, float]] = []

    def _check_options(self) -> None:
        """The options a Tuner of this sampler gets, checked on a one-parameter space now (a
        bad surrogate, acquisition or warping is a ConfigError before any trial runs); with
        ``space=``, on that space with the default and BONSAI too."""
        if self._given is not None:
            Tuner(
                self._given.parameters,
                BUDGET,
                seed=self._seed,
                dry_run=False,
                default=self._default,
                bonsai=self._bonsai,
                early_stopping=pruned_trials_model(),
                **{"n_init": 1, **self._options},
            )
            return
        options = {k: v for k, v in self._options.items() if k != "parameter_constraints"}
        Tuner(
            {"x": Float(0.0, 1.0)},
            BUDGET,
            seed=self._seed,
            dry_run=False,
            early_stopping=pruned_trials_model(),
            **{"n_init": 1, **options},
        )

    # ------------------------------------------------------------------ Optuna's contract
    def reseed_rng(self) -> None:
        """A new random seed for the independent sampler and for the dsbo searches started
        from now on (Optuna calls this in each thread of ``n_jobs > 1``; a Tuner already
        built keeps its seed and its warm-started fits)."""
        self._independent_sampler.reseed_rng()
        self._seed = random.SystemRandom().randint(0, MAX_SEED)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        startup = _n_ended(study) < self._n_startup_trials and not self._design_startup
        self._startup[trial_key(trial)] = startup
        if startup:
            return self._independent_sampler.infer_relative_search_space(study, trial)
        if self._given is not None:
            return dict(self._given.distributions)
        with self._lock:
            state = self._state(study)
            space = state.intersection.calculate(study, use_cache=True)
        return {name: dist for name, dist in space.items() if searchable(dist)}

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if self._startup.get(trial_key(trial), False):
            return self._independent_sampler.sample_relative(study, trial, search_space)
        if not search_space:
            return {}
        with self._lock:
            return self._propose(study, trial, search_space)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        if self._given is not None:
            self._given.check(param_name, param_distribution, trial.number)
        startup = self._startup.get(trial_key(trial))
        if startup is None:
            startup = _n_ended(study) < self._n_startup_trials
        if not startup and self._warn_independent_sampling and _n_ended(study):
            reason = _OUTSIDE_INTERSECTION if self._given is None else _OUTSIDE_SPACE
            independent = type(self._independent_sampler).__name__
            message = _INDEPENDENT_WARNING.format(
                param=param_name, number=trial.number, reason=reason, independent=independent
            )
            logger.warning(message)
        return self._independent_sampler.sample_independent(
            study, trial, param_name, param_distribution
        )

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._independent_sampler.before_trial(study, trial)

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        if self._constraints_func is not None:
            process_constraints(self._constraints_func, study, trial, state)
        self._independent_sampler.after_trial(study, trial, state, values)
        self._startup.pop(trial_key(trial), None)
        if self._given is not None:  # a relative value the objective took from another distribution
            for name, dist in trial.distributions.items():
                self._given.check(name, dist, trial.number)

    def tuner(self, study: Study) -> Tuner | None:
        """The :class:`~dsbo.runtime.tuner.Tuner` behind this sampler's proposals for ``study``
        (``None`` before its first proposal), brought up to the study's finished trials: its
        ``result()`` (best trial, Pareto front, ``history``, ``changes_best``) is dsbo's view
        of the study (the parameters named as in dsbo, a categorical by its choice's index)."""
        with self._lock:
            state = self._studies.get(study_key(study))
            if state is None or state.tuner is None or state.space is None:
                return None
            trials = study_trials(study, use_cache=False)
            try:
                state.sync(study, trials, current=-1, running=False)
            except Rebuild:
                self._build(state, study, state.space.distributions, state.constraint_keys)
                state.sync(study, trials, current=-1, running=False)
            return state.tuner

    # ------------------------------------------------------------------ the dsbo side
    def _state(self, study: Study) -> StudyMirror:
        """The study's mirror (one per study and storage, kept across its trials)."""
        key = study_key(study)
        if key not in self._studies:
            self._studies[key] = StudyMirror()
        return self._studies[key]

    def _propose(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        start = time.perf_counter()
        state = self._state(study)
        # the trials as read once for this trial (Optuna's per-trial cache, also what the
        # startup count and the intersection search space were computed from)
        trials = study_trials(study)
        keys = constraint_keys(trials, state.constraint_keys)
        signature = (tuple(sorted(search_space.items())), tuple(study.directions), keys)
        rebuilt = 0.0
        if signature != state.signature:
            self._build(state, study, search_space, keys)
            state.signature, rebuilt = signature, 1.0
        try:
            state.sync(study, trials, trial.number)
        except Rebuild:
            self._build(state, study, search_space, keys)
            state.sync(study, trials, trial.number)
            rebuilt = 1.0
        assert state.tuner is not None and state.space is not None
        fixed = state.space.to_dsbo(trial.system_attrs.get("fixed_params", {}), partial=True)
        if fixed and state.space.complete(fixed):
            return {}  # every searched parameter is given: nothing to propose
        pending = state.tuner.campaign.store.count("pending")
        synced = time.perf_counter()
        if self._design_startup and trial.number < self._n_startup_trials and not fixed:
            # by trial number: no worker repeats one
            suggestion = state.tuner.ask_design_point(trial.number)
        else:
            suggestion = state.tuner.ask(fixed=fixed or None)
        asked = time.perf_counter()
        if suggestion is None:
            return {}
        state.proposed(trial.number, suggestion)
        params = state.space.to_optuna(suggestion.params)  # with space=: the active parameters only
        # shared with the other workers, which see the whole point before the trial suggests it
        share_proposal(study, trial, search_space, params)
        timing = {
            "total": time.perf_counter() - start,
            "dsbo": asked - synced,
            "sync": synced - start,
        }
        self.timings.append({**timing, "rebuilt": rebuilt, "pending": float(pending)})
        return params

    def _build(
        self,
        state: StudyMirror,
        study: Study,
        search_space: dict[str, BaseDistribution],
        keys: tuple[str, ...],
    ) -> None:
        """A fresh Tuner over ``search_space`` for ``state`` (the study's trials are synced
        into it next; :meth:`~dsbo.integrations.optuna_study.StudyMirror.adopt` carries the
        previous Tuner's surrogate fit states over as warm starts)."""
        space = self._given if self._given is not None else OptunaSpace(search_space)
        directions = ["max" if d == StudyDirection.MAXIMIZE else "min" for d in study.directions]
        outcomes: dict[str, Any] = {"direction": directions[0]}
        if len(directions) > 1:
            outcomes = {"objectives": {f"objective_{i}": d for i, d in enumerate(directions)}}
        default = None
        if self._given is not None:
            default = self._default
        elif self._default is not None:
            given = {k: v for k, v in self._default.items() if k in space.names}
            default = space.to_dsbo(given, partial=True)
        # the startup trials are the initial design, but with space=, where they are dsbo's own
        n_init = max(1, self._n_startup_trials) if self._design_startup else 1
        tuner = Tuner(
            space.parameters,
            BUDGET,
            **outcomes,
            constraints=[f"{constraint_name(k)} <= 0" for k in keys],
            default=default or None,
            bonsai=self._bonsai,
            seed=self._seed,
            dry_run=False,
            early_stopping=pruned_trials_model(),
            **{"n_init": n_init, **self._options},
        )
        state.adopt(space, tuner, keys)


def _n_ended(study: Study) -> int:
    """The study's trials that count toward the startup (:data:`STARTUP_STATES`), as read
    once for the trial being sampled (Optuna's per-trial cache)."""
    return len(study_trials(study, states=STARTUP_STATES))


__all__ = [
    "ATTR_MAX_LENGTH",
    "BUDGET",
    "DsboSampler",
    "PARAMS_KEY",
    "SET_BY_STUDY",
    "STARTUP_STATES",
    "pruned_trials_model",
]
