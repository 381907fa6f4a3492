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
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsbo.campaign.freeze_thaw import FREEZE_THAW, FreezeThawSettings
from dsbo.campaign.running_trial import RunningTrial, TrialEvaluator, takes_trial
from dsbo.errors import ConfigError
from dsbo.stopping import Decision, StoppingRule, TrialCurve, make_rule
from dsbo.stopping.base import user_direction

if TYPE_CHECKING:
    from torch import Tensor

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
        rungs = (
            self.levels
            if self.levels is not None
            else []
            if self.rule is None
            else self.rule.rungs(self.max_steps)
        )
        return sorted({r for r in rungs if self.max_steps is None or r < self.max_steps})

    @classmethod
    def build(
        cls, spec: Any, max_steps: Any = None, budget_steps: Any = None
    ) -> EarlyStopping | None:
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
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
        ):
            raise ConfigError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        if budget_steps is not None and max_steps is None:
            raise ConfigError(
                "budget_steps needs max_steps, the steps of a full trial (e.g. max_steps=27 epochs)"
            )
        if spec is None and max_steps is None:
            return None
        if spec == FREEZE_THAW or (
            isinstance(spec, Mapping) and FREEZE_THAW in (spec.get("name"), spec.get("rule"))
        ):
            options = {
                k: v
                for k, v in dict(spec if isinstance(spec, Mapping) else {}).items()
                if k not in ("name", "rule")
            }
            return cls(
                None,
                max_steps,
                freeze_thaw=FreezeThawSettings.build(options, max_steps, budget_steps),
            )
        model, min_points = DEFAULT_MODEL, None
        if isinstance(spec, Mapping):
            spec = dict(spec)
            model = spec.pop("model", DEFAULT_MODEL)
            min_points = spec.pop("min_points", None)
            if "rule" in spec:
                spec = (
                    spec.pop("rule")
                    if not spec.keys() - {"rule"}
                    else {"name": spec.pop("rule"), **spec}
                )
        if model not in MODELS:
            raise ConfigError(f"early_stopping model={model!r}: choose one of {', '.join(MODELS)}")
        if min_points is not None and (
            isinstance(min_points, bool) or not isinstance(min_points, int) or min_points < 2
        ):
            raise ConfigError(
                f"early_stopping min_points must be an integer >= 2, got {min_points!r}"
            )
        return cls(_rule(spec, max_steps), max_steps, model, min_points)

    @staticmethod
    def check_policy(policy: Any, settings: EarlyStopping | None) -> None:
        """``mf-kg`` proposes from the fidelity surrogate only (a ConfigError otherwise)."""
        if getattr(policy, "name", None) == "mf-kg" and (
            settings is None or settings.model != "fidelity"
        ):
            raise ConfigError(
                "acquisition 'mf-kg' needs early_stopping with model: fidelity (and max_steps)"
            )

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
        fresh = [
            i for i, s in statuses.items() if i not in self._ended or self._ended[i].status != s
        ]
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
    if (
        settings is not None
        and settings.model == "final"
        and X.shape[0] < 2
        and settings.rule is not None
    ):
        settings = dataclasses.replace(settings, model="bohb")  # until 2 trials are fully trained
    if settings is not None and settings.model == "last" and not (Y.numel() and Y.shape[1] != 1):
        import torch

        stopped = [(t.x, v) for t, _, v in _last_points(store, settings, ("stopped",))]
        if stopped:
            X = torch.cat(
                [X.reshape(-1, dim), torch.tensor([x for x, _ in stopped], dtype=torch.double)]
            )
            Y = torch.cat(
                [Y.reshape(-1, 1), torch.tensor([[v] for _, v in stopped], dtype=torch.double)]
            )
        return X, Y
    if (
        settings is not None
        and settings.model == "fidelity"
        and not (Y.numel() and Y.shape[1] != 1)
    ):
        import torch

        latest = [(t.x, v) for t, _, v in _last_points(store, settings, ("completed", "stopped"))]
        if latest:
            return (
                torch.tensor([x for x, _ in latest], dtype=torch.double),
                torch.tensor([[v] for _, v in latest], dtype=torch.double),
            )
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
    chosen = levels[
        enough[-1] if enough else max(range(len(levels)), key=lambda k: (len(levels[k]), -k))
    ]
    if not chosen:
        return X, Y
    return (
        torch.tensor([x for x, _ in chosen], dtype=torch.double),
        torch.tensor([[v] for _, v in chosen], dtype=torch.double),
    )


def plan_steps(
    metadata: list[dict[str, Any]], settings: EarlyStopping | None
) -> list[dict[str, Any]]:
    """Each multi-fidelity proposal's planned steps, ``ceil(fidelity * max_steps)``
    (metadata ``planned_steps``; :mod:`dsbo.acquisition.multi_fidelity`)."""
    if settings is None or settings.max_steps is None:
        return metadata
    return [
        dict(m, planned_steps=max(1, math.ceil(m["fidelity"] * settings.max_steps - 1e-9)))
        if "fidelity" in m
        else m
        for m in metadata
    ]


def _last_points(
    store: Store, settings: EarlyStopping, statuses: tuple[str, ...]
) -> list[tuple[Trial, int, float]]:
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
        raise ConfigError(
            "early_stopping model 'fidelity' needs max_steps, the steps of a full trial"
        )
    curves, rungs = store.curves(), set(settings.rungs())
    rows: list[tuple[list[float], int, float]] = []
    for trial in store.trials(("pending", "completed", "stopped")):
        curve = [
            (step, value) for step, value in curves.get(trial.id, []) if step <= settings.max_steps
        ]
        if curve:
            rows += [
                (trial.x, step, value)
                for k, (step, value) in enumerate(curve)
                if not rungs or step in rungs or k == len(curve) - 1
            ]
        elif trial.status == "completed" and trial.y is not None:
            rows.append((trial.x, settings.max_steps, trial.y[0]))
    X = torch.tensor([x for x, _, _ in rows], dtype=torch.double)
    steps = torch.tensor([step for _, step, _ in rows], dtype=torch.double)
    Y = torch.tensor([[value] for _, _, value in rows], dtype=torch.double)
    return fit_fidelity_gp(X, steps, Y, bounds, settings.max_steps)


def curve_of(trial_id: int, status: str, points: list[tuple[int, float]]) -> TrialCurve:
    """A stored curve as a stopping rule reads it (the store checked its points when they
    were reported: ints, finite floats, increasing steps)."""
    return TrialCurve.checked(
        trial_id, status, tuple(s for s, _ in points), tuple(v for _, v in points)
    )


def _rule(spec: Any, max_steps: int | None) -> StoppingRule | None:
    """The rule ``spec`` names; Hyperband's ``max_resource`` defaults to ``max_steps``."""
    if isinstance(spec, str):
        spec = {"name": spec}
    if isinstance(spec, Mapping) and spec.get("name") == "hyperband" and "max_resource" not in spec:
        if max_steps is None:
            raise ConfigError(
                "the hyperband rule needs max_steps (its max_resource): the steps of a full trial"
            )
        spec = {**spec, "max_resource": max_steps}
    try:
        return make_rule(spec)
    except ConfigError as exc:  # the rule's options are the campaign's early_stopping.<option>
        raise ConfigError(str(exc).replace("stopping.", "early_stopping.")) from None


__all__ = [
    "MODELS",
    "EarlyStopping",
    "RunningTrial",
    "TrialEvaluator",
    "curve_of",
    "fit_fidelity_model",
    "plan_steps",
    "takes_trial",
    "training_data",
]
