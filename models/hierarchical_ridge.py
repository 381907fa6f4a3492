r"""Algorithm 6.2 of the Paria thesis (ch. 6, section 6.6): HiReD's two-stage estimator, in
closed form.

The theory of HiReD (Theorem 6.1) studies a linear model of a root and its :math:`L` leaves on a
shared basis :math:`B` (``T x K``): the root's coefficients are estimated by least squares, then
each leaf's by ridge regression towards the root's, the linear analogue of HiReD's embedding
regularizer (:mod:`dsbo_zoo.hired_regularizer`). :func:`hierarchical_ridge` computes both steps
exactly, so that the theorem's error bound can be checked against the expected error
(``tests/models/test_hired.py``).

Example:
    >>> import torch
    >>> B = torch.eye(4, 2, dtype=torch.double)
    >>> root, leaves = hierarchical_ridge(B, torch.tensor([1.0, 2, 0, 0]).double(),
    ...                                   torch.tensor([[1.0, 2, 0, 0]]).double(), 0.5)
    >>> root.tolist(), leaves.shape
    ([1.0, 2.0], torch.Size([1, 2]))
"""

from __future__ import annotations

import torch
from torch import Tensor


def hierarchical_ridge(
    B: Tensor, y_root: Tensor, y_leaves: Tensor, lambda_e: float
) -> tuple[Tensor, Tensor]:
    r"""Algorithm 6.2 (parameter recovery) in closed form, for a root with :math:`L` leaves.

    Step 1, the root by least squares: :math:`\hat\theta_0 = (B^\top B)^{-1} B^\top y_0`.
    Step 2, each leaf by ridge regression towards the root (the change of variables of the
    proof's Step II, Eq. 6.13):

    .. math::  \hat\theta_n = \arg\min_\theta \tfrac1T\|y_n - B\theta\|^2 + \lambda_E\|\hat\theta_0 - \theta\|^2
               = (\Sigma + \lambda_E I)^{-1}\big(B^\top y_n / T + \lambda_E \hat\theta_0\big),
               \quad \Sigma = B^\top B / T.

    ``lambda_e = 0`` gives the unregularized estimator of Eq. 6.8. Theorem 6.1 takes
    :math:`\lambda_E = \sigma^2 K / (T \beta^2)` (Corollary 6.1 with :math:`d = K`,
    :math:`n = T`, the bound :math:`\beta` on :math:`\|\theta_n - \theta_0\|`).

    Checked against the proof (section 6.7.2): the theorem's bound (Eq. 6.9)
    :math:`3\frac{\sigma^2K}{T}\frac{1}{1 + \sigma^2K/(Tr^2\beta^2)} + 6\frac{\sigma^2K}{TL}`
    equals the proof's last line :math:`3\frac{r^2\beta^2\sigma^2K}{Tr^2\beta^2 + \sigma^2K} +
    6\frac{\sigma^2K}{TL}`; the root's :math:`\sigma^2K/(TL)` (Step I) holds because the root of
    coherent mean-unit data has noise variance :math:`\sigma^2/L` (Eq. 6.11). Slips in the
    extracted text: :math:`\|\hat\theta_n - \theta_n\|_\Sigma^2 = \|B(\hat\theta_n -
    \theta_n)\|^2` lacks the :math:`1/T` (:math:`\Sigma = B^\top B/T`, as section 6.7.4 writes);
    Step II's :math:`\hat\psi_n - \tilde\psi_n` line writes :math:`\tilde\theta_0` for the true
    :math:`\theta_0`; the proof of Lemma 6.1 calls the Lasso "Algorithm 6.2" (it is 6.1). The
    :math:`1/L` rate of the leaf error needs :math:`\beta = O(\sqrt{K/(LT)})`; for a fixed
    :math:`\beta` it levels off at the first term (``tests/models/test_hired.py`` checks both
    with the exact expected error).

    Args:
        B: ``T x K`` basis (the support recovered by Algorithm 6.1).
        y_root: ``... x T`` root series (mean units: the mean of its leaves).
        y_leaves: ``... x L x T`` leaf series (leading dimensions: independent problems).
        lambda_e: :math:`\lambda_E \ge 0`.

    Returns:
        :math:`\hat\theta_0` (``... x K``) and :math:`\hat\theta_n` (``... x L x K``).
    """
    T, K = B.shape
    sigma = B.T @ B / T
    theta0 = torch.linalg.solve(B.T @ B, (y_root @ B).unsqueeze(-1)).squeeze(-1)
    rhs = y_leaves @ B / T + lambda_e * theta0.unsqueeze(-2)  # ... x L x K
    ridge = sigma + lambda_e * torch.eye(K, dtype=B.dtype, device=B.device)
    leaves = torch.linalg.solve(ridge, rhs.mT).mT
    return theta0, leaves
