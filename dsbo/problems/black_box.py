"""A problem whose function lives outside Python: a search space and outcome names only.

Use it for lab experiments, A/B tests or simulators that a campaign drives with ask/tell
(:meth:`dsbo.campaign.Campaign.ask` / ``tell``, or ``python -m dsbo.blackbox ask|tell``).
Evaluating it in Python raises :class:`~dsbo.errors.EvaluationError` with that advice.

Example:
    >>> problem = get_problem("black-box", parameters={"temperature": [20, 80], "ph": [4, 9]},
    ...                       objectives=["yield"], constraints=["purity_margin"])
    >>> problem.outcome_names
    ('yield', 'purity_margin')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from botorch.test_functions.base import BaseTestProblem
from torch import Tensor

from dsbo.errors import ConfigError, EvaluationError
from dsbo.problems.base import Context, Problem
from dsbo.problems.options import resolve_target
from dsbo.problems.registry import register_problem


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
    parameters: Mapping[str, Sequence[float]] | None = None,
    objectives: Sequence[str] = ("objective",),
    constraints: Sequence[str] = (),
    integer: Sequence[str] = (),
    target: str | Sequence[float] | Mapping[str, float] = "center",
    contexts: Mapping[str, float | Mapping[str, object]] | None = None,
) -> Problem:
    """An external black box.

    Args:
        parameters: ``{name: [lower, upper]}`` in order.
        objectives: Outcome names to maximize (negate a cost when you report it).
        constraints: Outcome names of constraint slacks, feasible when ``>= 0``.
        integer: Names of the integer-valued parameters.
        target: The default configuration: ``"center"``, ``"zero"`` (lower corner), a list, or
            ``{name: value}``.
        contexts: Parameters the environment sets (:mod:`dsbo.contexts`): ``{name: cost}``
            or ``{name: {cost: 2.0, observe_only: true}}``. Their current values come from
            ``ask --contexts`` (or a Python environment callable), never from dsbo.
    """
    if not parameters:
        raise ConfigError("black-box: options.parameters is required, e.g. {x: [0, 1], y: [0, 1]}")
    names = list(parameters)
    bounds = []
    for name in names:
        pair = parameters[name]
        if not (isinstance(pair, Sequence) and len(pair) == 2 and float(pair[0]) < float(pair[1])):
            raise ConfigError(
                f"black-box: parameters.{name}={pair!r} must be [lower, upper] with lower < upper"
            )
        bounds.append((float(pair[0]), float(pair[1])))
    if not objectives:
        raise ConfigError("black-box: options.objectives must name at least one outcome")
    outcomes = list(objectives) + list(constraints)
    if len(set(outcomes)) != len(outcomes):
        raise ConfigError(f"black-box: outcome names must be unique, got {outcomes}")
    unknown = [n for n in integer if n not in parameters]
    if unknown:
        raise ConfigError(f"black-box: options.integer names unknown parameters {unknown}")
    integer_dims = [names.index(n) for n in integer]
    test_problem = ExternalBlackBox(bounds, len(objectives), len(constraints), integer_dims)
    if isinstance(target, Mapping):
        missing = [n for n in names if n not in target]
        if missing:
            raise ConfigError(f"black-box: target has no value for {missing}")
        target = [float(target[n]) for n in names]
    return Problem(
        name="black-box",
        contexts=_declared_contexts(contexts or {}, names),
        test_problem=test_problem,
        default_point=resolve_target(target, test_problem.bounds, "black-box"),
        relevant_dims=tuple(range(len(names))),
        objective_names=tuple(objectives),
        constraint_names=tuple(constraints),
        integer_dims=tuple(integer_dims),
        parameter_names=tuple(names),
    )




def _declared_contexts(contexts: Mapping[str, object], names: list[str]) -> tuple[Context, ...]:
    """The ``contexts`` option as :class:`Context` objects, checked against the parameters."""
    if not isinstance(contexts, Mapping):
        raise ConfigError(f"black-box: options.contexts must be a mapping {{name: cost}}, got {contexts!r}")
    declared = []
    for name, spec in contexts.items():
        if name not in names:
            raise ConfigError(f"black-box: options.contexts names {name!r}, which is not a parameter; parameters: {names}")
        if isinstance(spec, Mapping):
            unknown = sorted(set(spec) - {"cost", "observe_only"})
            if unknown:
                raise ConfigError(f"black-box: options.contexts.{name} has no field(s) {unknown}; use cost, observe_only")
            cost, observe_only = spec.get("cost", 1.0), spec.get("observe_only", False)
        else:
            cost, observe_only = spec, False
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not cost >= 0:
            raise ConfigError(f"black-box: options.contexts.{name}: cost must be a number >= 0, got {cost!r}")
        if not isinstance(observe_only, bool):
            raise ConfigError(f"black-box: options.contexts.{name}.observe_only must be true or false")
        declared.append(Context(dim=names.index(name), cost=float(cost), controllable=not observe_only))
    return tuple(sorted(declared, key=lambda c: c.dim))
