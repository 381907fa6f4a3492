"""Ray Tune: dsbo's proposals as a Ray Tune searcher.

:class:`DsboSearch` is a ``ray.tune.search.Searcher``: Ray runs the trials (its workers, its
schedulers, its ``num_samples``), and every configuration it runs comes from a
:class:`dsbo.Tuner` that the searcher holds (:attr:`DsboSearch.tuner`), asked once per Ray
trial and told each result.

Example:
    >>> from ray import tune
    >>> from dsbo.integrations.ray import DsboSearch
    >>> tuner = tune.Tuner(train, param_space={"lr": tune.loguniform(1e-4, 1e-1),
    ...                                        "width": tune.lograndint(16, 513)},
    ...                    tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=40,
    ...                                                search_alg=DsboSearch()))
    >>> tuner.fit()

**The space.** Either dsbo parameters given to the searcher (``DsboSearch({"lr":
dsbo.Float(1e-4, 1e-1, log=True), ...})``, the configuration's keys are their names) or Ray's
``param_space``, converted by :func:`convert_search_space`: ``uniform``/``loguniform`` to
``Float``, ``quniform``/``qloguniform`` to ``Float`` on the multiples of ``q`` between the
bounds (as Ray samples them), ``randint``/``lograndint`` to ``Int`` with the upper bound
excluded, ``qrandint``/``qlograndint`` to ``Int`` on the multiples of ``q`` (upper bound
included, except for ``q=1``), ``choice`` to ``Choice``. Nested dicts are flattened: the
parameter ``{"model": {"lr": ...}}`` is named ``model.lr`` in dsbo (a key that is not a dsbo
name is rewritten, ``val/lr`` to ``val_lr``) and the configuration handed to Ray is nested
again; constants stay Ray's (it merges them into every configuration). ``grid_search``,
``sample_from``, ``randn``/``qrandn`` (unbounded) and domains inside lists raise
:class:`~dsbo.errors.ConfigError` naming the parameter.

**Trials.** Ray's running trials are dsbo's pending ones: every new proposal is conditioned
on them (so ``ConcurrencyLimiter(DsboSearch(), max_concurrent=4)`` runs four distinct
configurations at once). ``points_to_evaluate`` are enqueued (:meth:`dsbo.Tuner.enqueue`) and
handed out first. Each intermediate result with the metric and ``time_attr``
(``training_iteration``) is reported to the trial's curve (``Suggestion.report``); the final
result is told: the metric's value, or a failed trial when Ray reports an error, or the result
has no finite value of the metric. ``mode="min"``/``"max"`` is the objective's direction, the
metric its name (rewritten as for parameters where it is not a dsbo name). The Ray trial id is
kept in each dsbo trial's metadata (``ray_trial_id``).

**Trials Ray stops early.** Ray does not tell a searcher why a trial ended, but it tells
it when: a result on which Ray stops the trial (a scheduler such as ``ASHAScheduler`` says
``STOP``, or a ``stop=`` criterion is met) never comes to :meth:`~DsboSearch.on_trial_result`,
only to :meth:`~DsboSearch.on_trial_complete`, while a trainable that returns on its own ends
with its last result repeated (Ray's controller, ``_process_trial_result``). So a trial whose
final result holds a step it had not reported was stopped by Ray: it is recorded as
``stopped``, with its curve and its last value, unless that step is at least ``max_t`` (the
scheduler's ``max_t``, given to the searcher too: ``ASHAScheduler`` stops a trial that reaches
it, fully trained, the same way), which makes it completed. A trial whose trainable returned is
completed at its last value. A trial Ray removes without a result (a paused trial a scheduler
drops, ``HyperBandScheduler``) is stopped with the curve it reported, or failed when it
reported nothing (it has no value to fit). Ray's ``OptunaSearch`` records every one of them as
complete at its last value: a partially trained value then stands as a final one.

The surrogate is fitted on the completed trials and on each stopped one at the last value it
reported (the campaign's early-stopping model ``"last"``, without a rule of dsbo's: Ray's
scheduler decides), a pessimistic stand-in for the value it would have reached, so proposals
move away from the regions the scheduler cut; a stopped trial takes its place in the initial
design like any other. Its best value stays a completed trial's
(:meth:`~dsbo.runtime.tuner.Tuner.result`).

**The budget.** Ray's ``num_samples`` decides how many trials run; the dsbo budget is
unlimited unless ``budget=`` is given, and then :meth:`~DsboSearch.suggest` returns
``Searcher.FINISHED`` once it is spent (enqueued points count against it, imported ones do not).

**Saving.** :meth:`~DsboSearch.save` writes one pickle with the settings, the Ray/dsbo id map
and a copy of the whole store (SQLite); :meth:`~DsboSearch.restore` continues from it (Ray's
``Tuner.restore`` calls both, and pickles the searcher in ``tuner.pkl``). The store is a
SQLite file of the searcher's own, in a temporary directory removed with the searcher, or the
file ``store=`` names (kept; a restore reopens it when it exists, else writes the copy there).
"""

