"""Fixtures of the surrogate tests: the data sets of :mod:`.helpers`."""

import pytest

from .helpers import Data, make_1d, make_3d


@pytest.fixture(scope="session")
def data_1d() -> Data:
    return make_1d()


@pytest.fixture(scope="session")
def data_3d() -> Data:
    return make_3d()
