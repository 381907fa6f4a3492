"""Proposals where only categories are free (dsbo.acquisition.discrete_search): enumeration,
local search, exhausted spaces, settled columns, and the optimizers' every-column-fixed case."""

import itertools
import math

import pytest
import torch

from dsbo.acquisition import History, OptimizerSettings, make_policy
from dsbo.acquisition.branches import category_combinations
from dsbo.acquisition.discrete_search import (
    SpaceExhaustedWarning,
    configurations,
    free_categoricals,
    maximize_discrete,
    template,
)
from dsbo.acquisition.mixed_optimizer import maximize_over_combinations
from dsbo.acquisition.repeats import replace_repeats
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate


def choice(*values, **when):
    spec = {"type": "choice", "values": list(values)}
    return {**spec, "when": when} if when else spec


#: 3 x 2 x 4 = 24 configurations.
SMALL = {"a": choice("p", "q", "r"), "b": choice("u", "v"), "c": choice(1, 2, 3, 4)}
#: 4^8 = 65536 configurations: more than enumeration takes.
LARGE = {f"g{i}": choice(*"wxyz") for i in range(8)}
FAST = OptimizerSettings(num_restarts=4, raw_samples=64, maxiter=50, mc_samples=32)


class Table:
    """A deterministic acquisition over one-hot configurations: a seeded random value per
    configuration, plus ``separable`` per-category scores; counts its batched calls and keeps
    the pending points it is given."""

    def __init__(self, problem, seed=0, separable=False):
        self.groups = problem.space.one_hot_groups
        sizes = [len(g) for g in self.groups]
        generator = torch.Generator().manual_seed(seed)
        if separable:
            self.scores = [torch.randn(n, generator=generator, dtype=torch.double) for n in sizes]
            self.table = None
        else:
            self.table = torch.randn(math.prod(sizes), generator=generator, dtype=torch.double)
        self.strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
        self.calls = 0
        self.X_pending = None
        self.pending_seen = []

    def set_X_pending(self, X):
        self.X_pending = X
        self.pending_seen.append(None if X is None else X.clone())

    def value(self, X):
        picks = [X[..., g].argmax(-1) for g in self.groups]
        if self.table is None:
            return sum(s[p] for s, p in zip(self.scores, picks, strict=True))
        index = sum(p * s for p, s in zip(picks, self.strides, strict=True))
        return self.table[index]

    def __call__(self, X):
        self.calls += 1
        return self.value(X[..., 0, :])


def every_configuration(problem):
    """All configurations as points, in the order of itertools.product."""
    space = problem.space
    names = list(space.parameters)
    values = [space.parameters[n].values for n in names]
    rows = [
        problem.point(dict(zip(names, combo, strict=True))) for combo in itertools.product(*values)
    ]
    return torch.stack(rows)


def ranked(acqf, X):
    """Rows of ``X`` from the acquisition's best to its worst."""
    return X[torch.argsort(acqf.value(X), descending=True)]


def test_enumeration_proposes_the_acquisitions_argmax_in_one_batched_call():
    problem = get_problem("black-box", parameters=SMALL)
    groups = free_categoricals(problem, FAST)
    assert groups == problem.space.one_hot_groups
    acqf = Table(problem)
    found = maximize_discrete(acqf, problem, FAST, 1, 0, groups)
    order = ranked(acqf, every_configuration(problem))
    assert torch.equal(found.X[0], order[0])
    assert float(found.values[0]) == pytest.approx(float(acqf.value(order[:1])[0]))
    assert acqf.calls == 1  # all 24 configurations scored at once
    assert found.metadata == [{"discrete_search": "enumerate", "configurations": 24}]


def test_enumeration_passes_over_tried_configurations_and_builds_a_batch_greedily():
    problem = get_problem("black-box", parameters=SMALL)
    groups = free_categoricals(problem, FAST)
    acqf = Table(problem, seed=1)
    order = ranked(acqf, every_configuration(problem))
    found = maximize_discrete(acqf, problem, FAST, 3, 0, groups, avoid=order[[0, 2]])
    assert torch.equal(found.X, order[[1, 3, 4]])  # the best untried, in order, each once
    assert torch.equal(acqf.pending_seen[0], order[[1]])  # each pick pending for the next
    assert acqf.X_pending is None  # and the pending points restored after the batch


