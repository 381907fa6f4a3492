"""``python -m dsbo.train``: fit / validate / test / predict / --print_config, run directories,
offline W&B, generic steps, errors; every config in configs/train is instantiated."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import pytorch_lightning as pl
import torch
import yaml
from tiny_zoo import TinyEnsemble, TinyWapeLogger

from dsbo.cli.train import (
    add_missing_steps,
    build_cli,
    expand_model_names,
    fit_warnings,
    main,
    surrogate_mean_std,
)
from dsbo.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
TINY = f"{TinyEnsemble.__module__}.TinyEnsemble"
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


def tiny_args(run_dir, *extra):
    return [
        "--model",
        TINY,
        "--model.width",
        "8",
        "--data.problem",
        "branin",
        "--data.num_samples",
        "30",
        "--run_dir",
        str(run_dir),
        *QUIET,
        *extra,
    ]


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")


def test_fit_validate_test_predict(tmp_path, offline_wandb):
    run_dir = tmp_path / "run"
    assert main(["fit", *tiny_args(run_dir), "--trainer.max_epochs", "3"]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["subcommand"] == "fit" and summary["model"] == TINY and summary["epochs"] == 3
    assert summary["generic_steps"] == ["validation_step", "test_step", "predict_step"]
    assert {"train_loss", "val_mse", "val_r2"} <= set(summary)
    final = run_dir / "checkpoints" / "final.ckpt"
    assert summary["checkpoint"] == str(final) and final.is_file()
    # the default callback: the best epoch by val_mse (named after it) and the last one
    (best,) = (run_dir / "checkpoints").glob("best-epoch=*-val_mse=*.ckpt")
    # the best epoch's monitored value (the BO objective of train-run), not the last epoch's
    assert summary["best_checkpoint"] == str(best) and summary["best_val_mse"] <= summary["val_mse"]
    assert summary["best_val_mse"] == pytest.approx(
        float(best.stem.rsplit("val_mse=", 1)[1]), rel=1e-3
    )
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert (run_dir / "config.yaml").is_file()
    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert len(offline) == 1, "the W&B run is offline, in the run directory"
    saved = torch.load(final, weights_only=True)
    assert saved["hyper_parameters"]["in_dim"] == 2  # linked from the datamodule
    assert saved["ObservationDataModule"]["inputs"] == ["x0", "x1"]

    no_log = ["--trainer.logger", "false", "--ckpt_path", str(final)]
    assert main(["validate", *tiny_args(run_dir), *no_log]) == 0
    assert main(["test", *tiny_args(run_dir), *no_log]) == 0
    assert main(["predict", *tiny_args(run_dir), *no_log]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert {"val_mse", "test_mse", "test_r2"} <= set(summary) and summary["subcommand"] == "predict"
    frame = pd.read_csv(run_dir / "predictions.csv")
    assert (
        list(frame.columns) == ["x0", "x1", "objective", "pred_mean", "pred_std"]
        and len(frame) == 30
    )
    assert frame["pred_mean"].notna().all() and (frame["pred_std"] >= 0).all()
    # raw units: Branin (maximization sense) is far from standardized
    assert frame["objective"].max() <= 0 and frame["pred_mean"].abs().mean() > 5


def test_fit_test_true_tests_the_best_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    no_log = ["--trainer.logger", "false"]
    assert (
        main(["fit", *tiny_args(run_dir), "--trainer.max_epochs", "4", *no_log, "--test", "true"])
        == 0
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["subcommand"] == "fit" and {
        "val_mse",
        "best_val_mse",
        "test_mse",
        "test_r2",
    } <= set(summary)
    assert (
        summary["tested_checkpoint"] == summary["best_checkpoint"]
        and "best-epoch=" in summary["tested_checkpoint"]
    )
    tested = {k: summary[k] for k in ("test_mse", "test_r2")}
    # the same numbers as testing that checkpoint on its own
    assert (
        main(["test", *tiny_args(run_dir), *no_log, "--ckpt_path", summary["best_checkpoint"]]) == 0
    )
    again = json.loads((run_dir / "summary.json").read_text())
    assert {k: again[k] for k in tested} == pytest.approx(tested, rel=1e-6)
    # without --test a fit writes no test metrics; --test belongs to fit
    assert main(["fit", *tiny_args(tmp_path / "plain"), "--trainer.max_epochs", "1", *no_log]) == 0
    assert "test_mse" not in json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert main(["test", *tiny_args(run_dir), *no_log, "--test", "true"]) == 2


WAPE = f"{TinyWapeLogger.__module__}.TinyWapeLogger"
FLOOR = f"{TinyWapeLogger.__module__}.TinyFloorWapeLogger"


def wape_fit_args(run_dir: Path, model: str, val_wapes: list[float]) -> list[str]:
    """``fit`` of a tiny module that logs ``val_wapes`` per epoch and seasonal naive's 0.3."""
    args = tiny_args(run_dir, "--trainer.max_epochs", "3", "--trainer.logger", "false")
    args[args.index(TINY)] = model
    args = [a for a in args if a not in ("--model.width", "8")]
    return ["fit", *args, "--model.val_wapes", str(val_wapes), "--model.snaive_wape", "0.3"]


