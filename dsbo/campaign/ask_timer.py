"""The timing of one ask (what :attr:`Campaign.last_ask <dsbo.campaign.Campaign.last_ask>` holds
and the runtime writes into each iteration's timings): every ask path starts a timer before it
reads the store and reads it once its trials are committed. No torch here: freeze-thaw's path
imports it before the first decision loads torch."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsbo.storage import Store


class AskTimer:
    """Times one ask: wall seconds in all and the store's share (the campaign's ``last_ask``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.start = time.perf_counter()
        self.store_start = store.busy_seconds

    def done(self, fit_time: float, acq_time: float) -> dict[str, float]:
        """The ask's timing: ``fit``, ``acquisition``, ``store`` and ``ask_total`` seconds."""
        return {
            "fit": fit_time,
            "acquisition": acq_time,
            "store": self.store.busy_seconds - self.store_start,
            "ask_total": time.perf_counter() - self.start,
        }


__all__ = ["AskTimer"]
