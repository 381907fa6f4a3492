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
``TPESampler`` computes it, single-value distributions left out, as ``GPSampler`` does); ``sample_relative`` proposes all of it at once, and a parameter outside it
(a conditional or dynamic one) is sampled by ``independent_sampler`` with Optuna's warning.

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
startup for good. Those trials are then dsbo's initial design, so its own design (``n_init``) is
a single point, proposed only when none of them completed.

**The data.** The study's trials are imported into the Tuner's in-memory store
(:meth:`~dsbo.runtime.tuner.Tuner.import_trials`; imported trials are never charged):
COMPLETE ones as completed; FAIL as failed; PRUNED as stopped with their intermediate values
(the last one as its value); RUNNING and WAITING trials other than the one being sampled as
pending, so proposals
avoid the points other workers are evaluating (each proposal is also written to its trial's
system attributes, so other workers see the whole point of a running trial before it suggests
its parameters). One Tuner is kept per study and search space and synced by trial number, so
each proposal only imports what changed; its warm-started surrogate fits carry over.

**Pruned trials inform the fit.** The surrogate is fitted on the complete trials and on each
pruned one at the last value it reported (the campaign's early-stopping model ``"last"``,
:func:`pruned_trials_model`: no stopping rule of dsbo's, Optuna's pruner decides). A pruned
trial's last value is a pessimistic stand-in for the value it would have reached, so the
proposals move away from the regions the pruner cut, and never repeat a pruned configuration:
it is an evaluated point, which the acquisition optimizer's ``min_distance`` keeps proposals
away from. ``GPSampler`` and ``BoTorchSampler`` fit the complete trials only, so under a pruner
that prunes most trials they fit little and re-propose the pruned points; TPE ranks pruned
trials below the complete ones. With several objectives or constraint values the surrogate
fits the complete trials only (a pruned trial's curve holds one objective).

**Directions, objectives, constraints.** A minimized or maximized study is searched in its
direction; a multi-objective study as dsbo's objectives ``objective_0``, ``objective_1``, ...
with their directions. Constraint values (``constraints_func``, or ``trial.set_constraint``)
are dsbo outcome constraints ``constraint_<key> <= 0`` (feasible when every value is ``<= 0``,
as in Optuna); a complete trial without them is imported as failed.
"""

from __future__ import annotations

import difflib
import inspect
import json
import logging
import random
import re
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.exceptions import ExperimentalWarning
from optuna.samplers import BaseSampler, QMCSampler
from optuna.samplers._base import _process_constraints_after_trial
from optuna.search_space import IntersectionSearchSpace
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from dsbo.campaign.early_stopping import EarlyStopping
from dsbo.campaign.execution import MAX_SEED
from dsbo.campaign.given_points import ImportedTrial
from dsbo.errors import ConfigError
from dsbo.integrations.optuna_space import DsboSpace, OptunaSpace, searchable
from dsbo.runtime.tuner import Tuner
from dsbo.space import Float, SearchSpace

logger = logging.getLogger(__name__)

#: The Tuner's budget in trials: imported trials are never charged, only this sampler's own
#: proposals, so this is never reached.
BUDGET = 2**31 - 1
#: Trial system attribute (prefix) under which a proposal is shared with other workers.
PARAMS_KEY = "dsbo:relative_params"
#: RDB storages keep system attribute values shorter than 2046 characters.
ATTR_MAX_LENGTH = 2045
#: Tuner options the study or the sampler sets, with what to use instead.
SET_BY_STUDY = {
    "budget": "the study's n_trials", "direction": "the study's direction",
    "objective": "the study", "objectives": "the study's directions",
    "constraints": "constraints_func or trial.set_constraint", "store": "the study's storage",
    "workers": "the study's n_jobs or several processes", "executor": "the study",
    "eval_timeout": "the study", "callbacks": "the study's callbacks", "include_default": "study.enqueue_trial",
    "dry_run": "the sampler (no dry run)", "early_stopping": "an Optuna pruner",
    "max_steps": "an Optuna pruner", "budget_steps": "the study's n_trials", "q": "the study's n_jobs",
}  # fmt: skip
_TUNER_OPTIONS = [p for p in inspect.signature(Tuner.__init__).parameters if p not in ("self", "space")]
_INDEPENDENT_WARNING = (
    "The parameter `{param}` in Trial#{number} is sampled independently using `{independent}` instead "
    "of `DsboSampler`, potentially degrading the optimization performance. This fallback happened "
    "because the parameter is {reason}. You can suppress this warning by setting `warn_independent_sampling` to "
    "`False` in the constructor of `DsboSampler` if this independent sampling is intended behavior."
)
_OUTSIDE_INTERSECTION = "not in the study's intersection search space (a conditional or dynamic parameter)"
_OUTSIDE_SPACE = "not in DsboSampler's space=, or inactive there at the proposed point"
_FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
#: The trial states that end the startup: complete and pruned trials, as ``TPESampler``
#: counts them (the surrogate is fitted on both: :func:`pruned_trials_model`).
STARTUP_STATES = (TrialState.COMPLETE, TrialState.PRUNED)


def pruned_trials_model() -> EarlyStopping:
    """The early-stopping settings of the sampler's Tuner: no rule (the study's pruner
    decides), and the surrogate fitted on the complete trials and on each pruned one at its
    last reported value (model ``"last"``, :func:`dsbo.campaign.early_stopping.training_data`).
    A fresh object for each Tuner: it caches the curves of the trials that ended."""
    return EarlyStopping(rule=None, max_steps=None, model="last")


class _Rebuild(Exception):
    """The study's record and the Tuner's disagree (a trial ended at other parameters than
    those it was recorded at): build the Tuner again from the study."""


@dataclass
class _Known:
    """A study trial the Tuner holds: its dsbo trial id (``None``: left out), its parameters
    (dsbo names) and whether it is finished there."""

    trial_id: int | None
    params: dict[str, Any] | None
    final: bool


@dataclass
class _StudyState:
    """What the sampler keeps for one study: its intersection search space and the Tuner of
    its current search space (``signature``), with the trials the Tuner holds by number."""

    intersection: IntersectionSearchSpace = field(default_factory=lambda: IntersectionSearchSpace(include_pruned=True))
    signature: Any = None
    space: OptunaSpace | DsboSpace | None = None
    tuner: Tuner | None = None
    known: dict[int, _Known] = field(default_factory=dict)
    constraint_keys: tuple[str, ...] = ()


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
                raise ConfigError(f"DsboSampler: {name!r} is not a sampler option: it is set by {SET_BY_STUDY[name]}")
            if name not in _TUNER_OPTIONS:
                close = difflib.get_close_matches(name, [*_TUNER_OPTIONS, "n_startup_trials", "independent_sampler", "constraints_func"], n=1)
                raise ConfigError(f"DsboSampler has no option {name!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        if isinstance(n_startup_trials, bool) or not isinstance(n_startup_trials, int) or n_startup_trials < 0:
            raise ConfigError(f"DsboSampler: n_startup_trials must be an integer >= 0, got {n_startup_trials!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
            raise ConfigError(f"DsboSampler: seed must be None or an integer in [0, {MAX_SEED}], got {seed!r}")
        if independent_sampler is not None and not isinstance(independent_sampler, BaseSampler):
            raise ConfigError(f"DsboSampler: independent_sampler must be an Optuna sampler, got {independent_sampler!r}")
        if constraints_func is not None and not callable(constraints_func):
            raise ConfigError(f"DsboSampler: constraints_func must be callable, got {constraints_func!r}")
        if default is not None and not isinstance(default, Mapping):
            raise ConfigError(f"DsboSampler: default must be a mapping {{name: value}}, got {default!r}")
        if not isinstance(bonsai, bool | Mapping):
            raise ConfigError(f"DsboSampler: bonsai must be true, false or a mapping of BONSAI options, got {bonsai!r}")
        if isinstance(tuner_options.get("optimizer"), Mapping):  # {"min_distance": 0.01, ...}
            from dsbo.acquisition import OptimizerSettings

            try:
                tuner_options["optimizer"] = OptimizerSettings(**tuner_options["optimizer"])
            except TypeError as exc:
                raise ConfigError(f"DsboSampler: optimizer: {exc}") from None
        self._seed = seed if seed is not None else random.SystemRandom().randint(0, MAX_SEED)
        self._options: dict[str, Any] = {"surrogate": surrogate, "acquisition": acquisition, **tuner_options}
        self._default = dict(default) if default is not None else None
        self._bonsai = bonsai
        self._given = DsboSpace(space) if space is not None else None
        self._check_options()
        self._n_startup_trials = n_startup_trials
        #: With ``space=`` and no independent sampler given, trial ``k < n_startup_trials`` is
        #: dsbo's initial-design point ``k`` (the search of dsbo.minimize, trial for trial).
        self._design_startup = space is not None and independent_sampler is None
        if independent_sampler is None:
            with warnings.catch_warnings():  # QMCSampler is "experimental": our default, not the user's choice
                warnings.simplefilter("ignore", ExperimentalWarning)
                independent_sampler = QMCSampler(scramble=True, seed=seed, warn_independent_sampling=False)
        self._independent_sampler = independent_sampler
        self._constraints_func = constraints_func
        self._warn_independent_sampling = warn_independent_sampling
        self._studies: dict[tuple[Any, int], _StudyState] = {}
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
            Tuner(self._given.parameters, BUDGET, seed=self._seed, dry_run=False, default=self._default,
                  bonsai=self._bonsai, early_stopping=pruned_trials_model(), **{"n_init": 1, **self._options})  # fmt: skip
            return
        options = {k: v for k, v in self._options.items() if k != "parameter_constraints"}
        Tuner({"x": Float(0.0, 1.0)}, BUDGET, seed=self._seed, dry_run=False, early_stopping=pruned_trials_model(),
              **{"n_init": 1, **options})  # fmt: skip

    # ------------------------------------------------------------------ Optuna's contract
    def reseed_rng(self) -> None:
        """A new random seed for the independent sampler and for the dsbo searches started
        from now on (Optuna calls this in each thread of ``n_jobs > 1``; a Tuner already
        built keeps its seed and its warm-started fits)."""
        self._independent_sampler.reseed_rng()
        self._seed = random.SystemRandom().randint(0, MAX_SEED)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        startup = _n_ended(study) < self._n_startup_trials and not self._design_startup
        self._startup[trial._trial_id] = startup
        if startup:
            return self._independent_sampler.infer_relative_search_space(study, trial)
        if self._given is not None:
            return dict(self._given.distributions)
        with self._lock:
            state = self._state(study)
            space = state.intersection.calculate(study, use_cache=True)
        return {name: dist for name, dist in space.items() if searchable(dist)}

    def sample_relative(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        if self._startup.get(trial._trial_id, False):
            return self._independent_sampler.sample_relative(study, trial, search_space)
        if not search_space:
            return {}
        with self._lock:
            return self._propose(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution) -> Any:
        if self._given is not None:
            self._given.check(param_name, param_distribution, trial.number)
        startup = self._startup.get(trial._trial_id)
        if startup is None:
            startup = _n_ended(study) < self._n_startup_trials
        if not startup and self._warn_independent_sampling and _n_ended(study):
            reason = _OUTSIDE_INTERSECTION if self._given is None else _OUTSIDE_SPACE
            logger.warning(_INDEPENDENT_WARNING.format(param=param_name, number=trial.number, reason=reason,
                                                       independent=type(self._independent_sampler).__name__))  # fmt: skip
        return self._independent_sampler.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._independent_sampler.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        if self._constraints_func is not None:
            _process_constraints_after_trial(self._constraints_func, study, trial, state)
        self._independent_sampler.after_trial(study, trial, state, values)
        self._startup.pop(trial._trial_id, None)
        if self._given is not None:  # a relative value the objective took from another distribution
            for name, dist in trial.distributions.items():
                self._given.check(name, dist, trial.number)

    def tuner(self, study: Study) -> Tuner | None:
        """The :class:`~dsbo.runtime.tuner.Tuner` behind this sampler's proposals for ``study``
        (``None`` before its first proposal), brought up to the study's finished trials: its
        ``result()`` (best trial, Pareto front, ``history``, ``changes_best``) is dsbo's view
        of the study (the parameters named as in dsbo, a categorical by its choice's index)."""
        with self._lock:
            state = self._studies.get((study._storage, study._study_id))
            if state is None or state.tuner is None or state.space is None:
                return None
            trials = study._get_trials(deepcopy=False, use_cache=False)
            try:
                self._sync(state, study, trials, current=-1, running=False)
            except _Rebuild:
                self._build(state, study, state.space.distributions, state.constraint_keys)
                self._sync(state, study, trials, current=-1, running=False)
            return state.tuner

    # ------------------------------------------------------------------ the dsbo side
    def _state(self, study: Study) -> _StudyState:
        key = (study._storage, study._study_id)
        if key not in self._studies:
            self._studies[key] = _StudyState()
        return self._studies[key]

    def _propose(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        start = time.perf_counter()
        state = self._state(study)
        # the trials as read once for this trial (Optuna's per-trial cache, also what the
        # startup count and the intersection search space were computed from)
        trials = study._get_trials(deepcopy=False, use_cache=True)
        keys = _constraint_keys(trials, state.constraint_keys)
        signature = (tuple(sorted(search_space.items())), tuple(study.directions), keys)
        rebuilt = 0.0
        if signature != state.signature:
            self._build(state, study, search_space, keys)
            state.signature, rebuilt = signature, 1.0
        try:
            self._sync(state, study, trials, trial.number)
        except _Rebuild:
            self._build(state, study, search_space, keys)
            self._sync(state, study, trials, trial.number)
            rebuilt = 1.0
        assert state.tuner is not None and state.space is not None
        fixed = state.space.to_dsbo(trial.system_attrs.get("fixed_params", {}), partial=True)
        if fixed and state.space.complete(fixed):
            return {}  # every searched parameter is given: nothing to propose
        pending = state.tuner.campaign.store.count("pending")
        synced = time.perf_counter()
        if self._design_startup and trial.number < self._n_startup_trials and not fixed:
            suggestion = state.tuner.ask_design_point(trial.number)  # by trial number: no worker repeats one
        else:
            suggestion = state.tuner.ask(fixed=fixed or None)
        asked = time.perf_counter()
        if suggestion is None:
            return {}
        state.known[trial.number] = _Known(suggestion.trial_id, state.space.proposed(suggestion.params), final=False)
        params = state.space.to_optuna(suggestion.params)  # with space=: the active parameters only
        # shared with the other workers, which see the whole point before the trial suggests it
        text = json.dumps({name: search_space[name].to_internal_repr(v) for name, v in params.items()})
        for i in range(0, len(text), ATTR_MAX_LENGTH):
            study._storage.set_trial_system_attr(trial._trial_id, f"{PARAMS_KEY}:{i // ATTR_MAX_LENGTH}", text[i : i + ATTR_MAX_LENGTH])
        self.timings.append({"total": time.perf_counter() - start, "dsbo": asked - synced, "sync": synced - start,
                             "rebuilt": rebuilt, "pending": float(pending)})  # fmt: skip
        return params

    def _build(self, state: _StudyState, study: Study, search_space: dict[str, BaseDistribution], keys: tuple[str, ...]) -> None:
        """A fresh Tuner over ``search_space`` (the study's trials are synced into it next);
        the previous Tuner's surrogate fit states carry over as warm starts."""
        from dsbo.surrogates import warm_start

        space = self._given if self._given is not None else OptunaSpace(search_space)
        directions = ["max" if d == StudyDirection.MAXIMIZE else "min" for d in study.directions]
        outcomes: dict[str, Any] = ({"direction": directions[0]} if len(directions) == 1
                                    else {"objectives": {f"objective_{i}": d for i, d in enumerate(directions)}})  # fmt: skip
        default = None
        if self._given is not None:
            default = self._default
        elif self._default is not None:
            default = space.to_dsbo({k: v for k, v in self._default.items() if k in space.names}, partial=True)
        # the startup trials are the initial design, but with space=, where they are dsbo's own
        options = {"n_init": max(1, self._n_startup_trials) if self._design_startup else 1, **self._options}
        tuner = Tuner(
            space.parameters, BUDGET, **outcomes, constraints=[f"{_constraint_name(k)} <= 0" for k in keys],
            default=default or None, bonsai=self._bonsai, seed=self._seed, dry_run=False,
            early_stopping=pruned_trials_model(), **options,
        )  # fmt: skip
        if state.tuner is not None and state.space is not None and state.space.distributions == space.distributions:
            fits = state.tuner.campaign.store.get_meta(warm_start.META_KEY)
            if fits is not None:
                tuner.campaign.store.set_meta(warm_start.META_KEY, fits)
        state.space, state.tuner, state.known, state.constraint_keys = space, tuner, {}, keys

    def _sync(self, state: _StudyState, study: Study, trials: list[FrozenTrial], current: int, running: bool = True) -> None:
        """Bring the Tuner up to the study: new trials imported (running ones as pending, with
        ``running``), pending ones that ended told."""
        assert state.tuner is not None and state.space is not None
        campaign, space = state.tuner.campaign, state.space
        rows: list[ImportedTrial] = []
        numbers: list[tuple[int, dict[str, Any], bool]] = []
        for t in trials:
            if t.number == current:
                continue
            known = state.known.get(t.number)
            if known is not None and (known.final or not t.state.is_finished()):
                continue
            if known is not None:  # a pending trial that ended
                params = space.to_dsbo(t.params)
                if t.state != TrialState.FAIL and params != known.params:
                    raise _Rebuild
                self._finish(state, t, known)
                continue
            if t.state in _FINISHED:
                params = space.to_dsbo(t.params)  # with space=: its active parameters, checked by import_trials
                if params is None:  # a conditional parameter never suggested: not of this space
                    state.known[t.number] = _Known(None, None, final=True)
                    continue
                rows.append(self._row(state, study, t, params))
                numbers.append((t.number, params, True))
            elif running:  # RUNNING or WAITING: pending where its whole point is known
                params = space.to_dsbo(_running_params(t, space))
                if params is not None and space.complete(params):
                    rows.append(ImportedTrial(params, status="pending", source=f"optuna:{study.study_name}#{t.number}"))
                    numbers.append((t.number, params, False))
        if not rows:
            return
        result = campaign.import_trials(rows)
        refused = {index for index, _ in result.refused}
        accepted = [n for i, n in enumerate(numbers) if i not in refused]
        for (number, params, final), stored in zip(accepted, result.trials, strict=True):
            state.known[number] = _Known(stored.id, params, final=final)
        for index, _ in result.refused:
            state.known[numbers[index][0]] = _Known(None, None, final=True)

    def _row(self, state: _StudyState, study: Study, t: FrozenTrial, params: dict[str, Any]) -> ImportedTrial:
        source = f"optuna:{study.study_name}#{t.number}"
        if t.state == TrialState.COMPLETE:
            values, error = self._values(state, t)
            if error is not None:
                return ImportedTrial(params, status="failed", error=error, source=source)
            return ImportedTrial(params, values, status="completed", source=source)
        if t.state == TrialState.FAIL:
            return ImportedTrial(params, status="failed", error=_fail_reason(t), source=source)
        return ImportedTrial(params, status="stopped", curve=_curve(t), error="pruned in Optuna", source=source)

    def _finish(self, state: _StudyState, t: FrozenTrial, known: _Known) -> None:
        """Record the end of a trial the Tuner holds as pending (its own proposal, or another
        worker's running trial)."""
        assert state.tuner is not None and known.trial_id is not None
        campaign = state.tuner.campaign
        if t.state == TrialState.COMPLETE:
            values, error = self._values(state, t)
            if error is None:
                campaign.tell(known.trial_id, values)
            else:
                campaign.tell(known.trial_id, error=error)
        elif t.state == TrialState.FAIL:
            campaign.tell(known.trial_id, error=_fail_reason(t))
        else:  # PRUNED: stopped with its curve, the last value its value (one objective)
            objective = campaign.problem.outcomes.objectives[0]
            curve = [(step, objective.sign * value + 0.0) for step, value in _curve(t)]
            for step, value in curve:
                campaign.store.report(known.trial_id, step, value)
            single = len(campaign.problem.outcome_names) == 1
            campaign.store.stop(known.trial_id, [curve[-1][1]] if curve and single else None, reason="pruned in Optuna")
        known.final = True

    def _values(self, state: _StudyState, t: FrozenTrial) -> tuple[Any, str | None]:
        """A complete trial's outcomes as the Tuner takes them, or the reason they are unusable."""
        values = list(t.values or [])
        if len(values) == 1 and not state.constraint_keys:
            return values[0], None
        names = [f"objective_{i}" for i in range(len(values))] if len(values) > 1 else ["objective"]
        out: dict[str, Any] = dict(zip(names, values, strict=True))
        constraints = _constraints(t)
        missing = [k for k in state.constraint_keys if k not in constraints]
        if missing:
            return None, f"no value of the constraint(s) {missing} in Optuna"
        out.update({_constraint_name(k): constraints[k] for k in state.constraint_keys})
        return out, None


def _n_ended(study: Study) -> int:
    """The study's trials that count toward the startup (:data:`STARTUP_STATES`), as read
    once for the trial being sampled (Optuna's per-trial cache)."""
    return len(study._get_trials(deepcopy=False, states=STARTUP_STATES, use_cache=True))


def _constraints(t: FrozenTrial) -> dict[str, float]:
    """A trial's constraint values by key (``trial.constraints`` of Optuna 5; Optuna 4 keeps
    the list of ``constraints_func`` under the system attribute ``constraints``)."""
    constraints = getattr(t, "constraints", None)
    if isinstance(constraints, Mapping):
        return dict(constraints)
    listed = t.system_attrs.get("constraints")
    return {str(i): c for i, c in enumerate(listed)} if listed else {}


def _constraint_keys(trials: list[FrozenTrial], known: tuple[str, ...]) -> tuple[str, ...]:
    """The constraint keys of the study's finished trials: the ones known, then new ones in
    the order they appear."""
    keys = list(known)
    for t in trials:
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED):
            keys += [k for k in _constraints(t) if k not in keys]
    return tuple(keys)


def _constraint_name(key: str) -> str:
    name = "constraint_" + re.sub(r"[^A-Za-z0-9_]", "_", key)
    return name


def _running_params(t: FrozenTrial, space: OptunaSpace | DsboSpace) -> dict[str, Any]:
    """The point of a running or waiting trial: its proposal shared by the sampler that made
    it (:data:`PARAMS_KEY`), its enqueued ``fixed_params``, and the parameters suggested so far."""
    chunks, i = [], 0
    while (chunk := t.system_attrs.get(f"{PARAMS_KEY}:{i}")) is not None:
        chunks.append(chunk)
        i += 1
    params: dict[str, Any] = {}
    if chunks:
        for name, internal in json.loads("".join(chunks)).items():
            if name in space.distributions:
                params[name] = space.distributions[name].to_external_repr(internal)
    params.update(t.system_attrs.get("fixed_params", {}))
    params.update(t.params)
    return params


def _curve(t: FrozenTrial) -> list[tuple[int, float]]:
    import math

    return [(int(step), float(v)) for step, v in sorted(t.intermediate_values.items()) if math.isfinite(v)]


def _fail_reason(t: FrozenTrial) -> str:
    reason = t.system_attrs.get("fail_reason")
    return f"failed in Optuna: {reason}" if reason else "failed in Optuna"


__all__ = ["DsboSampler", "STARTUP_STATES", "pruned_trials_model"]
