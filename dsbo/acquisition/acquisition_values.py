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


__all__ = [
    "IncrementalValue",
    "acquisition_score_fn",
    "evaluate_acquisition",
    "incremental_value",
]
