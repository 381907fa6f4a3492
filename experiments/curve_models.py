"""Curve models (issue 43): are their predicted final values calibrated on real learning curves,
and what does a freeze-thaw decision cost as the observations grow?

The two learning-curve surrogates of :class:`dsbo.surrogates.curve_model.CurveSurrogate`
(``deep-kernel-gp``, DyHPO's deep-kernel GP with ``inducing: 128``, and
``power-law-ensemble``) are measured against the exact multi-fidelity GP of
:func:`dsbo.surrogates.fidelity.fit_fidelity_gp` (BoTorch's ``SingleTaskMultiFidelityGP``,
the surrogate of early stopping's ``model: "fidelity"``).

1. **Calibration** on the real curves of ``experiments/early_stopping.py``'s cache
   (``mlp-cancer``, seed 0: validation cross-entropy of an MLP on breast cancer, 27 epochs; a
   diverged run's values are capped at 10 and kept as they are; the models see the negated
   values, BoTorch's direction). For repeats ``r = 0..4``: 30% of the configurations with all
   27 epochs are held back ('test'), each cut at a random prefix of 1..13 epochs; each model is
   trained on every other curve (as long as it is) plus the test prefixes and predicts each
   test configuration's value at epoch 27 with ``observation_noise=True``. Reported: coverage
   of the central 90% interval (mean +- 1.645 sd) of the held-back final values (goal: 80-95%),
   the median absolute error, and the same error for the baseline "last observed value"; also
   the coverage of the central 50% interval, of the 90% interval without the observation noise,
   and the median sd over the median error (about 1.48 for a calibrated Gaussian: larger means
   intervals wider than the typical error).
   The exact GP sees every point of the test prefixes and, of the other curves, the points
   dsbo's ``fit_fidelity_model`` keeps with ASHA's rungs (epochs 1, 3, 9, 27 and the last
   one), randomly thinned to ``--exact-points`` in all: on all ~2900 points its fit would take
   far longer than the run's budget on 2 cores (it is cubic in the points).
2. **Decision cost** vs the number ``n`` of observed (configuration, epoch, value) points
   (250, 500, 1000, 2000; random prefixes of the cached curves, in random order, cut to ``n``;
   beyond the cache's points the curves are tiled with jittered configurations). Timed, median
   of 3 repeats: the first fit (from scratch, ``epochs`` Adam steps), a warm-started fit after
   adding ``ceil(1%)`` more points (``warm_epochs`` steps; the points extend paused curves by
   one epoch), and the choice (the posterior of 512 candidate rows, one t-batch each: up to
   256 paused curves at their next epoch and Sobol configurations at epoch 1, what the
   multi-fidelity EI of :mod:`dsbo.stopping.freeze_thaw` evaluates). The deep-kernel GP runs
   with ``warm_epochs`` 50 and 20. The exact GP has no warm start: its decision is a fit on
   the ``n + 1%`` points (``fit_gpytorch_mll`` as dsbo runs it, gpytorch's default settings)
   plus the 512-row posterior, run in a child process that is stopped when one fit takes over
   120 s (150 s with the posterior): that size and the larger ones are skipped. Also timed:
   the same fit with no Adam step (``warm_epochs = 0``: building the rows and the model), the
   fixed cost of a fit. Goal: a warm decision (warm fit + choice) at 2000 points
   <= 1 s, growing at most linearly in ``n``.

Writes ``experiments/results/curve_models/{results.json, results.md, decision_cost.png,
calibration.png}``.

    python experiments/curve_models.py              # 5 repeats, n in 250..2000
    python experiments/curve_models.py --smoke      # 1 repeat, n in 100, 200, few epochs

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into
``experiments/results/``. Without the curve cache (it stays out of git), ``--smoke`` falls
back to synthetic power-law curves (and says so); a full run needs the cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from smoke_out import add_out_argument, output_folder

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "curve_models"
CURVES = HERE / "results" / "early_stopping" / "curves"
PROBLEM, CURVE_SEED, T = "mlp-cancer", 0, 27
MODELS = ("deep-kernel-gp", "power-law-ensemble")
OPTIONS: dict[str, dict[str, Any]] = {"deep-kernel-gp": {"inducing": 128}, "power-law-ensemble": {}}
EXACT = "exact fidelity GP"
Z90 = 1.6448536269514722
Z50 = 0.6744897501960817
TEST_SHARE, MAX_CUT = 0.3, 13
RUNGS = (1, 3, 9, 27)
CANDIDATES = 512
EXACT_LIMIT_S = 120.0
GOAL_COVERAGE = (0.80, 0.95)
GOAL_DECISION_S = 1.0


# ----------------------------------------------------------------------------- data
def load_curves(
    folder: Path,
    allow_synthetic: bool,
    lines: int | None = None,
    problem: str = PROBLEM,
    curve_seed: int = CURVE_SEED,
) -> dict[str, Any]:
    """The cached curves (loss units) and their configurations in the unit cube, from the
    first ``lines`` lines of the cache (all when ``None``; the longest curve of a key wins, as
    :class:`~early_stopping_problems.CurveCache` reads it). The cache is append-only and other
    experiments add to it, so a fixed number of lines is a fixed data set."""
    import hashlib

    import torch

    path = folder / f"{problem}-seed{curve_seed}.jsonl"
    if not path.exists():
        if not allow_synthetic:
            raise SystemExit(
                f"{path} is missing: run experiments/early_stopping.py --problems {problem} first "
                "(the curve cache stays out of git)"
            )
        print(f"{path} is missing: --smoke uses synthetic power-law curves", flush=True)
        return synthetic_curves()
    from early_stopping_problems import make_problems

    from dsbo.space import SearchSpace

    space = SearchSpace(make_problems()[problem].space)
    lower = torch.tensor([b[0] for b in space.bounds], dtype=torch.float64)
    upper = torch.tensor([b[1] for b in space.bounds], dtype=torch.float64)
    text = path.read_text().splitlines()
    used = text[:lines] if lines is not None else text
    if lines is not None and len(text) < lines:
        raise SystemExit(f"{path} has {len(text)} lines, fewer than --lines {lines}")
    table: dict[str, list[float]] = {}
    for line in used:
        row = json.loads(line)
        if len(row["curve"]) > len(table.get(row["key"], ())):
            table[row["key"]] = row["curve"]
    keys = sorted(table)
    box = torch.tensor([space.encode(json.loads(k)) for k in keys], dtype=torch.float64)
    configs = ((box - lower) / (upper - lower)).clamp(0.0, 1.0)  # clamp: -3e-9 from a log bound
    curves = [[float(v) for v in table[k]] for k in keys]
    return {
        "configs": configs,
        "curves": curves,
        "source": str(path.relative_to(HERE.parent))
        if path.is_relative_to(HERE.parent)
        else str(path),
        "lines": len(used),
        "lines_in_file": len(text),
        "columns": space.column_names,
        "sha256_of_lines_used": hashlib.sha256("\n".join(used).encode()).hexdigest(),
    }


def problem_metric(problem: str) -> str:
    """The early-stopping problem's value at each epoch (e.g. "validation cross-entropy")."""
    from early_stopping_problems import make_problems

    return make_problems()[problem].metric


