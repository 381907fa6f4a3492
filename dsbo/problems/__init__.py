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
"""

# Importing the problem modules registers their problems.
from dsbo.problems import (  # noqa: F401
    black_box,
    classic,
    constrained,
    contextual,
    cost_aware,
    embedded,
    faiss_tuning,
    hpo,
    multi_objective,
    pool,
    scalarization,
    train_run,
)
from dsbo.problems.base import Problem
from dsbo.problems.registry import available_problems, get_problem, register_problem

__all__ = ["Problem", "available_problems", "get_problem", "register_problem"]
