r"""The median and percentile stopping rules (Optuna's ``MedianPruner`` and ``PercentilePruner``).

The rule, for a running trial whose latest report is at step :math:`t`, with :math:`C` the
completed trials of the campaign and :math:`y_c(t)` the value trial :math:`c` reported at
exactly step :math:`t`:

1. no decision while :math:`|C| = 0` or :math:`|C| <` ``n_startup_trials``;
2. none while :math:`t <` ``n_warmup_steps`` (:math:`w`);
3. only at the first report of each interval: the checkpoints are :math:`w + k\,i`
   (:math:`i` = ``interval_steps``, :math:`k \ge 0`); the trial is judged at step :math:`t`
   when its previous report came before the latest checkpoint :math:`\le t`,
   :math:`w + \lfloor (t - w) / i \rfloor\, i` (a checkpoint no report landed on is judged at
   the next report);
4. none while fewer than ``n_min_trials`` completed trials reported step :math:`t` exactly;
5. otherwise stop when

   .. math:: \max_{s \le t} y(s) \;<\; Q_{100 - p}\{\, y_c(t) : c \in C \,\}

   with :math:`Q_q` numpy's ``percentile`` (linear interpolation) and :math:`p` =
   ``percentile``: the trial's *best value so far* against the :math:`(100-p)`-th percentile
   of the completed trials' values *at that very step* (not their best so far). So
   ``percentile=25`` keeps a trial whose best is in the top 25% and stops one in the bottom
   75% (Optuna: "top of 25th percentile trials are kept"); a tie with the cutoff survives.
   The median rule is ``percentile=50``.

This is Optuna's definition, checked against ``optuna.pruners.PercentilePruner`` and
``MedianPruner`` (optuna 5.0) on random cases in ``tests/stopping/test_percentile.py``. The
values here are finite, so Optuna's NaN branches (prune a trial whose values are all NaN,
ignore NaN values of completed trials) never apply.

The median stopping rule comes from Golovin et al. 2017, "Google Vizier: A Service for
Black-Box Optimization" (KDD), which compares the trial's best value with the median of the
completed trials' *running averages* up to :math:`t`; Optuna (and dsbo) use their values at
:math:`t` instead. Ray Tune's ``MedianStoppingRule`` (``grace_period``,
``min_samples_required``, time-based) follows Vizier; W&B has no median rule; Ax's
``PercentileEarlyStoppingStrategy(percentile_threshold=q)`` stops the bottom ``q`` percent,
i.e. dsbo's ``percentile=100 - q``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dsbo.stopping.base import (
    Decision,
    StoppingRule,
    TrialCurve,
    check_int,
    check_real,
    fmt,
    others_of,
)
from dsbo.stopping.catalogue import register_stopping_rule


@register_stopping_rule(
    "percentile",
    "stop a trial whose best value is outside the top `percentile` % of the completed trials "
    "at its step (Optuna PercentilePruner)",
)
class PercentileRule(StoppingRule):
    r"""Stop a trial whose best value so far is below the :math:`(100-p)`-th percentile of the
    completed trials' values at the same step (keeps the top ``percentile`` percent).

    Optuna: ``PercentilePruner`` (same option names and defaults but ``percentile``, which
    Optuna requires). Ax: ``PercentileEarlyStoppingStrategy`` with ``percentile_threshold =
    100 - percentile``, ``min_progression ~ n_warmup_steps``, ``min_curves ~
    n_startup_trials``. The rule itself is in the module docstring.

    Args:
        percentile: :math:`p \in [0, 100]`: the top :math:`p` percent of trials are kept
            (``0`` keeps only a trial at least as good as every completed one, ``100`` stops
            only a trial below all of them).
        n_startup_trials: No decision until this many trials have completed.
        n_warmup_steps: No decision at a step below this; the first checkpoint.
        interval_steps: Steps between checkpoints (>= 1).
        n_min_trials: No decision at a step fewer completed trials reported.

    :meth:`rungs` lists the checkpoints :math:`w + k\,i \le` ``max_steps`` (``[]`` without
    ``max_steps``: the rule then judges at any reported step that opens an interval).

    Example:
        >>> done = [TrialCurve(i, "completed", (0, 1), (0.0, float(i))) for i in range(5)]
        >>> rule = PercentileRule(25.0)
        >>> rule.decide(TrialCurve(9, "pending", (0, 1), (0.0, 2.5)), done).stop
        True
        >>> rule.decide(TrialCurve(9, "pending", (0, 1), (0.0, 3.0)), done).stop
        False
    """

    name = "percentile"

    def __init__(
        self,
        percentile: float = 25.0,
        *,
        n_startup_trials: int = 5,
        n_warmup_steps: int = 0,
        interval_steps: int = 1,
        n_min_trials: int = 1,
    ) -> None:
        self.percentile = check_real("percentile", percentile, 0.0, 100.0)
        self.n_startup_trials = check_int("n_startup_trials", n_startup_trials, 0)
        self.n_warmup_steps = check_int("n_warmup_steps", n_warmup_steps, 0)
        self.interval_steps = check_int("interval_steps", interval_steps, 1)
        self.n_min_trials = check_int("n_min_trials", n_min_trials, 1)

    def options(self) -> dict[str, Any]:
        return {
            "percentile": self.percentile,
            "n_startup_trials": self.n_startup_trials,
            "n_warmup_steps": self.n_warmup_steps,
            "interval_steps": self.interval_steps,
            "n_min_trials": self.n_min_trials,
        }

    def rungs(self, max_steps: int | None = None) -> list[int]:
        if max_steps is None:
            return []
        return list(range(self.n_warmup_steps, max_steps + 1, self.interval_steps))

    def checkpoint(self, step: int) -> int:
        """The latest checkpoint ``<= step`` (``step >= n_warmup_steps``)."""
        w, i = self.n_warmup_steps, self.interval_steps
        return w + (step - w) // i * i

    def _cutoff_name(self) -> str:
        return (
            f"the {100.0 - self.percentile:g}th percentile (keeping the top {self.percentile:g}%)"
        )

    def decide(self, trial: TrialCurve, others: Sequence[TrialCurve]) -> Decision:
        label = self.name
        completed = [o for o in others_of(trial, others) if o.status == "completed"]
        n = len(completed)
        if n == 0:
            return Decision(False, f"{label}: no trial has completed yet")
        if n < self.n_startup_trials:
            return Decision(
                False,
                f"{label}: {n} completed trial(s), fewer than n_startup_trials={self.n_startup_trials}",
            )
        step = trial.last_step
        if step is None:
            return Decision(False, f"{label}: the trial has reported nothing yet")
        if step < self.n_warmup_steps:
            return Decision(
                False,
                f"{label}: step {step} is before the warmup (n_warmup_steps={self.n_warmup_steps})",
            )
        checkpoint = self.checkpoint(step)
        previous = trial.previous_step
        if previous is not None and previous >= checkpoint:
            return Decision(
                False,
                f"{label}: step {step} is not the first report since checkpoint {checkpoint} (interval_steps={self.interval_steps})",
            )
        at_step = [v for v in (c.value_at(step) for c in completed) if v is not None]
        if len(at_step) < self.n_min_trials:
            return Decision(
                False,
                f"{label}: {len(at_step)} completed trial(s) reported step {step}, fewer than n_min_trials={self.n_min_trials}",
            )
        cutoff = float(np.percentile(np.asarray(at_step, dtype=float), 100.0 - self.percentile))
        best = trial.best()
        assert best is not None
        stop = best < cutoff
        verdict = "is worse than" if stop else "is not worse than"
        return Decision(
            stop,
            f"{label}: at step {step} the best value so far {fmt(best)} {verdict} {self._cutoff_name()} "
            f"{fmt(cutoff)} of {len(at_step)} completed trial(s) at that step",
        )


@register_stopping_rule(
    "median",
    "stop a trial whose best value is below the median of the completed trials at its step "
    "(Vizier; Optuna MedianPruner)",
)
class MedianRule(PercentileRule):
    r"""The median stopping rule: stop a trial whose best value so far is below the median of
    the completed trials' values at the same step (:class:`PercentileRule` with
    ``percentile=50``).

    Golovin et al. 2017, "Google Vizier: A Service for Black-Box Optimization" (KDD), with
    Optuna's reading (values at the step, not running averages; see the module docstring).
    Optuna: ``MedianPruner`` (same options and defaults); Ray Tune: ``MedianStoppingRule``
    (``grace_period`` ~ ``n_warmup_steps``, ``min_samples_required`` ~ ``n_startup_trials``).

    Example:
        >>> done = [TrialCurve(i, "completed", (0,), (float(i),)) for i in range(5)]
        >>> MedianRule().decide(TrialCurve(9, "pending", (0,), (1.5,)), done).reason
        'median: at step 0 the best value so far 1.5 is worse than the median 2 of 5 completed trial(s) at that step'
    """

    name = "median"

    def __init__(
        self,
        *,
        n_startup_trials: int = 5,
        n_warmup_steps: int = 0,
        interval_steps: int = 1,
        n_min_trials: int = 1,
    ) -> None:
        super().__init__(
            50.0,
            n_startup_trials=n_startup_trials,
            n_warmup_steps=n_warmup_steps,
            interval_steps=interval_steps,
            n_min_trials=n_min_trials,
        )

    def options(self) -> dict[str, Any]:
        options = super().options()
        del options["percentile"]
        return options

    def _cutoff_name(self) -> str:
        return "the median"
