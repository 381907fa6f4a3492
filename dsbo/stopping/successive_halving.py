r"""Asynchronous successive halving (ASHA) and Hyperband, as Optuna's pruners run them.

**ASHA** (:class:`ASHARule`; Li et al. 2020, "A System for Massively Parallel Hyperparameter
Tuning", MLSys). With :math:`r` = ``min_resource``, :math:`\eta` = ``reduction_factor`` and
:math:`s` = ``min_early_stopping_rate``, rung :math:`k = 0, 1, \dots` sits at step

.. math:: r_k = r\,\eta^{\,s + k}.

A trial *reaches* rung :math:`k` with its first report at a step :math:`\ge r_k`, and its
rung value :math:`v_k` is that report's value. When a trial's latest report is the one that
reaches rung :math:`k`, the trial is judged there against every trial of the campaign, of any
status, that has reached rung :math:`k` (itself included, :math:`n` trials in all): it is
promoted (continues) when

.. math:: v_k \;\ge\; \text{the } m\text{-th largest of } \{v_k\},\qquad m = \max(1, \lfloor n/\eta \rfloor),

i.e. when it is in the top :math:`m` (a tie with the cutoff is promoted), and stopped
otherwise. With ``bootstrap_count`` :math:`b > 0`, a trial is stopped while :math:`n \le b`
(Optuna: "minimum number of trials that need to complete a rung before any trial is
considered for promotion"; Optuna cannot pause a trial, so the first :math:`b` arrivals are
stopped). A report that reaches several rungs at once is judged at each in turn, stopping at
the first it fails; a report that reaches no new rung continues. There is no maximum
resource: the rungs go on as long as the trial reports (the caller ends a trial at its
budget).

**Hyperband** (:class:`HyperbandRule`; Li et al. 2018, "Hyperband: A Novel Bandit-Based
Approach to Hyperparameter Optimization", JMLR 18(185)). With :math:`R` = ``max_resource``,
there are :math:`B = \lfloor \log_\eta (R / r) \rfloor + 1` brackets; bracket :math:`b` is an
ASHA with :math:`s = b`, and a trial competes only with the trials of its own bracket. Trials
are spread over the brackets in proportion to Hyperband's budgets
:math:`n_b = \lceil B\,\eta^{\,B-1-b} / (B - b) \rceil`: trial ``i`` goes to the bracket
:math:`b` where the cumulative budget first exceeds ``crc32(f"_{i}") mod sum(n_b)``
(:meth:`HyperbandRule.bracket_of`). That is Optuna's assignment (``crc32(f"{study_name}_
{trial.number}")``) for a study named ``""`` with trial numbers equal to the trial ids, so
it is deterministic and independent of any other trial.

Peer names (dsbo uses Optuna's):

=====================  ==============================  ==================  ===============
dsbo                   Ray Tune (``ASHAScheduler``)    W&B (hyperband)     Ax
=====================  ==============================  ==================  ===============
``min_resource``       ``grace_period``                ``min_iter``        --
``reduction_factor``   ``reduction_factor``            ``eta``             --
``max_resource``       ``max_t``                       ``max_iter``        --
bracket count          ``brackets``                    ``s``               --
=====================  ==============================  ==================  ===============

Ray's ASHA differs: its cutoff is numpy's ``nanpercentile`` at :math:`(1 - 1/\eta)\cdot 100`
of the values recorded at the rung *before* the trial (interpolated), it judges only the
highest rung a report reaches, stops every trial at ``max_t``, and assigns brackets at random
(softmax over their sizes). W&B's hyperband is :mod:`dsbo.runtime.hyperband`.

Deviations from Optuna (``SuccessiveHalvingPruner``, ``HyperbandPruner``, optuna 5.0), each on
purpose and tested in ``tests/stopping/test_successive_halving.py``:

- Optuna records a trial's rung value as a system attribute when it judges the trial there,
  and its competitors are the trials *judged* at that rung. dsbo is a pure function of the
  curves: the competitors are the trials whose curves *reached* the rung. The two agree when
  every report is judged, except for one case: a trial stopped on a report that jumped over
  several rungs, at one below the highest, is a competitor at the higher rungs in dsbo (its
  curve reached them), not in Optuna.
- Likewise a rung a trial passed on a report that was not judged is not judged later (Optuna
  would judge it, with the latest value, at the next report it judges).
- ``min_resource="auto"`` and ``max_resource="auto"`` (estimated by Optuna from the first
  completed trials, i.e. from history) are not offered: both are ints, validated up front.
- :math:`B` and :math:`n_b` are computed in exact integer arithmetic; Optuna's floating
  ``math.log`` gives one bracket fewer when :math:`R/r` is an exact power of :math:`\eta` that
  ``log`` rounds down (e.g. ``max_resource=243, reduction_factor=3``: dsbo 6 brackets, Optuna
  5; ``1000`` with ``10``: 4 vs 3).
- ``reduction_factor`` defaults to 3 for ASHA too (Optuna's ``SuccessiveHalvingPruner``: 4,
  its ``HyperbandPruner``: 3; Ray: 4).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from dsbo.errors import ConfigError
from dsbo.stopping.base import Decision, StoppingRule, TrialCurve, check_int, fmt, others_of
from dsbo.stopping.catalogue import register_stopping_rule


@register_stopping_rule("successive-halving", "another name of asha (Optuna's)")
@register_stopping_rule(
    "asha",
    "asynchronous successive halving: keep the top 1/reduction_factor at each rung "
    "(Li et al. 2020; Optuna SuccessiveHalvingPruner, Ray ASHAScheduler)",
)
class ASHARule(StoppingRule):
    r"""Asynchronous successive halving: at rung :math:`k` (step :math:`r\,\eta^{s+k}`) a trial
    continues only if it is in the top :math:`\max(1, \lfloor n/\eta \rfloor)` of the
    :math:`n` trials that have reached that rung.

    Li et al. 2020, "A System for Massively Parallel Hyperparameter Tuning" (MLSys). Optuna:
    ``SuccessiveHalvingPruner``; Ray Tune: ``ASHAScheduler`` / ``AsyncHyperBandScheduler``;
    W&B: none (its ``hyperband`` early termination is a synchronous cutoff, see
    :mod:`dsbo.runtime.hyperband`); Ax: none. The rule in full, and how it differs from
    Optuna's and Ray's, is in the module docstring.

    Args:
        min_resource: :math:`r`, the step of rung 0 when ``min_early_stopping_rate`` is 0.
        reduction_factor: :math:`\eta \ge 2`: about :math:`1/\eta` of the trials reaching a
            rung are promoted.
        min_early_stopping_rate: :math:`s \ge 0`: rung 0 sits at :math:`r\,\eta^s`.
        bootstrap_count: Stop trials at a rung while no more than this many (itself included)
            have reached it.

    :meth:`rungs` lists the rung steps up to ``max_steps`` (``[]`` without it: the ladder has
    no end).

    Example:
        >>> rule = ASHARule(min_resource=1, reduction_factor=3)
        >>> rule.rungs(30)
        [1, 3, 9, 27]
        >>> done = [TrialCurve(i, "completed", (1, 3), (0.1 * i, 0.1 * i)) for i in range(5)]
        >>> rule.decide(TrialCurve(9, "pending", (1, 2, 3), (0.9, 0.9, 0.25)), done).reason
        'asha: at rung 1 (step 3) 0.25 is outside the top 2 of 6 trials (cutoff 0.3)'
    """

    name = "asha"

    def __init__(
        self,
        *,
        min_resource: int = 1,
        reduction_factor: int = 3,
        min_early_stopping_rate: int = 0,
        bootstrap_count: int = 0,
    ) -> None:
        self.min_resource = check_int("min_resource", min_resource, 1)
        self.reduction_factor = check_int("reduction_factor", reduction_factor, 2)
        self.min_early_stopping_rate = check_int(
            "min_early_stopping_rate", min_early_stopping_rate, 0
        )
        self.bootstrap_count = check_int("bootstrap_count", bootstrap_count, 0)

    def options(self) -> dict[str, Any]:
        return {
            "min_resource": self.min_resource,
            "reduction_factor": self.reduction_factor,
            "min_early_stopping_rate": self.min_early_stopping_rate,
            "bootstrap_count": self.bootstrap_count,
        }

    def rung_step(self, rung: int) -> int:
        """The step of rung ``rung``: :math:`r\\,\\eta^{s + k}`."""
        return self.min_resource * self.reduction_factor ** (self.min_early_stopping_rate + rung)

    def _ladder(self, max_steps: int) -> Iterator[tuple[int, int]]:
        """``(rung, step)`` for every rung at a step ``<= max_steps``."""
        rung, step = 0, self.rung_step(0)
        while step <= max_steps:
            yield rung, step
            rung, step = rung + 1, step * self.reduction_factor

    def rungs(self, max_steps: int | None = None) -> list[int]:
        return [] if max_steps is None else [step for _, step in self._ladder(max_steps)]

    def new_rungs(self, trial: TrialCurve) -> list[tuple[int, int]]:
        """``(rung, step)`` of the rungs ``trial``'s latest report reaches (usually none or
        one; several when the report jumps over rungs)."""
        step = trial.last_step
        if step is None:
            return []
        previous = -1 if trial.previous_step is None else trial.previous_step
        return [(k, r) for k, r in self._ladder(step) if r > previous]

    def decide(self, trial: TrialCurve, others: Sequence[TrialCurve]) -> Decision:
        label = self.name
        reached = self.new_rungs(trial)
        if not reached:
            if trial.last_step is None:
                return Decision(False, f"{label}: the trial has reported nothing yet")
            rung = sum(1 for _ in self._ladder(trial.last_step))
            return Decision(
                False,
                f"{label}: step {trial.last_step} reaches no new rung (the next is rung {rung} at step {self.rung_step(rung)})",
            )
        value = trial.last_value
        assert value is not None
        rivals = others_of(trial, others)
        passed: list[str] = []
        for rung, step in reached:
            competing = [v for v in (o.value_reaching(step) for o in rivals) if v is not None]
            competing.append(value)
            n = len(competing)
            where = f"at rung {rung} (step {step})"
            if n <= self.bootstrap_count:
                return Decision(
                    True,
                    f"{label}: {where} only {n} trial(s) have reached the rung, not more than bootstrap_count={self.bootstrap_count}",
                    rung,
                )
            keep = max(1, n // self.reduction_factor)
            cutoff = sorted(competing, reverse=True)[keep - 1]
            if value < cutoff:
                return Decision(
                    True,
                    f"{label}: {where} {fmt(value)} is outside the top {keep} of {n} trials (cutoff {fmt(cutoff)})",
                    rung,
                )
            passed.append(
                f"{where} {fmt(value)} is in the top {keep} of {n} trials (cutoff {fmt(cutoff)})"
            )
        return Decision(False, f"{label}: " + "; ".join(passed) + ": promoted", reached[-1][0])


@register_stopping_rule(
    "hyperband",
    "asynchronous successive halving in brackets of staggered first rungs "
    "(Li et al. 2018; Optuna HyperbandPruner)",
)
class HyperbandRule(StoppingRule):
    r"""Hyperband over asynchronous successive halving: each trial is given one of
    :math:`B = \lfloor \log_\eta(R/r) \rfloor + 1` brackets by its id, and bracket :math:`b`
    is an :class:`ASHARule` with ``min_early_stopping_rate=b`` among that bracket's trials.

    Li et al. 2018, "Hyperband: A Novel Bandit-Based Approach to Hyperparameter
    Optimization" (JMLR 18(185)), run asynchronously as in Li et al. 2020 (MLSys). Optuna:
    ``HyperbandPruner``; Ray Tune: ``AsyncHyperBandScheduler(brackets=...)`` (random
    brackets) and ``HyperBandScheduler`` (synchronous); W&B: ``early_terminate: {type:
    hyperband}`` (a different, synchronous cutoff: :mod:`dsbo.runtime.hyperband`); Ax: none.
    The bracket assignment and the differences from Optuna are in the module docstring.

    Args:
        min_resource: :math:`r`: bracket :math:`b`'s rung 0 sits at :math:`r\,\eta^b`.
        max_resource: :math:`R \ge r`: sets the number of brackets (the rungs themselves go
            on past it, as in Optuna; the caller ends a trial at its budget).
        reduction_factor: :math:`\eta \ge 2`.
        bootstrap_count: As :class:`ASHARule`, in every bracket.

    :meth:`rungs` lists every rung step of any bracket (bracket 0's, the others' are a
    subset) up to ``max_steps``, by default up to ``max_resource``;
    :meth:`bracket_rungs` those of one bracket.

    Example:
        >>> rule = HyperbandRule(min_resource=1, max_resource=27, reduction_factor=3)
        >>> rule.n_brackets, rule.budgets, rule.rungs()
        (4, [27, 12, 6, 4], [1, 3, 9, 27])
        >>> rule.bracket_rungs(2)
        [9, 27]
    """

    name = "hyperband"

    def __init__(
        self,
        *,
        min_resource: int = 1,
        max_resource: int = 27,
        reduction_factor: int = 3,
        bootstrap_count: int = 0,
    ) -> None:
        self.min_resource = check_int("min_resource", min_resource, 1)
        self.max_resource = check_int("max_resource", max_resource, 1)
        if self.max_resource < self.min_resource:
            raise ConfigError(
                f"stopping.max_resource must be >= min_resource={self.min_resource}, got {self.max_resource}"
            )
        self.reduction_factor = check_int("reduction_factor", reduction_factor, 2)
        self.bootstrap_count = check_int("bootstrap_count", bootstrap_count, 0)
        # B = floor(log_eta(R / r)) + 1, exactly: the number of b >= 0 with r * eta**b <= R.
        n, step = 0, self.min_resource
        while step <= self.max_resource:
            n, step = n + 1, step * self.reduction_factor
        #: :math:`B`, the number of brackets.
        self.n_brackets = n
        #: Hyperband's budget :math:`n_b` of each bracket: the weights of the assignment.
        self.budgets = [-(-n * self.reduction_factor ** (n - 1 - b) // (n - b)) for b in range(n)]
        #: The ASHA rule of each bracket.
        self.brackets = [
            ASHARule(
                min_resource=self.min_resource,
                reduction_factor=self.reduction_factor,
                min_early_stopping_rate=b,
                bootstrap_count=self.bootstrap_count,
            )
            for b in range(n)
        ]

    def options(self) -> dict[str, Any]:
        return {
            "min_resource": self.min_resource,
            "max_resource": self.max_resource,
            "reduction_factor": self.reduction_factor,
            "bootstrap_count": self.bootstrap_count,
        }

    def bracket_of(self, trial_id: int) -> int:
        """The bracket of trial ``trial_id``: ``crc32(f"_{trial_id}") mod sum(budgets)`` placed
        on the cumulative budgets (Optuna's assignment for a study named ``""``)."""
        ticket = zlib.crc32(f"_{trial_id}".encode()) % sum(self.budgets)
        for bracket, budget in enumerate(self.budgets):
            ticket -= budget
            if ticket < 0:
                return bracket
        raise AssertionError("unreachable: the ticket is below the total budget")

    def rungs(self, max_steps: int | None = None) -> list[int]:
        return self.brackets[0].rungs(self.max_resource if max_steps is None else max_steps)

    def bracket_rungs(self, bracket: int, max_steps: int | None = None) -> list[int]:
        """The rung steps of bracket ``bracket`` up to ``max_steps`` (default ``max_resource``)."""
        return self.brackets[bracket].rungs(self.max_resource if max_steps is None else max_steps)

    def decide(self, trial: TrialCurve, others: Sequence[TrialCurve]) -> Decision:
        bracket = self.bracket_of(trial.trial_id)
        rivals = [o for o in others_of(trial, others) if self.bracket_of(o.trial_id) == bracket]
        decision = self.brackets[bracket].decide(trial, rivals)
        reason = decision.reason.removeprefix(f"{ASHARule.name}: ")
        return Decision(
            decision.stop,
            f"{self.name}: bracket {bracket} of {self.n_brackets}: {reason}",
            decision.rung,
        )
