"""The options every problem factory shares, and :func:`from_test_problem`.

Every factory registered with :func:`dsbo.problems.register_problem` accepts

- ``noise_std`` (``float >= 0`` or ``None``): standard deviation of the Gaussian observation
  noise that :meth:`Problem.evaluate` adds to the objectives when ``noise=True``;
- ``target``: the default point ``x^s`` (:attr:`Problem.default_point`) that sparsity-aware
  methods count changes from. ``"center"`` (the default) is the centre of the box,
  ``"zero"`` its lower corner (for a problem on the unit cube this is SEBO's ``x^s = 0``),
  and a sequence of ``d`` floats inside the bounds is taken as is.

The helpers below check these values and raise :class:`~dsbo.errors.ConfigError` with a
message that names the option and the value at fault.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import torch
from botorch.test_functions.base import BaseTestProblem
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

TARGETS = ("center", "zero")


def check_noise_std(noise_std: Any) -> float | None:
    """Return ``noise_std`` as a float (or ``None``); it must be finite and ``>= 0``."""
    if noise_std is None:
        return None
    if isinstance(noise_std, bool) or not isinstance(noise_std, int | float):
        raise ConfigError(f"noise_std={noise_std!r} must be a float >= 0 or None")
    if not math.isfinite(noise_std) or noise_std < 0:
        raise ConfigError(f"noise_std={noise_std!r} must be a finite float >= 0 or None")
    return float(noise_std)


def check_int(value: Any, option: str, minimum: int) -> int:
    """Return ``value`` as an int ``>= minimum`` (``option`` names it in the error)."""
    if isinstance(value, bool):
        raise ConfigError(f"{option}={value!r} must be an integer >= {minimum}")
    try:
        value = operator.index(value)
    except TypeError:
        raise ConfigError(f"{option}={value!r} must be an integer >= {minimum}") from None
    if value < minimum:
        raise ConfigError(f"{option}={value} must be an integer >= {minimum}")
    return value


def resolve_target(target: str | Sequence[float] | Tensor, bounds: Tensor, name: str) -> Tensor:
    """The default point named by ``target`` for a problem with ``2 x d`` ``bounds``.

    Args:
        target: ``"center"``, ``"zero"`` (the lower corner of the box) or ``d`` floats.
        bounds: ``2 x d`` lower and upper bounds.
        name: The problem's name, for error messages.

    Returns:
        A ``d``-vector (float64) inside the bounds.

    Example:
        >>> resolve_target("zero", torch.tensor([[0.0, 0.0], [1.0, 1.0]]), "demo").tolist()
        [0.0, 0.0]
    """
    bounds = bounds.to(torch.double)
    lb, ub = bounds
    d = bounds.shape[-1]
    if isinstance(target, str):
        if target == "center":
            return (lb + ub) / 2
        if target == "zero":
            return lb.clone()
        raise ConfigError(
            f"{name}: target={target!r} is not valid; use one of {list(TARGETS)} "
            f"or a list of {d} floats"
        )
    try:
        point = torch.as_tensor(target, dtype=torch.double).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        raise ConfigError(
            f"{name}: target={target!r} is not valid; use one of {list(TARGETS)} "
            f"or a list of {d} floats"
        ) from None
    if point.numel() != d:
        raise ConfigError(
            f"{name}: target has {point.numel()} entries, the problem has {d} dimensions"
        )
    outside = ~torch.isfinite(point) | (point < lb) | (point > ub)
    if outside.any():
        j = int(outside.nonzero()[0])
        raise ConfigError(
            f"{name}: target[{j}] = {point[j].item():.6g} is outside the bounds "
            f"[{lb[j].item():.6g}, {ub[j].item():.6g}]"
        )
    return point


def from_test_problem(
    name: str,
    test_problem: BaseTestProblem,
    target: str | Sequence[float] | Tensor = "center",
    **fields: Any,
) -> Problem:
    """Wrap a BoTorch test problem (already negated) in a :class:`Problem`.

    The default point comes from ``target``; every dimension is relevant; ``optimal_value``,
    ``noise_std`` and, for multi-objective problems, ``ref_point`` are read off the test
    problem unless given in ``fields`` (any other :class:`Problem` field).

    Example:
        >>> from botorch.test_functions.synthetic import Branin
        >>> problem = from_test_problem("branin", Branin(negate=True), target="zero")
        >>> problem.default_point.tolist()
        [-5.0, 0.0]
    """
    try:
        optimal_value = float(test_problem.optimal_value) + 0.0  # + 0.0 turns -0.0 into 0.0
    except (AttributeError, NotImplementedError):
        optimal_value = None
    ref_point = getattr(test_problem, "ref_point", None)
    fields.setdefault("optimal_value", optimal_value)
    fields.setdefault("noise_std", test_problem.noise_std)
    fields.setdefault("ref_point", None if ref_point is None else ref_point.clone())
    fields.setdefault("relevant_dims", tuple(range(test_problem.dim)))
    return Problem(
        name=name,
        test_problem=test_problem,
        default_point=resolve_target(target, test_problem.bounds, name),
        **fields,
    )
