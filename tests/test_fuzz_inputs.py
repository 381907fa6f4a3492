"""Fuzzed bad input: `python -m dsbo.optimize` configs and `python -m dsbo.blackbox tell` values.

For every generated case: a non-zero exit, a message that names the field, no traceback, and
nothing evaluated (the run directory holds no completed or failed trial; a refused `tell`
leaves its trial pending). Runs in-process, so a case costs a config parse and at most one
dry iteration of a GP on synthetic points. ``DSBO_FUZZ_EXAMPLES=400 pytest
tests/test_fuzz_inputs.py`` runs a longer hunt.
"""

import contextlib
import io
import json
import math
import os
import re
import sqlite3
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsbo import blackbox, optimize

BASE = {
    "problem": {"name": "branin", "options": {}},
    "surrogate": {"name": "gp", "options": {}},
    "acquisition": {
        "name": "auto",
        "options": {},
        "num_restarts": 2,
        "raw_samples": 16,
        "maxiter": 10,
    },
    "budget": 6,
    "n_init": 3,
    "progress": False,
    "wandb": {"mode": "disabled"},
}

#: (dotted key, bad value, text the error must contain). Each is wrong on its own.
BAD_FIELDS = [
    ("budget", 0, "budget"),
    ("budget", -3, "budget"),
    ("budget", "abc", "budget"),
    ("budget", "0x10", "budget"),
    ("budget", "010", "budget"),
    ("budget", 1.5, "budget"),
    ("budget", True, "budget"),
    ("budget", 10**12, "budget"),
    ("budget", None, "budget"),
    ("n_init", 50, "n_init"),
    ("n_init", 0, "n_init"),
    ("n_init", "1_0", "n_init"),
    ("q", 0, "q"),
    ("q", 100, "q"),
    ("seed", -1, "seed"),
    ("seed", 2**64, "seed"),
    ("seed", "0b1", "seed"),
    ("threads", 0, "threads"),
    ("threads", 100_000, "threads"),
    ("max_consecutive_failures", 0, "max_consecutive_failures"),
    ("eval_timeout", 0, "eval_timeout"),
    ("eval_timeout", -1.0, "eval_timeout"),
    ("eval_timeout", ".inf", "eval_timeout"),
    ("eval_timeout", "soon", "eval_timeout"),
    ("on_pending", "later", "on_pending"),
    ("progress", "maybe", "progress"),
    ("problem", None, "problem"),
    ("surrogate", None, "surrogate"),
    ("acquisition", None, "acquisition"),
    ("problem", [1, 2], "problem"),
    ("problem.name", "branin-99999999999d", "dimension"),
    ("problem.name", "branin-0d", "dimension"),
    ("problem.options", {"noise_std": -1.0}, "noise_std"),
    ("problem.options", {"nosie_std": 0.1}, "nosie_std"),
    ("problem.options", {"target": "nowhere"}, "target"),
    ("surrogate.options", {"kernel": "foo"}, "kernel"),
    ("surrogate.options", {"lengthscale": 1.0}, "lengthscale"),
    ("surrogate.options", "rbf", "surrogate.options"),
    ("acquisition.options", {"beta": 1.0}, "beta"),
    ("acquisition.num_restarts", 0, "num_restarts"),
    ("acquisition.raw_samples", "lots", "raw_samples"),
    ("acquisition.mc_samples", -4, "mc_samples"),
    ("acquisition.fixed_features", {50: 0.1}, "fixed_features"),
    ("acquisition.fixed_features", {0: 99.0}, "fixed_features"),
    ("acquisition.fixed_features", {-1: 0.0}, "fixed_features"),
    ("acquisition.fixed_features", {0: "x"}, "fixed_features"),
    ("postprocess", {"nope": {}}, "postprocess"),
    ("postprocess", {"bonsai": {"rho": 5.0}}, "rho"),
    ("postprocess", {"bonsai": {"default": [1.0, 2.0, 3.0]}}, "default"),
    ("postprocess", {"bonsai": {"gamma": 1}}, "gamma"),
    ("postprocess", {"bonsai": {}, "sebo": {}}, "postprocess"),
]

