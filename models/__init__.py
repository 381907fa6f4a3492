"""The dsbo surrogate zoo: LightningModules in plain PyTorch + Lightning + einops.

The zoo never imports :mod:`dsbo`, so it stays usable without BoTorch. Model families are
added one file each (the docs' architecture page has the layout and its rules).
"""

from .deep_kernel_curve_gp import DeepKernelCurveGP
from .hired import HiReD
from .learning_curves import CurveLayout
from .mlp import EnsembleMLP
from .neural_ensemble import NeuralEnsemble
from .neural_lints import NeuralLinTS
from .neural_ucb import NeuralUCB
from .power_law_ensemble import PowerLawEnsemble
from .seq2seq_rnn import Seq2SeqRNN
from .smb import PosteriorSMB, SimpleSMB
from .sparse_embedding import SparseEmbedding

__all__ = [
    "CurveLayout",
    "DeepKernelCurveGP",
    "EnsembleMLP",
    "HiReD",
    "NeuralEnsemble",
    "NeuralLinTS",
    "NeuralUCB",
    "PosteriorSMB",
    "PowerLawEnsemble",
    "Seq2SeqRNN",
    "SimpleSMB",
    "SparseEmbedding",
]
