"""The SVM HPO problem: bundled data, the paper's box, validation error."""

import pytest
import torch

from dsbo.errors import ConfigError
from dsbo.problems import get_problem


def test_svm_hpo_scores_accuracy_minus_one_on_the_paper_box():
    problem = get_problem("svm-hpo", dataset="wine")
    assert problem.bounds.tolist() == [[-10.0, -10.0], [10.0, 10.0]]
    Y = problem.evaluate(torch.tensor([[0.0, -5.0], [-10.0, 10.0]], dtype=torch.double))[:, 0]
    assert -1.0 <= float(Y.min()) and float(Y.max()) <= 0.0
    assert Y[0] > Y[1]  # a sensible SVM beats C = 2^-10, gamma = 2^10 (which predicts one class)
    assert torch.equal(
        Y, problem.evaluate(torch.tensor([[0.0, -5.0], [-10.0, 10.0]], dtype=torch.double))[:, 0]
    )


def test_svm_hpo_rejects_an_unknown_dataset():
    with pytest.raises(ConfigError, match="dataset='mnist'"):
        get_problem("svm-hpo", dataset="mnist")
