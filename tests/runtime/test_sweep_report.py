"""The report of a grid/random sweep over its runs (dsbo.runtime.sweep_report)."""

import math

from dsbo.runtime.sweep_config import parse_sweep
from dsbo.runtime.sweep_report import sweep_report_data

SWEEP = parse_sweep(
    {
        "program": "train.py",
        "method": "grid",
        "metric": {"name": "loss", "goal": "minimize"},
        "parameters": {"lr": {"values": [0.1, 0.01, 0.001]}, "depth": {"values": [2, 4]}},
    }
)


def run(status, metric, lr, depth=2):
    return {
        "status": status,
        "metric": metric,
        "params": {"lr": lr, "depth": depth},
        "seconds": 2.0,
        "error": None,
    }


def test_runs_become_trials_in_the_maximized_sense():
    runs = [
        run("finished", 0.5, 0.1),
        run("stopped", 0.9, 0.01),
        run("failed", None, 0.001),
        run("no_metric", None, 0.1, 4),
    ]
    data = sweep_report_data(SWEEP, runs, seed=0, model=False)
    frame = data.frame
    assert data.objective_names == ["neg_loss"]
    # a run hyperband stopped counts with its last value; a run without a metric failed
    assert frame["status"].tolist() == ["completed", "completed", "failed", "failed"]
    assert frame["neg_loss"].tolist()[:2] == [-0.5, -0.9] and math.isnan(frame["neg_loss"][2])
    assert frame["best_so_far"].tolist() == [-0.5, -0.5, -0.5, -0.5]
    assert frame["cumulative_cost"].tolist() == [2.0, 4.0, 6.0, 8.0]
    assert frame["lr"].tolist() == [0.1, 0.01, 0.001, 0.1]


def test_a_gp_on_the_runs_ranks_the_parameter_that_matters():
    runs = [
        run("finished", 10 * lr + 0.001 * d, lr, d) for lr in (0.1, 0.01, 0.001) for d in (2, 4)
    ]
    data = sweep_report_data(SWEEP, runs, seed=0)
    assert data.importance[0].ranking[0] == "lr"
    assert {s.parameter for s in data.slices} == {"lr", "depth"}
