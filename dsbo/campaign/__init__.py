"""The campaign: ask/tell over a durable store, the budget and its cost ledger.

:class:`~dsbo.campaign.campaign.Campaign` proposes points with its policy (given a surrogate
spec, an acquisition and optionally a post-processor and a context step), commits every
proposal and every outcome to a :mod:`dsbo.storage` store, and keeps the budget in trials or
cost units. It is given its parts and never holds their code: policies and post-processors
come from :mod:`dsbo.acquisition`, the context step from :mod:`dsbo.contexts`, surrogates from
:mod:`dsbo.surrogates`. :mod:`~dsbo.campaign.validation` checks every part against the problem
with a dry iteration before anything is evaluated; :mod:`~dsbo.campaign.given_points` holds
the trials whose points the user gives (``attach``, ``enqueue``, ``ask(fixed=...)``).

An ask takes one of four parts: the initial design and the model's proposal
(:mod:`~dsbo.campaign.proposals`, where stopped and paused trials inform every proposal),
contexts (:mod:`~dsbo.campaign.contextual`) and freeze-thaw (:mod:`~dsbo.campaign.freeze_thaw`),
timed by :mod:`~dsbo.campaign.ask_timer`. Outcomes are told through
:mod:`~dsbo.campaign.trial_outcomes` (segments exact, short step budgets recorded as stopped),
evaluations report to a :mod:`~dsbo.campaign.running_trial`, early stopping's settings and
training data are :mod:`~dsbo.campaign.early_stopping`'s, and the model stack's warnings are
counted, not printed, by :mod:`~dsbo.campaign.model_warnings`.

May import: errors, registry, space, storage, problems, surrogates, data, acquisition,
contexts. Evaluating and driving a campaign to its budget is :mod:`dsbo.runtime`'s job;
``Campaign.evaluate`` and ``Campaign.run`` hand the campaign to it (the two imports from this
layer to a higher one, inside those methods). The package imports its modules on first use
(``from dsbo.campaign import Campaign`` imports torch and BoTorch; ``dsbo.campaign.execution``
and ``dsbo.campaign.ledger`` do not).
"""

from dsbo.registry import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EXACT_CHOLESKY_SIZE": "dsbo.campaign.campaign",
        "MAX_SEED": "dsbo.campaign.execution",
        "Campaign": "dsbo.campaign.campaign",
        "ON_PENDING": "dsbo.campaign.execution",
        "Execution": "dsbo.campaign.execution",
        "CampaignResult": "dsbo.campaign.history",
        "best_so_far": "dsbo.campaign.history",
        "history_frame": "dsbo.campaign.history",
    },
)

__all__ = [
    "EXACT_CHOLESKY_SIZE",
    "MAX_SEED",
    "ON_PENDING",
    "Campaign",
    "CampaignResult",
    "Execution",
    "best_so_far",
    "history_frame",
]
