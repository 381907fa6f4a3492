"""Hierarchical series (thesis ch. 6): the hierarchy from S, files in the common format and their
errors, coherence, scaling, windows that never leak, separable NMF, level-weighted sampling."""

import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dsbo.data import (
    HierarchicalDataModule,
    HierarchicalSeries,
    Hierarchy,
    read_hierarchical,
    synthetic_hierarchy,
    write_hierarchical,
)
from dsbo.data.hierarchical import (
    BATCH_KEYS,
    calendar_covariates,
    extend_dates,
    level_weights,
    successive_projection,
)
from dsbo.errors import ConfigError, DataError

# root (0) -> a (1), b (2); a -> leaves 3, 4; b -> leaves 5, 6, 7
TREE_S = np.array(
    [
        [1, 1, 1, 1, 1],
        [1, 1, 0, 0, 0],
        [0, 0, 1, 1, 1],
        [1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 0, 1],
    ]
)
TREE_NAMES = ["root", "a", "b", "a1", "a2", "b1", "b2", "b3"]
REAL = os.environ.get("DSBO_DATA")


def real_folder(name):
    if not REAL:
        pytest.skip(
            f"real data set {name!r}: set DSBO_DATA to the folder that holds hierarchical/{name}/ "
            "(docs/data.md says where to get it)"
        )
    for candidate in (Path(REAL) / name, Path(REAL) / "hierarchical" / name):
        if (candidate / "data.csv").is_file():
            return candidate
    pytest.skip(
        f"real data set {name!r} not found under DSBO_DATA={REAL} (docs/data.md says where to get it)"
    )


@pytest.fixture
def small_series():
    return synthetic_hierarchy(branching=(2, 3), num_steps=60, seed=1)


@pytest.fixture
def folder(tmp_path, small_series):
    return write_hierarchical(small_series, tmp_path / "toy")


def edit_csv(path, row, col, value):
    """Set cell (row, col) (0-based, header = row 0) of a CSV file."""
    lines = path.read_text().splitlines()
    cells = lines[row].split(",")
    cells[col] = value
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------- hierarchy
def test_hand_made_tree_depth_levels_pairs():
    h = Hierarchy(TREE_S, TREE_NAMES)
    assert h.num_nodes == 8 and h.num_leaves == 5 and h.is_tree
    assert h.leaf_index.tolist() == [3, 4, 5, 6, 7]
    assert h.leaf_names == ("a1", "a2", "b1", "b2", "b3")
    assert h.leaf_count.tolist() == [5, 2, 3, 1, 1, 1, 1, 1]
    assert h.depth.tolist() == [0, 1, 1, 2, 2, 2, 2, 2]
    assert h.level.tolist() == h.depth.tolist() and h.level_names == ("level0", "level1", "level2")
    assert h.parent.tolist() == [-1, 0, 0, 1, 1, 2, 2, 2]
    pairs = {tuple(p) for p in h.leaf_pairs.T.tolist()}
    # eq. 6.4: every node with every leaf under it, leaves not paired with themselves
    assert pairs == {(0, 3), (0, 4), (0, 5), (0, 6), (0, 7), (1, 3), (1, 4), (2, 5), (2, 6), (2, 7)}
    assert h.leaf_pairs.dtype == torch.long and h.leaf_pairs.shape == (2, 10)
    edges = {tuple(p) for p in h.child_pairs.T.tolist()}
    assert edges == {(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6), (2, 7)}
    assert h.leaves_of(2).tolist() == [5, 6, 7]


def test_levels_of_a_tree_in_any_row_order():
    perm = [3, 0, 5, 1, 6, 2, 7, 4]
    h = Hierarchy(TREE_S[perm], [TREE_NAMES[i] for i in perm])
    assert h.level.tolist() == [2, 0, 2, 1, 2, 1, 2, 2]
    assert [h.node_names[i] for i in h.leaf_index] == ["a1", "a2", "b1", "b2", "b3"]


