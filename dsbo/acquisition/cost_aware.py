r"""Cost models and the cost-aware baselines of CostIDS (Paria thesis ch. 4, section 4.6).

A cost model gives :math:`\log\lambda(x)`, differentiable in ``x``:

* ``known``: the problem's ``cost_function`` (e.g. ``cost-branin``'s :math:`e^{l}`), guarded:
  :math:`+\infty` where the cost is unusable (not finite, :math:`\le 0`, or the function
  raised; :func:`~dsbo.acquisition.affordable.safe_log_cost`), which every policy here treats
  as infeasible;
* ``learned``: a GP on the log of the recorded evaluation times of the completed trials
  (the posterior mean; Snoek et al. 2012's "EI per second" cost model); until two times are
  known the cost is taken as constant (the one measured time, else ``design_cost``). A
  campaign of a learned cost model on a problem without a cost function charges each trial
  its measured seconds (:mod:`dsbo.campaign.ledger`).

``auto`` picks ``known`` when the problem has a cost function, else ``learned``.

Baselines (each a policy, configured like any other):

* ``logei-per-cost``: :math:`\log \mathrm{EI}(x) - \log\lambda(x)` (EI per unit cost, Snoek et al.
  2012), BoTorch's analytic LogEI;
* ``mes``: BoTorch's ``qMaxValueEntropy`` (Wang & Jegelka 2017), cost-blind;
* ``cost-mes``: BoTorch's ``qMultiFidelityMaxValueEntropy`` (Takeno et al. 2020) with an
  ``InverseCostWeightedUtility`` over the cost model. In the cost-aware setting every
  evaluation is exact (no fidelity to project to), so the projection is the identity and the
  acquisition is the information gain about the maximum value per unit cost.

EI (``logei``) and UCB (``ucb``) are the plain policies.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.acquisition.cost_aware import InverseCostWeightedUtility
from botorch.acquisition.max_value_entropy_search import (
    qMaxValueEntropy,
    qMultiFidelityMaxValueEntropy,
)
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.deterministic import GenericDeterministicModel
from botorch.models.model import Model
from botorch.models.transforms import Normalize, Standardize
from botorch.utils.sampling import draw_sobol_samples
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from dsbo.acquisition.affordable import safe_log_cost
from dsbo.acquisition.base import History, OptimizerSettings, register_policy
from dsbo.acquisition.plain import OptimizedPolicy, best_feasible_value, objective_transform
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

COST_MODELS = ("auto", "known", "learned")
#: Candidate points of the max-value samples of MES.
MES_CANDIDATES = 1000


class CostModel:
    """``log lambda(x)`` for ``... x d`` inputs (raw coordinates), differentiable.

    Args:
        kind: ``known`` or ``learned`` (resolved; see the module doc).
        problem: The problem (its ``cost_function`` for ``known``).
        history: The campaign history (its ``eval_times`` for ``learned``).
    """

    def __init__(self, kind: str, problem: Problem, history: History) -> None:
        if kind not in COST_MODELS:
            raise ConfigError(
                f"acquisition.options.cost={kind!r}: choose one of {', '.join(COST_MODELS)}"
            )
        if kind == "auto":
            kind = "known" if problem.cost_function is not None else "learned"
        if kind == "known" and problem.cost_function is None:
            raise ConfigError(
                f"acquisition.options.cost='known' but {problem.name} has no cost function; "
                "use cost: learned (a GP on the recorded evaluation times)"
            )
        self.kind, self.problem = kind, problem
        self.gp: SingleTaskGP | None = None
        #: The first error a known cost function raised (``None`` if it never did).
        self.error: str | None = None
        self.constant = math.log(problem.design_cost)
        if kind == "learned":
            times = history.eval_times
            ok = None if times is None else times[torch.isfinite(times) & (times > 0)]
            if ok is not None and ok.numel():  # a measured time beats the design cost's units
                self.constant = float(ok.log().mean())
            self.gp = self._fit_log_times(problem, history)

    @staticmethod
    def _fit_log_times(problem: Problem, history: History) -> SingleTaskGP | None:
        times = history.eval_times
        if times is None:
            return None
        ok = torch.isfinite(times) & (times > 0)
        if int(ok.sum()) < 2:
            return None
        X, y = history.X[ok], times[ok].log().unsqueeze(-1)
        gp = SingleTaskGP(
            X,
            y,
            input_transform=Normalize(d=X.shape[-1], bounds=problem.bounds),
            outcome_transform=Standardize(m=1),
        )
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        return gp

    @property
    def description(self) -> str:
        if self.kind == "known":
            return "known"
        return "learned (log-time GP)" if self.gp is not None else "learned (constant: < 2 times)"

    def log_cost(self, X: Tensor) -> Tensor:
        """``log lambda(x)`` (shape ``...`` for ``... x d``); ``+inf`` where a known cost is
        unusable."""
        if self.kind == "known":
            log_cost, error = safe_log_cost(self.problem, X)
            self.error = self.error or error
            return log_cost
        if self.gp is None:
            return torch.full(X.shape[:-1], self.constant, dtype=X.dtype)
        return self.gp.posterior(X.unsqueeze(-2)).mean.reshape(X.shape[:-1])

    def cost(self, X: Tensor) -> Tensor:
        return self.log_cost(X).exp()


def check_cost_option(cost: Any) -> str:
    if cost not in COST_MODELS:
        raise ConfigError(
            f"acquisition.options.cost={cost!r}: choose one of {', '.join(COST_MODELS)}"
        )
    return cost


#: What a point whose cost is unusable loses on a log-scale acquisition: finite (BoTorch's
#: start-point heuristics standardize raw values, and one -inf makes them all NaN) and far
#: below any log EI a usable point can have.
INVALID_COST_PENALTY = 1e3


class _MinusLogCost(AcquisitionFunction):
    """``acqf(X) - log lambda(X)`` for a log-scale acquisition and ``batch x 1 x d`` inputs;
    ``acqf(X) - INVALID_COST_PENALTY`` where the cost is unusable."""

    def __init__(self, acqf: AcquisitionFunction, cost: CostModel) -> None:
        super().__init__(acqf.model)
        self.acqf, self.cost_model = acqf, cost

    def forward(self, X: Tensor) -> Tensor:
        value, log_cost = self.acqf(X), self.cost_model.log_cost(X.squeeze(-2))
        finite = torch.isfinite(log_cost)
        return torch.where(
            finite, value - log_cost.masked_fill(~finite, 0.0), value - INVALID_COST_PENALTY
        )


@register_policy("logei-per-cost", "log EI minus log cost: EI per unit cost (cost-aware baseline)")
class LogEIPerCost(OptimizedPolicy):
    """``log EI(x) - log lambda(x)`` (module doc); ``cost``: auto, known or learned."""

    name = "logei-per-cost"
    supports_batch = False

    def __init__(self, cost: str = "auto", optimizer: OptimizerSettings | None = None) -> None:
        super().__init__(optimizer)
        self.cost = check_cost_option(cost)

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        if problem.num_constraints:
            raise ConfigError(f"acquisition {self.name!r} ignores outcome constraints; use qlognei")
        ei = LogExpectedImprovement(
            model,
            best_f=best_feasible_value(history, problem),
            posterior_transform=objective_transform(model),
        )
        return _MinusLogCost(ei, CostModel(self.cost, problem, history))


def _mes_candidates(problem: Problem, history: History) -> Tensor:
    return draw_sobol_samples(
        bounds=problem.bounds, n=MES_CANDIDATES, q=1, seed=history.seed
    ).squeeze(1)


@register_policy("mes", "max-value entropy search (BoTorch qMaxValueEntropy; cost-blind baseline)")
class MaxValueEntropy(OptimizedPolicy):
    """BoTorch's ``qMaxValueEntropy`` with max values sampled on 1000 Sobol points."""

    name = "mes"
    supports_batch = False
    log_scale = False

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        if problem.num_constraints:
            raise ConfigError(f"acquisition {self.name!r} ignores outcome constraints; use qlognei")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(history.seed)
            return qMaxValueEntropy(
                model,
                candidate_set=_mes_candidates(problem, history),
                posterior_transform=objective_transform(model),
            )