#: Whole-config combinations that are wrong only together.
BAD_COMBINATIONS = [
    ({"acquisition": {"name": "logei"}, "q": 2}, "logei"),
    ({"acquisition": {"name": "logei"}, "problem": {"name": "branin-currin"}}, "logei"),
    ({"acquisition": {"name": "ucb"}, "problem": {"name": "branin-currin"}}, "ucb"),
    ({"acquisition": {"name": "qlognehvi"}}, "qlognehvi"),
    ({"acquisition": {"name": "qlognehvi", "options": {"ref_point": [0, 0]}}}, "ref_point"),
    ({"acquisition": {"name": "sobol"}, "postprocess": {"bonsai": {}}}, "postprocess"),
    ({"acquisition": {"name": "greedy"}, "q": 3}, "greedy"),
    ({"acquisition": {"name": "thompson"}, "problem": {"name": "branin-currin"}}, "thompson"),
]


def _set(config: dict, dotted: str, value) -> dict:
    *parents, last = dotted.split(".")
    node = config
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return config


def _merge(config: dict, patch: dict) -> dict:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            _merge(config[key], value)
        else:
            config[key] = value
    return config


def _dump(config: dict) -> str:
    """YAML text; strings that look like numbers to YAML 1.1 are written bare, as a user would."""
    text = yaml.safe_dump(config, sort_keys=False)
    for literal in ("0x10", "010", "1_0", "0b1", ".inf"):
        text = text.replace(f"'{literal}'", literal)
    return text


def _run_optimize(tmp: Path, text: str, *extra: str) -> tuple[int, str]:
    (tmp / "c.yaml").write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = optimize.main(
            ["--config", str(tmp / "c.yaml"), "--run_dir", str(tmp / "run"), *extra]
        )
    return code, err.getvalue()


def _evaluations(run_dir: Path) -> int:
    store = run_dir / "trials.sqlite"
    if not store.exists():
        return 0
    with contextlib.closing(sqlite3.connect(store)) as conn:
        return conn.execute(
            "SELECT COUNT(*) FROM trials WHERE status IN ('completed', 'failed')"
        ).fetchone()[0]


def _assert_refused(code: int, message: str, field: str, run_dir: Path) -> None:
    assert code == 2, message
    assert "Traceback" not in message, message
    assert "error" in message and field in message, message
    assert _evaluations(run_dir) == 0, "nothing is evaluated before a config error"


#: Examples per fuzz test; ``DSBO_FUZZ_EXAMPLES=400`` for a longer hunt than CI's.
fuzz = settings(
    max_examples=int(os.environ.get("DSBO_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@fuzz
@given(
    case=st.sampled_from(BAD_FIELDS), problem=st.sampled_from(["branin", "hartmann6", "branin-6d"])
)
def test_fuzzed_bad_fields(tmp_path_factory, case, problem):
    key, value, field = case
    config = _set(_set(json.loads(json.dumps(BASE)), "problem.name", problem), key, value)
    tmp = tmp_path_factory.mktemp("cfg")
    code, message = _run_optimize(tmp, _dump(config))
    _assert_refused(code, message, field, tmp / "run")


@pytest.mark.parametrize("patch, field", BAD_COMBINATIONS)
def test_bad_combinations_fail_before_the_first_evaluation(tmp_path, patch, field):
    config = _merge(json.loads(json.dumps(BASE)), json.loads(json.dumps(patch)))
    code, message = _run_optimize(tmp_path, _dump(config))
    _assert_refused(code, message, field, tmp_path / "run")


@fuzz
@given(
    name=st.text(min_size=1, max_size=12),
    section=st.sampled_from(["problem", "surrogate", "acquisition"]),
)
def test_fuzzed_unknown_names(tmp_path_factory, name, section):
    from dsbo.acquisition import available_policies
    from dsbo.problems import available_problems
    from dsbo.surrogates import available_surrogates

    known = {**available_policies(), **available_problems(), **available_surrogates(), "auto": ""}
    if name.strip().lower() in known or name.strip().lower().startswith(("branin", "hartmann")):
        return
    config = _set(json.loads(json.dumps(BASE)), f"{section}.name", name)
    tmp = tmp_path_factory.mktemp("name")
    code, message = _run_optimize(tmp, yaml.safe_dump(config))
    _assert_refused(code, message, section, tmp / "run")


def test_run_dir_that_is_a_file_or_unwritable(tmp_path):
    (tmp_path / "file").write_text("x")
    text = yaml.safe_dump(BASE)
    code, message = _run_optimize(tmp_path, text, "--run_dir", str(tmp_path / "file" / "run"))
    _assert_refused(code, message, "run_dir", tmp_path / "file")
    code, message = _run_optimize(tmp_path, text, "--run_dir", str(tmp_path / "file"))
    _assert_refused(code, message, "run_dir", tmp_path / "x")


def test_duplicate_keys_and_bad_yaml_are_named(tmp_path):
    code, message = _run_optimize(tmp_path, "budget: 8\nbudget: 9\n")
    _assert_refused(code, message, "'budget' appears twice", tmp_path / "run")
    code, message = _run_optimize(tmp_path, "budget: [\n")
    _assert_refused(code, message, "c.yaml", tmp_path / "run")


# ------------------------------------------------------------------ blackbox tell
BLACK_BOX = {
    "problem": {
        "name": "black-box",
        "options": {
            "parameters": {"a": [0.0, 1.0], "b": [-1.0, 1.0]},
            "objectives": ["y"],
            "constraints": ["c"],
        },
    },
    "surrogate": {"name": "gp"},
    "budget": 10_000,
    "n_init": 10_000,
    "wandb": {"mode": "disabled"},
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lab")
    config = json.loads(json.dumps(BLACK_BOX))
    config["run_dir"] = str(tmp / "run")
    path = tmp / "lab.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = blackbox.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _new_trial(lab: str) -> int:
    code, out, err = _cli("ask", "--config", lab, "--q", "1")
    assert code == 0, err
    return json.loads(out)["trials"][-1]["trial"]


def _expected(value) -> str:
    """What a correct `tell` does with ``value`` for outcomes (y, c): complete, fail, refuse."""

    def number(v):
        return isinstance(v, int | float) and not isinstance(v, bool)

    if isinstance(value, dict):
        ok = set(value) == {"y", "c"} and all(number(v) for v in value.values())
        values = list(value.values()) if ok else []
    elif isinstance(value, list):
        ok = len(value) == 2 and all(number(v) for v in value)
        values = value if ok else []
    else:
        return "refuse"
    if not ok:
        return "refuse"
    return "complete" if all(math.isfinite(v) for v in values) else "fail"


scalars = (
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats() | st.text(max_size=6)
)
values_strategy = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["y", "c", "z", "Y"]), inner, max_size=3)
    ),
    max_leaves=6,
)


