"""Studies of Optuna and Ax in and out of dsbo (the part of :mod:`dsbo.integrations.studies`
that needs those libraries; each function imports its library inside, so importing this
module pulls in neither).

- :func:`from_optuna`: an ``optuna.Study`` (or its name and any Optuna storage URL) as rows:
  ``COMPLETE`` trials completed, ``FAIL`` failed, ``PRUNED`` stopped (its intermediate values
  the curve), ``RUNNING`` pending; ``WAITING`` ones (enqueued, never run) are refused. Without
  ``space=`` the space is read from the trials' distributions (``FloatDistribution`` ->
  :class:`~dsbo.space.Float` with its ``log``/``step``, ``IntDistribution`` ->
  :class:`~dsbo.space.Int`, ``CategoricalDistribution`` -> :class:`~dsbo.space.Choice`, a single
  value -> :class:`~dsbo.space.Fixed`); a parameter that only some trials have is conditional
  on the categorical parameter whose values tell those trials apart (``when=``), if one does.
- :func:`to_optuna`: a dsbo run as an Optuna study (the objectives' directions, each trial
  with its distributions; completed, failed, and stopped trials as pruned ones with their
  intermediate values; pending trials left out), for ``optuna-dashboard`` or Optuna's plots.
- :func:`from_ax`: an Ax experiment (or the file Ax's JSON store saved it to): each arm's
  parameters, the means of its metrics in the experiment's data; ``COMPLETED`` completed,
  ``FAILED`` and ``ABANDONED`` failed, ``EARLY_STOPPED`` stopped (the objective's values by
  step the curve), ``RUNNING`` pending; candidates never run are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsbo.campaign.given_points import ImportedTrial, ImportResult
from dsbo.errors import ConfigError
from dsbo.integrations.studies import (
    ImportedStudy,
    as_space,
    campaign_of,
    space_parameter,
    trial_records,
    values_of,
)
from dsbo.space import Choice, Fixed, Float, Int, Outcomes, Parameter, SearchSpace

if TYPE_CHECKING:
    from dsbo.campaign import Campaign
    from dsbo.runtime.tuner import Tuner

#: Optuna trial states as dsbo's imported statuses (``WAITING``: never run, refused).
OPTUNA_STATES = {
    "COMPLETE": "completed",
    "FAIL": "failed",
    "PRUNED": "stopped",
    "RUNNING": "pending",
}
#: Ax trial statuses as dsbo's imported statuses (others: never run, refused).
AX_STATUSES = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "ABANDONED": "failed",
    "EARLY_STOPPED": "stopped",
    "RUNNING": "pending",
}


# ----------------------------------------------------------------------------- Optuna in
def _optuna_parameter(distribution: Any) -> Parameter:
    """The dsbo parameter of an Optuna distribution."""
    kind = type(distribution).__name__
    if kind == "CategoricalDistribution":
        return space_parameter("choice", choices=distribution.choices)
    if kind in ("FloatDistribution", "IntDistribution"):
        integer = kind == "IntDistribution"
        step = distribution.step if not integer or distribution.step != 1 else None
        return space_parameter(
            "int" if integer else "float",
            distribution.low,
            distribution.high,
            distribution.log,
            step,
        )
    raise ConfigError(f"cannot read Optuna's {kind}; pass space=")


def _merge(old: Any, new: Any, name: str) -> Any:
    """One distribution for a parameter the trials drew from several: the union of the
    ranges or of the choices (the same kind, scale and step)."""
    import optuna

    if old is None or old == new:
        return new
    if isinstance(old, optuna.distributions.CategoricalDistribution) and isinstance(new, type(old)):
        return type(old)(list(dict.fromkeys([*old.choices, *new.choices])))
    same = type(old) is type(new) and not isinstance(
        old, optuna.distributions.CategoricalDistribution
    )
    if not same or old.log != new.log or old.step != new.step:
        raise ConfigError(
            f"the trials drew {name!r} from different distributions ({old} and {new}); pass space="
        )
    return type(old)(min(old.low, new.low), max(old.high, new.high), log=old.log, step=old.step)


def space_from_optuna(trials: Sequence[Any]) -> SearchSpace:
    """The dsbo space of Optuna trials' distributions (the module docstring)."""
    distributions: dict[str, Any] = {}
    for trial in trials:
        for name, distribution in trial.distributions.items():
            distributions[name] = _merge(distributions.get(name), distribution, name)
    if not distributions:
        raise ConfigError("the study's trials have no parameters; pass space=")
    parameters = {name: _optuna_parameter(d) for name, d in distributions.items()}
    for name, parameter in list(parameters.items()):
        when = _condition(name, trials, parameters)
        if when:
            parameters[name] = type(parameter)(**{**_fields(parameter), "when": when})
    return SearchSpace(parameters)


