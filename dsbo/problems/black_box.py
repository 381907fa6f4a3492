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
from dsbo.problems.base import Problem
from dsbo.problems.options import resolve_target
from dsbo.problems.registry import register_problem


class ExternalBlackBox(BaseTestProblem):
    """The box ``bounds`` with ``num_objectives`` objectives and ``num_constraints`` slacks,
    evaluated outside Python."""

    _is_minimization_by_default = False

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
) -> Problem:
    """An external black box.

    Args:
        parameters: ``{name: [lower, upper]}`` in order.
        objectives: Outcome names to maximize (negate a cost when you report it).
        constraints: Outcome names of constraint slacks, feasible when ``>= 0``.
        integer: Names of the integer-valued parameters.
        target: The default configuration: ``"center"``, ``"zero"`` (lower corner), a list, or
            ``{name: value}``.
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
        test_problem=test_problem,
        default_point=resolve_target(target, test_problem.bounds, "black-box"),
        relevant_dims=tuple(range(len(names))),
        objective_names=tuple(objectives),
        constraint_names=tuple(constraints),
        integer_dims=tuple(integer_dims),
        parameter_names=tuple(names),
    )