@register_policy(
    "cost-mes", "max-value entropy per unit cost (BoTorch qMultiFidelityMaxValueEntropy)"
)
class CostMaxValueEntropy(OptimizedPolicy):
    """BoTorch's ``qMultiFidelityMaxValueEntropy`` with an inverse-cost utility (module doc)."""

    name = "cost-mes"
    supports_batch = False
    log_scale = False

    def __init__(self, cost: str = "auto", optimizer: OptimizerSettings | None = None) -> None:
        super().__init__(optimizer)
        self.cost = check_cost_option(cost)

    def build(
        self, model: Model, history: History, problem: Problem, q: int
    ) -> AcquisitionFunction:
        if problem.num_constraints:
            raise ConfigError(f"acquisition {self.name!r} ignores outcome constraints; use qlognei")
        cost = CostModel(self.cost, problem, history)
        cost_model = GenericDeterministicModel(lambda X: cost.cost(X).unsqueeze(-1), num_outputs=1)
        utility = InverseCostWeightedUtility(cost_model=cost_model, use_mean=True)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(history.seed)
            return qMultiFidelityMaxValueEntropy(
                model,
                candidate_set=_mes_candidates(problem, history),
                cost_aware_utility=utility,
                project=lambda X: X,
                posterior_transform=objective_transform(model),
            )


__all__ = [
    "COST_MODELS",
    "INVALID_COST_PENALTY",
    "CostMaxValueEntropy",
    "CostModel",
    "LogEIPerCost",
    "MaxValueEntropy",
]
