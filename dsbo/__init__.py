"""dsbo: deep-surrogate Bayesian optimization.

PyTorch Lightning trains the surrogates, BoTorch turns them into decisions. The main entry
points are :func:`dsbo.problems.get_problem`, :func:`dsbo.surrogates.fit_surrogate`,
:class:`dsbo.campaign.Campaign` and the CLI ``python -m dsbo.optimize``.
"""

__version__ = "0.1.0"
