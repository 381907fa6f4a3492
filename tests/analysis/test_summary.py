"""summary.json's numbers: the value-vs-changes front and the timing split."""

import math

import pandas as pd
import pytest

from dsbo.analysis.summary import timing_summary, value_vs_changes
from dsbo.problems import get_problem


def frame(rows):
    return pd.DataFrame(
        rows,
        columns=[
            "trial",
            "status",
            "objective",
            "num_changed",
            "fit_time",
            "acq_time",
            "eval_time",
        ],
    )


def test_value_vs_changes_keeps_only_improvements():
    problem = get_problem("branin")
    rows = [
        (1, "completed", -5.0, 2, 0, 0, 0),
        (2, "completed", -9.0, 0, 0, 0, 0),
        (3, "completed", -6.0, 1, 0, 0, 0),
        (4, "failed", math.nan, 0, 0, 0, 0),
        (5, "completed", -7.0, 2, 0, 0, 0),
        (6, "completed", -1.0, 2, 0, 0, 0),
    ]
    assert value_vs_changes(frame(rows), problem) == [
        {"changed": 0, "best_value": -9.0},
        {"changed": 1, "best_value": -6.0},
        {"changed": 2, "best_value": -1.0},
    ]


def test_value_vs_changes_ignores_infeasible_points():
    problem = get_problem("pressure-vessel")
    names = list(problem.outcome_names)
    rows = pd.DataFrame(
        [
            dict(
                trial=1,
                status="completed",
                num_changed=1,
                **dict(zip(names, [-10.0, 1, 1, 1, -1], strict=True)),
            ),
            dict(
                trial=2,
                status="completed",
                num_changed=2,
                **dict(zip(names, [-20.0, 1, 1, 1, 1], strict=True)),
            ),
        ]
    )
    assert value_vs_changes(rows, problem) == [{"changed": 2, "best_value": -20.0}]


def test_timing_summary_splits_model_iterations():
    timings = [
        {"fit": 0.0, "acquisition": 0.0, "total": 0.01},  # a Sobol step is not a BO iteration
        {"fit": 1.0, "acquisition": 2.0, "total": 3.5},
        {"fit": 3.0, "acquisition": 2.0, "total": 5.5},
    ]
    out = timing_summary(frame([]), timings)
    assert out == pytest.approx({"iterations": 2, "fit": 2.0, "acquisition": 2.0, "other": 0.5})


def test_value_vs_changes_of_a_minimized_objective_is_in_its_own_direction():
    problem = get_problem(
        "black-box", parameters={"x": [0.0, 1.0], "y": [0.0, 1.0]}, objectives={"loss": "min"}
    )
    frame = pd.DataFrame(
        {"status": ["completed"] * 4, "num_changed": [2, 1, 2, 0], "loss": [0.5, 0.9, 0.2, 1.5]}
    )
    assert value_vs_changes(frame, problem) == [
        {"changed": 0, "best_value": 1.5},
        {"changed": 1, "best_value": 0.9},
        {"changed": 2, "best_value": 0.2},
    ]