@pytest.mark.parametrize(
    ("val_wapes", "warned"), [([0.6, 0.4, 0.5], True), ([0.6, 0.2, 0.5], False)]
)
def test_fit_warns_when_validation_wape_is_worse_than_seasonal_naive(
    tmp_path, capsys, val_wapes, warned
):
    run_dir = tmp_path / "run"
    assert main(wape_fit_args(run_dir, WAPE, val_wapes)) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    # the best epoch's val_wape (0.4 or 0.2) against seasonal naive's 0.3, not the last epoch's 0.5
    assert summary["best_val_wape"] == pytest.approx(min(val_wapes)) and summary[
        "val_wape"
    ] == pytest.approx(0.5)
    assert ("warnings" in summary) == warned
    err = capsys.readouterr().err
    assert ("worse than seasonal naive" in err) == warned
    if warned:
        (message,) = summary["warnings"]
        assert "best val_wape 0.4 > val_wape_seasonal_naive 0.3" in message and "Try:" in message


@pytest.mark.parametrize(
    ("val_wapes", "selected"),
    [
        ([0.6, 0.4, 0.5], "seasonal_naive"),
        ([0.6, 0.3, 0.5], "seasonal_naive"),
        ([0.6, 0.2, 0.5], "trained"),
    ],
)
def test_a_fit_that_validates_no_better_than_seasonal_naive_keeps_it(
    tmp_path, capsys, val_wapes, selected
):
    """A model that can keep its seasonal-naive floor keeps it when the best epoch's val_wape is
    not below seasonal naive's (a tie keeps the floor): the final checkpoint says so."""
    run_dir = tmp_path / "run"
    assert main(wape_fit_args(run_dir, FLOOR, val_wapes)) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["selected"] == selected
    assert summary["best_val_wape"] == pytest.approx(min(val_wapes)) and summary[
        "val_wape_seasonal_naive"
    ] == pytest.approx(0.3)
    state = torch.load(run_dir / "checkpoints" / "final.ckpt", weights_only=False)["state_dict"]
    assert bool(state["at_floor"]) == (selected == "seasonal_naive")
    assert ("kept seasonal naive" in capsys.readouterr().err) == (selected == "seasonal_naive")
    # a model that cannot keep a floor gets no selection
    assert main(wape_fit_args(run_dir, WAPE, val_wapes)) == 0
    assert "selected" not in json.loads((run_dir / "summary.json").read_text())


