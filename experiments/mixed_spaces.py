"""dsbo on mixed search spaces (log, integer, categorical and conditional parameters) against
Optuna's TPE, Ax and quasi-random search, through one evaluation code for every arm.

Problems (minimization, each evaluation well under a second on one core):

1. ``svc-digits``: an RBF/poly/sigmoid/linear ``sklearn.svm.SVC`` on 900 rows of
   ``load_digits`` (pixels / 16), 3-fold stratified CV error on a fixed split. ``C``, ``gamma``,
   ``tol`` on a log scale, ``degree`` an integer, ``kernel``, ``shrinking`` and ``class_weight``
   categorical; ``gamma`` exists only for the rbf/poly/sigmoid kernels, ``degree`` only for poly,
   ``coef0`` only for poly/sigmoid. Library defaults = sklearn's (``gamma='scale'`` evaluated on
   the data). Optimum unknown: the best error is reported, not a regret.
2. ``branin-cat``: a CoCaBO-style mixed Branin: ``x1`` linear, ``x2`` on a log scale (mapped to
   Branin's ``[0, 15]``), a categorical ``c1`` that scales and offsets it and a categorical ``c2``
   that shifts ``x1`` and offsets it. Known optimum ``0.397887 + 0.3 = 0.697887`` (``c1=a``,
   ``c2=q``; every shift keeps a Branin minimizer inside the box).
3. ``ackley-cond``: a neural-network-training-shaped Ackley: ``optimizer`` (categorical) sets the
   best log learning rate and an offset, ``momentum`` exists only for sgd, ``layers`` is an
   integer, ``width`` a log-scale integer, ``dropout`` linear. Known optimum 0 (sgd, lr 10^-1.5,
   momentum 0.9, 4 layers, width 256, dropout 0.3). No linear constraint (TPE and random search
   would need rejection; left out so that every arm searches the same space).
4. ``cond-synthetic``: a synthetic space shaped like a tuning problem whose best category needs
   its own parameter set right: ``lr`` a log-scale float in ``[1e-5, 1]``, ``width`` a log-scale
   integer in ``[8, 1024]``, ``family`` a four-way categorical and ``shape`` a float that exists
   only for ``family=c``. The value is a bowl in log space,
   ``((log10 lr + 2) / 1.5)^2 + ((log2 width - 7) / 2)^2``, plus an offset per family: ``a`` 0.5,
   ``b`` and ``d`` 1.0, ``c`` ``1.5 (1 - exp(-(shape - 0.7)^2 / (2 * 0.08^2)))``, so that ``c`` is
   best only with ``shape`` near 0.7 (a uniform ``shape`` costs 1.2 on average, worse than ``a``).
   Known optimum 0 (``lr`` 0.01, ``width`` 128, ``family=c``, ``shape`` 0.7); library defaults
   ``lr`` 1e-3, ``width`` 64, ``family=a`` (value 1.19).
5. ``mlp-digits``: ``sklearn.neural_network.MLPClassifier`` (one hidden layer of ``width``
   units, 30 epochs, ``random_state=0``) on the 900 digits rows of ``svc-digits``, error on a
   fixed stratified holdout of 300 rows (trained on the other 600). ``learning_rate_init``,
   ``alpha``, ``width`` (integer) and ``batch_size`` (integer) on a log scale, ``activation``
   (relu/tanh/logistic) and ``solver`` (adam/sgd) categorical, ``momentum`` only for sgd.
   Library defaults = sklearn's (``batch_size='auto'`` is 200 rows here). A fit that fails
   (diverged weights) scores 1.0. Optimum unknown.
6. ``sgd-cancer``: ``sklearn.linear_model.SGDClassifier`` on standardized
   ``load_breast_cancer`` (569 rows, 30 features; the scaler fitted inside each fold),
   5-fold stratified CV error on a fixed split. ``loss`` (hinge/log_loss/modified_huber),
   ``penalty`` (l2/l1/elasticnet) with ``l1_ratio`` only for elasticnet, ``alpha`` on a log
   scale, ``learning_rate`` (optimal/constant/invscaling/adaptive) with ``eta0`` (log) only when
   it is not ``optimal``, ``average`` a boolean. Library defaults = sklearn's. A fold whose fit
   fails (overflow) counts as all wrong. Optimum unknown.

Arms (budget 40 evaluations each): a dsbo arm is a surrogate (``dsbo-gp``, ``dsbo-map-saas``)
followed by options: ``+winsorize`` or ``+copula`` (``outcome_warping``:
the surrogate fitted to the objective with its bad tail clipped at Tukey's fence, Ax's default
rule, or to normal scores of its ranks; compared paired with the unwarped arm too), then
``+bonsai`` (``bonsai=True``, ``default`` = the problem's library defaults; compared with the
same arm unpruned). Arms without a warping pass ``outcome_warping=None`` explicitly.
``+mixed`` fits the one-hot columns with the kernel of BoTorch's ``MixedSingleTaskGP``
(``surrogate={"name": "gp", "categorical": "mixed"}``) instead of the ARD Matern kernel;
``+md`` sets ``min_distance=0.01`` (the library default since issue 45), every other dsbo arm
``min_distance=0``; ``+explore`` sets ``stall_patience=3`` (a Thompson draw when the search
stalls, :mod:`dsbo.acquisition.exploration`; the library default since issue 45's second
slice; ``+explore5``: ``stall_patience=5``), every other dsbo arm ``stall_patience=0``; ``+warm`` starts each GP fit from the
previous fit's hyperparameters (``surrogate={"name": "gp", "warm_start": True}``, a fit from
BoTorch's initialization every 5 fits).
``dsbo-gp+copula+md+explore`` is what ``dsbo.minimize``'s defaults run on these spaces. Then
``optuna-tpe`` (``TPESampler(seed=seed)``, conditional parameters suggested
only while active), ``ax`` (Ax 1.3.1 ``Client``, default generation strategy; a conditional
parameter whose condition is one value of one parent is an Ax ``dependent_parameters`` child, one
whose condition lists several values cannot be a child in Ax's tree and is passed always, the
evaluation dropping it while inactive) and ``random`` (dsbo ``acquisition="sobol"``).

Runs are appended to ``runs.jsonl`` as they finish (a restart skips finished runs); the report
(``results.json``, ``README.md``, ``best_vs_evaluations.png``) is written from whatever is there.

    python experiments/mixed_spaces.py                          # 10 seeds, budget 40
    python experiments/mixed_spaces.py --arms dsbo-gp ax --seeds 5
    python experiments/mixed_spaces.py --report-only            # tables/plot from runs.jsonl
    python experiments/mixed_spaces.py --smoke                  # ~1 min: 1 seed, budget 6, 2 problems
    python experiments/mixed_spaces.py --problems mlp-digits sgd-cancer --seeds 3

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import math
import multiprocessing
import os
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "mixed_spaces"
BUDGET = 40
SMOKE_BUDGET = 6
#: --smoke runs the two problems with conditional parameters (all three take about twice as long).
SMOKE_PROBLEMS = ("svc-digits", "ackley-cond")
#: GP/random/TPE/Ax arms first, the MAP-SAAS ones (1.5-2x a GP arm's time) after.
FIRST_ARMS = ("dsbo-gp", "random", "optuna-tpe", "ax", "dsbo-gp+bonsai", "dsbo-gp+winsorize", "dsbo-gp+copula",
              "dsbo-gp+copula+bonsai", "dsbo-gp+copula+md", "dsbo-gp+copula+md+explore",
              "dsbo-gp+copula+md+explore5", "dsbo-gp+copula+md+explore+warm", "dsbo-gp+copula+mixed+md")
LATER_ARMS = ("dsbo-map-saas", "dsbo-map-saas+bonsai", "dsbo-map-saas+copula", "dsbo-map-saas+copula+bonsai")
ARMS = FIRST_ARMS + LATER_ARMS
#: --smoke runs one arm of each kind (the default, its variants' code paths, the baselines).
SMOKE_ARMS = ("dsbo-gp+copula+md+explore", "dsbo-gp+copula+mixed+md", "dsbo-gp+winsorize", "random", "optuna-tpe", "ax",
              "dsbo-gp+copula+bonsai", "dsbo-map-saas+copula")
#: What ``dsbo.minimize``'s defaults pick on these spaces (4-8 parameters: ``surrogate="auto"``
#: is the exact GP, ``outcome_warping="copula"``).
DEFAULT_ARM = "dsbo-gp+copula+md+explore"
BASELINES = ("optuna-tpe", "ax", "random")
#: Arms that are reported, never run by this version: the default as it was before issue 45
#: (one-hot columns in the ARD kernel, BoTorch's per-combination loop, no min_distance), whose
#: runs come from ``after_fixes/runs.jsonl`` (its ``dsbo-gp+copula`` arm, renamed).
REPORT_ONLY_ARMS = ("dsbo-default-before",)
#: An arm name is a surrogate followed by ``+`` options: an outcome warping, then ``+bonsai``.
WARPINGS = ("winsorize", "copula")
#: BONSAI arms, and the unpruned arm they are compared with.
BONSAI_ARMS = {a: a.removesuffix("+bonsai") for a in ARMS if a.endswith("+bonsai")}
#: Unpruned arms fitting warped outcomes (``outcome_warping``), and the unwarped arm.
WARPED_ARMS = {a: a.split("+")[0] for a in ARMS if a not in BONSAI_ARMS and set(a.split("+")[1:]) & set(WARPINGS)}
#: dsbo arms held to the goals against the baselines.
GOAL_ARMS = tuple(dict.fromkeys((DEFAULT_ARM, "dsbo-gp", "dsbo-map-saas", *WARPED_ARMS)))
EXTERNAL = {"optuna-tpe": "optuna", "ax": "ax"}


# ----------------------------------------------------------------------------- problems
@dataclass
class MixedProblem:
    name: str
    space: dict[str, Any]  # {name: dsbo parameter}
    default: dict[str, Any]  # the library defaults (active parameters only)
    evaluate: Callable[[dict[str, Any]], float]
    optimum: float | None  # known minimum, None if unknown
    note: str


_DIGITS: tuple[Any, Any] | None = None


def _digits() -> tuple[Any, Any]:
    global _DIGITS
    if _DIGITS is None:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        idx = np.random.default_rng(0).permutation(len(y))[:900]
        _DIGITS = (X[idx] / 16.0, y[idx])
    return _DIGITS


def svc_error(p: dict[str, Any]) -> float:
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.svm import SVC

    X, y = _digits()
    kwargs: dict[str, Any] = {
        "C": p["C"], "kernel": p["kernel"], "tol": p["tol"], "shrinking": p["shrinking"],
        "class_weight": None if p["class_weight"] == "none" else p["class_weight"],
    }  # fmt: skip
    for name in ("gamma", "degree", "coef0"):
        if name in p:
            kwargs[name] = p[name]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(1.0 - cross_val_score(SVC(**kwargs), X, y, cv=cv).mean())


def branin(x1: float, x2: float) -> float:
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


BRANIN_MIN = 0.397887357729738
C1 = {"a": (1.0, 0.3), "b": (0.5, 0.6), "c": (2.0, 0.0)}  # (scale, offset)
C2 = {"p": (0.0, 0.3), "q": (2.5, 0.0), "r": (-3.0, 0.2), "s": (5.0, 0.1)}  # (shift of x1, offset)


def branin_cat(p: dict[str, Any]) -> float:
    scale, offset = C1[p["c1"]]
    shift, offset2 = C2[p["c2"]]
    t2 = 3.0 * (math.log10(p["x2"]) + 3.0)  # [1e-3, 1e2] -> [0, 15]
    return scale * branin(p["x1"] + shift, t2) + offset + offset2


LR_OPT = {"adam": -2.5, "sgd": -1.5, "rmsprop": -3.5}
OPT_OFFSET = {"adam": 0.3, "sgd": 0.0, "rmsprop": 0.8}


def ackley_cond(p: dict[str, Any]) -> float:
    z = [
        (math.log10(p["lr"]) - LR_OPT[p["optimizer"]]) / 1.5,
        (math.log2(p["width"]) - 8.0) / 2.0,
        (p["layers"] - 4) / 2.0,
        (p["dropout"] - 0.3) / 0.25,
    ]
    if p["optimizer"] == "sgd":
        z.append((p["momentum"] - 0.9) / 0.3)
    d = len(z)
    value = (
        -20.0 * math.exp(-0.2 * math.sqrt(sum(v * v for v in z) / d))
        - math.exp(sum(math.cos(2 * math.pi * v) for v in z) / d)
        + 20.0 + math.e
    )  # fmt: skip
    return max(value, 0.0) + OPT_OFFSET[p["optimizer"]]


FAMILY_OFFSET = {"a": 0.5, "b": 1.0, "d": 1.0}  # family "c": set by ``shape``
SHAPE_OPT, SHAPE_WIDTH, SHAPE_PENALTY = 0.7, 0.08, 1.5


def cond_synthetic(p: dict[str, Any]) -> float:
    bowl = ((math.log10(p["lr"]) + 2.0) / 1.5) ** 2 + ((math.log2(p["width"]) - 7.0) / 2.0) ** 2
    if p["family"] == "c":
        offset = SHAPE_PENALTY * (1.0 - math.exp(-((p["shape"] - SHAPE_OPT) ** 2) / (2 * SHAPE_WIDTH**2)))
    else:
        offset = FAMILY_OFFSET[p["family"]]
    return bowl + offset


_DIGITS_HOLDOUT: tuple[Any, Any, Any, Any] | None = None


def _digits_holdout() -> tuple[Any, Any, Any, Any]:
    """The 900 digits rows split once: 600 to train on, a stratified 300 to score."""
    global _DIGITS_HOLDOUT
    if _DIGITS_HOLDOUT is None:
        from sklearn.model_selection import train_test_split

        X, y = _digits()
        _DIGITS_HOLDOUT = tuple(train_test_split(X, y, test_size=300, stratify=y, random_state=0))
    return _DIGITS_HOLDOUT


MLP_EPOCHS = 30


def mlp_error(p: dict[str, Any]) -> float:
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    X_train, X_val, y_train, y_val = _digits_holdout()
    kwargs: dict[str, Any] = {
        "hidden_layer_sizes": (int(p["width"]),), "activation": p["activation"], "solver": p["solver"],
        "alpha": p["alpha"], "learning_rate_init": p["learning_rate_init"], "batch_size": int(p["batch_size"]),
        "max_iter": MLP_EPOCHS, "random_state": 0,
    }  # fmt: skip
    if "momentum" in p:
        kwargs["momentum"] = p["momentum"]
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        try:
            model = MLPClassifier(**kwargs).fit(X_train, y_train)
            error = 1.0 - model.score(X_val, y_val)
        except (ValueError, FloatingPointError):  # diverged weights
            return 1.0
    return float(error) if math.isfinite(error) else 1.0


_CANCER: tuple[Any, Any] | None = None


def _cancer() -> tuple[Any, Any]:
    global _CANCER
    if _CANCER is None:
        from sklearn.datasets import load_breast_cancer

        _CANCER = load_breast_cancer(return_X_y=True)
    return _CANCER


def sgd_error(p: dict[str, Any]) -> float:
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    X, y = _cancer()
    kwargs: dict[str, Any] = {
        "loss": p["loss"], "penalty": p["penalty"], "alpha": p["alpha"], "learning_rate": p["learning_rate"],
        "average": p["average"], "random_state": 0,
    }  # fmt: skip
    for name in ("l1_ratio", "eta0"):
        if name in p:
            kwargs[name] = p[name]
    model = make_pipeline(StandardScaler(), SGDClassifier(**kwargs))
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        scores = cross_val_score(model, X, y, cv=cv, error_score=0.0)  # a failed fold: all wrong
    return float(1.0 - np.mean(scores))


def make_problems() -> dict[str, MixedProblem]:
    import dsbo

    X, _ = _digits()
    gamma_scale = float(1.0 / (X.shape[1] * X.var()))  # sklearn's gamma="scale" on these data
    svc = MixedProblem(
        "svc-digits",
        {
            "C": dsbo.Float(1e-2, 1e3, log=True),
            "kernel": dsbo.Choice(["rbf", "poly", "sigmoid", "linear"]),
            "gamma": dsbo.Float(1e-4, 10.0, log=True, when={"kernel": ["rbf", "poly", "sigmoid"]}),
            "degree": dsbo.Int(1, 6, when={"kernel": "poly"}),
            "coef0": dsbo.Float(-1.0, 1.0, when={"kernel": ["poly", "sigmoid"]}),
            "tol": dsbo.Float(1e-5, 1e-1, log=True),
            "shrinking": dsbo.Choice([True, False]),
            "class_weight": dsbo.Choice(["none", "balanced"]),
        },
        {"C": 1.0, "kernel": "rbf", "gamma": round(gamma_scale, 6), "tol": 1e-3, "shrinking": True,
         "class_weight": "none"},
        svc_error,
        None,
        f"SVC on 900 digits, 3-fold CV error; defaults = sklearn's (gamma='scale' = {gamma_scale:.4g})",
    )
    branin_problem = MixedProblem(
        "branin-cat",
        {
            "x1": dsbo.Float(-5.0, 10.0),
            "x2": dsbo.Float(1e-3, 1e2, log=True),
            "c1": dsbo.Choice(["a", "b", "c"]),
            "c2": dsbo.Choice(["p", "q", "r", "s"]),
        },
        {"x1": 2.5, "x2": round(10**-0.5, 6), "c1": "b", "c2": "p"},
        branin_cat,
        BRANIN_MIN + 0.3,
        "scaled/shifted Branin, x2 on a log scale, 2 categoricals (3 x 4)",
    )
    ackley = MixedProblem(
        "ackley-cond",
        {
            "optimizer": dsbo.Choice(["adam", "sgd", "rmsprop"]),
            "lr": dsbo.Float(1e-5, 1.0, log=True),
            "momentum": dsbo.Float(0.0, 0.99, when={"optimizer": "sgd"}),
            "layers": dsbo.Int(1, 8),
            "width": dsbo.Int(8, 1024, log=True),
            "dropout": dsbo.Float(0.0, 0.8),
        },
        {"optimizer": "adam", "lr": 1e-3, "layers": 2, "width": 64, "dropout": 0.0},
        ackley_cond,
        0.0,
        "Ackley over (log lr, log2 width, layers, dropout[, momentum]) + optimizer offset",
    )
    synthetic = MixedProblem(
        "cond-synthetic",
        {
            "lr": dsbo.Float(1e-5, 1.0, log=True),
            "width": dsbo.Int(8, 1024, log=True),
            "family": dsbo.Choice(["a", "b", "c", "d"]),
            "shape": dsbo.Float(0.0, 1.0, when={"family": "c"}),
        },
        {"lr": 1e-3, "width": 64, "family": "a"},
        cond_synthetic,
        0.0,
        "log-space bowl in (lr, width) + family offset; family c best only with its conditional shape near 0.7",
    )
    mlp = MixedProblem(
        "mlp-digits",
        {
            "learning_rate_init": dsbo.Float(1e-4, 1.0, log=True),
            "alpha": dsbo.Float(1e-6, 1e-1, log=True),
            "width": dsbo.Int(8, 256, log=True),
            "activation": dsbo.Choice(["relu", "tanh", "logistic"]),
            "solver": dsbo.Choice(["adam", "sgd"]),
            "momentum": dsbo.Float(0.0, 0.99, when={"solver": "sgd"}),
            "batch_size": dsbo.Int(32, 256, log=True),
        },
        {"learning_rate_init": 1e-3, "alpha": 1e-4, "width": 100, "activation": "relu", "solver": "adam",
         "batch_size": 200},
        mlp_error,
        None,
        f"MLPClassifier (1 hidden layer, {MLP_EPOCHS} epochs) on 900 digits, error on a stratified 300-row "
        "holdout; defaults = sklearn's (batch_size='auto' = 200)",
    )
    sgd = MixedProblem(
        "sgd-cancer",
        {
            "loss": dsbo.Choice(["hinge", "log_loss", "modified_huber"]),
            "penalty": dsbo.Choice(["l2", "l1", "elasticnet"]),
            "l1_ratio": dsbo.Float(0.0, 1.0, when={"penalty": "elasticnet"}),
            "alpha": dsbo.Float(1e-6, 1.0, log=True),
            "learning_rate": dsbo.Choice(["optimal", "constant", "invscaling", "adaptive"]),
            "eta0": dsbo.Float(1e-4, 1.0, log=True, when={"learning_rate": ["constant", "invscaling", "adaptive"]}),
            "average": dsbo.Choice([False, True]),
        },
        {"loss": "hinge", "penalty": "l2", "alpha": 1e-4, "learning_rate": "optimal", "average": False},
        sgd_error,
        None,
        "SGDClassifier on standardized breast cancer (569 rows), 5-fold CV error; defaults = sklearn's",
    )
    return {p.name: p for p in (svc, branin_problem, ackley, synthetic, mlp, sgd)}


# ----------------------------------------------------------------------------- the shared evaluation
def is_active(parameter: Any, values: dict[str, Any]) -> bool:
    return all(parent in values and values[parent] in allowed for parent, allowed in parameter.conditions.items())


def active_values(space: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The values of the active parameters (declaration order; parents come first): what every
    arm's evaluation receives, whatever the optimizer handed out."""
    out: dict[str, Any] = {}
    for name, parameter in space.items():
        if is_active(parameter, out) and name in params:
            out[name] = params[name]
    return out


