"""The experiments' --smoke modes run and write their results."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def test_bench_loop_smoke(tmp_path):
    import bench_loop

    result = bench_loop.main(["--smoke", "--out", str(tmp_path)])
    assert {(r["n"], r["threads"]) for r in result["rows"]} == {(10, 1), (10, 2), (20, 1), (20, 2)}
    for row in result["rows"]:
        assert row["fit"] > 0 and row["acquisition"] > 0 and 0 < row["store"] < row["total"]
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (tmp_path / "results.md").read_text().startswith("# bench_loop")
    assert (tmp_path / "bench_loop.png").stat().st_size > 0


def test_bonsai_smoke(tmp_path):
    import bonsai

    result = bonsai.main(["--smoke", "--workers", "1", "--out", str(tmp_path)])
    methods = {(r["problem"], r["method"]) for r in result["table"]}
    assert ("branin-50d", "bonsai") in methods and ("dtlz2-50d", "plain") in methods
    assert 0.0 <= result["greedy_exact_identical"] <= 1.0
    assert result["generation_time_ratio"]["branin-50d"] > 0
    for name in ("results.json", "results.md", "best_vs_evaluations.png", "best_vs_changes.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_sebo_smoke(tmp_path):
    import sebo

    result = sebo.main(["--smoke", "--workers", "1", "--out", str(tmp_path)])
    methods = {r["method"] for r in result["table"]}
    assert {"sobol", "map-saas", "sebo-l0", "ir-l0-1e-2", "er-l0-1e-2"} <= methods
    assert all(r["new_points"] == r["num_bo"] for r in result["table"])
    assert set(result["generation_time_ratio"]) == {
        "sebo-l0",
        "sebo-l0-qlognehvi",
        "ir-l0",
        "ir-l0-qlognei",
        "er-l0",
    }
    for name in (
        "results.json",
        "results.md",
        "runs.jsonl",
        "best_vs_changes.png",
        "sparse_regret.png",
    ):
        assert (tmp_path / name).stat().st_size > 0


def test_neural_greedy_smoke(tmp_path):
    import neural_greedy

    methods = ["simple-smb-g4", "posterior-smb-g2", "gp-ei", "neural-lints", "random"]
    result = neural_greedy.main(
        [
            "--smoke",
            "--workers",
            "1",
            "--problems",
            "branin",
            "--methods",
            *methods,
            "--gammas",
            "2",
            "4",
            "--optimizer",
            "thesis",
            "--out",
            str(tmp_path),
        ]
    )
    rows = {r["method"]: r for r in result["table"]}
    assert set(rows) == set(methods)
    for r in rows.values():
        assert r["regret"] >= 0 and r["budget"] == 6
    assert result["best_gamma"] == {
        "simple-smb": {"branin": "simple-smb-g4"},
        "posterior-smb": {"branin": "posterior-smb-g2"},
    }
    assert result["seeds_per_row"] == [1]
    assert "seeds run per row: 1 (column `seeds`)" in (tmp_path / "results.md").read_text()
    for name in ("results.json", "results.md", "runs.jsonl", "regret_vs_evaluations.png"):
        assert (tmp_path / name).stat().st_size > 0
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert all(r["num_completed"] == 6 and len(r["trace"]) == 6 for r in runs)


def test_bench_surrogates_smoke(tmp_path):
    import bench_surrogates

    result = bench_surrogates.main(["--smoke", "--out", str(tmp_path)])
    assert {(r["n"], r["method"]) for r in result["rows"]} == {
        (n, m) for n in (20, 40) for m in ("simple-smb", "smb-ensemble-10", "exact-gp")
    }
    assert result["ensemble"]["ratio"] > 0 and result["gp_ratio"]["n"] == 40
    assert set(result["ensemble"]["variants"]) == {"default", "one-batch", "torch-tanh", "compiled"}
    assert result["ensemble"]["lbfgs"]["iterations"] >= 1
    assert [c["n"] for c in result["converged"]] == [20] and 1 <= result["converged"][0][
        "net_steps"
    ] <= 200
    assert [o["width"] for o in result["lightning_by_width"]] == [32, 64]
    assert all(0.0 <= o["overhead_share"] < 1.0 for o in result["lightning_by_width"])
    assert {r["threads"] for r in result["thread_rows"]} == {1, 2}
    for name in ("results.json", "results.md", "bench_surrogates.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_bench_bonsai_prune_smoke(tmp_path):
    import bench_bonsai_prune

    result = bench_bonsai_prune.main(["--smoke", "--out", str(tmp_path)])
    [row] = result["rows"]
    assert row["prefix_evaluations"] <= row["greedy_evaluations"]
    assert row["greedy_relative_gap"] is None or row["greedy_relative_gap"] <= 0.2 + 1e-9
    assert (tmp_path / "results.md").read_text().startswith("# BONSAI pruning")


def test_bench_map_saas_fit_smoke(tmp_path):
    import bench_map_saas_fit

    result = bench_map_saas_fit.main(["--smoke", "--out", str(tmp_path)])
    [row] = result["rows"]
    # the restarts include the default start: no member ends below the single-start fit
    for single, batched in zip(
        row["single_log_posterior"], row["batched_log_posterior"], strict=True
    ):
        assert batched >= single - 1e-6
    assert (tmp_path / "results.md").read_text().startswith("# MAP-SAAS fit restarts")
    # the campaign section: each arm carries its own fit state from fit to fit
    [run] = result["campaign"]["rows"]
    assert run["warm_starts"][0] == "no previous fit" and "warm" in run["warm_starts"]
    assert set(run["full_starts"]) == {"warm start off"} and set(run["gp-cold_starts"]) == {
        "warm start off"
    }
    assert run["gp-warm_starts"][1:] == ["warm"] * (len(run["gp-warm_starts"]) - 1)
    assert (
        (tmp_path / "campaign.md").read_text().startswith("# MAP-SAAS warm starts over a campaign")
    )


def test_bench_sebo_homotopy_smoke(tmp_path):
    import bench_sebo_homotopy

    result = bench_sebo_homotopy.main(["--smoke", "--out", str(tmp_path)])
    assert result["table"] and (tmp_path / "results.md").read_text().startswith("# SEBO homotopy")


def test_sparse_protocol_smoke(tmp_path):
    import sparse_protocol

    result = sparse_protocol.main(["--smoke", "--workers", "1", "--out", str(tmp_path)])
    assert set(result["parts"]) == {"sebo", "bonsai"}
    assert set(result["parts"]["sebo"]["arms"]) == {"qlognei", "sebo-ehvi", "sebo-qlognehvi"}
    assert all("met" in line or "missed" in line for line in result["goals"])
    assert (tmp_path / "protocol.png").stat().st_size > 0


def test_bench_contextual_smoke(tmp_path):
    import bench_contextual

    result = bench_contextual.main(["--smoke", "--out", str(tmp_path)])
    [row] = result["rows"]
    assert row["sadcbo_s"] > 0 and row["cbo_s"] > 0 and row["ratio"] > 0
    assert (tmp_path / "results.md").read_text().startswith("# One SADCBO iteration")


def test_subset_smoke(tmp_path):
    import subset

    result = subset.main(["--smoke", "--workers", "1", "--out", str(tmp_path)])
    assert {r["method"] for r in result["step"]} == set(subset.METHODS)
    assert all(r["cpu_s"] > 0 and r["wall_s"] > 0 for r in result["step"])
    methods = {(r["problem"], r["method"]) for r in result["table"]}
    assert ("ackley-2d", "kcs") in methods and ("svm-hpo", "fitc") in methods
    assert all(-1 <= r["cliffs_delta"] <= 1 for r in result["alpha"])
    assert (
        subset.cliffs_delta([1, 2], [3, 4]) == -1.0 and subset.cliffs_delta([1, 3], [2, 2]) == 0.0
    )
    for name in ("results.json", "results.md", "step.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_bench_scale_out_smoke(tmp_path):
    import bench_scale_out

    result = bench_scale_out.main(["--smoke", "--out", str(tmp_path)])
    stores = {r["store"] for r in result["rows"]}
    assert "sqlite" in stores and ("postgres" in stores) == (
        "PostgreSQL was not run" not in " ".join(result["notes"])
    )
    for row in result["rows"]:
        assert row["completed"] == row["total_trials"] == 6 and row["distinct_points"] == 6, row
        assert (
            row["wall_seconds"] > 0
            and row["ideal_seconds"] >= 6 * 0.05 / row["workers"]
            and row["store_operations"] > 0
        )
    assert {r["workers"] for r in result["rows"]} == {1, 2}
    assert (tmp_path / "results.md").read_text().startswith("# bench_scale_out")
    assert (tmp_path / "bench_scale_out.png").stat().st_size > 0


def test_sweep_bayes_smoke(tmp_path):
    import sweep_bayes

    result = sweep_bayes.main(["--smoke", "--out", str(tmp_path)])
    assert {(r["method"], r["seed"]) for r in result["rows"]} == {("bayes", 0), ("random", 0)}
    for row in result["rows"]:
        assert (
            row["runs"] == row["finished"] == 1 and row["best"] is not None and row["best"] > 0
        ), row
    assert (tmp_path / "results.md").read_text().startswith("# sweep_bayes")
    assert (tmp_path / "sweep_bayes.png").stat().st_size > 0


def test_mobo_rs_smoke(tmp_path):
    import mobo_rs

    result = mobo_rs.main(
        ["--smoke", "--workers", "1", "--parts", "pattern", "regret", "--out", str(tmp_path)]
    )
    assert set(result["pattern"]) == {"rs-ts-linear | middle"}
    assert 0 <= result["pattern"]["rs-ts-linear | middle"]["inside"][0] <= 1
    for methods in result["regret"].values():
        assert all(v["final"][0] >= 0 for v in methods.values())
    assert "qparego" in result["regret"]["branin4-currin4 | top"]
    for name in ("results.json", "results.md", "patterns.png", "bayes_regret.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_cost_ids_smoke(tmp_path):
    import cost_ids

    result = cost_ids.main(
        [
            "--smoke",
            "--workers",
            "1",
            "--methods",
            "cost-ids",
            "ucb",
            "ei-per-cost",
            "--out",
            str(tmp_path),
        ]
    )
    assert set(result["table"]) == {"cost-ids", "ucb", "ei-per-cost"}
    for row in result["table"].values():
        assert row["final_regret"][0] >= 0 and row["seeds"] == 1
    assert (tmp_path / "regret_vs_cost.png").stat().st_size > 0
    assert "Seeds 0; " in (tmp_path / "results.md").read_text()


def test_cost_ids_first_seed_smoke(tmp_path):
    import cost_ids

    result = cost_ids.main(
        [
            "--smoke",
            "--workers",
            "1",
            "--first-seed",
            "5",
            "--seeds",
            "2",
            "--methods",
            "cost-ids",
            "ucb",
            "--out",
            str(tmp_path),
        ]
    )
    assert result["seeds_run"] == [5, 6] and not result["rho"]  # main part only, seeds 5-6
    assert {m: row["seed_list"] for m, row in result["table"].items()} == {
        "cost-ids": [5, 6],
        "ucb": [5, 6],
    }
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["method"], r["seed"]) for r in runs) == [
        ("cost-ids", 5),
        ("cost-ids", 6),
        ("ucb", 5),
        ("ucb", 6),
    ]
    test = result["wilcoxon"]["cost-ids vs ucb"]
    assert (
        test["seeds"] == 2 and 0 <= test["cost_ids_better_in"] <= 2 and 0 < test["wilcoxon_p"] <= 1
    )
    md = (tmp_path / "results.md").read_text()
    assert (
        "--first-seed 5" in md
        and "Seeds 5-6;" in md
        and "chosen on seeds 0-4" in md
        and "held out" in md
    )
    assert (tmp_path / "regret_vs_cost.png").stat().st_size > 0
    # the rho part stays on seeds 0..: with main on 5-6 it also runs rho 1 and 2 itself
    jobs = cost_ids.jobs_for(["main", "rho"], 2, 2, True, first_seed=5)
    assert {(j["rho"], j["seed"]) for j in jobs if j["part"] == "rho"} == {
        (r, s) for r in cost_ids.RHOS for s in (0, 1)
    }
    assert len({(j["part"], j["method"], j["rho"], j["seed"]) for j in jobs}) == len(jobs)


def test_bench_startup_smoke(tmp_path):
    import bench_startup

    info = bench_startup.main(["--smoke", "--out", str(tmp_path)])
    rows = {r["command"]: r for r in info["rows"]}
    assert rows["import botorch"]["vs_botorch"] == 1.0
    assert {
        "dsbo.blackbox status",
        "dsbo.optimize --help",
        "from dsbo.campaign import Campaign",
    } <= set(rows)
    assert all(r["wall_s"] > 0 for r in rows.values())
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (tmp_path / "results.md").read_text().startswith("# Command start-up")


def test_bench_mixed_acquisition_smoke(tmp_path):
    import bench_mixed_acquisition

    result = bench_mixed_acquisition.main(["--smoke", "--out", str(tmp_path)])
    assert {r["problem"] for r in result["table"]} == {"ackley-cond"}
    for row in result["rows"]:
        assert row["loop_s"] > 0 and row["batched_s"] > 0 and row["combinations"] > 1
        assert math.isfinite(row["loop_value"]) and math.isfinite(row["batched_value"])
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (
        (tmp_path / "results.md")
        .read_text()
        .startswith("# Acquisition optimization over category combinations")
    )


def test_bench_categorical_smoke(tmp_path):
    import bench_categorical

    assert bench_categorical.main(["--smoke", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "results.json").read_text())
    for problem in ("branin-cat", "ackley-cat"):
        for arm in ("relax", "enumerate", "ordinal"):
            [run] = result["runs"][problem][arm]
            assert run["regret"] >= -1e-6 and run["seconds_per_proposal"] > 0
    assert (
        (tmp_path / "results.md").read_text().startswith("# Categorical representations (1 seeds")
    )


def test_report_importance_smoke(tmp_path):
    import report_importance

    result = report_importance.main(["--smoke", "--out", str(tmp_path)])
    rows = {r["problem"]: r for r in result["table"]}
    assert set(rows) == {"branin-20d", "hartmann6-30d"}
    for problem, k in (("branin-20d", 2), ("hartmann6-30d", 6)):
        row = rows[problem]
        assert row["seeds"] == 2 and row["budget"] == 8 and row["k"] == k
        assert sum(row["num_in_top_k"].values()) == 2 and row["methods"] == [
            "inverse ARD lengthscales"
        ]
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 4 and all(r["completed"] == 8 for r in runs)
    for run in runs:
        assert len(run["ranking"]) == {"branin-20d": 20, "hartmann6-30d": 30}[run["problem"]]
        assert run["ranking"] == list(run["scores"]) and abs(sum(run["scores"].values()) - 1) < 1e-9
        assert all(run["ranking"][rank - 1] == name for name, rank in run["relevant_ranks"].items())
    assert (
        report_importance.main(["--smoke", "--out", str(tmp_path)])["table"] == result["table"]
    )  # resumed
    assert (tmp_path / "results.md").read_text().startswith("# Report importance")
    assert (tmp_path / "relevant_ranks.png").stat().st_size > 0


def test_bench_report_smoke(tmp_path):
    import bench_report

    info = bench_report.main(["--smoke", "--out", str(tmp_path)])
    assert info["trials"] == 30 and info["parameters"] == 20
    assert [r["surrogate"] for r in info["rows"]] == ["gp", "map-saas"]
    for row in info["rows"]:
        assert (
            4.8e6 < row["bytes"] < 5.0e6 and row["page_s"] > 0 and len(row["top_parameters"]) == 3
        )
    assert (tmp_path / "results.md").read_text().startswith("# HTML report: size and build time")
    assert not list(tmp_path.glob("*.html"))


def test_freeze_thaw_smoke(tmp_path):
    import freeze_thaw

    result = freeze_thaw.main(
        ["--smoke", "--out", str(tmp_path), "--arms", "ft-dkgp", "ft-power-law", "ft-dkgp-campaign"]
    )
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert {r["arm"] for r in runs} == {"ft-dkgp", "ft-power-law", "ft-dkgp-campaign"}
    assert all(r["epochs_spent"] == 40 for r in runs)
    [campaign] = [r for r in runs if r["arm"] == "ft-dkgp-campaign"]
    assert campaign["final_best"] is not None and set(campaign["statuses"]) >= {
        "completed",
        "paused",
    }
    for r in runs:  # every epoch is charged once: the trials' epochs add up to the budget
        assert sum(r["epochs_per_trial"]) == 40 and r["starts"] + r["continues"] >= r["num_trials"]
    assert {row["arm"] for row in result["rows"]} >= {"ft-dkgp", "ft-power-law"}
    for name in ("results.json", "results.md", "best_vs_epochs.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_curve_models_smoke(tmp_path):
    import curve_models

    result = curve_models.main(["--smoke", "--threads", "1", "--out", str(tmp_path)])
    [rep] = result["calibration"]["repeats"]
    for name in ("deep-kernel-gp", "power-law-ensemble", "exact fidelity GP"):
        m = rep["models"][name]
        assert (
            0 <= m["coverage90"] <= 1
            and m["median_abs_error"] >= 0
            and len(m["mean"]) == rep["test_configs"]
        )
    timed = [r for r in result["decision"]["rows"] if "skipped" not in r]
    assert {r["n"] for r in timed} == {100, 200}
    assert {r["model"] for r in timed} >= {
        "deep-kernel-gp (warm 5)",
        "deep-kernel-gp (warm 2)",
        "power-law-ensemble (warm 5)",
    }
    assert all(r["warm_decision_s"] > 0 and r["choice_s"] > 0 for r in timed)
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (
        (tmp_path / "results.md")
        .read_text()
        .startswith("# Curve models: calibration and decision cost (1 calibration repeats")
    )
    for name in ("decision_cost.png", "calibration.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_bench_acquisition_batches_smoke(tmp_path):
    import bench_acquisition_batches

    result = bench_acquisition_batches.main(["--smoke", "--out", str(tmp_path)])
    assert {(r["surrogate"], r["arm"]) for r in result["rows"]} == {
        (s, a) for s in ("map-saas", "gp") for a, _, _ in bench_acquisition_batches.ARMS
    }
    assert all(r["median_s"] > 0 and math.isfinite(r["value"]) for r in result["rows"])
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    assert (tmp_path / "results.md").read_text().startswith("# Acquisition optimization: raw-point")


def test_bench_optimize_command_smoke(tmp_path):
    import bench_optimize_command

    result = bench_optimize_command.main(["--smoke", "--out", str(tmp_path)])
    after, before = result["runs"]["after"], result["runs"]["before"]
    assert len(after) == len(before) == 1
    for run in after + before:
        assert 0 < run["fit"] + run["acquisition"] < run["wall"] and run["rest"] > 0
    # --smoke compares the working tree with HEAD: the same search, the same answer
    assert after[0]["best_value"] == pytest.approx(before[0]["best_value"], rel=1e-9)
    assert json.loads((tmp_path / "results.json").read_text())["config"]["smoke"] is True
    assert (
        (tmp_path / "results.md").read_text().startswith("# `python -m dsbo.optimize` end to end")
    )


def test_default_command_smoke(tmp_path):
    import default_command

    result = default_command.main(
        [
            "--smoke",
            "--out",
            str(tmp_path),
            "--arm",
            "default=",
            "--arm",
            "every2={restart_every: 2}",
        ]
    )
    assert [row["arm"] for row in result["arms"]] == ["default", "every2"]
    for row in result["arms"]:
        [run] = row["per_seed"].values()
        assert math.isfinite(run["best_value"]) and run["relevant_only"] == (
            set(run["changed"]) <= {"x4", "x5"}
        )
        assert run["fit_s"] > 0 and run["acquisition_s"] > 0
    assert (
        (tmp_path / "results.md")
        .read_text()
        .startswith("# The default command's answers over seeds")
    )
    # a rerun resumes: nothing runs again, the same table
    again = default_command.main(
        [
            "--smoke",
            "--out",
            str(tmp_path),
            "--arm",
            "default=",
            "--arm",
            "every2={restart_every: 2}",
        ]
    )
    assert again["arms"][0]["per_seed"] == result["arms"][0]["per_seed"]
