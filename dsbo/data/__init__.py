"""LightningDataModules that feed the zoo models (``models/``).

:class:`~dsbo.data.observations.ObservationDataModule` serves BO observations (a CSV table or
samples of a registered problem) as ``(x, y, index)`` batches on the unit cube with a
standardized target. :mod:`~dsbo.data.embeddings` serves ``(x, label)`` metric-learning
sets (digits, synthetic many-class) for sparse embeddings. :mod:`~dsbo.data.hierarchical` serves
windows of hierarchical time series (:class:`~dsbo.data.hierarchical.HierarchicalDataModule`) for
HiReD, with the :class:`~dsbo.data.hierarchical.Hierarchy` of their summing matrix.
"""

from dsbo.data.embeddings import DigitsDataModule, SyntheticClassesDataModule
from dsbo.data.hierarchical import (
    HierarchicalDataModule,
    HierarchicalSeries,
    Hierarchy,
    read_hierarchical,
    synthetic_hierarchy,
    write_hierarchical,
)
from dsbo.data.observations import ObservationDataModule

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
