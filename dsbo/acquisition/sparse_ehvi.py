r"""Closed-form expected hypervolume improvement of (objective, sparsity) for ``q = 1``.

SEBO (Liu et al., *Sparse Bayesian Optimization*, AISTATS 2023, section 4.1, eq. 8) maximizes
the EHVI of the two objectives ``f`` (maximized, a GP) and ``xi`` (minimized, a known
deterministic function of ``x``). Because ``xi(x)`` is known, the expectation is over ``f(x)``
alone and the 2-D hypervolume improvement is a weighted sum of ordinary improvements.

**Derivation.** Let the reference point be ``r = (r_f, r_xi)`` (a lower bound on ``f``, an
upper bound on ``xi``; in BoTorch's maximization convention the front lives in
``(f, -xi)`` with reference ``(r_f, -r_xi)``). Keep the observed points that beat the
reference (``f > r_f`` and ``xi < r_xi``) and are non-dominated, sorted by sparsity:
``xi_(1) < ... < xi_(K)``. Non-domination forces ``f_(1) < ... < f_(K)`` (a denser point is
on the front only if it is better). The dominated region is the union of the boxes
``[r_f, f_(k)] x [xi_(k), r_xi]``. Slice it at sparsity level ``s'``: for
``s'`` in ``[xi_(k), xi_(k+1))`` (``xi_(0) = -inf``, ``xi_(K+1) = r_xi``) its ``f``-extent
is ``[r_f, h_k]`` with ``h_k = f_(k)`` and ``h_0 = r_f``. A new point ``(y, s)`` dominates
``[r_f, y] x [s, r_xi]``, so at level ``s'`` it adds length ``(y - h_k)_+`` when
``s <= s' <= r_xi``. Integrating over ``s'``:

    HVI(y, s) = sum_{k=0}^{K} (y - h_k)_+ * l_k(s),
    l_k(s) = max(0, min(xi_(k+1), r_xi) - max(s, xi_(k))),

and with ``y = f(x) ~ N(mu(x), sigma(x)^2)``, ``E[(y - h)_+] = EI(mu, sigma; h) =
sigma * (phi(u) + u Phi(u))``, ``u = (mu - h) / sigma``:

    EHVI(x) = sum_{k=0}^{K} l_k(xi(x)) * EI(mu(x), sigma(x); h_k).

It costs ``O(K)`` per point, needs no Monte Carlo, and is differentiable in ``x`` through
``mu``, ``sigma`` and a differentiable ``xi`` (e.g. the smooth L0 ``xi_a``). We evaluate
``log EHVI = logsumexp_k (log l_k + log EI_k)`` with BoTorch's ``_log_ei_helper`` (Ament et
al., 2023), so it stays finite where ``EI`` underflows. With outcome constraints whose
posteriors are independent of ``f`` (``ModelListGP``), ``E[HVI 1{feasible}] = EHVI * P(feasible)``
and ``log P(feasible)`` is added, as in BoTorch's ``LogConstrainedExpectedImprovement``. For
an ensemble model (MAP-SAAS, fully Bayesian SAAS) the posterior is a uniform mixture and the
EHVI is averaged over members (``logmeanexp`` of the log values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from botorch.acquisition.analytic import AnalyticAcquisitionFunction, _log_ei_helper
from botorch.models.model import Model
from botorch.utils.multi_objective.pareto import is_non_dominated
from botorch.utils.probability.utils import log_ndtr as log_Phi
from botorch.utils.transforms import (
    average_over_ensemble_models,
    is_ensemble,
    t_batch_mode_transform,
)
from torch import Tensor


def sparse_pareto_front(f: Tensor, xi: Tensor, ref_point: Sequence[float]) -> tuple[Tensor, Tensor]:
    r"""The observed points that beat ``ref_point = (r_f, r_xi)`` and are non-dominated in
    (maximize ``f``, minimize ``xi``), sorted by increasing ``xi`` (hence increasing ``f``).

    Returns:
        ``(f_front, xi_front)``, two ``K``-vectors.
    """
    r_f, r_xi = float(ref_point[0]), float(ref_point[1])
    keep = (f > r_f) & (xi < r_xi)
    Y = torch.stack([f[keep], -xi[keep]], dim=-1)
    Y = Y[is_non_dominated(Y, deduplicate=True)]
    order = torch.argsort(-Y[:, 1])
    return Y[order, 0], -Y[order, 1]


class LogSparseExpectedHypervolumeImprovement(AnalyticAcquisitionFunction):
    r"""Log of the closed-form EHVI of ``(f, xi)`` with a known sparsity ``xi`` (``q = 1``).

    ``log EHVI(x) = log sum_k l_k(xi(x)) EI(mu(x), sigma(x); h_k)`` (+ ``log P(feasible)``);
    see the module docstring for the derivation.

    Args:
        model: A fitted model; output ``objective_index`` is ``f``, the outputs in
            ``constraint_indices`` are constraint slacks (feasible when ``>= 0``).
        sparsity: Maps ``batch x 1 x d`` inputs to ``batch x 1`` values of ``xi``.
        f_observed: ``n`` observed objective values (noiseless or treated as such).
        xi_observed: ``n`` sparsity values of the observed points (same measure as
            ``sparsity``).
        ref_point: ``(r_f, r_xi)``: a lower bound on ``f``, an upper bound on ``xi``.
        objective_index: The model output that is ``f``.
        constraint_indices: Model outputs that must be ``>= 0``.

    Example:
        >>> measure = SparsityMeasure(torch.zeros(d), bounds, penalty="l0", a=0.1)
        >>> acqf = LogSparseExpectedHypervolumeImprovement(
        ...     model, measure, f_observed=Y[:, 0], xi_observed=measure(X), ref_point=(-1.0, d)
        ... )
        >>> acqf(X_test.unsqueeze(-2))  # batch x 1 x d -> batch
    """

    _log: bool = True

    def __init__(
        self,
        model: Model,
        sparsity: Callable[[Tensor], Tensor],
        f_observed: Tensor,
        xi_observed: Tensor,
        ref_point: Sequence[float],
        objective_index: int = 0,
        constraint_indices: Sequence[int] = (),
    ) -> None:
        super().__init__(model=model, allow_multi_output=True)
        self.sparsity = sparsity
        self.objective_index = objective_index
        self.constraint_indices = list(constraint_indices)
        r_f, r_xi = float(ref_point[0]), float(ref_point[1])
        f_front, xi_front = sparse_pareto_front(
            f_observed.reshape(-1), xi_observed.reshape(-1), ref_point
        )
        inf = torch.full((1,), float("inf"), dtype=f_front.dtype)
        r_xi_t = torch.full((1,), r_xi, dtype=f_front.dtype)
        # Slabs k = 0..K: sparsity interval [lower_k, upper_k) and height h_k of the front.
        self.register_buffer(
            "heights", torch.cat([torch.full((1,), r_f, dtype=f_front.dtype), f_front])
        )
        self.register_buffer("lower", torch.cat([-inf, xi_front]))
        self.register_buffer("upper", torch.cat([xi_front, r_xi_t]))
        self.ref_point = (r_f, r_xi)

    @property
    def num_front(self) -> int:
        """``K``, the number of observed points on the (reference-bounded) front."""
        return self.heights.numel() - 1

    def slab_widths(self, s: Tensor) -> Tensor:
        """``l_k(s) = max(0, upper_k - max(s, lower_k))``: a ``... x (K + 1)`` tensor."""
        return (self.upper - torch.maximum(s.unsqueeze(-1), self.lower)).clamp_min(0.0)

    @t_batch_mode_transform(expected_q=1)
    @average_over_ensemble_models
    def forward(self, X: Tensor) -> Tensor:
        r"""``log EHVI`` at ``batch x 1 x d`` inputs: a ``batch`` tensor."""
        means, sigmas = self._mean_and_sigma(X)  # batch (x ensemble) x m
        mu, sigma = means[..., self.objective_index], sigmas[..., self.objective_index]
        s = self.sparsity(X).squeeze(-1)  # batch
        if is_ensemble(self.model):
            s = s.unsqueeze(-1)  # broadcast over the ensemble members
        u = (mu.unsqueeze(-1) - self.heights) / sigma.unsqueeze(-1)
        log_ei = _log_ei_helper(u) + sigma.log().unsqueeze(-1)
        # A zero-width slab contributes nothing: log(0) -> the smallest finite log, which
        # keeps gradients finite (a point beyond r_xi gets a value of about -708 + log EI).
        tiny = torch.finfo(X.dtype).tiny
        log_width = self.slab_widths(s).clamp_min(tiny).log()
        value = torch.logsumexp(log_width + log_ei, dim=-1)
        for j in self.constraint_indices:
            value = value + log_Phi(means[..., j] / sigmas[..., j])
        return value


__all__ = ["LogSparseExpectedHypervolumeImprovement", "sparse_pareto_front"]