def test_an_exhausted_space_repeats_the_best_and_says_so():
    problem = get_problem("black-box", parameters=SMALL)
    groups = free_categoricals(problem, FAST)
    acqf = Table(problem, seed=2)
    every = every_configuration(problem)
    with pytest.warns(SpaceExhaustedWarning, match="each of the 24 configurations"):
        found = maximize_discrete(acqf, problem, FAST, 1, 0, groups, avoid=every)
    assert torch.equal(found.X[0], ranked(acqf, every)[0])
    assert found.metadata[0]["space_exhausted"] is True
    # one configuration left: it is proposed, and nothing is said
    left = ranked(acqf, every)[-1]
    found = maximize_discrete(
        acqf, problem, FAST, 1, 0, groups, avoid=every[(every != left).any(-1)]
    )
    assert torch.equal(found.X[0], left) and "space_exhausted" not in found.metadata[0]


def test_a_product_too_large_to_enumerate_is_searched_by_one_category_moves():
    problem = get_problem("black-box", parameters=LARGE)
    groups = free_categoricals(problem, FAST)
    acqf = Table(problem, seed=3, separable=True)
    best = torch.cat([torch.eye(4, dtype=torch.double)[int(s.argmax())] for s in acqf.scores])
    found = maximize_discrete(acqf, problem, FAST, 1, 0, groups)
    assert found.metadata[0]["discrete_search"] == "local"
    assert found.metadata[0]["scored"] < 65536 // 10
    assert torch.equal(found.X[0], best)  # steepest ascent reaches a separable optimum
    # the optimum tried: the best of its neighbours (the smallest loss of one category)
    found = maximize_discrete(acqf, problem, FAST, 1, 0, groups, avoid=best.unsqueeze(0))
    losses = [float(s.max() - s.sort(descending=True).values[1]) for s in acqf.scores]
    i = min(range(8), key=losses.__getitem__)
    second = best.clone()
    second[4 * i : 4 * i + 4] = torch.eye(4, dtype=torch.double)[int(acqf.scores[i].argsort()[-2])]
    assert torch.equal(found.X[0], second)


def test_every_column_fixed_leaves_one_configuration():
    problem = get_problem("black-box", parameters=SMALL)
    point = problem.point({"a": "q", "b": "v", "c": 3})
    fixed = OptimizerSettings(**{**vars(FAST), "fixed_features": dict(enumerate(point.tolist()))})
    assert free_categoricals(problem, fixed) == []
    acqf = Table(problem)
    found = maximize_discrete(acqf, problem, fixed, 1, 0, [])
    assert torch.equal(found.X[0], point) and found.metadata[0]["configurations"] == 1
    with pytest.warns(SpaceExhaustedWarning):
        again = maximize_discrete(acqf, problem, fixed, 1, 0, [], avoid=point.unsqueeze(0))
    assert torch.equal(again.X[0], point) and again.metadata[0]["space_exhausted"]
    # BoTorch's optimizers have no free column here: the optimizers score the fixed points
    X, values = fixed.maximize(acqf, problem.bounds, 1, 0)
    assert torch.equal(X[0], point) and values.shape == (1,)
    combos = category_combinations(problem, OptimizerSettings(max_enumerate=24))
    X, _ = maximize_over_combinations(
        acqf, problem.bounds, 1, combos, num_restarts=2, raw_samples=8, maxiter=5, seed=0
    )
    assert torch.equal(X[0], ranked(acqf, every_configuration(problem))[0])


def test_a_float_fixed_by_the_caller_leaves_the_categories_to_enumerate():
    problem = get_problem("black-box", parameters={"x": [0.0, 1.0], **SMALL})
    assert free_categoricals(problem, FAST) is None  # a continuous column is free
    pinned = OptimizerSettings(**{**vars(FAST), "fixed_features": {0: 0.25}})
    groups = free_categoricals(problem, pinned)
    assert groups == problem.space.one_hot_groups
    X = configurations(
        problem, template(problem, pinned), groups, torch.zeros(1, 3, dtype=torch.long)
    )
    assert X[0, 0] == 0.25 and problem.params(X[0]) == {"x": 0.25, "a": "p", "b": "u", "c": 1}


