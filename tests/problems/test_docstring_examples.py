"""The ``Example:`` blocks of ``dsbo.problems`` run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest
import torch
from botorch.test_functions.synthetic import Branin

from dsbo.problems import get_problem
from dsbo.problems.options import from_test_problem

MODULES = ["options", "registry", "classic", "multi_objective", "constrained", "embedded"]


@pytest.mark.parametrize("name", MODULES)
def test_examples(name: str) -> None:
    module = importlib.import_module(f"dsbo.problems.{name}")
    # BoTorch-style examples leave out the obvious imports; provide them.
    globs = {
        **vars(module),
        "torch": torch,
        "get_problem": get_problem,
        "from_test_problem": from_test_problem,
        "Branin": Branin,
    }
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(module, globs=globs):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
