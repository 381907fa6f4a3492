"""The multi-task GP of related tasks (dsbo.surrogates.multi_task): read as the target task, it
borrows a related task's trials whatever that task's scale, and refuses malformed data."""

import pytest
import torch

from dsbo.errors import DataError
from dsbo.surrogates.multi_task import TargetTaskModel, fit_multi_task_gp


def branin_like(X):
    return -(
        (X[:, 0] - 0.3) ** 2 + 2 * (X[:, 1] - 0.6) ** 2 + 0.3 * torch.sin(6 * X[:, 0])
    ).unsqueeze(-1)


def test_a_related_task_on_another_scale_sharpens_the_target_tasks_predictions():
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(0)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.double)
    X_target = torch.rand(8, 2, dtype=torch.double)
    X_related = torch.rand(40, 2, dtype=torch.double)
    Y_target = branin_like(X_target)
    Y_related = 100.0 + 50.0 * branin_like(X_related)  # the same shape on another scale
    model = fit_multi_task_gp([X_target, X_related], [Y_target, Y_related], bounds)
    assert isinstance(model, TargetTaskModel) and model.num_outputs == 1
    single = SingleTaskGP(X_target, Y_target)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(single.likelihood, single))
    X_test = torch.rand(200, 2, dtype=torch.double)
    truth = branin_like(X_test)
    with torch.no_grad():
        mt_error = (model.posterior(X_test).mean - truth).pow(2).mean().sqrt()
        single_error = (single.posterior(X_test).mean - truth).pow(2).mean().sqrt()
        at_data = model.posterior(X_target).mean  # in the target task's own units
    assert mt_error < 0.5 * single_error
    assert torch.allclose(at_data, Y_target, atol=0.05)
    assert model.posterior(X_test.reshape(20, 10, 2)).mean.shape == (
        20,
        10,
        1,
    )  # q-batches for acquisitions


def test_several_outcomes_give_a_model_list_and_bad_data_is_refused():
    bounds = torch.tensor([[0.0], [2.0]], dtype=torch.double)
    X = [
        torch.linspace(0, 2, 5, dtype=torch.double).unsqueeze(-1),
        torch.linspace(0, 2, 7, dtype=torch.double).unsqueeze(-1),
    ]
    Y = [torch.cat([x.sin(), x.cos()], dim=-1) for x in X]
    model = fit_multi_task_gp(X, Y, bounds)
    assert model.num_outputs == 2 and model.posterior(X[0]).mean.shape == (5, 2)
    with pytest.raises(DataError, match="at least one related task"):
        fit_multi_task_gp(X[:1], Y[:1], bounds)
    with pytest.raises(DataError, match="at least 2 trials of this campaign"):
        fit_multi_task_gp([X[0][:1], X[1]], [Y[0][:1], Y[1]], bounds)
    with pytest.raises(DataError, match="the same outcomes"):
        fit_multi_task_gp(X, [Y[0], Y[1][:, :1]], bounds)
    with pytest.raises(DataError, match="finite"):
        fit_multi_task_gp(X, [Y[0], Y[1] * float("nan")], bounds)