def test_fit_warnings_of_a_summary():
    assert (
        fit_warnings({"val_wape": 0.5}) == []
        and fit_warnings({"val_wape_seasonal_naive": 0.3}) == []
    )
    assert (
        fit_warnings({"val_wape": 0.5, "best_val_wape": 0.2, "val_wape_seasonal_naive": 0.3}) == []
    )
    (plain,) = fit_warnings({"val_wape": 0.35, "val_wape_seasonal_naive": 0.3})
    assert "baseline='seasonal_naive'" in plain

    class Residual:
        uses_seasonal_naive = True

    (residual,) = fit_warnings({"val_wape": 0.35, "val_wape_seasonal_naive": 0.3}, Residual())
    assert "baseline=" not in residual and "moved away from it" in residual


def test_same_seed_same_model(tmp_path):
    args = ["--trainer.max_epochs", "2", "--trainer.logger", "false"]
    assert main(["fit", *tiny_args(tmp_path / "a"), *args]) == 0
    assert main(["fit", *tiny_args(tmp_path / "b"), *args]) == 0
    a = torch.load(tmp_path / "a/checkpoints/final.ckpt", weights_only=True)["state_dict"]
    b = torch.load(tmp_path / "b/checkpoints/final.ckpt", weights_only=True)["state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_print_config(tmp_path, capsys):
    code = main(
        [
            "fit",
            "--config",
            str(ROOT / "configs/train/simple-smb-branin.yaml"),
            "--model.gamma",
            "4",
            "--print_config",
        ]
    )
    assert code == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert cfg["model"]["class_path"] == "dsbo_zoo.smb.SimpleSMB"
    assert cfg["model"]["init_args"]["gamma"] == 4.0
    assert cfg["data"]["problem"] == "branin" and cfg["data"]["num_samples"] == 200
    assert cfg["seed_everything"] == 0 and cfg["trainer"]["accelerator"] == "auto"


def test_short_model_names_resolve():
    classes = {"SimpleSMB": "dsbo_zoo.smb.SimpleSMB"}
    assert expand_model_names(["fit", "--model", "SimpleSMB"], classes) == [
        "fit",
        "--model",
        "dsbo_zoo.smb.SimpleSMB",
    ]
    assert (
        expand_model_names(["--model=SimpleSMB", "--model.gamma", "2"], classes)[0]
        == "--model=dsbo_zoo.smb.SimpleSMB"
    )


def test_errors_name_the_field(tmp_path, capsys):
    code = main(
        [
            "fit",
            "--model",
            TINY,
            "--data.csv_path",
            str(tmp_path / "none.csv"),
            "--data.target",
            "y",
            "--run_dir",
            str(tmp_path),
        ]
    )
    assert code == 2 and "csv_path=" in capsys.readouterr().err
    assert (
        main(["fit", "--model", TINY, "--data.problem", "branin", "--data.sampling", "grid"]) != 0
    )
    code = main(
        [
            "validate",
            *tiny_args(tmp_path / "v"),
            "--data.val_fraction",
            "0",
            "--trainer.logger",
            "false",
        ]
    )
    assert code == 2 and "data.val_fraction > 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--model", "SimpleSMB", "--model.widht", "5"],
            "model.widht: SimpleSMB has no option 'widht' (did you mean 'width'?)",
        ),
        (
            ["--model", "SimpleSMB", "--model.width", "abc"],
            "model.width: Expected a <class 'int'>. Got value: abc",
        ),
        (
            ["--model", "NotAModel"],
            "model: not a zoo model; choose one of DeepKernelCurveGP, HiReD, NeuralEnsemble, NeuralLinTS",
        ),
        (["--model", "SimpleSMB", "--bogus", "1"], "unrecognized arguments: --bogus 1"),
    ],
)
def test_a_typo_gets_a_short_named_error_first(args, message, tmp_path, capsys):
    code = main(["fit", *args, "--data.problem", "branin", "--run_dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert " ".join(err.split()).startswith(f"error: {message}"), err
    assert len(err.splitlines()) <= 4 and "usage:" not in err


class WithValidation(TinyEnsemble):
    def validation_step(self, batch, batch_idx):
        return torch.zeros(())


def test_generic_steps_fill_only_what_is_missing():
    model = WithValidation(in_dim=2)
    keys = set(model.state_dict())
    assert add_missing_steps(model) == ["test_step", "predict_step"]
    assert type(model).__name__ == "WithValidation" and isinstance(model, WithValidation)
    assert type(model).validation_step is WithValidation.validation_step
    assert set(model.state_dict()) == keys  # checkpoints still load into the original class
    out = model.predict_step((torch.rand(5, 2), torch.zeros(5), torch.arange(5)), 0)
    assert out["mean"].shape == (5,) and (out["std"] >= 0).all()


def test_surrogate_mean_std_shapes():
    class Point(pl.LightningModule):
        def forward(self, x):
            return x.sum(-1)

    class Wrong(pl.LightningModule):
        def forward(self, x):
            return x

    x = torch.rand(4, 3)
    mean, std = surrogate_mean_std(Point(), x)
    assert torch.equal(mean, x.sum(-1)) and torch.equal(std, torch.zeros(4))
    with pytest.raises(ConfigError, match="members x n or n"):
        surrogate_mean_std(Wrong(), x)


def synthetic_data_dir(
    root: Path, names=("tourismsmall", "labour", "tourismlarge"), num_steps: int = 120
) -> Path:
    """``root/<name>`` folders in the common hierarchical format (data.csv, agg_mat.csv,
    tags.csv) written from the data side's synthetic coherent generator: what the HiReD
    configs read through ``$DSBO_DATA`` instead of the real data sets."""
    from dsbo.data import synthetic_hierarchy, write_hierarchical

    for k, name in enumerate(names):
        write_hierarchical(
            synthetic_hierarchy(branching=(2, 3), num_steps=num_steps, seed=k), root / name
        )
    return root


@pytest.mark.parametrize(
    "config", sorted((ROOT / "configs/train").glob("*.yaml")), ids=lambda p: p.name
)
def test_every_train_config_instantiates(config, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # configs name data files relative to the repository root
    monkeypatch.setenv(
        "DSBO_DATA", str(synthetic_data_dir(tmp_path / "data"))
    )  # hierarchical configs
    cli = build_cli(
        ["--config", str(config), "--run_dir", str(tmp_path), "--trainer.logger", "false"],
        run=False,
    )
    assert cli.model.hparams["in_dim"] == cli.datamodule.in_dim
    batch = next(iter(cli.datamodule.train_dataloader()))
    if isinstance(batch, dict):  # hierarchical windows: the model takes the batch as it is
        assert batch["x_hist"].shape[-1] == cli.datamodule.in_dim
        cli.model.set_hierarchy(cli.datamodule.hierarchy)  # what the model's setup() does in a fit
        assert cli.model(batch).shape == batch["y_fut"].shape
        assert cli.trainer.max_epochs >= 1
        return
    assert batch[0].flatten(1).shape[-1] == cli.datamodule.in_dim
    if len(batch) == 3:  # observations: (x, y, index); metric-learning sets: (x, label)
        assert batch[1].ndim == 1 and batch[2].dtype == torch.long
    assert cli.trainer.max_epochs >= 1


def test_subprocess_fit(tmp_path):
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
    }
    env["DSBO_RUN_DIR"] = str(tmp_path / "run")  # what dsbo.sweep sets
    args = tiny_args(tmp_path / "unused", "--trainer.max_epochs", "2")
    args = args[: args.index("--run_dir")] + args[args.index("--run_dir") + 2 :]
    proc = subprocess.run(
        [sys.executable, "-m", "dsbo.train", "fit", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["epochs"] == 2 and Path(summary["checkpoint"]).is_file()
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*"))


def test_wandb_mode(monkeypatch):
    from dsbo.cli.train import wandb_mode

    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_SWEEP_ID", raising=False)
    assert wandb_mode() == "offline"
    monkeypatch.setenv("WANDB_SWEEP_ID", "abc123")  # launched by `wandb agent`
    assert wandb_mode() == "online"
    monkeypatch.setenv("WANDB_MODE", "dryrun")
    assert wandb_mode() == "offline"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert wandb_mode() == "disabled"


ZOO_CASES = {
    "SimpleSMB": ["--model.num_samples", "3", "--model.width", "32", "--model.lr", "0.01"],
    "NeuralEnsemble": ["--model.num_members", "3", "--model.width", "32", "--model.lr", "0.01"],
    "NeuralLinTS": ["--model.width", "32", "--model.lr", "0.01"],
    "NeuralUCB": ["--model.width", "8", "--model.lr", "0.01"],
}


@pytest.mark.parametrize("name", sorted(ZOO_CASES))
def test_real_zoo_models_metrics_match_an_independent_computation(name, tmp_path):
    """fit / validate / test / predict on each zoo family; val_mse, test_mse, test_r2 and the
    predictions recomputed by hand from the checkpoint and the data split."""
    from dsbo.data import ObservationDataModule
    from dsbo.surrogates.checkpoint import module_class, read_checkpoint

    run_dir = tmp_path / "run"
    data = [
        "--data.problem",
        "hartmann6",
        "--data.num_samples",
        "40",
        "--data.val_fraction",
        "0.2",
        "--data.test_fraction",
        "0.2",
        "--data.seed",
        "3",
    ]
    common = [
        "--model",
        name,
        *ZOO_CASES[name],
        *data,
        "--run_dir",
        str(run_dir),
        "--trainer.logger",
        "false",
        *QUIET,
    ]
    assert main(["fit", *common, "--trainer.max_epochs", "20"]) == 0
    final = run_dir / "checkpoints" / "final.ckpt"
    for stage in ("validate", "test", "predict"):
        assert main([stage, *common, "--ckpt_path", str(final)]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())

    checkpoint = read_checkpoint(final)
    module = module_class(checkpoint, final).load_from_checkpoint(final, weights_only=True).eval()
    datamodule = ObservationDataModule(
        problem="hartmann6", num_samples=40, val_fraction=0.2, test_fraction=0.2, seed=3
    )
    assert datamodule.state_dict()["y_mean"] == checkpoint["ObservationDataModule"]["y_mean"]

    def mean_of(x):  # the predictive mean in standardized units, straight from the module
        with torch.no_grad():
            if module.posterior_kind == "gaussian":
                return module.predict_mean_cov(x)[0].double()
            return module.predict_members(x).double().mean(0)

    for split, prefix in (("val", "val"), ("test", "test")):
        x, y, _ = datamodule.dataset(split).tensors
        residual = mean_of(x) - y.double()
        assert summary[f"{prefix}_mse"] == pytest.approx(float(residual.pow(2).mean()), rel=1e-4)
        if prefix == "test":
            r2 = 1 - residual.pow(2).sum() / (y.double() - y.double().mean()).pow(2).sum()
            assert summary["test_r2"] == pytest.approx(float(r2), rel=1e-4, abs=1e-5)
    frame = pd.read_csv(run_dir / "predictions.csv")
    x, _, _ = datamodule.dataset("all").tensors
    expected = datamodule.untransform_y(mean_of(x)).numpy()
    assert frame["pred_mean"].to_numpy() == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_hired_fit_and_predict_write_forecasts_for_every_node(tmp_path, offline_wandb):
    """The HiReD config end to end on a generated data folder: fit (1 epoch, offline W&B,
    checkpoints by val_wape), then predict from the checkpoint: predictions.csv has every node
    and forecast step, named, equal to the checkpointed model's forecasts in original units."""
    from dsbo.data import HierarchicalDataModule
    from dsbo_zoo.hired import HiReD

    data = (
        synthetic_data_dir(tmp_path / "data", names=("tourismsmall",), num_steps=48)
        / "tourismsmall"
    )
    run_dir = tmp_path / "run"
    common = [
        "--config",
        str(ROOT / "configs/train/hired-tourismsmall.yaml"),
        "--data.init_args.path",
        str(data),
        "--run_dir",
        str(run_dir),
        *QUIET,
    ]
    assert main(["fit", *common, "--trainer.max_epochs", "1", "--test", "true"]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        summary["model"] == "dsbo_zoo.hired.HiReD"
        and summary["epochs"] == 1
        and summary["generic_steps"] == []
    )
    # --test true: the best checkpoint's test metrics, next to the fit's validation metrics
    assert {"test_wape", "test_wape_level0", "test_coherence"} <= set(summary)
    assert summary["tested_checkpoint"] == summary["best_checkpoint"]
    assert {
        "train_loss",
        "train_mae",
        "train_ereg",
        "val_wape",
        "val_smape",
        "val_coherence",
        "val_wape_level0",
    } <= set(summary)
    assert len(list((run_dir / "checkpoints").glob("best-epoch=0-val_wape=*.ckpt"))) == 1
    assert list((run_dir / "wandb").glob("offline-run-*"))
    final = run_dir / "checkpoints" / "final.ckpt"
    assert main(["predict", *common, "--trainer.logger", "false", "--ckpt_path", str(final)]) == 0
    frame = pd.read_csv(run_dir / "predictions.csv")
    dm = HierarchicalDataModule(path=str(data), history=8, horizon=8)
    N, F = dm.num_nodes, dm.horizon
    assert (
        list(frame.columns) == ["node", "step", "t", "forecast", "target"] and len(frame) == N * F
    )
    assert set(frame["node"]) == set(dm.hierarchy.node_names) and frame["forecast"].notna().all()
    assert sorted(set(frame["t"])) == list(range(dm.num_steps - F, dm.num_steps))  # the test window
    model = HiReD.load_from_checkpoint(final, weights_only=True).float().eval()
    batch = next(iter(dm.predict_dataloader()))
    with torch.no_grad():
        expected = (model(batch) * batch["scale"][:, None]).double()
    first = frame[frame["node"] == dm.hierarchy.node_names[0]].sort_values("step")
    assert first["forecast"].to_numpy() == pytest.approx(expected[0].numpy(), rel=1e-5)
    assert first["target"].to_numpy() == pytest.approx(dm.Y[-F:, 0], rel=1e-5)


def test_a_hired_fit_worse_than_seasonal_naive_forecasts_seasonal_naive(tmp_path):
    """HiReD trained with a learning rate far too large validates worse than its untrained
    state (seasonal naive): fit keeps the floor, --test tests it (the seasonal naive forecaster's
    test metrics) and predictions from the final checkpoint are the seasonal naive forecasts."""
    from dsbo.data import HierarchicalDataModule
    from dsbo_zoo.hierarchical_forecaster import SeasonalNaiveForecaster

    data = (
        synthetic_data_dir(tmp_path / "data", names=("tourismsmall",), num_steps=48)
        / "tourismsmall"
    )
    run_dir = tmp_path / "run"
    common = [
        "--config",
        str(ROOT / "configs/train/hired-tourismsmall.yaml"),
        "--data.init_args.path",
        str(data),
        "--run_dir",
        str(run_dir),
        "--trainer.logger",
        "false",
        *QUIET,
    ]
    assert (
        main(
            [
                "fit",
                *common,
                "--trainer.max_epochs",
                "2",
                "--model.init_args.lr",
                "5.0",
                "--test",
                "true",
            ]
        )
        == 0
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        summary["selected"] == "seasonal_naive"
        and summary["best_val_wape"] >= summary["val_wape_seasonal_naive"]
    )
    assert "seasonal naive, the floor" in summary["tested_checkpoint"]
    dm = HierarchicalDataModule(path=str(data), history=8, horizon=8)
    trainer = pl.Trainer(
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
    )
    floor = trainer.test(SeasonalNaiveForecaster(), datamodule=dm, verbose=False)[0]
    assert summary["test_wape"] == pytest.approx(floor["test_wape"], rel=1e-6)
    assert (
        main(["predict", *common, "--ckpt_path", str(run_dir / "checkpoints" / "final.ckpt")]) == 0
    )
    frame = pd.read_csv(run_dir / "predictions.csv")
    batch = next(iter(dm.predict_dataloader()))
    first = frame[frame["node"] == dm.hierarchy.node_names[0]].sort_values("step")
    assert first["forecast"].to_numpy() == pytest.approx(
        (batch["y_snaive"] * batch["scale"][:, None])[0].double().numpy(), rel=1e-5
    )


def test_a_data_module_that_refuses_its_settings_is_one_line(tmp_path, capsys, monkeypatch):
    """jsonargparse wraps the data module's DataError in a union report with a Namespace dump;
    the command prints the data module's own message, on one line (issue 46)."""
    monkeypatch.delenv("DSBO_DATA", raising=False)
    code = main(
        [
            "fit",
            "--config",
            str(ROOT / "configs/train/hired-labour.yaml"),
            "--trainer.max_epochs",
            "1",
            "--run_dir",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert " ".join(err.split()).startswith(
        "error: HierarchicalDataModule: name='labour' needs the environment variable DSBO_DATA (or set path)"
    ), err
    assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err and "Namespace" not in err


@pytest.mark.parametrize("model", ["dsbo_zoo.hired.HiReD", "dsbo_zoo.seq2seq_rnn.Seq2SeqRNN"])
def test_model_settings_follow_the_data_module(model, tmp_path, capsys):
    """Pointed at new data, no model setting typed: history, horizon (derived from the weekly
    data: 52, 13), num_representatives and num_nodes come from the data module, the saved config
    records them, and the model runs on its batches. A model value set to something else than
    the data's (and than the class default) is a one-line error naming both."""
    from dsbo.data import HierarchicalDataModule

    args = [
        "--model",
        model,
        "--data",
        "dsbo.data.HierarchicalDataModule",
        "--data.init_args.synthetic",
        "synthetic-weekly",
        "--data.init_args.num_representatives",
        "5",
        "--run_dir",
        str(tmp_path),
        "--trainer.logger",
        "false",
    ]
    cli = build_cli(args, run=False)
    dm = HierarchicalDataModule(synthetic="synthetic-weekly", num_representatives=5)
    expected = {"history": 52, "horizon": 13, "num_representatives": 5, "in_dim": dm.in_dim}
    assert dm.model_settings() == {
        "history": 52,
        "horizon": 13,
        "num_nodes": dm.num_nodes,
        "num_representatives": 5,
    }
    assert {k: cli.model.hparams[k] for k in expected} == expected
    if model.endswith("HiReD"):
        assert cli.model.hparams["num_nodes"] == dm.num_nodes
    assert cli.config["model"]["init_args"]["horizon"] == 13  # what config.yaml records
    batch = next(iter(cli.datamodule.train_dataloader()))
    if hasattr(cli.model, "set_hierarchy"):
        cli.model.set_hierarchy(cli.datamodule.hierarchy)
    assert cli.model(batch).shape == batch["y_fut"].shape
    # a typed model value equal to the data's is fine; a different one (not the default) is an error
    assert (
        build_cli([*args, "--model.init_args.horizon", "13"], run=False).model.hparams["horizon"]
        == 13
    )
    code = main(["fit", *args, "--model.init_args.horizon", "8"])
    err = " ".join(capsys.readouterr().err.split())
    assert (
        code == 2
        and "model.init_args.horizon=8 but the data module has horizon 13" in err
        and "Traceback" not in err
    )
