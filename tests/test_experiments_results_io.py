"""experiments/results_io.py (issue 59): an experiment's raw runs are kept once, in runs.jsonl;
results.json is the summary, and every committed one beside a runs.jsonl holds no runs."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"
sys.path.insert(0, str(ROOT / "experiments"))


def test_read_runs_skips_blank_and_cut_lines_and_takes_a_folder(tmp_path):
    from results_io import read_runs

    assert read_runs(tmp_path) == [] and read_runs(tmp_path / "runs.jsonl") == []
    (tmp_path / "runs.jsonl").write_text('{"seed": 0}\n\n{"seed": 1}\n{"seed": 2, "tr')
    assert read_runs(tmp_path) == [{"seed": 0}, {"seed": 1}]
    assert read_runs(tmp_path / "runs.jsonl") == read_runs(tmp_path)


def test_write_results_names_the_runs_file_and_refuses_to_repeat_the_runs(tmp_path):
    from results_io import read_runs, write_results

    runs = [{"seed": 0, "values": [1.0, 0.5]}, {"seed": 1, "values": [2.0]}]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    written = write_results(tmp_path, {"summary": {"mean": 0.75}}, runs)
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert (
        on_disk == written == {"summary": {"mean": 0.75}, "runs_file": "runs.jsonl", "num_runs": 2}
    )
    assert read_runs(tmp_path / on_disk["runs_file"]) == runs
    with pytest.raises(ValueError, match="runs.jsonl"):
        write_results(tmp_path, {"summary": {}, "runs": runs}, runs)


def committed_results_beside_runs():
    from results_io import run_lines

    return sorted(p for p in RESULTS.rglob("results.json") if run_lines(p.parent))


@pytest.mark.parametrize(
    "path", committed_results_beside_runs(), ids=lambda p: str(p.parent.relative_to(RESULTS))
)
def test_no_committed_results_json_repeats_the_runs_beside_it(path):
    from results_io import read_runs

    data = json.loads(path.read_text())
    assert "runs" not in data, f"{path} repeats the runs of runs.jsonl"
    if "num_runs" in data:  # written by results_io: the summary covers that many recorded runs
        assert data["runs_file"] == "runs.jsonl"
        assert 0 < data["num_runs"] <= len(read_runs(path.parent))


def test_archived_runs_read_as_before_and_lines_appended_after_come_last(tmp_path):
    from results_io import archive_runs, read_runs, reference_to

    runs = [{"arm": "a", "seed": s, "values": [float(s)]} for s in range(3)]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    archive = archive_runs(tmp_path)
    assert archive.name == "runs.jsonl.gz" and not (tmp_path / "runs.jsonl").exists()
    assert read_runs(tmp_path) == runs
    assert archive_runs(tmp_path).read_bytes() == archive.read_bytes()  # no timestamp inside
    later = {"arm": "b", "seed": 0, "values": [9.0]}
    (tmp_path / "runs.jsonl").write_text(json.dumps(later) + "\n")  # a resumed run appends
    assert read_runs(tmp_path) == [*runs, later]
    (tmp_path / "next").mkdir()  # a reference to the archived file reads through the archive
    ref = reference_to(tmp_path / "runs.jsonl", tmp_path / "next", {"arm": "a", "seed": 1})
    (tmp_path / "next" / "runs.jsonl").write_text(json.dumps(ref) + "\n")
    assert read_runs(tmp_path / "next") == [runs[1]]


def test_a_reference_line_reads_as_the_run_it_names_in_its_place(tmp_path):
    from results_io import read_runs, reference_to

    shared = tmp_path / "runs.jsonl"
    runs = [
        {"arm": "random", "seed": 0, "values": [3.0]},
        {"arm": "gp", "seed": 0, "values": [1.0]},
    ]
    shared.write_text("".join(json.dumps(r) + "\n" for r in runs))
    (tmp_path / "later").mkdir()
    ref = reference_to(shared, tmp_path / "later", {"arm": "gp", "seed": 0}, {"arm": "gp-before"})
    assert ref == {
        "run_in": "../runs.jsonl",
        "where": {"arm": "gp", "seed": 0},
        "with": {"arm": "gp-before"},
    }
    own = {"arm": "gp-new", "seed": 0, "values": [0.5]}
    lines = [own, reference_to(shared, tmp_path / "later", {"arm": "random"}), ref]
    (tmp_path / "later" / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    read = read_runs(tmp_path / "later")
    assert read == [own, runs[0], {"arm": "gp-before", "seed": 0, "values": [1.0]}]
    assert list(read[2]) == ["arm", "seed", "values"]  # the fields in the recorded order
    # a reference to no run, or to several, is an error, not a run left out
    for where in ({"arm": "ax"}, {"seed": 0}):
        bad = reference_to(shared, tmp_path / "later", where)
        (tmp_path / "later" / "runs.jsonl").write_text(json.dumps(bad) + "\n")
        with pytest.raises(ValueError, match="names [02] runs"):
            read_runs(tmp_path / "later")
    # nor may two files refer to each other
    loop = reference_to(tmp_path / "later" / "runs.jsonl", tmp_path, {"seed": 0})
    shared.write_text(json.dumps(loop) + "\n")
    (tmp_path / "later" / "runs.jsonl").write_text(
        json.dumps(reference_to(shared, tmp_path / "later", {"seed": 0})) + "\n"
    )
    with pytest.raises(ValueError, match="refer back"):
        read_runs(tmp_path)


MIXED_SPACES = ("mixed_spaces", "mixed_spaces/after_fixes", "mixed_spaces/issue45")


def test_the_mixed_spaces_reports_share_their_runs_and_record_each_once():
    from results_io import REFERENCE, read_runs, run_lines

    recorded: dict[str, str] = {}
    key = ("problem", "arm", "seed", "budget", "smoke")
    for folder in (*MIXED_SPACES, "mixed_spaces/issue45-timing"):
        lines = run_lines(RESULTS / folder)  # archived or not
        runs = read_runs(RESULTS / folder)  # every reference names one run
        assert len(runs) == len(lines) and len({tuple(r[k] for k in key) for r in runs}) == len(
            runs
        )
        for line in lines:
            run = json.loads(line)
            if REFERENCE in run:
                continue
            body = json.dumps({k: v for k, v in run.items() if k != "arm"}, sort_keys=True)
            assert body not in recorded, f"{folder}: a run of {recorded.get(body)} again"
            recorded[body] = folder
    # the second slice of issue 45 reports the baselines and the previous default of the earlier
    # folders: 108 of its 372 runs are read from there (30 of them under the name of the old default)
    issue45 = "\n".join(run_lines(RESULTS / "mixed_spaces" / "issue45"))
    assert issue45.count(f'"{REFERENCE}"') == 108 and issue45.count('"with"') == 30
    assert len(read_runs(RESULTS / "mixed_spaces" / "issue45")) == 372


#: issue 59: experiments/results, the raw runs, reports and plots the results page rests on.
RESULTS_LIMIT_BYTES = 20_000_000


def tracked_results_bytes() -> int:
    """The bytes of the files under experiments/results that git tracks (every file there when
    git cannot say, e.g. in an exported tree)."""
    import subprocess

    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", "experiments/results"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        listed = b""
    paths = [ROOT / p.decode() for p in listed.split(b"\0") if p]
    if not paths:
        paths = [p for p in RESULTS.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in paths if p.exists())


def test_experiments_results_stays_under_20_mb():
    size = tracked_results_bytes()
    assert 0 < size <= RESULTS_LIMIT_BYTES, (
        f"experiments/results holds {size / 1e6:.2f} MB of tracked files, over "
        f"{RESULTS_LIMIT_BYTES / 1e6:.0f} MB: keep raw runs once (results_io.reference_to), code "
        "long repeated strings, draw plots with results_io.save_figure and shrink them losslessly"
    )


def test_plots_are_drawn_at_the_committed_dpi_and_shrunk_with_the_same_pixels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image
    from results_io import PLOT_DPI, save_figure
    from shrink_plots import pixels, shrink

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2, 3], [3, 1, 2])
    save_figure(fig, tmp_path / "plot.png")
    plt.close(fig)
    with Image.open(tmp_path / "plot.png") as image:
        assert image.size == (3 * PLOT_DPI, 2 * PLOT_DPI)
    # an opaque image stored loosely: smaller after, the same pixels
    rgba = np.full((40, 60, 4), 255, dtype=np.uint8)
    rgba[10:30, 5:50, :3] = (31, 119, 180)
    Image.fromarray(rgba).save(tmp_path / "loose.png", compress_level=0)
    data = (tmp_path / "loose.png").read_bytes()
    before, after = shrink(tmp_path / "loose.png")
    assert before == len(data) and after == (tmp_path / "loose.png").stat().st_size < before
    assert (pixels((tmp_path / "loose.png").read_bytes()) == rgba).all()
