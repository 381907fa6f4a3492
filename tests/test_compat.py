"""Import paths from before the packages by role still work, with a DeprecationWarning that
names the new path (dsbo._compat), and ``python -m dsbo.<program>`` still runs the programs."""

import importlib
import subprocess
import sys
import warnings

import pytest

from dsbo._compat import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_is_the_new_module_and_warns(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_names_the_readme_used_still_import():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from dsbo.executors import WorkerPool
        from dsbo.runtime.executors import WorkerPool as Moved
        from dsbo.store import TrialStore, open_store

    assert (
        WorkerPool is Moved
        and callable(open_store)
        and TrialStore.__module__ == "dsbo.storage.sqlite"
    )


def test_program_modules_forward_other_names_with_a_warning():
    import dsbo.optimize
    from dsbo.cli.optimize import build_campaign

    with pytest.warns(
        DeprecationWarning, match="dsbo.optimize.build_campaign moved to dsbo.cli.optimize"
    ):
        assert dsbo.optimize.build_campaign is build_campaign


def test_the_warning_points_at_the_importing_code():
    code = "import warnings; warnings.simplefilter('default'); import dsbo.store"
    err = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stderr
    assert err.startswith("<string>:1: DeprecationWarning: dsbo.store moved to dsbo.storage"), err


@pytest.mark.parametrize("program", ["optimize", "blackbox", "sweep"])
def test_python_m_still_runs_each_program(program):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            f"dsbo.{program}",
            *(["status"] if program == "blackbox" else []),
            "--help",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and f"python -m dsbo.{program}" in done.stdout
