"""The --smoke mode of experiments/bench_stop_decision.py times should_stop() and report() with
4 workers on PostgreSQL (processes) and SQLite (threads), for every rule and store size, and
writes its results. Skips with the reason when no PostgreSQL server can be started."""

import json
import sys
from pathlib import Path

import pytest
from pg_helpers import postgres_server  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


@pytest.mark.slow
def test_bench_stop_decision_smoke(tmp_path, postgres_server):  # noqa: F811
    import bench_stop_decision

    result = bench_stop_decision.main(
        ["--smoke", "--pg", postgres_server.url("postgres"), "--out", str(tmp_path)]
    )
    rows = result["rows"]
    assert {(r["store"], r["size"], r["rule"]) for r in rows} == {
        (store, size, rule)
        for store in ("postgres", "sqlite")
        for size in (10, 40)
        for rule in ("median", "asha", "hyperband")
    }
    for r in rows:
        assert r["workers"] == 4 and r["trials_run"] == 8, r
        assert r["decision"]["n"] >= 8 and r["report"]["n"] == r["decision"]["n"], r
        d = r["decision"]
        assert 0 < d["median_ms"] <= d["p95_ms"] <= d["max_ms"], r
        assert r["trials_at_end"] == r["size"] + 8 and r["curve_rows_at_end"] >= r["size"] * 9
        assert set(r["parts_ms"]) >= {
            "store.curves()",
            "rule.decide (in memory)",
            "EarlyStopping.decide",
        }
    assert json.loads((tmp_path / "results.json").read_text())["smoke"] is True
    text = (tmp_path / "results.md").read_text()
    assert text.startswith("# bench_stop_decision") and "| postgres | 40 | hyperband |" in text
