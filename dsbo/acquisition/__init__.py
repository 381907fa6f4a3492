"""Proposal policies (acquisition) and their registry."""

from dsbo.acquisition import (
    bonsai,  # noqa: F401  (registers the BONSAI post-processor)
    cost_aware,  # noqa: F401  (registers EI per cost, MES, cost-MES)
    cost_ids,  # noqa: F401  (registers CostIDS)
    plain,  # noqa: F401  (registers the plain policies)
    pool,  # noqa: F401  (registers the pool policy)
    regularized,  # noqa: F401  (registers IR and ER)
    scalarized,  # noqa: F401  (registers MOBO-RS)
    sebo,  # noqa: F401  (registers SEBO)
    thompson,  # noqa: F401  (registers Thompson sampling)
)
from dsbo.acquisition.base import (
    History,
    OptimizerSettings,
    Policy,
    PostProcessor,
    Proposal,
    available_policies,
    make_policy,
    make_postprocessor,
    register_policy,
    register_postprocessor,
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
