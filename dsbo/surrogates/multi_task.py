r"""A multi-task GP that warm-starts a campaign from related tasks: the trials of an earlier
campaign on other data, or of another version of the system, over the same space and outcomes.

Each outcome is modelled by BoTorch's :class:`~botorch.models.MultiTaskGP` over ``(x, t)``
with the intrinsic coregionalization kernel (Bonilla, Chai and Williams 2008, *Multi-task
Gaussian Process Prediction*; Swersky, Snoek and Adams 2013, *Multi-Task Bayesian
Optimization*),

.. math::

    k((x, t), (x', t')) = B_{t t'}\, k_x(x, x'), \qquad B = W W^\top + \operatorname{diag}(v),

a Matérn-5/2 kernel over the configuration times a task covariance ``B`` learned by the
marginal likelihood with the kernel's hyperparameters. A related task that does not predict
this one gets a small correlation and stops mattering; one that does lends its trials to
every prediction of this task. The observation noise is one for all tasks (BoTorch's
log-normal noise prior): with a noise of its own per task, as ``MultiTaskGP`` has by default, the
likelihood readily explains this campaign's few trials as noise and ignores the related task
(two 2-D functions, 8 trials of this task and 40 of the same function on another scale, 4 draws
each: the shared noise's held-out error was 2.7-42x below a GP on this task's trials alone, the
per-task noise's about that GP's; ``tests/surrogates/test_multi_task.py`` checks one draw). Each task's values are standardized on their own
(:class:`~botorch.models.transforms.outcome.StratifiedStandardize`), so tasks on other scales
share one model. :class:`TargetTaskModel` reads the GP as task 0 (this campaign's), a model
over the configuration alone, so every acquisition of :mod:`dsbo.acquisition` proposes from it
unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from botorch.models.model import Model, ModelList
from torch import Tensor

from dsbo.errors import DataError
from dsbo.surrogates.fixed_column import FixedColumnModel

#: The task of the campaign being optimized; related tasks are 1, 2, ...
TARGET_TASK = 0


class TargetTaskModel(FixedColumnModel):
    """A model over configurations ``x`` (the problem's box): the multi-task GP ``model`` over
    ``(unit-cube x, task)`` read at task :data:`TARGET_TASK`.

    Attributes:
        model: The fitted :class:`~botorch.models.MultiTaskGP` (one outcome).
        bounds: ``2 x d`` bounds of ``x`` (what maps it to the unit cube the GP was fitted in).
    """

    def __init__(self, model: Model, bounds: Tensor) -> None:
        super().__init__(model, bounds, float(TARGET_TASK))


def fit_multi_task_gp(Xs: Sequence[Tensor], Ys: Sequence[Tensor], bounds: Tensor) -> Model:
    """Fit one multi-task GP per outcome on the tasks' data: ``Xs[0], Ys[0]`` this campaign's
    trials (``n x d``, ``n x m``, maximized), ``Xs[i], Ys[i]`` related task ``i``'s; returns
    the model read as this campaign's task (a :class:`TargetTaskModel`, or a
    :class:`~botorch.models.model.ModelList` of them for several outcomes).

    Raises:
        DataError: for fewer than two trials of this campaign, tasks whose outcome counts differ,
            or a value that is not finite.
    """
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import MultiTaskGP
    from botorch.models.transforms.outcome import StratifiedStandardize
    from botorch.models.utils.gpytorch_modules import get_gaussian_likelihood_with_lognormal_prior
    from gpytorch.mlls import ExactMarginalLogLikelihood

    if len(Xs) != len(Ys) or len(Xs) < 2:
        raise DataError(
            "a multi-task GP needs this campaign's data and at least one related task's"
        )
    if Xs[0].shape[0] < 2:
        raise DataError(
            f"a multi-task GP needs at least 2 trials of this campaign, got {Xs[0].shape[0]}"
        )
    m = Ys[0].shape[-1]
    if any(Y.shape[-1] != m for Y in Ys) or any(
        X.shape[0] != Y.shape[0] for X, Y in zip(Xs, Ys, strict=True)
    ):
        raise DataError("every task needs one row of the same outcomes per trial")
    lower, upper = bounds[0].to(torch.double), bounds[1].to(torch.double)
    rows = [
        torch.cat(
            [
                (X.to(torch.double) - lower) / (upper - lower),
                torch.full((X.shape[0], 1), float(t), dtype=torch.double),
            ],
            dim=-1,
        )
        for t, X in enumerate(Xs)
    ]
    train_X, train_Y = torch.cat(rows), torch.cat([Y.to(torch.double) for Y in Ys])
    if not torch.isfinite(train_Y).all():
        raise DataError("multi-task GP: every value must be finite")
    d, tasks = train_X.shape[-1] - 1, torch.arange(len(Xs))
    models = []
    for j in range(m):
        gp = MultiTaskGP(
            train_X,
            train_Y[:, j : j + 1],
            task_feature=d,
            output_tasks=[TARGET_TASK],
            likelihood=get_gaussian_likelihood_with_lognormal_prior(),
            outcome_transform=StratifiedStandardize(stratification_idx=d, all_task_values=tasks),
        )
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        models.append(TargetTaskModel(gp, bounds))
    return models[0] if m == 1 else ModelList(*models)


__all__ = ["TARGET_TASK", "TargetTaskModel", "fit_multi_task_gp"]