def synthetic_curves(m: int = 60, d: int = 4, full: int = 20, seed: int = 0) -> dict[str, Any]:
    """Power-law loss curves ``c + b t^-a`` + noise, ``full`` of them 27 epochs long (smoke
    without the cache)."""
    import torch

    rng = np.random.default_rng(seed)
    X = rng.random((m, d))
    t = np.arange(1, T + 1)
    curves = []
    for i, x in enumerate(X):
        c, b, a = 0.1 + 0.3 * x[0], 0.5 + x[1], 0.3 + x[2]
        length = T if i < full else int(rng.integers(1, T))
        curves.append([float(v) for v in (c + b * t**-a + 0.01 * rng.standard_normal(T))[:length]])
    return {
        "configs": torch.tensor(X),
        "curves": curves,
        "source": "synthetic (cache missing)",
        "lines": m,
        "columns": [f"x{j}" for j in range(d)],
    }


def subsample(data: dict[str, Any], curves: int, seed: int = 0) -> dict[str, Any]:
    """``curves`` of the curves, the full ones in proportion (smoke)."""
    rng = np.random.default_rng(seed)
    m = len(data["curves"])
    if curves >= m:
        return data
    keep = np.sort(rng.choice(m, size=curves, replace=False))
    return {**data, "configs": data["configs"][keep], "curves": [data["curves"][i] for i in keep]}


# ----------------------------------------------------------------------------- helpers
class Warnings:
    """Distinct warning messages seen while fitting and predicting, with counts."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def __call__(self, where: str):
        outer = self

        class _Catch(warnings.catch_warnings):
            def __enter__(self):
                self.log = super().__enter__()
                warnings.simplefilter("always")
                return self.log

            def __exit__(self, *exc):
                for w in self.log:
                    outer.counts[
                        f"{where}: {w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
                    ] += 1
                return super().__exit__(*exc)

        return _Catch(record=True)


def timed(fn, *args, **kwargs) -> tuple[Any, float, float]:
    """``(fn(*args), wall seconds, CPU seconds of this process)``."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - w0, time.process_time() - c0


def unit_bounds(d: int):
    import torch

    return torch.stack([torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64)])


def points_of(configs, curves, keep=None):
    """``(X, steps, Y)`` of every point of ``curves`` (``keep(i, step, length)`` filters)."""
    import torch

    rows = [
        (i, s)
        for i, c in enumerate(curves)
        for s in range(1, len(c) + 1)
        if keep is None or keep(i, s, len(c))
    ]
    index = torch.tensor([i for i, _ in rows], dtype=torch.long)
    steps = torch.tensor([s for _, s in rows], dtype=torch.float64)
    Y = torch.tensor([[curves[i][s - 1]] for i, s in rows], dtype=torch.float64)
    return configs[index], steps, Y


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


# ----------------------------------------------------------------------------- 1. calibration
def metrics(
    truth: np.ndarray, mean: np.ndarray, sd: np.ndarray, latent_sd: np.ndarray
) -> dict[str, Any]:
    """Coverage of the central 90% and 50% intervals (with the observation noise, and of the
    latent value without it), errors, and the sharpness: median sd over median error (a
    calibrated Gaussian: about 1.48)."""
    err = np.abs(truth - mean)
    finite = np.isfinite(mean) & np.isfinite(sd)
    return {
        "coverage90": float(np.mean(err <= Z90 * sd)),
        "coverage50": float(np.mean(err <= Z50 * sd)),
        "coverage90_latent": float(np.mean(err <= Z90 * latent_sd)),
        "median_abs_error": float(np.median(err)),
        "mean_abs_error": float(np.mean(err)),
        "max_abs_error": float(np.max(err)),
        "median_sd": float(np.median(sd)),
        "median_latent_sd": float(np.median(latent_sd)),
        "sd_over_error": float(np.median(sd) / max(np.median(err), 1e-12)),
        "zero_sd": int(np.sum(sd <= 0)),
        "nonfinite": int(np.sum(~finite)),
    }


