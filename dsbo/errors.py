"""The dsbo error hierarchy.

Every error a user can trigger derives from :class:`DsboError`, and its message names the
field or value at fault and, where possible, what to do about it.
"""

from __future__ import annotations


class DsboError(Exception):
    """Base class of every error dsbo raises on purpose."""


class ConfigError(DsboError, ValueError):
    """A configuration value is missing, of the wrong type or out of range."""


class ProblemError(DsboError, ValueError):
    """A point does not fit a problem (wrong dimension, out of bounds, not finite)."""


class DataError(DsboError, ValueError):
    """Training or observation data are malformed (shapes, NaNs, too few points)."""


class StoreError(DsboError):
    """The campaign store is unusable (wrong schema, other problem, corrupt rows)."""


class EvaluationError(DsboError):
    """An evaluation produced no usable value; recorded as a failed trial, never fitted."""
