"""LightningDataModules that feed the zoo models (``models/``).

:class:`~dsbo.data.observations.ObservationDataModule` serves BO observations (a CSV table or
samples of a registered problem) as ``(x, y, index)`` batches on the unit cube with a
standardized target. :mod:`~dsbo.data.embeddings` serves ``(x, label)`` metric-learning
sets (digits, synthetic many-class) for sparse embeddings.
"""

from dsbo.data.embeddings import DigitsDataModule, SyntheticClassesDataModule
from dsbo.data.observations import ObservationDataModule

__all__ = ["DigitsDataModule", "ObservationDataModule", "SyntheticClassesDataModule"]