def test_grouped_hierarchy_levels_partition_leaves_in_file_order():
    h = synthetic_hierarchy(branching=(2, 2), groups=3, num_steps=24).hierarchy
    assert not h.is_tree
    assert h.num_nodes == 7 * 4 and h.num_leaves == 4 * 3
    # tree levels over all groups (1, 2, 4 nodes), then per group (3, 6, 12): each partitions the leaves
    assert np.bincount(h.level).tolist() == [1, 2, 4, 3, 6, 12]
    for k in range(h.num_levels):
        assert np.array_equal(h.S[h.level == k].sum(0), np.ones(h.num_leaves))
    assert (h.level[h.leaf_index] == h.num_levels - 1).all()
    # depth = number of strict containers: 'n0/0|g1' lies under total|all, n0|all, n0/0|all, total|g1, n0|g1
    i = h.node_names.index("n0/0|g1")
    assert h.depth[i] == 5
    assert h.leaf_pairs.shape[1] == int(h.S.sum()) - h.num_leaves


def test_hierarchy_rejects_bad_S():
    with pytest.raises(DataError, match="not 0 or 1"):
        Hierarchy(np.array([[1, 2], [1, 0], [0, 1]]), ["t", "a", "b"])
    with pytest.raises(DataError, match="column 1: no row"):
        Hierarchy(np.array([[1, 1], [1, 0]]), ["t", "a"])
    with pytest.raises(DataError, match="no bottom series"):
        Hierarchy(np.array([[0, 0], [1, 0], [0, 1]]), ["t", "a", "b"])


# ------------------------------------------------------------------------------------- synthetic
@pytest.mark.parametrize("groups", [0, 2])
def test_synthetic_is_coherent_by_construction(groups):
    s = synthetic_hierarchy(branching=(3, 2), groups=groups, num_steps=40, seed=3)
    h = s.hierarchy
    bottom = s.values[:, h.leaf_index]
    np.testing.assert_allclose(s.values, bottom @ h.S.T, rtol=1e-13)  # up to float summation order
    h.check_coherent(s.values, rtol=1e-12)
    assert (s.values >= 0).all() and s.values.shape == (40, h.num_nodes)
    # mean property (6.1) in leaf-count units
    mean_units = s.values / h.leaf_count
    for p in range(h.num_nodes):
        np.testing.assert_allclose(
            mean_units[:, p], mean_units[:, h.leaves_of(p)].mean(1), rtol=1e-12
        )
    broken = s.values.copy()
    broken[7, 1] += 1.0
    with pytest.raises(DataError, match=rf"node {h.node_names[1]!r} at step 7"):
        h.check_coherent(broken)


def test_synthetic_children_close_to_parent():
    near = synthetic_hierarchy(branching=(8,), spread=0.01, noise=0.0, num_steps=48, seed=0)
    far = synthetic_hierarchy(branching=(8,), spread=1.0, noise=0.0, num_steps=48, seed=0)

    def leaf_dispersion(s):
        leaves = s.values[:, s.hierarchy.leaf_index]
        return float(np.std(leaves, axis=1).mean())

    assert leaf_dispersion(near) < 0.05 * leaf_dispersion(far)


# ------------------------------------------------------------------------------------- files
def test_write_read_round_trip(folder, small_series):
    s = read_hierarchical(folder)
    np.testing.assert_allclose(s.values, small_series.values, rtol=1e-9)
    assert s.hierarchy.node_names == small_series.hierarchy.node_names
    np.testing.assert_array_equal(s.hierarchy.S, small_series.hierarchy.S)
    assert s.hierarchy.paths == small_series.hierarchy.paths
    assert s.frequency == "M" and s.name == "toy" and (s.dates == small_series.dates).all()