from __future__ import annotations

import contextlib
import logging
import math
import pickle
import re
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ray.tune.search import Searcher
from ray.tune.search.sample import Categorical, Domain, Integer, LogUniform, Quantized, Uniform
from ray.tune.search.sample import Float as RayFloat

from dsbo.campaign.early_stopping import EarlyStopping
from dsbo.campaign.given_points import ImportedTrial
from dsbo.errors import ConfigError, DsboError, OutcomeError
from dsbo.runtime.tuner import Tuner
from dsbo.space import Choice, Float, Int, Parameter, SearchSpace
from dsbo.storage import IMPORTED

logger = logging.getLogger(__name__)

#: The dsbo budget when none is given: Ray's ``num_samples`` ends the search.
UNLIMITED = 2**31 - 1
#: Tuner options a Ray searcher cannot honour (Ray runs the trials and its schedulers stop them).
RAY_RUNS = ("direction", "objective", "objectives", "workers", "executor", "eval_timeout", "early_stopping",
            "max_steps", "budget_steps", "dry_run")  # fmt: skip
#: Proposals in a row that may come back failed (their cost could not be computed) before
#: :meth:`DsboSearch.suggest` returns ``None`` for now.
MAX_FAILED_PROPOSALS = 10
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.]")


def dsbo_name(key: str) -> str:
    """``key`` as a dsbo parameter or outcome name: each character a name cannot hold becomes
    ``_``, and a name that does not start with a letter or ``_`` gets one in front."""
    name = _NOT_A_NAME.sub("_", str(key))
    return name if re.match(r"[A-Za-z_]", name) else f"_{name}"


def _domain_to_parameter(domain: Domain, name: str) -> Parameter:
    """The dsbo parameter of one Ray domain (the module docstring's table)."""
    if isinstance(domain, Categorical):
        if domain.is_grid():
            raise ConfigError(f"param_space {name!r}: grid_search cannot be searched by DsboSearch; give it as tune.choice")
        return Choice(list(domain.categories))
    if not isinstance(domain, RayFloat | Integer):
        raise ConfigError(f"param_space {name!r}: {type(domain).__name__} domains (tune.sample_from) cannot be searched "
                          "by DsboSearch; use uniform, loguniform, quniform, randint, lograndint, qrandint or choice")  # fmt: skip
    sampler, q = domain.get_sampler(), None
    if isinstance(sampler, Quantized):
        sampler, q = sampler.get_sampler(), sampler.q
    if not isinstance(sampler, Uniform | LogUniform):
        raise ConfigError(f"param_space {name!r}: {type(sampler).__name__.lstrip('_')} sampling (tune.randn, tune.qrandn) is "
                          "unbounded; DsboSearch needs bounds (uniform, loguniform, randint, ...)")  # fmt: skip
    log, low, high = isinstance(sampler, LogUniform), domain.lower, domain.upper
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ConfigError(f"param_space {name!r}: the bounds ({low}, {high}) must be finite")
    if isinstance(domain, Integer):
        if q is not None and (isinstance(q, bool) or int(q) != q or q < 1):
            raise ConfigError(f"param_space {name!r}: an integer domain's q must be an integer >= 1, got {q!r}")
        step = 1 if q is None else int(q)
        # Ray: the upper bound is excluded, except for qrandint/qlograndint with q > 1
        top = high - 1 if step == 1 else high
        low, high = math.ceil(low / step) * step, math.floor(top / step) * step
        return _checked(name, lambda: Int(int(low), int(high), log=log, step=step))
    if q is not None:  # Ray samples the multiples of q between the bounds
        low, high = round(math.ceil(low / q - 1e-9) * q, 12), round(math.floor(high / q + 1e-9) * q, 12)
    return _checked(name, lambda: Float(float(low), float(high), log=log, step=None if q is None else float(q)))


