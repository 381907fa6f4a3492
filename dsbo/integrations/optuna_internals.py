"""The few Optuna internals :class:`~dsbo.integrations.optuna.DsboSampler` needs, in one place.

A sampler sits inside Optuna's study loop, and Optuna's own samplers (``GPSampler``,
``TPESampler``, ``QMCSampler``) reach a few of the study's internals that its public API does
not offer a sampler: the storage-wide id of a trial, the storage and study id (to keep one
state per study), the trials read once per trial (the per-trial cache), writing a system
attribute of the trial being sampled, checking a value against a distribution, and recording
``constraints_func``'s values. dsbo's modules call these functions instead, so that a change
of Optuna's internals is met here, and ``tests/test_architecture.py`` lists each use with its
reason. Each function names the Optuna attribute it reads.

Example:
    >>> trials = study_trials(study, states=(TrialState.COMPLETE,))  # Optuna's per-trial cache
    >>> set_trial_system_attr(study, trial, "dsbo:relative_params:0", "{...}")
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import Any

from optuna.distributions import BaseDistribution
from optuna.samplers._base import _process_constraints_after_trial
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState


def trial_key(trial: FrozenTrial) -> int:
    """The trial's id in its storage (``FrozenTrial._trial_id``; ``number`` counts within a
    study only): the key of what a sampler keeps per trial, as Optuna's samplers key it."""
    return trial._trial_id


def study_key(study: Study) -> tuple[Any, int]:
    """The study's storage and id (``Study._storage``, ``Study._study_id``): one key per study,
    also for two ``Study`` objects loaded from the same storage."""
    return study._storage, study._study_id


def study_trials(
    study: Study, states: Container[TrialState] | None = None, use_cache: bool = True
) -> list[FrozenTrial]:
    """The study's trials, not copied (``Study._get_trials``): with ``use_cache``, as Optuna
    read them once for the trial being sampled (its per-trial cache, which its own samplers
    read: one storage read per trial, and the same trials for every decision about it)."""
    return study._get_trials(deepcopy=False, states=states, use_cache=use_cache)


def set_trial_system_attr(study: Study, trial: FrozenTrial, key: str, value: Any) -> None:
    """Write a system attribute of ``trial`` (``Study._storage.set_trial_system_attr``: a
    sampler holds a frozen trial, which has no setter), as ``GPSampler`` shares its proposals."""
    study._storage.set_trial_system_attr(trial._trial_id, key, value)


def contains(distribution: BaseDistribution, value: Any) -> bool:
    """Whether ``value`` (the external representation) is a value of ``distribution``
    (``BaseDistribution._contains``, on the internal representation); ``False`` for a value
    that has none."""
    try:
        return bool(distribution._contains(distribution.to_internal_repr(value)))
    except (ValueError, TypeError):
        return False


def process_constraints(
    constraints_func: Callable[[FrozenTrial], Sequence[float]],
    study: Study,
    trial: FrozenTrial,
    state: TrialState,
) -> None:
    """Call ``constraints_func`` on a complete or pruned trial and store its values where
    Optuna keeps them (``optuna.samplers._base._process_constraints_after_trial``, which every
    Optuna sampler taking ``constraints_func`` calls in ``after_trial``)."""
    _process_constraints_after_trial(constraints_func, study, trial, state)


__all__ = [
    "contains",
    "process_constraints",
    "set_trial_system_attr",
    "study_key",
    "study_trials",
    "trial_key",
]
