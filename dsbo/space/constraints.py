r"""Linear parameter constraints written as users write them: ``"x + y <= 1"``,
``"lr_max >= 2 * lr_min"``, ``"2*a - 0.5*b + 1 >= c"``.

A constraint is parsed into ``sum_i c_i p_i (<= | >=) r`` over named parameters (as Ax's
``ParameterConstraint``) and turned into BoTorch's form ``sum_i a_i x[j_i] >= b`` over the
model's columns, which ``optimize_acqf(inequality_constraints=...)`` enforces.

Which parameters may appear: floats and integers on a linear scale (their column holds the
value itself, so the constraint is linear in the columns), never a conditional parameter (the
constraint would bind values the evaluator never sees). One more form is linear in the model:
a ratio of two log-scale parameters, ``"lr_max >= 2 * lr_min"`` with both on a log scale, is
``ln lr_max - ln lr_min >= ln 2``. Any other mix of log-scale parameters is refused.

Example:
    >>> parse_constraint("lr_max >= 2 * lr_min")
    LinearConstraint(text='lr_max >= 2 * lr_min', coefficients={'lr_max': 1.0, 'lr_min': -2.0}, rhs=0.0)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from dsbo.errors import ConfigError

_TERM = re.compile(
    r"""\s*(?P<sign>[+-])?\s*
        (?:(?P<coef>\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)\s*(?P<times>\*)?\s*)?
        (?P<name>[A-Za-z_][A-Za-z0-9_.]*)?\s*""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class LinearConstraint:
    """``sum_p coefficients[p] * p >= rhs`` over named parameters (user values); ``text`` is
    what the user wrote (a ``<=`` constraint is stored negated)."""

    text: str
    coefficients: dict[str, float]
    rhs: float

    def holds(self, values: dict[str, float], tol: float = 1e-9) -> bool:
        lhs = sum(c * float(values[p]) for p, c in self.coefficients.items())
        return lhs >= self.rhs - tol * max(1.0, abs(self.rhs))


def _side(text: str, where: str) -> tuple[dict[str, float], float]:
    """``{name: coefficient}`` and the constant of one side of a constraint."""
    coefficients: dict[str, float] = {}
    constant = 0.0
    pos, first = 0, True
    text = text.strip()
    if not text:
        raise ConfigError(f"{where}: a side of the constraint is empty")
    while pos < len(text):
        m = _TERM.match(text, pos)
        if m is None or m.end() == pos or (not first and m.group("sign") is None):
            raise ConfigError(
                f"{where}: cannot read {text[pos:]!r}; write terms like '2 * x' joined by + or -"
            )
        sign = -1.0 if m.group("sign") == "-" else 1.0
        coef, name = m.group("coef"), m.group("name")
        if coef is None and name is None:
            raise ConfigError(
                f"{where}: cannot read {text[pos:]!r}; write terms like '2 * x' joined by + or -"
            )
        if m.group("times") and name is None:
            raise ConfigError(f"{where}: '*' must be followed by a parameter name")
        value = sign * (float(coef) if coef is not None else 1.0)
        if name is None:
            constant += value
        else:
            coefficients[name] = coefficients.get(name, 0.0) + value
        pos, first = m.end(), False
    return coefficients, constant


def parse_constraint(text: str, field: str = "parameter_constraints") -> LinearConstraint:
    """Parse ``"<linear expression> <= | >= <linear expression>"`` (``field``: the option's
    name in error messages).

    Raises:
        ConfigError: for anything that is not a linear constraint (no or two comparison
            signs, products of parameters, a constraint with no parameter).
    """
    where = f"{field}: {text!r}"
    if not isinstance(text, str):
        raise ConfigError(
            f"{field}: each constraint is a string such as 'x + y <= 1', got {text!r}"
        )
    ops = re.findall(r"<=|>=|==|<|>|=", text)
    if len(ops) != 1 or ops[0] not in ("<=", ">="):
        raise ConfigError(f"{where}: write one comparison, <= or >=, e.g. 'x + y <= 1'")
    left, right = text.split(ops[0])
    lc, lk = _side(left, where)
    rc, rk = _side(right, where)
    coefficients = dict(lc)
    for name, c in rc.items():
        coefficients[name] = coefficients.get(name, 0.0) - c
    rhs = rk - lk
    if ops[0] == "<=":
        coefficients = {k: -v for k, v in coefficients.items()}
        rhs = -rhs
    coefficients = {k: v for k, v in coefficients.items() if v != 0.0}
    if not coefficients:
        what = "parameter" if field == "parameter_constraints" else "outcome"
        raise ConfigError(f"{where}: names no {what} (or its terms cancel)")
    return LinearConstraint(text.strip(), coefficients, float(rhs) + 0.0)


def log_ratio_form(constraint: LinearConstraint) -> tuple[str, str, float] | None:
    """``(p, r, ln(c))`` when ``constraint`` reads ``a p - b r >= 0`` with ``a, b > 0``, i.e.
    ``ln p - ln r >= ln(b / a)`` for positive ``p`` and ``r``; ``None`` for any other form."""
    if constraint.rhs != 0.0 or len(constraint.coefficients) != 2:
        return None
    (p, a), (r, b) = sorted(constraint.coefficients.items(), key=lambda kv: -kv[1])
    if not (a > 0 > b):
        return None
    return p, r, math.log(-b / a)


__all__ = ["LinearConstraint", "log_ratio_form", "parse_constraint"]