def _checked(name: str, make: Any) -> Parameter:
    try:
        return make()
    except ConfigError as exc:
        raise ConfigError(f"param_space {name!r}: {exc}") from None


def _leaves(spec: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """``(path, value)`` of every leaf of a nested param_space (a grid_search dict is a leaf)."""
    for key, value in spec.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and value and set(value) != {"grid_search"}:
            yield from _leaves(value, path)
        else:
            yield path, value


def _searched(value: Any) -> bool:
    """Whether a param_space leaf is something to search (a domain or a grid), not a constant."""
    if isinstance(value, Domain) or (isinstance(value, Mapping) and set(value) == {"grid_search"}):
        return True
    if isinstance(value, list | tuple):
        return any(_searched(v) or (isinstance(v, Mapping) and any(_searched(x) for _, x in _leaves(v))) for v in value)
    return False


def convert_search_space(spec: Mapping[str, Any]) -> tuple[dict[str, Parameter], dict[str, tuple[str, ...]]]:
    """A Ray Tune ``param_space`` as dsbo parameters ``{name: parameter}`` and each one's path
    in the nested configuration ``{name: keys}``; constants are left out.

    Raises:
        ConfigError: naming the first parameter DsboSearch cannot search.
    """
    space: dict[str, Parameter] = {}
    paths: dict[str, tuple[str, ...]] = {}
    for path, value in _leaves(spec):
        where = "/".join(map(str, path))
        if isinstance(value, Mapping) and set(value) == {"grid_search"}:
            raise ConfigError(f"param_space {where!r}: grid_search cannot be searched by DsboSearch; give it as tune.choice")
        if isinstance(value, list | tuple) and _searched(value):
            raise ConfigError(f"param_space {where!r}: a list holding search domains cannot be searched by DsboSearch; "
                              "give each domain its own key")  # fmt: skip
        if not isinstance(value, Domain):
            continue
        name = base = dsbo_name(".".join(map(str, path)))
        k = 2
        while name in space:
            name, k = f"{base}_{k}", k + 1
        space[name], paths[name] = _domain_to_parameter(value, where), tuple(path)
    return space, paths


def _lookup(config: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(config, Mapping) or key not in config:
            raise KeyError(key)
        config = config[key]
    return config


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Torch's intra-op threads at ``threads`` (the Tuner's setting) while dsbo proposes."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _snapshot(path: str) -> bytes:
    """A consistent copy of the SQLite store at ``path`` (committed data, WAL included)."""
    source, copy = sqlite3.connect(path), sqlite3.connect(":memory:")
    try:
        source.backup(copy)
        return copy.serialize()
    finally:
        source.close()
        copy.close()


def _write_snapshot(data: bytes, path: str) -> None:
    """The store :func:`_snapshot` copied, written to ``path`` (a whole database image)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(data)


def _release(store: Any, directory: str | None) -> None:
    """Close the store; remove the searcher's own temporary directory."""
    with contextlib.suppress(Exception):
        store.close()
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class DsboSearch(Searcher):
    """A Ray Tune searcher whose every configuration is a dsbo proposal (module docstring).

    Args:
        space: ``{name: dsbo.Float/Int/Choice/Fixed}`` (or a :class:`~dsbo.space.SearchSpace`,
            or a Ray param_space, converted), or ``None`` to take Ray's ``param_space``.
        metric: The result key to optimize (or TuneConfig's ``metric``).
        mode: ``"min"`` or ``"max"`` (or TuneConfig's ``mode``).
        points_to_evaluate: Configurations (as Ray hands them to the trainable) to run first.
        seed: The search's seed (:class:`dsbo.Tuner`, as are the next five).
        surrogate: ``"auto"``: an exact GP up to 10 parameters, MAP-SAAS above.
        acquisition: ``"auto"``: qLogNEI.
        default: The default configuration ``{name: value}`` (dsbo names).
        bonsai: ``True`` or BONSAI's options: sparse proposals toward ``default``.
        n_init: Quasi-random initial points.
        budget: The dsbo trials at most (``FINISHED`` after them); ``None``: Ray's
            ``num_samples`` decides.
        store: A SQLite file for the record (default: a temporary one, removed with the
            searcher).
        time_attr: The result key that counts the steps of a trial's curve (the scheduler's).
        max_t: The ``time_attr`` of a fully trained trial (the scheduler's ``max_t``): a trial
            Ray stops at a step below it is stopped, one it stops there is completed; ``None``:
            every trial Ray stops at a result is stopped (module docstring).
        tuner_options: Other :class:`dsbo.Tuner` options (``constraints``, ``optimizer``,
            ``outcome_warping``, ``q``, ``threads``, ...); those of :data:`RAY_RUNS` are Ray's
            business and refused.

    Raises:
        ConfigError: for a bad setting, an option of :data:`RAY_RUNS`, or a space it cannot search.
    """

    def __init__(
        self,
        space: Mapping[str, Any] | SearchSpace | None = None,
        metric: str | None = None,
        mode: str | None = None,
        points_to_evaluate: Sequence[Mapping[str, Any]] | None = None,
        seed: int = 0,
        surrogate: Any = "auto",
        acquisition: Any = "auto",
        default: Mapping[str, Any] | None = None,
        bonsai: bool | Mapping[str, Any] = False,
        n_init: int | None = None,
        *,
        budget: int | None = None,
        store: str | Path | None = None,
        time_attr: str = "training_iteration",
        max_t: int | None = None,
        **tuner_options: Any,
    ) -> None:
        _check_mode(mode)
        if max_t is not None and (isinstance(max_t, bool) or not isinstance(max_t, int) or max_t < 1):
            raise ConfigError(f"DsboSearch: max_t must be None or an integer >= 1, got {max_t!r}")
        super().__init__(metric=metric, mode=mode)
        refused = [name for name in tuner_options if name in RAY_RUNS]
        if refused:
            raise ConfigError(f"DsboSearch does not take {', '.join(refused)}: Ray runs the trials (metric/mode give "
                              "the objective, ConcurrencyLimiter the workers, a scheduler such as ASHAScheduler stops "
                              "trials early)")  # fmt: skip
        if store is not None and (not isinstance(store, str | Path) or str(store).startswith(("postgres", ":memory:"))):
            raise ConfigError(f"DsboSearch keeps its record in a SQLite file: store= must be a file path, got {store!r}")
        self._options = dict(tuner_options, seed=seed, surrogate=surrogate, acquisition=acquisition,
                             default=default, bonsai=bonsai, n_init=n_init, budget=budget)  # fmt: skip
        self._store = None if store is None else str(store)
        self._time_attr, self._max_t = time_attr, max_t
        self._points = [dict(p) for p in points_to_evaluate or ()]
        self._space: dict[str, Parameter] | SearchSpace | None = None
        self._paths: dict[str, tuple[str, ...]] = {}
        if space is not None:
            self._set_space(space)
        self._reset()
        self._setup_if_ready()

    # ------------------------------------------------------------------ setup
    def _reset(self) -> None:
        self.tuner: Tuner | None = None
        #: Ray trial id -> dsbo trial id, and back.
        self._ray_to_dsbo: dict[str, int] = {}
        self._dsbo_to_ray: dict[int, str] = {}
        self._running: dict[int, Any] = {}
        self._dir: str | None = None
        self._finalizer: Any = None

    def _set_space(self, space: Mapping[str, Any] | SearchSpace) -> None:
        if isinstance(space, Mapping) and any(_searched(v) for _, v in _leaves(space)):
            self._space, self._paths = convert_search_space(space)
        else:
            self._space = space if isinstance(space, SearchSpace) else dict(space)
            self._paths = {name: (name,) for name in (space.names if isinstance(space, SearchSpace) else space)}

    @property
    def objective(self) -> str | None:
        """The dsbo name of the metric (the metric itself when it is a dsbo name)."""
        return None if self._metric is None else dsbo_name(self._metric)

    def set_search_properties(self, metric: str | None, mode: str | None, config: Mapping[str, Any], **spec: Any) -> bool:
        """Take TuneConfig's ``metric``/``mode`` where the searcher has none, and Ray's
        ``param_space`` unless the searcher was given a space (then ``False`` when the
        param_space holds domains: Ray refuses the run)."""
        _check_mode(mode)
        if self._space is not None and any(_searched(v) for _, v in _leaves(config)):
            try:  # the same param_space again (Ray's Tuner.restore(..., param_space=...)) is fine
                same = convert_search_space(config) == (self._space, self._paths)
            except ConfigError:
                same = False
            if not same:
                return False
        if self.tuner is not None and ((metric and metric != self._metric) or (mode and mode != self._mode)):
            return False  # the searcher is set up (restored) for another objective
        self._metric, self._mode = self._metric or metric, self._mode or mode
        if self._space is None:
            self._set_space(config)
            if not self._space:
                raise ConfigError("DsboSearch has nothing to search: give it a space or Ray a param_space with domains")
        self._setup_if_ready()
        return True

    def _setup_if_ready(self) -> None:
        if self.tuner is not None or self._space is None or not self._metric or not self._mode:
            return
        self._build(enqueue=True)

    def _build(self, enqueue: bool, snapshot: bytes | None = None) -> None:
        """The dsbo Tuner over the store (fresh, reopened, or written from ``snapshot``)."""
        options = dict(self._options)
        budget = options.pop("budget") or UNLIMITED
        path = self._store
        directory = None
        if path is None:
            directory = tempfile.mkdtemp(prefix="dsbo-ray-")
            path = str(Path(directory) / "store.db")
        if snapshot is not None and not Path(path).exists():
            _write_snapshot(snapshot, path)
        fresh = not Path(path).exists()
        try:
            # Ray's scheduler stops trials; the surrogate fits the stopped ones at their last value
            tuner = Tuner(self._space, budget, direction=f"{self._mode}imize", objective=self.objective, store=path,
                          dry_run=False, early_stopping=EarlyStopping(None, None, model="last"), **options)  # fmt: skip
        except BaseException:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
            raise
        self.tuner, self._dir = tuner, directory
        self._finalizer = weakref.finalize(self, _release, tuner.campaign.store, directory)
        if enqueue and fresh:  # a reopened store holds its enqueued points already
            for point in self._points:
                tuner.enqueue(self._params(point, "points_to_evaluate"))

    def _ready(self) -> Tuner:
        self._setup_if_ready()
        if self.tuner is None:
            missing = [what for what, v in (("a space", self._space), ("metric", self._metric), ("mode", self._mode)) if not v]
            raise ConfigError(f"DsboSearch has no {' nor '.join(missing)}: give it to DsboSearch or to TuneConfig / param_space")
        return self.tuner

    def _params(self, config: Mapping[str, Any], what: str) -> dict[str, Any]:
        """dsbo's ``{name: value}`` of a configuration as Ray hands it to the trainable."""
        params = {}
        for name, path in self._paths.items():
            try:
                params[name] = _lookup(config, path)
            except KeyError:
                raise ConfigError(f"{what}: {dict(config)!r} has no value for {'/'.join(path)!r}") from None
        return params

    def _config(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The configuration Ray hands the trainable (nested as the param_space was)."""
        config: dict[str, Any] = {}
        for name, value in params.items():
            path = self._paths.get(name, (name,))
            node = config
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
        return config

    # ------------------------------------------------------------------ Ray's protocol
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        """The configuration of Ray's trial ``trial_id``: an enqueued point not yet handed out,
        else a new dsbo proposal conditioned on every running trial; ``Searcher.FINISHED``
        once the dsbo budget is spent; ``None`` when every proposal failed for now."""
        tuner = self._ready()
        store = tuner.campaign.store
        if trial_id in self._ray_to_dsbo:  # asked again for a trial it already has
            return self._config(tuner.campaign.problem.params(store.get(self._ray_to_dsbo[trial_id]).x))
        waiting = [t for t in store.trials("pending") if t.id not in self._dsbo_to_ray and t.generator != IMPORTED]
        trial = waiting[0] if waiting else None
        for _ in range(MAX_FAILED_PROPOSALS if trial is None else 0):
            with _torch_threads(tuner.threads):
                new = tuner.campaign.ask(q=1)
            if not new:
                return Searcher.FINISHED
            trial = next((t for t in new if t.status == "pending"), None)  # a failed cost is recorded already
            if trial is not None:
                break
        if trial is None:
            return None
        self._ray_to_dsbo[trial_id], self._dsbo_to_ray[trial.id] = trial.id, trial_id
        store.update_metadata(trial.id, ray_trial_id=trial_id)
        return self._config(tuner.campaign.problem.params(trial.x))

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        """Report the metric at ``result[time_attr]`` to the trial's curve (a result without
        them, or with a value that is not finite, or a step already reported, is skipped)."""
        tuner, trial = self.tuner, self._ray_to_dsbo.get(trial_id)
        if tuner is None or trial is None or self._metric not in result:
            return
        step, value = result.get(self._time_attr), result[self._metric]
        if isinstance(step, bool) or not isinstance(step, int | float) or int(step) != step:
            return
        number, finite = _finite(value)
        if not finite:
            return
        running = self._running.get(trial)
        if running is None:
            if tuner.campaign.store.get(trial).status != "pending":
                return
            running = self._running[trial] = tuner.campaign.running(trial)
        if running.last_step is not None and step <= running.last_step:
            return  # the final result repeats the last one
        try:
            running.report(int(step), number)
        except DsboError as exc:
            logger.warning("Ray trial %s: its result at %s=%s was not recorded: %s", trial_id, self._time_attr, step, exc)

    def on_trial_complete(self, trial_id: str, result: Mapping[str, Any] | None = None, error: bool = False) -> None:
        """Tell the trial's outcome (module docstring): stopped with its curve when Ray stopped
        it early (at a result it had not reported, below ``max_t``; or without a result, after
        reporting); else completed at the metric of its last result; or failed (Ray's error, no
        result and no curve, a missing or non-finite metric)."""
        tuner, trial = self.tuner, self._ray_to_dsbo.get(trial_id)
        if tuner is None or trial is None:
            return
        before = self._last_step(trial)
        if result and not error:  # the result Ray stopped it at never came to on_trial_result
            self.on_trial_result(trial_id, result)
        after = self._last_step(trial)
        self._running.pop(trial, None)
        if tuner.campaign.store.get(trial).status != "pending":
            logger.warning("Ray trial %s (dsbo trial %d) was already told; this completion is ignored", trial_id, trial)
            return
        if error:
            tuner.tell(trial, error=f"Ray trial {trial_id} raised an error")
            return
        if not result and after is not None:
            self._stop(trial, f"Ray removed trial {trial_id} at {self._time_attr}={after} without a final result")
            return
        if not result:
            tuner.tell(trial, error=f"Ray ended trial {trial_id} before it reported a result")
            return
        if after is not None and after != before and (self._max_t is None or after < self._max_t):
            self._stop(trial, f"Ray stopped trial {trial_id} at {self._time_attr}={after} (a scheduler or stop=)")
            return
        keys = {name: self._metric if name == self.objective else name for name in tuner.outcomes.metrics}
        missing = [key for key in keys.values() if key not in result]
        if missing:
            tuner.tell(trial, error=f"the result of Ray trial {trial_id} has no {', '.join(map(repr, missing))}")
            return
        values = {name: result[key] for name, key in keys.items()}
        try:
            tuner.tell(trial, values[self.objective] if len(values) == 1 else values)
        except OutcomeError as exc:  # not a number: nothing was recorded
            tuner.tell(trial, error=f"the result of Ray trial {trial_id} is not usable: {exc}")

    def _last_step(self, trial: int) -> int | None:
        """The last step of the trial's curve (reported by :meth:`on_trial_result`, before a
        restore too), ``None`` before any."""
        running = self._running.get(trial)
        if running is not None:
            return running.last_step
        curve = self._ready().campaign.store.curves([trial]).get(trial, [])
        return curve[-1][0] if curve else None

    def _stop(self, trial: int, reason: str) -> None:
        """Record a trial Ray stopped early as ``stopped``: its last reported value (in the
        store's direction) its value, with one outcome."""
        campaign = self._ready().campaign
        curve = campaign.store.curves([trial]).get(trial, [])
        single = len(campaign.problem.outcome_names) == 1
        campaign.store.stop(trial, [curve[-1][1]] if curve and single else None, budget=campaign.budget, reason=reason)

    def add_evaluated_point(
        self,
        parameters: Mapping[str, Any],
        value: float | None,
        error: bool = False,
        pruned: bool = False,
        intermediate_values: Sequence[float] | None = None,
    ) -> None:
        """Bring in a trial run outside this search (a configuration as Ray hands it to the
        trainable, and its metric) as prior data (:meth:`dsbo.Tuner.import_trials`: not
        charged to the budget). ``error``: a failed trial; ``pruned``: stopped early at
        ``value`` (or its last intermediate value); a missing or non-finite ``value`` of a
        finished trial is a failed one. ``intermediate_values`` are its curve, steps 1, 2, ...

        Raises:
            ConfigError: if the configuration is not a point of the space.
        """
        tuner = self._ready()
        number, finite = _finite(value)
        status, why = "completed", None
        if error:
            status, why = "failed", "failed in Ray"
        elif pruned:
            status = "stopped"
        elif not finite:
            status, why = "failed", f"no finite value of {self._metric}: {value!r}"
        curve = [(step, v) for step, (v, ok) in enumerate(map(_finite, intermediate_values or ()), start=1) if ok]
        row = ImportedTrial(self._params(parameters, "add_evaluated_point"), number if finite and not error else None,
                            status, why, curve, "ray")  # fmt: skip
        tuner.import_trials([row], strict=True)

    # ------------------------------------------------------------------ saving
    def _state(self) -> dict[str, Any]:
        tuner = self.tuner
        return {
            "metric": self._metric, "mode": self._mode, "options": self._options, "store": self._store,
            "time_attr": self._time_attr, "max_t": self._max_t, "points": self._points, "space": self._space, "paths": self._paths,
            "ray_to_dsbo": dict(self._ray_to_dsbo),
            "snapshot": None if tuner is None else _snapshot(tuner.campaign.store.path),
        }  # fmt: skip

    def _set_state(self, state: Mapping[str, Any]) -> None:
        if getattr(self, "_finalizer", None) is not None:
            self._finalizer()  # the store this searcher had: closed (and removed if its own)
        self._metric, self._mode, self._options = state["metric"], state["mode"], dict(state["options"])
        self._store, self._time_attr, self._points = state["store"], state["time_attr"], list(state["points"])
        self._max_t = state.get("max_t")  # a state saved before max_t existed has none
        self._space, self._paths = state["space"], dict(state["paths"])
        self._reset()
        if state["snapshot"] is not None:
            self._build(enqueue=False, snapshot=state["snapshot"])
            self._ray_to_dsbo = dict(state["ray_to_dsbo"])
            self._dsbo_to_ray = {v: k for k, v in self._ray_to_dsbo.items()}

    def save(self, checkpoint_path: str) -> None:
        """Write the whole state to ``checkpoint_path``: the settings, the space, the id map
        and a copy of the store."""
        with open(checkpoint_path, "wb") as handle:
            pickle.dump(self._state(), handle)

    def restore(self, checkpoint_path: str) -> None:
        """Continue from what :meth:`save` wrote (this searcher's own settings are replaced).

        Raises:
            StoreLockedError: if ``store=`` names a file another open searcher still writes.
        """
        with open(checkpoint_path, "rb") as handle:
            self._set_state(pickle.load(handle))

    def __getstate__(self) -> dict[str, Any]:  # Ray pickles the searcher (tuner.pkl)
        return self._state()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._finalizer = None
        self._set_state(state)


def _finite(value: Any) -> tuple[float, bool]:
    """``value`` as a float (NaN if it is not a number) and whether it is finite."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan, False
    return number, math.isfinite(number)


def _check_mode(mode: Any) -> None:
    if mode is not None and mode not in ("min", "max"):
        raise ConfigError(f"DsboSearch: mode must be 'min' or 'max' (one metric), got {mode!r}")


__all__ = ["DsboSearch", "RAY_RUNS", "UNLIMITED", "convert_search_space", "dsbo_name"]
