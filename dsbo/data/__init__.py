"""LightningDataModules that feed the zoo models (``models/``), and the sparse retrieval index.

:class:`~dsbo.data.observations.ObservationDataModule` serves BO observations (a CSV table or
samples of a registered problem) as ``(x, y, index)`` batches on the unit cube with a
standardized target. :mod:`~dsbo.data.embeddings` serves ``(x, label)`` metric-learning
sets (digits, synthetic many-class) for sparse embeddings. :mod:`~dsbo.data.hierarchical` serves
windows of hierarchical time series (:class:`~dsbo.data.hierarchical.HierarchicalDataModule`) for
HiReD, with the :class:`~dsbo.data.hierarchical.Hierarchy` of their summing matrix.
:mod:`~dsbo.data.retrieval` is the inverted index of sparse codes that the pool policy searches.

The datamodules need Lightning; importing the package imports none of its modules (the names
below are imported on first use), so :mod:`dsbo.data.retrieval` comes without Lightning.

May import: errors, registry, space, problems (an observation set can sample a problem);
never surrogates, acquisition or anything above.
"""

from dsbo.registry import lazy_exports

_HIERARCHICAL = (
    "HierarchicalDataModule",
    "HierarchicalSeries",
    "Hierarchy",
    "read_hierarchical",
    "synthetic_hierarchy",
    "write_hierarchical",
)
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DigitsDataModule": "dsbo.data.embeddings",
        "SyntheticClassesDataModule": "dsbo.data.embeddings",
        "ObservationDataModule": "dsbo.data.observations",
        **dict.fromkeys(_HIERARCHICAL, "dsbo.data.hierarchical"),
    },
)

__all__ = [
    "DigitsDataModule",
    "HierarchicalDataModule",
    "HierarchicalSeries",
    "Hierarchy",
    "ObservationDataModule",
    "SyntheticClassesDataModule",
    "read_hierarchical",
    "synthetic_hierarchy",
    "write_hierarchical",
]
