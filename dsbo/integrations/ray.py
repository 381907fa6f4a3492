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

**The space** is dsbo parameters given to the searcher, or Ray's ``param_space`` converted
to them (:mod:`dsbo.integrations.ray_space`: ``uniform`` to ``Float``, ``randint`` to ``Int``,
``choice`` to ``Choice``, ..., nested dicts flattened; what DsboSearch cannot search is a
:class:`~dsbo.errors.ConfigError` naming the parameter).

**Trials** (:mod:`dsbo.integrations.ray_trials`). Ray's running trials are dsbo's pending ones,
so every proposal avoids them. ``points_to_evaluate`` are enqueued
(:meth:`dsbo.Tuner.enqueue`) and handed out first. Each result with the metric and
``time_attr`` goes to the trial's curve, the last one is its value. A trial that Ray stops
early (its scheduler, or a ``stop=`` criterion) is dsbo's ``stopped`` trial with its curve,
and completed when it reached ``max_t`` (the scheduler's, given to the searcher too); the
surrogate is fitted on the completed trials and on each stopped one at its last value.

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
import pickle
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ray.tune.search import Searcher

from dsbo.campaign.given_points import ImportedTrial
from dsbo.errors import ConfigError
from dsbo.integrations.ray_space import (
    config_of,
    convert_search_space,
    dsbo_name,
    has_domains,
    params_of,
)
from dsbo.integrations.ray_trials import RayTrials, finite, stopped_trials_model
from dsbo.runtime.tuner import Tuner
from dsbo.space import Parameter, SearchSpace
from dsbo.storage import IMPORTED

#: The dsbo budget when none is given: Ray's ``num_samples`` ends the search.
UNLIMITED = 2**31 - 1
#: Tuner options a Ray searcher cannot honour (Ray runs the trials and its schedulers stop them).
RAY_RUNS = (
    "direction",
    "objective",
    "objectives",
    "workers",
    "executor",
    "eval_timeout",
    "early_stopping",
    "max_steps",
    "budget_steps",
    "dry_run",
)
#: Proposals in a row that may come back failed (their cost could not be computed) before
#: :meth:`DsboSearch.suggest` returns ``None`` for now.
MAX_FAILED_PROPOSALS = 10


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
        if max_t is not None and (
            isinstance(max_t, bool) or not isinstance(max_t, int) or max_t < 1
        ):
            raise ConfigError(f"DsboSearch: max_t must be None or an integer >= 1, got {max_t!r}")
        super().__init__(metric=metric, mode=mode)
        refused = [name for name in tuner_options if name in RAY_RUNS]
        if refused:
            raise ConfigError(
                f"DsboSearch does not take {', '.join(refused)}: Ray runs the trials (metric/mode "
                "give the objective, ConcurrencyLimiter the workers, a scheduler such as "
                "ASHAScheduler stops trials early)"
            )
        not_a_file = str(store).startswith(("postgres", ":memory:"))
        if store is not None and (not isinstance(store, str | Path) or not_a_file):
            raise ConfigError(
                "DsboSearch keeps its record in a SQLite file: store= must be a file path, "
                f"got {store!r}"
            )
        self._options = dict(
            tuner_options,
            seed=seed,
            surrogate=surrogate,
            acquisition=acquisition,
            default=default,
            bonsai=bonsai,
            n_init=n_init,
            budget=budget,
        )
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
        """No Tuner yet (it is built once the space, metric and mode are known)."""
        self.tuner: Tuner | None = None
        #: Ray's trials as the Tuner's (:class:`~dsbo.integrations.ray_trials.RayTrials`).
        self.trials: RayTrials | None = None
        self._dir: str | None = None
        self._finalizer: Any = None

    def _set_space(self, space: Mapping[str, Any] | SearchSpace) -> None:
        """dsbo parameters, or a Ray param_space converted to them (with their paths)."""
        if isinstance(space, Mapping) and has_domains(space):
            self._space, self._paths = convert_search_space(space)
        else:
            self._space = space if isinstance(space, SearchSpace) else dict(space)
            names = space.names if isinstance(space, SearchSpace) else space
            self._paths = {name: (name,) for name in names}

    @property
    def objective(self) -> str | None:
        """The dsbo name of the metric (the metric itself when it is a dsbo name)."""
        return None if self._metric is None else dsbo_name(self._metric)

    def set_search_properties(
        self, metric: str | None, mode: str | None, config: Mapping[str, Any], **spec: Any
    ) -> bool:
        """Take TuneConfig's ``metric``/``mode`` where the searcher has none, and Ray's
        ``param_space`` unless the searcher was given a space (then ``False`` when the
        param_space holds domains: Ray refuses the run)."""
        _check_mode(mode)
        if self._space is not None and has_domains(config):
            try:  # the same param_space again (Ray's Tuner.restore(..., param_space=...)) is fine
                same = convert_search_space(config) == (self._space, self._paths)
            except ConfigError:
                same = False
            if not same:
                return False
        other = (metric and metric != self._metric) or (mode and mode != self._mode)
        if self.tuner is not None and other:
            return False  # the searcher is set up (restored) for another objective
        self._metric, self._mode = self._metric or metric, self._mode or mode
        if self._space is None:
            self._set_space(config)
            if not self._space:
                raise ConfigError(
                    "DsboSearch has nothing to search: give it a space or Ray a param_space with "
                    "domains"
                )
        self._setup_if_ready()
        return True

    def _setup_if_ready(self) -> None:
        if self.tuner is not None or self._space is None or not self._metric or not self._mode:
            return
        self._build(enqueue=True)

    def _build(
        self,
        enqueue: bool,
        snapshot: bytes | None = None,
        ray_to_dsbo: Mapping[str, int] | None = None,
    ) -> None:
        """The dsbo Tuner over the store (fresh, reopened, or written from ``snapshot``), and
        its Ray trials (``ray_to_dsbo``: those of a restored searcher)."""
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
            tuner = Tuner(
                self._space,
                budget,
                direction=f"{self._mode}imize",
                objective=self.objective,
                store=path,
                dry_run=False,
                early_stopping=stopped_trials_model(),
                **options,
            )
        except BaseException:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
            raise
        self.tuner, self._dir = tuner, directory
        assert self._metric is not None  # the Tuner is built once it is known
        self.trials = RayTrials(tuner, self._metric, self._time_attr, self._max_t, ray_to_dsbo)
        self._finalizer = weakref.finalize(self, _release, tuner.campaign.store, directory)
        if enqueue and fresh:  # a reopened store holds its enqueued points already
            for point in self._points:
                tuner.enqueue(params_of(point, self._paths, "points_to_evaluate"))

    def _ready(self) -> tuple[Tuner, RayTrials]:
        """The Tuner and its Ray trials, built now if they can be.

        Raises:
            ConfigError: naming what the searcher still lacks (a space, metric, mode).
        """
        self._setup_if_ready()
        if self.tuner is None or self.trials is None:
            needs = (("a space", self._space), ("metric", self._metric), ("mode", self._mode))
            missing = " nor ".join(what for what, value in needs if not value)
            raise ConfigError(
                f"DsboSearch has no {missing}: give it to DsboSearch or to TuneConfig / param_space"
            )
        return self.tuner, self.trials

    # ------------------------------------------------------------------ Ray's protocol
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        """The configuration of Ray's trial ``trial_id``: an enqueued point not yet handed out,
        else a new dsbo proposal conditioned on every running trial; ``Searcher.FINISHED``
        once the dsbo budget is spent; ``None`` when every proposal failed for now."""
        tuner, trials = self._ready()
        store, problem = tuner.campaign.store, tuner.campaign.problem
        if trial_id in trials.ray_to_dsbo:  # asked again for a trial it already has
            return config_of(problem.params(store.get(trials.ray_to_dsbo[trial_id]).x), self._paths)
        waiting = [
            t
            for t in store.trials("pending")
            if t.id not in trials.dsbo_to_ray and t.generator != IMPORTED
        ]
        trial = waiting[0] if waiting else None
        for _ in range(MAX_FAILED_PROPOSALS if trial is None else 0):
            with _torch_threads(tuner.threads):
                new = tuner.campaign.ask(q=1)
            if not new:
                return Searcher.FINISHED
            # a failed cost is recorded already
            trial = next((t for t in new if t.status == "pending"), None)
            if trial is not None:
                break
        if trial is None:
            return None
        trials.add(trial_id, trial.id)
        return config_of(problem.params(trial.x), self._paths)

    def on_trial_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        """Report the metric at ``result[time_attr]`` to the trial's curve
        (:meth:`~dsbo.integrations.ray_trials.RayTrials.report`)."""
        if self.trials is not None:
            self.trials.report(trial_id, result)

    def on_trial_complete(
        self, trial_id: str, result: Mapping[str, Any] | None = None, error: bool = False
    ) -> None:
        """Record how the trial ended (:meth:`~dsbo.integrations.ray_trials.RayTrials.complete`):
        stopped with its curve when Ray stopped it early, completed at the metric of its last
        result, or failed."""
        if self.trials is not None:
            self.trials.complete(trial_id, result, error)

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
        tuner, _ = self._ready()
        number, ok = finite(value)
        status, why = "completed", None
        if error:
            status, why = "failed", "failed in Ray"
        elif pruned:
            status = "stopped"
        elif not ok:
            status, why = "failed", f"no finite value of {self._metric}: {value!r}"
        values = enumerate(map(finite, intermediate_values or ()), start=1)
        curve = [(step, v) for step, (v, fine) in values if fine]
        params = params_of(parameters, self._paths, "add_evaluated_point")
        row = ImportedTrial(params, number if ok and not error else None, status, why, curve, "ray")
        tuner.import_trials([row], strict=True)

    # ------------------------------------------------------------------ saving
    def _state(self) -> dict[str, Any]:
        """Everything a restore needs: the settings, the space, the id map, the store's copy."""
        tuner = self.tuner
        return {
            "metric": self._metric,
            "mode": self._mode,
            "options": self._options,
            "store": self._store,
            "time_attr": self._time_attr,
            "max_t": self._max_t,
            "points": self._points,
            "space": self._space,
            "paths": self._paths,
            "ray_to_dsbo": {} if self.trials is None else dict(self.trials.ray_to_dsbo),
            "snapshot": None if tuner is None else _snapshot(tuner.campaign.store.path),
        }

    def _set_state(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`_state` (the store this searcher had is closed first)."""
        if getattr(self, "_finalizer", None) is not None:
            self._finalizer()  # the store this searcher had: closed (and removed if its own)
        self._metric, self._mode = state["metric"], state["mode"]
        self._options, self._store = dict(state["options"]), state["store"]
        self._time_attr, self._points = state["time_attr"], list(state["points"])
        self._max_t = state.get("max_t")  # a state saved before max_t existed has none
        self._space, self._paths = state["space"], dict(state["paths"])
        self._reset()
        if state["snapshot"] is not None:
            self._build(enqueue=False, snapshot=state["snapshot"], ray_to_dsbo=state["ray_to_dsbo"])

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


def _check_mode(mode: Any) -> None:
    """A ConfigError for a ``mode`` other than ``"min"``/``"max"`` (``None``: not given yet)."""
    if mode is not None and mode not in ("min", "max"):
        raise ConfigError(f"DsboSearch: mode must be 'min' or 'max' (one metric), got {mode!r}")


__all__ = ["DsboSearch", "RAY_RUNS", "UNLIMITED", "convert_search_space", "dsbo_name"]