def _fields(parameter: Parameter) -> dict[str, Any]:
    names = {
        Float: ("low", "high", "log", "step"),
        Int: ("low", "high", "log", "step"),
        Choice: ("values", "ordered"),
        Fixed: ("value",),
    }[type(parameter)]
    return {n: getattr(parameter, n) for n in names}


def _condition(
    name: str, trials: Sequence[Any], parameters: Mapping[str, Parameter]
) -> dict[str, list[Any]] | None:
    """``{parent: values}`` under which the trials have ``name``: a categorical parameter
    every trial with ``name`` has, none of whose values there occurs in a trial without it."""
    present = [t.params for t in trials if name in t.params]
    absent = [t.params for t in trials if name not in t.params and t.params]
    if not absent or not present:
        return None
    for parent, parameter in parameters.items():
        if (
            parent == name
            or not isinstance(parameter, Choice)
            or not all(parent in p for p in present)
        ):
            continue
        on = [
            v
            for v in parameter.values
            if any(p[parent] == v and type(p[parent]) is type(v) for p in present)
        ]
        if not any(p.get(parent) in on for p in absent if parent in p):
            return {parent: on}
    return None


def from_optuna(
    study_or_name: Any,
    storage: Any = None,
    space: SearchSpace | Mapping[str, Any] | None = None,
    objectives: Sequence[str] | None = None,
    constraints: Sequence[str] = (),
) -> ImportedStudy:
    """The trials of an Optuna study as rows (the module docstring).

    Args:
        study_or_name: An ``optuna.Study``, or the name of one in ``storage``.
        storage: An Optuna storage (``"sqlite:///study.db"``, any RDB URL, a storage object)
            when the study is given by name (``optuna.load_study``).
        space: The dsbo space to read the parameters in; ``None``: read from the trials'
            distributions (returned as the study's ``space``).
        objectives: Names for the study's objectives, in order (default: the study's
            ``metric_names``, else ``objective`` or ``objective_0``, ``objective_1``, ...).
        constraints: Outcome constraints as a Tuner takes them (``"memory <= 8"``); each
            constrained outcome is read from the trials' ``user_attrs``.

    Returns:
        An :class:`~dsbo.integrations.studies.ImportedStudy`; rows refused while reading are
        numbered by the Optuna trial's ``number``.
    """
    import optuna

    study = study_or_name
    if isinstance(study_or_name, str):
        if storage is None:
            raise ConfigError(
                f"the study {study_or_name!r} is given by name: pass its storage= (e.g. 'sqlite:///study.db')"
            )
        study = optuna.load_study(study_name=study_or_name, storage=storage)
    if not isinstance(study, optuna.Study):
        raise ConfigError(
            f"expected an optuna.Study or a study name, got {type(study_or_name).__name__}"
        )
    trials = study.get_trials(deepcopy=False)
    directions = [
        "minimize" if d == optuna.study.StudyDirection.MINIMIZE else "maximize"
        for d in study.directions
    ]
    names = list(
        objectives
        or study.metric_names
        or (
            ["objective"]
            if len(directions) == 1
            else [f"objective_{i}" for i in range(len(directions))]
        )
    )
    if len(names) != len(directions):
        raise ConfigError(
            f"the study has {len(directions)} objective(s); objectives= names {len(names)}: {names}"
        )
    outcomes = Outcomes.declare(dict(zip(names, directions, strict=True)), list(constraints))
    space = as_space(space) if space is not None else space_from_optuna(trials)
    rows, labels, refused = [], [], []
    for trial in trials:
        status = OPTUNA_STATES.get(trial.state.name)
        if status is None:
            refused.append(
                (trial.number, f"state {trial.state.name} (never run) cannot be imported")
            )
            continue
        values = None
        if trial.values is not None:
            user = dict(zip(names, trial.values, strict=True))
            extra = [m for m in outcomes.metrics if m not in user]
            missing = [m for m in extra if m not in trial.user_attrs]
            if missing and status == "completed":
                refused.append((trial.number, f"no user_attrs for the outcome(s) {missing}"))
                continue
            if not missing:
                values = values_of(
                    {**user, **{m: trial.user_attrs[m] for m in extra}}, outcomes.metrics
                )
        error = trial.user_attrs.get("dsbo_error") or trial.system_attrs.get("fail_reason")
        curve = sorted(trial.intermediate_values.items()) if len(names) == 1 else []
        rows.append(
            ImportedTrial(
                params=dict(trial.params),
                values=values,
                status=status,
                error=error,
                curve=curve,
                source=f"optuna:{study.study_name}#{trial.number}",
            )
        )
        labels.append(trial.number)
    return ImportedStudy(rows, labels, space, outcomes, refused, f"optuna:{study.study_name}")