@pytest.mark.parametrize(
    ("name", "nodes", "leaves", "level_sizes", "steps"),
    [
        ("labour", 57, 32, [1, 8, 16, 32], 514),
        ("tourismsmall", 89, 56, [1, 4, 28, 56], 36),
        ("tourismlarge", 555, 304, [1, 7, 27, 76, 4, 28, 108, 304], 228),
    ],
)
def test_real_sets_load(name, nodes, leaves, level_sizes, steps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # labour's agg_mat header order (matched by unit rows)
        dm = HierarchicalDataModule(path=str(real_folder(name)))
    h = dm.hierarchy
    assert (h.num_nodes, h.num_leaves, dm.num_steps) == (nodes, leaves, steps)
    assert np.bincount(h.level).tolist() == level_sizes
    assert h.is_tree == (name != "tourismlarge")
    assert h.leaf_pairs.shape == (2, int(h.S.sum()) - leaves)
    assert dm.in_dim == 3 and len(dm.representatives) == 6
    assert dm.series.frequency == ("Q" if name == "tourismsmall" else "M")
    assert len(dm.forecast_starts("train")) >= 5
    if name == "tourismsmall":
        assert (dm.history, dm.horizon) == (8, 8) and dm.ranges()["test"] == (28, 36)


# ------------------------------------------------------------------------------------- errors
def test_missing_file(folder):
    (folder / "tags.csv").unlink()
    with pytest.raises(DataError, match=r"tags\.csv: file not found"):
        read_hierarchical(folder)


def test_S_rows_not_matching_data_columns(folder):
    edit_csv(folder / "agg_mat.csv", 3, 0, "elsewhere")
    with pytest.raises(
        DataError,
        match=r"agg_mat\.csv: row 4, column 1: node 'elsewhere', but data\.csv column 4 is 'n1'",
    ):
        read_hierarchical(folder)


def test_S_with_a_row_too_few(folder):
    lines = (folder / "agg_mat.csv").read_text().splitlines()
    (folder / "agg_mat.csv").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(
        DataError,
        match=r"8 rows of S for the 9 nodes of data\.csv: data\.csv column 10 \('n1/2'\) has no row",
    ):
        read_hierarchical(folder)


@pytest.mark.parametrize(
    ("cell", "match"),
    [
        ("", r"data\.csv: row 5 \(date '2000-04-01'\), column 3 \('n0'\): missing value"),
        (
            "abc",
            r"data\.csv: row 5 \(date '2000-04-01'\), column 3 \('n0'\): non-numeric value 'abc'",
        ),
        (
            "nan",
            r"data\.csv: row 5 \(date '2000-04-01'\), column 3 \('n0'\): non-finite value 'nan'",
        ),
    ],
)
def test_bad_values_name_file_row_column(folder, cell, match):
    edit_csv(folder / "data.csv", 4, 2, cell)
    with pytest.raises(DataError, match=match):
        read_hierarchical(folder)


def test_ragged_row(folder):
    path = folder / "data.csv"
    lines = path.read_text().splitlines()
    lines[6] += ",3.0"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"data\.csv: row 7 has 11 fields, expected 10"):
        read_hierarchical(folder)


def test_bottom_series_without_a_path(folder):
    path = folder / "tags.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(
        DataError, match=r"tags\.csv: 5 rows for 6 bottom series: bottom series 'n1/2'"
    ):
        read_hierarchical(folder)


def test_empty_path_element(folder):
    edit_csv(folder / "tags.csv", 2, 1, "")
    with pytest.raises(
        DataError, match=r"tags\.csv: row 3, column 2: empty path element for bottom series 'n0/2'"
    ):
        read_hierarchical(folder)


def test_path_inconsistent_with_S(folder):
    edit_csv(folder / "tags.csv", 0, 1, "n1")  # leaf n0/0 claimed by n1
    with pytest.raises(
        DataError,
        match=r"tags\.csv: column 2, tag 'n1' \(rows 1, 4, 5, 6\): its 4 bottom series are not the leaves",
    ):
        read_hierarchical(folder)


