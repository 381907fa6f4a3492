r"""BONSAI's incremental acquisition value, and acquisition functions as per-point scores.

BONSAI (Daulton et al., "BONSAI: Bayesian Optimization with Natural Simplicity and
Interpretability", section 5 and appendix B) measures the pruning tolerance against the
*incremental* value of the dense candidate ``x*`` under today's acquisition ``alpha_t``::

    b_t         = max_{s < t} alpha_t(x_s)        today's alpha at the evaluated points
    alpha~(x*)  = alpha_t(x*) - b_t               incremental value of the dense candidate
    tau_t       = rho_t * alpha~(x*)              the tolerance, computed once per candidate

For a batch point after the first (section 6.3) the baseline is instead ``alpha(x_{i-1})``
given the points before it. Log acquisitions (qLogNEI, LogEI, qLogNEHVI) are exponentiated
before ``b_t`` is formed (appendix B), *relative to* ``alpha(x*)``
(``exp(log alpha - log alpha(x*))``): the gap rule is invariant to a positive rescaling of
``alpha``, and this never underflows, even when ``log alpha(x*)`` is ``-800``.

Tolerance rules (BONSAI's ``rule``; not in the paper except the first, issue 33;
:func:`tolerance`):

- ``"incremental"`` (the paper's rule): ``tau_t = rho_t alpha~(x*)``.
- ``"dense-scale"``: ``tau_t = rho_t alpha_t(x*)``, relative to the acquisition's value at the
  dense optimum (for log acquisitions the exponentiated value, relative to ``alpha(x*)``:
  ``tau = rho`` in scoring units, i.e. a pruned point keeps at least ``(1 - rho)`` of the
  dense candidate's (expected improvement) value). Once the optimum has been found
  ``alpha~(x*)`` is tiny and the paper's tau protects every input the model is unsure about;
  this rule still resets what costs little relative to the candidate's own value. For
  non-negative acquisitions ``alpha~ <= alpha(x*)``, so its tau is never smaller than the
  paper's; early in a run (``b_t << alpha(x*)``) the two agree.
  It needs ``alpha(x*) > 0`` (a non-negative acquisition: EI-type, exponentiated log
  acquisitions, EHVI; not UCB, whose value has no scale) and skips pruning otherwise.
  Measured with qLogNEI (issue 33): it changes nothing there, because qLogNEI is almost 0 at
  the evaluated points (``b_t << alpha(x*)``, so ``alpha~ ~ alpha(x*)`` even after the
  optimum is found); what keeps late proposals dense is that ``alpha(x*)`` itself, though
  tiny in outcome units, comes from the inputs the model is unsure about.
- ``"outcome-floor"`` (the default): ``tau_t = max(rho_t alpha~(x*), epsilon s_y)`` with ``s_y`` the standard
  deviation of the observed objective values and ``epsilon = outcome_floor`` (``1e-2``): a
  reset that costs less than ``epsilon`` standard deviations of the objective in acquisition
  value is taken whatever fraction of ``alpha~`` that is. For single-objective acquisitions
  in outcome units (EI, qLogNEI and LogEI exponentiated, UCB: the gap is shift-invariant);
  a multi-objective problem (hypervolume acquisitions) gets no floor, i.e. the paper's rule. Early in a run
  (``rho alpha~ >> epsilon s_y``) it is the paper's rule; once the expected improvement
  left is a few ``epsilon s_y``, inputs whose contribution to it is negligible in absolute
  terms are reset. On the sparse protocol (Branin-50d, MAP-SAAS + qLogNEI, 5 seeds) a floor of
  ``1e-3`` changed 6.6 parameters per BO point against the paper rule's 15.4 with the same
  best 2-change value in every seed (``experiments/results/sparse_protocol/bonsai_rules``);
  ``1e-2`` with BONSAI's near-repeat guard (``repeat_tol = 0.01``, the default) changed 2.1,
  found a better best 2-change value on 5 of 5 seeds and repeated fewer points
  (``experiments/results/sparse_protocol/repeat_guard``); without the guard ``1e-2`` spent late
  evaluations on repeats of one sparse point. On Hartmann6-50d, where 20 BO points do not
  converge, every floor proposed what the paper's rule proposed.

The new rules prune even when ``alpha~(x*) <= 0`` (the paper skips then), except
``"outcome-floor"`` with a zero floor (``outcome_floor = 0`` or all observed values equal),
which is then exactly the paper's rule.

:func:`evaluate_acquisition` scores points one ``q = 1`` batch each; :func:`acquisition_score_fn`
turns an acquisition into the score function of the searches of :mod:`dsbo.acquisition.pruning`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from dsbo.acquisition.pruning import EVAL_BATCH, ScoreFn


def evaluate_acquisition(acqf: Callable[[Tensor], Tensor], X: Tensor) -> Tensor:
    """``acqf`` at every row of ``X`` (``n x d``) as its own ``q = 1`` batch: an ``n``-vector.

    One call per ``EVAL_BATCH`` rows, each shaped ``b x 1 x d``. BoTorch's MC acquisitions
    collapse the t-batch dimension of their base samples, so a seeded sampler reuses the same
    base samples for every ``b`` (the value of a point does not depend on what it is batched
    with, up to floating-point rounding).
    """
    if X.shape[0] == 0:
        return X.new_zeros(0)
    with torch.no_grad():
        return torch.cat(
            [acqf(chunk.unsqueeze(-2)).reshape(-1).to(X) for chunk in X.split(EVAL_BATCH)]
        )


@dataclass
class IncrementalValue:
    """``alpha~(x*) = alpha(x*) - b`` with ``b = max_s alpha(x_s)``, in scoring units.

    For log acquisitions the scoring units are ``exp(log alpha - log_shift)`` with
    ``log_shift = log alpha(x*)`` (so ``alpha_star == 1``); multiply by :attr:`unit` to get
    acquisition units (which may underflow to 0).
    """

    alpha_star: float
    baseline: float
    log_shift: float | None
    evaluations: int

    @property
    def value(self) -> float:
        return self.alpha_star - self.baseline

    @property
    def unit(self) -> float:
        if self.log_shift is None:
            return 1.0
        return math.exp(self.log_shift) if self.log_shift < 709.0 else math.inf


def incremental_value(
    acqf: Callable[[Tensor], Tensor],
    x_star: Tensor,
    X_evaluated: Tensor,
    log_scale: bool,
    baseline_raw: float | None = None,
) -> IncrementalValue:
    r"""Today's ``alpha`` at ``x*`` and at the evaluated points, in one batched call.

    With ``baseline_raw`` (a batch point after the first, paper section 6.3) the baseline is
    that acquisition value instead of ``max_s alpha(x_s)``: ``alpha(x_{i-1})`` given the
    points before it, i.e. the value of the batch so far, so ``alpha~`` is the improvement
    ``x_i`` adds to it.

    Returns the :class:`IncrementalValue`; its ``value`` is NaN when ``alpha(x*)`` or an
    ``alpha(x_s)`` is not finite (or ``-inf`` without evaluated points), which the caller
    treats as "skip pruning".
    """
    if baseline_raw is not None:
        raw = evaluate_acquisition(acqf, x_star.unsqueeze(0))
        raw = torch.cat([raw, raw.new_tensor([baseline_raw])])
        return _incremental(raw, log_scale, evaluations=1)
    raw = evaluate_acquisition(acqf, torch.cat([x_star.unsqueeze(0), X_evaluated.to(x_star)]))
    return _incremental(raw, log_scale, evaluations=raw.numel())


def _incremental(raw: Tensor, log_scale: bool, evaluations: int) -> IncrementalValue:
    """``raw[0]`` is ``alpha(x*)``; the baseline is the largest of ``raw[1:]``."""
    log_shift = float(raw[0]) if log_scale else None
    values = torch.exp(raw - raw[0]) if log_scale else raw
    if not torch.isfinite(values).all():
        values = torch.full_like(values, math.nan)
    baseline = float(values[1:].max()) if values.numel() > 1 else math.inf
    return IncrementalValue(float(values[0]), baseline, log_shift, evaluations)


def acquisition_score_fn(
    acqf: Callable[[Tensor], Tensor], log_scale: bool, log_shift: float | None = None
) -> ScoreFn:
    """``X (b x d) -> b``: ``acqf`` per point, ``exp(value - log_shift)`` if ``log_scale``."""

    def score(X: Tensor) -> Tensor:
        values = evaluate_acquisition(acqf, X)
        return torch.exp(values - (log_shift or 0.0)) if log_scale else values

    return score


#: The tolerance rules: ``tau`` from the incremental value (the paper), from the dense
#: candidate's own value, or the paper's with a floor in outcome units (:func:`tolerance`).
RULES = ("incremental", "dense-scale", "outcome-floor")


def tolerance(
    rule: str,
    rho: float,
    alpha_star: float,
    incremental: float,
    outcome_std: float = 0.0,
    outcome_floor: float = 1e-2,
) -> float:
    r"""``tau`` for a dense candidate under ``rule``, all values in the same (scoring) units.

    ``"incremental"``: ``rho alpha~(x*)``; ``"dense-scale"``: ``rho alpha(x*)`` (0 when
    ``alpha(x*) <= 0``); ``"outcome-floor"``: ``max(rho alpha~(x*), outcome_floor *
    outcome_std)``.

    Example:
        >>> tolerance("outcome-floor", 0.2, 0.06, 0.05, outcome_std=40.0)
        0.04
    """
    if rule == "dense-scale":
        return rho * max(alpha_star, 0.0)
    if rule == "outcome-floor":
        return max(rho * incremental, outcome_floor * outcome_std)
    return rho * incremental


def outcome_scale(Y: Tensor, num_objectives: int = 1) -> float:
    """``std(y)`` of the finite observed values of the (single) objective ``Y[:, 0]``; 0 for
    fewer than two values or a multi-objective problem (hypervolume units: no floor)."""
    if num_objectives > 1 or Y.numel() == 0:
        return 0.0
    y = Y[:, 0].to(torch.double)
    y = y[torch.isfinite(y)]
    return float(y.std()) if y.numel() > 1 else 0.0


__all__ = [
    "RULES",
    "IncrementalValue",
    "acquisition_score_fn",
    "evaluate_acquisition",
    "incremental_value",
    "outcome_scale",
    "tolerance",
]
