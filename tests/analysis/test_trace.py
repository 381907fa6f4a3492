"""trace.png: the panels that apply to the run, and only those."""

import pandas as pd
import pytest

from dsbo.analysis import trace
from dsbo.problems import get_problem


def frame(rows):
    columns = ["trial", "status", "objective", "num_changed", "fit_time", "acq_time", "eval_time"]
    data = pd.DataFrame(rows, columns=columns)
    return data.assign(
        generator=["sobol", "sobol", "qlognei"],
        best_so_far=[-9.0, -6.0, -6.0],
        cumulative_cost=[2.0, 5.0, 9.0],
    )


ROWS = [
    (1, "completed", -9.0, 0, 0, 0, 0),
    (2, "completed", -6.0, 1, 0, 0, 0),
    (3, "completed", -7.0, 2, 0, 0, 0),
]


@pytest.fixture
def figures(monkeypatch):
    import matplotlib.pyplot as plt

    closed = []
    monkeypatch.setattr(plt, "close", closed.append)
    return closed


def _axes(figure):
    return [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]


def test_a_sparsity_aware_run_shows_the_sparsity_front(tmp_path, figures):
    """Three panels; the third's step line is the value-vs-changes front."""
    problem = get_problem("branin")
    path = trace.plot_trace(frame(ROWS), problem, tmp_path / "trace.png", sparsity=True)
    assert path.is_file()
    axes = _axes(figures[0])
    assert len(axes) == 3
    (line,) = [ln for ln in axes[2].get_lines() if ln.get_label() == "Pareto front"]
    assert list(line.get_xdata()) == [0, 1, problem.dim]
    assert list(line.get_ydata()) == [-9.0, -6.0, -6.0]


def test_a_plain_run_shows_only_its_history(tmp_path, figures):
    trace.plot_trace(frame(ROWS), get_problem("branin"), tmp_path / "trace.png")
    (ax,) = _axes(figures[0])
    assert ax.get_xlabel() == "trial"


def test_a_cost_budget_plots_against_the_cumulative_cost(tmp_path, figures):
    trace.plot_trace(frame(ROWS), get_problem("branin"), tmp_path / "trace.png", cost_axis=True)
    (ax,) = _axes(figures[0])
    assert ax.get_xlabel() == "cumulative cost"
    (best,) = [ln for ln in ax.get_lines() if ln.get_label() == "best so far"]
    assert list(best.get_xdata()) == [2.0, 5.0, 9.0]
