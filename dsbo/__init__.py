"""dsbo: deep-surrogate Bayesian optimization.

PyTorch Lightning trains the surrogates, BoTorch turns them into decisions. The main entry
points are :func:`dsbo.problems.get_problem`, :func:`dsbo.surrogates.fit_surrogate`,
:class:`dsbo.campaign.Campaign` and the command lines ``python -m dsbo.optimize``,
``dsbo.blackbox``, ``dsbo.sweep`` and ``dsbo.train``.

Packages by role, lowest first (each may import only the ones before it; the docs'
architecture page has the rules and a test checks them): :mod:`dsbo.errors` and
:mod:`dsbo.registry`; :mod:`dsbo.space` (parameters); :mod:`dsbo.storage` (the trial store);
:mod:`dsbo.problems`; :mod:`dsbo.surrogates` and :mod:`dsbo.data`; :mod:`dsbo.acquisition`;
:mod:`dsbo.contexts`; :mod:`dsbo.campaign`; :mod:`dsbo.analysis`; :mod:`dsbo.runtime`;
:mod:`dsbo.cli`. The zoo (``dsbo_zoo``, the folder ``models/``) never imports dsbo.
"""

from dsbo import _compat

_compat.install()

__version__ = "0.1.0"
