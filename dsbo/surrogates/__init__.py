"""Surrogates: everything that turns data into a BoTorch ``Model``.

:func:`fit_surrogate` is the one entry point; importing this package registers the GP
baselines of :mod:`dsbo.surrogates.gp` (``gp``, ``map-saas``, ``saasbo``, ``ibnn``), the
infinite-width network GPs of :mod:`dsbo.surrogates.ntk` (``ntk-gp``, ``nngp-gp``) and the
Lightning-trained zoo surrogates of :mod:`dsbo.surrogates.neural` (``simple-smb``,
``posterior-smb``, ``neural-ensemble``, ``neural-lints``, ``neural-ucb``) and the sparse GPs of
:mod:`dsbo.surrogates.sparse_gp` (``vfe``, ``fitc``) and the Bayesian linear head on a sparse
embedding of :mod:`dsbo.surrogates.sparse_linear` (``sparse-linear``). Any of them can be fitted on a selected
subset of the data (:mod:`dsbo.surrogates.selection`, the spec's ``selector``).

Example:
    >>> from dsbo.surrogates import fit_surrogate
    >>> model = fit_surrogate({"name": "gp", "kernel": "rbf"}, X, Y, bounds=bounds)
"""

from dsbo.surrogates import (
    gp,  # noqa: F401  (registers the GP baselines)
    neural,  # noqa: F401  (registers the zoo surrogates)
    ntk,  # noqa: F401  (registers ntk-gp and nngp-gp)
    sparse_gp,  # noqa: F401  (registers the sparse GPs vfe and fitc)
    sparse_linear,  # noqa: F401  (registers sparse-linear)
)
from dsbo.surrogates.registry import (
    SurrogateSpec,
    available_surrogates,
    fit_surrogate,
    register_surrogate,
)

__all__ = ["SurrogateSpec", "available_surrogates", "fit_surrogate", "register_surrogate"]
