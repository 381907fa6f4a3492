"""Outcomes as evaluators and users report them, parsed strictly.

One number per outcome, given as a number, a flat list, a tensor/array, or a mapping with
exactly the outcome names. Strings, booleans, nested lists, missing or unknown names are an
:class:`~dsbo.errors.OutcomeError`; nothing is coerced. :meth:`Campaign.tell
<dsbo.campaign.campaign.Campaign.tell>` and ``python -m dsbo.blackbox tell`` read outcomes with
:func:`parse_outcomes`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

from dsbo.errors import EvaluationError, OutcomeError


def parse_outcomes(values: Any, names: Sequence[str]) -> list[float]:
    """One float per outcome name from what an evaluator (or a user) reported.

    Accepts a real number (one outcome), a flat list or tuple of real numbers, a numeric
    tensor or array with one element per outcome, or a mapping with exactly the outcome
    names as keys. Non-finite values are returned as they are (the caller records them as a
    failure); nothing is ever converted from a string or a boolean.

    Raises:
        OutcomeError: naming the missing or unknown outcome, the wrong length or the value
            that is not a number.
    """
    m = len(names)
    if isinstance(values, Mapping):
        missing = [n for n in names if n not in values]
        unknown = [k for k in values if k not in names]
        if missing or unknown:
            raise OutcomeError(
                "outcomes must be exactly " + ", ".join(names)
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {unknown}" if unknown else "")
            )
        flat = [values[n] for n in names]
    elif hasattr(values, "dtype") and hasattr(values, "reshape"):  # a tensor or an array
        array = values.detach().cpu().numpy() if hasattr(values, "detach") else values
        if array.dtype.kind not in "iuf":
            raise OutcomeError(f"outcomes must be numbers, got an array of {array.dtype}")
        flat = array.reshape(-1).tolist()
    elif isinstance(values, list | tuple):
        flat = list(values)
    else:
        flat = [values]
    for name, value in zip(names, flat, strict=False):
        if isinstance(value, bool) or not isinstance(value, Real):
            raise OutcomeError(f"outcome {name!r} must be a number, got {value!r}")
    if len(flat) != m:
        raise OutcomeError(
            f"outcomes must be {m} number(s) ({', '.join(names)}), got {len(flat)} value(s)"
        )
    return [float(v) for v in flat]


def outcome_vector(values: Any, names: Sequence[str]) -> list[float]:
    """:func:`parse_outcomes`, and every value finite.

    Raises:
        OutcomeError: if the values are malformed.
        EvaluationError: naming the outcomes that are NaN or infinite.
    """
    flat = parse_outcomes(values, names)
    bad = [n for n, v in zip(names, flat, strict=True) if not math.isfinite(v)]
    if bad:
        raise EvaluationError(f"evaluation returned a non-finite value for {bad}")
    return flat