def test_S_value_not_zero_one(folder):
    edit_csv(folder / "agg_mat.csv", 2, 3, "2.0")
    with pytest.raises(
        DataError,
        match=r"agg_mat\.csv: row 3 \(node 'n0'\), column 4 \('n0/2'\): value '2.0'; S holds only 0 and 1",
    ):
        read_hierarchical(folder)


def test_bottom_series_without_a_row(folder):
    edit_csv(folder / "agg_mat.csv", 9, 5, "1.0")  # n1/2's row now selects two bottom series
    with pytest.raises(
        DataError,
        match=r"agg_mat\.csv: column 7 \('n1/2'\): no row selects only this bottom series",
    ):
        read_hierarchical(folder)


def test_incoherent_aggregate_names_worst_node_and_step(folder, small_series):
    values = small_series.values
    edit_csv(folder / "data.csv", 11, 2, str(float(values[10, 1] * 1.5)))
    edit_csv(folder / "data.csv", 20, 1, str(float(values[19, 0] * 1.01)))
    with pytest.raises(
        DataError, match=r"not coherent: node 'n0' at step 10 \(row 12, date 2000-11-01\)"
    ):
        read_hierarchical(folder)


def test_unparsable_and_unordered_dates(folder):
    edit_csv(folder / "data.csv", 3, 0, "2000-01-15")
    with pytest.raises(
        DataError, match=r"row 4, column 1 \(date\): '2000-01-15' does not come after '2000-02-01'"
    ):
        read_hierarchical(folder)
    edit_csv(folder / "data.csv", 3, 0, "someday")
    with pytest.raises(DataError, match=r"row 4, column 1 \(date\): 'someday' is not a date"):
        read_hierarchical(folder)


def test_too_few_steps(folder):
    with pytest.raises(
        DataError, match=r"60 steps are too few for history 41 \+ horizon 4 .* = 61"
    ):
        HierarchicalDataModule(
            path=str(folder), history=41, horizon=4, val_windows=2, test_windows=2
        )


# ------------------------------------------------------------------------------------- config
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"history": 0}, "history must be an integer >= 1"),
        ({"horizon": 2.5}, "horizon must be an integer"),
        ({"batch_nodes": 0}, "batch_nodes"),
        ({"alpha": 0.0}, "alpha must be a finite number > 0"),
        ({"alpha": float("nan")}, "alpha"),
        ({"num_representatives": -1}, "num_representatives"),
        ({"predict_split": "val"}, "predict_split"),
        ({"synthetic": {"num_steps": 40}}, "exactly one of path"),
    ],
)
def test_config_errors_before_any_io(tmp_path, kwargs, match):
    # the folder does not exist: a ConfigError proves the arguments are checked first
    with pytest.raises(ConfigError, match=match):
        HierarchicalDataModule(path=str(tmp_path / "absent"), **kwargs)


def test_name_needs_dsbo_data(monkeypatch, folder):
    monkeypatch.delenv("DSBO_DATA", raising=False)
    with pytest.raises(ConfigError, match="DSBO_DATA"):
        HierarchicalDataModule(name="toy")
    monkeypatch.setenv("DSBO_DATA", str(folder.parent))
    dm = HierarchicalDataModule(name="toy", history=12)
    assert dm.num_nodes == 9 and (dm.horizon, dm.val_windows, dm.test_windows) == (
        4,
        3,
        3,
    )  # paper defaults


