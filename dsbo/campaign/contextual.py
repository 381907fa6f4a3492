"""The context step of a contextual campaign: which contexts to optimize, observe or ignore.

A campaign on a problem with context variables (SADCBO; Paria et al.'s contextual variable
selection and its baselines, :mod:`dsbo.contexts`) proposes one point per iteration through a
:class:`ContextStep` it is given: the environment reports the contexts as they are now, the
context policy decides each context's role (optimized at its cost, observed for free, or
ignored) and the point, and the step commits the trial with its cost. The initial design
observes every context.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from botorch.utils.sampling import draw_sobol_samples

from dsbo.acquisition import OptimizerSettings
from dsbo.acquisition.sparsity import num_changed
from dsbo.campaign.ask_timer import AskTimer
from dsbo.contexts import ContextSettings, ContextState, Environment
from dsbo.contexts.settings import ContextValues
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.storage import Trial

if TYPE_CHECKING:
    from dsbo.campaign.campaign import Campaign


class ContextStep:
    """The contextual part of a campaign: its policy, the contexts fixed or only observed,
    and the environment that reports the contexts.

    Args:
        settings: The campaign's ``contexts`` settings.
        problem: The contextual problem (the step resolves context names and costs on it:
            :attr:`problem` is the problem the campaign then uses).
        optimizer: Acquisition optimizer settings, handed to the context policy.
        seed: The campaign seed (the simulated environment draws ``p(z)`` from it).
        q: The campaign's ``q``; a contextual campaign proposes one point at a time.
        acquisition, postprocess: The campaign's; a contextual campaign chooses points with
            its context policy, so they must be left at ``auto`` / none.
        environment: A callable returning the contexts as they are now, or ``None``.

    Raises:
        ConfigError: for settings that do not apply to a contextual campaign.
    """

    def __init__(
        self,
        settings: ContextSettings,
        problem: Problem,
        optimizer: OptimizerSettings,
        seed: int,
        q: int,
        acquisition: Any,
        postprocess: Any,
        environment: Callable[[], ContextValues] | None,
    ) -> None:
        if q != 1:
            raise ConfigError(f"a contextual campaign proposes one point per iteration; got q={q}")
        if acquisition not in ("auto", None) and not (
            isinstance(acquisition, Mapping) and acquisition.get("name", "auto") == "auto"
        ):
            raise ConfigError(
                "a contextual campaign chooses points with its context policy (UCB); leave acquisition "
                "at auto and set contexts.options (e.g. beta) instead"
            )
        if postprocess:
            raise ConfigError("postprocess does not apply to a contextual campaign")
        if environment is not None and not callable(environment):
            raise ConfigError(
                f"environment must be a callable returning the contexts, got {environment!r}"
            )
        self.problem, self.policy, self.fixed, self.observe_only = settings.resolve(
            problem, optimizer
        )
        self.environment = Environment(self.problem, seed, environment)

    def propose(self, campaign: Campaign, given: ContextValues | None) -> Trial:
        """One contextual proposal: the environment's contexts, the policy's roles and point,
        committed with its cost (the initial design observes every context)."""
        timer = AskTimer(campaign.store)
        seed = campaign.proposal_seed()
        torch.manual_seed(seed)  # as in ask: the same noise for the same seed in this process
        problem = self.problem
        z = self.environment.values(campaign.store.count(), given)
        X_done, Y_done = campaign.store.completed_data()
        n_proposed = campaign.store.budget_used()
        fit_time = acq_time = 0.0
        n_design = campaign.n_init + campaign.include_default
        if n_proposed < n_design or X_done.shape[0] < 2:
            if n_proposed < n_design:
                x = campaign.initial_design()[n_proposed].clone()
                generator = (
                    "default" if n_proposed == 0 and campaign.include_default else "sobol-init"
                )
            else:  # too few completed points to fit: another random design point
                x = draw_sobol_samples(problem.bounds, n=1, q=1, seed=seed).reshape(-1)
                generator = "sobol-fallback"
            x[list(problem.context_dims)] = z
            roles = dict.fromkeys(problem.context_names, "observed")
            cost, metadata = problem.design_cost, {}
        else:
            every_trial = campaign.store.trials()
            earlier = [
                t.metadata
                for t in every_trial
                if "phase" in t.metadata or "switch_check" in t.metadata
            ]
            spent = campaign.cost_used
            affordable = (
                math.inf
                if campaign.budget_cost is None
                else campaign.budget_cost - spent - problem.design_cost
            )
            design_spent = (campaign.n_init + campaign.include_default) * problem.design_cost
            if campaign.budget_cost is not None:
                cooling = (campaign.budget_cost - spent) / max(
                    campaign.budget_cost - design_spent, 1e-12
                )
            else:
                cooling = campaign.remaining / max(
                    campaign.budget - campaign.n_init - campaign.include_default, 1
                )
            state = ContextState(
                problem=problem,
                X=X_done,
                Y=Y_done[:, 0],
                z=z,
                t=sum(1 for t in every_trial if t.generator == self.policy.name) + 1,
                seed=seed,
                surrogate=campaign.surrogate,
                optimizer=campaign.optimizer,
                affordable=affordable,
                fixed=self.fixed,
                observe_only=self.observe_only,
                phase="optimization"
                if any(m.get("phase") == "optimization" for m in earlier)
                else "observational",
                checks=[m["switch_check"] for m in earlier if "switch_check" in m],
                cost_cooling=min(max(cooling, 0.0), 1.0),
            )
            torch.manual_seed(seed)
            t0 = time.perf_counter()
            proposal = self.policy.propose(state)
            acq_time = time.perf_counter() - t0
            x, roles, cost, metadata = proposal.x, proposal.roles, proposal.cost, proposal.metadata
            generator = self.policy.name
        X = problem.validate(x.reshape(1, -1), what="proposed candidate")
        metadata = {
            **metadata,
            "contexts": roles,
            "seed": seed,
            "context_values": dict(zip(problem.context_names, z.tolist(), strict=True)),
            "num_changed": int(
                num_changed(X, campaign.reference_point, problem.bounds, campaign.sparsity_tol)[0]
            ),
        }
        [trial_id] = campaign.store.add_trials(
            X,
            generator,
            fit_time=fit_time,
            acq_time=acq_time,
            metadata=[metadata],
            budget=campaign.budget,
            cost=cost,
            budget_cost=campaign.budget_cost,
            worker=campaign.worker,
        )
        campaign.last_ask = timer.done(fit_time, acq_time)
        return campaign.store.get(trial_id)
