r"""The kernel of BoTorch's ``MixedSingleTaskGP``, over dsbo's one-hot categorical columns.

dsbo encodes an unordered ``Choice`` as one-hot columns. An ARD Matern kernel over them, with
BoTorch's dimension-scaled lengthscale prior (median lengthscale ~ ``sqrt(d)``), starts from
categories that are almost perfectly correlated: on a few points the GP cannot learn that one
category is worse by a constant, and a search keeps polishing the continuous inputs of the
first good category it met (``experiments/mixed_spaces.py``, ``cond-synthetic``). BoTorch's
``MixedSingleTaskGP`` (used by Ax for categoricals; after Ru et al., CoCaBO, ICML 2020) models
them with a categorical kernel in a sum-and-product structure,

.. math::

    k(x, x') = s_1 \big(k_c(x_c, x_c') + s_2\, k_h(x_h, x_h')\big) + s_3\, k_c(x_c, x_c')\, k_h(x_h, x_h'),

where :math:`k_c` is the continuous kernel (Matern-5/2, ARD, the dimension-scaled prior) over
the numeric columns and :math:`k_h` the categorical one. BoTorch's ``CategoricalKernel`` reads
integer-coded columns; :class:`OneHotCategoricalKernel` is the same kernel over one-hot groups:
for a categorical :math:`g` with one-hot block :math:`x_g`, the mismatch
:math:`\delta_g(x, x') = 1 - x_g^\top x_g'` is ``[x_g != x_g']`` on one-hot rows, and

.. math::

    k_h(x, x') = \exp\Big(-\frac{1}{G} \sum_g \delta_g(x, x') / \ell_g\Big),

positive semi-definite for any rows in :math:`[0, 1]` (an exponential of a linear kernel times
a constant), smooth in relaxed one-hot values, and equal to BoTorch's kernel on one-hot rows.
The sum term lets a category shift the objective by a constant everywhere, which the product
of an ARD Matern alone cannot express with few points.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import Kernel, ScaleKernel
from torch import Tensor


class OneHotCategoricalKernel(Kernel):
    """BoTorch's ``CategoricalKernel`` over one-hot groups: ``exp(-mean_g mismatch_g / l_g)``,
    one lengthscale per categorical (``ard_num_dims = len(groups)``).

    Args:
        groups: The columns of each categorical, relative to the kernel's ``active_dims``.
    """

    has_lengthscale = True

    def __init__(self, groups: Sequence[Sequence[int]], **kwargs) -> None:
        super().__init__(
            ard_num_dims=len(groups), lengthscale_constraint=GreaterThan(1e-6), **kwargs
        )
        # one lengthscale per group, read from the groups' columns: gpytorch's check that the
        # inputs have one column per lengthscale does not apply
        self.ard_num_dims = None
        membership = torch.zeros(sum(len(g) for g in groups), len(groups), dtype=torch.double)
        for i, group in enumerate(groups):
            membership[list(group), i] = 1.0
        self.register_buffer("membership", membership)

    def column_lengthscales(self) -> Tensor:
        """``... x 1 x columns``: each one-hot column's group lengthscale."""
        return self.lengthscale @ self.membership.to(self.lengthscale).transpose(-1, -2)

    def forward(
        self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False, **params
    ) -> Tensor:
        membership = self.membership.to(x1)
        if diag:
            matches = (x1 * x2) @ membership  # ... x n x G
        else:
            # matches_g(x, x') = sum over the group's columns of x_j x'_j
            matches = torch.einsum("...ij,...kj,jg->...ikg", x1, x2, membership)
        lengthscale = (
            self.lengthscale if diag else self.lengthscale.unsqueeze(-2)
        )  # ... x 1 (x 1) x G
        scaled = (1.0 - matches) / lengthscale
        if (
            last_dim_is_batch
        ):  # one kernel per categorical: ... x G x n (x m), as BoTorch's per column
            return torch.exp(-scaled.movedim(-1, -2 if diag else -3))
        return torch.exp(-scaled.mean(-1))


def mixed_covar_module(
    d: int, groups: Sequence[Sequence[int]], use_rbf_kernel: bool = False
) -> Kernel:
    """``MixedSingleTaskGP``'s sum-and-product kernel with :class:`OneHotCategoricalKernel`
    over the one-hot ``groups`` (absolute column indices of ``d`` inputs) and BoTorch's
    dimension-scaled Matern-5/2 (or RBF) over the other columns."""
    hot = sorted(j for group in groups for j in group)
    position = {j: i for i, j in enumerate(hot)}
    relative = [[position[j] for j in group] for group in groups]
    numeric = sorted(set(range(d)) - set(hot))

    def categorical() -> Kernel:
        return OneHotCategoricalKernel(relative, active_dims=hot)

    if not numeric:
        return ScaleKernel(categorical())

    def continuous() -> Kernel:
        return get_covar_module_with_dim_scaled_prior(
            ard_num_dims=len(numeric), active_dims=numeric, use_rbf_kernel=use_rbf_kernel
        )

    sum_kernel = ScaleKernel(continuous() + ScaleKernel(categorical()))
    product_kernel = ScaleKernel(continuous() * categorical())
    return sum_kernel + product_kernel


__all__ = ["OneHotCategoricalKernel", "mixed_covar_module"]
