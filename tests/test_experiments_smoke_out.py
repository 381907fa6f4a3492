"""``--smoke`` never writes over the committed results under experiments/results/: without an
explicit ``--out`` every script's smoke run writes to a fresh temporary folder
(experiments/smoke_out.py); an explicit ``--out`` is honoured."""

import importlib
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
RESULTS = EXPERIMENTS / "results"
sys.path.insert(0, str(EXPERIMENTS))

SMOKE_SCRIPTS = sorted(p.stem for p in EXPERIMENTS.glob("*.py") if '"--smoke"' in p.read_text())


def snapshot() -> dict[str, tuple[int, int]]:
    """Every file under experiments/results/ with its size and modification time."""
    return {
        str(p.relative_to(RESULTS)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in RESULTS.rglob("*")
        if p.is_file()
    }


def is_inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def test_the_helper_picks_a_fresh_temporary_folder_only_for_smoke_without_out(tmp_path, capsys):
    import smoke_out

    default = RESULTS / "bench_loop"
    first = smoke_out.output_folder(None, True, default)
    second = smoke_out.output_folder(None, True, default)
    try:
        assert first != second and first.is_dir() and not any(first.iterdir())
        assert first.name.startswith("dsbo-smoke-bench_loop-")
        assert is_inside(first, Path(tempfile.gettempdir())) and not is_inside(first, RESULTS)
        assert str(first) in capsys.readouterr().out  # says where it writes
    finally:
        first.rmdir()
        second.rmdir()
    assert smoke_out.output_folder(str(tmp_path), True, default) == tmp_path  # --out is honoured
    assert smoke_out.output_folder(tmp_path, False, default) == tmp_path
    assert (
        smoke_out.output_folder(None, False, default) == default
    )  # a real run: the results folder


@pytest.mark.parametrize("name", SMOKE_SCRIPTS)
def test_every_smoke_script_routes_its_output_through_the_helper(name, monkeypatch, tmp_path):
    """Each script's main() asks output_folder() for its folder right after parsing (stopped
    there): --smoke alone gets a temporary folder, --smoke --out DIR gets DIR."""
    import smoke_out

    module = importlib.import_module(name)
    chosen = []

    class Stop(Exception):
        pass

    def spy(out, smoke, default, name=None):
        chosen.append(smoke_out.output_folder(out, smoke, default, name))
        raise Stop

    monkeypatch.setattr(module, "output_folder", spy)
    monkeypatch.setattr(smoke_out.tempfile, "mkdtemp", lambda prefix: str(tmp_path / prefix))
    with pytest.raises(Stop):
        module.main(["--smoke"])
    with pytest.raises(Stop):
        module.main(["--smoke", "--out", str(tmp_path / "explicit")])
    temporary, explicit = chosen
    assert temporary.name.startswith("dsbo-smoke-") and not is_inside(temporary, RESULTS)
    assert explicit == tmp_path / "explicit"


def test_a_smoke_run_without_out_leaves_the_committed_results_alone(capsys):
    import bench_bonsai_prune

    before = snapshot()
    assert before  # the committed results are there to protect
    result = bench_bonsai_prune.main(["--smoke"])
    line = next(x for x in capsys.readouterr().out.splitlines() if "writing to" in x)
    folder = Path(line.split("writing to ", 1)[1].strip())
    try:
        assert snapshot() == before
        assert not is_inside(folder, RESULTS)
        assert result["smoke"] is True and (folder / "results.md").read_text().startswith(
            "# BONSAI pruning"
        )
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
