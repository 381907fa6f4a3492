"""Warnings of the model stack, counted instead of printed.

Every GP fit can warn (linear_operator's ``NumericalWarning: A not p.d., added jitter``, a
BoTorch ``OptimizationWarning`` when L-BFGS-B stops early, an ``InputDataWarning``): in a
30-trial search that was a dozen console lines about numerics the search already handles
(issue 57; Optuna's GPSampler prints none). A campaign's proposals run inside
:class:`ModelWarnings`, which keeps the warnings whose category comes from the model stack
(:data:`MODEL_STACK`: linear_operator, GPyTorch, BoTorch, Lightning), or that a file of those
packages issued under a builtin category (BoTorch's ``RuntimeWarning: Optimization failed in
gen_candidates_scipy ... Trying again``), as counts by message, and passes every other warning
on unchanged (a user's own, a deprecation of ours). The counts are the
campaign's :attr:`~dsbo.campaign.Campaign.model_warnings`, reported by ``dsbo.minimize``'s
result (``result.warnings``) and written to the command line's ``warnings.log``.

``warnings.catch_warnings`` swaps process-wide state, so the capture is entered only under the
campaign's model lock (one proposal at a time in a process).
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from types import TracebackType

#: Packages whose warning categories are the model stack's (Lightning trains the zoo's curve
#: models inside freeze-thaw proposals).
MODEL_STACK = (
    "linear_operator",
    "gpytorch",
    "botorch",
    "lightning",
    "lightning_fabric",
    "pytorch_lightning",
)


def from_model_stack(category: type[Warning], filename: str = "") -> bool:
    """Whether ``category`` is defined by a package of :data:`MODEL_STACK`, or the warning was
    issued from a file inside one (``filename``, the warning's own)."""
    if category.__module__.split(".")[0] in MODEL_STACK:
        return True
    parts = Path(filename).parts
    return any(package in parts for package in MODEL_STACK)


class ModelWarnings:
    """A context manager that counts the model stack's warnings into ``counts`` (first line of
    the message, with its category's name) and re-issues every other warning as it came."""

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts
        self._context = warnings.catch_warnings(record=True)
        self._caught: list[warnings.WarningMessage] = []

    def __enter__(self) -> ModelWarnings:
        caught = self._context.__enter__()
        self._caught = caught if caught is not None else []
        warnings.simplefilter("always")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._context.__exit__(kind, error, traceback)
        for caught in self._caught:
            if from_model_stack(caught.category, caught.filename):
                first_line = str(caught.message).splitlines()[0] if str(caught.message) else ""
                self.counts[f"{caught.category.__name__}: {first_line}"] += 1
            else:
                warnings.warn_explicit(
                    caught.message,
                    caught.category,
                    caught.filename,
                    caught.lineno,
                    source=caught.source,
                )


__all__ = ["MODEL_STACK", "ModelWarnings", "from_model_stack"]
