"""Benchmark problems: BoTorch test problems plus the metadata a BO campaign needs.

Get one by name with :func:`get_problem`; list them with :func:`available_problems`.

Example:
    >>> from dsbo.problems import get_problem
    >>> problem = get_problem("branin-50d", target="zero")
    >>> Y = problem.evaluate(problem.default_point.unsqueeze(0))  # 1 x 1, maximization sense

Modules: :mod:`~dsbo.problems.base` (the :class:`Problem`), :mod:`~dsbo.problems.registry`,
:mod:`~dsbo.problems.options` (options common to all problems),
:mod:`~dsbo.problems.classic`, :mod:`~dsbo.problems.multi_objective`, :mod:`~dsbo.problems.contextual`,
:mod:`~dsbo.problems.constrained`, :mod:`~dsbo.problems.embedded`,
:mod:`~dsbo.problems.scalarization` (MOBO-RS), :mod:`~dsbo.problems.cost_aware` (CostIDS) and
:mod:`~dsbo.problems.train_run` (a ``dsbo.train`` run per evaluation: hyperparameter tuning).

May import: errors, registry, space (never storage's backends, surrogates, acquisition or
anything above). BoTorch's test functions are the problems' own dependency.
"""

from dsbo.problems.registry import available_problems, get_problem, register_problem
from dsbo.registry import lazy_exports

# The problem modules register their problems when the registry first needs them
# (registry.CATALOGUE); importing the package loads none of them, nor torch.
__getattr__, __dir__ = lazy_exports(__name__, {"Problem": "dsbo.problems.base"})

__all__ = ["Problem", "available_problems", "get_problem", "register_problem"]
