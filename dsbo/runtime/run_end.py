"""How a run ends, for both drivers (:mod:`dsbo.runtime.driver`, :mod:`dsbo.runtime.parallel`):
stopped by failures in a row, keeping every evaluation (:func:`too_many_failures`), or at its
budget, warning when nothing completed (:func:`finish`)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from dsbo.errors import AllEvaluationsFailedWarning, TooManyFailuresError

if TYPE_CHECKING:
    from dsbo.campaign import Campaign, CampaignResult


def too_many_failures(campaign: Campaign, consecutive: int) -> TooManyFailuresError:
    """The error a run stops with after ``consecutive`` failures in a row, holding the
    campaign's result (every evaluation so far) and saying how to keep and resume it."""
    last = campaign.store.trials("failed")[-1]
    completed = campaign.store.count("completed")
    where = getattr(campaign.store, "path", None)
    if where in (None, ":memory:"):
        keep = (
            f"{completed} completed evaluation(s) are in this error's .result; this store is in memory: "
            "pass store='trials.sqlite' to keep every evaluation on disk and resume after fixing the function"
        )
    else:
        keep = f"everything is saved in {where}: fix the evaluator and run again to resume"
    message = f"{consecutive} evaluations in a row failed (last error: {last.error}); stopping. {keep[0].upper()}{keep[1:]}."
    return TooManyFailuresError(message, result=campaign.result())


def finish(campaign: Campaign) -> CampaignResult:
    """The campaign's result; warns (:class:`~dsbo.errors.AllEvaluationsFailedWarning`,
    naming the first error) when evaluations ran and none completed."""
    if campaign.store.count("completed") == 0 and campaign.store.count("failed") > 0:
        first = campaign.store.trials("failed")[0]
        warnings.warn(
            f"all {campaign.store.count('failed')} evaluations failed, so there is no best value; "
            f"the first error: {first.error}",
            AllEvaluationsFailedWarning,
            stacklevel=3,
        )
    return campaign.result()
