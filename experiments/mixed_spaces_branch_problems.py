"""The problems issue 58 added to ``mixed_spaces.py``: two whose best category's branch has its
own conditional parameters and starts badly in a uniform initial design, one of only
categoricals, and one real tuning task whose category is a scikit-learn model family with its
own parameters (minimization; every evaluation well under two seconds on one core).

1. ``branch-corner``: a five-way ``family`` and a shared log-scale ``lr`` (a bowl, best at
   ``10^-2``); families ``a``-``d`` add 0.3, 0.6, 0.6, 0.9; family ``e`` adds
   ``1.2 (1 - exp(-((u - 0.8)^2 + (v - 0.25)^2) / (2 * 0.15^2)))`` over its own ``u`` and ``v``
   (uniform ``u, v`` cost 0.97 on average, worse than ``a``). Known optimum 0 (``e``, ``u``
   0.8, ``v`` 0.25, ``lr`` 0.01); library defaults ``family=a``, ``lr`` 1e-3 (value 0.74).
2. ``branch-int``: a three-way ``model`` and a shared log-scale ``lr`` (the same bowl):
   ``linear`` adds 0.5; ``tree`` adds ``0.4 + 0.1 |log2 leaves - 4|`` over its own integer
   ``leaves`` in [2, 64] (log scale); ``net`` adds ``0.15 |depth - 6|`` plus 0 / 0.3 / 0.8 for
   its own ``act`` relu / tanh / sigmoid, over its own integer ``depth`` in [1, 8] (uniform
   choices cost 0.71 on average, worse than ``linear``). Known optimum 0 (``net``, depth 6,
   relu, ``lr`` 0.01); defaults ``model=linear``, ``lr`` 1e-3 (value 0.94).
3. ``cat-only``: four categoricals of 3, 3, 4 and 3 values (108 configurations), the value a
   sum of main effects and pairwise interactions drawn once from ``numpy``'s generator (seed
   58): a table with one best configuration. Known optimum: the table's minimum.
4. ``family-digits``: the 900 digits rows of ``svc-digits``, 3-fold stratified CV error of a
   ``family`` of classifiers, each with its own parameters: ``logreg`` (``C``, log),
   ``svc`` (RBF; ``C`` and ``gamma``, log), ``knn`` (``n_neighbors`` log-integer in [1, 30],
   ``weights``), ``forest`` (``n_estimators`` log-integer in [10, 100], ``max_depth`` in
   [2, 16], ``max_features`` in [0.05, 1]); library defaults = logistic regression's
   (``C`` 1). Optimum unknown.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from mixed_spaces_problems import MixedProblem, _digits


def lr_bowl(lr: float) -> float:
    """``((log10 lr + 2) / 1.5)^2``: 0 at ``lr = 0.01``."""
    return ((math.log10(lr) + 2.0) / 1.5) ** 2


CORNER_OFFSET = {"a": 0.3, "b": 0.6, "c": 0.6, "d": 0.9}  # family "e": set by (u, v)
CORNER_AT, CORNER_WIDTH, CORNER_PENALTY = (0.8, 0.25), 0.15, 1.2


def branch_corner(p: dict[str, Any]) -> float:
    if p["family"] == "e":
        du, dv = p["u"] - CORNER_AT[0], p["v"] - CORNER_AT[1]
        offset = CORNER_PENALTY * (1.0 - math.exp(-(du * du + dv * dv) / (2 * CORNER_WIDTH**2)))
    else:
        offset = CORNER_OFFSET[p["family"]]
    return lr_bowl(p["lr"]) + offset


ACT_OFFSET = {"relu": 0.0, "tanh": 0.3, "sigmoid": 0.8}


def branch_int(p: dict[str, Any]) -> float:
    if p["model"] == "net":
        offset = 0.15 * abs(p["depth"] - 6) + ACT_OFFSET[p["act"]]
    elif p["model"] == "tree":
        offset = 0.4 + 0.1 * abs(math.log2(p["leaves"]) - 4.0)
    else:
        offset = 0.5
    return lr_bowl(p["lr"]) + offset


CAT_ONLY_LEVELS = {
    "optimizer": ["adam", "sgd", "rmsprop"],
    "activation": ["relu", "gelu", "tanh"],
    "init": ["xavier", "kaiming", "orthogonal", "normal"],
    "norm": ["none", "batch", "layer"],
}


def _cat_only_table() -> dict[tuple[str, ...], float]:
    """Main effects N(0, 1) and pairwise interactions N(0, 0.7^2), drawn once (seed 58)."""
    rng = np.random.default_rng(58)
    names = list(CAT_ONLY_LEVELS)
    main = {n: rng.normal(0.0, 1.0, len(CAT_ONLY_LEVELS[n])) for n in names}
    pairs = {
        (a, b): rng.normal(0.0, 0.7, (len(CAT_ONLY_LEVELS[a]), len(CAT_ONLY_LEVELS[b])))
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    }
    table = {}
    for combo in np.ndindex(*(len(CAT_ONLY_LEVELS[n]) for n in names)):
        value = sum(main[n][k] for n, k in zip(names, combo, strict=True))
        value += sum(pairs[(a, b)][combo[names.index(a)], combo[names.index(b)]] for a, b in pairs)
        key = tuple(CAT_ONLY_LEVELS[n][k] for n, k in zip(names, combo, strict=True))
        table[key] = float(value)
    return table


CAT_ONLY_TABLE = _cat_only_table()


def cat_only(p: dict[str, Any]) -> float:
    return CAT_ONLY_TABLE[tuple(p[n] for n in CAT_ONLY_LEVELS)]


def family_error(p: dict[str, Any]) -> float:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    X, y = _digits()
    family = p["family"]
    if family == "logreg":
        model: Any = LogisticRegression(C=p["C"], max_iter=100, tol=1e-3)
    elif family == "svc":
        model = SVC(C=p["C"], gamma=p["gamma"])
    elif family == "knn":
        model = KNeighborsClassifier(n_neighbors=int(p["n_neighbors"]), weights=p["weights"])
    else:
        model = RandomForestClassifier(
            n_estimators=int(p["n_estimators"]),
            max_depth=int(p["max_depth"]),
            max_features=float(p["max_features"]),
            random_state=0,
            n_jobs=1,
        )
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs convergence at small C
        accuracy = cross_val_score(model, X, y, cv=folds).mean()
    return float(1.0 - accuracy)


def make_branch_problems() -> dict[str, MixedProblem]:
    import dsbo

    corner = MixedProblem(
        "branch-corner",
        {
            "lr": dsbo.Float(1e-5, 1.0, log=True),
            "family": dsbo.Choice(["a", "b", "c", "d", "e"]),
            "u": dsbo.Float(0.0, 1.0, when={"family": "e"}),
            "v": dsbo.Float(0.0, 1.0, when={"family": "e"}),
        },
        {"lr": 1e-3, "family": "a"},
        branch_corner,
        0.0,
        "log-lr bowl + family offset; family e best only with its own (u, v) near (0.8, 0.25)",
    )
    branch_int_problem = MixedProblem(
        "branch-int",
        {
            "lr": dsbo.Float(1e-5, 1.0, log=True),
            "model": dsbo.Choice(["linear", "tree", "net"]),
            "leaves": dsbo.Int(2, 64, log=True, when={"model": "tree"}),
            "depth": dsbo.Int(1, 8, when={"model": "net"}),
            "act": dsbo.Choice(["relu", "tanh", "sigmoid"], when={"model": "net"}),
        },
        {"lr": 1e-3, "model": "linear"},
        branch_int,
        0.0,
        "log-lr bowl + model offset; net best only at its own depth 6 with relu",
    )
    categorical = MixedProblem(
        "cat-only",
        {name: dsbo.Choice(levels) for name, levels in CAT_ONLY_LEVELS.items()},
        {name: levels[0] for name, levels in CAT_ONLY_LEVELS.items()},
        cat_only,
        min(CAT_ONLY_TABLE.values()),
        "4 categoricals (3 x 3 x 4 x 3 = 108 configurations), main effects + pairwise interactions",
    )
    family = MixedProblem(
        "family-digits",
        {
            "family": dsbo.Choice(["logreg", "svc", "knn", "forest"]),
            "C": dsbo.Float(1e-3, 1e3, log=True, when={"family": ["logreg", "svc"]}),
            "gamma": dsbo.Float(1e-4, 1.0, log=True, when={"family": "svc"}),
            "n_neighbors": dsbo.Int(1, 30, log=True, when={"family": "knn"}),
            "weights": dsbo.Choice(["uniform", "distance"], when={"family": "knn"}),
            "n_estimators": dsbo.Int(10, 100, log=True, when={"family": "forest"}),
            "max_depth": dsbo.Int(2, 16, when={"family": "forest"}),
            "max_features": dsbo.Float(0.05, 1.0, when={"family": "forest"}),
        },
        {"family": "logreg", "C": 1.0},
        family_error,
        None,
        "classifier family (logreg / RBF SVC / kNN / random forest) on 900 digits, 3-fold CV error",
    )
    return {p.name: p for p in (corner, branch_int_problem, categorical, family)}