def test_conditions_collapse_configurations_and_settle_inactive_columns():
    space = {
        "model": choice("a", "b"),
        "depth": choice(1, 2, 3, model="a"),
        "width": choice("s", "l", model="b"),
    }
    problem = get_problem("black-box", parameters=space)
    groups = free_categoricals(problem, FAST)
    found = maximize_discrete(Table(problem), problem, FAST, 1, 0, groups)
    assert found.metadata[0]["configurations"] == 3 + 2  # not 2 x 3 x 2
    model_a = dict(enumerate(problem.point({"model": "a", "depth": 1}).tolist()[:2]))
    pinned = OptimizerSettings(**{**vars(FAST), "fixed_features": model_a})
    depth = list(range(problem.dim))[problem.space.slices["depth"]]
    assert free_categoricals(problem, pinned) == [depth]  # width is inactive: settled
    # a conditional float is free under its branch and settled outside it
    x = {"type": "float", "low": 0.0, "high": 1.0, "when": {"kind": "a"}}
    problem = get_problem("black-box", parameters={"kind": choice("a", "b"), "x": x})
    assert free_categoricals(problem, FAST) is None
    kind = {"a": {0: 1.0, 1: 0.0}, "b": {0: 0.0, 1: 1.0}}
    for value, free in (("a", None), ("b", [])):
        settings = OptimizerSettings(**{**vars(FAST), "fixed_features": kind[value]})
        assert free_categoricals(problem, settings) == free


def _history(problem, n, seed=0):
    X = every_configuration(problem)[
        torch.randperm(24, generator=torch.Generator().manual_seed(seed))[:n]
    ]
    a = torch.tensor([["p", "q", "r"].index(problem.params(x)["a"]) for x in X], dtype=torch.double)
    c = torch.tensor([problem.params(x)["c"] for x in X], dtype=torch.double)
    Y = (-((a - 1) ** 2) - 0.3 * (c - 3) ** 2).unsqueeze(-1)
    return History(X=X, Y=Y, seed=seed, t=n)


def test_qlognei_proposes_the_best_untried_configuration_on_a_fitted_gp():
    torch.manual_seed(0)
    problem = get_problem("black-box", parameters=SMALL)
    history = _history(problem, 9)
    model = fit_surrogate("gp", history.X, history.Y, bounds=problem.bounds)
    policy = make_policy("qlognei", optimizer=FAST)
    proposal = policy.propose(model, history, problem, 2)
    every = every_configuration(problem)
    acqf = policy.build(model, history, problem, 1)
    with torch.no_grad():
        values = acqf(every.unsqueeze(-2))
    untried = ~(every.unsqueeze(1) == history.X.unsqueeze(0)).all(-1).any(-1)
    best = every[int(values.masked_fill(~untried, -math.inf).argmax())]
    assert torch.equal(proposal.X[0], best)
    assert not (proposal.X.unsqueeze(1) == history.X.unsqueeze(0)).all(-1).any()
    assert not torch.equal(proposal.X[0], proposal.X[1])
    assert [m["discrete_search"] for m in proposal.metadata] == ["enumerate", "enumerate"]
    chosen = values[(every == best).all(-1)]
    assert proposal.metadata[0]["acq_value"] == pytest.approx(float(chosen[0]))


def test_a_repeat_is_replaced_by_the_best_untried_configuration():
    problem = get_problem("black-box", parameters=SMALL)
    history = _history(problem, 20, seed=4)
    acqf = Table(problem, seed=5)
    X, replaced, _ = replace_repeats(acqf, history.X[:1].clone(), history, problem, FAST, 0.0)
    every = every_configuration(problem)
    untried = every[~(every.unsqueeze(1) == history.X.unsqueeze(0)).all(-1).any(-1)]
    assert replaced == [True] and torch.equal(X[0], ranked(acqf, untried)[0])
    history = History(X=every, Y=torch.zeros(24, 1, dtype=torch.double))
    X, replaced, _ = replace_repeats(acqf, every[:1].clone(), history, problem, FAST, 0.0)
    assert replaced == [False] and torch.equal(X[0], every[0])  # nothing untried is left


def test_the_model_free_fallback_takes_untried_configurations_until_none_is_left():
    problem = get_problem("black-box", parameters=SMALL)
    sobol = make_policy("sobol", optimizer=FAST)
    history = _history(problem, 20, seed=6)
    proposal = sobol.propose(None, history, problem, 4)
    every = every_configuration(problem)
    untried = every[~(every.unsqueeze(1) == history.X.unsqueeze(0)).all(-1).any(-1)]
    assert sorted(map(tuple, proposal.X.tolist())) == sorted(map(tuple, untried.tolist()))
    assert not any(m.get("space_exhausted") for m in proposal.metadata)
    # a design of n points with nothing tried: n distinct configurations, each a prefix of the next
    nothing = History(X=every[:0], Y=torch.zeros(0, 1, dtype=torch.double))
    first = sobol.propose(None, nothing, problem, 24).X
    assert len(set(map(tuple, first.tolist()))) == 24
    assert torch.equal(sobol.propose(None, nothing, problem, 5).X, first[:5])
    everything = History(X=every, Y=torch.zeros(24, 1, dtype=torch.double))
    assert sobol.propose(None, everything, problem, 1).metadata[0]["space_exhausted"] is True