def calibration_repeat(
    data: dict[str, Any], r: int, args: argparse.Namespace, caught: Warnings
) -> dict[str, Any]:
    import torch

    from dsbo.surrogates.curve_model import CurveSurrogate
    from dsbo.surrogates.fidelity import fit_fidelity_gp

    configs, curves = data["configs"], data["curves"]
    d = configs.shape[1]
    rng = np.random.default_rng(1000 + r)
    full = [i for i, c in enumerate(curves) if len(c) == T]
    test = sorted(
        int(i) for i in rng.choice(full, size=max(1, round(TEST_SHARE * len(full))), replace=False)
    )
    cuts = [int(k) for k in rng.integers(1, MAX_CUT + 1, size=len(test))]
    seen = [list(c) for c in curves]
    for i, k in zip(test, cuts, strict=True):
        seen[i] = curves[i][:k]
    truth = np.array([curves[i][-1] for i in test])
    last = np.array([curves[i][k - 1] for i, k in zip(test, cuts, strict=True)])
    negated = [[-v for v in c] for c in seen]
    Xq = torch.cat(
        [configs[test], torch.full((len(test), 1), float(T), dtype=torch.float64)], -1
    ).unsqueeze(1)
    out: dict[str, Any] = {
        "repeat": r,
        "test": test,
        "cuts": cuts,
        "truth": truth.tolist(),
        "last": last.tolist(),
        "train_points": sum(map(len, seen)),
        "test_configs": len(test),
        "models": {},
    }
    for name in MODELS:
        torch.manual_seed(r)
        surrogate = CurveSurrogate(
            name, d, T, OPTIONS[name], epochs=args.epochs, warm_epochs=args.warm_epochs[0]
        )
        with caught(f"calibration {name}"):
            model, wall, _ = timed(surrogate.fit, configs, negated)
            post = model.posterior(Xq, observation_noise=True)
            latent = model.posterior(Xq).variance.reshape(-1).clamp_min(0).sqrt().numpy()
        variance = post.variance.reshape(-1)
        mean, sd = -post.mean.reshape(-1).numpy(), variance.clamp_min(0).sqrt().numpy()
        noise = getattr(surrogate.module, "noise_var", None)
        out["models"][name] = {
            **metrics(truth, mean, sd, latent),
            "fit_s": wall,
            "mean": mean.tolist(),
            "sd": sd.tolist(),
            "negative_variance": int((variance < 0).sum()),
            "noise_var_std_units": None if noise is None else float(noise),
        }
    # the exact GP: every test-prefix point, rung points (and the last one) of the others, thinned
    test_set = set(test)
    keep = lambda i, s, n: i in test_set or s in RUNGS or s == n  # noqa: E731
    X, steps, Y = points_of(configs, [[-v for v in c] for c in seen], keep)
    tagged = torch.tensor(
        [
            i in test_set
            for i, c in enumerate(seen)
            for s in range(1, len(c) + 1)
            if keep(i, s, len(c))
        ]
    )
    others = torch.nonzero(~tagged).reshape(-1)
    room = max(0, args.exact_points - int(tagged.sum()))
    drop_rng = torch.Generator().manual_seed(2000 + r)
    chosen = (
        torch.cat(
            [
                torch.nonzero(tagged).reshape(-1),
                others[torch.randperm(len(others), generator=drop_rng)[:room]],
            ]
        )
        .sort()
        .values
    )
    torch.manual_seed(r)
    with caught("calibration exact GP"):
        gp, wall, _ = timed(fit_fidelity_gp, X[chosen], steps[chosen], Y[chosen], unit_bounds(d), T)
        post = gp.posterior(configs[test].unsqueeze(1), observation_noise=True)
        latent = (
            gp.posterior(configs[test].unsqueeze(1))
            .variance.reshape(-1)
            .detach()
            .clamp_min(0)
            .sqrt()
            .numpy()
        )
    variance = post.variance.reshape(-1).detach()
    mean, sd = -post.mean.reshape(-1).detach().numpy(), variance.clamp_min(0).sqrt().numpy()
    out["models"][EXACT] = {
        **metrics(truth, mean, sd, latent),
        "fit_s": wall,
        "points": int(len(chosen)),
        "mean": mean.tolist(),
        "sd": sd.tolist(),
        "negative_variance": int((variance < 0).sum()),
    }
    out["last_value"] = {
        "median_abs_error": float(np.median(np.abs(truth - last))),
        "mean_abs_error": float(np.mean(np.abs(truth - last))),
    }
    return out


