"""The dsbo surrogate zoo: LightningModules in plain PyTorch + Lightning + einops.

The zoo never imports :mod:`dsbo`, so it stays usable without BoTorch. Model families are
added one file each (see ``../shared/DESIGN.md``).
"""

from models.mlp import EnsembleMLP
from models.neural_ensemble import NeuralEnsemble
from models.neural_lints import NeuralLinTS
from models.neural_ucb import NeuralUCB
from models.smb import PosteriorSMB, SimpleSMB

__all__ = ["EnsembleMLP", "NeuralEnsemble", "NeuralLinTS", "NeuralUCB", "PosteriorSMB", "SimpleSMB"]
