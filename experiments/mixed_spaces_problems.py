"""The problems of ``mixed_spaces.py`` (see its docstring) and the evaluation every arm goes
through: a mixed space per problem, its library defaults and known optimum, and
:class:`Recorder`, which hands each evaluation the active parameters only.

``suggest_active`` suggests a dsbo space's active parameters through an Optuna trial
(define-by-run); the adapters and early-stopping experiments use it too.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


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
        "C": p["C"],
        "kernel": p["kernel"],
        "tol": p["tol"],
        "shrinking": p["shrinking"],
        "class_weight": None if p["class_weight"] == "none" else p["class_weight"],
    }
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
        + 20.0
        + math.e
    )
    return max(value, 0.0) + OPT_OFFSET[p["optimizer"]]


FAMILY_OFFSET = {"a": 0.5, "b": 1.0, "d": 1.0}  # family "c": set by ``shape``
SHAPE_OPT, SHAPE_WIDTH, SHAPE_PENALTY = 0.7, 0.08, 1.5


def cond_synthetic(p: dict[str, Any]) -> float:
    bowl = ((math.log10(p["lr"]) + 2.0) / 1.5) ** 2 + ((math.log2(p["width"]) - 7.0) / 2.0) ** 2
    if p["family"] == "c":
        offset = SHAPE_PENALTY * (
            1.0 - math.exp(-((p["shape"] - SHAPE_OPT) ** 2) / (2 * SHAPE_WIDTH**2))
        )
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
        "hidden_layer_sizes": (int(p["width"]),),
        "activation": p["activation"],
        "solver": p["solver"],
        "alpha": p["alpha"],
        "learning_rate_init": p["learning_rate_init"],
        "batch_size": int(p["batch_size"]),
        "max_iter": MLP_EPOCHS,
        "random_state": 0,
    }
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
        "loss": p["loss"],
        "penalty": p["penalty"],
        "alpha": p["alpha"],
        "learning_rate": p["learning_rate"],
        "average": p["average"],
        "random_state": 0,
    }
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
        {
            "C": 1.0,
            "kernel": "rbf",
            "gamma": round(gamma_scale, 6),
            "tol": 1e-3,
            "shrinking": True,
            "class_weight": "none",
        },
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
        {
            "learning_rate_init": 1e-3,
            "alpha": 1e-4,
            "width": 100,
            "activation": "relu",
            "solver": "adam",
            "batch_size": 200,
        },
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
            "eta0": dsbo.Float(
                1e-4, 1.0, log=True, when={"learning_rate": ["constant", "invscaling", "adaptive"]}
            ),
            "average": dsbo.Choice([False, True]),
        },
        {
            "loss": "hinge",
            "penalty": "l2",
            "alpha": 1e-4,
            "learning_rate": "optimal",
            "average": False,
        },
        sgd_error,
        None,
        "SGDClassifier on standardized breast cancer (569 rows), 5-fold CV error; defaults = sklearn's",
    )
    from mixed_spaces_branch_problems import make_branch_problems  # issue 58's problems

    problems = {p.name: p for p in (svc, branin_problem, ackley, synthetic, mlp, sgd)}
    return {**problems, **make_branch_problems()}


# ----------------------------------------------------------------------------- the shared evaluation
def is_active(parameter: Any, values: dict[str, Any]) -> bool:
    return all(
        parent in values and values[parent] in allowed
        for parent, allowed in parameter.conditions.items()
    )


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
            same = (
                a is not None
                and b is not None
                and math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
            )
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
