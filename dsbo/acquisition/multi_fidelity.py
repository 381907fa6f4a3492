r"""``mf-kg``: the cost-aware multi-fidelity knowledge gradient over (configuration, steps).

With early stopping's ``model: "fidelity"`` (:mod:`dsbo.campaign.early_stopping`) the surrogate
is BoTorch's multi-fidelity GP over ``(x, s)``, ``s`` the fraction of a full trial's steps
(:mod:`dsbo.surrogates.fidelity`). This policy chooses both a configuration and how long to
train it, by BoTorch's :class:`~botorch.acquisition.knowledge_gradient.qMultiFidelityKnowledgeGradient`
(Wu, Toscano-Palmerin, Frazier and Wilson 2019, *Practical Multi-fidelity Bayesian Optimization
for Hyperparameter Tuning*, eq. 3; Poloczek et al. 2017) per unit of cost:

.. math::

    \alpha(x, s) = \frac{\mathbb{E}\big[\max_{x'} \mu_{n+1}(x', 1) \mid y(x, s)\big]
                   - \max_{x'} \mu_n(x', 1)}{c_0 + s},

the expected gain, at full training (``s = 1``, the projection), of the best predicted value
after observing ``x`` trained to ``s``, divided by the affine cost of that observation
(BoTorch's :class:`~botorch.models.cost.AffineFidelityCostModel` with weight 1 on ``s`` and a
fixed cost ``c_0``, ``fixed_cost``, for what a trial costs however short). The proposal's
fidelity goes into its metadata (``fidelity``); the campaign turns it into the trial's planned
steps, ``ceil(s * max_steps)``, reserves those of a budget in steps, and stops the trial when it
reaches them (unless the stopping rule stops it first).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import torch
from botorch.acquisition import PosteriorMean
from botorch.acquisition.cost_aware import InverseCostWeightedUtility
from botorch.acquisition.fixed_feature import FixedFeatureAcquisitionFunction
from botorch.acquisition.knowledge_gradient import qMultiFidelityKnowledgeGradient
from botorch.acquisition.utils import project_to_target_fidelity
from botorch.models.cost import AffineFidelityCostModel
from botorch.models.model import Model
from botorch.optim import optimize_acqf

from dsbo.acquisition.base import History, OptimizerSettings, Proposal, register_policy
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

#: The most restarts and raw samples of the one-shot optimization (each raw sample fantasizes
#: the GP ``num_fantasies`` times): with 60 curve points in 2 dimensions, 4 restarts from 64
#: raw samples took 12.5 s, 4 from 128 with 16 fantasies 21.6 s (a 2-core machine at load 5).
MAX_RESTARTS = 4
MAX_RAW_SAMPLES = 64


def _fraction(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(
            f"acquisition.options.{name} must be a number in [{low:g}, {high:g}], got {value!r}"
        )
    return float(value)


@register_policy(
    "mf-kg", "multi-fidelity knowledge gradient per unit cost (early stopping's model: fidelity)"
)
class MultiFidelityKG:
    """Propose ``(x, s)`` by the multi-fidelity knowledge gradient per unit cost (module doc).

    Args:
        optimizer: Acquisition optimizer settings (restarts, raw samples, iterations).
        num_fantasies: Fantasy observations of the one-shot knowledge gradient.
        fixed_cost: ``c_0``, a trial's cost beyond its steps, as a fraction of a full trial.
        min_fidelity: The shortest training proposed, as a fraction of a full trial.
    """

    name = "mf-kg"
    needs_model = True

    def __init__(
        self,
        optimizer: OptimizerSettings | None = None,
        num_fantasies: int = 8,
        fixed_cost: float = 0.1,
        min_fidelity: float = 0.1,
    ) -> None:
        if (
            isinstance(num_fantasies, bool)
            or not isinstance(num_fantasies, int)
            or num_fantasies < 1
        ):
            raise ConfigError(
                f"acquisition.options.num_fantasies must be an integer >= 1, got {num_fantasies!r}"
            )
        self.optimizer = optimizer or OptimizerSettings()
        self.num_fantasies = num_fantasies
        self.fixed_cost = _fraction("fixed_cost", fixed_cost, 0.0, 100.0)
        self.min_fidelity = _fraction("min_fidelity", min_fidelity, 1e-6, 1.0)

    def for_dry_run(self) -> MultiFidelityKG:
        """A cheap copy for a campaign's dry iteration: it fits the fidelity GP itself on the
        synthetic points (at random steps of 10) and proposes with few restarts and fantasies."""
        cheap = copy.copy(self)
        cheap.optimizer, cheap.num_fantasies, cheap.dry_run = self.optimizer.for_dry_run(), 2, True
        return cheap

    def propose(self, model: Model | None, history: History, problem: Problem, q: int) -> Proposal:
        if getattr(self, "dry_run", False) and not hasattr(model, "at_full_training"):
            from dsbo.surrogates.fidelity import fit_fidelity_gp

            steps = torch.randint(1, 11, (history.X.shape[0],)).to(history.X)
            model = fit_fidelity_gp(
                history.X, steps, history.Y[:, :1], problem.bounds, max_steps=10
            )
        inner = getattr(model, "model", None)
        if inner is None or not hasattr(model, "at_full_training"):
            raise ConfigError(
                "acquisition 'mf-kg' needs the fidelity surrogate: set early_stopping model: fidelity "
                "(and max_steps)"
            )
        d = problem.dim
        settings = self.optimizer
        lower, upper = problem.bounds[0], problem.bounds[1]
        torch.manual_seed(history.seed)
        # the best predicted value at full training: the knowledge gradient's baseline
        best_now = FixedFeatureAcquisitionFunction(
            PosteriorMean(inner), d=d + 1, columns=[d], values=[1.0]
        )
        unit = torch.stack([torch.zeros(d), torch.ones(d)]).to(problem.bounds)
        _, current = optimize_acqf(
            best_now,
            unit,
            q=1,
            num_restarts=settings.num_restarts,
            raw_samples=settings.raw_samples,
            options={"maxiter": settings.maxiter},
        )
        pending = None
        if history.X_pending is not None and history.X_pending.numel():
            pending = model.at_full_training(history.X_pending.to(problem.bounds))
        acqf = qMultiFidelityKnowledgeGradient(
            inner,
            num_fantasies=self.num_fantasies,
            current_value=current.detach(),
            cost_aware_utility=InverseCostWeightedUtility(
                cost_model=AffineFidelityCostModel(
                    fidelity_weights={d: 1.0}, fixed_cost=self.fixed_cost
                )
            ),
            project=functools.partial(
                project_to_target_fidelity, target_fidelities={d: 1.0}, d=d + 1
            ),
            X_pending=pending,
        )
        bounds = torch.stack(
            [
                torch.cat([torch.zeros(d), torch.tensor([self.min_fidelity])]),
                torch.ones(d + 1),
            ]
        ).to(problem.bounds)
        # the one-shot problem has (d + 1) x (q + num_fantasies) inputs and every raw sample
        # fantasizes the GP: at most MAX_RESTARTS restarts from MAX_RAW_SAMPLES raw samples
        candidates, value = optimize_acqf(
            acqf,
            bounds,
            q=q,
            num_restarts=min(settings.num_restarts, MAX_RESTARTS),
            raw_samples=min(settings.raw_samples, MAX_RAW_SAMPLES),
            options={"maxiter": settings.maxiter, "batch_limit": settings.batch_limit},
        )
        candidates = candidates.detach()
        X = lower + candidates[:, :d] * (upper - lower)
        X = problem.round_to_domain(settings.apply_fixed_features(X))
        fidelity = candidates[:, d].clamp(self.min_fidelity, 1.0)
        return Proposal(
            X,
            [
                {
                    "fidelity": float(s),
                    "acquisition_value": float(value),
                    "current_value": float(current),
                }
                for s in fidelity
            ],
        )


__all__ = ["MultiFidelityKG"]