def num_changed(params: dict[str, Any], default: dict[str, Any]) -> int:
    """Parameters whose value differs from the default (a parameter active in only one of the
    two counts as changed)."""
    count = 0
    for name in set(params) | set(default):
        a, b = params.get(name), default.get(name)
        if isinstance(a, float) or isinstance(b, float):
            same = a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
        else:
            same = a == b and type(a) is type(b)
        count += not same
    return count


class Recorder:
    """Wraps the problem's function: every arm evaluates through it."""

    def __init__(self, problem: MixedProblem):
        self.problem = problem
        self.values: list[float] = []
        self.params: list[dict[str, Any]] = []
        self.eval_times: list[float] = []

    def __call__(self, params: dict[str, Any]) -> float:
        values = active_values(self.problem.space, dict(params))
        t0 = time.perf_counter()
        y = float(self.problem.evaluate(values))
        self.eval_times.append(time.perf_counter() - t0)
        self.values.append(y)
        self.params.append(values)
        return y


# ----------------------------------------------------------------------------- arms
def run_dsbo(problem: MixedProblem, arm: str, seed: int, budget: int, smoke: bool, f: Recorder) -> dict[str, Any]:
    import dsbo

    options: dict[str, Any] = {"seed": seed, "dry_run": False}
    if arm == "random":
        options.update(surrogate="gp", acquisition="sobol")
    else:
        options["surrogate"] = "map-saas" if "map-saas" in arm else "gp"
        if "+mixed" in arm:  # MixedSingleTaskGP's kernel instead of one-hot columns in the ARD kernel
            options["surrogate"] = {"name": "gp", "categorical": "mixed"}
        if "+warm" in arm:  # each fit starts from the previous one's hyperparameters
            options["surrogate"] = {"name": "gp", "warm_start": True}
        if smoke and options["surrogate"] == "map-saas":  # seconds instead of a minute per run
            options["surrogate"] = {"name": "map-saas", "num_taus": 2, "fit_restarts": 0}
        if arm.endswith("+bonsai"):
            options.update(bonsai=True, default=dict(problem.default))
        warping = [w for w in arm.split("+")[1:] if w in WARPINGS]
        options["outcome_warping"] = warping[0] if warping else None  # explicit: the library default may change
    from dsbo.acquisition import OptimizerSettings

    # +md: min_distance 0.01 (the library default since issue 45); other arms state it explicitly
    # +explore: stall_patience 3 (the library default since issue 45's second slice), others 0
    settings: dict[str, Any] = {"min_distance": 0.01 if "+md" in arm else 0.0,
                                "stall_patience": stall_patience(arm)}
    if smoke:
        settings.update(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)
    if arm != "random":
        options["optimizer"] = OptimizerSettings(**settings)
    result = dsbo.minimize(f, problem.space, budget=budget, **options)
    h = result.history
    init = h["generator"].isin(["default", "sobol-init"])
    proposal = h.loc[~init, "fit_time"].fillna(0) + h.loc[~init, "acq_time"].fillna(0)
    out: dict[str, Any] = {
        "proposal_times": [float(t) for t in proposal],
        "generators": h["generator"].tolist(),
        "reported_best": result.best_value,
        "near_repeats": near_repeats(result.campaign),
    }
    if arm.endswith("+bonsai") and "num_changed" in h and h["objective"].notna().any():
        best_row = h.loc[h["objective"].idxmin()]
        out["dsbo_num_changed_best"] = None if math.isnan(best_row["num_changed"]) else int(best_row["num_changed"])
    return out


