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
from dsbo.acquisition.cost_aware import CostModel, check_cost_option
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
    r"""``-(log lambda(x) + log R_t(x))`` for ``batch x 1 x d`` (maximized)."""

    def __init__(self, model: Model, U: float, cost: CostModel) -> None:
        super().__init__(model)
        self.U, self.cost_model = U, cost

    def forward(self, X: Tensor) -> Tensor:
        X = X.squeeze(-2)
        return -(self.cost_model.log_cost(X) + information_ratio(self.model, X, self.U).clamp_min(1e-300).log())


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

    def __init__(self, rho: float = 2.0, beta: float | str = "thesis", cost: str = "auto",
                 optimizer: OptimizerSettings | None = None) -> None:  # fmt: skip
        if isinstance(rho, bool) or not isinstance(rho, int | float) or not (math.isfinite(rho) and rho >= 1):
            raise ConfigError(f"acquisition.options.rho must be a finite number >= 1, got {rho!r}")
        self.rho = float(rho)
        if beta != "thesis" and (isinstance(beta, bool) or not isinstance(beta, int | float) or not (math.isfinite(beta) and beta > 0)):
            raise ConfigError(f"acquisition.options.beta must be 'thesis' or a number > 0, got {beta!r}")
        self.beta = beta
        self.cost = check_cost_option(cost)
        self.optimizer = optimizer or OptimizerSettings()

    def for_dry_run(self) -> CostIDS:
        return CostIDS(self.rho, self.beta, self.cost, self.optimizer.for_dry_run())

    def check(self, problem: Problem, q: int = 1) -> None:
        if q > 1:
            raise ConfigError(f"acquisition 'cost-ids' proposes one point at a time and q={q}; set q: 1")
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
        X = draw_sobol_samples(bounds=problem.bounds, n=opt.raw_samples, q=1, seed=history.seed).squeeze(1)
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
        limit = self.rho * beta
        feasible = ratio <= limit * (1 + 1e-9)
        feasible[0] = True  # the UCB maximizer: R = beta by construction
        objective = torch.where(feasible, log_cost + ratio.clamp_min(1e-300).log(), torch.tensor(math.inf, dtype=X.dtype))
        best = 0
        if self.rho > 1:
            polished = self._polish(model, problem, U, cost, X, objective, math.log(limit), history.seed)
            if polished is not None:
                X = torch.cat([X, polished])
                with torch.no_grad():
                    r = information_ratio(model, polished, U)
                    o = cost.log_cost(polished) + r.clamp_min(1e-300).log()
                o = torch.where(r <= limit * (1 + 1e-9), o, torch.tensor(math.inf, dtype=X.dtype))
                objective = torch.cat([objective, o])
                ratio = torch.cat([ratio, r])
                log_cost = torch.cat([log_cost, cost.log_cost(polished).detach()])
            j = int(objective.argmin())
            if objective[j] < objective[0] - 1e-9:  # strictly better than the UCB maximizer
                best = j
        x = X[best : best + 1]
        meta: dict[str, Any] = {
            "acquisition": self.name,
            "beta": beta,
            "rho": self.rho,
            "max_ucb": U,
            "information_ratio": float(ratio[best]),
            "predicted_cost": float(log_cost[best].exp()),
            "ucb_cost": float(log_cost[0].exp()),
            "cost_model": cost.description,
            "chose_ucb_maximizer": best == 0,
        }
        return Proposal(X=x.detach().clone(), metadata=[meta])

    def _polish(self, model: Model, problem: Problem, U: float, cost: CostModel, X: Tensor,
                objective: Tensor, log_limit: float, seed: int) -> Tensor | None:  # fmt: skip
        """SLSQP from the best feasible scored points: minimize ``log lambda + log R`` subject
        to ``log R <= log(rho beta)``; ``None`` if it fails."""
        finite = torch.isfinite(objective)
        if not finite.any() or self.optimizer.method != "lbfgsb":  # SLSQP needs scipy's path
            return None
        order = torch.argsort(objective.masked_fill(~finite, math.inf))[: min(POLISH_STARTS, int(finite.sum()))]

        def constraint(x: Tensor) -> Tensor:
            return log_limit - information_ratio(model, x.reshape(1, -1), U).clamp_min(1e-300).log()[0]

        acqf = NegativeLogCostRatio(model, U, cost)
        try:
            candidates, _ = dataclasses.replace(self.optimizer, batch_limit=1).maximize(
                acqf, problem.bounds, 1, seed,
                batch_initial_conditions=X[order].unsqueeze(1),
                nonlinear_inequality_constraints=[(constraint, True)],
                return_best_only=False, num_restarts=len(order),
            )  # fmt: skip
        except (CandidateGenerationError, RuntimeError, ValueError):  # the scored points stand
            return None
        return problem.round_to_domain(candidates.detach().reshape(-1, problem.dim))


__all__ = ["CostIDS", "NegativeLogCostRatio", "ObjectiveUCB", "information_ratio"]
