"""The wall-time counter of store calls (``store.busy_seconds``, ``store.operations``)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any


def timed(method: Callable) -> Callable:
    """Add the wall time of an outermost store call to ``store.busy_seconds`` (and count it
    in ``store.operations``)."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self._depth:
            return method(self, *args, **kwargs)
        self._depth += 1
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.busy_seconds += time.perf_counter() - start
            self.operations += 1
            self._depth -= 1

    return wrapper
