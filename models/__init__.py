"""The dsbo surrogate zoo: LightningModules in plain PyTorch + Lightning + einops.

The zoo never imports :mod:`dsbo`, so it stays usable without BoTorch. Model families are
added one file each (see ``../shared/DESIGN.md``).
"""

from .mlp import EnsembleMLP
from .neural_ensemble import NeuralEnsemble
from .neural_lints import NeuralLinTS
from .neural_ucb import NeuralUCB
from .smb import PosteriorSMB, SimpleSMB
from .sparse_embedding import SparseEmbedding

__all__ = ["EnsembleMLP", "NeuralEnsemble", "NeuralLinTS", "NeuralUCB", "PosteriorSMB", "SimpleSMB", "SparseEmbedding"]
