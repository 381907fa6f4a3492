"""Everything a campaign will use, checked against its problem before the first evaluation.

A campaign's parts are configured separately (problem, surrogate and its options, policy and
its options, post-processor, optimizer settings) and many of their errors only show once
they meet: an option value a surrogate rejects when it fits (``kernel: foo``), an analytic
acquisition asked for a batch, a single-objective acquisition on a two-objective problem,
BONSAI's ``default`` of the wrong length, a fixed feature outside the box. Found at the first
BO iteration, such an error would come after the ``n_init`` evaluations were spent.

:func:`check_campaign` therefore does two things before anything is evaluated:

1. it checks what can be checked directly (:func:`check_fixed_features`, the policy's own
   ``check(problem, q)``), with messages that name the field;
2. it runs one **dry iteration** on a tiny synthetic data set: ``n`` scrambled-Sobol points of
   the problem's box with standard-normal outcomes (constraint slacks shifted so that some
   points are feasible), the real surrogate fitted to them, and the real policy (with its
   post-processor) asked for ``q`` candidates, as a cheap copy of itself where it offers one
   (``policy.for_dry_run()``: one restart, three iterations, 16 MC samples; SEBO two
   homotopy steps). Its candidates must lie in the box. Torch's and NumPy's global
   random states are restored afterwards, so the campaign's proposals do not change.

A dry iteration costs about one BO step on a handful of points (a few hundredths of a second
for a GP, seconds for the neural zoo's defaults or SAASBO's NUTS);
``Campaign(..., dry_run=False)`` skips it. :func:`check_store_identity` checks that a store
opened again holds the campaign's problem and search space.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from numbers import Real
from typing import Any

import numpy as np
import torch

from dsbo.acquisition.base import History, OptimizerSettings, Policy
from dsbo.campaign.history import check_column_names
from dsbo.errors import ConfigError, DsboError, StoreMismatchError
from dsbo.problems.base import Problem
from dsbo.storage import Store
from dsbo.surrogates import SurrogateSpec, fit_surrogate

#: Synthetic points of the dry iteration.
DRY_RUN_POINTS = 6


def check_fixed_features(
    fixed: Any, problem: Problem, field: str = "acquisition.fixed_features"
) -> None:
    """Each fixed feature is an existing dimension with a value inside its bounds.

    Raises:
        ConfigError: naming the dimension and the allowed range; nothing is clamped.
    """
    if not fixed:
        return
    if not isinstance(fixed, dict):
        raise ConfigError(f"{field} must be a mapping {{dimension: value}}, got {fixed!r}")
    lower, upper = problem.bounds.tolist()
    for key, value in fixed.items():
        if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < problem.dim:
            raise ConfigError(
                f"{field}: dimension {key!r} does not exist; {problem.name} has dimensions "
                f"0..{problem.dim - 1}"
            )
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ConfigError(f"{field}[{key}] must be a finite number, got {value!r}")
        if not lower[key] <= value <= upper[key]:
            raise ConfigError(
                f"{field}[{key}]={value} lies outside the bounds [{lower[key]:g}, {upper[key]:g}]"
            )
        if key in problem.integer_dims and value != round(value):
            raise ConfigError(f"{field}[{key}]={value}: dimension {key} takes integer values")


def named_fixed_features(
    fixed: Any, problem: Problem, field: str = "acquisition.fixed_features"
) -> Any:
    """Fixed features given by parameter name (``{optimizer: adam, lr: 1e-3}``, user values) as
    ``{column: value}`` (a categorical fixes each of its one-hot columns); column keys pass
    through unchanged. Anything else is returned as it is, for :func:`check_fixed_features`.

    Raises:
        ConfigError: naming the parameter: unknown, fixed, or a value it cannot take.
    """
    if not isinstance(fixed, dict) or not any(isinstance(k, str) for k in fixed):
        return fixed
    space = problem.space
    columns: dict[Any, Any] = {}
    for key, value in fixed.items():
        if not isinstance(key, str):
            columns[key] = value
            continue
        if key not in space.parameters:
            raise ConfigError(
                f"{field}.{key}: there is no such parameter; parameters: {space.names}"
            )
        parameter = space.parameters[key]
        if not parameter.width:
            raise ConfigError(f"{field}.{key}: {key} is fixed already")
        if parameter.conditions:
            raise ConfigError(
                f"{field}.{key}: {key} is conditional; fix the parameters it depends on instead"
            )
        encoded = parameter.encode(value, f"{field}.{key}")
        for j, u in zip(range(space.dim)[space.slices[key]], encoded, strict=True):
            columns[j] = u
    return columns


def with_fixed_features(optimizer: Any, fixed: Any, problem: Problem, field: str = "fixed") -> Any:
    """``optimizer`` (an :class:`~dsbo.acquisition.OptimizerSettings`) with ``fixed``
    (``{parameter name: value}``) added to its fixed features.

    Raises:
        ConfigError: naming the parameter or value at fault.
    """
    import dataclasses

    if not isinstance(fixed, dict) or not all(isinstance(k, str) for k in fixed):
        raise ConfigError(f"{field} must be a mapping {{parameter name: value}}, got {fixed!r}")
    columns = named_fixed_features(dict(fixed), problem, field=field)
    return dataclasses.replace(
        optimizer, fixed_features={**(optimizer.fixed_features or {}), **columns}
    )


def check_parameter_constraints(policy: Any, problem: Problem) -> None:
    """A problem with linear parameter constraints needs a policy that optimizes under them."""
    if problem.space.constraints and not getattr(policy, "takes_parameter_constraints", False):
        name = getattr(policy, "name", type(policy).__name__)
        raise ConfigError(
            f"acquisition {name!r} does not optimize under parameter_constraints; use qlognei, "
            "logei, ucb, qlognehvi or qparego (BONSAI may post-process them)"
        )


def synthetic_history(problem: Problem, optimizer: OptimizerSettings, n: int, seed: int) -> History:
    """``n`` Sobol points in the box (fixed features applied) with N(0, 1) outcomes."""
    X = problem.sobol_design(n, seed, optimizer.apply_fixed_features)
    generator = torch.Generator().manual_seed(seed)
    Y = torch.randn(n, len(problem.outcome_names), generator=generator, dtype=torch.double)
    Y[:, problem.num_objectives :] += 1.0  # most slacks >= 0: some points are feasible
    return History(X=X, Y=Y, seed=seed, t=n)


def check_campaign(
    problem: Problem,
    surrogate: SurrogateSpec,
    policy: Policy,
    optimizer: OptimizerSettings,
    q: int,
    seed: int = 0,
    dry_run: bool = True,
) -> None:
    """Check the campaign's parts against ``problem`` (module docstring); raise on the first
    problem found, as a :class:`~dsbo.errors.ConfigError` naming the part at fault."""
    check_column_names(problem)
    check_fixed_features(optimizer.fixed_features, problem)
    check_parameter_constraints(policy, problem)
    check = getattr(policy, "check", None)
    if check is not None:
        check(problem, q)
    if not dry_run or not getattr(policy, "needs_model", True):
        return
    name = getattr(policy, "name", type(policy).__name__)
    with torch.random.fork_rng(devices=[]), _numpy_state(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        history = synthetic_history(problem, optimizer, DRY_RUN_POINTS, seed)
        with _blame(f"surrogate {surrogate.name!r} with options {surrogate.options} failed to fit"):
            model = fit_surrogate(
                surrogate.for_dry_run(), history.X, history.Y, bounds=problem.bounds
            )
        cheap = policy.for_dry_run() if hasattr(policy, "for_dry_run") else policy
        with _blame(f"acquisition {name!r} (check acquisition and postprocess options) failed on"):
            proposal = cheap.propose(model, history, problem, q)
            problem.validate(proposal.X, what=f"acquisition {name!r} candidates")


def check_context_policy(
    problem: Problem, surrogate: SurrogateSpec, policy: Any, seed: int = 0, dry_run: bool = True
) -> None:
    """The dry iteration of a contextual campaign: the context policy (a cheap copy: one
    restart, two q-UCB points) proposes once on synthetic data at a simulated context draw."""
    if not dry_run:
        return
    from dsbo.contexts import ContextState

    name = getattr(policy, "name", type(policy).__name__)
    with torch.random.fork_rng(devices=[]), _numpy_state(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cheap = copy.copy(policy)
        cheap.optimizer = policy.optimizer.for_dry_run()
        if getattr(cheap, "q_points", 0):
            cheap.q_points = 2
        history = synthetic_history(problem, cheap.optimizer, DRY_RUN_POINTS, seed)
        low, high = problem.context_distribution()
        z = low + (high - low) * torch.rand(len(problem.contexts), dtype=torch.double)
        state = ContextState(
            problem=problem,
            X=history.X,
            Y=history.Y[:, 0],
            z=z,
            t=2,
            seed=seed,
            surrogate=surrogate,
            optimizer=cheap.optimizer,
        )
        with _blame(f"contexts.policy {name!r} with surrogate {surrogate.name!r} failed on"):
            proposal = cheap.propose(state)
            problem.validate(proposal.x.reshape(1, -1), what=f"contexts.policy {name!r} candidate")


@contextmanager
def _blame(part: str) -> Iterator[None]:
    """Turn an unexpected exception of the dry iteration into a ConfigError naming ``part``."""
    try:
        yield
    except DsboError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported with the part to fix
        raise ConfigError(
            f"{part} {DRY_RUN_POINTS} synthetic points: {type(exc).__name__}: {exc}"
        ) from exc


class _numpy_state:
    """Restore NumPy's global random state on exit."""

    def __enter__(self) -> None:
        self.state = np.random.get_state()

    def __exit__(self, *exc: object) -> None:
        np.random.set_state(self.state)


