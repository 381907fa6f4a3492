"""Verdicts on goals that compare two arms over the same seeds (issue 59).

A goal "ours is better than theirs" is judged for arms named before the run, paired by seed,
with the two-sided Wilcoxon signed-rank test of ``scipy.stats.wilcoxon``:

- ``"met"``: the mean difference is in our favour and ``p <= threshold_p``;
- ``"within noise"``: ``p > threshold_p``, or no test is possible (fewer than two pairs, or
  every difference zero): the runs do not tell the arms apart;
- ``"missed"``: otherwise (``p <= threshold_p`` with the mean difference not in our favour).

The sign of a mean difference alone is never a verdict.

Example:
    >>> v = paired_verdict({0: 0.1, 1: 0.2, 2: 0.1}, {0: 0.3, 1: 0.4, 2: 0.2}, lower_is_better=True)
    >>> v.verdict, round(v.mean_diff, 3), v.pairs, v.wins
    ('within noise', -0.167, 3, 3)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MET, WITHIN_NOISE, MISSED = "met", "within noise", "missed"


@dataclass(frozen=True)
class PairedVerdict:
    """``mean_diff``: mean of ours - theirs over the pairs; ``p``: the Wilcoxon signed-rank
    p-value (``None`` where no test is possible); ``wins`` / ``losses``: pairs where ours is
    better / worse."""

    mean_diff: float
    p: float | None
    verdict: str
    pairs: int
    wins: int
    losses: int

    def describe(self, digits: int = 2) -> str:
        """``"missed (mean difference +0.027, Wilcoxon p 0.002, 10 pairs, 0 / 10 wins / losses)"``."""
        p = "-" if self.p is None else f"{self.p:.{digits}g}"
        return (
            f"{self.verdict} (mean difference {self.mean_diff:+.3g}, Wilcoxon p {p}, "
            f"{self.pairs} pairs, {self.wins} / {self.losses} wins / losses)"
        )


def _pairs(
    ours: Mapping[object, float] | Sequence[float], theirs: Mapping[object, float] | Sequence[float]
) -> list[tuple[float, float]]:
    if isinstance(ours, Mapping) != isinstance(theirs, Mapping):
        raise TypeError("ours and theirs must both be mappings (seed -> value) or both sequences")
    if isinstance(ours, Mapping):
        keys = sorted(set(ours) & set(theirs))  # the seeds both arms ran
        pairs = [(ours[k], theirs[k]) for k in keys]
    else:
        if len(ours) != len(theirs):
            raise ValueError(f"unpaired: {len(ours)} values of ours against {len(theirs)}")
        pairs = list(zip(ours, theirs, strict=True))
    if not pairs:
        raise ValueError("no pairs: the two arms share no seed")
    for a, b in pairs:
        if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"a pair without two finite values: {(a, b)}")
    return [(float(a), float(b)) for a, b in pairs]


def finals_by_seed(
    runs: Sequence[Mapping[str, Any]],
    problem: str,
    arm: str,
    seeds: Sequence[int],
    **fields: Any,
) -> dict[int, Any]:
    """Seed -> ``final_best`` of the full-size (not ``smoke``) runs of ``arm`` on ``problem``
    over ``seeds`` whose ``fields`` hold the given values (e.g. ``budget=40``): the values a
    goal pairs by seed."""
    return {
        r["seed"]: r["final_best"]
        for r in runs
        if r["problem"] == problem
        and r["arm"] == arm
        and r["seed"] in seeds
        and not r.get("smoke")
        and all(r.get(k) == value for k, value in fields.items())
    }


def paired_verdict(
    ours: Mapping[object, float] | Sequence[float],
    theirs: Mapping[object, float] | Sequence[float],
    lower_is_better: bool,
    threshold_p: float = 0.1,
) -> PairedVerdict:
    """Judge "ours is better than theirs" over paired values: two mappings seed -> value (paired
    on the seeds both hold) or two sequences in the same seed order. Values must be finite."""
    from scipy.stats import wilcoxon

    pairs = _pairs(ours, theirs)
    diffs = [a - b for a, b in pairs]
    mean_diff = sum(diffs) / len(diffs)
    sign = -1.0 if lower_is_better else 1.0
    wins = sum(sign * d > 0 for d in diffs)
    losses = sum(sign * d < 0 for d in diffs)
    if len(pairs) < 2 or all(d == 0 for d in diffs):
        p = None
    else:
        p = float(wilcoxon([a for a, _ in pairs], [b for _, b in pairs]).pvalue)
    better = sign * mean_diff > 0
    if p is None or p > threshold_p:
        verdict = WITHIN_NOISE
    elif better:
        verdict = MET
    else:
        verdict = MISSED
    return PairedVerdict(mean_diff, p, verdict, len(pairs), wins, losses)
