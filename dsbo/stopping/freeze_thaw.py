r"""Freeze-thaw decisions: at a free worker slot, continue a paused trial for a few more steps
or start a new configuration, chosen by a learning-curve model (issue 43).

Swersky, Snoek and Adams (*Freeze-thaw Bayesian optimization*, 2014) keep a pool of paused
("frozen") trainings and, whenever a worker is free, either resume ("thaw") one of them or
start a new configuration. DyHPO (Wistuba, Schulz and Grabocka, *Supervising the
multi-fidelity race of hyperparameter configurations*, NeurIPS 2022, sec. 4.2) makes the
choice with a *multi-fidelity expected improvement*: each candidate is scored at the step it
would reach next, :math:`b = s + k` for a paused trial observed to step :math:`s` (``k`` steps
per thaw) and :math:`b = k` for a new configuration, against the best value observed *at
that step*,

.. math::

    \mathrm{EI}_{\mathrm{MF}}(x, b) = \mathbb E\big[\max\big(f(x, b) - y^{\max}_b, 0\big)\big],
    \qquad y^{\max}_b = \max\{y_{x', b} : x' \text{ observed at } b\},

(:math:`y^{\max}_b` falls back to the best value at any step when no trial has reached
:math:`b`), and the candidate with the largest EI is trained for ``k`` more steps.
``criterion="final"`` scores every candidate instead by the EI of its predicted value at the
last step :math:`T` against the best value observed at :math:`T` (the freeze-thaw paper's
choice, on the asymptote), which favours trials that end well over trials that start fast.

The model is a :class:`~dsbo.surrogates.curve_model.CurveModel` (DyHPO's deep-kernel GP or
the power-law ensemble) over ``[x | step]``; the EI is BoTorch's
:class:`~botorch.acquisition.analytic.LogExpectedImprovement` with one incumbent per
candidate. Values are in BoTorch's direction (larger is better): a caller minimizing a loss
passes the negated curves.

What the papers leave open, and what this module does: DyHPO draws its new configurations
at random; here the caller passes the candidates (e.g. a Sobol sample of the space). DyHPO
thaws one step at a time; ``steps_per_thaw`` sets ``k``. Neither paper caps the number of
paused trials; the caller decides which trials may be thawed (``paused``).

Example:
    >>> policy = FreezeThaw(CurveSurrogate("deep-kernel-gp", num_params=3, max_steps=27))
    >>> choice = policy.choose(configs, curves, paused=[0, 2], candidates=sobol_points)
    >>> choice.action, choice.index, choice.until_step      # e.g. ("continue", 2, 5)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from botorch.acquisition.analytic import LogExpectedImprovement
from torch import Tensor

from dsbo.errors import ConfigError, DataError
from dsbo.surrogates.curve_model import CurveModel, CurveSurrogate

CRITERIA = ("mf-ei", "final")


@dataclass(frozen=True)
class FreezeThawChoice:
    """What to train next.

    Attributes:
        action: ``"continue"`` (thaw the paused trial ``index``) or ``"start"`` (a new
            configuration, ``candidate`` its row in the candidates).
        index: The curve continued (``None`` for a start).
        candidate: The row of the new configuration among the candidates (``None`` for a continue).
        config: The configuration (unit cube).
        until_step: Train it up to this step.
        log_ei: The chosen candidate's log expected improvement.
        final_mean, final_sd: Its predicted value at the last step (BoTorch's direction).
        fit_seconds, choice_seconds: The model fit and the scoring.
    """

    action: str
    index: int | None
    candidate: int | None
    config: Tensor
    until_step: int
    log_ei: float
    final_mean: float
    final_sd: float
    fit_seconds: float
    choice_seconds: float


def best_at_steps(curves: Sequence[Sequence[float]], steps: Tensor) -> Tensor:
    r""":math:`y^{\max}_b` for each step ``b`` in ``steps``: the best value any curve holds at
    ``b``, else the best value of all curves."""
    overall = max(v for curve in curves for v in curve)
    longest = max(len(curve) for curve in curves)
    table = torch.full((longest,), -math.inf, dtype=torch.float64)
    for curve in curves:
        values = torch.as_tensor(list(curve), dtype=torch.float64)
        table[: len(values)] = torch.maximum(table[: len(values)], values)
    index = steps.long() - 1
    best = torch.full(steps.shape, overall, dtype=torch.float64)
    reached = index < longest
    best[reached] = table[index[reached]]
    return torch.where(torch.isfinite(best), best, torch.full_like(best, overall))


class FreezeThaw:
    """The freeze-thaw choice of a curve model (module docstring).

    Args:
        surrogate: The curve model, kept across decisions (warm-started).
        steps_per_thaw: ``k``, the steps a choice trains (DyHPO: 1).
        criterion: ``"mf-ei"`` (DyHPO, at the next step) or ``"final"`` (at the last step).
    """

    def __init__(
        self, surrogate: CurveSurrogate, steps_per_thaw: int = 1, criterion: str = "mf-ei"
    ) -> None:
        if (
            isinstance(steps_per_thaw, bool)
            or not isinstance(steps_per_thaw, int)
            or steps_per_thaw < 1
        ):
            raise ConfigError(
                f"freeze-thaw: steps_per_thaw must be an integer >= 1, got {steps_per_thaw!r}"
            )
        if criterion not in CRITERIA:
            raise ConfigError(
                f"freeze-thaw: criterion={criterion!r}; choose one of {', '.join(CRITERIA)}"
            )
        self.surrogate, self.steps_per_thaw, self.criterion = surrogate, steps_per_thaw, criterion

    @property
    def max_steps(self) -> int:
        return self.surrogate.max_steps

    def choose(
        self,
        configs: Tensor,
        curves: Sequence[Sequence[float]],
        paused: Sequence[int],
        candidates: Tensor,
        budget_left: int | None = None,
    ) -> FreezeThawChoice:
        """Fit the model on ``curves`` and choose between thawing one of ``paused`` and
        starting one of ``candidates``.

        Args:
            configs: ``m x d`` configurations (unit cube) of the curves.
            curves: ``curves[i]``: configuration ``i``'s values at steps ``1, 2, ...``
                (BoTorch's direction).
            paused: Indices of the curves that may be continued (shorter than ``max_steps``).
            candidates: ``c x d`` new configurations (unit cube); may be empty.
            budget_left: Steps the budget has left (``None``: no end in sight). Near the end
                the choice makes sure a trial is trained to the last step: once one more
                thaw elsewhere would leave too few steps to finish the paused trial with the
                best predicted final value, that trial is continued to the last step.

        Raises:
            DataError: with nothing to choose from, or a paused curve that is complete.
        """
        T, k = self.max_steps, self.steps_per_thaw
        for i in paused:
            if not 0 < len(curves[i]) < T:
                raise DataError(
                    f"freeze-thaw: curve {i} has {len(curves[i])} of {T} steps; it cannot be continued"
                )
        if not len(paused) and not len(candidates):
            raise DataError("freeze-thaw: no paused trial and no candidate to choose from")
        model = self.surrogate.fit(configs, curves)
        start = time.perf_counter()
        configs = torch.as_tensor(configs, dtype=torch.float64)
        candidates = torch.as_tensor(candidates, dtype=torch.float64).reshape(-1, configs.shape[-1])
        rows = torch.cat([configs[list(paused)], candidates])
        next_steps = torch.tensor(
            [min(len(curves[i]) + k, T) for i in paused] + [min(k, T)] * len(candidates),
            dtype=torch.float64,
        )
        steps = torch.full_like(next_steps, float(T)) if self.criterion == "final" else next_steps
        log_ei = self._log_ei(model, rows, steps, best_at_steps(curves, steps))
        best = int(torch.argmax(log_ei))
        finish = self._endgame(model, configs, curves, paused, budget_left)
        if finish is not None:
            best = list(paused).index(finish)
            next_steps[best] = float(T)
        final = model.posterior(
            torch.cat([rows[best], torch.tensor([float(T)], dtype=torch.float64)]).reshape(1, 1, -1)
        )
        continued = best < len(paused)
        return FreezeThawChoice(
            action="continue" if continued else "start",
            index=int(paused[best]) if continued else None,
            candidate=None if continued else best - len(paused),
            config=rows[best],
            until_step=int(next_steps[best]),
            log_ei=float(log_ei[best]),
            final_mean=float(final.mean.squeeze()),
            final_sd=float(final.variance.squeeze().clamp_min(0).sqrt()),
            fit_seconds=self.surrogate.fit_seconds,
            choice_seconds=time.perf_counter() - start,
        )

    def _endgame(
        self,
        model: CurveModel,
        configs: Tensor,
        curves: Sequence[Sequence[float]],
        paused: Sequence[int],
        budget_left: int | None,
    ) -> int | None:
        """The paused trial to finish now (module docstring of :meth:`choose`), or ``None``."""
        T, k = self.max_steps, self.steps_per_thaw
        finishable = [
            i for i in paused if budget_left is not None and T - len(curves[i]) <= budget_left
        ]
        if not finishable:
            return None
        X = torch.cat(
            [configs[finishable], torch.full((len(finishable), 1), float(T), dtype=torch.float64)],
            -1,
        )
        with torch.no_grad():
            predicted = model.posterior(X.unsqueeze(-2)).mean.reshape(-1)
        chosen = finishable[int(torch.argmax(predicted))]
        return chosen if budget_left < T - len(curves[chosen]) + k else None

    @staticmethod
    def _log_ei(model: CurveModel, configs: Tensor, steps: Tensor, best: Tensor) -> Tensor:
        """``log EI`` of each ``(configs[i], steps[i])`` against ``best[i]`` (one t-batch each)."""
        X = torch.cat([configs, steps.unsqueeze(-1)], dim=-1).unsqueeze(-2)  # c x 1 x (d + 1)
        with torch.no_grad():
            return LogExpectedImprovement(model, best_f=best.unsqueeze(-1)).forward(
                X
            )  # b x m incumbents


__all__ = ["CRITERIA", "FreezeThaw", "FreezeThawChoice", "best_at_steps"]
