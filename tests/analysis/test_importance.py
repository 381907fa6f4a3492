"""Parameter importance and slices (dsbo.analysis.importance) against known answers."""

import math

import pytest
import torch
from botorch.models import SingleTaskGP
from botorch.models.deterministic import GenericDeterministicModel

from dsbo.analysis.importance import (
    LENGTHSCALES,
    SOBOL,
    lengthscale_scores,
    parameter_importance,
    slices,
    sobol_scores,
    to_model_points,
)
from dsbo.space import Choice, Float, Int, SearchSpace


def _gp_with_lengthscales(lengthscales):
    d = len(lengthscales)
    X = torch.rand(8, d, dtype=torch.double)
    model = SingleTaskGP(X, X.sum(-1, keepdim=True))
    kernel = (
        model.covar_module
        if hasattr(model.covar_module, "lengthscale")
        else model.covar_module.base_kernel
    )
    kernel.lengthscale = torch.tensor([lengthscales], dtype=torch.double)
    return model


def test_lengthscale_scores_are_inverse_lengthscales():
    space = SearchSpace({"a": Float(0, 1), "b": Float(0, 1), "c": Float(0, 1)})
    scores = lengthscale_scores(_gp_with_lengthscales([0.1, 1.0, 10.0]), space)
    assert scores.tolist() == pytest.approx([10.0, 1.0, 0.1])
    (item,) = parameter_importance(_gp_with_lengthscales([1.0, 0.1, 10.0]), space, ["y"])
    assert item.method == LENGTHSCALES and item.ranking == ["b", "a", "c"]
    assert sum(item.scores.values()) == pytest.approx(1.0)
    assert item.scores["b"] == pytest.approx(10.0 / 11.1)


def test_a_categorical_counts_once_with_the_root_sum_square_of_its_columns():
    space = SearchSpace({"x": Float(0, 1), "kind": Choice(["a", "b", "c"])})
    scores = lengthscale_scores(_gp_with_lengthscales([2.0, 0.5, 1.0, 4.0]), space)
    assert scores.tolist() == pytest.approx([0.5, math.sqrt(4.0 + 1.0 + 1 / 16)])


def _deterministic(f):
    return GenericDeterministicModel(lambda X: f(X).unsqueeze(-1), num_outputs=1)


def test_sobol_indices_of_an_additive_mean_are_its_variance_shares():
    """f = 3 u_a + 1 u_b (c unused): total indices 9/10, 1/10, 0 (Var of a*U(0,1) is a^2/12)."""
    space = SearchSpace({"a": Float(0, 1), "b": Float(0, 1), "c": Float(0, 1)})
    model = _deterministic(lambda X: 3 * X[..., 0] + X[..., 1])
    total = sobol_scores(model, space, n=2048)
    assert total.tolist() == pytest.approx([0.9, 0.1, 0.0], abs=0.03)
    (item,) = parameter_importance(model, space, ["y"])
    assert item.method == SOBOL and item.ranking[:2] == ["a", "b"]


def test_sobol_sees_a_categorical_as_one_parameter():
    """f = 1 when kind == "b", plus 0.1 x: the choice carries almost all of the variance."""
    space = SearchSpace({"x": Float(0, 1), "kind": Choice(["a", "b"])})
    model = _deterministic(lambda X: X[..., 2] + 0.1 * X[..., 0])
    total = sobol_scores(model, space, n=1024)
    assert total[1] > 0.9 and total[0] < 0.1


def test_unit_points_map_to_ranges_and_one_hots():
    space = SearchSpace({"lr": Float(1e-4, 1e-1, log=True), "kind": Choice(["a", "b", "c"])})
    X = to_model_points(
        space, torch.tensor([[0.0, 0.0], [1.0, 0.5], [0.5, 0.99]], dtype=torch.double)
    )
    assert X[:, 0].tolist() == pytest.approx(
        [math.log(1e-4), math.log(1e-1), (math.log(1e-4) + math.log(1e-1)) / 2]
    )
    assert X[:, 1:].tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_slices_run_through_the_point_in_user_values():
    space = SearchSpace(
        {
            "lr": Float(1e-4, 1e-1, log=True),
            "width": Int(1, 4),
            "opt": Choice(["adam", "sgd"]),
            "momentum": Float(0, 1, when={"opt": "sgd"}),
        }
    )
    model = _deterministic(
        lambda X: X[..., 0] + 10 * X[..., 1] + 100 * X[..., 3]
    )  # ln lr + 10 width + 100 [sgd]
    x = space.encode({"lr": 1e-2, "width": 2, "opt": "adam"})
    by_name = {
        s.parameter: s for s in slices(model, space, x, ["lr", "width", "opt", "momentum"], num=5)
    }
    assert "momentum" not in by_name  # inactive at the point: no slice
    lr = by_name["lr"]
    assert lr.log and lr.values[0] == pytest.approx(1e-4) and lr.values[-1] == pytest.approx(1e-1)
    assert lr.mean == pytest.approx([math.log(v) + 20 for v in lr.values])
    assert by_name["width"].values == [1, 2, 3, 4]
    assert by_name["width"].mean == pytest.approx([math.log(1e-2) + 10 * w for w in (1, 2, 3, 4)])
    opt = by_name["opt"]
    assert opt.categorical and opt.values == ["adam", "sgd"] and opt.at == "adam"
    assert opt.mean[1] - opt.mean[0] == pytest.approx(100.0)
    assert all(sd == pytest.approx(0.0, abs=1e-5) for sd in opt.sd)
