"""ObservationDataModule: problem samples and CSV tables, transforms, split, batches, errors."""

import math

import pytest
import torch

from dsbo.data import ObservationDataModule
from dsbo.data.observations import check_state
from dsbo.errors import ConfigError, DataError


def write_csv(path, text):
    path.write_text(text)
    return str(path)


@pytest.fixture
def table(tmp_path):
    rows = ["a,b,y"] + [f"{i},{(i * 7) % 10},{(i - 4.5) ** 2}" for i in range(20)]
    return write_csv(tmp_path / "obs.csv", "\n".join(rows) + "\n")


def test_problem_samples_batches_and_transforms():
    dm = ObservationDataModule(
        problem="branin", num_samples=40, seed=3, val_fraction=0.1, test_fraction=0.1
    )
    assert dm.in_dim == 2 and dm.target == "objective" and dm.inputs == ["x0", "x1"]
    x, y, index = next(iter(dm.train_dataloader()))
    n_train = len(dm.split_index["train"])
    assert x.shape == (n_train, 2) and y.shape == (n_train,) and index.dtype == torch.long
    assert torch.equal(index, torch.arange(n_train))
    assert x.min() >= 0 and x.max() <= 1
    assert y.mean().abs() < 1e-6 and (y.std() - 1).abs() < 1e-6
    # raw units come back exactly; targets are Branin in the maximization sense (<= 0)
    X_raw, y_raw = dm.raw_data("train")
    assert torch.allclose(dm.untransform_y(y).double(), y_raw)
    assert (y_raw <= 0).all()
    assert torch.allclose(dm.transform_x(X_raw).to(x), x)


def test_seeded_split_and_sampling():
    a = ObservationDataModule(problem="branin", num_samples=30, seed=1)
    b = ObservationDataModule(problem="branin", num_samples=30, seed=1)
    c = ObservationDataModule(problem="branin", num_samples=30, seed=2, sampling="uniform")
    assert torch.equal(a.X_raw, b.X_raw)
    assert all(torch.equal(a.split_index[k], b.split_index[k]) for k in a.split_index)
    assert not torch.equal(a.X_raw, c.X_raw)
    parts = torch.cat([a.split_index[k] for k in ("train", "val", "test")])
    assert sorted(parts.tolist()) == list(range(30))
    assert [len(a.split_index[k]) for k in ("train", "val", "test")] == [24, 3, 3]


def test_noise_is_seeded_and_objective_is_checked():
    a = ObservationDataModule(
        problem="branin", num_samples=10, noise_std=1.0, seed=0, val_fraction=0, test_fraction=0
    )
    b = ObservationDataModule(
        problem="branin", num_samples=10, noise_std=1.0, seed=0, val_fraction=0, test_fraction=0
    )
    clean = ObservationDataModule(
        problem="branin", num_samples=10, seed=0, val_fraction=0, test_fraction=0
    )
    assert torch.equal(a.y_raw, b.y_raw) and not torch.allclose(a.y_raw, clean.y_raw)
    with pytest.raises(ConfigError, match="objective"):
        ObservationDataModule(problem="branin-currin", num_samples=10)
    dm = ObservationDataModule(problem="branin-currin", objective="currin", num_samples=10)
    assert dm.target == "currin"


def test_minibatches_are_shuffled_reproducibly():
    dm = ObservationDataModule(problem="branin", num_samples=50, batch_size=8, seed=0)
    first = [idx.tolist() for _, _, idx in dm.train_dataloader()]
    again = [idx.tolist() for _, _, idx in dm.train_dataloader()]
    assert first == again and len(first) == math.ceil(40 / 8)
    assert sorted(i for batch in first for i in batch) == list(range(40))
    assert first[0] != list(range(8))


def test_csv_defaults_minimize_and_data_range(table):
    dm = ObservationDataModule(csv_path=table, target="y", val_fraction=0, test_fraction=0)
    assert dm.inputs == ["a", "b"] and dm.in_dim == 2
    assert dm.bounds.tolist() == [[0.0, 0.0], [19.0, 9.0]]
    low = ObservationDataModule(
        csv_path=table, target="y", minimize=True, val_fraction=0, test_fraction=0
    )
    assert torch.equal(low.y_raw, -dm.y_raw)
    x, _, _ = next(iter(dm.predict_dataloader()))
    assert x[:, 0].min() == 0 and x[:, 0].max() == 1


def test_csv_given_bounds_and_inputs(table):
    dm = ObservationDataModule(csv_path=table, target="y", inputs=["a"], bounds=[[0], [40]])
    assert dm.in_dim == 1
    assert torch.allclose(
        dm.transform_x(torch.tensor([[20.0]], dtype=torch.double)),
        torch.tensor([[0.5]], dtype=torch.double),
    )
    with pytest.raises(DataError, match=r"row 11 has a=11 outside the bounds \[0, 10\]"):
        ObservationDataModule(csv_path=table, target="y", inputs=["a"], bounds=[[0], [10]])
    with pytest.raises(ConfigError, match="bounds must be 2 x 1"):
        ObservationDataModule(csv_path=table, target="y", inputs=["a"], bounds=[[0, 1], [40, 2]])