# ------------------------------------------------------------------------------------- scaling
def test_scaling_and_batch_format():
    dm = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 80, "seed": 2},
        history=12,
        horizon=4,
        num_representatives=3,
    )
    h = dm.hierarchy
    batch = next(iter(dm.val_dataloader()))
    B, H, F, D, R = dm.num_nodes, 12, 4, dm.in_dim, 3
    shapes = {
        "y_hist": (B, H),
        "y_fut": (B, F),
        "nodes": (B,),
        "level": (B,),
        "scale": (B,),
        "x_hist": (H, D),
        "x_fut": (F, D),
        "z_hist": (H, R),
        "t_fut": (F,),
        "y_snaive": (B, F),
    }
    assert {k: tuple(v.shape) for k, v in batch.items()} == shapes and set(shapes) == set(
        BATCH_KEYS
    )
    for key in ("y_hist", "y_fut", "scale", "x_hist", "x_fut", "z_hist", "y_snaive"):
        assert batch[key].dtype == torch.float32
    for key in ("nodes", "level", "t_fut"):
        assert batch[key].dtype == torch.long
    start = dm.forecast_starts("val")[0]
    assert batch["t_fut"].tolist() == list(range(start, start + F))
    # scaled * scale = original units; scale = leaf count x global sigma
    original = torch.as_tensor(dm.Y[start : start + F, batch["nodes"].numpy()].T)
    torch.testing.assert_close(
        (batch["y_fut"] * batch["scale"][:, None]).double(), original, rtol=1e-5, atol=1e-4
    )
    torch.testing.assert_close(
        batch["scale"].double(), torch.as_tensor(h.leaf_count * dm.global_scale), rtol=1e-6, atol=0
    )
    # sigma: std of the leaf-count-scaled training values
    assert dm.global_scale == pytest.approx(float((dm.Y[: dm.train_end] / h.leaf_count).std()))
    # mean property in scaled units (6.1)
    y = batch["y_fut"].double()
    for p in range(h.num_nodes):
        torch.testing.assert_close(
            y[p], y[torch.as_tensor(h.leaves_of(p))].mean(0), rtol=1e-5, atol=1e-6
        )
    # representatives' scaled histories
    torch.testing.assert_close(batch["z_hist"], batch["y_hist"][dm.representatives].T)
    assert batch["level"].tolist() == h.level.tolist()


def test_calendar_covariates_monthly_and_quarterly():
    months = pd.date_range("2001-01-01", periods=24, freq="MS")
    X, names = calendar_covariates(months, "M")
    assert names == ("month_sin", "month_cos", "trend")
    np.testing.assert_allclose(X[:, 0], np.sin(2 * np.pi * (months.month - 1) / 12), atol=1e-12)
    np.testing.assert_allclose(X[0, :2], X[12, :2])  # same month, same features
    assert X[0, 2] == -0.5 and X[-1, 2] == 0.5
    quarters = pd.date_range("2001-03-31", periods=8, freq="QE")
    Xq, names_q = calendar_covariates(quarters, "Q", trend=False)
    assert (
        names_q == ("quarter_sin", "quarter_cos")
        and np.allclose(Xq[0], Xq[4])
        and not np.allclose(Xq[0], Xq[1])
    )
    future = extend_dates(quarters, "Q", 3)
    assert [d.strftime("%Y-%m-%d") for d in future] == ["2003-03-31", "2003-06-30", "2003-09-30"]


# ------------------------------------------------------------------------------------- windows
def test_windows_tile_the_ranges():
    dm = HierarchicalDataModule(
        synthetic={"num_steps": 100}, history=10, horizon=5, val_windows=2, test_windows=3
    )
    assert dm.ranges() == {"train": (0, 75), "val": (75, 85), "test": (85, 100)}
    assert dm.forecast_starts("val") == [75, 80] and dm.forecast_starts("test") == [85, 90, 95]
    # origins from max(H, season) = max(10, 12): y_snaive needs a full season before the origin
    assert dm.season == 12 and dm.forecast_starts("train") == list(range(12, 71))
    dm = HierarchicalDataModule(
        synthetic={"num_steps": 100}, history=14, horizon=5, val_windows=2, test_windows=3
    )
    assert dm.forecast_starts("train") == list(range(14, 71))


