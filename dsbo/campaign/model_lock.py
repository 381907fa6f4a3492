"""The lock every campaign of a process holds while it fits and proposes.

GPyTorch's and BoTorch's settings are class attributes that a ``with`` block sets and
restores; torch's random seed and its thread count are process-wide too. Two threads proposing
at once (two Optuna samplers, two Tuners in one process) interleave those blocks and can leave
a setting switched for every model in the process (GPyTorch's ``lazily_evaluate_kernels`` off:
sparse GPs then predicted with the exact GP's strategy) and reseed each other's proposals.
:meth:`~dsbo.campaign.Campaign.ask` and :meth:`~dsbo.campaign.Campaign.fit_model` hold
:data:`MODEL_LOCK`, so one proposal at a time keeps each campaign's proposals what they would
be alone; evaluations still run side by side.
"""

from __future__ import annotations

import threading

#: Re-entrant: a proposal that fits its model takes it twice.
MODEL_LOCK = threading.RLock()

__all__ = ["MODEL_LOCK"]
