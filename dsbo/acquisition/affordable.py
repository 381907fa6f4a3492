r"""Costs a policy can trust, and candidates the cost budget can pay for.

Two guards of cost-aware proposals (issue 32, items 2 and 3):

* :func:`safe_log_cost`: :math:`\log\lambda(x)` of a problem's cost function, differentiable,
  with :math:`+\infty` wherever the cost is unusable: not finite, :math:`\le 0` (where
  :math:`\log 0 = -\infty` would otherwise be every minimizer's pick), or a cost function that
  raised (then each row is tried alone, so one bad region does not poison a batch). A policy
  treats :math:`+\infty` as infeasible; a candidate whose cost is unusable is never chosen while
  a usable one exists, and if none exists the campaign's own cost check records the proposal
  as a failed trial with the reason.
* :func:`affordable_candidate`: with a cost budget (``History.cost_left``) and a known cost
  function, an optimized policy whose candidate costs more than is left re-maximizes its own
  acquisition over the affordable set :math:`\{x : \lambda(x) \le \text{left}\}`: the best
  of ``raw_samples`` scrambled Sobol points that are affordable, polished by SLSQP under
  :math:`\log(\text{left}) - \log\lambda(x) \ge 0` (BoTorch's nonlinear inequality constraints,
  one point at a time). So a cost-blind baseline (EI, UCB, MES) spends the end of its budget
  on its best affordable point instead of stopping at the first one it cannot pay for.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions.errors import CandidateGenerationError
from botorch.utils.sampling import draw_sobol_samples
from torch import Tensor

from dsbo.acquisition.settings import OptimizerSettings
from dsbo.problems.base import Problem


def _cost_rows(problem: Problem, X: Tensor) -> tuple[Tensor, str | None]:
    """``lambda(x)`` of each row of ``X`` (``n x d``), NaN where it could not be computed, and
    the first error raised (``None`` if none was)."""
    try:
        cost = torch.as_tensor(problem.cost_function(X), dtype=X.dtype)  # type: ignore[misc]
        return cost.reshape(X.shape[0]), None
    except Exception as exc:  # noqa: BLE001 - any failure of the user's cost function is data
        error = f"{type(exc).__name__}: {exc}"
    rows = []
    for x in X:
        try:
            rows.append(
                torch.as_tensor(problem.cost_function(x.unsqueeze(0)), dtype=X.dtype).reshape(())
            )  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - as above, one row at a time
            rows.append(torch.tensor(math.nan, dtype=X.dtype))
    return torch.stack(rows), error


def safe_log_cost(problem: Problem, X: Tensor) -> tuple[Tensor, str | None]:
    r""":math:`\log\lambda(x)` for ``... x d`` inputs (shape ``...``), :math:`+\infty` where the
    cost is unusable (module doc), and the first error the cost function raised, if any."""
    flat = X.reshape(-1, X.shape[-1])
    cost, error = _cost_rows(problem, flat)
    valid = torch.isfinite(cost) & (cost > 0)
    # log of 1 where invalid: no -inf or NaN leaks into the gradient of the valid rows
    log = torch.where(valid, cost, torch.ones_like(cost)).log()
    log = torch.where(valid, log, torch.full_like(log, math.inf))
    return log.reshape(X.shape[:-1]), error


def is_affordable(problem: Problem, X: Tensor, cost_left: float) -> Tensor:
    """Whether each row of ``X`` has a usable cost of at most ``cost_left``."""
    with torch.no_grad():
        log_cost, _ = safe_log_cost(problem, X)
    return torch.isfinite(log_cost) & (log_cost.exp() <= cost_left * (1 + 1e-9))


def affordable_candidate(
    acqf: AcquisitionFunction,
    problem: Problem,
    optimizer: OptimizerSettings,
    seed: int,
    cost_left: float,
) -> tuple[Tensor | None, dict[str, Any]]:
    """The maximizer of ``acqf`` over the points whose cost is at most ``cost_left`` (module
    doc): a ``1 x d`` point, or ``None`` if none of the ``raw_samples`` Sobol points is
    affordable; with what was done, for the trial's metadata."""
    X = draw_sobol_samples(bounds=problem.bounds, n=optimizer.raw_samples, q=1, seed=seed).squeeze(
        1
    )
    X = problem.round_to_domain(optimizer.apply_fixed_features(X))
    ok = is_affordable(problem, X, cost_left)
    if not ok.any():
        return None, {"affordable": "none of the raw samples"}
    X = X[ok]
    with torch.no_grad():
        values = acqf(X.unsqueeze(1)).reshape(-1)
    order = torch.argsort(values, descending=True)[: optimizer.num_restarts]
    best, best_value = X[order[:1]], float(values[order[0]])
    if optimizer.method != "lbfgsb":  # SLSQP is scipy's: the best affordable raw sample
        return best, {"affordable": "raw sample"}
    log_left = math.log(cost_left)

    def constraint(x: Tensor) -> Tensor:
        return log_left - safe_log_cost(problem, x.reshape(1, -1))[0][0]

    try:
        candidates, _ = dataclasses.replace(optimizer, batch_limit=1).maximize(
            acqf,
            problem.bounds,
            1,
            seed,
            batch_initial_conditions=X[order].unsqueeze(1),
            nonlinear_inequality_constraints=[(constraint, True)],
            num_restarts=len(order),
        )
    except (CandidateGenerationError, RuntimeError, ValueError):  # the raw sample stands
        return best, {"affordable": "raw sample"}
    polished = problem.round_to_domain(candidates.detach().reshape(1, -1))
    if bool(is_affordable(problem, polished, cost_left)[0]):
        with torch.no_grad():
            if float(acqf(polished.unsqueeze(1)).reshape(-1)[0]) >= best_value:
                return polished, {"affordable": "polished"}
    return best, {"affordable": "raw sample"}


def make_affordable(
    acqf: AcquisitionFunction,
    X: Tensor,
    problem: Problem,
    optimizer: OptimizerSettings,
    seed: int,
    cost_left: float | None,
) -> tuple[Tensor, dict[str, Any]]:
    """``X`` (``1 x d``) if it is affordable (or there is no cost budget or cost function), else
    :func:`affordable_candidate` (``X`` itself if nothing affordable was found: the campaign
    then replaces or refuses it); with metadata saying what happened."""
    if cost_left is None or problem.cost_function is None or X.shape[0] != 1:
        return X, {}
    if bool(is_affordable(problem, X, cost_left)[0]):
        return X, {}
    candidate, meta = affordable_candidate(acqf, problem, optimizer, seed, cost_left)
    meta["unaffordable_optimum"] = X[0].tolist()
    return (X if candidate is None else candidate), meta


__all__ = ["affordable_candidate", "is_affordable", "make_affordable", "safe_log_cost"]