def stall_patience(arm: str) -> int:
    """``+explore`` is patience 3, ``+exploreN`` patience N, no such option 0."""
    options = [o for o in arm.split("+")[1:] if o.startswith("explore")]
    return (int(options[0].removeprefix("explore") or 3)) if options else 0


def near_repeats(campaign: Any, tol: float = 0.01) -> int:
    """BO trials (after the initial design) within ``tol`` of an earlier trial in every
    unit-cube coordinate of the search space's encoding (log scales, one-hot categoricals):
    proposals that polish a digit instead of exploring."""
    import torch

    trials = campaign.store.trials()
    if not trials:
        return 0
    bounds = campaign.problem.bounds
    X = (torch.tensor([t.x for t in trials], dtype=torch.double) - bounds[0]) / (bounds[1] - bounds[0])
    count = 0
    for i, trial in enumerate(trials):
        if i and trial.generator not in ("default", "sobol-init"):
            count += bool((X[:i] - X[i]).abs().amax(dim=-1).min() < tol)
    return count


def suggest_active(trial: Any, space: dict[str, Any]) -> dict[str, Any]:
    """The active parameters of the dsbo ``space`` suggested by an Optuna trial, define-by-run
    (declaration order: parents first; a conditional parameter only while it is active)."""
    from dsbo.space import Choice, Float, Int

    params: dict[str, Any] = {}
    for name, p in space.items():
        if not is_active(p, params):
            continue
        if isinstance(p, Float):
            params[name] = trial.suggest_float(name, p.low, p.high, log=p.log)
        elif isinstance(p, Int):
            params[name] = trial.suggest_int(name, p.low, p.high, log=p.log)
        elif isinstance(p, Choice):
            params[name] = trial.suggest_categorical(name, list(p.values))
    return params