def test_windows_never_leak_test_or_validation_values():
    base = synthetic_hierarchy(branching=(2, 3), num_steps=70, seed=4)
    h = base.hierarchy
    dm_args = {
        "history": 8,
        "horizon": 4,
        "val_windows": 2,
        "test_windows": 2,
        "batch_nodes": 4,
        "num_representatives": 4,
    }
    # mark the held-out steps: validation values + 1e4, test values + 1e6 (leaves, then aggregated: coherent)
    bottom = base.values[:, h.leaf_index].copy()
    bottom[70 - 16 : 70 - 8] += 1e4
    bottom[70 - 8 :] += 1e6
    marked = HierarchicalSeries(h, h.aggregate(bottom), base.dates, "M", "marked", "test")
    dm = HierarchicalDataModule.from_series(marked, **dm_args)

    def max_original(batch):
        out = [
            dm.unscale(batch["y_hist"], batch["nodes"]).max(),
            dm.unscale(batch["y_fut"], batch["nodes"]).max(),
        ]
        z = batch["z_hist"] * dm.scale[dm.representatives].float()
        return max(float(x) for x in [*out, z.max()])

    train = [max_original(b) for _ in range(3) for b in dm.train_dataloader()]
    assert len(train) == 3 * dm.windows_per_epoch and max(train) < 1e4 / h.num_leaves
    val = [max_original(b) for b in dm.val_dataloader()]
    assert max(val) < 1e6 and max(val) > 1e4  # validation targets seen, test values never
    test = [max_original(b) for b in dm.test_dataloader()]
    assert min(test) > 1e6
    # scaling and representatives come from the training range only
    clean = HierarchicalDataModule.from_series(base, **dm_args)
    assert dm.global_scale == clean.global_scale
    assert dm.representatives.tolist() == clean.representatives.tolist()


def test_validation_chunks_cover_every_node_per_window():
    dm = HierarchicalDataModule(
        synthetic={"branching": [3, 3], "num_steps": 60},
        history=8,
        horizon=4,
        val_windows=2,
        test_windows=1,
        batch_nodes=5,
    )
    batches = list(dm.val_dataloader())
    assert len(batches) == 2 * 3  # 13 nodes in chunks of 5
    for w, start in enumerate(dm.forecast_starts("val")):
        chunk = batches[3 * w : 3 * w + 3]
        assert all(b["t_fut"][0] == start and len(b["nodes"]) <= 5 for b in chunk)
        assert torch.cat([b["nodes"] for b in chunk]).tolist() == list(range(13))


def test_predict_future_window():
    dm = HierarchicalDataModule(
        synthetic={"num_steps": 50}, history=8, horizon=4, predict_split="future"
    )
    (batch,) = list(dm.predict_dataloader())
    assert "y_fut" not in batch and batch["t_fut"].tolist() == [50, 51, 52, 53]
    assert (
        batch["x_fut"].shape == (4, dm.in_dim) and batch["x_fut"][:, -1].min() > 0.5
    )  # trend past the data
    torch.testing.assert_close(batch["y_hist"], dm.Y_scaled[-8:].T)


def test_training_batches_reproducible_by_seed():
    def first(seed):
        dm = HierarchicalDataModule(
            synthetic={"num_steps": 60}, history=8, horizon=4, batch_nodes=3, seed=seed
        )
        return [(int(b["t_fut"][0]), b["nodes"].tolist()) for b in dm.train_dataloader()]

    assert first(0) == first(0) and first(0) != first(1)


def test_state_dict_round_trip():
    kwargs = {"synthetic": {"num_steps": 60}, "history": 8, "horizon": 4}
    dm = HierarchicalDataModule(**kwargs)
    other = HierarchicalDataModule(**kwargs, num_representatives=2)
    other.load_state_dict(dm.state_dict())
    assert other.representatives.tolist() == dm.representatives.tolist()
    bad = dm.state_dict() | {"node_names": ["x"]}
    with pytest.raises(DataError, match="node_names"):
        other.load_state_dict(bad)


