"""Outcome parsing is strict; timeouts stop evaluations in this process and in executors."""

import math
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from dsbo.errors import EvaluationError, EvaluationTimeout, OutcomeError
from dsbo.runtime.evaluation import evaluate_batch, outcome_vector, parse_outcomes

NAMES = ("f", "c")


def test_outcomes_in_every_accepted_shape():
    assert parse_outcomes({"f": 1, "c": 2}, NAMES) == [1.0, 2.0]
    assert parse_outcomes([1, 2.5], NAMES) == [1.0, 2.5]
    assert parse_outcomes((1, 2), NAMES) == [1.0, 2.0]
    assert parse_outcomes(torch.tensor([[1.0, 2.0]]), NAMES) == [1.0, 2.0]
    assert parse_outcomes(np.array([1, 2]), NAMES) == [1.0, 2.0]
    assert parse_outcomes(np.float32(3.0), ("f",)) == [3.0]
    assert parse_outcomes(7, ("f",)) == [7.0]
    # non-finite values parse (the caller records them as a failure) ...
    assert math.isnan(parse_outcomes([math.nan, 1.0], NAMES)[0])
    # ... and outcome_vector refuses them by name
    with pytest.raises(EvaluationError, match=r"non-finite value for \['c'\]"):
        outcome_vector([1.0, math.inf], NAMES)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"f": 1}, r"missing \['c'\]"),
        ({"f": 1, "c": 2, "typo": 3}, r"unknown \['typo'\]"),
        (3.0, r"outcomes must be 2 number\(s\) \(f, c\), got 1 value\(s\)"),
        ([1, 2, 3], r"got 3 value\(s\)"),
        (["1.5", 2], r"outcome 'f' must be a number, got '1.5'"),
        ([True, 2], "outcome 'f' must be a number, got True"),
        ([[1, 2]], r"outcome 'f' must be a number, got \[1, 2\]"),
        ([1, [2]], r"outcome 'c' must be a number"),
        ("abc", "must be a number"),
        (None, "must be a number"),
        (np.array(["a", "b"]), "must be numbers"),
        (torch.tensor([True, False]), "must be numbers"),
    ],
)
def test_malformed_outcomes_are_refused_by_name(values, message):
    with pytest.raises(OutcomeError, match=message):
        parse_outcomes(values, NAMES)


def _hang(x):
    time.sleep(30)
    return [0.0]


def _quick(x):
    return [float(x.sum())]


def test_in_process_timeout_interrupts_a_hanging_evaluator():
    reports = []
    start = time.perf_counter()
    evaluate_batch(
        lambda x: _hang(x) if x[0] > 0.5 else _quick(x),
        [(1, [0.9]), (2, [0.1])],
        lambda *r: reports.append(r),
        timeout=0.3,
    )
    assert time.perf_counter() - start < 5
    (tid1, _, err1, sec1), (tid2, val2, err2, _) = reports
    assert tid1 == 1 and isinstance(err1, EvaluationTimeout) and 0.25 < sec1 < 5
    assert "eval_timeout=0.3" in str(err1)
    assert tid2 == 2 and err2 is None and val2 == [0.1]


def test_executor_timeout_stops_waiting_and_keeps_the_others():
    reports = {}
    with ThreadPoolExecutor(2) as pool:
        start = time.perf_counter()
        evaluate_batch(
            lambda x: (time.sleep(1.5), [0.0])[1] if x[0] > 0.5 else _quick(x),
            [(1, [0.9]), (2, [0.1])],
            lambda tid, *rest: reports.setdefault(tid, rest),
            executor=pool,
            timeout=0.3,
        )
        assert time.perf_counter() - start < 1.4, "the timed-out trial is not waited for"
    assert isinstance(reports[1][1], EvaluationTimeout)
    assert reports[2][0] == [0.1] and reports[2][1] is None


def test_timeout_in_a_worker_thread_without_an_executor_is_a_clear_error():
    errors = []

    def run():
        try:
            evaluate_batch(_quick, [(1, [0.1])], lambda *r: None, timeout=1.0)
        except EvaluationError as exc:
            errors.append(str(exc))

    import threading

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert errors and "main thread" in errors[0]
