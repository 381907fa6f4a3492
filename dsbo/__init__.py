"""dsbo: deep-surrogate Bayesian optimization.

PyTorch Lightning trains the surrogates, BoTorch turns them into decisions. The main entry
points are :func:`dsbo.minimize` / :func:`dsbo.maximize` (a Python function over a space of
:class:`dsbo.Float`, :class:`dsbo.Int`, :class:`dsbo.Choice` and :class:`dsbo.Fixed`
parameters) and :class:`dsbo.Tuner` (the same as ask/tell), :func:`dsbo.problems.get_problem`,
:func:`dsbo.surrogates.fit_surrogate`, :class:`dsbo.campaign.Campaign` and the command lines
``python -m dsbo.optimize``, ``dsbo.blackbox``, ``dsbo.sweep``, ``dsbo.train`` and
``dsbo.report`` (also :func:`dsbo.report`, the HTML report of a run).

Example:
    >>> import dsbo
    >>> space = {"lr": dsbo.Float(1e-4, 1e-1, log=True), "optimizer": dsbo.Choice(["adam", "sgd"])}
    >>> result = dsbo.minimize(train_and_score, space, budget=40)
    >>> result.best_params

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

#: The top-level names and the module each comes from; imported on first use (PEP 562), so
#: ``import dsbo`` stays cheap (the search-space types need no torch).
_EXPORTS = {
    "Float": "dsbo.space",
    "Int": "dsbo.space",
    "Choice": "dsbo.space",
    "Fixed": "dsbo.space",
    "SearchSpace": "dsbo.space",
    "minimize": "dsbo.runtime.tuner",
    "maximize": "dsbo.runtime.tuner",
    "Tuner": "dsbo.runtime.tuner",
    "report": "dsbo.report",
}
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dsbo' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
