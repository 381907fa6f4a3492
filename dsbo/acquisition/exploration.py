r"""Exploration when the search stalls: a Thompson draw instead of the acquisition's maximizer.

On the hyperparameter-tuning problems of ``experiments/mixed_spaces.py`` an expected-improvement
search can lock onto one combination of categories and polish its continuous inputs on a
plateau of equal values: on ``svc-digits`` (seed 0) 27 of 27 BO proposals used the polynomial
kernel, 13 of them scoring exactly 0.0300, the run's best validation error, while the RBF
kernel at a moderate ``gamma`` (never tried after the initial design's three unlucky RBF
points) reaches 0.018. Expected improvement cannot leave such a plateau: its incumbent is
matched again and again, and points elsewhere look worse by the posterior mean of the few
observations made there.

The rule. Let :math:`s` be the number of observations after the initial design since the best
value last improved strictly (counted from the end of the design when its best is still the
best). When :math:`s \ge p` and :math:`s \equiv 0 \pmod p` (``p``: ``OptimizerSettings.
stall_patience``), the proposal is the maximizer of one posterior draw over a scrambled Sobol
set (Thompson sampling, :mod:`dsbo.acquisition.thompson`): a draw proposes a point with the
posterior probability that it is the best one (Russo and Van Roy, 2014), so regions and
categories the model is unsure of get tried in proportion to that chance, and a stalled search
spends one proposal in ``p`` on them. While the search improves, nothing changes. The same
remedy in other tools: SMAC3 interleaves random configurations (probability 0.2), HEBO draws
from a Pareto set of acquisitions, TuRBO restarts a stalled trust region.

It applies to single-objective policies without a post-processor (BONSAI/SEBO propose sparse
points on purpose), without linear parameter constraints (the Sobol set ignores them) and
without a cost budget.

References:
    D. Russo and B. Van Roy. Learning to optimize via posterior sampling. Mathematics of
    Operations Research, 2014.
    F. Hutter, H. Hoos and K. Leyton-Brown. Sequential model-based optimization for general
    algorithm configuration (SMAC). LION 2011.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from botorch.models.model import Model

    from dsbo.acquisition.base import History, Proposal
    from dsbo.acquisition.settings import OptimizerSettings
    from dsbo.problems.base import Problem

#: Candidates of the Thompson draw (an exact joint draw factorizes an N x N covariance).
EXPLORE_CANDIDATES = 1024


def stalled_for(history: History) -> int:
    """Observations after the initial design since the best first objective last improved
    strictly (all of them when the design's best is still the best); 0 when the history has
    no observation after the design."""
    y = history.Y[:, 0]
    n, start = y.shape[0], min(history.n_design, y.shape[0])
    if n == start:
        return 0
    finite = torch.nan_to_num(y, nan=-torch.inf)
    best_before = finite[:start].max() if start else torch.tensor(-torch.inf, dtype=y.dtype)
    running = torch.cummax(torch.cat([best_before.reshape(1), finite[start:]]), dim=0).values
    improved = torch.nonzero(running[1:] > running[:-1]).reshape(-1)
    last = (
        int(improved[-1]) + 1 if improved.numel() else 0
    )  # observations up to the last improvement
    return n - start - last


def exploration_due(history: History, patience: int) -> bool:
    """Whether this proposal explores: stalled for a positive multiple of ``patience``."""
    if patience <= 0:
        return False
    s = stalled_for(history)
    return s >= patience and s % patience == 0


def explore(
    model: Model,
    history: History,
    problem: Problem,
    q: int,
    optimizer: OptimizerSettings,
    branches: list[dict[int, float]] | None = None,
) -> Proposal:
    """``q`` maximizers of independent posterior draws over ``EXPLORE_CANDIDATES`` Sobol
    points (fixed features set, rounded to the search space), marked ``explore`` in their
    metadata. With ``branches`` (combinations of categories) and ``q = 1``, a draw over the
    incumbent's copies in every branch comes first: when it leaves the incumbent's branch,
    its best copy is the proposal (:func:`~dsbo.acquisition.branches.draw_branch`)."""
    from dsbo.acquisition.base import Proposal
    from dsbo.acquisition.thompson import ThompsonSampling

    stalled = stalled_for(history)
    if branches is not None and q == 1:
        from dsbo.acquisition.branches import draw_branch

        moved = draw_branch(model, history, problem, optimizer, branches)
        if moved is not None:
            x, branch = moved
            meta = {"acquisition": "thompson", "explore": True, "stalled_for": stalled}
            return Proposal(X=x, metadata=[{**meta, "branch": branch}])
    proposal = ThompsonSampling(EXPLORE_CANDIDATES, optimizer).propose(model, history, problem, q)
    for meta in proposal.metadata:
        meta.update(explore=True, stalled_for=stalled)
    return proposal


def explored(metadata: list[dict]) -> str:
    """The generator name's suffix for a proposal: ``"+explore"`` when it explored."""
    return "+explore" if any(meta.get("explore") for meta in metadata) else ""


__all__ = ["EXPLORE_CANDIDATES", "exploration_due", "explore", "explored", "stalled_for"]