def run_tpe(problem: MixedProblem, seed: int, budget: int, f: Recorder) -> dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    times = []
    for _ in range(budget):
        t0 = time.perf_counter()
        trial = study.ask()
        params = suggest_active(trial, problem.space)
        times.append(time.perf_counter() - t0)
        study.tell(trial, f(params))
    return {"proposal_times": times}


def ax_parameters(problem: MixedProblem) -> tuple[list[Any], list[str], list[str]]:
    """Ax parameter configs; the conditional parameters that are Ax children and the ones
    passed always (Ax's hierarchy is a tree: a child hangs under one value of one parent)."""
    from ax import ChoiceParameterConfig, RangeParameterConfig

    from dsbo.space import Choice, Float, Int

    children: dict[str, dict[Any, list[str]]] = {}
    native, flattened = [], []
    for name, p in problem.space.items():
        conditions = p.conditions
        if not conditions:
            continue
        (parent, allowed), *rest = conditions.items()
        if not rest and len(allowed) == 1:
            children.setdefault(parent, {}).setdefault(allowed[0], []).append(name)
            native.append(name)
        else:
            flattened.append(name)
    configs = []
    for name, p in problem.space.items():
        if isinstance(p, Float | Int):
            kind = "float" if isinstance(p, Float) else "int"
            configs.append(RangeParameterConfig(name=name, bounds=(p.low, p.high), parameter_type=kind,
                                                scaling="log" if p.log else "linear"))
        elif isinstance(p, Choice):
            kind = "bool" if all(isinstance(v, bool) for v in p.values) else "str"
            configs.append(ChoiceParameterConfig(name=name, values=list(p.values), parameter_type=kind,
                                                 dependent_parameters=children.get(name) or None))
    return configs, native, flattened


