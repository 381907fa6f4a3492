"""The campaign: ask/tell over a durable store, the budget and its cost ledger.

:class:`~dsbo.campaign.campaign.Campaign` proposes points with its policy (given a surrogate
spec, an acquisition and optionally a post-processor and a context step), commits every
proposal and every outcome to a :mod:`dsbo.storage` store, and keeps the budget in trials or
cost units. It is given its parts and never holds their code: policies and post-processors
come from :mod:`dsbo.acquisition`, the context step from :mod:`dsbo.contexts`, surrogates from
:mod:`dsbo.surrogates`. :mod:`~dsbo.campaign.validation` checks every part against the problem
with a dry iteration before anything is evaluated.

May import: errors, registry, space, storage, problems, surrogates, data, acquisition,
contexts. Evaluating and driving a campaign to its budget is :mod:`dsbo.runtime`'s job;
``Campaign.evaluate`` and ``Campaign.run`` hand the campaign to it (the two imports from this
layer to a higher one, both inside those methods).
"""

from dsbo.campaign.campaign import EXACT_CHOLESKY_SIZE, MAX_SEED, Campaign
from dsbo.campaign.execution import ON_PENDING, Execution
from dsbo.campaign.history import CampaignResult, best_so_far, history_frame

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