def check_store_identity(store: Store, problem: Problem, settings: dict[str, Any]) -> None:
    """The store is new (it becomes this campaign's: its problem, search space and
    ``settings`` are recorded) or holds this problem and search space (a store written before
    search spaces were recorded is checked on the rest).

    Raises:
        StoreMismatchError: naming what differs.
    """
    identity = {
        "problem": problem.name,
        "dim": problem.dim,
        "outcomes": list(problem.outcome_names),
        "parameters": list(problem.parameter_names),
        "bounds": problem.bounds.tolist(),
        "integer_dims": list(problem.integer_dims),
        "space": problem.space.to_config(),
    }
    stored = store.setdefault_meta("identity", identity)
    if stored == identity:
        store.setdefault_meta("settings", settings)
    elif any(stored.get(k) != v for k, v in identity.items() if k in stored) or not (
        set(stored) <= set(identity)
    ):
        differ = [k for k, v in identity.items() if k in stored and stored[k] != v]
        raise StoreMismatchError(
            f"the store {store.path} belongs to another problem or search space (it differs in "
            f"{', '.join(differ) or 'its keys'}): stored {stored}; this campaign is "
            f"{identity}. Use a new run directory (or database)."
        )


__all__ = [
    "DRY_RUN_POINTS",
    "check_campaign",
    "check_context_policy",
    "check_fixed_features",
    "check_store_identity",
    "synthetic_history",
]
