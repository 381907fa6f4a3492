"""Contextual variable selection (SADCBO and its baselines): which context variables each
iteration optimizes (at a cost), observes (for free) or ignores.

Modules: :mod:`~dsbo.contexts.relevance` (feature collapsing, HSIC, the ``eta`` cut),
:mod:`~dsbo.contexts.switching` (the observational -> optimization phase switch),
:mod:`~dsbo.contexts.policies` (SADCBO, CUBO, VBO, CBO, CaBO, Dropout, MMDBO) and
:mod:`~dsbo.contexts.settings` (the campaign's ``contexts:`` settings and the environment).
"""

from dsbo.contexts.policies import (
    ContextPolicy,
    ContextProposal,
    ContextState,
    available_context_policies,
    make_context_policy,
)
from dsbo.contexts.settings import ContextSettings, Environment

__all__ = [
    "ContextPolicy",
    "ContextProposal",
    "ContextSettings",
    "ContextState",
    "Environment",
    "available_context_policies",
    "make_context_policy",
]
