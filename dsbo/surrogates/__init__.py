"""Surrogates: everything that turns data into a BoTorch ``Model``.

:func:`fit_surrogate` is the one entry point. The surrogates register by name
(:mod:`dsbo.surrogates.catalogue` says which module registers each, and the registry imports
that module when the surrogate is first asked for): the GP baselines of
:mod:`dsbo.surrogates.gp` (``gp``, ``map-saas``, ``saasbo``, ``ibnn``), the infinite-width
network GPs of :mod:`dsbo.surrogates.ntk` (``ntk-gp``, ``nngp-gp``), the Lightning-trained zoo
surrogates of :mod:`dsbo.surrogates.neural` (``simple-smb``, ``posterior-smb``,
``neural-ensemble``, ``neural-lints``, ``neural-ucb``; trained by
:mod:`~dsbo.surrogates.lightning_bridge`, wrapped by :mod:`~dsbo.surrogates.zoo_models`), the
sparse GPs of :mod:`dsbo.surrogates.sparse_gp` (``vfe``, ``fitc``) and the Bayesian linear head
on a sparse embedding of :mod:`dsbo.surrogates.sparse_linear` (``sparse-linear``). Any of them
can be fitted on a selected subset of the data (:mod:`dsbo.surrogates.selection`, the spec's
``selector``). Importing the package imports none of them, nor torch.

Example:
    >>> from dsbo.surrogates import fit_surrogate
    >>> model = fit_surrogate({"name": "gp", "kernel": "rbf"}, X, Y, bounds=bounds)

May import: errors, registry, space, problems, data, and the zoo (``dsbo_zoo``, for the
Lightning-trained surrogates, imported when one is fitted); never acquisition or anything above.
"""

from dsbo.registry import lazy_exports
from dsbo.surrogates.catalogue import available_surrogates, register_surrogate

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"SurrogateSpec": "dsbo.surrogates.registry", "fit_surrogate": "dsbo.surrogates.registry"},
)

__all__ = ["SurrogateSpec", "available_surrogates", "fit_surrogate", "register_surrogate"]
