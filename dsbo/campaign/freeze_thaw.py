r"""Freeze-thaw inside a campaign: at every free worker slot, thaw a paused trial for a few more
steps or start a new configuration, chosen by a learning-curve model (issue 43).

A campaign with ``early_stopping="freeze-thaw"`` (or ``{"name": "freeze-thaw", ...}``), a
``max_steps`` and a ``budget_steps`` runs trials in *segments*:

1. The initial design's trials are given ``steps_per_thaw`` steps each (metadata
   ``until_step``; the budget in steps reserves that many).
2. A trial that reports the step it was given is **paused** (:meth:`RunningTrial.should_stop
   <dsbo.campaign.early_stopping.RunningTrial.should_stop>` says ``True`` and sets
   ``trial.paused``): status ``paused`` in the store, its last value and the steps it used
   recorded, nothing more charged. Its evaluation returns; it keeps its checkpoint.
3. Every later proposal is :meth:`dsbo.stopping.freeze_thaw.FreezeThaw.choose`'s: the curve
   model (DyHPO's deep-kernel GP or the power-law ensemble, warm-started from the previous
   decision) is fitted on every curve in the store, running trials' too, and the candidate
   with the largest multi-fidelity EI (or EI at the last step, ``criterion="final"``) wins:
   either a paused trial, **thawed** (:meth:`~dsbo.storage.base.Store.thaw`: ``pending``
   again, the same id and curve, ``until_step`` ``k`` steps further, its reservation raised
   by ``k``), or a new configuration drawn from ``candidates`` points, half Sobol and half
   (``local``) Gaussian steps around the eight trials with the best latest values (SMAC's
   local search).
4. A thawed trial is evaluated again like a retried one: its evaluation is called anew, and
   :attr:`RunningTrial.last_step <dsbo.campaign.early_stopping.RunningTrial.last_step>` says
   where to resume (load the checkpoint saved at that step; reports of steps the curve
   already holds are replays and are ignored, so an evaluation that trains from scratch
   instead is still counted right). A trial that reaches ``max_steps`` completes with its
   outcome as usual.

Decisions are taken under the store's proposal lock, from the store's curves only: workers
sharing a PostgreSQL store thaw and start asynchronously (a free worker asks, whatever the
others are doing) and never thaw the same trial twice (the thaw is a compare-and-set on
``paused``). The budget in steps charges each step once, whatever the thaws; paused trials
left when it runs out stay paused (a resumed campaign with a larger budget thaws them).

What the model learns is the stored curves, values in BoTorch's direction (a minimized loss
negated), one value per step from step 1 (a step not reported is the last reported value
before it; steps before the first report take the first). The campaign's ``surrogate`` and
``acquisition`` are not used after the initial design.

Example:
    >>> def train(params, trial):
    ...     model = build(params)
    ...     start = load_checkpoint(model, trial) if trial.last_step else 0   # a thaw resumes
    ...     for epoch in range(start + 1, 28):
    ...         loss = fit_one_epoch(model)
    ...         save_checkpoint(model, trial, epoch)
    ...         trial.report(epoch, loss)
    ...         if trial.should_stop():                   # paused (or stopped)
    ...             return loss
    ...     return loss
    >>> dsbo.minimize(train, space, early_stopping={"name": "freeze-thaw", "steps_per_thaw": 3},
    ...               max_steps=27, budget_steps=540)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsbo.campaign.ask_timer import AskTimer
from dsbo.errors import ConfigError
from dsbo.surrogates.curve_catalogue import CURVE_MODELS

if TYPE_CHECKING:  # torch loads with the first decision: the command lines start without it
    import torch
    from torch import Tensor
    from torch.quasirandom import SobolEngine

    from dsbo.campaign.campaign import Campaign
    from dsbo.storage import Trial

#: The ``early_stopping`` name that makes a campaign freeze-thaw.
FREEZE_THAW = "freeze-thaw"
#: The generator of trials a freeze-thaw decision started.
GENERATOR = "freeze-thaw"
#: Best trials (by latest value) whose neighbourhoods the local candidates come from.
LOCAL_CENTERS = 8
#: Standard deviation (unit cube) of a local candidate's step.
LOCAL_SD = 0.1
#: The criteria (those of :mod:`dsbo.stopping.freeze_thaw`, named here so that a config is
#: checked without torch; the curve models are the registry's,
#: :data:`~dsbo.surrogates.curve_catalogue.CURVE_MODELS`, whose names need no torch either).
CRITERIA = ("mf-ei", "final")


@dataclass(frozen=True)
class FreezeThawSettings:
    """The ``early_stopping`` options of a freeze-thaw campaign (module docstring).

    Attributes:
        curve_model: A registered curve model
            (:func:`~dsbo.surrogates.curve_catalogue.available_curve_models`; dsbo ships
            ``"deep-kernel-gp"``, DyHPO's, and ``"power-law-ensemble"``).
        options: The zoo model's constructor options (e.g. ``{"inducing": 128}``).
        steps_per_thaw: ``k``, the steps a start or a thaw trains (``None``: ``max_steps // 3``).
        criterion: ``"mf-ei"`` (DyHPO: EI at the next step) or ``"final"`` (EI at ``max_steps``).
        candidates: New configurations scored at each decision.
        local: Their share drawn around the best trials (the rest: Sobol).
        epochs, warm_epochs: Adam steps of the first curve-model fit and of every later one.
        device: Where the curve model trains (``"cpu"``, ``"auto"``, ``"cuda"``).
    """

    curve_model: str = "deep-kernel-gp"
    options: Mapping[str, Any] = field(default_factory=dict)
    steps_per_thaw: int | None = None
    criterion: str = "mf-ei"
    candidates: int = 256
    local: float = 0.5
    epochs: int = 300
    warm_epochs: int = 20
    device: str = "cpu"

    @classmethod
    def build(
        cls, spec: Mapping[str, Any], max_steps: int | None, budget_steps: int | None
    ) -> FreezeThawSettings:
        """The settings from the ``early_stopping`` mapping (its ``name`` left out).

        Raises:
            ConfigError: naming ``early_stopping.<option>`` at fault, or the missing
                ``max_steps`` / ``budget_steps``.
        """
        if max_steps is None or budget_steps is None:
            raise ConfigError(
                "early_stopping freeze-thaw needs max_steps (the steps of a full trial) and budget_steps "
                "(the budget in steps: thaws cost steps, not trials)"
            )
        unknown = sorted(set(spec) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(
                f"early_stopping freeze-thaw: unknown option(s) {unknown}; "
                f"choose from {sorted(cls.__dataclass_fields__)}"
            )
        settings = cls(**spec)
        if settings.curve_model not in CURVE_MODELS:
            raise ConfigError(
                f"early_stopping.curve_model={settings.curve_model!r}: choose one of "
                + ", ".join(CURVE_MODELS.names())
            )
        if not isinstance(settings.options, Mapping):
            raise ConfigError(
                f"early_stopping.options must be a mapping of the curve model's options, got {settings.options!r}"
            )
        k = settings.steps_per_thaw
        if k is not None and (
            isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_steps
        ):
            raise ConfigError(
                f"early_stopping.steps_per_thaw must be an integer in [1, max_steps={max_steps}], got {k!r}"
            )
        if settings.criterion not in CRITERIA:
            raise ConfigError(
                f"early_stopping.criterion={settings.criterion!r}: choose one of {', '.join(CRITERIA)}"
            )
        n = settings.candidates
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"early_stopping.candidates must be an integer >= 1, got {n!r}")
        share = settings.local
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
            raise ConfigError(f"early_stopping.local must be a number in [0, 1], got {share!r}")
        return settings

    def thaw_steps(self, max_steps: int) -> int:
        """``k``: the option, or a third of a full trial."""
        return self.steps_per_thaw if self.steps_per_thaw is not None else max(1, max_steps // 3)


def candidates(
    n: int,
    configs: Tensor,
    latest: Sequence[float],
    local: float,
    sobol: SobolEngine,
    generator: torch.Generator,
) -> Tensor:
    """``n`` new configurations in the unit cube: a share ``local`` are Gaussian steps (sd
    :data:`LOCAL_SD`, clipped) from the :data:`LOCAL_CENTERS` configurations with the best
    (largest) ``latest`` values, the rest a scrambled Sobol sample."""
    import torch

    near = int(round(local * n)) if len(latest) else 0
    points = [sobol.draw(n - near).to(torch.float64)]
    if near:
        order = sorted(range(len(latest)), key=lambda i: -latest[i])[:LOCAL_CENTERS]
        centers = configs[order]
        picks = centers[torch.randint(len(order), (near,), generator=generator)]
        steps = torch.randn(picks.shape, generator=generator, dtype=torch.float64)
        points.append((picks + LOCAL_SD * steps).clamp(0.0, 1.0))
    return torch.cat(points)


def per_step(points: Sequence[tuple[int, float]], upto: int) -> list[float]:
    """A stored curve's values at steps ``1 .. upto``: a step not reported takes the last value
    reported before it, steps before the first report the first one."""
    values, k, current = [], 0, points[0][1]
    for step in range(1, upto + 1):
        while k < len(points) and points[k][0] <= step:
            current = points[k][1]
            k += 1
        values.append(current)
    return values


class FreezeThawStep:
    """A campaign's freeze-thaw proposals (module docstring); the curve model lives as long as
    the campaign object (a resumed campaign fits a new one from the stored curves)."""

    def __init__(self, settings: FreezeThawSettings, max_steps: int) -> None:
        self.settings, self.max_steps = settings, int(max_steps)
        self.k = settings.thaw_steps(max_steps)
        self._policy: Any = None

    def first_segment(self) -> dict[str, int]:
        """Metadata of an initial-design trial: trained up to ``k`` steps, then paused."""
        return {"until_step": self.k, "planned_steps": self.k}

    def ends_short(self, last_step: int | None) -> bool:
        """Whether an evaluation that returned after reporting ``last_step`` ended its segment
        short of a full trial (then the trial is paused, never completed: a later thaw may
        train it further). A trial that reported nothing completes as told."""
        return last_step is not None and last_step < self.max_steps

    def policy(self, dim: int) -> Any:
        """The :class:`~dsbo.stopping.freeze_thaw.FreezeThaw` choice (built at the first decision)."""
        if self._policy is None:
            from dsbo.stopping.freeze_thaw import FreezeThaw
            from dsbo.surrogates.curve_model import CurveSurrogate

            s = self.settings
            surrogate = CurveSurrogate(
                s.curve_model,
                dim,
                self.max_steps,
                s.options,
                epochs=s.epochs,
                warm_epochs=s.warm_epochs,
                device=s.device,
            )
            self._policy = FreezeThaw(surrogate, steps_per_thaw=self.k, criterion=s.criterion)
        return self._policy

    def propose(self, campaign: Campaign) -> list[Trial]:
        """One decision: the thawed trial or the new one, committed (pending); ``[]`` when the
        budget in steps is spent."""
        import torch
        from torch.quasirandom import SobolEngine

        from dsbo.acquisition.sparsity import num_changed
        from dsbo.stopping.freeze_thaw import FreezeThawChoice

        store, problem = campaign.store, campaign.problem
        left = campaign.ledger.left(store)
        if left < 1:
            return []
        start, timer = time.perf_counter(), AskTimer(store)
        trials, curves = store.trials(("pending", "completed", "stopped", "paused")), store.curves()
        observed = [t for t in trials if curves.get(t.id) and curves[t.id][-1][0] >= 1]
        low, high = problem.bounds
        width = (high - low).clamp_min(1e-12)
        configs = (
            (torch.tensor([t.x for t in observed], dtype=torch.float64) - low) / width
        ).reshape(len(observed), -1)
        values = [
            per_step(curves[t.id], min(curves[t.id][-1][0], self.max_steps)) for t in observed
        ]
        paused = [
            i
            for i, t in enumerate(observed)
            if t.status == "paused" and len(values[i]) < self.max_steps
        ]
        seed = campaign.proposal_seed()
        generator = torch.Generator().manual_seed(seed)
        sobol = SobolEngine(problem.dim, scramble=True, seed=seed)
        raw = candidates(
            self.settings.candidates,
            configs,
            [v[-1] for v in values],
            self.settings.local,
            sobol,
            generator,
        )
        snapped = problem.round_to_domain(low + raw * width)
        pool = (snapped - low) / width
        if (
            sum(map(len, values)) < 2
        ):  # nothing to fit yet (the design's trials are still running): a Sobol start
            choice = FreezeThawChoice(
                "start", None, 0, pool[0], self.k, math.nan, math.nan, math.nan, 0.0, 0.0
            )
        else:
            with torch.random.fork_rng():
                torch.manual_seed(seed)
                choice = self.policy(problem.dim).choose(
                    configs, values, paused, pool, budget_left=int(math.floor(left))
                )
        seconds = time.perf_counter() - start
        info = {
            "action": choice.action,
            "log_ei": choice.log_ei,
            "final_mean": choice.final_mean,
            "final_sd": choice.final_sd,
            "fit_seconds": choice.fit_seconds,
            "seed": seed,
            "observed_points": sum(map(len, values)),
        }
        campaign.last_ask = timer.done(choice.fit_seconds, seconds - choice.fit_seconds)
        if choice.action == "continue":
            trial = observed[choice.index]
            done = len(values[choice.index])
            until = int(min(choice.until_step, done + math.floor(left)))
            return [
                store.thaw(
                    trial.id,
                    until,
                    cost=float(until),
                    budget_cost=campaign.ledger.cost,
                    worker=campaign.worker,
                    metadata={
                        "last_thaw": info,
                        "cost_reserved": float(until),
                        "planned_steps": until,
                    },
                )
            ]
        X = snapped[choice.candidate].unsqueeze(0)
        until = int(min(choice.until_step, math.floor(left)))
        changed = num_changed(
            X, campaign.reference_point, problem.bounds, campaign.sparsity_tol, problem.space.groups
        )
        metadata = [
            {
                "until_step": until,
                "planned_steps": until,
                "freeze_thaw": info,
                "num_changed": int(changed[0]),
            }
        ]
        costs, _ = campaign.ledger.charge(problem, X, metadata, store)
        ids = store.add_trials(
            X,
            GENERATOR,
            fit_time=choice.fit_seconds,
            acq_time=seconds - choice.fit_seconds,
            metadata=metadata,
            budget=campaign.budget,
            cost=costs,
            budget_cost=campaign.ledger.cost,
            worker=campaign.worker,
        )
        return [store.get(i) for i in ids]


__all__ = [
    "FREEZE_THAW",
    "GENERATOR",
    "FreezeThawSettings",
    "FreezeThawStep",
    "candidates",
    "per_step",
]
