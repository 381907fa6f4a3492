"""The batched optimization over every combination of categories."""

import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms import Normalize, Standardize
from botorch.optim import optimize_acqf_mixed
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.mlls import ExactMarginalLogLikelihood

from dsbo.acquisition import OptimizerSettings
from dsbo.acquisition.branches import category_combinations
from dsbo.acquisition.mixed_optimizer import _pick_starts, _raw_points, maximize_over_combinations
from dsbo.problems import get_problem

PARAMETERS = {
    "x": [0.0, 1.0],
    "y": [0.0, 1.0],
    "a": {"type": "choice", "values": ["p", "q", "r"]},
    "b": {"type": "choice", "values": ["u", "v"]},
}
#: Per combination: the maximizer's x and the value there.
TARGETS = {
    ("p", "u"): (0.2, 0.0),
    ("p", "v"): (0.8, 0.5),
    ("q", "u"): (0.5, 1.0),
    ("q", "v"): (0.1, 0.2),
    ("r", "u"): (0.9, 0.3),
    ("r", "v"): (0.4, 0.9),
}


class Bowl:
    """A deterministic acquisition: a bowl in (x, y) per combination, peaks at TARGETS."""

    X_pending = None

    def __init__(self, problem):
        self.problem = problem

    def __call__(self, X):
        X = X[..., 0, :]
        a = X[..., 2:5].argmax(-1)
        b = X[..., 5:7].argmax(-1)
        centre = torch.zeros(X.shape[:-1], dtype=X.dtype)
        height = torch.zeros(X.shape[:-1], dtype=X.dtype)
        for (va, vb), (c, h) in TARGETS.items():
            mask = (a == "pqr".index(va)) & (b == "uv".index(vb))
            centre = torch.where(mask, torch.full_like(centre, c), centre)
            height = torch.where(mask, torch.full_like(height, h), height)
        return height - (X[..., 0] - centre) ** 2 - (X[..., 1] - 0.5) ** 2


def _decode(problem, x):
    p = problem.params(x.tolist())
    return (p["a"], p["b"]), p["x"], p["y"]


def test_finds_the_best_combination_and_its_continuous_optimum():
    problem = get_problem("black-box", parameters=PARAMETERS)
    combos = category_combinations(problem, OptimizerSettings())
    X, values = maximize_over_combinations(
        Bowl(problem),
        problem.bounds,
        1,
        combos,
        num_restarts=2,
        raw_samples=64,
        maxiter=100,
        seed=0,
    )
    combo, x, y = _decode(problem, X[0])
    assert combo == ("q", "u")
    assert abs(x - 0.5) < 1e-4 and abs(y - 0.5) < 1e-4
    assert abs(float(values[0]) - 1.0) < 1e-6


def test_every_combination_gets_a_start_and_the_raw_points_are_dealt_evenly():
    problem = get_problem("black-box", parameters=PARAMETERS)
    combos = category_combinations(problem, OptimizerSettings())
    table = torch.tensor([[c[j] for j in sorted(c)] for c in combos], dtype=torch.double)
    raw, groups = _raw_points(problem.bounds, table, sorted(combos[0]), 60, seed=3)
    assert torch.bincount(groups).tolist() == [10] * 6
    assert torch.equal(raw[:, 2:], table[groups])  # each point sits in its own combination
    scores = torch.arange(60, dtype=torch.double)
    picked = _pick_starts(scores, groups, 6, num_restarts=2)
    assert set(groups[picked].tolist()) == set(range(6))
    assert {58, 59} <= set(picked.tolist())  # and the best overall


def test_min_distance_passes_over_an_optimum_next_to_an_evaluated_point():
    problem = get_problem("black-box", parameters=PARAMETERS)
    combos = category_combinations(problem, OptimizerSettings())
    best = torch.tensor([[0.5, 0.5, 0.0, 1.0, 0.0, 1.0, 0.0]], dtype=torch.double)  # (q, u) peak
    options = {
        "num_restarts": 4,
        "raw_samples": 64,
        "maxiter": 100,
        "seed": 0,
        "snap": problem.round_to_domain,
    }
    X, _ = maximize_over_combinations(
        Bowl(problem),
        problem.bounds,
        1,
        combos,
        avoid=best + 0.004 * torch.tensor([[1.0, 0, 0, 0, 0, 0, 0]]),
        min_distance=0.01,
        **options,
    )
    combo, x, y = _decode(problem, X[0])
    assert combo == ("r", "v") and abs(x - 0.4) < 1e-3  # the next best local optimum
    X, _ = maximize_over_combinations(
        Bowl(problem),
        problem.bounds,
        1,
        combos,
        avoid=best + 0.02 * torch.tensor([[1.0, 0, 0, 0, 0, 0, 0]]),
        min_distance=0.01,
        **options,
    )
    assert _decode(problem, X[0])[0] == ("q", "u")  # 2% away is not a repeat


def _gp_acquisition(problem, n=12):
    X = problem.sobol_design(n, 0, lambda x: x)

    def f(x):
        p = problem.params(x.tolist())
        return (
            -((p["x"] - 0.3) ** 2 + (p["y"] - 0.7) ** 2)
            - 0.3 * "pqr".index(p["a"])
            - 0.2 * "uv".index(p["b"])
        )

    Y = torch.tensor([[f(x)] for x in X])
    gp = SingleTaskGP(
        X, Y, input_transform=Normalize(X.shape[-1]), outcome_transform=Standardize(1)
    )
    fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
    sampler = SobolQMCNormalSampler(torch.Size([64]), seed=0)
    return X, qLogNoisyExpectedImprovement(gp, X, sampler=sampler)


def test_reaches_botorchs_per_combination_optimum_on_a_gp_acquisition():
    torch.manual_seed(0)
    problem = get_problem("black-box", parameters=PARAMETERS)
    combos = category_combinations(problem, OptimizerSettings())
    _, acqf = _gp_acquisition(problem)
    _, ours = maximize_over_combinations(
        acqf, problem.bounds, 1, combos, num_restarts=4, raw_samples=128, maxiter=100, seed=0
    )
    _, botorchs = optimize_acqf_mixed(
        acqf,
        problem.bounds,
        1,
        num_restarts=4,
        raw_samples=128,
        fixed_features_list=combos,
        options={"maxiter": 100},
    )
    assert float(ours[0]) >= float(botorchs) - 1e-3


def test_a_batch_is_built_greedily_and_the_pending_points_are_restored():
    torch.manual_seed(0)
    problem = get_problem("black-box", parameters=PARAMETERS)
    combos = category_combinations(problem, OptimizerSettings())
    X_done, acqf = _gp_acquisition(problem)
    X, values = maximize_over_combinations(
        acqf,
        problem.bounds,
        3,
        combos,
        num_restarts=4,
        raw_samples=128,
        maxiter=100,
        seed=0,
        avoid=X_done,
        min_distance=0.01,
        snap=problem.round_to_domain,
    )
    assert X.shape == (3, problem.dim) and values.shape == (3,)
    assert acqf.X_pending is None
    unit = (X - problem.bounds[0]) / (problem.bounds[1] - problem.bounds[0])
    assert torch.cdist(unit, unit, p=float("inf")).add(torch.eye(3)).min() >= 0.01
