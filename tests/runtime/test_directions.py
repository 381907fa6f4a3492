"""The user's direction, by construction (issue 41): whatever number type a function returns
and whichever direction it is optimized in, the reported best is the best of the values the
function returned, through every entry point (property-based, 200 generated cases each).

The expected values are read from the returned objects independently of dsbo's parser
(``float(tensor.item())``, ``float(np.asarray(x).reshape(-1)[0])``)."""

import json
import math
import warnings

import numpy as np
import pytest
import torch
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsbo
from dsbo.campaign import Campaign
from dsbo.problems import get_problem

SPACE = {"x": dsbo.Float(0.0, 1.0), "c": dsbo.Choice(["a", "b"])}
FAST = {"surrogate": "gp", "acquisition": "sobol", "dry_run": False, "outcome_warping": None}
CASES = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

#: How training code hands back a number: Python, NumPy and torch scalars of many dtypes, 0-d
#: and one-element arrays and tensors (with grad too), one-element lists.
KINDS = [
    "float",
    "int",
    "np.float16",
    "np.float32",
    "np.float64",
    "np.int32",
    "np.int64",
    "np.uint16",
    "np.array0d",
    "np.array1",
    "list1",
    "torch.float32",
    "torch.float64",
    "torch.bfloat16",
    "torch.int64",
    "torch1",
    "torch.grad",
]


def wrap(value: float, kind: str):
    """``value`` as the kind of object a training function returns."""
    if kind in ("int", "np.int32", "np.int64", "np.uint16", "torch.int64"):
        value = abs(round(value)) if kind == "np.uint16" else round(value)
    return {
        "float": lambda v: float(v),
        "int": lambda v: int(v),
        "np.float16": np.float16,
        "np.float32": np.float32,
        "np.float64": np.float64,
        "np.int32": np.int32,
        "np.int64": np.int64,
        "np.uint16": np.uint16,
        "np.array0d": lambda v: np.array(v, dtype=np.float32),
        "np.array1": lambda v: np.array([v]),
        "list1": lambda v: [v],
        "torch.float32": lambda v: torch.tensor(v, dtype=torch.float32),
        "torch.float64": lambda v: torch.tensor(v, dtype=torch.float64),
        "torch.bfloat16": lambda v: torch.tensor(v, dtype=torch.bfloat16),
        "torch.int64": lambda v: torch.tensor(int(v)),
        "torch1": lambda v: torch.tensor([v]),
        "torch.grad": lambda v: torch.tensor(v, requires_grad=True) * 1.0,
    }[kind](value)


def meant(returned) -> float:
    """The number the user meant, read without dsbo."""
    if isinstance(returned, torch.Tensor):
        return float(returned.detach().reshape(-1)[0].item())
    if isinstance(returned, list):
        return float(returned[0])
    return float(np.asarray(returned).reshape(-1)[0])


returns = st.lists(
    st.tuples(
        st.floats(-500.0, 500.0, allow_nan=False, allow_subnormal=False), st.sampled_from(KINDS)
    ),
    min_size=2,
    max_size=5,
)
directions = st.sampled_from(["minimize", "maximize", "min", "max"])


def best_of(values: list[float], direction: str) -> float:
    return min(values) if direction.startswith("min") else max(values)


def check(result, expected: list[float], direction: str, name: str = "objective") -> None:
    history = result.history
    assert history[name].tolist() == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert result.best_value == pytest.approx(best_of(expected, direction), rel=1e-6, abs=1e-9)
    best_row = history.loc[history[name] == result.best_value].iloc[0]
    assert result.best_params["x"] == pytest.approx(best_row["x"])
    trace = [best_of(expected[: i + 1], direction) for i in range(len(expected))]
    assert history["best_so_far"].tolist() == pytest.approx(trace, rel=1e-6, abs=1e-9)


def optimize_returning(optimize, drawn):
    values = [wrap(v, k) for v, k in drawn]
    calls = iter(values)
    result = optimize(lambda p: next(calls), SPACE, budget=len(values), n_init=len(values), **FAST)
    return result, [meant(v) for v in values]


@CASES
@given(returns)
def test_minimize_reports_the_lowest_returned_value(drawn):
    result, expected = optimize_returning(dsbo.minimize, drawn)
    check(result, expected, "minimize")


@CASES
@given(returns)
def test_maximize_reports_the_highest_returned_value(drawn):
    result, expected = optimize_returning(dsbo.maximize, drawn)
    check(result, expected, "maximize")


