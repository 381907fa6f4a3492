"""Warm starts for GP hyperparameter fits: what one fit of a campaign leaves for the next.

A BO campaign refits its surrogate after every observation, on data that differ from the
previous fit's by a point or a few, so the previous optimum of the hyperparameters is an
excellent start for the next fit. A factory that supports warm starts (``map-saas``, ``gp``)
takes a ``previous_fit`` (the :class:`FitState` of the previous fit, or ``None``) and leaves
the state of its own fit on the returned model as ``model.fit_state``;
:func:`~dsbo.surrogates.registry.fit_surrogate` passes them through per output, and
:class:`~dsbo.campaign.Campaign` keeps them in its store (meta key ``surrogate_fit``), so a
campaign resumed in a new process fits exactly as the uninterrupted one would.

A state is plain JSON: the model's named parameters (the raw, unconstrained
hyperparameters, float64 lists, which JSON round-trips exactly), any extra values the factory
needs to rebuild the same model (the MAP-SAAS taus), how many points it was fitted on and a
digest of their inputs, the per-member log posterior per point of the fit, and how many warm
fits followed the last full one. :func:`restart_reason` decides when a warm start is not
enough and the full (multi-start) fit runs instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import Tensor

#: Meta key under which a campaign keeps the fit states of its surrogate (one per output).
META_KEY = "surrogate_fit"


@dataclass
class FitState:
    """What a fit leaves for the next one (JSON-serializable via :meth:`to_json`).

    Args:
        surrogate: The registered name of the surrogate that was fitted.
        parameters: The model's named parameters, as nested float lists.
        num_points: Rows of ``train_X`` the fit saw.
        x_digest: :func:`digest` of those rows.
        log_posterior: The fit's per-member log posterior divided by ``num_points``.
        fits_since_restart: Warm fits since the last full fit (0 after a full fit).
        extra: Factory-specific values needed to rebuild the same model (e.g. ``taus``).
        start: How the fit started: ``"warm"`` or the reason of a full fit.
    """

    surrogate: str
    parameters: dict[str, Any]
    num_points: int
    x_digest: str
    log_posterior: list[float]
    fits_since_restart: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    start: str = "full"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(
        cls, value: Mapping[str, Any] | FitState | None, surrogate: str
    ) -> FitState | None:
        """The state in ``value`` if it is a well-formed state of ``surrogate``, else ``None``
        (a state of another surrogate, or of an older dsbo, is ignored: the fit starts cold)."""
        if isinstance(value, FitState):
            return value if value.surrogate == surrogate else None
        if not isinstance(value, Mapping) or value.get("surrogate") != surrogate:
            return None
        try:
            return cls(**value)
        except TypeError:
            return None


def digest(X: Tensor) -> str:
    """A SHA-256 digest of the rows of ``X`` (float64 bytes), for prefix checks."""
    return hashlib.sha256(
        X.detach().to(torch.double).contiguous().cpu().numpy().tobytes()
    ).hexdigest()


def parameters_of(model: torch.nn.Module) -> dict[str, Any]:
    """The model's named parameters as float64 nested lists."""
    return {
        name: p.detach().to(torch.double).cpu().tolist() for name, p in model.named_parameters()
    }


def load_parameters(model: torch.nn.Module, parameters: Mapping[str, Any]) -> bool:
    """Set the model's parameters from ``parameters`` (as :func:`parameters_of` left them).

    Returns ``False``, leaving the model untouched, unless every parameter of the model is
    given with its shape (a state of another dimension or ensemble size)."""
    values = {}
    for name, parameter in model.named_parameters():
        if name not in parameters:
            return False
        value = torch.as_tensor(parameters[name], dtype=parameter.dtype, device=parameter.device)
        if value.shape != parameter.shape or not torch.isfinite(value).all():
            return False
        values[name] = value
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(values[name])
    return True


def restart_reason(
    previous: FitState | None, X: Tensor, restart_every: int, restart_after_points: int
) -> str | None:
    """Why this fit must be a full one, or ``None`` when a warm start from ``previous`` will do.

    A full fit runs without a previous fit; every ``restart_every`` fits (``restart_every - 1``
    warm fits after each full one); when more than ``restart_after_points`` points were added;
    or when the previous fit's points are not the first rows of ``X`` (points were removed or
    reordered, e.g. by a selector).
    """
    if previous is None:
        return "no previous fit"
    if previous.fits_since_restart + 1 >= restart_every:
        return f"every {restart_every} fits"
    n = previous.num_points
    if n > X.shape[0] or digest(X[:n]) != previous.x_digest:
        return "the data are not the previous fit's plus new points"
    if X.shape[0] - n > restart_after_points:
        return f"{X.shape[0] - n} new points (more than {restart_after_points})"
    return None


def states_to_json(states: list[FitState | None]) -> list[dict[str, Any] | None] | None:
    """A model's ``fit_states`` as JSON for the store, or ``None`` if it keeps none."""
    if not any(state is not None for state in states):
        return None
    return [None if state is None else state.to_json() for state in states]