def import_optuna(
    target: Tuner | Campaign, study_or_name: Any, storage: Any = None, strict: bool = False
) -> ImportResult:
    """Import an Optuna study's trials into ``target`` (a Tuner or Campaign): its objectives
    named as the target's, in order; its constrained outcomes read from ``user_attrs``."""
    outcomes = campaign_of(target).problem.outcomes
    study = from_optuna(
        study_or_name,
        storage,
        space=campaign_of(target).problem.space,
        objectives=list(outcomes.objective_names),
        constraints=[c.stored_name for c in outcomes.constraints],
    )
    return study.import_into(target, strict=strict)


# ----------------------------------------------------------------------------- Optuna out
def optuna_distribution(parameter: Parameter) -> Any:
    """The Optuna distribution of a dsbo parameter (Optuna has no step on a log scale: a log
    ``Float``/``Int`` with a step becomes one without; a ``Fixed`` is a single choice)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(parameter, Float):
        step = None if parameter.log else parameter.step
        return FloatDistribution(parameter.low, parameter.high, log=parameter.log, step=step)
    if isinstance(parameter, Int):
        return IntDistribution(
            parameter.low,
            parameter.high,
            log=parameter.log,
            step=1 if parameter.log else parameter.step,
        )
    if isinstance(parameter, Choice):
        return CategoricalDistribution(list(parameter.values))
    return CategoricalDistribution([parameter.value])  # type: ignore[attr-defined]


def to_optuna(source: Any, study_name: str | None = None, storage: Any = None) -> Any:
    """An Optuna study holding the finished trials of ``source`` (TunerResult, Tuner or
    Campaign): created in ``storage`` (default in memory) with the objectives' directions;
    completed trials ``COMPLETE``, failed ones ``FAIL``, stopped ones ``PRUNED`` (with their
    last value where known), each with its active parameters and their distributions, its
    reported values as intermediate values (one objective), and ``user_attrs``:
    ``dsbo_trial``, ``dsbo_generator``, ``dsbo_error`` and the constrained outcomes. Pending
    trials are left out.

    Raises:
        optuna.exceptions.DuplicatedStudyError: if ``storage`` has a study of that name.
    """
    import warnings

    import optuna
    from optuna.trial import TrialState, create_trial

    campaign, records = trial_records(source)
    outcomes = campaign.problem.outcomes
    with (
        warnings.catch_warnings()
    ):  # Optuna trims a range its step does not divide (as dsbo's grid does)
        warnings.simplefilter("ignore", UserWarning)
        distributions = {
            n: optuna_distribution(p) for n, p in campaign.problem.space.parameters.items()
        }
    states = {
        "completed": TrialState.COMPLETE,
        "failed": TrialState.FAIL,
        "stopped": TrialState.PRUNED,
    }
    objectives = outcomes.objective_names
    frozen = []
    for r in records:
        if r["status"] not in states:
            continue
        user = r["values"] or {}
        known = all(n in user and math.isfinite(user[n]) for n in objectives)
        attrs: dict[str, Any] = {"dsbo_trial": r["trial"], "dsbo_generator": r["generator"]}
        attrs.update({m: user[m] for m in outcomes.metrics if m not in objectives and m in user})
        if r["error"]:
            attrs["dsbo_error"] = r["error"]
        frozen.append(
            create_trial(
                state=states[r["status"]],
                values=[user[n] for n in objectives] if known and r["status"] != "failed" else None,
                params=r["params"],
                distributions={n: distributions[n] for n in r["params"]},
                user_attrs=attrs,
                intermediate_values=dict(r["curve"]) if len(objectives) == 1 else None,
            )
        )
    study = optuna.create_study(
        study_name=study_name,
        storage=storage,
        directions=[o.direction for o in outcomes.objectives],
    )
    study.add_trials(frozen)
    return study


# ----------------------------------------------------------------------------- Ax in
def _ax_parameter(parameter: Any) -> Parameter:
    kind = type(parameter).__name__
    if kind == "FixedParameter":
        return Fixed(parameter.value)
    if kind == "ChoiceParameter":
        return space_parameter(
            "choice", choices=parameter.values, ordered=bool(parameter.is_ordered)
        )
    if kind == "RangeParameter":
        integer = parameter.parameter_type.name == "INT"
        return space_parameter(
            "int" if integer else "float", parameter.lower, parameter.upper, parameter.log_scale
        )
    raise ConfigError(f"cannot read Ax's {kind} {parameter.name!r}; pass space=")


def _ax_outcomes(experiment: Any) -> Outcomes:
    """The objectives (and outcome constraints with an absolute bound) of an Ax experiment."""
    config = experiment.optimization_config
    if config is None:
        raise ConfigError(
            f"the Ax experiment {experiment.name!r} has no optimization config: no objective to read"
        )
    objective = config.objective
    if getattr(objective, "is_scalarized_objective", False):
        raise ConfigError(
            f"the Ax experiment {experiment.name!r} optimizes a weighted sum of metrics: give its objectives to a Tuner and import_ax into it"
        )
    declared = {
        name: "minimize" if weight < 0 else "maximize" for name, weight in _weights(objective)
    }
    constraints = []
    for c in getattr(config, "outcome_constraints", ()) or ():
        if getattr(c, "relative", False):
            continue  # relative to a status quo: no bound on the metric itself
        [(name, weight)] = _weights(c)
        op, bound = "<=" if c.op.name == "LEQ" else ">=", float(c.bound)
        bound = int(bound) if bound.is_integer() else bound  # "memory <= 8", as the user wrote it
        factor = int(weight) if weight.is_integer() else weight
        constraints.append(
            f"{name} {op} {bound}" if weight == 1 else f"{factor} * {name} {op} {bound}"
        )
    return Outcomes.declare(declared, constraints)


def _weights(objective: Any) -> list[tuple[str, float]]:
    """``(metric, weight)`` of an Ax objective or constraint (Ax 1.x's ``metric_weights``; a
    single metric's ``minimize`` in older Ax)."""
    weights = getattr(objective, "metric_weights", None)
    if weights:
        return [(str(n), float(w)) for n, w in weights]
    return [(objective.metric.name, -1.0 if getattr(objective, "minimize", False) else 1.0)]


def from_ax(
    path_or_experiment: Any, space: SearchSpace | Mapping[str, Any] | None = None
) -> ImportedStudy:
    """The trials of an Ax experiment as rows (the module docstring).

    Args:
        path_or_experiment: An ``ax.core.Experiment``, or the JSON file Ax's JSON store
            saved one to (``ax.storage.json_store.save.save_experiment``), loaded with Ax's
            ``load_experiment``.
        space: The dsbo space; ``None``: read from the experiment's search space (range
            parameters as Float/Int, choices as Choice, fixed ones as Fixed; Ax's parameter
            constraints and hierarchical structure are not carried over).

    Returns:
        An :class:`~dsbo.integrations.studies.ImportedStudy` with the experiment's objectives
        (and absolute outcome constraints); rows refused while reading are numbered by the Ax
        trial index.
    """
    experiment = path_or_experiment
    if isinstance(experiment, str | Path):
        from ax.storage.json_store.load import load_experiment

        experiment = load_experiment(str(experiment))
    if not hasattr(experiment, "trials") or not hasattr(experiment, "lookup_data"):
        raise ConfigError(
            f"expected an Ax experiment or the path of one saved as JSON, got {type(path_or_experiment).__name__}"
        )
    outcomes = _ax_outcomes(experiment)
    if space is None:
        space = SearchSpace(
            {n: _ax_parameter(p) for n, p in experiment.search_space.parameters.items()}
        )
    data = experiment.lookup_data()
    frame = getattr(data, "full_df", data.df)  # every step's value (df: the latest only)
    objective = outcomes.objective_names[0]
    rows, labels, refused = [], [], []
    for index, trial in sorted(experiment.trials.items()):
        status = AX_STATUSES.get(trial.status.name)
        if status is None:
            refused.append((index, f"status {trial.status.name} (never run) cannot be imported"))
            continue
        reason = getattr(trial, "failed_reason", None) or getattr(trial, "abandoned_reason", None)
        error = reason or ("abandoned in Ax" if trial.status.name == "ABANDONED" else None)
        for arm in trial.arms:
            data = frame[(frame["trial_index"] == index) & (frame["arm_name"] == arm.name)]
            means, curve = _ax_means(data, objective)
            values = None
            if all(m in means for m in outcomes.metrics):
                values = values_of(means, outcomes.metrics)
            elif status == "completed":
                missing = [m for m in outcomes.metrics if m not in means]
                refused.append((index, f"arm {arm.name}: no data for the metric(s) {missing}"))
                continue
            rows.append(
                ImportedTrial(
                    params=dict(arm.parameters),
                    values=values,
                    status=status,
                    error=error,
                    curve=curve if status in ("stopped", "pending") else [],
                    source=f"ax:{experiment.name}#{index}:{arm.name}",
                )
            )
            labels.append(index)
    return ImportedStudy(rows, labels, as_space(space), outcomes, refused, f"ax:{experiment.name}")


def _ax_means(data: Any, objective: str) -> tuple[dict[str, float], list[tuple[int, float]]]:
    """Each metric's mean (the final one: without a step, else at the last step) and the
    objective's means by step."""
    means: dict[str, float] = {}
    curve: list[tuple[int, float]] = []
    has_step = "step" in data.columns
    for metric, rows in data.groupby("metric_name", sort=False):
        rows = rows.sort_values("step", na_position="last") if has_step else rows
        means[str(metric)] = float(rows["mean"].iloc[-1])
        if metric == objective and has_step:
            curve = [
                (int(s), float(m))
                for s, m in zip(rows["step"], rows["mean"], strict=True)
                if s == s
            ]
    return means, curve


def import_ax(
    target: Tuner | Campaign, path_or_experiment: Any, strict: bool = False
) -> ImportResult:
    """Import an Ax experiment's trials into ``target`` (a Tuner or Campaign), read in the
    target's space; its metrics must be named as the target's outcomes."""
    return from_ax(path_or_experiment, space=campaign_of(target).problem.space).import_into(
        target, strict=strict
    )


__all__ = [
    "from_ax",
    "from_optuna",
    "import_ax",
    "import_optuna",
    "optuna_distribution",
    "space_from_optuna",
    "to_optuna",
]
