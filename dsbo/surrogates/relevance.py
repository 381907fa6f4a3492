r"""How far apart two inputs are for a fitted surrogate: lengthscale-scaled distances.

For a stationary kernel with per-input lengthscales ``l_j`` (ARD; MAP-SAAS, SAASBO and the GPs
here), the kernel depends on the scaled distance

    r(x, x') = sqrt( sum_j ((u_j - u'_j) / l_j)^2 ),   u = the model's transformed input,

so two points with a small ``r`` are nearly the same point *for the surrogate*: their
correlation is ``k(r) ~ 1 - (5/6) r^2`` for Matern-5/2 (``r = 0.01``: ``1 - 8e-5``), however
much they differ in coordinates the model considers irrelevant (MAP-SAAS: ``l_j`` up to 1e4).
SEBO's near-repeat guard (:class:`dsbo.acquisition.sebo.SparsityPolicy`, ``repeat_tol``) uses
it. Ensembles and model lists are conservative: the smallest lengthscale over members per
input (the largest distance), and the largest distance over a model list's outputs. Models
without lengthscales (the neural zoo) have no scaled distance (``None``).
"""

from __future__ import annotations

import torch
from botorch.models import ModelList
from botorch.models.model import Model
from torch import Tensor


def member_lengthscales(model: Model, d: int) -> Tensor | None:
    """``members x d``: the per-input lengthscales of every kernel of ``model`` and every
    ensemble member (one row each; a shared lengthscale is broadcast; a kernel over some columns
    has an infinite lengthscale on the others); ``None`` if it has none."""
    found: list[Tensor] = []
    for module in model.modules():
        lengthscale = (
            getattr(module, "lengthscale", None) if hasattr(module, "ard_num_dims") else None
        )
        if not isinstance(lengthscale, Tensor):
            continue
        if hasattr(module, "column_lengthscales"):  # one lengthscale per categorical's columns
            lengthscale = module.column_lengthscales()
        lengthscale = lengthscale.detach().reshape(-1, lengthscale.shape[-1])
        active = getattr(module, "active_dims", None)
        if active is not None and lengthscale.shape[-1] in (1, len(active)):
            # a kernel over some columns: the others do not move it (an infinite lengthscale)
            full = torch.full((lengthscale.shape[0], d), torch.inf, dtype=lengthscale.dtype)
            full[:, active.tolist()] = lengthscale.expand(-1, len(active))
            found.append(full)
        elif lengthscale.shape[-1] in (1, d):
            found.append(lengthscale.expand(-1, d))
    if not found:
        return None
    return torch.cat(found).to(torch.double)


def input_lengthscales(model: Model, d: int) -> Tensor | None:
    """The ``d`` per-input lengthscales of ``model``'s kernels, the smallest over ensemble
    members and kernels; ``None`` if it has none."""
    lengthscales = member_lengthscales(model, d)
    return None if lengthscales is None else lengthscales.min(dim=0).values


def scaled_distance(model: Model, X: Tensor, seen: Tensor) -> Tensor | None:
    """``n x m`` scaled distances ``r`` between rows of ``X`` and of ``seen`` (raw
    coordinates), in the model's input space; ``None`` if the model has no lengthscales."""
    if isinstance(model, ModelList):
        parts = [scaled_distance(m, X, seen) for m in model.models]
        if any(p is None for p in parts):
            return None
        return torch.stack(parts).max(dim=0).values
    lengthscales = input_lengthscales(model, X.shape[-1])
    if lengthscales is None:
        return None
    with torch.no_grad():
        U, V = (_model_inputs(model, Z.to(torch.double)) for Z in (X, seen))
    return torch.cdist(U / lengthscales, V / lengthscales)


def near_repeats(model: Model, X: Tensor, seen: Tensor, tol: float) -> Tensor:
    """``n`` booleans: the row of ``X`` is within scaled distance ``tol`` of a row of ``seen``
    (the same point for the surrogate); all false for a model without lengthscales."""
    distance = scaled_distance(model, X, seen) if seen.shape[0] else None
    if distance is None:
        return torch.zeros(X.shape[0], dtype=torch.bool)
    return (distance < tol).any(dim=-1)


def _model_inputs(model: Model, X: Tensor) -> Tensor:
    """``X`` through the model's input transform (e.g. ``Normalize``), if it has one."""
    transform = getattr(model, "input_transform", None)
    if transform is None:
        return X
    was_training = transform.training
    transform.eval()
    try:
        return transform(X)
    finally:
        transform.train(was_training)
