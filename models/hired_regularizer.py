r"""HiReD's hierarchical embedding regularizer (Paria thesis, ch. 6) and the scale of :math:`\lambda_E`.

HiReD's basis decomposition forecasts node :math:`i` as :math:`\langle \theta_i, b\rangle`
(:mod:`dsbo_zoo.hired`); the forecasts are coherent exactly when the embeddings have the *mean
property* (Eq. 6.3) :math:`\theta_p = \frac{1}{|\mathcal L(p)|}\sum_{i\in\mathcal L(p)}\theta_i`
(:func:`mean_property_embeddings`), which the regularizer (Eq. 6.4)

.. math::  E_{\rm reg}(\theta) = \sum_{p=1}^N \sum_{i \in \mathcal L(p)} \|\theta_p - \theta_i\|_2^2

encourages (for fixed leaves it is minimized by the mean property). It is computed over the
hierarchy's ``leaf_pairs`` (every :math:`(p, i)`, :math:`i \in \mathcal L(p)`, :math:`p \ne i`)
with two ``index_select`` and a sum of squares, no Python loop (:func:`embedding_regularizer`).

**The loss and the scale of** :math:`\lambda_E`. Eq. 6.5 is a *sum* of absolute errors over
the mini-batch plus :math:`\lambda_E E_{\rm reg}`. We minimize, per mini-batch of
:math:`n_b = B F` values and the :math:`P` pairs :math:`(p, i)` (``leaf_pairs``),

.. math::  \ell = \frac{1}{n_b}\sum_{i}\sum_{f}|y^{(i)}_f - \hat y^{(i)}_f| + \lambda_E R(\theta),
           \qquad R(\theta) = \frac{\bar E_{\rm reg}(\theta)}{V(\theta)}, \quad
           \bar E_{\rm reg} = \frac{E_{\rm reg}}{P}, \quad
           V = \frac1L\sum_{i\ \rm leaf}\|\theta_i - \bar\theta\|_2^2

(:func:`relative_embedding_regularizer`). Two changes to Eq. 6.5, for two reasons:

- *Per value and per pair* (Eq. 6.5 divided by :math:`n_b`, :math:`E_{\rm reg}` by
  :math:`P`), the normalization of Algorithm 6.2 (:func:`~dsbo_zoo.hierarchical_ridge.hierarchical_ridge`: a per-value
  prediction loss plus :math:`\lambda_E` times one squared distance per leaf): ``lambda_e`` does
  not depend on the batch size nor on the hierarchy's size. Table 6.5's values act on neither
  scale: Tourism's :math:`7.25\cdot 10^{-8}` with its :math:`P \approx 1200` pairs and
  :math:`n_b = 2048` values is :math:`\approx 4\cdot 10^{-8}` per value and pair, a
  regularizer :math:`\sim 10^{-5}` of the loss or less, so ``lambda_e=7.2498e-8`` and
  ``lambda_e=0`` were the same model (two seeds of it).
- *Relative to the leaves' spread* (:math:`/V`): the forecast depends on
  :math:`\langle\theta_i, b\rangle` only, so :math:`\theta \to c\,\theta`,
  :math:`b \to b / c` leaves the MAE unchanged while :math:`\bar E_{\rm reg}` falls by
  :math:`c^2`: the optimizer escapes any fixed :math:`\lambda_E \bar E_{\rm reg}` by shrinking
  the embeddings (measured on the synthetic hierarchy below: with :math:`\lambda_E \bar
  E_{\rm reg}`, :math:`\lambda_E = 0.1` and 1 (lr 0.07 and 0.01) ended at shares of 0.4% and
  0.5% of the loss, :math:`\bar E_{\rm reg}` ten times smaller at 1). :math:`R` is invariant to that rescaling and to a
  common shift, has the same minimizer in the ancestors for fixed leaves (the mean property:
  :math:`V` depends on the leaves only), and lies in :math:`[L/P, 1]` at the mean property on a
  tree whose leaves have one depth (1: leaves as spread within every subtree as overall;
  :math:`L/P`: leaves equal within each of the root's subtrees). :math:`\lambda_E` is then the
  loss (in MAE units, i.e. the scaled data's standard deviations) charged for the whole spread.

Default ``lambda_e = 0.2`` (:data:`DEFAULT_LAMBDA_E`), chosen by dsbo's own BO
(``configs/bo/hired-tourismsmall.yaml``, 30 ``dsbo.train`` runs on tourismsmall's validation
window, ``experiments/results/hired_tuning``): the seven best trials had :math:`\lambda_E` in
0.17-1.0 and every trial at 0.03 or below was worse (validation WAPE >= 0.1057 against 0.0975).
At 0.03 the term was already a measurable share of the loss (``train_reg_share``,
:math:`\lambda_E R / \ell`) at the end of training: 6.4% on a tiny synthetic hierarchy
(``synthetic={"branching": [2, 3]}``, 96 steps, :math:`(H, F) = (12, 4)`, 20 epochs) and 12.7% on
tourismsmall (its :math:`(8, 8)`, 33 epochs to early stopping), with :math:`R \approx 0.4`-0.5.
:data:`dsbo_zoo.hired.PRESETS` use the default too; table 6.5's values are kept in
:data:`TABLE_6_5_LAMBDA_E`
(thesis scale, reference only).
"""