def test_nan_rows_dropped_with_warning_or_rejected(tmp_path):
    path = write_csv(tmp_path / "gaps.csv", "a,y\n0,1\n1,\n2,3\n3,inf\n4,5\n5,6\n6,7\n")
    with pytest.warns(UserWarning, match=r"2 of 7 row\(s\).*\['y'\].*rows 1, 3"):
        dm = ObservationDataModule(csv_path=path, target="y", val_fraction=0, test_fraction=0)
    assert dm.y_raw.tolist() == [1, 3, 5, 6, 7]
    with pytest.raises(DataError, match="nan_policy='drop'"):
        ObservationDataModule(csv_path=path, target="y", nan_policy="error")


@pytest.mark.parametrize(
    ("text", "kwargs", "error", "match"),
    [
        ("a,y\n1,2\n", {"target": "z"}, DataError, "target='z' is not a column"),
        (
            "a,y\n1,2\n",
            {"target": "y", "inputs": ["q"]},
            DataError,
            r"inputs \['q'\] are not columns",
        ),
        (
            "a,y\n1,2\nx,3\n4,5\n",
            {"target": "y"},
            DataError,
            r"inputs: column 'a'.*row 1 \(line 3\) holds 'x'",
        ),
        ("a,y\n1,2\n3,oops\n", {"target": "y"}, DataError, "target: column 'y'"),
        ("a,y\n1,2\n2,3\n3,4\n", {"target": "y"}, DataError, "need at least 2 training rows"),
        (
            "a,b,y\n1,0,2\n2,0,3\n3,0,4\n4,0,1\n",
            {"target": "y", "val_fraction": 0, "test_fraction": 0},
            ConfigError,
            r"inputs \['b'\] are constant",
        ),
        ("a,y\n1,2\n", {}, ConfigError, "target: required"),
        (
            "a,y\n1,2\n",
            {"target": "y", "inputs": ["y"]},
            ConfigError,
            "must not contain the target",
        ),
    ],
)
def test_csv_errors_name_the_field(tmp_path, text, kwargs, error, match):
    path = write_csv(tmp_path / "t.csv", text)
    with pytest.raises(error, match=match):
        ObservationDataModule(csv_path=path, **kwargs)


def test_config_errors(tmp_path, table):
    with pytest.raises(DataError, match="csv_path='nope.csv': no such file"):
        ObservationDataModule(csv_path="nope.csv", target="y")
    with pytest.raises(ConfigError, match="exactly one of csv_path"):
        ObservationDataModule(csv_path=table, problem="branin", target="y")
    with pytest.raises(ConfigError, match="exactly one of csv_path"):
        ObservationDataModule()
    with pytest.raises(ConfigError, match="val_fraction=1.5"):
        ObservationDataModule(problem="branin", val_fraction=1.5)
    with pytest.raises(ConfigError, match="batch_size=0"):
        ObservationDataModule(problem="branin", batch_size=0)
    with pytest.raises(ConfigError, match="bounds: problem 'branin' has its own bounds"):
        ObservationDataModule(problem="branin", bounds=[[0, 0], [1, 1]])
    with pytest.raises(ConfigError, match="noise_std is set twice"):
        ObservationDataModule(problem="branin", noise_std=0.1, problem_options={"noise_std": 0.2})
    with pytest.raises(ConfigError, match="sampling='grid'"):
        ObservationDataModule(problem="branin", sampling="grid")
    dm = ObservationDataModule(problem="branin", num_samples=20, val_fraction=0)
    with pytest.raises(ConfigError, match="data.val_fraction > 0"):
        dm.setup("validate")
    assert dm.val_dataloader() == []


def test_state_dict_round_trip_and_checks(table):
    dm = ObservationDataModule(csv_path=table, target="y", minimize=True)
    state = dm.state_dict()
    assert state["inputs"] == ["a", "b"] and state["minimize"] is True
    other = ObservationDataModule(csv_path=table, target="y", bounds=[[-10, -10], [30, 30]])
    other.load_state_dict(state)
    assert (
        torch.equal(other.bounds, dm.bounds)
        and other.y_mean == dm.y_mean
        and other.y_std == dm.y_std
    )
    narrow = ObservationDataModule(csv_path=table, target="y", inputs=["a"])
    with pytest.raises(DataError, match=r"trained on inputs \['a', 'b'\]"):
        narrow.load_state_dict(state)
    with pytest.raises(DataError, match=r"lacks \['y_std'\]"):
        check_state({k: v for k, v in state.items() if k != "y_std"})
    with pytest.raises(DataError, match="lower < upper"):
        check_state({**state, "bounds": [[1, 1], [0, 2]]})


def test_module_example_runs():
    import doctest

    from dsbo.data import observations

    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(observations, globs=vars(observations)):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0
