r"""Regularized expected improvement: internal (IR) and external (ER) regularization.

Liu et al., *Sparse Bayesian Optimization*, AISTATS 2023, section 3. With a sparsity measure
``xi`` (:mod:`dsbo.acquisition.sparsity`, relative to a target ``x^s``) and a weight ``lambda``:

- **ER** (eq. 3-4): ``alpha_ER(x) = EI(x) - lambda * xi(x)``, the penalty outside the
  expectation. ER is defined on EI itself (not LogEI, whose log scale would change what
  ``lambda`` means), so it uses BoTorch's ``PenalizedAcquisitionFunction`` around the analytic
  ``ExpectedImprovement`` (``ConstrainedExpectedImprovement`` with outcome constraints); for
  ``q > 1`` or pending points, around MC ``qNoisyExpectedImprovement`` (sequential greedy).
- **IR** (eq. 5-6): ``alpha_IR(x) = E[(g(x) - g(x*))_+]`` for ``g = f - lambda * xi``, the
  penalty inside the improvement, with ``x*`` the incumbent of ``g``. Because ``xi`` is a
  known deterministic function of ``x``, ``g(x)`` is Gaussian when ``f(x)`` is:
  ``g(x) ~ N(mu(x) - lambda xi(x), sigma(x)^2)``, so for ``q = 1``

      alpha_IR(x) = EI(mu(x) - lambda xi(x), sigma(x); g*),   g* = max_i y_i - lambda xi(x_i),

  a closed form (:class:`LogPenalizedExpectedImprovement`, the default
  ``acquisition_function: ei``; no Monte Carlo, differentiable through the smooth ``xi_a``;
  averaged over the members of an ensemble model; ``log P(feasible)`` added for outcome
  constraints with independent posteriors, as in BoTorch's ``LogConstrainedExpectedImprovement``).
  ``acquisition_function: qlognei``, and every batch or pending point, use BoTorch's MC
  ``qLogNoisyExpectedImprovement`` with a ``PenalizedMCObjective`` (objective minus
  ``lambda * xi(X)``), whose incumbent is the best penalized baseline point under the
  posterior (noise-aware). (The log is monotone, so the maximizers agree with eq. 6.)

**Units of lambda.** The paper standardizes the objective before fitting and sweeps
``lambda`` in ``1e-3 .. 1e-1`` on that scale. dsbo's models predict raw values, so ``f`` is
standardized here with the mean ``m_y`` and standard deviation ``s_y`` of the observed
objective: IR uses ``(f - m_y) / s_y - lambda * xi``, ER maximizes ``EI / s_y - lambda * xi``
(implemented as ``EI - (lambda s_y) xi``, the same maximizer).

Both use :class:`~dsbo.acquisition.sebo.SparsityPolicy`: L0 by homotopy continuation over the
smooth ``xi_a`` with the final choice under the exact count, or L1; snapping onto the target;
the guard against re-proposing evaluated points.

Example:
    >>> campaign = Campaign(get_problem("hartmann6-50d", target="zero"), surrogate="map-saas",
    ...                     acquisition={"name": "ir", "penalty_weight": 0.01}, budget=60)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import (
    AnalyticAcquisitionFunction,
    ConstrainedExpectedImprovement,
    ExpectedImprovement,
    _log_ei_helper,
)
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.acquisition.monte_carlo import qNoisyExpectedImprovement
from botorch.acquisition.objective import GenericMCObjective, ScalarizedPosteriorTransform
from botorch.acquisition.penalized import PenalizedAcquisitionFunction, PenalizedMCObjective
from botorch.exceptions.warnings import NumericsWarning
from botorch.models.model import Model
from botorch.utils.probability.utils import log_ndtr as log_Phi
from botorch.utils.transforms import (
    average_over_ensemble_models,
    is_ensemble,
    t_batch_mode_transform,
)
from torch import Tensor

from dsbo.acquisition.base import History, OptimizerSettings, register_policy
from dsbo.acquisition.plain import best_feasible_value, slack_constraints
from dsbo.acquisition.sebo import SparsityPolicy
from dsbo.acquisition.sparsity import SparsityMeasure
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem


class _SumOverBatch(torch.nn.Module):
    """``xi`` summed over the ``q`` points: ``batch x q x d -> batch`` (a penalty_func)."""

    def __init__(self, measure: SparsityMeasure) -> None:
        super().__init__()
        self.measure = measure

    def forward(self, X: Tensor) -> Tensor:
        return self.measure(X).sum(dim=-1)


class _PerPoint(torch.nn.Module):
    """``xi`` per point as ``1 x batch x q`` (the penalty shape of ``PenalizedMCObjective``)."""

    def __init__(self, measure: SparsityMeasure) -> None:
        super().__init__()
        self.measure = measure

    def forward(self, X: Tensor) -> Tensor:
        return self.measure(X).unsqueeze(0)


class LogPenalizedExpectedImprovement(AnalyticAcquisitionFunction):
    r"""Log of the closed-form IR acquisition: ``log EI`` of ``g = (f - m) / s - lambda xi``.

    With ``f(x) ~ N(mu, sigma^2)`` and a deterministic ``xi``, ``g(x)`` is Gaussian with mean
    ``(mu - m) / s - lambda xi(x)`` and standard deviation ``sigma / s``, so
    ``E[(g(x) - g*)_+] = (sigma / s) (phi(u) + u Phi(u))`` with
    ``u = ((mu - m) / s - lambda xi(x) - g*) / (sigma / s)``, evaluated in log space with
    BoTorch's ``_log_ei_helper``. Outcome constraints add ``log P(c_j(x) >= 0)``; an ensemble
    model's members are averaged (``logmeanexp``).

    Args:
        model: A fitted model; output ``objective_index`` is ``f``, the outputs in
            ``constraint_indices`` are constraint slacks (feasible when ``>= 0``).
        sparsity: Maps ``batch x 1 x d`` inputs to ``batch x 1`` values of ``xi``.
        best_g: The incumbent ``g*`` (standardized units).
        mean, std: ``m`` and ``s``, the standardization of ``f``.
        penalty_weight: ``lambda``.

    Example:
        >>> acqf = LogPenalizedExpectedImprovement(model, measure, best_g=0.8, mean=m, std=s,
        ...                                        penalty_weight=0.01)
        >>> acqf(X.unsqueeze(-2))  # batch x 1 x d -> batch
    """

    _log: bool = True

    def __init__(
        self,
        model: Model,
        sparsity: Callable[[Tensor], Tensor],
        best_g: float,
        mean: float,
        std: float,
        penalty_weight: float,
        objective_index: int = 0,
        constraint_indices: Sequence[int] = (),
    ) -> None:
        super().__init__(model=model, allow_multi_output=True)
        self.sparsity = sparsity
        self.best_g, self.mean, self.std = float(best_g), float(mean), float(std)
        self.penalty_weight = float(penalty_weight)
        self.objective_index = objective_index
        self.constraint_indices = list(constraint_indices)

    @t_batch_mode_transform(expected_q=1)
    @average_over_ensemble_models
    def forward(self, X: Tensor) -> Tensor:
        r"""``log alpha_IR`` at ``batch x 1 x d`` inputs: a ``batch`` tensor."""
        means, sigmas = self._mean_and_sigma(X)  # batch (x ensemble) x m
        mu = (means[..., self.objective_index] - self.mean) / self.std
        sigma = sigmas[..., self.objective_index] / self.std
        xi = self.sparsity(X).squeeze(-1)  # batch
        if is_ensemble(self.model):
            xi = xi.unsqueeze(-1)  # broadcast over the ensemble members
        u = (mu - self.penalty_weight * xi - self.best_g) / sigma
        value = _log_ei_helper(u) + sigma.log()
        for j in self.constraint_indices:
            value = value + log_Phi(means[..., j] / sigmas[..., j])
        return value


class RegularizedEI(SparsityPolicy):
    """Shared options of IR and ER (see :class:`~dsbo.acquisition.sebo.SparsityPolicy`).

    Args:
        penalty_weight: ``lambda``, relative to the standardized objective (paper: 1e-3..1e-1).
        penalty: ``"l0"`` (homotopy) or ``"l1"``.
        target: The sparsity target (see :class:`~dsbo.acquisition.sebo.SparsityPolicy`).
        **kwargs: The homotopy, snapping and repeat-guard options of
            :class:`~dsbo.acquisition.sebo.SparsityPolicy`.
    """

    ALLOWED_PENALTIES = ("l0", "l1")

    def __init__(
        self,
        penalty_weight: float = 1e-2,
        penalty: str = "l0",
        target: str | Sequence[float] | None = None,
        optimizer: OptimizerSettings | None = None,
        **kwargs: Any,
    ) -> None:
        if penalty not in self.ALLOWED_PENALTIES:
            raise ConfigError(
                f"acquisition {self.name!r}: penalty={penalty!r}; choose one of "
                f"{list(self.ALLOWED_PENALTIES)}"
            )
        if (
            isinstance(penalty_weight, bool)
            or not isinstance(penalty_weight, int | float)
            or penalty_weight < 0
        ):
            raise ConfigError(
                f"acquisition {self.name!r}: penalty_weight={penalty_weight!r} must be a number >= 0"
            )
        super().__init__(penalty, target, optimizer=optimizer, **kwargs)
        self.penalty_weight = float(penalty_weight)

    def prepare(
        self, model: Model, history: History, problem: Problem, q: int, measure: SparsityMeasure
    ) -> dict[str, Any]:
        if problem.num_objectives > 1:
            raise ConfigError(
                f"acquisition {self.name!r} is single-objective and {problem.name} has "
                f"{problem.num_objectives} objectives; use sebo with acquisition_function: qlognehvi"
            )
        y = history.Y[:, 0]
        std = float(y.std()) if y.numel() > 1 else 1.0
        return {
            "mean": float(y.mean()),
            "std": std if std > 0 else 1.0,
            "analytic": q == 1 and history.X_pending is None,
            "metadata": {"penalty_weight": self.penalty_weight},
        }


@register_policy(
    "ir", "EI with internal L0/L1 regularization: EI of f - lambda xi (Liu et al., 2023)"
)
class InternalRegularization(RegularizedEI):
    r"""IR: ``E[(g(x) - g(x*))_+]`` with ``g = (f - m_y) / s_y - lambda xi``.

    Args:
        acquisition_function: ``"ei"`` (the closed form
            :class:`LogPenalizedExpectedImprovement`; used when ``q = 1``, there are no pending
            points and some observed point is feasible, else ``"qlognei"``) or ``"qlognei"``
            (MC, noise-aware incumbent).
        **kwargs: See :class:`RegularizedEI`.

    Example:
        >>> policy = InternalRegularization(penalty_weight=0.01, penalty="l0", target="zero")
        >>> policy.propose(model, history, problem, q=1).X
    """

    name = "ir"
    ACQUISITION_FUNCTIONS = ("ei", "qlognei")

    def __init__(self, *args: Any, acquisition_function: str = "ei", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if acquisition_function not in self.ACQUISITION_FUNCTIONS:
            raise ConfigError(
                f"acquisition 'ir': acquisition_function={acquisition_function!r}; choose one "
                f"of {list(self.ACQUISITION_FUNCTIONS)}"
            )
        self.acquisition_function = acquisition_function

    def prepare(
        self, model: Model, history: History, problem: Problem, q: int, measure: SparsityMeasure
    ) -> dict[str, Any]:
        context = super().prepare(model, history, problem, q, measure)
        feasible = problem.is_feasible(history.Y)
        closed_form = (
            self.acquisition_function == "ei" and context["analytic"] and bool(feasible.any())
        )
        context["closed_form"] = closed_form
        context["feasible"] = feasible
        context["metadata"]["acquisition_function"] = "ei" if closed_form else "qlognei"
        return context

    def acquisition(
        self,
        model: Model,
        history: History,
        problem: Problem,
        measure: SparsityMeasure,
        X_pending: Tensor | None,
        context: dict[str, Any],
    ) -> AcquisitionFunction:
        mean, std = context["mean"], context["std"]
        if context["closed_form"] and X_pending is None:
            feasible = context["feasible"]
            g = (history.Y[feasible, 0] - mean) / std - self.penalty_weight * measure(
                history.X[feasible]
            )
            m, c = problem.num_objectives, problem.num_constraints
            return LogPenalizedExpectedImprovement(
                model,
                sparsity=measure,
                best_g=float(g.max()),
                mean=mean,
                std=std,
                penalty_weight=self.penalty_weight,
                constraint_indices=[m + i for i in range(c)],
            )
        objective = PenalizedMCObjective(
            objective=lambda Z, X=None: (Z[..., 0] - mean) / std,
            penalty_objective=_PerPoint(measure),
            regularization_parameter=self.penalty_weight,
            expand_dim=-2 if is_ensemble(model) else None,
        )
        return qLogNoisyExpectedImprovement(
            model=model,
            X_baseline=history.X,
            sampler=self.sampler(history, model),
            objective=objective,
            X_pending=X_pending,
            constraints=slack_constraints(problem) or None,
            prune_baseline=True,
        )


@register_policy("er", "EI with external L0/L1 regularization: EI - lambda xi (Liu et al., 2023)")
class ExternalRegularization(RegularizedEI):
    r"""ER: ``EI(x) / s_y - lambda xi(x)`` (BoTorch's ``PenalizedAcquisitionFunction``).

    Example:
        >>> policy = ExternalRegularization(penalty_weight=0.01, penalty="l1")
        >>> policy.propose(model, history, problem, q=1).X
    """

    name = "er"
    log_scale = False

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
        with warnings.catch_warnings():
            # ER is defined on EI; BoTorch recommends LogEI, which would change lambda's meaning.
            warnings.simplefilter("ignore", NumericsWarning)
            if context["analytic"] and c:
                raw = ConstrainedExpectedImprovement(
                    model,
                    best_f=best_feasible_value(history, problem),
                    objective_index=0,
                    constraints={m + i: (0.0, None) for i in range(c)},
                )
            elif context["analytic"]:
                transform = None
                if model.num_outputs > 1:
                    weights = torch.zeros(model.num_outputs, dtype=torch.double)
                    weights[0] = 1.0
                    transform = ScalarizedPosteriorTransform(weights)
                raw = ExpectedImprovement(
                    model,
                    best_f=best_feasible_value(history, problem),
                    posterior_transform=transform,
                )
            else:
                raw = qNoisyExpectedImprovement(
                    model=model,
                    X_baseline=history.X,
                    sampler=self.sampler(history, model),
                    objective=GenericMCObjective(lambda Z, X=None: Z[..., 0])
                    if model.num_outputs > 1
                    else None,
                    X_pending=X_pending,
                    constraints=slack_constraints(problem) or None,
                    prune_baseline=True,
                )
        return PenalizedAcquisitionFunction(
            raw_acqf=raw,
            penalty_func=_SumOverBatch(measure),
            regularization_parameter=self.penalty_weight * context["std"],
        )


__all__ = [
    "ExternalRegularization",
    "InternalRegularization",
    "LogPenalizedExpectedImprovement",
    "RegularizedEI",
]
