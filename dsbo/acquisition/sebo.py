r"""SEBO: sparsity-exploring Bayesian optimization (Liu et al., AISTATS 2023, sections 4-5).

SEBO treats sparsity as a second objective: it maximizes ``f`` and ``-xi`` jointly, where
``xi(x)`` measures the distance of ``x`` from a target ``x^s`` (:mod:`dsbo.acquisition.sparsity`: L0, L1 or
group lasso, in unit-cube coordinates). The model is the objective surrogate plus a
deterministic model of ``-xi`` (BoTorch ``GenericDeterministicModel`` in a ``ModelList``) and
the acquisition is the expected hypervolume improvement of ``(f, -xi)`` (eq. 8), with the
reference point inferred from the observed ``(f, -xi)`` front (BoTorch's
``infer_reference_point``, exact sparsity values).

Two acquisition functions:

- ``"ehvi"`` (default, ``q = 1``): the closed form of
  :class:`~dsbo.acquisition.sparse_ehvi.LogSparseExpectedHypervolumeImprovement`, exact and
  Monte-Carlo free because ``xi`` is known. It takes the observed objective values as the
  (noiseless) front.
- ``"qlognehvi"`` (the released implementation's choice, and the path for ``q > 1``, pending
  points and multi-objective problems): BoTorch's MC ``qLogNoisyExpectedHypervolumeImprovement``
  on the model list; ``q > 1`` is sequential greedy with the chosen points as pending.

**L0 by homotopy continuation** (section 5, appendix E.1): the exact L0 is piecewise constant,
so the acquisition is optimized with a smooth ``xi_a`` along a log-spaced sequence of ``a``
(from ``10^-0.5`` to ``10^-3``), from restarts that are partly sparse Sobol points and partly
perturbed Pareto-front points; the traced candidates are snapped onto the target, scored with
the exact L0 count, and the best one that does not repeat an evaluated or pending point is
proposed. L1 and group lasso need no homotopy. This machinery, shared with IR and ER, is
:class:`~dsbo.acquisition.sparsity_policy.SparsityPolicy` (its module docstring has the
details); its names are importable from here too.

Outcome constraints pass through: ``qlognehvi`` uses the constraint slacks as
:class:`~dsbo.acquisition.plain.QLogNEI` does; ``ehvi`` multiplies by the probability of
feasibility and builds the front from feasible points.

Example:
    >>> from dsbo.campaign import Campaign
    >>> from dsbo.problems import get_problem
    >>> campaign = Campaign(get_problem("branin-50d", target="zero"), surrogate="map-saas",
    ...                     acquisition={"name": "sebo", "penalty": "l0"}, budget=60)
    >>> campaign.run().history[["objective", "num_changed"]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.multi_objective.logei import (
    qLogNoisyExpectedHypervolumeImprovement,
)
from botorch.acquisition.multi_objective.objective import IdentityMCMultiOutputObjective
from botorch.models import ModelList
from botorch.models.deterministic import GenericDeterministicModel
from botorch.models.model import Model
from botorch.sampling.get_sampler import get_sampler
from botorch.utils.multi_objective.hypervolume import infer_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated
from torch import Tensor

from dsbo.acquisition.base import History, OptimizerSettings, register_policy
from dsbo.acquisition.plain import slack_constraints
from dsbo.acquisition.sparse_ehvi import LogSparseExpectedHypervolumeImprovement
from dsbo.acquisition.sparsity import SparsityMeasure
from dsbo.acquisition.sparsity_policy import (  # noqa: F401  (PRUNE_TOL, STARTS: re-exported)
    PRUNE_TOL,
    STARTS,
    SparsityPolicy,
    TraceResult,
    prune_restarts,
    resolve_sparsity_target,
    snap_to_target,
)
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem


@register_policy("sebo", "SEBO: EHVI of (objective, -sparsity), L0 by homotopy (Liu et al., 2023)")
class SEBO(SparsityPolicy):
    r"""Sparsity-exploring BO: maximize the EHVI of ``(f, -xi)``.

    Args:
        acquisition_function: ``"ehvi"`` (closed form; used when ``q = 1``, there are no
            pending points and one objective, else ``"qlognehvi"``) or ``"qlognehvi"``.
        ref_point: ``(r_f, r_xi)`` (objective lower bounds, then the sparsity upper bound);
            default: ``r_xi`` is the largest ``xi`` over the box (the paper's choice: the
            number of non-fixed parameters for L0; every non-fixed coordinate at the bound
            farther from the target for L1 and group lasso), and only ``r_f`` is inferred,
            by BoTorch's ``infer_reference_point`` on the observed ``(f, -xi)`` front.
        front: The objective values of the closed-form EHVI's Pareto front:
            ``"posterior_mean"`` (default: the model's mean at the observed points, as noisy
            EHVI does in expectation, so noise in ``y`` does not enter the front) or
            ``"observed"`` (the observed ``y``).
        **kwargs: See :class:`SparsityPolicy` (homotopy schedule and restarts, snapping,
            the repeat guards).

    Example:
        >>> policy = SEBO(penalty="l0", target="zero")
        >>> proposal = policy.propose(model, history, problem, q=1)
        >>> proposal.metadata[0]["xi"], proposal.metadata[0]["a_values"][-1]
    """

    name = "sebo"
    objectives = "any"
    ACQUISITION_FUNCTIONS = ("ehvi", "qlognehvi")
    FRONTS = ("posterior_mean", "observed")

    def __init__(
        self,
        penalty: str = "l0",
        target: str | Sequence[float] | None = None,
        groups: Sequence[Sequence[int]] | None = None,
        acquisition_function: str = "ehvi",
        ref_point: Sequence[float] | None = None,
        front: str = "posterior_mean",
        optimizer: OptimizerSettings | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(penalty, target, groups, optimizer=optimizer, **kwargs)
        if acquisition_function not in self.ACQUISITION_FUNCTIONS:
            raise ConfigError(
                f"acquisition.options.acquisition_function={acquisition_function!r}; choose one "
                f"of {list(self.ACQUISITION_FUNCTIONS)}"
            )
        self.acquisition_function = acquisition_function
        self.ref_point = None if ref_point is None else [float(r) for r in ref_point]
        if front not in self.FRONTS:
            raise ConfigError(
                f"acquisition.options.front={front!r}; choose one of {list(self.FRONTS)}"
            )
        self.front = front

    def largest_sparsity(self, problem: Problem, measure: SparsityMeasure) -> float:
        """The largest ``xi`` over the box: every non-fixed coordinate at the bound farther from
        the target, the fixed features at their values (``d - #fixed`` for L0 when the fixed
        values are the target's)."""
        lb, ub = problem.bounds
        target = measure.target.to(lb)
        farthest = torch.where(ub - target >= target - lb, ub, lb)
        farthest = self.optimizer.apply_fixed_features(farthest.unsqueeze(0))
        return float(measure.exact_value(farthest)[0])

    def reference_point(
        self, history: History, problem: Problem, measure: SparsityMeasure
    ) -> list[float]:
        """``(r_f1, ..., r_fm, r_xi)`` in the paper's convention (``xi`` minimized)."""
        m = problem.num_objectives
        if self.ref_point is not None:
            if len(self.ref_point) != m + 1:
                raise ConfigError(
                    f"acquisition.options.ref_point needs {m + 1} values (objectives, then "
                    f"sparsity), got {self.ref_point}"
                )
            return list(self.ref_point)
        feasible = problem.is_feasible(history.Y)
        if not feasible.any():
            feasible = torch.ones_like(feasible)
        Y = torch.cat(
            [history.Y[feasible, :m], -measure.exact_value(history.X[feasible]).unsqueeze(-1)],
            dim=-1,
        )
        ref = infer_reference_point(Y[is_non_dominated(Y)])
        if problem.ref_point is not None:
            ref[:m] = torch.as_tensor(problem.ref_point, dtype=ref.dtype)
        return ref[:m].tolist() + [self.largest_sparsity(problem, measure)]

    def prepare(
        self, model: Model, history: History, problem: Problem, q: int, measure: SparsityMeasure
    ) -> dict[str, Any]:
        closed_form = (
            self.acquisition_function == "ehvi"
            and q == 1
            and history.X_pending is None
            and problem.num_objectives == 1
        )
        kind = "ehvi" if closed_form else "qlognehvi"
        ref_point = self.reference_point(history, problem, measure)
        metadata: dict[str, Any] = {"acquisition_function": kind, "ref_point": ref_point}
        if kind == "ehvi":
            metadata["front"] = self.front
        return {"kind": kind, "ref_point": ref_point, "metadata": metadata}

    def front_values(self, model: Model, X: Tensor, Y: Tensor) -> Tensor:
        """The objective values of the observed front: the posterior mean at ``X`` (the
        mixture mean for ensembles) or the observed ``Y``, per :attr:`front`."""
        if self.front == "observed" or X.shape[0] == 0:
            return Y[:, 0]
        with torch.no_grad():
            posterior = model.posterior(X)
        mean = getattr(posterior, "mixture_mean", posterior.mean)
        return mean[..., 0].reshape(-1).to(Y)

    def acquisition(
        self,
        model: Model,
        history: History,
        problem: Problem,
        measure: SparsityMeasure,
        X_pending: Tensor | None,
        context: dict[str, Any],
    ) -> AcquisitionFunction:
        m, c = problem.num_objectives, problem.num_constraints
        ref = context["ref_point"]
        if context["kind"] == "ehvi":
            feasible = problem.is_feasible(history.Y)
            return LogSparseExpectedHypervolumeImprovement(
                model,
                sparsity=measure,
                f_observed=self.front_values(model, history.X[feasible], history.Y[feasible]),
                xi_observed=measure(history.X[feasible]),
                ref_point=(ref[0], ref[1]),
                constraint_indices=[m + i for i in range(c)],
            )
        sparsity_model = GenericDeterministicModel(lambda X: -measure(X).unsqueeze(-1))
        surrogates = list(model.models) if isinstance(model, ModelList) else [model]
        model_list = ModelList(*surrogates, sparsity_model)
        n_out = model.num_outputs
        sampler = get_sampler(
            model_list.posterior(history.X[:1]),
            torch.Size([self.optimizer.mc_samples]),
            seed=history.seed,
        )
        return qLogNoisyExpectedHypervolumeImprovement(
            model=model_list,
            ref_point=ref[:m] + [-ref[m]],
            X_baseline=history.X,
            sampler=sampler,
            objective=IdentityMCMultiOutputObjective(outcomes=list(range(m)) + [n_out]),
            constraints=slack_constraints(problem) or None,
            X_pending=X_pending,
            prune_baseline=True,
        )


__all__ = [
    "SEBO",
    "SparsityPolicy",
    "TraceResult",
    "prune_restarts",
    "resolve_sparsity_target",
    "snap_to_target",
]