# ------------------------------------------------------------------------------------- NMF
def test_successive_projection_recovers_separable_columns():
    rng = np.random.default_rng(0)
    T, R, N = 30, 4, 40
    W = rng.random((T, R)) + 0.1
    Hw = rng.dirichlet(np.ones(R) * 0.5, size=N - R).T  # simplex weights: convex combinations
    M = np.concatenate([W, W @ Hw], axis=1) * rng.uniform(0.5, 5.0, size=N)  # columns scaled
    perm = rng.permutation(N)
    M = M[:, perm]
    pure = sorted(int(np.flatnonzero(perm == j)[0]) for j in range(R))
    assert sorted(successive_projection(M, R).tolist()) == pure
    assert len(set(successive_projection(M, 10).tolist())) == 10
    with pytest.raises(ConfigError, match="rank"):
        successive_projection(M, N + 1)


# ------------------------------------------------------------------------------------- sampling
def test_level_weighted_sampling_matches_alpha_power_minus_depth():
    dm = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 40},
        history=8,
        horizon=4,
        val_windows=1,
        test_windows=1,
        alpha=3.0,
        batch_nodes=9,
    )
    depth = dm.hierarchy.depth
    expected = 3.0**-depth / (3.0**-depth).sum()
    np.testing.assert_allclose(level_weights(depth, 3.0), expected)
    g = torch.Generator().manual_seed(123)
    counts = np.bincount(torch.cat([dm.sample_nodes(g) for _ in range(2000)]).numpy(), minlength=9)
    assert counts.sum() == 2000 * 9
    chi2 = stats.chisquare(counts, expected * counts.sum())
    assert chi2.pvalue > 1e-3
    # per depth: root 1/(1 + 2/3 + 6/9) = 3/7 of the draws
    assert counts[depth == 0].sum() / counts.sum() == pytest.approx(3 / 7, abs=0.01)
    # uniform weighting (alpha = 1) cannot pass: the root would get 1/9
    uniform = stats.chisquare(counts, np.full(9, counts.sum() / 9))
    assert uniform.pvalue < 1e-10


def test_alpha_one_is_a_subset_without_replacement():
    dm = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 40},
        history=8,
        horizon=4,
        val_windows=1,
        test_windows=1,
        batch_nodes=512,
    )
    for batch in dm.train_dataloader():
        assert sorted(batch["nodes"].tolist()) == list(range(9))
    small = HierarchicalDataModule(
        synthetic={"branching": [2, 3], "num_steps": 40},
        history=8,
        horizon=4,
        val_windows=1,
        test_windows=1,
        batch_nodes=4,
    )
    for batch in small.train_dataloader():
        assert len(set(batch["nodes"].tolist())) == 4


# ------------------------------------------------------------------------------------- properties
@settings(max_examples=25, deadline=None)
@given(
    branching=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    groups=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_any_generated_hierarchy_is_coherent_with_partitioning_levels(branching, groups, seed):
    s = synthetic_hierarchy(branching=branching, groups=groups, num_steps=8, seed=seed)
    h = s.hierarchy
    np.testing.assert_allclose(s.values, s.values[:, h.leaf_index] @ h.S.T, rtol=1e-13)
    for k in range(h.num_levels):  # every reporting level partitions the bottom series
        assert np.array_equal(h.S[h.level == k].sum(0), np.ones(h.num_leaves))
    assert (h.level[h.leaf_index] == h.num_levels - 1).all()
    assert h.leaf_pairs.shape[1] == int(h.S.sum()) - h.num_leaves
    # depth counts strict containers: a pair (p, i) means L(p) strictly contains L(i) unless equal
    p, i = h.leaf_pairs.numpy()
    assert (h.leaf_count[p] >= h.leaf_count[i]).all()
    # a tree stays a tree with single-child nodes (equal leaf sets are ordered by file order);
    # crossed with 2+ groups it is a tree only when the tree is a chain (1 group: a copy)
    assert h.is_tree == (groups <= 1 or h.num_leaves == groups)
    assert (h.parent[1:] >= 0).all() if h.is_tree else True
