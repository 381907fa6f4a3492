"""Command-line programs: parsing and printing only.

``python -m dsbo.optimize`` (:mod:`~dsbo.cli.optimize`, with its config in
:mod:`~dsbo.cli.config`, read by :mod:`~dsbo.cli.strict_yaml`), ``python -m dsbo.blackbox``
(:mod:`~dsbo.cli.blackbox`: ask/tell from the shell), ``python -m dsbo.sweep``
(:mod:`~dsbo.cli.sweep`) and ``python -m dsbo.train`` (:mod:`~dsbo.cli.train`: LightningCLI
over the zoo). Each program imports the heavy libraries it needs when it needs them, so
``--help`` and short commands start fast.

May import every package of dsbo; nothing imports it.
"""