@fuzz
@given(value=values_strategy)
def test_fuzzed_tell_values(lab, value):
    trial = _new_trial(lab)
    code, out, err = _cli(
        "tell", "--config", lab, "--trial", str(trial), f"--values={json.dumps(value)}"
    )
    expected = _expected(value)
    assert "Traceback" not in err
    if expected == "refuse":
        assert code == 2 and "error" in err, (value, out, err)
        assert any(word in err for word in ("outcome", "--values")), err
        code, out, err = _cli("ask", "--config", lab, "--q", "1")
        pending = [t["trial"] for t in json.loads(out)["trials"] if t["status"] == "pending"]
        assert trial in pending, "a refused tell leaves the trial pending"
        assert (
            _cli("tell", "--config", lab, "--trial", str(trial), "--values", "[1.0, 2.0]")[0] == 0
        )
    else:
        assert code == 0, (value, err)
        assert json.loads(out)["status"] == ("completed" if expected == "complete" else "failed")


@pytest.mark.parametrize(
    "text, message",
    [
        ("{y: 1, c: 2, z: 3}", r"unknown \['z'\]"),
        ("['1.5', 2]", "must be a number, got '1.5'"),
        ("[true, 2]", "must be a number, got True"),
        ("[[1, 2]]", "must be a number"),
        ("[1, [2]]", "must be a number"),
        ("{y: 1, y: 2, c: 0}", "'y' appears twice"),
        ("[0x10, 1]", "must be a number, got '0x10'"),
        ("abc", "must be a number, got 'abc'"),
        ("[1, 2", "--values"),
    ],
)
def test_malformed_tell_is_refused_and_the_slot_kept(lab, text, message):
    trial = _new_trial(lab)
    code, _, err = _cli("tell", "--config", lab, "--trial", str(trial), "--values", text)
    assert code == 2 and "Traceback" not in err
    assert re.search(message, err), err
    code, out, _ = _cli(
        "tell", "--config", lab, "--trial", str(trial), "--values", "{y: 1.5, c: 0.5}"
    )
    assert code == 0 and json.loads(out)["status"] == "completed"
    code, out, _ = _cli("ask", "--config", lab, "--q", "1")
    trial = json.loads(out)["trials"][-1]["trial"]
    code, out, _ = _cli("tell", "--config", lab, "--trial", str(trial), "--failed", "spoiled")
    assert code == 0 and json.loads(out)["status"] == "failed"