from __future__ import annotations

from torch import Tensor

#: Default :math:`\lambda_E` on HiReD's scale (MAE per value + :math:`\lambda_E R(\theta)`, the
#: mean squared embedding distance over the pairs relative to the leaves' variance; module docstring).
DEFAULT_LAMBDA_E = 0.2
#: Positive ``lambda_e`` below this warn: no measurable effect on this scale.
NEGLIGIBLE_LAMBDA_E = 1e-6

#: Table 6.5's :math:`\lambda_E` on the thesis' scale (summed loss, Eq. 6.5; for reference only:
#: :math:`\lambda_E^{\rm here} = \lambda_E^{\rm thesis} P / n_b`, all negligible here).
TABLE_6_5_LAMBDA_E = {"tourism": 7.2498e-8, "m5": 3.4e-6, "favorita": 4.644e-4}


def embedding_regularizer(theta: Tensor, pairs: Tensor, reduction: str = "sum") -> Tensor:
    r""":math:`E_{\rm reg} = \sum_{(p, i)} \|\theta_p - \theta_i\|_2^2` (Eq. 6.4) over ``pairs``
    (``2 x P`` long: row 0 the ancestors :math:`p`, row 1 the leaves :math:`i \in \mathcal L(p)`);
    ``theta`` is ``N x K``. Its gradient in :math:`\theta_j` is
    :math:`2 \sum_{(j, i)} (\theta_j - \theta_i) - 2 \sum_{(p, j)} (\theta_p - \theta_j)`.
    ``reduction="mean"``: :math:`\bar E_{\rm reg} = E_{\rm reg} / P`, what HiReD's
    ``lambda_e`` weighs (module docstring); 0 without pairs."""
    if reduction not in ("sum", "mean"):
        raise ValueError(
            f"embedding_regularizer: reduction must be 'sum' or 'mean', got {reduction!r}"
        )
    if pairs.numel() == 0:
        return theta.sum() * 0.0
    diff = theta.index_select(0, pairs[0]) - theta.index_select(0, pairs[1])
    total = diff.pow(2).sum()
    return total / pairs.shape[1] if reduction == "mean" else total


def relative_embedding_regularizer(
    theta: Tensor, pairs: Tensor, leaf_rows: Tensor, eps: float = 1e-8
) -> Tensor:
    r""":math:`R(\theta) = \bar E_{\rm reg}(\theta) / (V(\theta) + \epsilon)`, what HiReD's
    ``lambda_e`` weighs: the mean squared distance over the ``pairs`` (Eq. 6.4 divided by
    :math:`P`) relative to the leaf embeddings' variance
    :math:`V = \frac1L\sum_{i\ \rm leaf}\|\theta_i - \bar\theta\|_2^2` (``leaf_rows``: the
    leaves' rows of ``theta``). Invariant to :math:`\theta \to c\theta` and to a common shift;
    for fixed leaves minimized by the mean property (:math:`V` depends on the leaves only). At
    the mean property the root's pairs sum to :math:`L V` and every other ancestor's to its
    subtree's share of that variance, so :math:`L/P \le R \le 1` on a tree whose leaves all have
    the same depth (``leaf_pairs``). 0 without pairs or when all embeddings are equal."""
    if pairs.numel() == 0:
        return theta.sum() * 0.0
    leaves = theta.index_select(0, leaf_rows)
    variance = (leaves - leaves.mean(0)).pow(2).sum(1).mean()
    return embedding_regularizer(theta, pairs, reduction="mean") / (variance + eps)


def mean_property_embeddings(leaf_theta: Tensor, S: Tensor) -> Tensor:
    r"""Embeddings with the mean property (Eq. 6.3): node :math:`p` gets
    :math:`\frac{1}{|\mathcal L(p)|}\sum_{i \in \mathcal L(p)} \theta_i` from the ``L x K`` leaf
    embeddings and the ``N x L`` summing matrix ``S``."""
    S = S.to(leaf_theta)
    return (S / S.sum(1, keepdim=True)) @ leaf_theta
