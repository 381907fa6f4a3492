r"""How relevant each context is: feature collapsing (SADCBO) and HSIC (MMDBO).

**Feature collapsing** (Sebenius et al., AISTATS 2022, adapted by SADCBO, Martinelli et al.
2024, sec. 3.1, eqs. 4-5). With ``p_i = p(y | x_i, z_i, D)`` the predictive distribution at a
point and ``p_ij`` the same with context ``j`` collapsed (``z_j`` set to 0 in unit-cube
coordinates, i.e. to its lower bound),

    r_ij = KL(p_i || p_ij),      FC(j) = 1/n sum_i r_ij / sum_j' r_ij'            (5)

(eq. 5 as printed in sec. 3.1 sums the denominator over ``i'`` from 1 to ``c`` while its terms
are ``r_ij'``: an index typo; the sum runs over the contexts ``j'``, so that each sample's shares
add up to 1). Only Gaussian moments are needed, so every surrogate works:
GPs, MAP-SAAS (moment-matched mixture), the Gaussian neural surrogates and ensembles.
Variants of the authors' code: ``noise=False`` (the latent ``f`` instead of ``y``),
``distance="sqrt-kl"`` and ``normalize="average-first"`` (average ``r_ij`` over ``i``, then
normalize over ``j``).

**HSIC** (Spagnol et al., 2019; SADCBO appendix C, eqs. S3-S6): the relevance of ``z_j`` to
reaching the region ``L_gamma`` of high values is ``HSIC(z_j, 1[y in L_gamma])`` with an RBF
kernel on ``z_j`` (median-heuristic bandwidth) and the linear kernel on the indicator,
estimated by the V-statistic ``tr(K H L H) / n^2`` (``H`` the centring matrix), which equals
the three empirical expectations of eq. (S5).
"""

from __future__ import annotations

import math

import torch
from botorch.models.model import Model
from torch import Tensor

from dsbo.acquisition.base import posterior_moments
from dsbo.errors import ConfigError

NORMALIZE = ("per-sample", "average-first")
DISTANCES = ("kl", "sqrt-kl")


def predictive_moments(model: Model, X: Tensor, noise: bool = False) -> tuple[Tensor, Tensor]:
    """Mean and variance (``n`` each) of the model's Gaussian (or moment-matched mixture or
    ensemble) predictive at ``X`` (``n x d``, raw coordinates); ``noise`` adds the
    observation noise where the model has one."""
    with torch.no_grad():
        mean, var = posterior_moments(model, X, observation_noise=noise)
    return mean.reshape(-1), var.reshape(-1)


def gaussian_kl(mean_p: Tensor, var_p: Tensor, mean_q: Tensor, var_q: Tensor) -> Tensor:
    r"""``KL(N(mean_p, var_p) || N(mean_q, var_q))`` elementwise:
    ``1/2 [log(var_q / var_p) + (var_p + (mean_p - mean_q)^2) / var_q - 1]``."""
    return 0.5 * (torch.log(var_q / var_p) + (var_p + (mean_p - mean_q) ** 2) / var_q - 1.0)


def collapse_divergences(
    model: Model,
    X: Tensor,
    context_dims: list[int] | tuple[int, ...],
    bounds: Tensor,
    noise: bool = True,
    distance: str = "kl",
) -> Tensor:
    """``r_ij`` (``n x c``) of eq. (4): the divergence of the predictive at ``X[i]`` from the
    predictive with context ``context_dims[j]`` collapsed to its lower bound."""
    if distance not in DISTANCES:
        raise ConfigError(f"distance={distance!r}; choose one of {DISTANCES}")
    n, c = X.shape[0], len(context_dims)
    collapsed = X.unsqueeze(0).repeat(c, 1, 1)  # c x n x d
    for k, j in enumerate(context_dims):
        collapsed[k, :, j] = bounds[0, j]
    mean, var = predictive_moments(model, torch.cat([X, collapsed.reshape(c * n, -1)]), noise=noise)
    mean_p, var_p = mean[:n], var[:n]
    mean_q, var_q = mean[n:].reshape(c, n).T, var[n:].reshape(c, n).T
    r = gaussian_kl(mean_p.unsqueeze(-1), var_p.unsqueeze(-1), mean_q, var_q).clamp_min(0.0)
    return r.sqrt() if distance == "sqrt-kl" else r


