"""Proposal policies (acquisition) and their registry."""

from dsbo.acquisition import plain  # noqa: F401  (registers the plain policies)
from dsbo.acquisition.base import (
    History,
    OptimizerSettings,
    Policy,
    Proposal,
    available_policies,
    make_policy,
    register_policy,
)

__all__ = [
    "History",
    "OptimizerSettings",
    "Policy",
    "Proposal",
    "available_policies",
    "make_policy",
    "register_policy",
]
