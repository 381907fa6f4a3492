"""Search spaces: the parameters users write and their map to the model's box.

The lowest layer of dsbo next to :mod:`dsbo.errors`: it imports nothing else of dsbo, and
problems, surrogates, acquisition, the campaign and the command lines all read parameters
through it. :mod:`~dsbo.space.wandb_syntax` reads W&B's sweep parameter syntax (``values``,
``min``/``max``, ``distribution: log_uniform_values``, ...) into a bounded box with the map back
to the values a program receives; the sweep runner and the training-run problem share it.

May import: :mod:`dsbo.errors` only.
"""
