r"""The ranking sourcing simulation of SEBO (Liu et al., appendix F.1 and Algorithm 2).

A recommender system retrieves items from ``S = 25`` content sources; the policy
``x in {0, ..., 50}^S`` says how many items each source fetches. Sources and items are tied
together by an LDA-like generative model with ``T = 8`` latent topics and ``K = 1000``
items, drawn once from a seeded :class:`torch.Generator`:

    theta_s ~ Dir(alpha)  (alpha = 0.2)       topic mixture of source s        (S x T)
    phi_i   ~ Dir(beta)   (beta = 0.5)        item distribution of topic i     (T x K)
    Q_i     ~ LogNormal                       relevance of topic i             (T)
    m_k     = sum_i phi_{i,k} Q_i             relevance of item k              (K)
    q_s     = sum_i theta_{s,i} Q_i           relevance of source s            (S)
    c_s     ~ N(q_s / (2 sum_s' q_s'), 0.1^2) cost per fetched item of source s (S)

One simulation (Algorithm 2): source ``s`` retrieves ``x_s`` items, each by drawing a topic
``z ~ Multi(theta_s)`` and then an item ``w ~ Multi(phi_z)``; ``n_k`` counts the retrievals of
item ``k`` over all sources, and

    quality = RS - 0.6 * C,   RS = sum_k 1(n_k > 0) m_k,   C = sum_s c_s x_s.

Quality is maximized (no negation). The paper reports the mean of 1000 independent
simulations per policy.

**Closed form** (``mode="expected"``). Marginalizing the topic, one draw of source ``s``
returns item ``k`` with probability ``p_{s,k} = sum_i theta_{s,i} phi_{i,k}`` (``p_s =
theta_s @ phi``), independently of every other draw. Item ``k`` is therefore missed by all
``sum_s x_s`` draws with probability ``prod_s (1 - p_{s,k})^{x_s}``, and by linearity of
expectation

    E[quality](x) = sum_k m_k (1 - prod_s (1 - p_{s,k})^{x_s}) - 0.6 sum_s c_s x_s
                  = m^T (-expm1(x^T L)) - 0.6 c^T x,   L_{s,k} = log1p(-p_{s,k}).

This is the infinite-repeat limit of the Monte-Carlo protocol: smooth, noiseless and
differentiable in ``x`` (the formula accepts non-integer ``x``; the problem's domain stays
integer, see :meth:`SourcingSimulation.expected_quality`). With zero cost weight it is
non-decreasing in every ``x_s`` because ``m_k >= 0``.

**Monte-Carlo** (``mode="monte-carlo"``, default; the paper's protocol). The ``x_s`` draws of
a source are i.i.d. from ``p_s``, so the two-stage topic/item draw is replaced by one draw
from the mixture ``p_s`` (same distribution). Draws are made with Walker's alias method (one
float64 uniform per draw, table lookups), vectorized over repeats, draws and the points of a
batch; retrieved items are de-duplicated by scattering into a ``repeats x K`` indicator and
``RS`` is one matrix product with ``m``. Measured side by side in one run on one CPU thread
(10 random policies x 1000 repeats, loaded 2-core machine): alias ~0.25-0.35 s,
``torch.multinomial`` and inverse-CDF ``torch.searchsorted`` each 4-7x slower;
``torch.distributions.Multinomial`` needs one scalar ``total_count`` and takes no generator,
so it does not fit. The worst case (all ``x_s = 50``, 12.5M draws) takes ~0.5-0.7 s. More
intra-op threads do not help on a loaded 2-core machine (measured 2-3x slower with 2).
The randomness of the repeats of a point ``x`` comes from a generator seeded with a hash of
``(seed, x)`` (:meth:`SourcingSimulation.point_seed`): evaluating the same ``x`` twice gives
the same value, and the same draws whatever batch it is evaluated in (the final matrix
product may then round differently in the last bit).

**Open choices** (appendix F.1 of the SEBO paper leaves them open; each is an option):

- ``relevance_lognormal``: the paper's "log-normal with mean 0.25 and standard deviation
  1.5" is ambiguous. ``"log"`` (default) reads 0.25 and 1.5 as the mean and standard deviation
  of ``log Q`` (``mu = 0.25``, ``sigma = 1.5``); ``"moments"`` reads them as the mean and
  standard deviation of ``Q`` itself, i.e. ``sigma^2 = log(1 + sd^2 / mean^2)`` and
  ``mu = log(mean) - sigma^2 / 2``.
- ``clip_negative_cost``: the cost mean averages ``1 / (2 S) = 0.02`` while its standard
  deviation is 0.1, so roughly 40% of the drawn costs are negative; a negative cost would
  *reward* retrieval, which the paper cannot intend. By default costs are clipped at 0
  (``clip_negative_cost=True``); ``False`` keeps the raw Gaussian draws. The raw draws are
  kept in :attr:`SourcingSimulation.cost_unclipped` either way.
- Draw order from the seeded generator: theta, phi, the standard normals of log Q, the
  standard normals of the costs.

Example:
    >>> problem = make_sourcing_problem(seed=0)
    >>> x = torch.zeros(1, 25, dtype=torch.double)
    >>> x[0, :3] = 10
    >>> problem.evaluate(x)              # mean of 1000 simulations
    >>> problem.test_problem.expected_quality(x)   # closed form
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import torch
import torch.nn.functional as F
from botorch.test_functions.synthetic import SyntheticTestFunction
from torch import Tensor

from dsbo.errors import ConfigError, ProblemError
from dsbo.problems.base import Problem

__all__ = ["MODES", "RELEVANCE_LOGNORMAL", "SourcingSimulation", "make_sourcing_problem"]

MODES = ("monte-carlo", "expected")
RELEVANCE_LOGNORMAL = ("log", "moments")

# Upper bound on the number of per-draw elements (repeats x draws) processed at once in
# Monte-Carlo mode; points are grouped into chunks under this budget. Measured: 2^19..2^20
# is the sweet spot on one thread (cache-friendly), 2^24 is ~4x slower.
_CHUNK_ELEMENTS = 2**20


# --------------------------------------------------------------------------- validation
def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"sourcing option {name!r} must be an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"sourcing option {name!r} must be >= {minimum}, got {value!r}")
    return int(value)


def _check_float(name: str, value: Any, *, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"sourcing option {name!r} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"sourcing option {name!r} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(f"sourcing option {name!r} must be > 0, got {value!r}")
    if nonneg and value < 0:
        raise ConfigError(f"sourcing option {name!r} must be >= 0, got {value!r}")
    return value


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"sourcing option {name!r} must be one of {choices}, got {value!r}")
    return value


def _dirichlet(
    concentration: float, shape: tuple[int, int], generator: torch.Generator, name: str
) -> Tensor:
    """Rows ~ Dir(concentration) as normalized Gamma draws (float64, from ``generator``)."""
    alpha = torch.full(shape, concentration, dtype=torch.double)
    # ``torch.distributions.Dirichlet`` takes no generator; ``_standard_gamma`` does.
    g = torch._standard_gamma(alpha, generator=generator)
    total = g.sum(-1, keepdim=True)
    if not bool((total > 0).all()):
        raise ConfigError(
            f"sourcing option {name!r} = {concentration} is so small that a Dirichlet draw "
            "underflowed to all zeros; use a larger value or another seed"
        )
    return g / total


def _alias_tables(p: Tensor) -> tuple[Tensor, Tensor]:
    """Walker/Vose alias tables for each row of ``p`` (rows sum to 1).

    A draw picks a column ``k`` uniformly and returns ``k`` with probability ``prob[k]``,
    otherwise ``alias[k]``. Built once, in Python (O(S K)).
    """
    S, K = p.shape
    probs = torch.ones(S, K, dtype=torch.double)
    aliases = torch.arange(K).repeat(S, 1)
    for s in range(S):
        scaled = (p[s] * K).tolist()
        prob = [1.0] * K
        alias = list(range(K))
        small = [k for k in range(K) if scaled[k] < 1.0]
        large = [k for k in range(K) if scaled[k] >= 1.0]
        while small and large:
            lo = small.pop()
            hi = large[-1]
            prob[lo] = scaled[lo]
            alias[lo] = hi
            scaled[hi] -= 1.0 - scaled[lo]
            if scaled[hi] < 1.0:
                large.pop()
                small.append(hi)
        # Leftovers (rounding) keep prob 1 and alias to themselves.
        probs[s] = torch.tensor(prob, dtype=torch.double)
        aliases[s] = torch.tensor(alias)
    return probs, aliases


# --------------------------------------------------------------------------- test problem
class SourcingSimulation(SyntheticTestFunction):
    r"""SEBO's ranking sourcing simulation (Liu et al., appendix F.1) as a BoTorch problem.

    The policy ``x in {0, ..., max_retrievals}^S`` (all dimensions discrete) is evaluated to
    the quality ``RS - cost_weight * C`` (maximized): the Monte-Carlo mean of ``n_repeats``
    simulations (``mode="monte-carlo"``) or its closed-form expectation
    (``mode="expected"``). See the module docstring for the model, the closed form and the
    choices made where the paper is ambiguous. Defaults are the paper's.

    Args:
        num_sources: ``S``, number of content sources (= dimension).
        num_items: ``K``, number of distinct items.
        num_topics: ``T``, number of latent topics.
        max_retrievals: Upper bound of every ``x_s`` (the paper's 50).
        alpha: Dirichlet concentration of the source topic mixtures ``theta_s``.
        beta: Dirichlet concentration of the topic item distributions ``phi_i``.
        relevance_mean: 0.25 of the paper's log-normal topic relevance.
        relevance_std: 1.5 of the paper's log-normal topic relevance.
        relevance_lognormal: ``"log"`` (the two numbers are the mean and sd of ``log Q``) or
            ``"moments"`` (they are the mean and sd of ``Q``).
        cost_std: Standard deviation of the Gaussian cost per fetched item.
        cost_weight: Weight of the infrastructure cost in the quality (the paper's 0.6).
        clip_negative_cost: Clip drawn costs at 0 (default) instead of keeping negative ones.
        mode: ``"monte-carlo"`` or ``"expected"``.
        n_repeats: Number of simulations averaged per point in Monte-Carlo mode.
        seed: Seed of the generative model and of the repeat randomness.
        noise_std: Optional extra Gaussian observation noise (BoTorch convention).
        dtype: dtype of the bounds (the simulation itself runs in float64).

    Attributes (float64 buffers): ``theta`` (S x T), ``phi`` (T x K), ``Q`` (T), ``m`` (K),
    ``q`` (S), ``c`` (S, after clipping), ``cost_unclipped`` (S), ``p`` (S x K, one-draw item
    probabilities ``theta @ phi``), ``log_miss`` (S x K, ``log1p(-p)``).

    Example:
        >>> f = SourcingSimulation(mode="expected")
        >>> f(torch.full((2, 25), 3.0))
    """

    _check_grad_at_opt = False
    _is_minimization_by_default = False

    def __init__(
        self,
        *,
        num_sources: int = 25,
        num_items: int = 1000,
        num_topics: int = 8,
        max_retrievals: int = 50,
        alpha: float = 0.2,
        beta: float = 0.5,
        relevance_mean: float = 0.25,
        relevance_std: float = 1.5,
        relevance_lognormal: str = "log",
        cost_std: float = 0.1,
        cost_weight: float = 0.6,
        clip_negative_cost: bool = True,
        mode: str = "monte-carlo",
        n_repeats: int = 1000,
        seed: int = 0,
        noise_std: float | None = None,
        dtype: torch.dtype = torch.double,
    ) -> None:
        S = _check_int("num_sources", num_sources, 1)
        K = _check_int("num_items", num_items, 1)
        T = _check_int("num_topics", num_topics, 1)
        self.max_retrievals = _check_int("max_retrievals", max_retrievals, 1)
        self.alpha = _check_float("alpha", alpha, positive=True)
        self.beta = _check_float("beta", beta, positive=True)
        self.relevance_lognormal = _check_choice(
            "relevance_lognormal", relevance_lognormal, RELEVANCE_LOGNORMAL
        )
        relevance_mean = _check_float(
            "relevance_mean", relevance_mean, positive=relevance_lognormal == "moments"
        )
        relevance_std = _check_float("relevance_std", relevance_std, nonneg=True)
        self.cost_std = _check_float("cost_std", cost_std, nonneg=True)
        self.cost_weight = _check_float("cost_weight", cost_weight)
        if not isinstance(clip_negative_cost, bool):
            raise ConfigError(
                f"sourcing option 'clip_negative_cost' must be a bool, got {clip_negative_cost!r}"
            )
        self.clip_negative_cost = clip_negative_cost
        self.mode = _check_choice("mode", mode, MODES)
        self.n_repeats = _check_int("n_repeats", n_repeats, 1)
        self.seed = _check_int("seed", seed, 0)
        if noise_std is not None:
            noise_std = _check_float("noise_std", noise_std, nonneg=True)

        if self.relevance_lognormal == "log":
            mu, sigma = relevance_mean, relevance_std
        else:  # moments of Q itself
            sigma = math.sqrt(math.log1p((relevance_std / relevance_mean) ** 2))
            mu = math.log(relevance_mean) - 0.5 * sigma**2
        self.relevance_mu, self.relevance_sigma = mu, sigma

        self.dim = S
        self.num_sources, self.num_items, self.num_topics = S, K, T
        self.continuous_inds = []
        self.discrete_inds = list(range(S))
        self.categorical_inds = []
        bounds = [(0.0, float(self.max_retrievals)) for _ in range(S)]
        super().__init__(noise_std=noise_std, negate=False, bounds=bounds, dtype=dtype)

        # ---- the generative model, drawn once from one seeded generator
        gen = torch.Generator().manual_seed(self.seed)
        theta = _dirichlet(self.alpha, (S, T), gen, "alpha")
        phi = _dirichlet(self.beta, (T, K), gen, "beta")
        Q = torch.exp(mu + sigma * torch.randn(T, generator=gen, dtype=torch.double))
        m = Q @ phi
        q = theta @ Q
        cost_mean = q / (2.0 * q.sum())
        cost_raw = cost_mean + self.cost_std * torch.randn(S, generator=gen, dtype=torch.double)
        c = cost_raw.clamp_min(0.0) if self.clip_negative_cost else cost_raw
        p = theta @ phi
        p = p / p.sum(-1, keepdim=True)
        # Clamp keeps 0 * log_miss finite when some p_{s,k} == 1 (e.g. K == 1).
        log_miss = torch.log1p(-p).clamp_min(-1e4)
        alias_prob, alias_index = _alias_tables(p)

        for name, value in {
            "theta": theta,
            "phi": phi,
            "Q": Q,
            "m": m,
            "q": q,
            "c": c,
            "cost_unclipped": cost_raw,
            "p": p,
            "log_miss": log_miss,
            "_alias_prob": alias_prob.reshape(-1),
            "_alias_index": alias_index.reshape(-1),
        }.items():
            self.register_buffer(name, value)

    # ------------------------------------------------------------------ helpers
    def _check_X(self, X: Tensor, integer: bool) -> Tensor:
        X = torch.as_tensor(X)
        if X.ndim == 0 or X.shape[-1] != self.dim:
            raise ProblemError(
                f"sourcing: X must have shape (batch) x {self.dim}, got {tuple(X.shape)}"
            )
        Xd = X.detach().to(torch.double)
        if not bool(torch.isfinite(Xd).all()):
            raise ProblemError("sourcing: X contains NaN or inf")
        if bool((Xd < 0).any()) or bool((Xd > self.max_retrievals).any()):
            raise ProblemError(
                f"sourcing: X has entries outside the bounds [0, {self.max_retrievals}]"
            )
        if integer and not torch.equal(Xd, Xd.round()):
            raise ProblemError("sourcing: Monte-Carlo simulation needs integer-valued X")
        return X

    def point_seed(self, x: Tensor) -> int:
        """Seed of the repeat randomness of one integer point ``x`` (a ``d``-vector).

        A 63-bit BLAKE2b hash of the problem seed and the integer values of ``x``: stable
        across processes and platforms, independent of the batch ``x`` is evaluated in.
        """
        values = ",".join(str(v) for v in x.detach().round().to(torch.int64).tolist())
        digest = hashlib.blake2b(
            f"dsbo-sourcing|{self.seed}|{values}".encode(), digest_size=8
        ).digest()
        return int.from_bytes(digest, "little") >> 1

    # ------------------------------------------------------------------ evaluation
    def cost(self, X: Tensor) -> Tensor:
        """Infrastructure cost ``C = sum_s c_s x_s``; shape ``batch_shape`` (float64)."""
        return X.to(torch.double) @ self.c

    def expected_quality(self, X: Tensor) -> Tensor:
        r"""Closed-form expected quality (the infinite-repeat limit), float64.

        ``E[Q](x) = sum_k m_k (1 - prod_s (1 - p_{s,k})^{x_s}) - cost_weight * sum_s c_s x_s``.
        Accepts non-integer ``x`` within the bounds (a continuous relaxation, differentiable
        in ``X``); :meth:`evaluate_true` still enforces the integer domain.

        Args:
            X: ``batch_shape x d`` policies.

        Returns:
            ``batch_shape`` expected qualities.
        """
        X = self._check_X(X, integer=False)
        return self._expected(X)

    def _expected(self, X: Tensor) -> Tensor:
        Xd = X.to(torch.double)
        relevance = (-torch.expm1(Xd @ self.log_miss)) @ self.m
        return relevance - self.cost_weight * (Xd @ self.c)

    def simulate(self, X: Tensor) -> Tensor:
        r"""Quality of each of the ``n_repeats`` independent simulations of each point.

        Deterministic given the problem seed and the integer values of each point (see
        :meth:`point_seed`). The mean over the last dimension is the Monte-Carlo value; its
        standard error is ``std / sqrt(n_repeats)`` (:meth:`mean_and_sem`).

        Args:
            X: ``batch_shape x d`` integer policies.

        Returns:
            ``batch_shape x n_repeats`` float64 qualities.
        """
        X = self._check_X(X, integer=True)
        return self._simulate(X)

    def mean_and_sem(self, X: Tensor) -> tuple[Tensor, Tensor]:
        """Monte-Carlo mean and its standard error, each of shape ``batch_shape``."""
        sims = self.simulate(X)
        if self.n_repeats == 1:
            raise ProblemError("sourcing: a standard error needs n_repeats >= 2")
        return sims.mean(dim=-1), sims.std(dim=-1) / math.sqrt(self.n_repeats)

    def _simulate(self, X: Tensor) -> Tensor:
        batch_shape = X.shape[:-1]
        Xi = X.detach().reshape(-1, self.dim).round().to(torch.int64)
        n, R, K, S = Xi.shape[0], self.n_repeats, self.num_items, self.num_sources
        out = torch.empty(n, R, dtype=torch.double)
        lengths = Xi.sum(-1).tolist()  # number of draws per point and repeat
        costs = self.cost(Xi)
        sources = torch.arange(S)
        start = 0
        while start < n:
            # group consecutive points under the element budget (at least one point)
            stop, width = start + 1, lengths[start]
            while (
                stop < n and (stop - start + 1) * R * max(width, lengths[stop]) <= _CHUNK_ELEMENTS
            ):
                width = max(width, lengths[stop])
                stop += 1
            c = stop - start
            src = torch.full((c, width), -1, dtype=torch.int64)
            draws = []
            for a in range(c):
                L = lengths[start + a]
                gen = torch.Generator().manual_seed(self.point_seed(Xi[start + a]))
                draws.append(torch.rand(R, L, generator=gen, dtype=torch.double))
                src[a, :L] = torch.repeat_interleave(sources, Xi[start + a])
            if c == 1:
                u = draws[0].unsqueeze(0)  # no copy in the common one-point chunk
            else:
                u = torch.stack([F.pad(d, (0, width - d.shape[-1])) for d in draws])
            # alias draw: column from the integer part of u*K, coin from the fraction
            uk = u.mul_(K)
            col = uk.to(torch.int64).clamp_(max=K - 1)
            coin = uk.frac_()
            flat = (col + (src.clamp(min=0) * K).unsqueeze(1)).reshape(-1)
            keep = self._alias_prob.index_select(0, flat).view_as(col)
            alias = self._alias_index.index_select(0, flat).view_as(col)
            item = torch.where(coin < keep, col, alias)
            item.masked_fill_((src < 0).unsqueeze(1), K)  # padding -> dummy item K
            retrieved = torch.zeros(c, R, K + 1, dtype=torch.double)
            retrieved.scatter_(-1, item, 1.0)  # de-duplication: 1(n_k > 0)
            relevance = retrieved[..., :K] @ self.m
            out[start:stop] = relevance - self.cost_weight * costs[start:stop].unsqueeze(-1)
            start = stop
        return out.reshape(*batch_shape, R)

    def _evaluate_true(self, X: Tensor) -> Tensor:
        if self.mode == "expected":
            f = self._expected(X)
        else:
            f = self._simulate(X).mean(dim=-1)
        return f.to(X.dtype)


# --------------------------------------------------------------------------- factory
_DEFAULTS: dict[str, Any] = {
    "num_sources": 25,
    "num_items": 1000,
    "num_topics": 8,
    "max_retrievals": 50,
    "alpha": 0.2,
    "beta": 0.5,
    "relevance_mean": 0.25,
    "relevance_std": 1.5,
    "relevance_lognormal": "log",
    "cost_std": 0.1,
    "cost_weight": 0.6,
    "clip_negative_cost": True,
    "mode": "monte-carlo",
    "n_repeats": 1000,
    "seed": 0,
    "noise_std": None,
}


def make_sourcing_problem(**options: Any) -> Problem:
    """The SEBO ranking sourcing problem (25-d integer policy, quality maximized).

    Options are the keyword arguments of :class:`SourcingSimulation` (defaults: the paper's
    values, ``relevance_lognormal="log"``, ``clip_negative_cost=True``,
    ``mode="monte-carlo"``, ``n_repeats=1000``, ``seed=0``) plus ``name`` (default
    ``"sourcing"``). The default point is ``x^s = 0`` (all sources off, quality 0); every
    dimension is relevant and integer.

    Raises:
        ConfigError: for an unknown option or an invalid value, naming the option.

    Example:
        >>> problem = make_sourcing_problem(mode="expected", seed=3)
        >>> problem.evaluate(problem.default_point.unsqueeze(0))   # tensor([[0.]])
    """
    name = options.pop("name", "sourcing")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"sourcing option 'name' must be a non-empty string, got {name!r}")
    unknown = sorted(set(options) - set(_DEFAULTS))
    if unknown:
        raise ConfigError(
            f"unknown sourcing option(s) {unknown}; allowed: {sorted(_DEFAULTS) + ['name']}"
        )
    cfg = {**_DEFAULTS, **options}
    tp = SourcingSimulation(**cfg)
    S = tp.num_sources
    metadata = {
        "paper": "SEBO (Liu et al.), appendix F.1, Algorithm 2",
        "mode": tp.mode,
        "n_repeats": tp.n_repeats,
        "relevance_lognormal": tp.relevance_lognormal,
        "relevance_mu": tp.relevance_mu,
        "relevance_sigma": tp.relevance_sigma,
        "clip_negative_cost": tp.clip_negative_cost,
        "num_clipped_costs": int((tp.cost_unclipped < 0).sum()) if tp.clip_negative_cost else 0,
        "cost_weight": tp.cost_weight,
        "seed": tp.seed,
        "num_sources": S,
        "num_items": tp.num_items,
        "num_topics": tp.num_topics,
        "max_retrievals": tp.max_retrievals,
        "options": dict(cfg),
    }
    return Problem(
        name=name,
        test_problem=tp,
        default_point=torch.zeros(S, dtype=torch.double),
        relevant_dims=tuple(range(S)),
        optimal_value=None,
        noise_std=cfg["noise_std"],
        objective_names=("quality",),
        integer_dims=tuple(range(S)),
        description=(
            f"SEBO ranking sourcing simulation: {S} sources, {tp.num_items} items, "
            f"{tp.num_topics} topics, integer policy in [0, {tp.max_retrievals}]^{S}; "
            f"quality = relevance - {tp.cost_weight} x cost ({tp.mode}"
            + (f", {tp.n_repeats} repeats" if tp.mode == "monte-carlo" else "")
            + "), maximized"
        ),
        metadata=metadata,
    )