def normalized_scores(r: Tensor, normalize: str = "per-sample") -> Tensor:
    """``FC(j)`` (``c``, summing to 1) from ``r_ij`` (``n x c``), eq. (5) or the code's order.

    A sample whose divergences are all zero carries no information and is skipped; if every
    sample is, the scores are uniform.
    """
    if normalize not in NORMALIZE:
        raise ConfigError(f"normalize={normalize!r}; choose one of {NORMALIZE}")
    c = r.shape[-1]
    if normalize == "per-sample":
        totals = r.sum(-1)
        keep = totals > 0
        if not keep.any():
            return torch.full((c,), 1.0 / c, dtype=r.dtype)
        return (r[keep] / totals[keep].unsqueeze(-1)).mean(0)
    mean = r.mean(0)
    return mean / mean.sum() if mean.sum() > 0 else torch.full((c,), 1.0 / c, dtype=r.dtype)


def eta_cut(scores: Tensor, eta: float) -> list[int]:
    """Indices of the smallest set of highest scores whose sum reaches ``eta * sum(scores)``
    (Algorithm 1, line 7), in descending order of score."""
    if not 0 < eta <= 1:
        raise ConfigError(f"eta={eta!r} must be in (0, 1]")
    total = float(scores.sum())
    if total <= 0:
        return list(range(scores.numel()))
    order = torch.argsort(scores, descending=True, stable=True)
    cumulative = torch.cumsum(scores[order], 0) / total
    k = int((cumulative < eta - 1e-12).sum()) + 1
    return order[: min(k, scores.numel())].tolist()


def hsic(a: Tensor, b: Tensor, bandwidth: float | None = None) -> Tensor:
    r"""The biased (V-statistic) HSIC of samples ``a`` (``n``, RBF kernel) and ``b`` (``n``,
    linear kernel ``l(y, y') = y y'``): ``tr(K H L H) / n^2``.

    ``bandwidth`` of the RBF kernel ``exp(-(a - a')^2 / (2 s^2))``: the median of the pairwise
    distances (the median heuristic) unless given.
    """
    n = a.numel()
    dist = (a.reshape(-1, 1) - a.reshape(1, -1)).abs()
    if bandwidth is None:
        off = dist[~torch.eye(n, dtype=torch.bool)]
        bandwidth = float(off.median()) if off.numel() and float(off.median()) > 0 else 1.0
    K = torch.exp(-(dist**2) / (2 * bandwidth**2))
    L = b.reshape(-1, 1) * b.reshape(1, -1)
    H = torch.eye(n, dtype=a.dtype) - 1.0 / n
    return torch.trace(K @ H @ L @ H) / n**2


def hsic_scores(Z: Tensor, y: Tensor, gamma: float = 0.8) -> Tensor:
    """``S^HSIC(z_j) = HSIC(z_j, 1[y in L_gamma])`` for each column of ``Z`` (``n x c``), with
    ``L_gamma`` the top-value set of :func:`top_value_mask`."""
    indicator = top_value_mask(y, gamma, "ratio").to(Z.dtype)
    return torch.stack([hsic(Z[:, j], indicator) for j in range(Z.shape[-1])]).clamp_min(0.0)


def top_value_mask(y: Tensor, gamma: float, rule: str = "ratio") -> Tensor:
    r"""The top-value set ``D^gamma`` of eq. (6) as a boolean mask over ``y`` (``n``).

    ``"ratio"`` (the paper): ``y_i / y_best >= gamma``, applied to ``y`` min-max scaled over
    the data (the paper's outputs are already in ``[0, 1]``; the ratio is meaningless for
    negative values otherwise). ``"rank"`` (the authors' code, as described in its comments):
    the best ``ceil((1 - gamma) n)`` points.
    """
    if not 0 <= gamma <= 1:
        raise ConfigError(f"gamma={gamma!r} must be in [0, 1]")
    y = y.reshape(-1)
    if rule == "rank":
        k = max(1, math.ceil(round((1 - gamma) * y.numel(), 9)))  # round: (1 - 0.7) * 10 > 3
        mask = torch.zeros_like(y, dtype=torch.bool)
        mask[torch.topk(y, k).indices] = True
        return mask
    if rule != "ratio":
        raise ConfigError(f"top_set={rule!r}; choose 'ratio' or 'rank'")
    span = y.max() - y.min()
    if span <= 0:
        return torch.ones_like(y, dtype=torch.bool)
    return (y - y.min()) / span >= gamma - 1e-12
