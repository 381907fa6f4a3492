"""Freeze-thaw BO with the zoo's learning-curve models (issue 43) on early stopping's real
learning curves, against early stopping's arms.

Arms (``ARMS``): at every decision :class:`dsbo.stopping.freeze_thaw.FreezeThaw` fits a curve
model on every epoch observed so far (warm-started) and either thaws a paused trial for
``--steps-per-thaw`` more epochs (default 9: the rungs 9, 18, 27) or starts one of 256 new
configurations, whichever has the largest multi-fidelity EI (DyHPO). The new configurations
are half a Sobol sample and half (``--local 0.5``) Gaussian steps around the 8 trials with the
lowest latest loss (SMAC's local search); both defaults were chosen on seed 0:

- ``ft-dkgp``: DyHPO's deep-kernel GP (:class:`dsbo_zoo.DeepKernelCurveGP`, 128 inducing inputs);
- ``ft-power-law``: the power-law ensemble (:class:`dsbo_zoo.PowerLawEnsemble`);
- ``ft-dkgp-final``, ``ft-power-law-final``: the same models scoring every candidate by the EI
  of its predicted value at epoch 27 (``criterion="final"``, freeze-thaw BO's choice).

Both start from the initial design early stopping's dsbo arms use (``n_init`` Sobol
configurations), each trained for ``--steps-per-thaw`` epochs. The model learns
``-log(validation loss)`` (every loss here is positive; the log tames diverged runs, which are
capped at 10).

Problems, budget and the final-best metric are ``experiments/early_stopping.py``'s: 540 epochs
(20 full trainings of 27), the best validation value of a trial trained to epoch 27. A paused
trial resumes where it stopped: the budget is charged only the epochs it adds (a Lightning
checkpoint would make that true in wall time too). Values come from the same curve cache of
real trainings; a configuration not in it is trained for all 27 epochs once (cached), and the
arm sees only the epochs it asked for.

The comparison reads early stopping's runs of the same problem and seed from its
``runs.jsonl`` (``--baselines``): the arms it holds for those seeds are the rule-based ones,
BOHB and Optuna's TPE with its pruners. Results: ``runs.jsonl`` (appended per run),
``results.json``, ``results.md``, ``best_vs_epochs.png`` (``freeze_thaw_report.py``). The report
labels each arm's route: the ``-campaign`` arms are the shipped route (what users get), the
others a simulated policy.

    python experiments/freeze_thaw.py --problems mlp-cancer --seeds 0-2
    python experiments/freeze_thaw.py --smoke          # < 1 min: 40 epochs, small data, seed 0, a temp folder
    python experiments/freeze_thaw.py --report-only    # the report from runs.jsonl, running nothing
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from early_stopping import RESULTS as EARLY_STOPPING
from early_stopping import n_init_for, parse_seeds
from early_stopping_problems import MAX_EPOCHS, CurveCache, active_values, clean, make_problems
from results_io import read_runs
from smoke_out import add_out_argument, output_folder

RESULTS = Path(__file__).resolve().parent / "results" / "freeze_thaw"
BUDGET = 540
CANDIDATES = 256
#: arm -> (curve model, its options, criterion)
ARMS: dict[str, tuple[str, dict[str, Any], str]] = {
    "ft-dkgp": ("deep-kernel-gp", {"inducing": 128}, "mf-ei"),
    "ft-power-law": ("power-law-ensemble", {}, "mf-ei"),
    "ft-dkgp-final": ("deep-kernel-gp", {"inducing": 128}, "final"),
    "ft-power-law-final": ("power-law-ensemble", {}, "final"),
    # the same choice made by a dsbo campaign (early_stopping="freeze-thaw"): paused trials in the
    # store, thaws resuming each curve where it stopped (run_campaign)
    "ft-dkgp-campaign": ("deep-kernel-gp", {"inducing": 128}, "mf-ei"),
    "ft-power-law-campaign": ("power-law-ensemble", {}, "mf-ei"),
}
#: early stopping's arms shown beside ours (those its runs.jsonl holds for the seed).
BASELINES = (
    "bo+hyperband",
    "bo+asha",
    "random+asha",
    "bohb",
    "optuna-tpe+hyperband",
    "optuna-tpe+median",
    "bo-full",
)


class Curves:
    """A configuration's full 27-epoch curve: from the cache, else trained once (real training)."""

    def __init__(self, problem: Any, seed: int, cache: CurveCache, small: bool):
        self.problem, self.seed, self.cache, self.small = problem, seed, cache, small
        self.train_seconds, self.trained = 0.0, 0

    def full(self, params: dict[str, Any]) -> list[float]:
        import torch

        values = active_values(self.problem.space, params)
        key = json.dumps(values, sort_keys=True)
        curve = self.cache.get(self.problem.name, self.seed, key)
        if len(curve) >= MAX_EPOCHS:
            return curve[:MAX_EPOCHS]
        trial = _Collect()
        start = time.perf_counter()
        with (
            torch.random.fork_rng()
        ):  # a training seeds torch: the run's own draws must not depend on the cache
            self.problem.train(values, self.seed, trial, self.small)
        self.train_seconds += time.perf_counter() - start
        self.trained += 1
        self.cache.put(self.problem.name, self.seed, key, trial.values)
        return trial.values


