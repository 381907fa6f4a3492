r"""Cost-aware information directed sampling (CostIDS): the ``cost-ids`` policy.

Paria thesis ch. 4 (section 4.4). With the maximum UCB
:math:`\mathcal U_t = \max_x \mu_t(x) + \sqrt{\beta_t}\sigma_t(x)` (eq. 4.3, the bound on
:math:`E[f^* \mid \mathcal D_{t-1}]`), the information ratio and its cost-aware version are
(eq. 4.4)

.. math::

    \mathcal R_t(x) = \frac{(\mathcal U_t - \mu_t(x))^2}{\sigma_t(x)^2}, \qquad
    \mathcal R^{cost}_t(x) = \lambda(x)\,\mathcal R_t(x),

and CostIDS proposes (eq. 4.5)

.. math::

    x_t = \arg\min_x \mathcal R^{cost}_t(x) \quad \text{s.t.} \quad
    \mathcal R_t(x) \le \rho\,\mathcal R^*_t, \qquad \mathcal R^*_t = \min_x \mathcal R_t(x).

Since :math:`\mathcal U_t \ge \mu_t(x) + \sqrt{\beta_t}\sigma_t(x)` everywhere,
:math:`\mathcal R_t(x) \ge \beta_t`, with equality at the UCB maximizer: :math:`\mathcal R^*_t
= \beta_t` (section 4.5). So at :math:`\rho = 1`, or with a constant cost, CostIDS proposes
the UCB maximizer; a larger :math:`\rho` admits cheaper points with a worse ratio.

Implementation: :math:`\mathcal U_t` and the UCB maximizer by ``optimize_acqf``; the
constrained problem in log form (minimize :math:`\log\lambda + \log\mathcal R_t` subject to
:math:`\log\mathcal R_t \le \log(\rho\beta_t)`) scored on the UCB maximizer and
``raw_samples`` scrambled Sobol points, then polished from the best feasible ones by SLSQP
(``optimize_acqf`` with a nonlinear constraint). The UCB maximizer is kept unless a feasible
point has a strictly smaller cost-aware ratio. The posterior is any Gaussian one: GPs,
MAP-SAAS and SAASBO mixtures and ensembles moment-matched (:func:`posterior_moments`).
:math:`\beta_t` defaults to the thesis' practical schedule :math:`0.125\log(2t + 1)`
(section 2.7); the chapter's :math:`C_1 d \log t + C_2` leaves its constants open.

Invalid costs and the cost budget: a candidate whose cost is unusable (the cost model gives
:math:`+\infty` for a cost that is not finite, :math:`\le 0` or whose function raised;
:func:`~dsbo.acquisition.affordable.safe_log_cost`) is infeasible; unguarded, a cost of 0
(:math:`\log 0 = -\infty`) would be every argmin. Under a cost budget (``History.cost_left``)
so is a candidate whose (predicted) cost exceeds what is left, and eq. 4.5 is solved on the
affordable set :math:`A`: :math:`\mathcal R^*_t = \min_{x \in A} \mathcal R_t(x)` (still
:math:`\beta_t` when the UCB maximizer is affordable), with :math:`\log\lambda(x) \le
\log(\text{left})` a second SLSQP constraint. With no usable scored point the proposal is the
cheapest valid one, or the UCB maximizer when no cost is valid; the campaign then replaces an
unaffordable point by an affordable one, or records the invalid cost as a failed trial with
its reason (:mod:`dsbo.campaign.ledger`).

Example:
    >>> campaign = Campaign(get_problem("cost-branin"), surrogate="gp", budget_cost=500,
    ...                     acquisition={"name": "cost-ids", "rho": 2.0})
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions.errors import CandidateGenerationError
from botorch.models.model import Model
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from dsbo.acquisition.base import (
    History,
    OptimizerSettings,
    Proposal,
    posterior_moments,
    register_policy,
)
from dsbo.acquisition.cost_aware import INVALID_COST_PENALTY, CostModel, check_cost_option
from dsbo.acquisition.scalarized import ucb_beta
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

#: SLSQP polishing starts (each runs alone: BoTorch's nonlinear constraints need batch 1).
POLISH_STARTS = 3


class ObjectiveUCB(AcquisitionFunction):
    r""":math:`\mu(x) + \sqrt{\beta}\sigma(x)` of objective 0 (moment-matched posterior)."""

    def __init__(self, model: Model, beta: float) -> None:
        super().__init__(model)
        self.beta = beta

    def forward(self, X: Tensor) -> Tensor:
        mean, var = posterior_moments(self.model, X.squeeze(-2))
        return mean[..., 0] + math.sqrt(self.beta) * var[..., 0].sqrt()


def information_ratio(model: Model, X: Tensor, U: float) -> Tensor:
    r""":math:`\mathcal R_t(x) = (\mathcal U_t - \mu_t(x))_+^2 / \sigma_t(x)^2` for ``... x d``."""
    mean, var = posterior_moments(model, X)
    return (U - mean[..., 0]).clamp_min(0.0) ** 2 / var[..., 0]


class NegativeLogCostRatio(AcquisitionFunction):
    r"""``-(log lambda(x) + log R_t(x))`` for ``batch x 1 x d`` (maximized); where the cost is
    unusable, ``-log R_t(x) - INVALID_COST_PENALTY`` (finite: a -inf would break the
    optimizer's start-point heuristics, and the point is screened out afterwards)."""

    def __init__(self, model: Model, U: float, cost: CostModel) -> None:
        super().__init__(model)
        self.U, self.cost_model = U, cost

    def forward(self, X: Tensor) -> Tensor:
        X = X.squeeze(-2)
        log_cost = self.cost_model.log_cost(X)
        finite = torch.isfinite(log_cost)
        log_cost = torch.where(finite, log_cost, torch.full_like(log_cost, INVALID_COST_PENALTY))
        return -(log_cost + information_ratio(self.model, X, self.U).clamp_min(1e-300).log())


@register_policy("cost-ids", "cost-aware information directed sampling (Paria thesis ch. 4)")
class CostIDS:
    r"""CostIDS (module doc).

    Args:
        rho: The tolerance :math:`\rho \ge 1` on the information ratio (eq. 4.5).
        beta: :math:`\beta_t`: ``"thesis"`` (``0.125 log(2t + 1)``) or a number > 0.
        cost: The cost model: ``auto``, ``known`` (the problem's cost function) or
            ``learned`` (a GP on the log evaluation times).
        optimizer: Acquisition optimizer settings (``raw_samples`` scores the constrained
            problem; ``num_restarts``/``maxiter`` for the UCB maximization).
    """

    name = "cost-ids"
    needs_model = True
    supports_batch = False

    def __init__(
        self,
        rho: float = 2.0,
        beta: float | str = "thesis",
        cost: str = "auto",
        optimizer: OptimizerSettings | None = None,
    ) -> None:
        if (
            isinstance(rho, bool)
            or not isinstance(rho, int | float)
            or not (math.isfinite(rho) and rho >= 1)
        ):
            raise ConfigError(f"acquisition.options.rho must be a finite number >= 1, got {rho!r}")
        self.rho = float(rho)
        if beta != "thesis" and (
            isinstance(beta, bool)
            or not isinstance(beta, int | float)
            or not (math.isfinite(beta) and beta > 0)
        ):
            raise ConfigError(
                f"acquisition.options.beta must be 'thesis' or a number > 0, got {beta!r}"
            )
        self.beta = beta
        self.cost = check_cost_option(cost)
        self.optimizer = optimizer or OptimizerSettings()

    def for_dry_run(self) -> CostIDS:
        return CostIDS(self.rho, self.beta, self.cost, self.optimizer.for_dry_run())

    def check(self, problem: Problem, q: int = 1) -> None:
        if q > 1:
            raise ConfigError(
                f"acquisition 'cost-ids' proposes one point at a time and q={q}; set q: 1"
            )
        if problem.num_objectives > 1 or problem.num_constraints:
            raise ConfigError(
                f"acquisition 'cost-ids' is for one objective without outcome constraints; "
                f"{problem.name} has {problem.num_objectives} objective(s) and {problem.num_constraints} constraint(s)"
            )
        if self.cost == "known" and problem.cost_function is None:
            raise ConfigError(
                f"acquisition.options.cost='known' but {problem.name} has no cost function; use cost: learned"
            )

    def beta_at(self, t: int) -> float:
        return ucb_beta(t) if self.beta == "thesis" else float(self.beta)

    def propose(self, model: Model, history: History, problem: Problem, q: int) -> Proposal:
        self.check(problem, q)
        beta = self.beta_at(history.t)
        cost = CostModel(self.cost, problem, history)
        opt = self.optimizer
        x_ucb, U = opt.maximize(ObjectiveUCB(model, beta), problem.bounds, 1, history.seed)
        x_ucb = problem.round_to_domain(x_ucb.detach().reshape(1, -1))
        X = draw_sobol_samples(
            bounds=problem.bounds, n=opt.raw_samples, q=1, seed=history.seed
        ).squeeze(1)
        X = torch.cat([x_ucb, problem.round_to_domain(opt.apply_fixed_features(X))])
        with torch.no_grad():
            mean, var = posterior_moments(model, X)
            ucb = mean[:, 0] + math.sqrt(beta) * var[:, 0].sqrt()
            if float(ucb.max()) > float(ucb[0]):  # a Sobol point beats the optimizer's maximizer
                j = int(ucb.argmax())
                X = torch.cat([X[j : j + 1], X[:j], X[j + 1 :]])
            U = float(ucb.max())
            ratio = information_ratio(model, X, U)
            log_cost = cost.log_cost(X)
        left = history.cost_left
        log_left = math.inf if left is None else math.log(left) if left > 0 else -math.inf
        usable = self._usable(log_cost, log_left)
        base = (
            0
            if usable[0] or not usable.any()
            else int(ratio.masked_fill(~usable, math.inf).argmin())
        )
        best = base
        if usable.any():
            # R*: beta at the UCB maximizer; over the affordable, valid points their least ratio
            limit = self.rho * (beta if base == 0 else float(ratio[base]))
            feasible = usable & (ratio <= limit * (1 + 1e-9))
            feasible[base] = True
            inf = torch.tensor(math.inf, dtype=X.dtype)
            objective = torch.where(feasible, log_cost + ratio.clamp_min(1e-300).log(), inf)
            if self.rho > 1:
                polished = self._polish(
                    model, problem, U, cost, X, objective, math.log(limit), log_left, history.seed
                )
                if polished is not None:
                    X = torch.cat([X, polished])
                    with torch.no_grad():
                        r = information_ratio(model, polished, U)
                        c = cost.log_cost(polished)
                    ok = self._usable(c, log_left) & (r <= limit * (1 + 1e-9))
                    objective = torch.cat(
                        [objective, torch.where(ok, c + r.clamp_min(1e-300).log(), inf)]
                    )
                    ratio, log_cost = torch.cat([ratio, r]), torch.cat([log_cost, c.detach()])
                j = int(objective.argmin())
                if objective[j] < objective[base] - 1e-9:  # strictly better than the base point
                    best = j
        elif torch.isfinite(
            log_cost
        ).any():  # nothing affordable scored: the cheapest (the campaign screens it)
            best = int(log_cost.argmin())
        x = X[best : best + 1]
        predicted = float(log_cost[best].exp())
        meta: dict[str, Any] = {
            "acquisition": self.name,
            "beta": beta,
            "rho": self.rho,
            "max_ucb": U,
            "information_ratio": float(ratio[best]),
            "predicted_cost": predicted if math.isfinite(predicted) else None,
            "ucb_cost": float(log_cost[0].exp()) if math.isfinite(float(log_cost[0])) else None,
            "cost_model": cost.description,
            "chose_ucb_maximizer": best == 0,
        }
        if left is not None:
            meta["cost_left"] = left
            meta["ucb_affordable"] = bool(usable[0])
        if not torch.isfinite(log_cost).all():
            meta["invalid_costs"] = int((~torch.isfinite(log_cost)).sum())
        if cost.error is not None:
            meta["cost_error"] = cost.error
        return Proposal(X=x.detach().clone(), metadata=[meta])

    @staticmethod
    def _usable(log_cost: Tensor, log_left: float) -> Tensor:
        """Candidates whose cost is valid (finite, > 0: ``log_cost`` finite) and affordable."""
        return torch.isfinite(log_cost) & (log_cost <= log_left + 1e-9)

    def _polish(
        self,
        model: Model,
        problem: Problem,
        U: float,
        cost: CostModel,
        X: Tensor,
        objective: Tensor,
        log_limit: float,
        log_left: float,
        seed: int,
    ) -> Tensor | None:
        """SLSQP from the best feasible scored points: minimize ``log lambda + log R`` subject
        to ``log R <= log(rho R*)`` and, under a cost budget, ``log lambda <= log(left)``;
        ``None`` if it fails."""
        finite = torch.isfinite(objective)
        if not finite.any() or self.optimizer.method != "lbfgsb":  # SLSQP needs scipy's path
            return None
        order = torch.argsort(objective.masked_fill(~finite, math.inf))[
            : min(POLISH_STARTS, int(finite.sum()))
        ]

        def ratio_constraint(x: Tensor) -> Tensor:
            return (
                log_limit - information_ratio(model, x.reshape(1, -1), U).clamp_min(1e-300).log()[0]
            )

        def cost_constraint(x: Tensor) -> Tensor:
            return log_left - cost.log_cost(x.reshape(1, -1))[0]

        constraints = [(ratio_constraint, True)]
        if math.isfinite(log_left):
            constraints.append((cost_constraint, True))
        acqf = NegativeLogCostRatio(model, U, cost)
        try:
            candidates, _ = dataclasses.replace(self.optimizer, batch_limit=1).maximize(
                acqf,
                problem.bounds,
                1,
                seed,
                batch_initial_conditions=X[order].unsqueeze(1),
                nonlinear_inequality_constraints=constraints,
                return_best_only=False,
                num_restarts=len(order),
            )
        except (CandidateGenerationError, RuntimeError, ValueError):  # the scored points stand
            return None
        return problem.round_to_domain(candidates.detach().reshape(-1, problem.dim))


__all__ = ["CostIDS", "NegativeLogCostRatio", "ObjectiveUCB", "information_ratio"]
