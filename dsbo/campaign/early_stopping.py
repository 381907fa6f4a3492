"""Early stopping inside a campaign: trials that report intermediate values, and a rule that
stops the bad ones (issue 42).

A trial being evaluated is a :class:`RunningTrial`: it reports ``(step, value)`` pairs
(:meth:`RunningTrial.report`, the value in the user's direction, e.g. a validation loss the
search minimizes) and asks whether to go on (:meth:`RunningTrial.should_stop`, Optuna's
``should_prune``). Every report is committed to the store at once
(:meth:`~dsbo.storage.base.Store.report`), and every decision is taken by the campaign's
stopping rule (:mod:`dsbo.stopping`) from the curves the store holds, never from memory:
workers sharing a PostgreSQL store decide from each other's curves without any barrier, and a
resumed campaign decides as the uninterrupted one would. A trial told to stop is recorded as
``stopped`` at once, with its last value and the rule's reason; the evaluation then returns
(its return value is ignored) or raises :class:`~dsbo.errors.TrialStoppedError` by reporting
again, which also ends it as stopped.

**Steps and the budget in steps.** A step counts the units trained so far (epochs: the first
epoch is step 1). With ``budget_steps`` the campaign's budget is counted in steps
(:mod:`dsbo.campaign.ledger`, cost source ``"steps"``): a new trial reserves ``max_steps`` (or
what is left, if less) when it is proposed, and is charged the last step it reported when it
ends (a completed trial that reported nothing keeps its reservation), so a stopped trial costs
what it used. A trial whose reservation is smaller than ``max_steps`` is stopped when it
reaches it (the budget ran out).

**Retries.** A trial that a crash left pending is evaluated again (``on_pending="retry"``):
its curve so far is kept, and reports of steps it already holds are replays, ignored, so no
reported value is lost and no step is charged twice; :attr:`RunningTrial.last_step` tells an
evaluation that keeps checkpoints where to resume. Within one evaluation steps must increase
(:class:`~dsbo.errors.ReportError` otherwise, a failed trial), and values must be finite.

Example:
    >>> def train(params, trial):
    ...     for epoch in range(1, 28):
    ...         loss = fit_one_epoch(params)
    ...         trial.report(epoch, loss)
    ...         if trial.should_stop():
    ...             break
    ...     return loss
    >>> dsbo.minimize(train, space, early_stopping="asha", max_steps=27, budget_steps=540)
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsbo.campaign.freeze_thaw import FREEZE_THAW, FreezeThawSettings
from dsbo.errors import ConfigError, ReportError, TrialStoppedError
from dsbo.space.outcomes import to_number
from dsbo.stopping import Decision, StoppingRule, TrialCurve, make_rule
from dsbo.stopping.base import user_direction
from dsbo.storage.curves import as_step
from dsbo.storage.segments import segment_of

if TYPE_CHECKING:
    from torch import Tensor

    from dsbo.campaign.campaign import Campaign
    from dsbo.storage import Store, Trial

#: What a campaign with early stopping fits its surrogate on (:meth:`EarlyStopping.training_data`).
MODELS = ("final", "last", "bohb", "fidelity")
#: The model a rule is given when its spec names none (chosen by measurement: see
#: :data:`RECOMMENDED`).
DEFAULT_MODEL = "last"
#: ``early_stopping=True``: the one recommended setting. ASHA (Li et al., MLSys 2020) stops a
#: trial at a rung when it is not in the top third there; the surrogate is fitted on every
#: ended trial at its last reported value (``model: "last"``), so that proposals learn where
#: the rule stopped. On curves that never cross (3 parameters, 27 epochs, 270-epoch budget,
#: seed 0) the models reached a final loss gap of 0.0021 (``"final"``: a stopped trial is only
#: a pending point, 2 trials completed), 0.00024 (``"last"``, 173 s) and 0.00010 (``"bohb"``,
#: 430 s): ``"last"`` and ``"bohb"`` learn from stopped trials, ``"final"`` cannot.
RECOMMENDED: dict[str, Any] = {"name": "asha", "model": DEFAULT_MODEL}


@dataclass
class EarlyStopping:
    """A campaign's early-stopping settings (the :class:`~dsbo.campaign.Campaign` arguments
    ``early_stopping``, ``max_steps`` and ``budget_steps``).

    Attributes:
        rule: The stopping rule (:func:`dsbo.stopping.make_rule`); ``None`` records curves
            without stopping anything.
        max_steps: The length of a full trial in steps (what a trial reserves of a budget in
            steps; Hyperband's ``max_resource`` when its options leave it out).
        model: (default :data:`DEFAULT_MODEL`, chosen by measurement: :data:`RECOMMENDED`)
            ``"final"``: the surrogate is fitted on the finished (completed) trials (on
            the rungs, as ``"bohb"``, until two trials are fully trained, rather than propose
            at random); a stopped trial is then a pending point of the acquisition (its final
            value unknown, :mod:`dsbo.campaign.proposals`);
            ``"last"``: on every ended trial at the last value it reported (a completed
            trial: its outcome; a stopped one: its value where the rule stopped it, a
            pessimistic stand-in for a loss that would still have fallen), so that proposals
            avoid the regions the rule stopped;
            ``"bohb"``: on every trial's value at the highest rung that at least
            ``min_points`` trials reached (BOHB, Falkner et al. 2018), so that proposals learn
            from stopped trials too; ``"fidelity"``: on the curves (at the rungs), the step as an
            input of BoTorch's multi-fidelity GP read at full training
            (:mod:`dsbo.surrogates.fidelity`; the campaign's surrogate setting is not used).
        min_points: BOHB's ``N_min``, the trials a rung needs before the model is fitted on it
            (``None``: the number of model inputs + 2, as BOHB's ``d + 1`` plus one).
        levels: BOHB's levels when no rule gives them (a W&B sweep's hyperband brackets,
            whose runs a monitor outside the campaign stops).
    """

    rule: StoppingRule | None
    max_steps: int | None = None
    model: str = DEFAULT_MODEL
    min_points: int | None = None
    levels: tuple[int, ...] | None = None
    #: Freeze-thaw's options (:mod:`dsbo.campaign.freeze_thaw`): trials are paused and thawed, not stopped.
    freeze_thaw: FreezeThawSettings | None = None
    #: The curves of ended trials by id (they cannot change: a decision reads only the others').
    _ended: dict[int, TrialCurve] = field(default_factory=dict, repr=False, compare=False)

    def rungs(self) -> list[int]:
        """The steps of BOHB's levels below full training: ``levels`` if given (e.g. a W&B
        sweep's hyperband brackets), else the rule's rungs (below ``max_steps``)."""
        rungs = self.levels if self.levels is not None else [] if self.rule is None else self.rule.rungs(self.max_steps)
        return sorted({r for r in rungs if self.max_steps is None or r < self.max_steps})

    @classmethod
    def build(cls, spec: Any, max_steps: Any = None, budget_steps: Any = None) -> EarlyStopping | None:
        """The settings from a campaign's arguments; ``None`` when nothing asks for them.

        ``spec`` is a rule (name, ``{"name": ..., **options}`` or a rule object), ``None``, or
        a mapping with ``rule``, ``model`` and ``min_points`` keys besides the rule's own.

        Raises:
            ConfigError: naming the first setting at fault.
        """
        if isinstance(spec, EarlyStopping):
            return spec
        if spec is True:  # the recommended setting
            spec = dict(RECOMMENDED)
        elif spec is False:
            spec = None
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
            raise ConfigError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        if budget_steps is not None and max_steps is None:
            raise ConfigError("budget_steps needs max_steps, the steps of a full trial (e.g. max_steps=27 epochs)")
        if spec is None and max_steps is None:
            return None
        if spec == FREEZE_THAW or (isinstance(spec, Mapping) and FREEZE_THAW in (spec.get("name"), spec.get("rule"))):
            options = {k: v for k, v in dict(spec if isinstance(spec, Mapping) else {}).items() if k not in ("name", "rule")}
            return cls(None, max_steps, freeze_thaw=FreezeThawSettings.build(options, max_steps, budget_steps))
        model, min_points = DEFAULT_MODEL, None
        if isinstance(spec, Mapping):
            spec = dict(spec)
            model = spec.pop("model", DEFAULT_MODEL)
            min_points = spec.pop("min_points", None)
            if "rule" in spec:
                spec = spec.pop("rule") if not spec.keys() - {"rule"} else {"name": spec.pop("rule"), **spec}
        if model not in MODELS:
            raise ConfigError(f"early_stopping model={model!r}: choose one of {', '.join(MODELS)}")
        if min_points is not None and (isinstance(min_points, bool) or not isinstance(min_points, int) or min_points < 2):
            raise ConfigError(f"early_stopping min_points must be an integer >= 2, got {min_points!r}")
        return cls(_rule(spec, max_steps), max_steps, model, min_points)

    @staticmethod
    def check_policy(policy: Any, settings: EarlyStopping | None) -> None:
        """``mf-kg`` proposes from the fidelity surrogate only (a ConfigError otherwise)."""
        if getattr(policy, "name", None) == "mf-kg" and (settings is None or settings.model != "fidelity"):
            raise ConfigError("acquisition 'mf-kg' needs early_stopping with model: fidelity (and max_steps)")

    def load_ended(self, store: Store) -> None:
        """Read the curves of the trials that have ended into the cache that :meth:`decide`
        keeps (a campaign does it when it opens its store: a worker joining a store that holds
        hundreds of curves reads them once then, not in its first decision)."""
        if self.rule is not None:
            self._read_curves(store, store.statuses())

    def _read_curves(self, store: Store, statuses: Mapping[int, str]) -> dict[int, TrialCurve]:
        """The curves not in the cache, by id, read from ``store``; ended ones join the cache.
        An ended trial's curve is read once (its status is checked: an abandoned trial told late
        becomes completed); running trials' curves are read at every decision."""
        fresh = [i for i, s in statuses.items() if i not in self._ended or self._ended[i].status != s]
        curves = store.curves(fresh)
        built = {}
        for i in fresh:
            built[i] = curve_of(i, statuses[i], curves.get(i, []))
            if statuses[i] != "pending":
                self._ended[i] = built[i]
        return built

    def decide(self, store: Store, trial_id: int, sign: float = 1.0) -> Decision:
        """The rule's decision for running trial ``trial_id`` from the curves in ``store``
        (its reason written with values in the user's direction: ``sign`` times stored)."""
        if self.rule is None:
            return Decision(False, "no stopping rule")
        statuses = store.statuses()
        built = self._read_curves(store, statuses)
        trial = built.get(trial_id) or curve_of(trial_id, "pending", [])
        if trial.last_step is None:
            return Decision(False, "nothing reported yet")
        others = [built.get(i) or self._ended[i] for i in statuses if i != trial_id]
        with user_direction(sign):
            return self.rule.decide(trial, others)


def training_data(store: Store, settings: EarlyStopping | None, dim: int) -> tuple[Tensor, Tensor]:
    """What the surrogate is fitted on: the completed trials' ``(X, Y)``; with ``model: "last"``
    those and each stopped trial at its last reported value; with ``model: "fidelity"`` (whose
    history this is) each completed or stopped trial at its last point; with ``model: "bohb"``
    every trial's value at the highest level that ``min_points`` trials reached
    (BOHB, Falkner et al. 2018, sec. 4.1: the model of the largest budget with enough
    observations). The levels are the rule's rungs below ``max_steps`` (or the given
    ``levels``), then full training: a trial's value at a rung is its first report at or after
    the rung's step (running and stopped trials included); at full training, the completed
    trials' outcomes. Before any level has ``min_points`` trials, the level with the most
    (the lower one on a tie); without any curve, the completed trials. Problems with several
    outcomes keep the completed trials (a curve holds the objective only)."""
    X, Y = store.completed_data()
    if settings is not None and settings.model == "final" and X.shape[0] < 2 and settings.rule is not None:
        settings = dataclasses.replace(settings, model="bohb")  # until 2 trials are fully trained
    if settings is not None and settings.model == "last" and not (Y.numel() and Y.shape[1] != 1):
        import torch

        stopped = [(t.x, v) for t, _, v in _last_points(store, settings, ("stopped",))]
        if stopped:
            X = torch.cat([X.reshape(-1, dim), torch.tensor([x for x, _ in stopped], dtype=torch.double)])
            Y = torch.cat([Y.reshape(-1, 1), torch.tensor([[v] for _, v in stopped], dtype=torch.double)])
        return X, Y
    if settings is not None and settings.model == "fidelity" and not (Y.numel() and Y.shape[1] != 1):
        import torch

        latest = [(t.x, v) for t, _, v in _last_points(store, settings, ("completed", "stopped"))]
        if latest:
            return (torch.tensor([x for x, _ in latest], dtype=torch.double),
                    torch.tensor([[v] for _, v in latest], dtype=torch.double))  # fmt: skip
        return X, Y
    rungs = settings.rungs() if settings is not None and settings.model == "bohb" else []
    if not rungs or (Y.numel() and Y.shape[1] != 1):
        return X, Y
    import torch

    curves = store.curves()
    if not curves:
        return X, Y
    levels: list[list[tuple[list[float], float]]] = [[] for _ in rungs]
    for trial in store.trials(("pending", "completed", "stopped")):
        curve = curves.get(trial.id, [])
        for k, rung in enumerate(rungs):
            reached = [value for step, value in curve if step >= rung]
            if reached:
                levels[k].append((trial.x, reached[0]))
    levels.append([(x, y[0]) for x, y in zip(X.tolist(), Y.tolist(), strict=True)])  # full training
    need = settings.min_points or dim + 2
    enough = [k for k, points in enumerate(levels) if len(points) >= need]
    chosen = levels[enough[-1] if enough else max(range(len(levels)), key=lambda k: (len(levels[k]), -k))]
    if not chosen:
        return X, Y
    return (torch.tensor([x for x, _ in chosen], dtype=torch.double),
            torch.tensor([[v] for _, v in chosen], dtype=torch.double))  # fmt: skip


def plan_steps(metadata: list[dict[str, Any]], settings: EarlyStopping | None) -> list[dict[str, Any]]:
    """Each multi-fidelity proposal's planned steps, ``ceil(fidelity * max_steps)``
    (metadata ``planned_steps``; :mod:`dsbo.acquisition.multi_fidelity`)."""
    if settings is None or settings.max_steps is None:
        return metadata
    return [dict(m, planned_steps=max(1, math.ceil(m["fidelity"] * settings.max_steps - 1e-9)))
            if "fidelity" in m else m for m in metadata]  # fmt: skip


def _last_points(store: Store, settings: EarlyStopping, statuses: tuple[str, ...]) -> list[tuple[Trial, int, float]]:
    """Each trial's last point ``(trial, step, value)``: its last report, or for a completed
    trial that reported nothing its outcome at ``max_steps``."""
    curves, out = store.curves(), []
    for trial in store.trials(statuses):
        curve = curves.get(trial.id)
        if curve:
            out.append((trial, curve[-1][0], curve[-1][1]))
        elif trial.status == "completed" and trial.y is not None and settings.max_steps is not None:
            out.append((trial, settings.max_steps, trial.y[0]))
    return out


def fit_fidelity_model(store: Store, settings: EarlyStopping, bounds: Tensor) -> Any:
    """``model: "fidelity"``'s surrogate: the multi-fidelity GP on the curves (running trials'
    too) and on the completed trials that reported nothing (at ``max_steps``), read at full
    training (:func:`dsbo.surrogates.fidelity.fit_fidelity_gp`). Of each curve it takes the
    points at the rule's rungs and the last one (every point without rungs): the exact GP is
    cubic in its points, and a curve's steps between two rungs add little (with ASHA's rungs
    1, 3, 9 of 27 epochs, at most 4 points a trial instead of 27)."""
    import torch

    from dsbo.surrogates.fidelity import fit_fidelity_gp

    if settings.max_steps is None:
        raise ConfigError("early_stopping model 'fidelity' needs max_steps, the steps of a full trial")
    curves, rungs = store.curves(), set(settings.rungs())
    rows: list[tuple[list[float], int, float]] = []
    for trial in store.trials(("pending", "completed", "stopped")):
        curve = [(step, value) for step, value in curves.get(trial.id, []) if step <= settings.max_steps]
        if curve:
            rows += [(trial.x, step, value) for k, (step, value) in enumerate(curve)
                     if not rungs or step in rungs or k == len(curve) - 1]  # fmt: skip
        elif trial.status == "completed" and trial.y is not None:
            rows.append((trial.x, settings.max_steps, trial.y[0]))
    X = torch.tensor([x for x, _, _ in rows], dtype=torch.double)
    steps = torch.tensor([step for _, step, _ in rows], dtype=torch.double)
    Y = torch.tensor([[value] for _, _, value in rows], dtype=torch.double)
    return fit_fidelity_gp(X, steps, Y, bounds, settings.max_steps)


def curve_of(trial_id: int, status: str, points: list[tuple[int, float]]) -> TrialCurve:
    """A stored curve as a stopping rule reads it (the store checked its points when they
    were reported: ints, finite floats, increasing steps)."""
    return TrialCurve.checked(trial_id, status, tuple(s for s, _ in points), tuple(v for _, v in points))


def _rule(spec: Any, max_steps: int | None) -> StoppingRule | None:
    """The rule ``spec`` names; Hyperband's ``max_resource`` defaults to ``max_steps``."""
    if isinstance(spec, str):
        spec = {"name": spec}
    if isinstance(spec, Mapping) and spec.get("name") == "hyperband" and "max_resource" not in spec:
        if max_steps is None:
            raise ConfigError("the hyperband rule needs max_steps (its max_resource): the steps of a full trial")
        spec = {**spec, "max_resource": max_steps}
    try:
        return make_rule(spec)
    except ConfigError as exc:  # the rule's options are the campaign's early_stopping.<option>
        raise ConfigError(str(exc).replace("stopping.", "early_stopping.")) from None


class RunningTrial:
    """A trial while it is evaluated: what an evaluation reports to, and asks whether to stop
    (module docstring). Made by :meth:`Campaign.running <dsbo.campaign.Campaign.running>`.

    Attributes:
        id: The trial's id in the store.
        params: Its named parameter values.
        stopped: Whether it was stopped (then ``reason`` says why).
    """

    def __init__(self, campaign: Campaign, trial: Trial) -> None:
        self.id = trial.id
        self.params = campaign.problem.params(trial.x)
        self._campaign = campaign
        self._started = time.perf_counter()
        curve = campaign.store.curves([trial.id]).get(trial.id, [])
        #: The last step stored before this evaluation began (a retry's replays up to it are ignored).
        self.resumed_from: int | None = curve[-1][0] if curve else None
        self._last: tuple[int, float] | None = curve[-1] if curve else None
        #: The step of the report before the last one (0 before two reports): the interval.
        self._previous: int = curve[-2][0] if len(curve) > 1 else 0
        #: The freeze-thaw segment this evaluation runs (the trial's ``thaws`` when handed out).
        self.segment = segment_of(trial.metadata)
        self.stopped = trial.status in ("stopped", "paused")
        #: Whether it was paused (freeze-thaw: thawed later, it is evaluated again).
        self.paused = trial.status == "paused"
        self.reason: str | None = trial.error if self.stopped else None
        #: The last decision :meth:`should_stop` took (``None`` before any).
        self.decision: Decision | None = None
        self._max_steps = None if campaign.early_stopping is None else campaign.early_stopping.max_steps

    @property
    def user_attrs(self) -> dict[str, Any]:
        """What the evaluation kept with the trial (:meth:`set_user_attr`), read from the store."""
        return dict(self._campaign.store.get(self.id).metadata.get("user_attrs", {}))

    def set_user_attr(self, key: str, value: Any) -> None:
        """Keep a JSON value with the trial (metadata ``user_attrs``, Optuna's name; committed at
        once), e.g. where its checkpoints are, so that a thaw or a retry resumes from them.

        Raises:
            ReportError: for a key that is not a string or a value JSON cannot write.
        """
        import json

        if not isinstance(key, str) or not key:
            raise ReportError(f"trial {self.id}: a user attribute's key must be a non-empty string, got {key!r}")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ReportError(f"trial {self.id}: user attribute {key!r} must be JSON ({exc})") from None
        self._campaign.store.update_metadata(self.id, user_attrs={**self.user_attrs, key: value})

    @property
    def last_step(self) -> int | None:
        """The last step reported (in this evaluation or before a retry), ``None`` before any."""
        return None if self._last is None else self._last[0]

    @property
    def reserved_steps(self) -> int | None:
        """The steps this trial may train in all under a budget in steps (its reservation,
        read from the store; ``None`` without such a budget). A trial never trains past it:
        :meth:`should_stop` says stop when the next report would (:meth:`report_interval`)."""
        reserved = self._campaign.ledger.reserved_steps(self._campaign.store.get(self.id))
        return None if reserved is None else int(math.floor(reserved + 1e-9))

    def report_interval(self) -> int:
        """Steps between this trial's last two reports (its first report counted from step 0):
        where the next report is expected, for a function that validates every ``k`` epochs
        or a Trainer that reports its ``global_step``."""
        return 0 if self._last is None else self._last[0] - self._previous

    def report(self, step: int, value: Any) -> None:
        """Record the objective's ``value`` (the user's direction) at ``step``; committed at once.

        Raises:
            TrialStoppedError: if the trial was stopped.
            ReportError: for a step that does not come after the last one, or a value that is
                not a finite number (inside an evaluation: a failed trial, with the message).
            OutcomeError: for a value that is not a number.
        """
        if self.stopped:
            raise TrialStoppedError(f"trial {self.id} was stopped ({self.reason}); it takes no more values")
        step = as_step(step, self.id)
        objective = self._campaign.problem.outcomes.objectives[0]
        number = to_number(value, objective.name)
        if self.resumed_from is not None and step <= self.resumed_from:
            return  # a replay after a retry: the stored value stays
        if self._max_steps is not None and step > self._max_steps:
            raise ReportError(f"trial {self.id}: step {step} is past max_steps={self._max_steps}, a full trial")
        stored = objective.sign * number + 0.0 if math.isfinite(number) else number
        self._campaign.store.report(self.id, step, stored, segment=self.segment)
        self._previous = self._last[0] if self._last is not None else 0
        self._last = (step, stored)

    def should_stop(self) -> bool:
        """Whether the trial should stop now: the rule's decision from the stored curves, or a
        budget in steps that this trial's reservation ends. A ``True`` is recorded at once
        (status ``stopped``) and stays ``True``."""
        if self.stopped:
            return True
        campaign = self._campaign
        settings = campaign.early_stopping
        if settings is None or self._last is None:
            return False
        if settings.max_steps is not None and self._last[0] >= settings.max_steps:
            self.decision = Decision(False, f"fully trained: step {self._last[0]} is max_steps")
            return False
        trial = campaign.store.get(self.id)
        reserved, planned = campaign.ledger.reserved_steps(trial), trial.metadata.get("planned_steps")
        full, until = settings.max_steps, trial.metadata.get("until_step")
        if settings.freeze_thaw is not None:  # a segment ends where it was given steps to (its reservation)
            if until is None or self._last[0] < until:
                self.decision = Decision(False, f"freeze-thaw: given steps to {until}")
                return False
            self.decision = Decision(True, f"freeze-thaw: paused at step {self._last[0]} (it was given steps to {until})")
            self._stop(self.decision.reason, paused=True)
            return True
        if planned is not None and full is not None and self._last[0] >= planned and planned < full:
            decision = Decision(True, f"multi-fidelity: the proposal planned {planned} of {full} steps")
        elif reserved is not None and full is not None and reserved < full and self._last[0] + self.report_interval() > reserved:
            decision = Decision(True, f"the step budget is spent: this trial had {reserved:g} of its {full} steps")
        else:
            decision = settings.decide(campaign.store, self.id, campaign.problem.outcomes.objectives[0].sign)
        self.decision = decision
        if decision.stop:
            self._stop(decision.reason)
        return decision.stop

    def _stop(self, reason: str, paused: bool = False) -> None:
        campaign = self._campaign
        single = not campaign.problem.is_multi_objective and not campaign.problem.outcomes.constraints
        y = [self._last[1]] if single and self._last is not None else None
        seconds, cost = time.perf_counter() - self._started, campaign.ledger.settle(None, steps=self.last_step or 0)
        if paused:
            campaign.store.pause(self.id, y, eval_time=seconds, cost=cost, reason=reason, segment=self.segment)
        else:
            campaign.store.stop(
                self.id, y, eval_time=seconds, budget=campaign.budget, cost=cost, reason=reason, segment=self.segment
            )
        self.stopped, self.paused, self.reason = True, paused, reason

    def pause_at_last_report(self) -> None:
        """Pause the trial at its last report: a freeze-thaw evaluation that returned before
        ``max_steps`` ended its segment (:meth:`Campaign.tell <dsbo.campaign.Campaign.tell>`)."""
        self._stop(f"freeze-thaw: paused at step {self.last_step} (the evaluation returned)", paused=True)


def takes_trial(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is called with the running trial as its second argument
    (``f(params, trial)`` / ``f(x, trial)``): it says so (``takes_trial = True``), or it has a
    second positional parameter without a default."""
    flag = getattr(function, "takes_trial", None)
    if isinstance(flag, bool):
        return flag
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].default is inspect.Parameter.empty


class TrialEvaluator:
    """``x -> outcomes`` for one trial: the campaign's evaluator called as ``evaluator(x,
    running_trial)``. A stopped trial's evaluation that raises :class:`TrialStoppedError`
    returns ``None`` instead (its outcome was recorded when it was stopped)."""

    def __init__(self, evaluator: Callable[[Any, RunningTrial], Any], trial: RunningTrial) -> None:
        self.evaluator, self.trial = evaluator, trial

    def __call__(self, x: Any) -> Any:
        try:
            return self.evaluator(x, self.trial)
        except TrialStoppedError:
            if self.trial.stopped:
                return None
            raise


__all__ = [
    "MODELS", "EarlyStopping", "RunningTrial", "TrialEvaluator", "curve_of", "fit_fidelity_model", "plan_steps", "takes_trial",
    "training_data",
]