class _Collect:
    """The trial a training reports to when its whole curve is wanted: never stops it."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def report(self, step: int, value: float) -> None:
        self.values.append(clean(float(value)))

    def should_stop(self) -> bool:
        return False


def _candidates(
    sobol: Any, configs: list[list[float]], seen: list[list[float]], local: float
) -> list[list[float]]:
    """:data:`CANDIDATES` new configurations (unit cube): a share ``local`` are Gaussian steps
    (sd 0.1, clipped) from the 8 configurations with the lowest latest loss (SMAC's local
    search around incumbents), the rest a Sobol sample."""
    import torch

    near = int(round(local * CANDIDATES))
    points = sobol.draw(CANDIDATES - near).tolist()
    if near and configs:
        order = sorted(range(len(seen)), key=lambda i: seen[i][-1])[:8]
        centers = torch.tensor([configs[i] for i in order], dtype=torch.float64)
        picks = centers[torch.randint(len(order), (near,))]
        points += (picks + 0.1 * torch.randn_like(picks)).clamp(0.0, 1.0).tolist()
    return points


def run(
    problem: Any,
    arm: str,
    seed: int,
    budget: int,
    steps_per_thaw: int,
    smoke: bool,
    cache: CurveCache,
    local: float = 0.0,
) -> dict[str, Any]:
    """One (problem, arm, seed) freeze-thaw run."""
    import torch
    from torch.quasirandom import SobolEngine

    from dsbo.space import SearchSpace
    from dsbo.stopping.freeze_thaw import FreezeThaw
    from dsbo.surrogates.curve_model import CurveSurrogate

    torch.manual_seed(seed)
    space = SearchSpace(problem.space)
    name, options, criterion = ARMS[arm]
    epochs, warm = (30, 5) if smoke else (300, 20)
    policy = FreezeThaw(
        CurveSurrogate(name, space.dim, MAX_EPOCHS, options, epochs=epochs, warm_epochs=warm),
        steps_per_thaw=steps_per_thaw,
        criterion=criterion,
    )
    sobol = SobolEngine(space.dim, scramble=True, seed=seed)
    source = Curves(problem, seed, cache, smoke)
    configs: list[list[float]] = []
    params: list[dict[str, Any]] = []
    seen: list[list[float]] = []  # each trial's validation losses so far
    full: list[list[float]] = []
    decisions: list[dict[str, Any]] = []
    spent, trace, best = 0, [], math.inf
    n_init = n_init_for(problem, BUDGET // MAX_EPOCHS) if not smoke else 2
    start = time.perf_counter()
    # the model space's box (log-scaled floats, integers, one-hot columns): the curve model
    # reads unit-cube coordinates, the space decodes model points
    low = torch.tensor(
        [
            space.parameters[n].bounds()[k][0]
            for n in space.names
            for k in range(space.slices[n].stop - space.slices[n].start)
        ],
        dtype=torch.float64,
    )
    high = torch.tensor(
        [
            space.parameters[n].bounds()[k][1]
            for n in space.names
            for k in range(space.slices[n].stop - space.slices[n].start)
        ],
        dtype=torch.float64,
    )
    width = (high - low).clamp_min(1e-12)

    def unit(points: list[list[float]]) -> list[list[float]]:
        """Unit-cube points snapped to the space (a valid configuration each), still in the unit cube."""
        snapped = [
            space.snap((low + torch.tensor(u, dtype=torch.float64) * width).tolist())
            for u in points
        ]
        return ((torch.tensor(snapped, dtype=torch.float64) - low) / width).tolist()

    def decode(z: list[float]) -> dict[str, Any]:
        return space.decode((low + torch.tensor(z, dtype=torch.float64) * width).tolist())

    while spent < budget:
        if len(configs) < n_init:
            index, until, info = None, steps_per_thaw, {"action": "init"}
            config = unit(sobol.draw(1).tolist())[0]
        else:
            candidates = torch.tensor(
                unit(_candidates(sobol, configs, seen, local)), dtype=torch.float64
            )
            curves = [[-math.log(v) for v in s] for s in seen]
            paused = [i for i, s in enumerate(seen) if len(s) < MAX_EPOCHS]
            choice = policy.choose(
                torch.tensor(configs, dtype=torch.float64),
                curves,
                paused,
                candidates,
                budget_left=budget - spent,
            )
            index, until, config = choice.index, choice.until_step, choice.config.tolist()
            info = {
                "action": choice.action,
                "fit": choice.fit_seconds,
                "choice": choice.choice_seconds,
                "observed": sum(map(len, seen)),
            }
        if index is None:
            configs.append(config)
            params.append(decode(config))
            full.append(source.full(params[-1]))
            seen.append([])
            index = len(seen) - 1
        until = min(until, len(seen[index]) + budget - spent)
        seen[index] = full[index][:until]
        spent = sum(map(len, seen))
        if len(seen[index]) == MAX_EPOCHS and seen[index][-1] < best:
            best = seen[index][-1]
            trace.append([spent, best])
        decisions.append({**info, "trial": index, "until": until, "spent": spent})
    fits = [d["fit"] + d["choice"] for d in decisions if "fit" in d]
    finished = [i for i, s in enumerate(seen) if len(s) == MAX_EPOCHS]
    best_index = min(finished, key=lambda i: seen[i][-1]) if finished else None
    return {
        "problem": problem.name,
        "arm": arm,
        "seed": seed,
        "budget": budget,
        "smoke": smoke,
        "steps_per_thaw": steps_per_thaw,
        "local": local,
        "final_best": best if finished else None,
        "trace": trace,
        "best_params": None if best_index is None else params[best_index],
        "num_trials": len(seen),
        "num_full": len(finished),
        "epochs_spent": spent,
        "epochs_per_trial": [len(s) for s in seen],
        "continues": sum(d["action"] == "continue" for d in decisions),
        "starts": sum(d["action"] in ("start", "init") for d in decisions),
        "decision_seconds": fits,
        "decision_points": [d["observed"] for d in decisions if "observed" in d],
        "seconds": time.perf_counter() - start,
        "train_seconds": source.train_seconds,
        "trained": source.trained,
    }


def run_campaign(
    problem: Any,
    arm: str,
    seed: int,
    budget: int,
    steps_per_thaw: int,
    smoke: bool,
    cache: CurveCache,
    local: float = 0.5,
) -> dict[str, Any]:
    """One run of ``arm`` through ``dsbo.minimize(early_stopping="freeze-thaw")``: the training
    function reads the configuration's real curve (the same cache) and reports ``log(loss)``
    from the step after ``trial.last_step`` (a thawed trial resumes where it paused), so the
    campaign's curve model learns ``-log(loss)`` as :func:`run`'s does."""
    import dsbo

    name, options, criterion = ARMS[arm]
    source = Curves(problem, seed, cache, smoke)
    epochs, warm = (30, 5) if smoke else (300, 20)

    def train(params: dict[str, Any], trial: Any) -> float:
        curve = source.full(dict(params))
        value = math.inf
        for epoch in range((trial.last_step or 0) + 1, MAX_EPOCHS + 1):
            value = math.log(curve[epoch - 1])
            trial.report(epoch, value)
            if trial.should_stop():
                break
        return value

    start = time.perf_counter()
    spec = {
        "name": "freeze-thaw",
        "curve_model": name,
        "options": options,
        "criterion": criterion,
        "steps_per_thaw": steps_per_thaw,
        "local": local,
        "candidates": CANDIDATES,
        "epochs": epochs,
        "warm_epochs": warm,
    }
    n_init = n_init_for(problem, BUDGET // MAX_EPOCHS) if not smoke else 2
    result = dsbo.minimize(
        train,
        problem.space,
        early_stopping=spec,
        max_steps=MAX_EPOCHS,
        budget_steps=budget,
        n_init=n_init,
        seed=seed,
        surrogate="gp",
        dry_run=False,
        outcome_warping=None,
    )
    store = result.campaign.store
    curves = store.curves()
    finished = [t for t in store.trials() if curves.get(t.id) and curves[t.id][-1][0] == MAX_EPOCHS]
    losses = [math.exp(-curves[t.id][-1][1]) for t in finished]
    best = min(range(len(finished)), key=losses.__getitem__) if finished else None
    trials = store.trials()
    return {
        "problem": problem.name,
        "arm": arm,
        "seed": seed,
        "budget": budget,
        "smoke": smoke,
        "steps_per_thaw": steps_per_thaw,
        "local": local,
        "final_best": None if best is None else losses[best],
        "trace": [],
        "best_params": None if best is None else result.campaign.problem.params(finished[best].x),
        "num_trials": len(trials),
        "num_full": len(finished),
        "epochs_spent": store.cost_used(),
        "epochs_per_trial": [curves[t.id][-1][0] if curves.get(t.id) else 0 for t in trials],
        "continues": sum(int(t.metadata.get("thaws", 0)) for t in trials),
        "starts": len(trials),
        "statuses": {s: store.count(s) for s in ("completed", "paused", "stopped", "failed")},
        "seconds": time.perf_counter() - start,
        "train_seconds": source.train_seconds,
        "trained": source.trained,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", default=["mlp-cancer"])
    parser.add_argument(
        "--arms", nargs="+", default=["ft-dkgp", "ft-power-law"], choices=list(ARMS)
    )
    parser.add_argument("--seeds", nargs="+", default=["0-2"])
    parser.add_argument("--steps-per-thaw", type=int, default=9)
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument(
        "--local", type=float, default=0.5, help="share of candidates drawn near the best trials"
    )
    parser.add_argument("--baselines", type=Path, default=EARLY_STOPPING / "runs.jsonl")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: rebuild results.md/json and the plot from --out's runs.jsonl",
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    # the report module reads this one's arms: imported here, not at the top
    from freeze_thaw_report import report

    out = output_folder(args.out, args.smoke, RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    if args.report_only:
        return report(read_runs(log), read_runs(args.baselines), out)
    budget = 40 if args.smoke else args.budget
    seeds = ["0"] if args.smoke else args.seeds
    steps_per_thaw = 9 if args.smoke else args.steps_per_thaw
    cache = CurveCache(out / "curves" if args.smoke else EARLY_STOPPING / "curves")
    problems = make_problems()
    done = {(r["problem"], r["arm"], r["seed"]) for r in read_runs(log)}
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    for name in args.problems:
        problems[name].preload(args.smoke)
        for seed in parse_seeds(seeds):
            for arm in args.arms:
                if (name, arm, seed) in done:
                    continue
                how = run_campaign if arm.endswith("-campaign") else run
                result = how(
                    problems[name], arm, seed, budget, steps_per_thaw, args.smoke, cache, args.local
                )
                with log.open("a") as handle:
                    handle.write(json.dumps(result) + "\n")
                print(
                    f"{name} {arm} seed {seed}: final best {result['final_best']}, {result['num_full']} full of "
                    f"{result['num_trials']} trials, {result['seconds']:.0f} s",
                    flush=True,
                )
    return report(read_runs(log), read_runs(args.baselines), out)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
