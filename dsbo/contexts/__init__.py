"""Contextual variable selection (SADCBO and its baselines): which context variables each
iteration optimizes (at a cost), observes (for free) or ignores.

Modules: :mod:`~dsbo.contexts.relevance` (feature collapsing, HSIC, the ``eta`` cut),
:mod:`~dsbo.contexts.switching` (the observational -> optimization phase switch),
:mod:`~dsbo.contexts.policies` (SADCBO, CUBO, VBO, CBO, CaBO, Dropout, MMDBO; registered by
name, :mod:`~dsbo.contexts.catalogue`), :mod:`~dsbo.contexts.settings` (the campaign's
``contexts:`` settings) and :mod:`~dsbo.contexts.environment` (where observed context values
come from). Importing the package imports no torch: :class:`ContextSettings` and
:func:`available_context_policies` are torch-free, the other names are imported on first use.

May import: errors, registry, space, problems, surrogates, acquisition (the optimizer
settings and ``History``); never the campaign or anything above.
"""

from dsbo.contexts.catalogue import available_context_policies
from dsbo.contexts.settings import ContextSettings
from dsbo.registry import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("ContextPolicy", "ContextProposal", "ContextState", "make_context_policy"),
            "dsbo.contexts.policies",
        ),
        "Environment": "dsbo.contexts.environment",
    },
)

__all__ = [
    "ContextPolicy",
    "ContextProposal",
    "ContextSettings",
    "ContextState",
    "Environment",
    "available_context_policies",
    "make_context_policy",
]