def summarize_calibration(repeats: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for name in (*MODELS, EXACT):
        rows = [rep["models"][name] for rep in repeats]
        summary[name] = {
            key: {
                "median": statistics.median(r[key] for r in rows),
                "mean": statistics.fmean(r[key] for r in rows),
                "per_repeat": [r[key] for r in rows],
            }
            for key in (
                "coverage90",
                "coverage50",
                "coverage90_latent",
                "median_abs_error",
                "sd_over_error",
                "fit_s",
            )
        }
        lo, hi = GOAL_COVERAGE
        summary[name]["coverage_goal_met"] = lo <= summary[name]["coverage90"]["median"] <= hi
    errors = [rep["last_value"]["median_abs_error"] for rep in repeats]
    summary["last observed value"] = {
        "median_abs_error": {
            "median": statistics.median(errors),
            "mean": statistics.fmean(errors),
            "per_repeat": errors,
        }
    }
    return summary


# ----------------------------------------------------------------------------- 2. decision cost
def sample_state(data: dict[str, Any], n: int, rng: np.random.Generator) -> list[list[int]]:
    """``[curve index, observed length, tile]`` entries of ``n`` points in all: random prefixes
    of the curves in random order (tiles beyond the first pass get jittered configurations)."""
    lengths = [len(c) for c in data["curves"]]
    entries: list[list[int]] = []
    total, tile = 0, 0
    while total < n:
        for i in rng.permutation(len(lengths)):
            k = min(int(rng.integers(1, lengths[i] + 1)), n - total)
            entries.append([int(i), k, tile])
            total += k
            if total >= n:
                break
        tile += 1
    return entries


def grow(
    data: dict[str, Any], entries: list[list[int]], extra: int, rng: np.random.Generator
) -> list[list[int]]:
    """``extra`` more points: paused curves continued one epoch (new curves at epoch 1 if too few)."""
    lengths = [len(c) for c in data["curves"]]
    entries = [list(e) for e in entries]
    paused = [j for j, (i, k, _) in enumerate(entries) if k < lengths[i]]
    for j in rng.permutation(paused)[:extra]:
        entries[j][1] += 1
    for _ in range(max(0, extra - len(paused))):
        entries.append([int(rng.integers(len(lengths))), 1, 1 + max(e[2] for e in entries)])
    return entries


def build(data: dict[str, Any], entries: list[list[int]]):
    """``(configs, negated curves)`` of ``entries``; tile ``t > 0`` jitters its configuration."""
    import torch

    configs = data["configs"][[i for i, _, _ in entries]].clone()
    for row, (i, _, tile) in enumerate(entries):
        if tile:
            jitter = np.random.default_rng([i, tile]).normal(0.0, 0.01, configs.shape[1])
            configs[row] = (configs[row] + torch.tensor(jitter)).clamp(0.0, 1.0)
    curves = [[-v for v in data["curves"][i][:k]] for i, k, _ in entries]
    return configs, curves


def candidates(data: dict[str, Any], configs, curves, seed: int):
    """512 rows ``[x | epoch]`` (t-batches of one): paused curves at their next epoch (at most
    half), Sobol configurations at epoch 1."""
    import torch

    paused = [j for j, c in enumerate(curves) if len(c) < T][: CANDIDATES // 2]
    sobol = (
        torch.quasirandom.SobolEngine(configs.shape[1], scramble=True, seed=seed)
        .draw(CANDIDATES - len(paused))
        .double()
    )
    X = torch.cat([configs[paused], sobol])
    steps = torch.tensor(
        [len(curves[j]) + 1 for j in paused] + [1] * len(sobol), dtype=torch.float64
    )
    return torch.cat([X, steps.unsqueeze(-1)], -1).unsqueeze(1)


def variants(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """``(label, model, warm_epochs)``."""
    out = [(f"deep-kernel-gp (warm {w})", "deep-kernel-gp", w) for w in args.warm_epochs]
    return out + [
        (
            f"power-law-ensemble (warm {args.warm_epochs[0]})",
            "power-law-ensemble",
            args.warm_epochs[0],
        )
    ]


def decision_cost(
    data: dict[str, Any], args: argparse.Namespace, caught: Warnings
) -> list[dict[str, Any]]:
    import torch

    from dsbo.surrogates.curve_model import CurveSurrogate

    d = data["configs"].shape[1]
    states = {}
    for n in args.sizes:
        rng = np.random.default_rng([n, 7])
        reps = []
        for rep in range(args.timing_repeats):
            first = sample_state(data, n, rng)
            second = grow(data, first, math.ceil(0.01 * n), rng)
            reps.append((build(data, first), build(data, second), rep))
        states[n] = reps
    rows: list[dict[str, Any]] = []
    for label, name, warm in variants(args):
        for n in args.sizes:
            keys = (
                "first_fit_s",
                "warm_fit_s",
                "choice_s",
                "first_fit_cpu_s",
                "warm_fit_cpu_s",
                "untrained_fit_s",
            )
            times: dict[str, list[float]] = {k: [] for k in keys}
            load0 = load_average()
            for (c1, y1), (c2, y2), rep in states[n]:
                torch.manual_seed(rep)
                surrogate = CurveSurrogate(
                    name, d, T, OPTIONS[name], epochs=args.epochs, warm_epochs=warm
                )
                with caught(f"decision {name}"):
                    _, wall1, cpu1 = timed(surrogate.fit, c1, y1)
                    model, wall2, cpu2 = timed(surrogate.fit, c2, y2)
                    X = candidates(data, c2, y2, rep)
                    _, wall3, _ = timed(model.posterior, X)
                    surrogate.warm_epochs = (
                        0  # what a fit costs besides the Adam steps: rows, model
                    )
                    _, wall4, _ = timed(surrogate.fit, c2, y2)
                for key, value in zip(times, (wall1, wall2, wall3, cpu1, cpu2, wall4), strict=True):
                    times[key].append(value)
            row = {
                "model": label,
                "n": n,
                "n_after": sum(map(len, states[n][0][1][1])),
                "tiled_curves": sum(
                    1 for e in sample_state(data, n, np.random.default_rng([n, 7])) if e[2]
                ),
                **{k: statistics.median(v) for k, v in times.items()},
                "all": times,
                "load_before": load0,
                "load_after": load_average(),
            }
            row["warm_decision_s"] = row["warm_fit_s"] + row["choice_s"]
            row["first_decision_s"] = row["first_fit_s"] + row["choice_s"]
            rows.append(row)
            print(
                f"{label} n={n}: first fit {row['first_fit_s']:.2f} s, warm fit {row['warm_fit_s']:.3f} s, "
                f"choice {row['choice_s']:.3f} s (load {load0} -> {row['load_after']})",
                flush=True,
            )
    rows += exact_decisions(data, states, args, caught)
    return rows


def _exact_worker(queue: Any, jobs: list[tuple], threads: int) -> None:
    """Child process of :func:`exact_decisions`: fit the exact GP on each job's points and
    time the fit and the candidates' posterior, one message per job."""
    import torch

    torch.set_num_threads(threads)
    from dsbo.surrogates.fidelity import fit_fidelity_gp

    queue.put(("ready",))
    for n, rep, X, steps, Y, rows, d in jobs:
        torch.manual_seed(rep)
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            gp, wall1, cpu1 = timed(fit_fidelity_gp, X, steps, Y, unit_bounds(d), T)
            _, wall2, _ = timed(gp.model.posterior, rows)
        messages = [f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}" for w in log]
        queue.put(("rep", n, rep, wall1, wall2, cpu1, messages))


def exact_decisions(
    data: dict[str, Any], states: dict[int, list], args: argparse.Namespace, caught: Warnings
) -> list[dict[str, Any]]:
    """The exact GP's decisions (a fit on the ``n + 1%`` points and the posterior of the
    candidates) in a child process (spawned), stopped after 120 s on one fit: the size it was
    fitting is reported as over the limit and the larger ones are skipped."""
    import multiprocessing
    import queue as queues

    import torch

    d = data["configs"].shape[1]
    jobs = []
    for n in args.sizes:
        for _, (c2, y2), rep in states[n]:
            X, steps, Y = points_of(c2, y2)
            rows = candidates(data, c2, y2, rep)
            rows = torch.cat(
                [rows[..., :d], rows[..., d:] / T], -1
            )  # the GP's step column is epoch / T
            jobs.append((n, rep, X, steps, Y, rows, d))
    context = multiprocessing.get_context("spawn")
    channel = context.Queue()
    child = context.Process(target=_exact_worker, args=(channel, jobs, args.threads), daemon=True)
    child.start()
    channel.get(timeout=600)  # imports
    times: dict[int, dict[str, list[float]]] = {
        n: {"fit_s": [], "choice_s": [], "fit_cpu_s": []} for n in args.sizes
    }
    loads: dict[int, list[float]] = {n: [] for n in args.sizes}
    over: int | None = None
    try:
        for n, rep, *_ in jobs:
            loads[n].append(load_average())
            try:
                _, n_, rep_, wall1, wall2, cpu1, messages = channel.get(timeout=EXACT_LIMIT_S + 30)
            except queues.Empty:
                over = n
                print(
                    f"{EXACT} n={n}: a fit ran over {EXACT_LIMIT_S + 30:.0f} s; stopped", flush=True
                )
                break
            assert (n_, rep_) == (n, rep)
            for m in messages:
                caught.counts[f"decision exact GP: {m}"] += 1
            times[n]["fit_s"].append(wall1)
            times[n]["choice_s"].append(wall2)
            times[n]["fit_cpu_s"].append(cpu1)
            print(
                f"{EXACT} n={n} repeat {rep}: fit {wall1:.2f} s, choice {wall2:.3f} s", flush=True
            )
            if wall1 > EXACT_LIMIT_S:
                over = n
                break
    finally:
        if child.is_alive():
            child.kill()
        child.join()
    rows: list[dict[str, Any]] = []
    for n in args.sizes:
        if over is not None and n > over:
            rows.append(
                {
                    "model": EXACT,
                    "n": n,
                    "skipped": f"a fit at n={over} took over {EXACT_LIMIT_S:.0f} s",
                }
            )
            continue
        if n == over:
            done = times[n]["fit_s"]
            why = (
                f"its fit took {done[-1]:.0f} s > {EXACT_LIMIT_S:.0f} s"
                if done and done[-1] > EXACT_LIMIT_S
                else f"its fit ran over {EXACT_LIMIT_S + 30:.0f} s (stopped)"
            )
            rows.append({"model": EXACT, "n": n, "skipped": why, "completed_fits": done})
            continue
        row = {
            "model": EXACT,
            "n": n,
            "n_after": int(sum(map(len, states[n][0][1][1]))),
            **{k: statistics.median(v) for k, v in times[n].items()},
            "all": times[n],
            "load_before": loads[n][0],
            "load_after": load_average(),
        }
        row["first_fit_s"] = row["fit_s"]
        row["warm_decision_s"] = row["first_decision_s"] = row["fit_s"] + row["choice_s"]
        rows.append(row)
    return rows


def threads_check(
    data: dict[str, Any], args: argparse.Namespace, caught: Warnings
) -> list[dict[str, Any]]:
    """The deep-kernel GP's first fit (at most 50 Adam steps, to keep it short), warm fit and
    choice at the smallest size (one repeat) with 1 torch thread and with one per CPU: on a
    machine that other jobs share, threads that wait for each other can cost more than they save."""
    import torch

    from dsbo.surrogates.curve_model import CurveSurrogate

    n, rows = min(args.sizes), []
    rng = np.random.default_rng([n, 7])
    first = sample_state(data, n, rng)
    (c1, y1), (c2, y2) = (
        build(data, first),
        build(data, grow(data, first, math.ceil(0.01 * n), rng)),
    )
    d = c1.shape[1]
    for threads in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        surrogate = CurveSurrogate(
            "deep-kernel-gp",
            d,
            T,
            OPTIONS["deep-kernel-gp"],
            epochs=min(args.epochs, 50),
            warm_epochs=args.warm_epochs[0],
        )
        load0 = load_average()
        with caught("threads check"):
            _, wall1, _ = timed(surrogate.fit, c1, y1)
            model, wall2, _ = timed(surrogate.fit, c2, y2)
            _, wall3, _ = timed(model.posterior, candidates(data, c2, y2, 0))
        rows.append(
            {
                "threads": threads,
                "n": n,
                "first_fit_epochs": min(args.epochs, 50),
                "first_fit_s": wall1,
                "warm_fit_s": wall2,
                "choice_s": wall3,
                "load_before": load0,
                "load_after": load_average(),
            }
        )
        print(
            f"threads check, deep-kernel-gp n={n}, {threads} thread(s): first fit {wall1:.2f} s, warm fit {wall2:.3f} s, "
            f"choice {wall3:.3f} s (load {load0})",
            flush=True,
        )
    torch.set_num_threads(args.threads)
    return rows


def growth(rows: list[dict[str, Any]], sizes: list[int]) -> dict[str, Any]:
    """Per model: the warm decision's ratio between consecutive sizes, and the exponent ``k``
    of ``t ~ n^k`` from the smallest to the largest size measured."""
    out = {}
    for label in dict.fromkeys(r["model"] for r in rows):
        t = {
            r["n"]: r["warm_decision_s"]
            for r in rows
            if r["model"] == label and "warm_decision_s" in r
        }
        ns = [n for n in sizes if n in t]
        ratios = {f"{a}->{b}": t[b] / t[a] for a, b in zip(ns, ns[1:])}  # noqa: B905
        exponent = (
            math.log(t[ns[-1]] / t[ns[0]]) / math.log(ns[-1] / ns[0]) if len(ns) > 1 else None
        )
        largest = max(sizes)
        out[label] = {
            "ratios": ratios,
            "exponent": exponent,
            "largest_n": ns[-1] if ns else None,
            "decision_at_largest_s": t.get(largest),
            "at_most_linear": None if exponent is None else exponent <= 1.0,
            "decision_goal_met": None if largest not in t else t[largest] <= GOAL_DECISION_S,
        }
    return out


# ----------------------------------------------------------------------------- output
def fmt(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def decision_lines(result: dict[str, Any]) -> list[str]:
    """The decision-cost section of results.md."""
    a, lines = result["args"], []
    lines += [
        "",
        f"## 2. Decision cost vs observed points (median of {a['timing_repeats']} repeats, wall seconds)",
        "",
        f"First fit: from scratch ({a['epochs']} Adam steps). Warm fit: after adding ceil(1%) more points (paused curves "
        f"continued one epoch), `warm_epochs` steps from the previous weights. Choice: the posterior of {CANDIDATES} candidate "
        f"rows. Warm decision = warm fit + choice (goal at {max(a['sizes'])} points: <= {GOAL_DECISION_S:g} s, growing at most "
        "linearly). The exact GP has no warm start: its decision is a full fit on the n + 1% points plus the posterior. "
        "Load: the 1-minute load average before -> after the size's repeats (other jobs shared the machine).",
        "",
        "| model | n | first fit s | warm fit s | choice s | warm decision s | first fit CPU s | fit without Adam steps s | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["decision"]["rows"]:
        if "skipped" in r:
            lines.append(f"| {r['model']} | {r['n']} | skipped: {r['skipped']} | | | | | | |")
            continue
        warm = "-" if r["model"] == EXACT else fmt(r["warm_fit_s"])
        cpu = r.get("first_fit_cpu_s", r.get("fit_cpu_s"))
        lines.append(
            f"| {r['model']} | {r['n']} | {fmt(r['first_fit_s'], 2)} | {warm} | {fmt(r['choice_s'])} | "
            f"{fmt(r['warm_decision_s'])} | {fmt(cpu, 2)} | {fmt(r.get('untrained_fit_s'))} | "
            f"{r['load_before']} -> {r['load_after']} |"
        )
    lines += [
        "",
        "Growth of the warm decision (ratio between consecutive sizes; exponent k of t ~ n^k over the sizes measured):",
        "",
        "| model | ratios | exponent | at most linear | decision at largest n (s) | <= 1 s at largest n |",
        "|---|---|---|---|---|---|",
    ]
    for label, g in result["decision"]["growth"].items():
        ratios = ", ".join(f"{k}: {v:.2f}" for k, v in g["ratios"].items())
        verdict = {None: "-", True: "yes", False: "NO"}
        lines.append(
            f"| {label} | {ratios} | {fmt(g['exponent'], 2)} | {verdict[g['at_most_linear']]} | "
            f"{fmt(g['decision_at_largest_s'])} | {verdict[g['decision_goal_met']]} |"
        )
    return lines


def calibration_lines(result: dict[str, Any]) -> list[str]:
    """The calibration section of results.md."""
    a, cal, summary = result["args"], result["calibration"], result["calibration"]["summary"]
    reps = len(cal["repeats"])
    lines = [
        f"## 1. Calibration of the predicted value at epoch {T} ({reps} repeats)",
        "",
        f"Each repeat holds back {int(TEST_SHARE * 100)}% of the full curves ({cal['repeats'][0]['test_configs']} configurations), "
        f"each cut at a random prefix of 1..{MAX_CUT} epochs; the models train on the other curves and the prefixes "
        f"({cal['repeats'][0]['train_points']} points in repeat 0) and predict epoch {T} with `observation_noise=True`. "
        f"The exact GP trains on every test-prefix point plus rung points (epochs {', '.join(map(str, RUNGS))} and the last) of the "
        f"other curves, thinned to {a['exact_points']} points. Coverage: share of held-back final values inside mean +- {Z90:.3f} sd "
        f"(goal {GOAL_COVERAGE[0]:.0%}-{GOAL_COVERAGE[1]:.0%}). Errors in the metric's units. Median over repeats (mean in brackets).",
        "",
        "| model | coverage of the 90% interval | median abs. error | median predicted sd | median sd / median error | "
        "coverage of the 50% interval | 90% coverage without noise | fit s | coverage goal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in (*MODELS, EXACT):
        s = summary[name]
        sds = [rep["models"][name]["median_sd"] for rep in cal["repeats"]]
        cell = lambda key, f=".1%", s=s: f"{s[key]['median']:{f}} ({s[key]['mean']:{f}})"  # noqa: E731
        lines.append(
            f"| {name} | {cell('coverage90')} | {cell('median_abs_error', '.4f')} | {statistics.median(sds):.4f} | "
            f"{cell('sd_over_error', '.1f')} | {cell('coverage50')} | {cell('coverage90_latent')} | "
            f"{s['fit_s']['median']:.1f} | {'met' if s['coverage_goal_met'] else 'MISSED'} |"
        )
    lv = summary["last observed value"]["median_abs_error"]
    lines.append(
        f"| last observed value (baseline) | - | {lv['median']:.4f} ({lv['mean']:.4f}) | - | - | - | - | - | - |"
    )
    lines += [
        "",
        "Per repeat (coverage / median abs. error):",
        "",
        "| repeat | " + " | ".join((*MODELS, EXACT, "last value")) + " |",
        "|---|" + "---|" * (len(MODELS) + 2),
    ]
    for rep in cal["repeats"]:
        cells = [
            f"{rep['models'][m]['coverage90']:.0%} / {rep['models'][m]['median_abs_error']:.4f}"
            for m in (*MODELS, EXACT)
        ]
        lines.append(
            f"| {rep['repeat']} | "
            + " | ".join(cells)
            + f" | {rep['last_value']['median_abs_error']:.4f} |"
        )
    return lines


def write_markdown(result: dict[str, Any], path: Path) -> None:
    a, cal = result["args"], result["calibration"]
    reps = len(cal["repeats"])
    lines = [
        f"# Curve models: calibration and decision cost ({reps} calibration repeats run, timings median of "
        f"{a['timing_repeats']}; machine: {result['machine']['cpus']}-core CPU, torch threads {result['machine']['torch_threads']})"
        + (" (smoke: the numbers are not results)" if result["smoke"] else ""),
        "",
        f"Curves: `{result['data']['source']}`, its first {result['data']['cache_lines']} lines ({result['data']['curves']} configurations, {result['data']['points']} points, "
        f"{result['data']['full_curves']} with all {T} epochs; {result['data'].get('metric', 'validation cross-entropy')}, minimized; the models see it negated). "
        f"Curve models: `deep-kernel-gp` (options {OPTIONS['deep-kernel-gp']}) and `power-law-ensemble` (defaults), "
        f"`CurveSurrogate(epochs={a['epochs']}, truncate=0.3)`. Exact GP: `fit_fidelity_gp` (SingleTaskMultiFidelityGP, "
        "`fit_gpytorch_mll`, gpytorch's default settings). Machine: "
        + result["machine"]["text"]
        + ".",
        "",
    ]
    if cal["repeats"]:
        lines += calibration_lines(result)
    if result["decision"]["rows"]:
        lines += decision_lines(result)
    if result["threads_check"]:
        lines += [
            "",
            f"Threads check (deep-kernel GP, one repeat, first fit of {result['threads_check'][0]['first_fit_epochs']} Adam "
            "steps, wall seconds; the load is the 1-minute load average, other jobs included):",
            "",
            "| torch threads | n | first fit s | warm fit s | choice s | load before |",
            "|---|---|---|---|---|---|",
        ]
        for r in result["threads_check"]:
            lines.append(
                f"| {r['threads']} | {r['n']} | {r['first_fit_s']:.2f} | {r['warm_fit_s']:.3f} | {r['choice_s']:.3f} | {r['load_before']} |"
            )
    lines += ["", "## Goals", ""] + [f"- {g}" for g in result["goals"]]
    if result["warnings"]:
        lines += ["", "## Warnings seen (count)", ""] + [
            f"- {k} ({v})" for k, v in result["warnings"].items()
        ]
    lines += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    path.write_text("\n".join(lines) + "\n")


def plot(result: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    if result["decision"]["rows"]:
        plot_decision_cost(result, out)
    if result["calibration"]["repeats"]:
        plot_calibration(result, out)


def plot_decision_cost(result: dict[str, Any], out: Path) -> None:
    import matplotlib
    import matplotlib.pyplot as plt

    rows = result["decision"]["rows"]
    fig, ax = plt.subplots(figsize=(10, 4.8))
    colors = plt.get_cmap("tab10")
    for j, label in enumerate(dict.fromkeys(r["model"] for r in rows)):
        mine = [r for r in rows if r["model"] == label and "warm_decision_s" in r]
        if not mine:
            continue
        ns = [r["n"] for r in mine]
        if label == EXACT:
            ax.plot(
                ns,
                [r["warm_decision_s"] for r in mine],
                "s-",
                color="black",
                label=f"{label}: fit + choice",
            )
            continue
        ax.plot(
            ns,
            [r["warm_decision_s"] for r in mine],
            "o-",
            color=colors(j),
            label=f"{label}: warm fit + choice",
        )
        ax.plot(
            ns,
            [r["first_fit_s"] for r in mine],
            "x--",
            color=colors(j),
            alpha=0.7,
            label=f"{label}: first fit",
        )
    sizes = result["args"]["sizes"]
    ax.axhline(GOAL_DECISION_S, color="gray", lw=0.8, ls=":", label="goal: 1 s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("observed (configuration, epoch, value) points")
    ax.set_ylabel("wall seconds (median)")
    ax.set_title(
        f"Decision cost, {result['machine']['cpus']}-core CPU, torch threads {result['machine']['torch_threads']}"
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(out / "decision_cost.png", dpi=110)
    plt.close(fig)


def plot_calibration(result: dict[str, Any], out: Path) -> None:
    import matplotlib.pyplot as plt

    rep = result["calibration"]["repeats"][0]
    names = (*MODELS, EXACT)
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4.4), squeeze=False)
    truth, cuts = np.array(rep["truth"]), np.array(rep["cuts"])
    for ax, name in zip(axes[0], names, strict=True):
        m = rep["models"][name]
        mean, sd = np.array(m["mean"]), np.array(m["sd"])
        inside = np.abs(truth - mean) <= Z90 * sd
        for mask, color, text in ((inside, "tab:blue", "inside"), (~inside, "tab:red", "outside")):
            ax.errorbar(
                truth[mask],
                mean[mask],
                yerr=Z90 * sd[mask],
                fmt="o",
                ms=3,
                color=color,
                alpha=0.7,
                lw=0.8,
                label=f"90% interval {text} ({int(mask.sum())})",
            )
        lo = min(truth.min(), (mean - Z90 * sd).min())
        hi = max(truth.max(), (mean + Z90 * sd).max())
        ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8)
        ax.set_title(f"{name}: coverage {m['coverage90']:.0%}", fontsize=10)
        ax.set_xlabel(f"true value at epoch {T}")
        ax.set_ylabel(f"predicted (prefix of 1..{int(cuts.max())} epochs)")
        ax.legend(fontsize=7)
    metric = result["data"].get("metric", "validation cross-entropy")
    fig.suptitle(
        f"{result['data'].get('problem', PROBLEM)}, repeat {rep['repeat']}: held-back final {metric}, mean +- 1.645 sd"
    )
    fig.tight_layout()
    fig.savefig(out / "calibration.png", dpi=110)
    plt.close(fig)


def goals(result: dict[str, Any]) -> list[str]:
    out = []
    lo, hi = GOAL_COVERAGE
    for name in (*MODELS, EXACT) if result["calibration"]["repeats"] else ():
        s = result["calibration"]["summary"][name]
        out.append(
            f"coverage {lo:.0%}-{hi:.0%}, {name}: {s['coverage90']['median']:.1%} (median over repeats) -> "
            + ("met" if s["coverage_goal_met"] else "MISSED")
        )
    for label, g in result["decision"]["growth"].items():
        if label == EXACT:
            continue
        out.append(
            f"warm decision <= {GOAL_DECISION_S:g} s at {max(result['args']['sizes'])} points, {label}: "
            f"{fmt(g['decision_at_largest_s'])} s -> {'met' if g['decision_goal_met'] else 'MISSED'}; growth exponent "
            f"{fmt(g['exponent'], 2)} -> {'at most linear' if g['at_most_linear'] else 'MORE than linear'}"
        )
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="1 repeat, n in 100 200, few epochs, a subset of the curves",
    )
    parser.add_argument("--repeats", type=int, default=5, help="calibration repeats")
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--timing-repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=300, help="Adam steps of a first fit")
    parser.add_argument(
        "--warm-epochs",
        type=int,
        nargs="+",
        default=[50, 20],
        help="warm_epochs of the deep-kernel GP (the first also for the ensemble and calibration)",
    )
    parser.add_argument(
        "--exact-points", type=int, default=500, help="the exact GP's points in the calibration"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count(),
        help="torch intra-op threads (default: the CPUs)",
    )
    parser.add_argument("--curves", type=Path, default=CURVES, help="the curve cache folder")
    parser.add_argument(
        "--lines",
        type=int,
        default=0,
        help="read the cache's first LINES lines (0: all; the cache is append-only, so a number of lines is a fixed data set)",
    )
    parser.add_argument(
        "--problem",
        default=PROBLEM,
        help="whose curve cache (an early-stopping problem; default mlp-cancer)",
    )
    parser.add_argument(
        "--curve-seed", type=int, default=CURVE_SEED, help="the seed of that cache (default 0)"
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["calibration", "decision", "threads"],
        choices=["calibration", "decision", "threads"],
    )
    parser.add_argument("--note", action="append", default=[], help="a line for results.md's notes")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: rebuild results.md and the plots from --out's results.json (adding --note lines)",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    out = output_folder(args.out, args.smoke, RESULTS)
    if args.report_only:
        result = json.loads((out / "results.json").read_text())
        result["notes"] += [n for n in args.note if n not in result["notes"]]
        result["goals"] = goals(result)
        (out / "results.json").write_text(json.dumps(result, indent=1))
        write_markdown(result, out / "results.md")
        plot(result, out)
        return result
    if args.smoke:
        args.repeats, args.sizes, args.timing_repeats, args.epochs = 1, [100, 200], 1, 30
        args.warm_epochs, args.exact_points = [5, 2], 120
    import torch

    threads_before = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    print(
        f"torch threads: {torch.get_num_threads()} (CPUs: {os.cpu_count()}); load average {load_average()}",
        flush=True,
    )
    started = time.perf_counter()
    try:
        data = load_curves(
            args.curves,
            allow_synthetic=args.smoke,
            lines=None if args.lines <= 0 else args.lines,
            problem=args.problem,
            curve_seed=args.curve_seed,
        )
        if args.smoke:
            data = subsample(data, 45)
        caught = Warnings()
        result: dict[str, Any] = {"smoke": args.smoke, "notes": list(args.note)}
        result["data"] = {
            "source": data["source"],
            "problem": args.problem,
            "metric": problem_metric(args.problem),
            "curves": len(data["curves"]),
            "points": sum(map(len, data["curves"])),
            "full_curves": sum(len(c) == T for c in data["curves"]),
            "cache_lines": data["lines"],
            "cache_lines_in_file": data.get("lines_in_file"),
            "sha256_of_lines_used": data.get("sha256_of_lines_used"),
            "diverged_points": sum(v >= 10.0 for c in data["curves"] for v in c),
        }
        repeats = []
        if "calibration" in args.parts:
            for r in range(args.repeats):
                rep = calibration_repeat(data, r, args, caught)
                repeats.append(rep)
                print(
                    f"calibration repeat {r}: "
                    + "; ".join(
                        f"{k} coverage {v['coverage90']:.0%} error {v['median_abs_error']:.4f} fit {v['fit_s']:.1f} s"
                        for k, v in rep["models"].items()
                    )
                    + f"; last value error {rep['last_value']['median_abs_error']:.4f}",
                    flush=True,
                )
        result["calibration"] = {
            "repeats": repeats,
            "summary": summarize_calibration(repeats) if repeats else {},
        }
        rows = decision_cost(data, args, caught) if "decision" in args.parts else []
        result["decision"] = {"rows": rows, "growth": growth(rows, args.sizes) if rows else {}}
        result["threads_check"] = (
            threads_check(data, args, caught) if "threads" in args.parts else []
        )
        result["warnings"] = dict(caught.counts.most_common())
        result["machine"] = {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_at_end": load_average(),
            "text": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads, "
            f"Python {sys.version.split()[0]}, 1-minute load average {load_average()} at the end",
        }
        result["args"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        result["seconds"] = time.perf_counter() - started
        result["goals"] = goals(result)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(result, indent=1))
        if repeats or rows:
            write_markdown(result, out / "results.md")
            plot(result, out)
        print(f"wrote {out} in {result['seconds']:.0f} s", flush=True)
        return result
    finally:
        torch.set_num_threads(threads_before)


if __name__ == "__main__":
    main()
