"""Proposal policies (acquisition) and their registry.

The policies and post-processors register by name; :mod:`dsbo.acquisition.catalogue` says
which module registers each, and the registry imports that module when the name is first asked
for. Importing the package imports none of them, nor torch: :class:`OptimizerSettings`
(:mod:`~dsbo.acquisition.settings`) and the registry functions are torch-free, and the
interfaces of :mod:`~dsbo.acquisition.base` are imported on first use.

May import: errors, registry, space, problems, data (retrieval indexes for pool BO),
surrogates (relevance from a fitted model); never contexts, the campaign or anything above.
"""

from dsbo.acquisition.catalogue import available_policies, register_policy, register_postprocessor
from dsbo.acquisition.settings import OptimizerSettings
from dsbo.registry import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    dict.fromkeys(
        ("History", "Policy", "PostProcessor", "Proposal", "make_policy", "make_postprocessor"),
        "dsbo.acquisition.base",
    ),
)

__all__ = [
    "History",
    "OptimizerSettings",
    "Policy",
    "PostProcessor",
    "Proposal",
    "available_policies",
    "make_policy",
    "make_postprocessor",
    "register_policy",
    "register_postprocessor",
]