@CASES
@given(returns, directions, st.booleans())
def test_tuner_tell_takes_any_number_in_the_users_direction(drawn, direction, as_mapping):
    tuner = dsbo.Tuner(
        SPACE, len(drawn), direction=direction, objective="loss", n_init=len(drawn), **FAST
    )
    values = [wrap(v, k) for v, k in drawn]
    for value in values:
        suggestion = tuner.ask()
        tuner.tell(suggestion, {"loss": value} if as_mapping else value)
    check(tuner.result(), [meant(v) for v in values], direction, name="loss")


@CASES
@given(returns, directions)
def test_a_black_box_declared_with_a_direction_reports_it(drawn, direction):
    problem = get_problem("black-box", parameters=SPACE, objectives={"loss": direction})
    campaign = Campaign(
        problem,
        budget=len(drawn),
        n_init=len(drawn),
        seed=0,
        surrogate="gp",
        acquisition="sobol",
        dry_run=False,
    )
    values = [wrap(v, k) for v, k in drawn]
    for value in values:
        [trial] = campaign.ask(1)
        campaign.tell(trial.id, {"loss": value})
    check(campaign.result(), [meant(v) for v in values], direction, name="loss")


def write_config(path, direction: str, budget: int) -> str:
    path.mkdir(parents=True, exist_ok=True)
    cfg = {
        "problem": {
            "name": "black-box",
            "options": {
                "parameters": {"x": [0.0, 1.0]},
                "objectives": {"loss": direction},
                "constraints": ["memory <= 8"],
            },
        },
        "surrogate": {"name": "gp"},
        "acquisition": {"name": "sobol"},
        "postprocess": None,
        "budget": budget,
        "n_init": budget,
        "q": budget,
        "run_dir": str(path / "run"),
        "wandb": {"mode": "disabled"},
    }
    (path / "lab.yaml").write_text(yaml.safe_dump(cfg))
    return str(path / "lab.yaml")


class LabRuns:
    """One black-box run directory per direction spelling, each with room for every generated
    case; each case tells the next trial of one of them from the command line."""

    def __init__(self, root):
        from dsbo.cli import blackbox

        self.main, self.root, self.runs = blackbox.main, root, {}

    def tell(self, direction: str, value: float, memory: float) -> dict:
        if direction not in self.runs:
            path = write_config(self.root / direction, direction, budget=CASES.max_examples)
            trials = _run(self.main, ["ask", "--config", path])["trials"]
            self.runs[direction] = {"path": path, "trials": iter(trials), "told": []}
        run = self.runs[direction]
        trial = next(run["trials"])
        _run(
            self.main,
            [
                "tell",
                "--config",
                run["path"],
                "--trial",
                str(trial["trial"]),
                "--values",
                json.dumps({"loss": value, "memory": memory}),
            ],
        )
        run["told"].append((value, memory))
        return _run(self.main, ["status", "--config", run["path"]])


@pytest.fixture(scope="module")
def lab_runs(tmp_path_factory):
    return LabRuns(tmp_path_factory.mktemp("lab"))


@CASES
@given(
    st.floats(-500.0, 500.0, allow_nan=False, allow_subnormal=False),
    directions,
    st.floats(0.0, 16.0),
)
def test_blackbox_tell_and_status_keep_the_declared_direction(lab_runs, value, direction, memory):
    """The command line: a YAML config declaring ``loss: <direction>`` and ``memory <= 8``;
    ``tell --values '{loss: v, memory: m}'`` then ``status``: the best is the best loss told
    so far among the feasible trials, and ``history.csv`` names the loss as the user did."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = lab_runs.tell(direction, value, memory)
    told = lab_runs.runs[direction]["told"]
    feasible = [v for v, m in told if m <= 8]
    if feasible:
        assert status["best_value"] == pytest.approx(
            best_of(feasible, direction), rel=1e-9, abs=1e-12
        )
    else:
        assert status["best_value"] is None
    header = (
        (lab_runs.root / direction / "run" / "history.csv").read_text().splitlines()[0].split(",")
    )
    assert "loss" in header and "memory" in header and "-loss" not in header


def _run(main, argv):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return json.loads(buffer.getvalue())


def test_the_wrapped_kinds_are_what_training_code_returns():
    assert isinstance(wrap(0.5, "np.float32"), np.float32) and wrap(0.5, "torch.grad").requires_grad
    assert (
        wrap(-2.4, "np.uint16") == 2 and meant(wrap(0.1, "torch.bfloat16")) != 0.1
    )  # bfloat16 rounds
    assert not math.isnan(meant(wrap(3.0, "list1")))
