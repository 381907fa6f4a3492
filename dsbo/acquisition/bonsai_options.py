r"""BONSAI's options: each one checked when the post-processor is made, resolved at each call.

:class:`~dsbo.acquisition.bonsai.Bonsai` is configured from a campaign's ``postprocess``
option (``{bonsai: {rho: 0.2, ...}}``), so every value is checked here with a message that
names the option at fault (``postprocess.bonsai.<name>``), before the campaign's first
evaluation:

- ``rho`` (:func:`parse_rho`): a number in ``[0, 1]`` (Daulton et al., "BONSAI: Bayesian
  Optimization with Natural Simplicity and Interpretability": ``0.2`` with EI-type
  acquisitions) or the schedule ``"c/t"``, ``rho_t = min(1, c / t)`` (``1/t`` with UCB,
  Corollary A.2), resolved by :func:`rho_at`;
- ``default`` (:func:`check_default`, resolved against the problem by :func:`default_point`):
  the problem's default point, the first evaluated point, ``d`` model coordinates, or user
  values by parameter name;
- ``inequality_constraints`` (:func:`check_constraints`, turned into a feasibility mask by
  :func:`linear_feasibility`): BoTorch's ``(indices, coefficients, rhs)`` triples, meaning
  ``sum_i coefficients[i] * x[indices[i]] >= rhs``;
- the numbers ``outcome_floor``, ``repeat_tol``, ``max_exact`` and ``tol``
  (:func:`check_number`, :func:`check_max_exact`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from dsbo.acquisition.base import History
from dsbo.acquisition.pruning import MaskFn
from dsbo.errors import ConfigError
from dsbo.problems.base import Problem

#: Slack allowed on a linear constraint ``sum coef * x[idx] >= rhs`` (times ``max(1, |rhs|)``).
LINEAR_TOL = 1e-8
#: Largest ``max_exact``: exact pruning scores up to ``2^max_exact`` subsets.
MAX_EXACT_LIMIT = 20
#: Where BONSAI's options live in a campaign's configuration (the prefix of every message).
OPTION = "postprocess.bonsai"


def parse_rho(rho: float | str) -> tuple[float, bool]:
    """``(c, schedule)``: ``rho`` as a constant ``c`` in ``[0, 1]``, or the schedule ``c / t``.

    ``"1/t"`` and ``"c/t"`` (``c > 0``, finite) give ``(c, True)``; a number gives
    ``(rho, False)``.
    """
    if isinstance(rho, str):
        match = re.fullmatch(r"\s*([0-9.eE+-]*)\s*/\s*t\s*", rho)
        try:
            c = float(match.group(1) or 1.0) if match else math.nan
        except ValueError:
            c = math.nan
        if not c > 0 or not math.isfinite(c):
            raise ConfigError(
                f"{OPTION}.rho={rho!r}: use a number in [0, 1] or the schedule '1/t' ('c/t')"
            )
        return c, True
    if isinstance(rho, bool) or not isinstance(rho, int | float) or not 0 <= rho <= 1:
        raise ConfigError(f"{OPTION}.rho must be a number in [0, 1] or '1/t', got {rho!r}")
    return float(rho), False


def rho_at(c: float, schedule: bool, t: int) -> float:
    """``rho_t``: the constant ``c``, or ``min(1, c / t)`` for the schedule (``t >= 1``)."""
    return min(1.0, c / max(int(t), 1)) if schedule else c


def check_number(name: str, value: Any, low: float, high: float, high_open: bool) -> float:
    """``value`` as a float in ``[low, high]`` (``[low, high)`` with ``high_open``).

    Booleans are refused although Python counts them as integers: ``tol: true`` in a
    configuration file is a mistake, not ``1``.
    """
    number = not isinstance(value, bool) and isinstance(value, int | float)
    inside = number and low <= value and (value < high if high_open else value <= high)
    if not inside:
        if high == math.inf:
            what = f"a number >= {low:g}"
        else:
            what = f"a number in [{low:g}, {high:g}{')' if high_open else ']'}"
        raise ConfigError(f"{OPTION}.{name} must be {what}, got {value!r}")
    return float(value)


def check_max_exact(max_exact: Any) -> int:
    """``max_exact``: an integer in ``[1, MAX_EXACT_LIMIT]`` (exact pruning is exponential)."""
    if (
        not isinstance(max_exact, int)
        or isinstance(max_exact, bool)
        or not 1 <= max_exact <= MAX_EXACT_LIMIT
    ):
        raise ConfigError(
            f"{OPTION}.max_exact must be an integer in [1, {MAX_EXACT_LIMIT}] (exact pruning "
            f"scores up to 2^max_exact subsets), got {max_exact!r}"
        )
    return max_exact


def check_default(default: Any) -> dict[str, Any] | str | Tensor | None:
    """The ``default`` option, checked: ``None`` (the problem's), ``"first"``, user values
    (``{name: value}``, encoded against the problem's space at the call) or a vector."""
    if default is None:
        return None
    if isinstance(default, Mapping):  # {name: user value}: encoded against the problem's space
        return dict(default)
    if isinstance(default, str):
        if default == "problem":
            return None
        if default != "first":
            raise ConfigError(
                f"{OPTION}.default={default!r}: use null (the problem's default point), "
                "'first' (the first evaluated point) or a list of d numbers"
            )
        return default
    try:
        value = torch.as_tensor(default, dtype=torch.double)
    except (TypeError, ValueError, RuntimeError):
        value = None
    if value is None or value.ndim != 1 or value.numel() == 0 or not torch.isfinite(value).all():
        raise ConfigError(f"{OPTION}.default must be a list of finite numbers, got {default!r}")
    return value


def default_point(
    default: dict[str, Any] | str | Tensor | None, history: History, problem: Problem
) -> Tensor:
    """The default point ``x^def`` (a ``d``-vector) of this call, for a checked ``default``.

    A vector given in the configuration is checked against the problem here (its length, the
    bounds, integer values on integer dimensions), since the problem is known only now.
    """
    d = problem.dim
    if default is None:
        return problem.default_point.to(torch.double)
    if isinstance(default, dict):
        point = problem.space.default(default, where=f"{OPTION}.default")
        return torch.tensor(point, dtype=torch.double)
    if isinstance(default, str):  # "first"
        if history.X.numel() == 0:
            raise ConfigError(f"{OPTION}.default='first' needs an evaluated point")
        return history.X[0].to(torch.double)
    if default.numel() != d:
        raise ConfigError(
            f"{OPTION}.default has {default.numel()} entries, {problem.name} has {d} dimensions"
        )
    lb, ub = problem.bounds
    if ((default < lb) | (default > ub)).any():
        raise ConfigError(f"{OPTION}.default lies outside the bounds of {problem.name}")
    integer = list(problem.integer_dims)
    if integer and not torch.equal(default[integer], default[integer].round()):
        raise ConfigError(
            f"{OPTION}.default must be integer-valued on the integer dimensions {integer}"
        )
    return default


def check_constraints(constraints: Any) -> list[tuple[Tensor, Tensor, float]]:
    """``inequality_constraints`` as ``(indices, coefficients, rhs)`` tensors, checked.

    Only intra-point constraints (a list of integer indices) are taken; every coefficient and
    the right-hand side must be finite.
    """
    if constraints is None:
        return []
    if isinstance(constraints, str | bytes) or not isinstance(constraints, Sequence):
        raise ConfigError(
            f"{OPTION}.inequality_constraints must be a list of (indices, coefficients, "
            f"rhs), got {constraints!r}"
        )
    checked = []
    for k, item in enumerate(constraints):
        where = f"{OPTION}.inequality_constraints[{k}]"
        try:
            indices, coefficients, rhs = item
            idx = torch.as_tensor(indices)
            coef = torch.as_tensor(coefficients, dtype=torch.double)
            rhs = float(rhs)
        except (TypeError, ValueError, RuntimeError):
            raise ConfigError(
                f"{where} must be (indices, coefficients, rhs), got {item!r}"
            ) from None
        if idx.ndim != 1 or idx.is_floating_point() or idx.dtype == torch.bool:
            raise ConfigError(
                f"{where}: indices must be a list of integers (intra-point constraints "
                f"only), got {indices!r}"
            )
        if coef.shape != idx.shape or not torch.isfinite(coef).all() or not math.isfinite(rhs):
            raise ConfigError(
                f"{where}: needs one finite coefficient per index and a finite rhs, got {item!r}"
            )
        if idx.numel() == 0 or (idx < 0).any():
            raise ConfigError(f"{where}: indices must be non-negative, got {indices!r}")
        checked.append((idx.long(), coef, rhs))
    return checked


def linear_feasibility(constraints: list[tuple[Tensor, Tensor, float]], d: int) -> MaskFn | None:
    """The mask ``X (b x d) -> b`` of rows that satisfy every linear constraint, or ``None``.

    A constraint holds within ``LINEAR_TOL * max(1, |rhs|)``, so that the dense candidate the
    optimizer returned on the constraint's boundary stays feasible.
    """
    if not constraints:
        return None
    for k, (idx, _, _) in enumerate(constraints):
        if int(idx.max()) >= d:
            raise ConfigError(
                f"{OPTION}.inequality_constraints[{k}]: index {int(idx.max())} >= d = {d}"
            )

    def feasible(X: Tensor) -> Tensor:
        ok = torch.ones(X.shape[0], dtype=torch.bool)
        for idx, coef, rhs in constraints:
            ok &= X[:, idx] @ coef.to(X) >= rhs - LINEAR_TOL * max(1.0, abs(rhs))
        return ok

    return feasible