def run_ax(problem: MixedProblem, seed: int, budget: int, f: Recorder) -> dict[str, Any]:
    from ax import Client

    logging.disable(logging.WARNING)  # Ax logs every trial at INFO, and warns per fit
    configs, native, flattened = ax_parameters(problem)
    client = Client(random_seed=seed)
    client.configure_experiment(parameters=configs)
    client.configure_optimization(objective="-objective")
    client.configure_generation_strategy(initialization_random_seed=seed)
    times = []
    for _ in range(budget):
        t0 = time.perf_counter()
        trials = client.get_next_trials(max_trials=1)
        times.append(time.perf_counter() - t0)
        (index, params), = trials.items()
        client.complete_trial(index, {"objective": f(dict(params))})
    return {"proposal_times": times, "ax_native_children": native, "ax_flattened": flattened}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One (problem, arm, seed) run; in a worker process on one thread."""
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    problem = make_problems()[job["problem"]]
    f = Recorder(problem)
    start = time.perf_counter()
    arm = job["arm"]
    if arm == "optuna-tpe":
        extra = run_tpe(problem, job["seed"], job["budget"], f)
    elif arm == "ax":
        extra = run_ax(problem, job["seed"], job["budget"], f)
    else:
        extra = run_dsbo(problem, arm, job["seed"], job["budget"], job["smoke"], f)
    seconds = time.perf_counter() - start
    values = [v if math.isfinite(v) else math.inf for v in f.values]
    trace = list(np.minimum.accumulate(values)) if values else []
    best_i = int(np.argmin(values)) if values else None
    return {
        **job,
        "values": values,
        "trace": [float(t) for t in trace],
        "final_best": float(trace[-1]) if trace else math.nan,
        "params": f.params,
        "best_params": f.params[best_i] if best_i is not None else None,
        "num_changed_best": num_changed(f.params[best_i], problem.default) if best_i is not None else None,
        "num_evaluations": len(values),
        "median_eval_s": float(np.median(f.eval_times)) if f.eval_times else math.nan,
        "seconds": seconds,
        "threads": 1,
        **extra,
    }


# ----------------------------------------------------------------------------- running
def job_key(run: dict[str, Any]) -> tuple:
    return (run["problem"], run["arm"], run["seed"], run["budget"], run["smoke"])


def available_arms(arms: list[str], smoke: bool) -> list[str]:
    import importlib.util

    out = []
    for arm in arms:
        module = EXTERNAL.get(arm)
        if module and importlib.util.find_spec(module) is None:
            message = f"{arm}: {module} is not installed (pip install -e '.[compare]'); skipping this arm"
            if not smoke:
                raise SystemExit(message)
            print(message, flush=True)
            continue
        out.append(arm)
    return out


def run_all(jobs: list[dict[str, Any]], out: Path, workers: int) -> None:
    """Run the jobs not yet in ``out/runs.jsonl``, appending each as it finishes."""
    log = out / "runs.jsonl"
    done: dict[tuple, dict[str, Any]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            if line.strip():
                run = json.loads(line)
                done[job_key(run)] = run
    todo = [j for j in jobs if job_key(j) not in done]
    if len(todo) < len(jobs):
        print(f"resuming: {len(jobs) - len(todo)} of {len(jobs)} runs already in {log}", flush=True)
    started = time.perf_counter()

    def record(run: dict[str, Any], sink: Any, i: int) -> None:
        done[job_key(run)] = run
        fcntl.flock(sink, fcntl.LOCK_EX)  # two runners (e.g. GP arms and MAP-SAAS arms) may share the file
        sink.write(json.dumps(run) + "\n")
        sink.flush()
        fcntl.flock(sink, fcntl.LOCK_UN)
        print(f"[{i}/{len(todo)}] {run['problem']} {run['arm']} seed {run['seed']}: best {run['final_best']:.4g}, "
              f"{run['seconds']:.0f}s (elapsed {time.perf_counter() - started:.0f}s)", flush=True)

    with log.open("a") as sink:
        if workers <= 1:
            for i, job in enumerate(todo, 1):
                record(run_job(job), sink, i)
        else:
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                futures = [pool.submit(run_job, j) for j in todo]
                for i, future in enumerate(as_completed(futures), 1):
                    record(future.result(), sink, i)


# ----------------------------------------------------------------------------- report
def mean_se(values: list[float]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1) / math.sqrt(arr.size)) if arr.size > 1 else 0.0


def wilcoxon(a: dict[int, float], b: dict[int, float]) -> dict[str, Any]:
    """Paired two-sided Wilcoxon signed-rank test over the seeds both arms ran."""
    from scipy.stats import wilcoxon as test

    seeds = sorted(set(a) & set(b))
    diffs = [a[s] - b[s] for s in seeds]
    out: dict[str, Any] = {"pairs": len(seeds), "wins": sum(d < 0 for d in diffs), "losses": sum(d > 0 for d in diffs)}
    if len(seeds) < 2 or all(d == 0 for d in diffs):
        out["p"] = None
    else:
        out["p"] = float(test([a[s] for s in seeds], [b[s] for s in seeds]).pvalue)
    return out


def summarize(runs: list[dict[str, Any]], problems: dict[str, MixedProblem], budget: int, smoke: bool) -> dict[str, Any]:
    by: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in runs:
        by.setdefault((r["problem"], r["arm"]), {})[r["seed"]] = r
    table = []
    for p in problems.values():
        for arm in ARMS + REPORT_ONLY_ARMS:
            rs = by.get((p.name, arm))
            if not rs:
                continue
            finals = [r["final_best"] for r in rs.values()]
            mean, se = mean_se(finals)
            times = [t for r in rs.values() for t in r["proposal_times"]]
            row: dict[str, Any] = {
                "problem": p.name, "arm": arm, "seeds": len(rs), "seed_ids": sorted(rs),
                "final_mean": mean, "final_se": se,
                "median_proposal_s": float(np.median(times)) if times else math.nan,
                "median_eval_s": float(np.median([r["median_eval_s"] for r in rs.values()])),
            }  # fmt: skip
            recorded = [r for r in rs.values() if "params" in r]
            if recorded:  # evaluations of a configuration already evaluated in the same run
                row["repeats_mean"] = float(np.mean([len(r["params"]) - len({json.dumps(q, sort_keys=True) for q in r["params"]})
                                                     for r in recorded]))
                row["repeats_runs"] = len(recorded)
            near = [r["near_repeats"] for r in rs.values() if "near_repeats" in r]
            if near:  # dsbo arms: BO proposals within 1% of an earlier trial
                bo = [sum(g not in ("default", "sobol-init") for g in r["generators"]) for r in rs.values() if "near_repeats" in r]
                row["near_share_max"] = max(n / max(b, 1) for n, b in zip(near, bo, strict=True))
                row["near_mean"] = float(np.mean(near))
            if p.optimum is not None:
                row["regret_mean"], row["regret_se"] = mean_se([v - p.optimum for v in finals])
            if arm in BONSAI_ARMS:
                plain = by.get((p.name, BONSAI_ARMS[arm]), {})
                row["changed_best_mean"] = mean_se([r["num_changed_best"] for r in rs.values()])[0]
                row["changed_best_max"] = max(r["num_changed_best"] for r in rs.values())
                ratios = {s: r["final_best"] / plain[s]["final_best"] for s, r in rs.items()
                          if s in plain and plain[s]["final_best"] > 0}
                row["ratio_to_unpruned"] = ratios
                row["ratio_mean"] = mean_se(list(ratios.values()))[0] if ratios else math.nan
                row["ratio_pairs"] = len(ratios)
                row["dsbo_num_changed_best"] = [r.get("dsbo_num_changed_best") for r in rs.values()]
            table.append(row)

    tests = []
    for p in problems.values():
        for mine in GOAL_ARMS:
            a = {s: r["final_best"] for s, r in by.get((p.name, mine), {}).items()}
            for other in BASELINES + ((WARPED_ARMS[mine],) if mine in WARPED_ARMS else ()):
                b = {s: r["final_best"] for s, r in by.get((p.name, other), {}).items()}
                if a and b:
                    tests.append({"problem": p.name, "arm": mine, "vs": other, **wilcoxon(a, b)})
    _RUNS_BY.clear()
    _RUNS_BY.update({k: {s: r["final_best"] for s, r in v.items()} for k, v in by.items()})
    goals = assess(table, problems)
    return {"budget": budget, "smoke": smoke, "table": table, "wilcoxon": tests, "goals": goals,
            "problems": {p.name: {"optimum": p.optimum, "default": p.default, "note": p.note,
                                  "space": {n: q.to_config() for n, q in p.space.items()}}
                         for p in problems.values()}}


def assess(table: list[dict[str, Any]], problems: dict[str, MixedProblem]) -> list[dict[str, Any]]:
    """The stated goals, each on the seeds both arms ran (paired); a verdict on fewer than
    three pairs is marked inconclusive."""
    rows = {(r["problem"], r["arm"]): r for r in table}
    runs = _RUNS_BY
    goals = []

    def verdict(met: bool, pairs: int) -> str:
        return ("met" if met else "MISSED") + (f" (inconclusive: {pairs} pair{'s' * (pairs != 1)})" if pairs < 3 else "")

    for p in problems:
        for mine in GOAL_ARMS:
            a = runs.get((p, mine), {})
            if not a:
                continue
            before = REPORT_ONLY_ARMS if mine == DEFAULT_ARM else ()
            for other in ("random", "optuna-tpe", "ax", *before):
                b = runs.get((p, other), {})
                seeds = sorted(set(a) & set(b))
                if not seeds:
                    continue
                ma, sa = mean_se([a[s] for s in seeds])
                mb, sb = mean_se([b[s] for s in seeds])
                if other == "ax":
                    goal, met = f"{mine} within 1 se of ax or better", ma <= mb + max(sa, sb)
                else:
                    goal, met = f"{mine} beats {other}", ma < mb
                goals.append({"goal": goal, "problem": p, "met": met, "pairs": len(seeds), "verdict": verdict(met, len(seeds)),
                              "detail": f"{ma:.4g} +- {sa:.2g} vs {mb:.4g} +- {sb:.2g} on seeds {seeds}"})
        for arm in BONSAI_ARMS:
            b = rows.get((p, arm))
            if b is None or not b["ratio_pairs"]:
                continue
            met = b["ratio_mean"] <= 1.01 and b["changed_best_max"] <= 3
            goals.append({"goal": f"{arm} within 1% of unpruned, <= 3 changes", "problem": p, "met": met,
                          "pairs": b["ratio_pairs"], "verdict": verdict(met, b["ratio_pairs"]),
                          "detail": f"best/unpruned {b['ratio_mean']:.3f} over {b['ratio_pairs']} seeds, "
                                    f"changed parameters of the best point mean {b['changed_best_mean']:.1f} max {b['changed_best_max']}"})
    return goals


_RUNS_BY: dict[tuple[str, str], dict[int, float]] = {}


def seeds_header(table: list[dict[str, Any]]) -> str:
    counts = sorted({r["seeds"] for r in table})
    return "seeds run per row: " + (" or ".join(map(str, counts)) if counts else "none") + " (column `seeds`)"


def fmt(x: Any, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}g}"


def write_markdown(summary: dict[str, Any], path: Path, notes: str = "") -> None:
    table, budget = summary["table"], summary["budget"]
    lines = [
        f"# Mixed search spaces: dsbo vs Optuna TPE, Ax, random ({seeds_header(table)}; "
        f"budget {budget} evaluations per run)" + (" (smoke)" if summary["smoke"] else ""),
        "",
        "Final best (lower is better) and regret: mean +- standard error over the seeds run. "
        "Time per proposal: median over all proposals of all seeds (dsbo: fit + acquisition time of "
        "each BO trial; Optuna: ask + suggest; Ax: get_next_trials), on a shared 2-core machine "
        "(upper bounds).",
        "",
        "| problem | arm | seeds | final best | regret | median s / proposal | repeated evaluations per run (runs recorded) | BO proposals within 1% of an earlier trial (mean per run / worst run's share) | BONSAI: changed params of best (mean / max) | BONSAI: best / unpruned best (mean, pairs) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        bonsai = r["arm"] in BONSAI_ARMS
        lines.append(
            f"| {r['problem']} | {r['arm']} | {r['seeds']} | {fmt(r['final_mean'])} +- {fmt(r['final_se'], 2)} | "
            + (f"{fmt(r['regret_mean'])} +- {fmt(r['regret_se'], 2)}" if "regret_mean" in r else "unknown optimum")
            + f" | {fmt(r['median_proposal_s'], 3)} | "
            + (f"{r['repeats_mean']:.1f} ({r['repeats_runs']})" if "repeats_mean" in r else "-")
            + " | "
            + (f"{r['near_mean']:.1f} / {r['near_share_max']:.0%}" if "near_mean" in r else "-")
            + " | "
            + (f"{fmt(r['changed_best_mean'], 2)} / {r['changed_best_max']}" if bonsai else "")
            + " | "
            + (f"{fmt(r['ratio_mean'])} ({r['ratio_pairs']})" if bonsai else "")
            + " |"
        )
    lines += ["", "Paired two-sided Wilcoxon signed-rank tests on the final best, over the seeds both arms ran "
              "(wins = seeds where the dsbo arm is lower):", "",
              "| problem | dsbo arm | vs | pairs | wins / losses | p |", "|---|---|---|---|---|---|"]
    for t in summary["wilcoxon"]:
        lines.append(f"| {t['problem']} | {t['arm']} | {t['vs']} | {t['pairs']} | {t['wins']} / {t['losses']} | {fmt(t['p'], 3)} |")
    lines += ["", "Goals, on the seeds both arms ran (paired means +- se; fewer than 3 pairs: inconclusive):", "", "| goal | problem | met | detail |", "|---|---|---|---|"]
    for g in summary["goals"]:
        lines.append(f"| {g['goal']} | {g['problem']} | {g['verdict']} | {g['detail']} |")
    lines += ["", "Problems:", ""]
    for name, p in summary["problems"].items():
        lines.append(f"- `{name}`: {p['note']}; optimum {fmt(p['optimum'], 7) if p['optimum'] is not None else 'unknown'}; "
                     f"library defaults {p['default']}")
    if notes:
        lines += ["", notes.strip()]
    path.write_text("\n".join(lines) + "\n")


def plot(runs: list[dict[str, Any]], problems: dict[str, MixedProblem], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [p for p in problems if any(r["problem"] == p for r in runs)]
    fig, axes = plt.subplots(1, max(len(names), 1), figsize=(5 * max(len(names), 1), 4), squeeze=False)
    colors = plt.get_cmap("tab20")
    for ax, name in zip(axes[0], names, strict=False):
        optimum = problems[name].optimum
        for j, arm in enumerate(ARMS):
            rs = [r for r in runs if r["problem"] == name and r["arm"] == arm and r["trace"]]
            if not rs:
                continue
            n = min(len(r["trace"]) for r in rs)
            traces = np.array([r["trace"][:n] for r in rs])
            if optimum is not None:
                traces = np.maximum(traces - optimum, 1e-12)
            mean = traces.mean(0)
            se = traces.std(0, ddof=1) / math.sqrt(len(rs)) if len(rs) > 1 else np.zeros(n)
            x = np.arange(1, n + 1)
            style = "--" if "bonsai" in arm else "-"
            ax.plot(x, mean, style, color=colors(j), label=f"{arm} ({len(rs)})")
            ax.fill_between(x, mean - se, mean + se, color=colors(j), alpha=0.15)
        ax.set_title(name)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("regret" if optimum is not None else "best CV error")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="1 seed, budget 6, 2 problems, 8 arms, tiny optimizer settings")
    parser.add_argument("--seeds", type=int, default=None, help="seeds 0..n-1 (default 10; smoke 1)")
    parser.add_argument("--budget", type=int, default=None, help=f"evaluations per run (default {BUDGET})")
    parser.add_argument("--arms", nargs="*", default=None, choices=ARMS)
    parser.add_argument("--problems", nargs="*", default=None, help="problem names (default all; smoke: "
                        f"{' '.join(SMOKE_PROBLEMS)})")
    parser.add_argument("--workers", type=int, default=2, help="runs at once (processes, one thread each)")
    parser.add_argument("--report-only", action="store_true", help="run nothing: report the runs in runs.jsonl")
    parser.add_argument("--notes", type=Path, default=None, help="markdown appended to README.md")
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)

    smoke = args.smoke
    seeds = args.seeds or (1 if smoke else 10)
    budget = args.budget or (SMOKE_BUDGET if smoke else BUDGET)
    problems = make_problems()
    chosen = args.problems or (SMOKE_PROBLEMS if smoke else list(problems))
    unknown = sorted(set(chosen) - set(problems))
    if unknown:
        parser.error(f"unknown problems {unknown}; choose from {list(problems)}")
    problems = {k: v for k, v in problems.items() if k in chosen}
    arms = available_arms(list(args.arms or (SMOKE_ARMS if smoke else ARMS)), smoke)
    args.out.mkdir(parents=True, exist_ok=True)
    # GP/random/TPE/Ax/GP+BONSAI for every seed first, MAP-SAAS after (seed-major inside each)
    phases = [[a for a in arms if a in FIRST_ARMS], [a for a in arms if a in LATER_ARMS]]
    jobs = [{"problem": p, "arm": a, "seed": s, "budget": budget, "smoke": smoke}
            for phase in phases for s in range(seeds) for p in problems for a in phase]
    if not args.report_only:
        run_all(jobs, args.out, 1 if smoke else args.workers)
    # the report covers every run recorded (other arms and seeds too), not only this call's
    runs = [json.loads(line) for line in (args.out / "runs.jsonl").read_text().splitlines() if line.strip()]
    runs = [r for r in runs if r["budget"] == budget and r["smoke"] == smoke and r["problem"] in problems]
    summary = summarize(runs, problems, budget, smoke)
    summary["python"] = sys.version.split()[0]
    summary["cpu_count"] = os.cpu_count()
    (args.out / "results.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1, default=str))
    notes = args.notes.read_text() if args.notes and args.notes.exists() else ""
    write_markdown(summary, args.out / "README.md", notes)
    plot(runs, problems, args.out / "best_vs_evaluations.png")
    return summary


if __name__ == "__main__":
    main()
