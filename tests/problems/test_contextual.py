"""SADCBO's contextual benchmarks: names as in the module table, the [0, 1] output scaling (1 at
the known optimum), inert noise contexts, the paper's noise, and context costs."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from botorch.test_functions.synthetic import Ackley, EggHolder, Hartmann
from scipy.optimize import minimize

from dsbo.errors import ConfigError, ProblemError
from dsbo.problems import get_problem
from dsbo.problems.base import Context

TABLE = {  # name: (parameter names, context names, design dims, relevant contexts)
    "contextual-hartmann4": (
        ("x1", "z2", "z3", "x4", "n1", "n2", "n3"),
        ("z2", "z3", "n1", "n2", "n3"),
        (0, 3),
        ["z2", "z3"],
    ),
    "contextual-hartmann6": (
        ("z1", "x2", "z3", "z4", "x5", "x6", *(f"n{i}" for i in range(1, 7))),
        ("z1", "z3", "z4", *(f"n{i}" for i in range(1, 7))),
        (1, 4, 5),
        ["z1", "z3", "z4"],
    ),
    "contextual-ackley": (
        ("x1", "x2", "z3", "z4", "z5", *(f"n{i}" for i in range(1, 9))),
        ("z3", "z4", "z5", *(f"n{i}" for i in range(1, 9))),
        (0, 1),
        ["z3", "z4", "z5"],
    ),
    "contextual-eggholder": (
        ("x1", "z2", "n1", "n2", "n3", "n4"),
        ("z2", "n1", "n2", "n3", "n4"),
        (0,),
        ["z2"],
    ),
}


@pytest.mark.parametrize("name", TABLE)
def test_names_follow_the_module_table(name):
    parameters, contexts, design, relevant = TABLE[name]
    problem = get_problem(name)
    assert problem.name == name and problem.is_contextual
    assert problem.parameter_names == parameters and problem.context_names == contexts
    assert problem.design_dims == design and problem.dim == len(parameters)
    assert problem.metadata["relevant_contexts"] == relevant
    assert (
        all(c.cost == 1.0 and c.controllable for c in problem.contexts)
        and problem.design_cost == 1.0
    )
    assert torch.equal(
        problem.bounds, torch.tensor([[0.0] * problem.dim, [1.0] * problem.dim], dtype=torch.double)
    )
    assert problem.context_distribution().tolist() == [[0.0] * len(contexts), [1.0] * len(contexts)]
    assert problem.optimal_value == 1.0 and problem.noise_std == pytest.approx(math.sqrt(1e-3))


@pytest.mark.parametrize(
    "name, base",
    [
        ("contextual-hartmann6", Hartmann(dim=6)),
        ("contextual-ackley", Ackley(dim=5, bounds=[(-5.0, 5.0)] * 5)),
        ("contextual-eggholder", EggHolder()),
    ],
)
def test_the_known_optimizer_scores_one(name, base):
    problem = get_problem(name)
    lb, ub = base.bounds
    optimum = (base.optimizers[0] - lb) / (ub - lb)  # into the unit cube, f's variables first
    noise = torch.rand(
        2, problem.dim - base.dim, generator=torch.Generator().manual_seed(0), dtype=torch.double
    )
    X = torch.cat([optimum.expand(2, -1), noise], dim=-1)
    assert torch.allclose(problem.evaluate_true(X), torch.ones(2, 1, dtype=torch.double), atol=1e-5)


def test_hartmann4_scaling_tops_out_at_one():
    problem = get_problem("contextual-hartmann4")
    X = torch.rand(
        4096, problem.dim, generator=torch.Generator().manual_seed(1), dtype=torch.double
    )
    values = problem.evaluate_true(X).reshape(-1)
    assert float(values.max()) <= 1.0
    start = X[int(values.argmax())].numpy()
    res = minimize(
        lambda v: -float(problem.evaluate_true(torch.as_tensor(v).unsqueeze(0))),
        start,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * problem.dim,
    )
    assert -res.fun == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("name", TABLE)
def test_outputs_lie_in_the_unit_interval(name):
    problem = get_problem(name)
    X = torch.rand(
        5000, problem.dim, generator=torch.Generator().manual_seed(2), dtype=torch.double
    )
    values = problem.evaluate_true(X)
    # g_lo is a sampled minimum: a point may fall slightly below it
    assert float(values.max()) <= 1.0 + 1e-9 and float(values.min()) >= -0.05
    assert float(values.std()) > 0.01


@pytest.mark.parametrize("name", TABLE)
def test_noise_contexts_do_not_change_the_value_and_relevant_ones_do(name):
    problem = get_problem(name)
    generator = torch.Generator().manual_seed(3)
    X = torch.rand(16, problem.dim, generator=generator, dtype=torch.double)
    relevant = [problem.parameter_names.index(n) for n in problem.metadata["relevant_contexts"]]
    noise = [problem.parameter_names.index(n) for n in problem.context_names if n.startswith("n")]
    moved = X.clone()
    moved[:, noise] = torch.rand(16, len(noise), generator=generator, dtype=torch.double)
    assert torch.equal(problem.evaluate_true(X), problem.evaluate_true(moved))
    moved[:, relevant] = torch.rand(16, len(relevant), generator=generator, dtype=torch.double)
    assert not torch.allclose(problem.evaluate_true(X), problem.evaluate_true(moved))


def test_the_paper_noise_variance():
    problem = get_problem("contextual-hartmann4")
    x = torch.full((3000, problem.dim), 0.4, dtype=torch.double)
    torch.manual_seed(0)
    noisy = problem.evaluate(x).reshape(-1)
    assert float(noisy.var()) == pytest.approx(1e-3, rel=0.1)
    assert float(noisy.mean()) == pytest.approx(float(problem.evaluate_true(x[:1])), abs=3e-3)
    assert get_problem("contextual-hartmann4", noise_std=0.0).evaluate(x[:5]).unique().numel() == 1


def test_noise_contexts_option():
    problem = get_problem("contextual-eggholder", noise_contexts=0)
    assert problem.parameter_names == ("x1", "z2") and problem.context_names == ("z2",)
    assert get_problem("contextual-eggholder", noise_contexts=2).context_names == ("z2", "n1", "n2")
    with pytest.raises(ConfigError, match="noise_contexts"):
        get_problem("contextual-eggholder", noise_contexts=-1)


def test_context_cost_as_a_number_a_list_or_a_mapping():
    names = ("z2", "z3", "n1", "n2", "n3")
    costs = {
        n: c.cost
        for n, c in zip(
            names, get_problem("contextual-hartmann4", context_cost=2.5).contexts, strict=True
        )
    }
    assert costs == dict.fromkeys(names, 2.5)
    listed = get_problem("contextual-hartmann4", context_cost=[0.0, 1.5, 2, 3, 4]).contexts
    assert [c.cost for c in listed] == [0.0, 1.5, 2.0, 3.0, 4.0]
    mapped = get_problem("contextual-hartmann4", context_cost={"z3": 7.0, "n3": 0.5}).contexts
    assert [c.cost for c in mapped] == [1.0, 7.0, 1.0, 1.0, 0.5]
    assert get_problem("contextual-hartmann4", design_cost=2.0).design_cost == 2.0


@pytest.mark.parametrize(
    "options, match",
    [
        ({"context_cost": -1.0}, "context_cost of z2 must be a finite number >= 0"),
        ({"context_cost": [1.0, 1.0, -0.5, 1.0, 1.0]}, "context_cost of n1"),
        ({"context_cost": {"n2": -3}}, "context_cost of n2"),
        ({"context_cost": {"x1": 1.0}}, r"context_cost names \['x1'\]"),
        ({"context_cost": [1.0, 1.0]}, "2 entries for 5 contexts"),
        ({"context_cost": math.nan}, "context_cost"),
        ({"context_cost": True}, "context_cost"),
        ({"design_cost": 0.0}, "design_cost"),
    ],
)
def test_bad_costs_are_refused(options, match):
    with pytest.raises(ConfigError, match=match):
        get_problem("contextual-hartmann4", **options)


def test_context_dataclass_checks():
    with pytest.raises(ConfigError, match="context cost"):
        Context(dim=1, cost=-1.0)
    base = get_problem("contextual-eggholder", noise_contexts=0)
    with pytest.raises(ProblemError, match="every dimension is a context"):
        dataclasses.replace(base, contexts=(Context(0), Context(1)))
    with pytest.raises(ProblemError, match="distinct"):
        dataclasses.replace(base, contexts=(Context(1), Context(1)))
    with pytest.raises(ProblemError, match="p\\(z\\)"):
        dataclasses.replace(base, contexts=(Context(1, low=0.5, high=1.5),))
    narrow = dataclasses.replace(base, contexts=(Context(1, low=0.25, high=0.5),))
    assert narrow.context_distribution().tolist() == [[0.25], [0.5]]
    assert not get_problem("branin").is_contextual and get_problem("branin").context_names == ()
