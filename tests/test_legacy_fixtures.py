"""Stores and checkpoints written before the package layout moved still load.

The fixtures in ``tests/fixtures/legacy-fc80a1c`` were written by main at fc80a1c (before the
packages by role): ``trials.sqlite`` by ``python -m dsbo.optimize`` (Branin, GP, budget 5,
seed 3) and ``simple-smb.ckpt`` by ``python -m dsbo.train fit`` (SimpleSMB, width 8, Branin
samples, two epochs). ``summary.json`` is that run's summary.
"""

import json
import shutil
from pathlib import Path

import torch

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.problems import get_problem
from dsbo.storage import open_store
from dsbo.surrogates.checkpoint import load_surrogate

LEGACY = Path(__file__).resolve().parent / "fixtures" / "legacy-fc80a1c"


def test_a_store_written_before_the_move_reads_and_resumes(tmp_path):
    summary = json.loads((LEGACY / "summary.json").read_text())
    path = tmp_path / "trials.sqlite"
    shutil.copy(LEGACY / "trials.sqlite", path)
    with open_store(path) as store:
        trials = store.trials()
        assert [t.status for t in trials] == ["completed"] * summary["completed"]
        best = max(trials, key=lambda t: t.y[0])
        assert best.y[0] == summary["best_value"]
        assert best.x == summary["best_x"]
    campaign = Campaign(
        get_problem("branin"),
        surrogate="gp",
        budget=6,
        n_init=3,
        seed=3,
        store=path,
        optimizer=OptimizerSettings(num_restarts=2, raw_samples=32),
        dry_run=False,
    )
    assert campaign.num_used == 5
    result = campaign.run()
    assert campaign.num_used == 6
    assert result.best_value >= summary["best_value"]


def test_a_checkpoint_written_before_the_move_loads_as_a_model():
    model = load_surrogate(LEGACY / "simple-smb.ckpt")
    X = torch.tensor([[0.0, 5.0], [2.5, 7.5]], dtype=torch.double)
    posterior = model.posterior(X)
    assert posterior.mean.shape == (2, 1)
    assert torch.isfinite(posterior.mean).all() and (posterior.variance >= 0).all()
