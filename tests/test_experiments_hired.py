"""The --smoke modes of experiments/hired.py and experiments/hired_tuning.py run and write their
results (moved from tests/test_experiments.py, which stays under 600 lines formatted)."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def test_hired_smoke(tmp_path):
    import hired

    result = hired.main(
        [
            "--smoke",
            "--workers",
            "1",
            "--parts",
            "main",
            "alpha",
            "--out",
            str(tmp_path),
            "--methods",
            "hired",
            "hired-ar",
            "rnn",
            "seasonal-naive",
            "ets-bu",
        ]
    )
    rows = {r["method"]: r for r in result["datasets"]["synthetic"]["rows"]}
    # ets-bu runs the one AutoETS job, which records ets and ets-mint too; hired-select is chosen from the runs
    assert set(rows) == {
        "hired",
        "hired-ar",
        "rnn",
        "seasonal-naive",
        "ets",
        "ets-bu",
        "ets-mint",
        "hired-select",
    }
    for row in rows.values():
        assert (
            row["seeds"] == 1
            and 0 <= row["wape"][0] < 1
            and {"wape_level0", "smape_level2"} <= set(row)
        )
    # TVAR alone, seasonal naive and bottom-up are coherent by construction (table 6.3's metric)
    for method in ("hired-ar", "seasonal-naive", "ets-bu"):
        assert rows[method]["coherence"][0] < 1e-4
    assert [r["alpha"] for r in result["alpha"]["synthetic"]] == [0.5, 1.0, 2.0, 4.0]
    for name in ("results.json", "results.md", "forecasts_synthetic.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_hired_smoke_on_other_data(tmp_path):
    """--data: a named synthetic set and a HierE2E folder (weekly), settings derived from the data;
    paired differences HiReD minus each comparison method over two seeds."""
    import hired

    from dsbo.data import synthetic_hierarchy, write_hierarchical

    folder = write_hierarchical(
        synthetic_hierarchy(branching=(2, 3), num_steps=160, frequency="W", seed=5),
        tmp_path / "weekly",
    )
    methods = ["hired", "hired-no-snaive", "hired-lambda0", "rnn", "seasonal-naive"]
    result = hired.main(
        [
            "--smoke",
            "--workers",
            "1",
            "--parts",
            "main",
            "--seeds",
            "2",
            "--out",
            str(tmp_path / "out"),
            "--data",
            "synthetic-daily",
            f"toy={folder}",
            "--methods",
            *methods,
        ]
    )
    assert set(result["datasets"]) == {"synthetic-daily", "toy"}
    daily, toy = result["datasets"]["synthetic-daily"], result["datasets"]["toy"]
    assert (
        daily["settings"]["history"],
        daily["settings"]["horizon"],
        daily["settings"]["season"],
        daily["settings"]["preset"],
    ) == (28, 7, 7, "m5")
    assert (
        toy["settings"]["frequency"],
        toy["settings"]["season"],
        toy["settings"]["horizon"],
    ) == ("W", 52, 13)
    rows = {r["method"]: r for r in toy["rows"]}
    for t in (daily, toy):
        paired = {r["minus"]: r for r in t["paired"]}
        assert list(paired) == ["hired-lambda0", "seasonal-naive", "rnn", "hired-no-snaive"]
        by = {r["method"]: r for r in t["rows"]}
        for other, r in paired.items():
            assert r["seeds"] == 2 and r["wape"][1] >= 0
            # the mean of paired differences is the difference of the means (same seeds)
            assert r["wape"][0] == pytest.approx(
                by["hired"]["wape"][0] - by[other]["wape"][0], abs=1e-9
            )
    assert rows["seasonal-naive"]["seeds"] == 1
    runs = (tmp_path / "out" / "runs.jsonl").read_text()
    assert str(folder) not in runs and '"folder": "weekly"' in runs  # no local paths recorded
    text = (tmp_path / "out" / "results.md").read_text()
    assert "Paired differences on toy" in text and "| hired-no-snaive | 2 |" in text


def test_hired_issue46_smoke(tmp_path, capfd):
    """Issue 46: AutoETS fitted once for its three methods (one job, cached); a --methods run adds to
    the recorded results; hired-mint and the combinations are coherent, hired-mint's plain fit is
    the hired fit; hired-select is the candidate that validates best; the warning is printed."""
    import hired

    out, cache = tmp_path / "out", tmp_path / "cache"
    common = [
        "--smoke",
        "--workers",
        "1",
        "--parts",
        "main",
        "--out",
        str(out),
        "--cache",
        str(cache),
    ]
    first = hired.main([*common, "--methods", "ets-mint"])
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and [r["method"] for r in lines[0]["extra_runs"]] == [
        "ets-bu",
        "ets-mint",
    ]  # one fit, three methods
    assert {r["method"] for r in first["datasets"]["synthetic"]["rows"]} == {
        "ets",
        "ets-bu",
        "ets-mint",
    }
    (cached,) = cache.glob("synthetic-test-*.npz")
    stamp = cached.stat().st_mtime_ns
    result = hired.main(
        [*common, "--methods", "hired-mint", "hired-select", "hired+ets-mint-w-floor"]
    )
    assert cached.stat().st_mtime_ns == stamp  # the combination read the cached ETS fit
    rows = {r["method"]: r for r in result["datasets"]["synthetic"]["rows"]}
    assert {
        "ets",
        "ets-bu",
        "ets-mint",
        "hired",
        "hired-no-snaive",
        "seasonal-naive",
        "hired-mint",
        "hired+ets",
        "hired+ets-mint",
        "hired+ets-mint-w",
        "hired-select",
        "hired+ets-mint-floor",
        "hired+ets-mint-w-floor",
    } <= set(rows)  # merged
    for method in ("hired-mint", "hired+ets-mint", "hired+ets-mint-w", "ets-mint"):
        assert rows[method]["coherence"][0] < 1e-6
    runs = hired.recorded_runs(out, smoke=True)
    by = {r["method"]: r for r in runs}
    assert by["hired-mint"]["plain_test"]["wape"] == pytest.approx(
        by["hired"]["test"]["wape"], rel=1e-4
    )  # same seed, same fit
    assert by["hired-mint"]["base_test_wape"] == pytest.approx(
        by["hired"]["test"]["wape"], rel=1e-4
    )  # our forecasts = Lightning's test
    assert by["hired+ets-mint-w"]["weight"] in hired.MIX_WEIGHTS
    assert (
        by["hired+ets-mint-w"]["test"] == pytest.approx(by["hired+ets-mint"]["test"])
        or by["hired+ets-mint-w"]["weight"] != 0.5
    )
    (select,) = [r for r in hired.selected_runs(runs) if r["method"] == "hired-select"]
    assert select["selected"] == min(select["val_scores"], key=select["val_scores"].get)
    assert select["test"] == by[select["selected"]]["test"]
    assert result["issue46"] and all("ETS + MinT" in line for line in result["issue46"])
    text = (out / "results.md").read_text()
    assert "Issue 46 on synthetic" in text and "## Goals (issue 46)" in text
    if any(r.get("warning") for r in runs):
        assert (
            "worse than seasonal naive" in capfd.readouterr().out
            and "Fits worse than seasonal naive" in text
        )
    report = hired.main([*common, "--report-only"])
    assert report["datasets"] == result["datasets"]


def test_hired_selection_on_validation_picks_seasonal_naive_when_it_validates_best():
    """hired-select from recorded runs: a trained model that validates worse than seasonal naive
    is replaced by seasonal naive's test scores exactly; a tie goes to seasonal naive."""
    import hired

    key = {"part": "main", "dataset": "d", "alpha": 1.0, "threads": 1, "smoke": False}
    snaive = {**key, "method": "seasonal-naive", "seed": 0, "test": {"wape": 0.3}}
    fits = [
        {
            **key,
            "method": m,
            "seed": s,
            "best_val_wape": v,
            "last_val": {"val_wape_seasonal_naive": 0.2},
            "test": {"wape": t},
        }
        for m, s, v, t in [
            ("hired", 0, 0.25, 0.1),
            ("hired-no-snaive", 0, 0.3, 0.1),
            ("hired", 1, 0.15, 0.4),
            ("hired-no-snaive", 1, 0.1, 0.5),
            ("hired", 2, 0.2, 0.6),
        ]
    ]
    chosen = {
        r["seed"]: r for r in hired.selected_runs([snaive, *fits]) if r["method"] == "hired-select"
    }
    assert chosen[0]["selected"] == "seasonal-naive" and chosen[0]["test"] == snaive["test"]
    assert chosen[1]["selected"] == "hired-no-snaive" and chosen[1]["test"] == {"wape": 0.5}
    assert chosen[2]["selected"] == "seasonal-naive"  # a tie


def test_hired_tuning_smoke(tmp_path):
    import hired_tuning

    result = hired_tuning.main(["--smoke", "--parts", "single", "confirm", "--out", str(tmp_path)])
    summary = result["single"]["summary"]
    assert summary["completed"] == 3 and summary["failed"] == 0
    assert (
        result["single"]["default"]["generator"] == "default"
        and result["single"]["default"]["num_changed"] == 0
    )
    assert set(result["single"]["best_params"]) >= {
        "model.init_args.lambda_e",
        "data.init_args.alpha",
    }
    assert {row["seeds"] for row in result["confirm"].values()} == {1}
    assert (tmp_path / "results.md").read_text().count("validation WAPE") >= 2
