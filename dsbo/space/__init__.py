"""Search spaces: the parameters users write and their map to the model's box.

The lowest layer of dsbo next to :mod:`dsbo.errors`: it imports nothing else of dsbo (and no
torch), and problems, surrogates, acquisition, the campaign and the command lines all read
parameters through it.

- :mod:`~dsbo.space.parameters`: :class:`Float` (``log``, ``step``), :class:`Int` (``log``,
  ``step``), :class:`Choice` (``ordered``), :class:`Fixed`, each with ``when=`` conditions.
- :mod:`~dsbo.space.constraints`: linear parameter constraints written as ``"x + y <= 1"``.
- :mod:`~dsbo.space.search_space`: :class:`SearchSpace`, the named parameters with the map
  between user values and the model's columns.
- :mod:`~dsbo.space.outcomes`: :class:`Outcomes`, the objectives (minimized or maximized, with
  thresholds) and outcome constraints (``"memory <= 8"``) users declare, and the one map
  between what an evaluator returns and the maximized outcomes dsbo stores.
- :mod:`~dsbo.space.wandb_syntax`: W&B's sweep parameter syntax (``values``, ``min``/``max``,
  ``distribution: log_uniform_values``, ...), read into the same types.

May import: :mod:`dsbo.errors` only.
"""

from dsbo.space.constraints import LinearConstraint, parse_constraint
from dsbo.space.outcomes import Objective, OutcomeConstraint, Outcomes
from dsbo.space.parameters import Choice, Fixed, Float, Int, Parameter, parameter_from_config
from dsbo.space.search_space import SearchSpace

__all__ = [
    "Choice",
    "Fixed",
    "Float",
    "Int",
    "LinearConstraint",
    "Objective",
    "OutcomeConstraint",
    "Outcomes",
    "Parameter",
    "SearchSpace",
    "parameter_from_config",
    "parse_constraint",
]
