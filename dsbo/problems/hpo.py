r"""Hyperparameter optimization of an SVM on scikit-learn's bundled datasets.

A stand-in for the OpenML SVM tasks of Mao & Li (subset selection, table 4 and appendix C.2;
the OpenML server is not reachable here): tune an RBF ``sklearn.svm.SVC`` over
``log2 C`` and ``log2 gamma``, both in ``[-10, 10]`` (the paper's table 5), to minimize the
validation error ``1 - accuracy``. dsbo maximizes, so the objective is ``accuracy - 1``
(0 is a perfect validation score). The data are standardized and split once, stratified,
with ``split_seed`` (a quarter for validation); nothing is downloaded. scikit-learn is imported
when the data are first split, not with the module.

Example:
    >>> problem = get_problem("svm-hpo", dataset="breast_cancer")
    >>> problem.parameter_names
    ('log2_C', 'log2_gamma')
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from botorch.test_functions.base import BaseTestProblem
from torch import Tensor

from dsbo.errors import ConfigError
from dsbo.problems.base import Problem
from dsbo.problems.options import check_int, resolve_target
from dsbo.problems.registry import register_problem

#: scikit-learn's bundled datasets (``sklearn.datasets.load_<name>``) the problem may use.
DATASETS = ("breast_cancer", "digits", "wine")


@functools.cache
def _split(dataset: str, split_seed: int) -> tuple[np.ndarray, ...]:
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    X_train, X_val, y_train, y_val = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=split_seed
    )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_val), y_train, y_val


class SVMValidationError(BaseTestProblem):
    """``accuracy - 1`` of an RBF SVC with ``C = 2^x_0``, ``gamma = 2^x_1`` on a fixed split."""

    _is_minimization_by_default = False

    def __init__(self, dataset: str, split_seed: int) -> None:
        self.dim = 2
        self.continuous_inds = [0, 1]
        self._bounds = [(-10.0, 10.0), (-10.0, 10.0)]
        super().__init__()
        self.dataset, self.split_seed = dataset, split_seed

    def _evaluate_true(self, X: Tensor) -> Tensor:
        from sklearn.svm import SVC

        X_train, X_val, y_train, y_val = _split(self.dataset, self.split_seed)
        scores = []
        for log2_c, log2_gamma in X.reshape(-1, 2).tolist():
            model = SVC(C=2.0**log2_c, gamma=2.0**log2_gamma).fit(X_train, y_train)
            scores.append(model.score(X_val, y_val) - 1.0)
        return torch.tensor(scores, dtype=X.dtype).reshape(X.shape[:-1])


@register_problem(
    "svm-hpo", "RBF-SVM hyperparameters (log2 C, log2 gamma) on a bundled scikit-learn dataset"
)
def make_svm_hpo(
    dataset: str = "digits", split_seed: int = 0, target: str | list[float] = "center"
) -> Problem:
    """SVM tuning: maximize ``accuracy - 1`` on a validation split.

    Args:
        dataset: ``digits`` (1797 x 64, 10 classes), ``breast_cancer`` or ``wine``.
        split_seed: Seed of the stratified train/validation split.
        target: The default point (``center`` = ``C = gamma = 1``).
    """
    if dataset not in DATASETS:
        raise ConfigError(f"svm-hpo: dataset={dataset!r}; choose one of {list(DATASETS)}")
    seed = check_int(split_seed, "svm-hpo: split_seed", minimum=0)
    f = SVMValidationError(dataset, seed)
    return Problem(
        name="svm-hpo",
        test_problem=f,
        default_point=resolve_target(target, f.bounds, "svm-hpo"),
        relevant_dims=(0, 1),
        optimal_value=None,
        objective_names=("accuracy_minus_one",),
        parameter_names=("log2_C", "log2_gamma"),
        description=f"RBF SVC on scikit-learn's {dataset}: accuracy - 1 on a stratified 25% validation split",
        metadata={"dataset": dataset, "split_seed": seed},
    )
