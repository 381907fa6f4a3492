"""The study side of :class:`~dsbo.integrations.optuna.DsboSampler`: an Optuna study's trials
mirrored into the dsbo :class:`~dsbo.runtime.tuner.Tuner` that proposes, and each proposal
shared with the study's other workers.

Example (what the sampler does for each trial it proposes):
    >>> mirror = StudyMirror()
    >>> mirror.adopt(space, tuner, keys=())  # a Tuner over the study's search space
    >>> mirror.sync(study, study.get_trials(deepcopy=False), current=trial.number)
    >>> suggestion = mirror.tuner.ask()
    >>> mirror.proposed(trial.number, suggestion)
    >>> share_proposal(study, trial, space.distributions, space.to_optuna(suggestion.params))

**The data.** The study's trials are imported into the Tuner's in-memory store
(:meth:`~dsbo.runtime.tuner.Tuner.import_trials`; imported trials are never charged):
COMPLETE ones as completed; FAIL as failed; PRUNED as stopped with their intermediate values
(the last one as its value); RUNNING and WAITING trials other than the one being sampled as
pending, so proposals avoid the points other workers are evaluating (each proposal is also
written to its trial's system attributes, :func:`share_proposal`, so other workers see the
whole point of a running trial before it suggests its parameters: :func:`running_params`).
One :class:`StudyMirror` is kept per study and search space and synced by trial number, so
each proposal only imports what changed; a Tuner built again over the same distributions
takes the previous one's surrogate fit states as warm starts (:meth:`StudyMirror.adopt`). A
trial that ended at other parameters than the ones it was recorded at raises :class:`Rebuild`:
the sampler then builds the Tuner again from the study.

**Pruned trials inform the fit.** The Tuner's campaign fits its surrogate on the complete
trials and on each pruned one at the last value it reported (the early-stopping model
``"last"``, :func:`pruned_trials_model`, with no stopping rule of dsbo's: Optuna's pruner
decides; :func:`dsbo.campaign.early_stopping.training_data`). A pruned trial's last value is a
pessimistic stand-in for the value it would have reached (the pruner cut it because it was
behind), so the proposals move away from the regions the pruner cut, and a pruned
configuration is an evaluated point, which the acquisition optimizer's ``min_distance`` keeps
every proposal away from. ``GPSampler`` and ``BoTorchSampler`` fit the complete trials only;
``TPESampler`` puts the pruned trials below the complete ones, ranked by the last step they
reached, then by the value there (``_split_trials`` in ``optuna/samplers/_tpe/sampler.py``).
Fitting the complete trials only is what issue 57 found wrong under a pruner that prunes most
trials: a surrogate that sees none of the pruned trials points again at the configurations just
pruned (``tests/integrations/test_optuna_sampler.py`` has such a study: a learning curve whose
best configurations start slowest, under ``MedianPruner()``). With several objectives or
constraint values the surrogate fits the complete trials only (a pruned trial's curve holds one
objective).

**Constraints.** Constraint values (``constraints_func``, or ``trial.set_constraint``) are dsbo
outcome constraints ``constraint_<key> <= 0`` (:func:`constraint_name`; feasible when every
value is ``<= 0``, as in Optuna); a complete trial without them is imported as failed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optuna.distributions import BaseDistribution
from optuna.search_space import IntersectionSearchSpace
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from dsbo.campaign.early_stopping import EarlyStopping
from dsbo.campaign.given_points import ImportedTrial
from dsbo.integrations.optuna_internals import set_trial_system_attr
from dsbo.integrations.optuna_space import DsboSpace, OptunaSpace

if TYPE_CHECKING:
    from dsbo.runtime.tuner import Suggestion, Tuner

#: Trial system attribute (prefix) under which a proposal is shared with other workers.
PARAMS_KEY = "dsbo:relative_params"
#: RDB storages keep system attribute values shorter than 2046 characters.
ATTR_MAX_LENGTH = 2045
#: The states of a study trial that ended (RUNNING and WAITING ones are pending).
FINISHED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)


def pruned_trials_model() -> EarlyStopping:
    """The early-stopping settings of the sampler's Tuner: no rule (the study's pruner
    decides), and the surrogate fitted on the complete trials and on each pruned one at its
    last reported value (model ``"last"``, :func:`dsbo.campaign.early_stopping.training_data`).
    A fresh object for each Tuner: it caches the curves of the trials that ended."""
    return EarlyStopping(rule=None, max_steps=None, model="last")


class Rebuild(Exception):
    """The study's record and the Tuner's disagree (a trial ended at other parameters than
    those it was recorded at): build the Tuner again from the study."""


@dataclass
class KnownTrial:
    """A study trial the Tuner holds: its dsbo trial id (``None``: left out), its parameters
    (dsbo names) and whether it is finished there."""

    trial_id: int | None
    params: dict[str, Any] | None
    final: bool


@dataclass
class StudyMirror:
    """What the sampler keeps for one study: its intersection search space (of the complete
    and pruned trials, as ``TPESampler`` computes it) and the Tuner of its current search space
    (``signature``), with the trials the Tuner holds by number (module docstring)."""

    intersection: IntersectionSearchSpace = field(
        default_factory=lambda: IntersectionSearchSpace(include_pruned=True)
    )
    signature: Any = None
    space: OptunaSpace | DsboSpace | None = None
    tuner: Tuner | None = None
    known: dict[int, KnownTrial] = field(default_factory=dict)
    constraint_keys: tuple[str, ...] = ()

    def adopt(self, space: OptunaSpace | DsboSpace, tuner: Tuner, keys: tuple[str, ...]) -> None:
        """Hold ``tuner``, fresh over ``space`` with the constraint ``keys``, in place of the
        previous one (the study's trials are synced into it next); the previous Tuner's
        surrogate fit states carry over as warm starts when it searched the same
        distributions."""
        from dsbo.surrogates import warm_start

        previous = self.tuner
        if (
            previous is not None
            and self.space is not None
            and self.space.distributions == space.distributions
        ):
            fits = previous.campaign.store.get_meta(warm_start.META_KEY)
            if fits is not None:
                tuner.campaign.store.set_meta(warm_start.META_KEY, fits)
        self.space, self.tuner, self.known, self.constraint_keys = space, tuner, {}, keys

    def proposed(self, number: int, suggestion: Suggestion) -> None:
        """Record that study trial ``number`` runs the Tuner's ``suggestion`` (pending there)."""
        assert self.space is not None
        self.known[number] = KnownTrial(
            suggestion.trial_id, self.space.proposed(suggestion.params), final=False
        )

    def sync(
        self, study: Study, trials: list[FrozenTrial], current: int, running: bool = True
    ) -> None:
        """Bring the Tuner up to the study: new trials imported (running ones as pending, with
        ``running``; trial ``current``, the one being sampled, left out), pending ones that
        ended told.

        Raises:
            Rebuild: if a trial ended at other parameters than it was recorded at.
        """
        assert self.tuner is not None and self.space is not None
        campaign, space = self.tuner.campaign, self.space
        rows: list[ImportedTrial] = []
        numbers: list[tuple[int, dict[str, Any], bool]] = []
        for t in trials:
            if t.number == current:
                continue
            known = self.known.get(t.number)
            if known is not None and (known.final or not t.state.is_finished()):
                continue
            if known is not None:  # a pending trial that ended
                params = space.to_dsbo(t.params)
                if t.state != TrialState.FAIL and params != known.params:
                    raise Rebuild
                self._finish(t, known)
                continue
            if t.state in FINISHED:
                # with space=: its active parameters, checked by import_trials
                params = space.to_dsbo(t.params)
                if params is None:  # a conditional parameter never suggested: not of this space
                    self.known[t.number] = KnownTrial(None, None, final=True)
                    continue
                rows.append(self._row(study, t, params))
                numbers.append((t.number, params, True))
            elif running:  # RUNNING or WAITING: pending where its whole point is known
                params = space.to_dsbo(running_params(t, space))
                if params is not None and space.complete(params):
                    source = f"optuna:{study.study_name}#{t.number}"
                    rows.append(ImportedTrial(params, status="pending", source=source))
                    numbers.append((t.number, params, False))
        if not rows:
            return
        result = campaign.import_trials(rows)
        refused = {index for index, _ in result.refused}
        accepted = [n for i, n in enumerate(numbers) if i not in refused]
        for (number, params, final), stored in zip(accepted, result.trials, strict=True):
            self.known[number] = KnownTrial(stored.id, params, final=final)
        for index, _ in result.refused:
            self.known[numbers[index][0]] = KnownTrial(None, None, final=True)

    def _row(self, study: Study, t: FrozenTrial, params: dict[str, Any]) -> ImportedTrial:
        """A finished study trial as a row of ``import_trials``."""
        source = f"optuna:{study.study_name}#{t.number}"
        if t.state == TrialState.COMPLETE:
            values, error = self._values(t)
            if error is not None:
                return ImportedTrial(params, status="failed", error=error, source=source)
            return ImportedTrial(params, values, status="completed", source=source)
        if t.state == TrialState.FAIL:
            return ImportedTrial(params, status="failed", error=_fail_reason(t), source=source)
        curve = _curve(t)
        return ImportedTrial(
            params, status="stopped", curve=curve, error="pruned in Optuna", source=source
        )

    def _finish(self, t: FrozenTrial, known: KnownTrial) -> None:
        """Record the end of a trial the Tuner holds as pending (its own proposal, or another
        worker's running trial)."""
        assert self.tuner is not None and known.trial_id is not None
        campaign = self.tuner.campaign
        if t.state == TrialState.COMPLETE:
            values, error = self._values(t)
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
            last = [curve[-1][1]] if curve and single else None
            campaign.store.stop(known.trial_id, last, reason="pruned in Optuna")
        known.final = True

    def _values(self, t: FrozenTrial) -> tuple[Any, str | None]:
        """A complete trial's outcomes as the Tuner takes them, or the reason they are unusable."""
        values = list(t.values or [])
        if len(values) == 1 and not self.constraint_keys:
            return values[0], None
        names = [f"objective_{i}" for i in range(len(values))] if len(values) > 1 else ["objective"]
        out: dict[str, Any] = dict(zip(names, values, strict=True))
        constraints = trial_constraints(t)
        missing = [k for k in self.constraint_keys if k not in constraints]
        if missing:
            return None, f"no value of the constraint(s) {missing} in Optuna"
        out.update({constraint_name(k): constraints[k] for k in self.constraint_keys})
        return out, None


def share_proposal(
    study: Study,
    trial: FrozenTrial,
    distributions: Mapping[str, BaseDistribution],
    params: Mapping[str, Any],
) -> None:
    """Write a proposal's ``params`` (Optuna's names and values) to ``trial``'s system
    attributes (:data:`PARAMS_KEY`, in chunks an RDB storage keeps), so that other workers see
    the whole point of the running trial before it suggests its parameters (as ``GPSampler``
    shares its proposals)."""
    text = json.dumps({name: distributions[name].to_internal_repr(v) for name, v in params.items()})
    for i in range(0, len(text), ATTR_MAX_LENGTH):
        key = f"{PARAMS_KEY}:{i // ATTR_MAX_LENGTH}"
        set_trial_system_attr(study, trial, key, text[i : i + ATTR_MAX_LENGTH])


def running_params(t: FrozenTrial, space: OptunaSpace | DsboSpace) -> dict[str, Any]:
    """The point of a running or waiting trial: its proposal shared by the sampler that made
    it (:func:`share_proposal`), its enqueued ``fixed_params``, and the parameters suggested
    so far."""
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


def trial_constraints(t: FrozenTrial) -> dict[str, float]:
    """A trial's constraint values by key (``trial.constraints`` of Optuna 5; Optuna 4 keeps
    the list of ``constraints_func`` under the system attribute ``constraints``)."""
    constraints = getattr(t, "constraints", None)
    if isinstance(constraints, Mapping):
        return dict(constraints)
    listed = t.system_attrs.get("constraints")
    return {str(i): c for i, c in enumerate(listed)} if listed else {}


def constraint_keys(trials: list[FrozenTrial], known: tuple[str, ...]) -> tuple[str, ...]:
    """The constraint keys of the study's finished trials: the ones known, then new ones in
    the order they appear."""
    keys = list(known)
    for t in trials:
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED):
            keys += [k for k in trial_constraints(t) if k not in keys]
    return tuple(keys)


def constraint_name(key: str) -> str:
    """The dsbo outcome of the constraint ``key``: ``constraint_<key>``, each character a dsbo
    name cannot hold written ``_``."""
    return "constraint_" + re.sub(r"[^A-Za-z0-9_]", "_", key)


def _curve(t: FrozenTrial) -> list[tuple[int, float]]:
    """A trial's intermediate values by step, the non-finite ones left out."""
    return [
        (int(step), float(v))
        for step, v in sorted(t.intermediate_values.items())
        if math.isfinite(v)
    ]


def _fail_reason(t: FrozenTrial) -> str:
    reason = t.system_attrs.get("fail_reason")
    return f"failed in Optuna: {reason}" if reason else "failed in Optuna"


__all__ = [
    "ATTR_MAX_LENGTH",
    "FINISHED",
    "PARAMS_KEY",
    "KnownTrial",
    "Rebuild",
    "StudyMirror",
    "constraint_keys",
    "constraint_name",
    "pruned_trials_model",
    "running_params",
    "share_proposal",
    "trial_constraints",
]
