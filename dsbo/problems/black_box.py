"""A problem whose function lives outside Python: a search space and outcome names only.

Use it for lab experiments, A/B tests or simulators that a campaign drives with ask/tell
(:meth:`dsbo.campaign.Campaign.ask` / ``tell``, or ``python -m dsbo.blackbox ask|tell``).
Evaluating it in Python raises :class:`~dsbo.errors.EvaluationError` with that advice.

Example:
    >>> problem = get_problem("black-box", parameters={"temperature": [20, 80], "ph": [4, 9],
    ...                       "catalyst": {"type": "choice", "values": ["Pd", "Pt"]}},
    ...                       objectives=["yield"], constraints=["purity_margin"])
    >>> problem.outcome_names
    ('yield', 'purity_margin')
    >>> get_problem("black-box", parameters={"lr": [1e-4, 0.1]}, objectives={"loss": "min"},
    ...             constraints=["memory <= 8"]).outcome_names   # stored: maximized, slacks
    ('-loss', 'memory <= 8')
    >>> problem.params(problem.default_point)
    {'temperature': 50.0, 'ph': 6.5, 'catalyst': 'Pd'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from botorch.test_functions.base import BaseTestProblem
from torch import Tensor

from dsbo.errors import ConfigError, EvaluationError
from dsbo.problems.base import Context, Problem
from dsbo.problems.options import resolve_target
from dsbo.problems.registry import register_problem
from dsbo.space import Float, Int, Outcomes, SearchSpace


class ExternalBlackBox(BaseTestProblem):
    """The box ``bounds`` with ``num_objectives`` objectives and ``num_constraints`` slacks,
    evaluated outside Python."""

    _is_minimization_by_default = False
    #: Evaluated outside Python: only ask/tell can run it (:attr:`Problem.evaluated_outside_python`).
    external = True

    def __init__(
        self,
        bounds: list[tuple[float, float]],
        num_objectives: int,
        num_constraints: int,
        integer_dims: Sequence[int] = (),
    ) -> None:
        self.dim = len(bounds)
        self._bounds = bounds
        self.num_objectives = num_objectives
        self.num_constraints = num_constraints
        self.discrete_inds = sorted(integer_dims)
        self.continuous_inds = [i for i in range(self.dim) if i not in set(integer_dims)]
        super().__init__()

    def _evaluate_true(self, X: Tensor) -> Tensor:
        raise EvaluationError(
            "this problem is evaluated outside Python: use Campaign.ask/tell or "
            "`python -m dsbo.blackbox ask|tell`"
        )


@register_problem("black-box", "a search space evaluated outside Python (ask/tell)")
def make_black_box(
    parameters: Mapping[str, Any] | SearchSpace | None = None,
    objectives: Sequence[str] | Mapping[str, Any] = ("objective",),
    constraints: Sequence[str] = (),
    direction: str = "maximize",
    integer: Sequence[str] = (),
    target: str | Sequence[float] | Mapping[str, Any] = "center",
    contexts: Mapping[str, float | Mapping[str, object]] | None = None,
    parameter_constraints: Sequence[str] = (),
) -> Problem:
    """An external black box over named, typed parameters.

    Args:
        parameters: ``{name: parameter}`` in order, each ``{type: float, low: 1e-4, high: 0.1,
            log: true}``, ``{type: int, ...}``, ``{type: choice, values: [adam, sgd]}``,
            ``{type: fixed, value: ...}`` (with an optional ``when: {parent: value}``), or
            ``[lower, upper]`` for a float (:mod:`dsbo.space`); or a
            :class:`~dsbo.space.SearchSpace`.
        objectives: Outcome names (each in ``direction``), or ``{name: direction}`` /
            ``{name: [direction, threshold]}`` (``min``/``minimize``, ``max``/``maximize``; the
            threshold is the worst value still worth having, the hypervolume's reference).
            Outcomes are told as measured: dsbo stores a minimized one negated
            (:class:`~dsbo.space.Outcomes`) and shows it as it was told.
        constraints: Outcome constraints: ``"memory <= 8"`` (one outcome bounded by a
            number; the outcome is then reported too) or the name of a slack the evaluator
            computes, feasible when ``>= 0``.
        direction: The direction of objectives given by name (default ``maximize``).
        integer: Names of ``[lower, upper]`` parameters that take integer values.
        target: The default configuration: ``"center"``, ``"zero"`` (lower corner), a list of
            model coordinates, or ``{name: value}`` (parameters it leaves out sit in the
            middle of their range).
        contexts: Parameters the environment sets (:mod:`dsbo.contexts`): ``{name: cost}``
            or ``{name: {cost: 2.0, observe_only: true}}``. Their current values come from
            ``ask --contexts`` (or a Python environment callable), never from dsbo.
        parameter_constraints: Linear constraints on the parameters, ``["x + y <= 1"]``.
    """
    if not parameters:
        raise ConfigError("black-box: options.parameters is required, e.g. {x: [0, 1], y: [0, 1]}")
    if isinstance(parameters, SearchSpace):
        space = SearchSpace(parameters, parameter_constraints)
    else:
        if not isinstance(parameters, Mapping):
            raise ConfigError(
                f"black-box: options.parameters must be a mapping {{name: parameter}}, got {parameters!r}"
            )
        specs = dict(parameters)
        unknown = [n for n in integer if n not in specs]
        if unknown:
            raise ConfigError(f"black-box: options.integer names unknown parameters {unknown}")
        for name in integer:
            specs[name] = _as_integer(name, specs[name])
        space = SearchSpace.from_config(specs, parameter_constraints)
    if not objectives:
        raise ConfigError("black-box: options.objectives must name at least one outcome")
    try:
        outcomes = Outcomes.declare(objectives, constraints, direction, field="objectives")
    except ConfigError as exc:
        raise ConfigError(f"black-box: options.{exc}") from None
    clash = sorted(set(outcomes.metrics) & set(space.names))
    if clash:
        raise ConfigError(f"black-box: {clash[0]!r} names both a parameter and an outcome")
    test_problem = ExternalBlackBox(
        space.bounds, len(outcomes.objectives), len(outcomes.constraints), space.integer_columns
    )
    if isinstance(target, Mapping):
        default = torch.tensor(space.default(target, where="target"), dtype=torch.double)
    elif (
        target == "center"
    ):  # the middle of each range (an integer's rounded, a choice's first value)
        default = torch.tensor(space.default({}, where="target"), dtype=torch.double)
    else:
        default = resolve_target(target, test_problem.bounds, "black-box")
    return Problem(
        name="black-box",
        contexts=_declared_contexts(contexts or {}, space),
        test_problem=test_problem,
        default_point=default,
        relevant_dims=tuple(range(space.dim)),
        space=space,
        outcomes=outcomes,
    )


def _as_integer(name: str, spec: Any) -> Any:
    """A ``[lower, upper]`` pair named in ``integer`` as an int parameter."""
    if isinstance(spec, Sequence) and not isinstance(spec, str) and len(spec) == 2:
        low, high = spec
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer()
            for v in spec
        ):
            raise ConfigError(
                f"black-box: parameters.{name}={list(spec)!r} is listed in integer; give integer bounds"
            )
        return Int(int(low), int(high))
    raise ConfigError(
        f"black-box: options.integer lists {name}; write it as {{type: int, low: ..., high: ...}} instead"
    )


def _declared_contexts(contexts: Mapping[str, object], space: SearchSpace) -> tuple[Context, ...]:
    """The ``contexts`` option as :class:`Context` objects, checked against the parameters
    (a context is a float on a linear scale: the environment draws it uniformly)."""
    names = space.names
    if not isinstance(contexts, Mapping):
        raise ConfigError(
            f"black-box: options.contexts must be a mapping {{name: cost}}, got {contexts!r}"
        )
    declared = []
    for name, spec in contexts.items():
        if name not in names:
            raise ConfigError(
                f"black-box: options.contexts names {name!r}, which is not a parameter; parameters: {names}"
            )
        if isinstance(spec, Mapping):
            unknown = sorted(set(spec) - {"cost", "observe_only"})
            if unknown:
                raise ConfigError(
                    f"black-box: options.contexts.{name} has no field(s) {unknown}; use cost, observe_only"
                )
            cost, observe_only = spec.get("cost", 1.0), spec.get("observe_only", False)
        else:
            cost, observe_only = spec, False
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0:
            raise ConfigError(
                f"black-box: options.contexts.{name}: cost must be a number >= 0, got {cost!r}"
            )
        if not isinstance(observe_only, bool):
            raise ConfigError(
                f"black-box: options.contexts.{name}.observe_only must be true or false"
            )
        p = space.parameters[name]
        if not isinstance(p, Float) or p.log or p.step is not None or p.conditions:
            raise ConfigError(
                f"black-box: options.contexts.{name}: a context must be a float on a linear scale, without step or condition"
            )
        declared.append(
            Context(dim=space.slices[name].start, cost=float(cost), controllable=not observe_only)
        )
    return tuple(sorted(declared, key=lambda c: c.dim))
