"""The :class:`Problem`: a BoTorch test problem plus the metadata a BO campaign needs.

Convention (the docs' architecture page, "Conventions"): BoTorch maximizes, so every problem
is stored in the maximization sense. A problem that the literature minimizes is negated once,
here, via the ``negate`` flag of its BoTorch test problem. Outcomes are laid out as
``[objective_1, ..., objective_m, slack_1, ..., slack_c]`` where a constraint is satisfied
when its slack is ``>= 0`` (BoTorch's ``ConstrainedBaseTestProblem`` convention).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from botorch.test_functions.base import BaseTestProblem, ConstrainedBaseTestProblem
from torch import Tensor

from dsbo.errors import ConfigError, CostError, ProblemError
from dsbo.space import Outcomes, SearchSpace

#: How a context variable is treated in one iteration (SADCBO, Martinelli et al. 2024, sec. 2):
#: ``optimized`` (set by the optimizer, its cost paid), ``observed`` (taken from the
#: environment for free and given to the surrogate) or ``ignored`` (taken from the
#: environment, left out of the surrogate).
CONTEXT_ROLES = ("optimized", "observed", "ignored")


@dataclass(frozen=True)
class Context:
    """A context variable ``z_j``: a dimension of the problem that the environment sets (drawn
    from ``p(z_j)``, uniform on ``[low, high]``) unless it is optimized, at ``cost``.

    Args:
        dim: The problem dimension it occupies.
        cost: ``lambda_j >= 0``, paid in each iteration that optimizes it.
        controllable: ``False`` for a context that can only be observed (the weather):
            it is never optimized.
        low, high: The support of its uniform distribution ``p(z_j)`` (default: its bounds).
    """

    dim: int
    cost: float = 1.0
    controllable: bool = True
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.cost, bool)
            or not isinstance(self.cost, int | float)
            or not math.isfinite(self.cost)
            or self.cost < 0
        ):
            raise ConfigError(f"context cost must be a finite number >= 0, got {self.cost!r}")


@dataclass
class Problem:
    """A benchmark problem in the maximization sense.

    Args:
        name: Registry name, e.g. ``"branin-50d"``.
        test_problem: The BoTorch test problem (already negated where the literature
            minimizes).
        default_point: The default / target configuration ``x^s`` (a ``d``-vector within
            the bounds). Sparsity-aware methods (SEBO, BONSAI) count changes from it.
        relevant_dims: Indices of the dimensions that affect the outcome.
        optimal_value: Best achievable objective value (maximization sense), if known.
        noise_std: Standard deviation of the observation noise added by ``evaluate``.
        objective_names: One name per objective.
        constraint_names: One name per outcome constraint.
        ref_point: Hypervolume reference point (maximization sense) for multi-objective
            problems.
        integer_dims: Dimensions whose values must be integers.
        parameter_names: One name per dimension (default ``x0 .. x{d-1}``).
        contexts: The context variables (:class:`Context`), if any; every other dimension
            is a design variable.
        design_cost: ``lambda_x``, the cost of one evaluation with no context optimized.
        cost_function: ``lambda(x)``, the cost of evaluating each row of ``X`` (``n x d`` ->
            ``n``, every value finite and ``> 0``) when it varies over the domain (cost-aware
            BO, Paria thesis ch. 4); a differentiable torch function lets cost-aware policies
            optimize through it. ``None``: every evaluation costs ``design_cost``.
        space: The named, typed parameters (:class:`~dsbo.space.SearchSpace`) whose model
            columns are the problem's box: ``parameter_names`` become its column names and
            ``integer_dims`` its integer columns. ``None``: the box itself, a float per
            dimension (an int per integer dimension).
        outcomes: The outcomes as the user declared them (:class:`~dsbo.space.Outcomes`:
            directions, thresholds, constraints such as ``"memory <= 8"``); they set
            ``objective_names``/``constraint_names`` (the stored names) and, from the
            thresholds, ``ref_point``. ``None``: the stored outcomes as they are (objectives
            maximized, constraints as slacks), :meth:`Outcomes.maximized`.

    Example:
        >>> problem = get_problem("branin-50d")
        >>> Y = problem.evaluate(problem.default_point.unsqueeze(0))
    """

    name: str
    test_problem: BaseTestProblem
    default_point: Tensor
    relevant_dims: tuple[int, ...]
    optimal_value: float | None = None
    noise_std: float | None = None
    objective_names: tuple[str, ...] = ("objective",)
    constraint_names: tuple[str, ...] = ()
    ref_point: Tensor | None = None
    integer_dims: tuple[int, ...] = ()
    parameter_names: tuple[str, ...] = ()
    description: str = ""
    metadata: dict = field(default_factory=dict)
    contexts: tuple[Context, ...] = ()
    design_cost: float = 1.0
    cost_function: Callable[[Tensor], Tensor] | None = None
    space: SearchSpace | None = None
    outcomes: Outcomes | None = None

    def __post_init__(self) -> None:
        d = self.dim
        if self.outcomes is not None:
            m = len(self.outcomes.objectives)
            self.objective_names = self.outcomes.stored_names[:m]
            self.constraint_names = self.outcomes.stored_names[m:]
            if self.ref_point is None and self.outcomes.ref_point() is not None:
                self.ref_point = torch.tensor(self.outcomes.ref_point(), dtype=torch.double)
        if self.space is not None:
            self._adopt_space()
        self.default_point = torch.as_tensor(self.default_point, dtype=torch.double).reshape(-1)
        if self.default_point.numel() != d:
            raise ProblemError(
                f"{self.name}: default_point has {self.default_point.numel()} entries, "
                f"the problem has {d} dimensions"
            )
        self.relevant_dims = tuple(int(i) for i in self.relevant_dims)
        if len(self.parameter_names) != d:
            self.parameter_names = tuple(f"x{i}" for i in range(d))
        if any(i < 0 or i >= d for i in self.relevant_dims):
            raise ProblemError(
                f"{self.name}: relevant_dims {self.relevant_dims} outside 0..{d - 1}"
            )
        n_obj = getattr(self.test_problem, "num_objectives", 1)
        if len(self.objective_names) != n_obj:
            self.objective_names = tuple(f"objective_{i}" for i in range(n_obj))
        n_con = getattr(self.test_problem, "num_constraints", 0)
        if len(self.constraint_names) != n_con:
            self.constraint_names = tuple(f"constraint_{i}" for i in range(n_con))
        if self.outcomes is None:
            self.outcomes = Outcomes.maximized(self.objective_names, self.constraint_names)
        elif self.outcomes.stored_names != self.outcome_names:
            raise ProblemError(
                f"{self.name}: declares outcomes {list(self.outcomes.stored_names)}, its function "
                f"returns {n_obj} objective(s) and {n_con} constraint(s)"
            )
        if self.space is None:
            self.space = SearchSpace.from_box(
                self.parameter_names, self.bounds.T.tolist(), self.integer_dims
            )
        self.validate(self.default_point.unsqueeze(0), what="default_point")
        self._check_contexts()

    def _adopt_space(self) -> None:
        """Take the column names and integer columns from ``space`` (whose box must be the
        test problem's)."""
        space = self.space
        if space.dim != self.dim or not torch.allclose(
            torch.tensor(space.bounds, dtype=torch.double).T, self.bounds, rtol=1e-12, atol=1e-12
        ):
            raise ProblemError(f"{self.name}: the search space's box is not the problem's bounds")
        self.parameter_names = tuple(space.column_names)
        self.integer_dims = tuple(space.integer_columns)

    def _check_contexts(self) -> None:
        self.contexts = tuple(self.contexts)
        dims = [c.dim for c in self.contexts]
        if len(set(dims)) != len(dims) or any(not 0 <= j < self.dim for j in dims):
            raise ProblemError(
                f"{self.name}: context dimensions {dims} must be distinct and in 0..{self.dim - 1}"
            )
        if len(dims) == self.dim:
            raise ProblemError(
                f"{self.name}: every dimension is a context; at least one must be a design variable"
            )
        if (
            isinstance(self.design_cost, bool)
            or not isinstance(self.design_cost, int | float)
            or not math.isfinite(self.design_cost)
            or self.design_cost <= 0
        ):
            raise ConfigError(
                f"{self.name}: design_cost must be a finite number > 0, got {self.design_cost!r}"
            )
        lb, ub = self.bounds
        for c in self.contexts:
            low = lb[c.dim].item() if c.low is None else c.low
            high = ub[c.dim].item() if c.high is None else c.high
            if not lb[c.dim].item() <= low < high <= ub[c.dim].item():
                raise ProblemError(
                    f"{self.name}: context {self.parameter_names[c.dim]} has p(z) on [{low}, {high}], "
                    f"which must be an interval within its bounds"
                )

    # ---------------------------------------------------------------- contexts
    @property
    def evaluated_outside_python(self) -> bool:
        """Whether the problem's function lives outside Python (a black box told by ask/tell)."""
        return bool(getattr(self.test_problem, "external", False))

    @property
    def is_contextual(self) -> bool:
        return bool(self.contexts)

    @property
    def context_dims(self) -> tuple[int, ...]:
        return tuple(c.dim for c in self.contexts)

    @property
    def design_dims(self) -> tuple[int, ...]:
        ctx = set(self.context_dims)
        return tuple(j for j in range(self.dim) if j not in ctx)

    @property
    def context_names(self) -> tuple[str, ...]:
        return tuple(self.parameter_names[c.dim] for c in self.contexts)

    def context_distribution(self) -> Tensor:
        """``2 x c`` bounds of the uniform ``p(z)`` of each context, in ``contexts`` order."""
        lb, ub = self.bounds
        low = [lb[c.dim].item() if c.low is None else c.low for c in self.contexts]
        high = [ub[c.dim].item() if c.high is None else c.high for c in self.contexts]
        return torch.tensor([low, high], dtype=torch.double)

    # ---------------------------------------------------------------- shape facts
    @property
    def dim(self) -> int:
        return int(self.test_problem.dim)

    @property
    def bounds(self) -> Tensor:
        """``2 x d`` tensor of lower and upper bounds (float64)."""
        return self.test_problem.bounds.to(torch.double)

    @property
    def num_objectives(self) -> int:
        return len(self.objective_names)

    @property
    def num_constraints(self) -> int:
        return len(self.constraint_names)

    @property
    def outcome_names(self) -> tuple[str, ...]:
        return self.objective_names + self.constraint_names

    @property
    def is_multi_objective(self) -> bool:
        return self.num_objectives > 1

    def parse_outcomes(self, values: object) -> list[float]:
        """The stored outcome vector (maximized objectives, then slacks) from what an
        evaluator or a user reported, in the user's terms (:meth:`Outcomes.to_stored`).

        Raises:
            OutcomeError: naming the outcome at fault.
        """
        return self.outcomes.to_stored(values)

    # ---------------------------------------------------------------- evaluation
    def validate(self, X: Tensor, what: str = "X") -> Tensor:
        """Check that ``X`` is an ``n x d`` finite tensor inside the bounds.

        Raises:
            ProblemError: naming the offending dimension, value and bound.
        """
        X = torch.as_tensor(X, dtype=torch.double)
        if X.ndim == 1:
            X = X.unsqueeze(0)
        if X.ndim != 2 or X.shape[-1] != self.dim:
            raise ProblemError(
                f"{self.name}: {what} must have shape n x {self.dim}, got {tuple(X.shape)}"
            )
        if not torch.isfinite(X).all():
            raise ProblemError(f"{self.name}: {what} contains NaN or inf")
        lb, ub = self.bounds
        tol = 1e-9 * (ub - lb).clamp_min(1.0)
        low = X < lb - tol
        high = X > ub + tol
        if low.any() or high.any():
            i, j = torch.nonzero(low | high)[0].tolist()
            raise ProblemError(
                f"{self.name}: {what}[{i}, {j}] = {X[i, j].item():.6g} is outside the bounds "
                f"[{lb[j].item():.6g}, {ub[j].item():.6g}] of dimension {j}"
            )
        for j in self.integer_dims:
            if not torch.equal(X[:, j], X[:, j].round()):
                raise ProblemError(f"{self.name}: {what}[:, {j}] must be integer-valued")
        return X

    def round_to_domain(self, X: Tensor) -> Tensor:
        """Clamp ``X`` into the bounds and round the integer dimensions; on a search space that
        is not a plain box, snap every row to the point of its user values
        (:meth:`dsbo.space.SearchSpace.snap`: log scales, one-hot groups, inactive conditional
        parameters, integers kept inside the linear constraints)."""
        X = torch.max(torch.min(X, self.bounds[1]), self.bounds[0])
        if self.space is not None and not self.space.is_box:
            rows = X.detach().reshape(-1, self.dim).tolist()
            snapped = torch.tensor([self.space.snap(u) for u in rows], dtype=X.dtype)
            return snapped.reshape(X.shape)
        if self.integer_dims:
            X = X.clone()
            idx = list(self.integer_dims)
            X[..., idx] = X[..., idx].round()
        return X

    def sobol_design(
        self, n: int, seed: int, transform: Callable[[Tensor], Tensor] | None = None
    ) -> Tensor:
        """``n`` points of a scrambled Sobol sequence (``seed``) over the box, ``transform`` (e.g.
        fixed features) applied, rounded to the domain. With linear parameter constraints, the
        first ``n`` feasible points of a longer sequence.

        Raises:
            ProblemError: if fewer than ``n`` of ``2^16`` points satisfy the constraints.
        """
        from botorch.utils.sampling import draw_sobol_samples

        transform = transform or (lambda X: X)
        if not self.space.constraints:
            X = draw_sobol_samples(self.bounds, n=n, q=1, seed=seed).squeeze(1)
            return self.round_to_domain(transform(X))
        size = max(64, 8 * n)
        while True:
            X = self.round_to_domain(
                transform(draw_sobol_samples(self.bounds, n=size, q=1, seed=seed).squeeze(1))
            )
            ok = torch.tensor([self.space.feasible(u) for u in X.tolist()], dtype=torch.bool)
            if int(ok.sum()) >= n or size >= 2**16:
                break
            size *= 4
        if int(ok.sum()) < n:
            raise ProblemError(
                f"{self.name}: only {int(ok.sum())} of {size} quasi-random points satisfy the parameter "
                f"constraints {[c.text for c in self.space.constraints]}; {n} are needed"
            )
        return X[ok][:n]

    def params(self, x: Tensor | Sequence[float]) -> dict:
        """The named user values of the model point ``x`` (:meth:`SearchSpace.decode`)."""
        return self.space.decode(torch.as_tensor(x, dtype=torch.double).reshape(-1).tolist())

    def point(self, params: dict, what: str = "parameters") -> Tensor:
        """The model point (a ``d``-vector) of named user values (:meth:`SearchSpace.encode`)."""
        return torch.tensor(self.space.encode(params, where=what), dtype=torch.double)

    def evaluate(self, X: Tensor, noise: bool = True) -> Tensor:
        """Outcomes ``n x (num_objectives + num_constraints)`` in the maximization sense."""
        # ``validate`` tolerates a rounding error past a bound; BoTorch does not, so clamp.
        X = self.round_to_domain(self.validate(X))
        tp = self.test_problem
        dtype = tp.bounds.dtype
        Xt = X.to(dtype)
        f = tp(Xt, noise=noise)
        if f.ndim == 1:
            f = f.unsqueeze(-1)
        if isinstance(tp, ConstrainedBaseTestProblem):
            slack = tp.evaluate_slack(Xt, noise=noise)
            f = torch.cat([f, slack], dim=-1)
        return f.to(torch.double)

    def evaluate_true(self, X: Tensor) -> Tensor:
        """Noiseless outcomes (same layout as :meth:`evaluate`)."""
        return self.evaluate(X, noise=False)

    @property
    def takes_trial(self) -> bool:
        """Whether an evaluation reports intermediate values to a running trial (its test
        problem has ``run_with_trial(x, trial)``: the train-run problem)."""
        return callable(getattr(self.test_problem, "run_with_trial", None))

    def __call__(self, x: Tensor | Sequence[float], trial: Any = None) -> Tensor:
        """Evaluate a single point ``x`` (a ``d``-vector); returns a vector of outcomes.

        This is the evaluator protocol of :class:`dsbo.campaign.Campaign`; a problem that
        :attr:`takes_trial` is given the running trial (early stopping).
        """
        X = torch.as_tensor(x, dtype=torch.double).reshape(1, -1)
        if trial is not None and self.takes_trial:
            row = self.round_to_domain(self.validate(X))[0]
            return torch.tensor(
                self.test_problem.run_with_trial(row.tolist(), trial), dtype=torch.double
            )
        return self.evaluate(X)[0]

    def evaluation_cost(self, X: Tensor) -> Tensor:
        """``lambda(x)`` for each row of ``X`` (``n``, float64): ``cost_function`` or
        ``design_cost``.

        Raises:
            CostError: if the cost function fails or returns a value that is not a finite
                number ``> 0``, naming the row.
        """
        X = torch.as_tensor(X, dtype=torch.double)
        if self.cost_function is None:
            return torch.full(X.shape[:-1], float(self.design_cost), dtype=torch.double)
        try:
            cost = torch.as_tensor(self.cost_function(X), dtype=torch.double)
        except Exception as exc:  # a broken cost model is the cost's failure, named as such
            raise CostError(
                f"{self.name}: the cost function failed: {type(exc).__name__}: {exc}"
            ) from exc
        if cost.shape != X.shape[:-1]:
            raise CostError(
                f"{self.name}: the cost function returned shape {tuple(cost.shape)} for "
                f"{tuple(X.shape)} inputs; it must return one cost per row"
            )
        bad = ~(torch.isfinite(cost) & (cost > 0))
        if bad.any():
            i = int(torch.nonzero(bad.reshape(-1))[0])
            raise CostError(
                f"{self.name}: the cost function returned {cost.reshape(-1)[i].item()!r} for row {i}; "
                "costs must be finite numbers > 0"
            )
        return cost

    def is_feasible(self, Y: Tensor) -> Tensor:
        """Boolean ``n`` mask: all constraint slacks ``>= 0`` (all True if unconstrained)."""
        if self.num_constraints == 0:
            return torch.ones(Y.shape[0], dtype=torch.bool)
        return (Y[:, self.num_objectives :] >= 0).all(dim=-1)
