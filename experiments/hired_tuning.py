"""HiReD tuned by dsbo's own BO (issue 18): which of table 6.5's hyperparameters are worth changing?

Runs the two shipped campaigns on Tourism-small, each trial a ``python -m dsbo.train fit`` run
(problem ``train-run``), MAP-SAAS, BONSAI pruning toward table 6.5's Tourism defaults:

- ``single``: ``configs/bo/hired-tourismsmall.yaml``, objective the best validation mean WAPE;
- ``levels``: ``configs/bo/hired-tourismsmall-levels.yaml``, the four per-level validation WAPEs
  with qLogNEHVI (hypervolume against WAPE 1 per level).

Then it checks the answer out of sample: the default and the tuned configuration of ``single``
are retrained with 3 seeds and scored on the test window (``experiments/hired.py``'s
training and scoring), since the validation WAPE the campaign maximized is one noisy window.

    python experiments/hired_tuning.py --smoke     # synthetic hierarchy, 3 trials per campaign
    python experiments/hired_tuning.py             # what was run (budget 30 each)

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from campaign_runs import mean_and_se, run_resumable
from hired import fit_and_test, train_settings
from smoke_out import add_out_argument, output_folder

from dsbo.cli.optimize import main as optimize
from dsbo.problems import get_problem

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "hired_tuning"
CAMPAIGNS = {
    "single": "configs/bo/hired-tourismsmall.yaml",
    "levels": "configs/bo/hired-tourismsmall-levels.yaml",
}
#: Smoke runs replace the data by a small synthetic hierarchy and train for 2 epochs.
SMOKE_ARGS = [
    "--data.init_args.name=null",
    "--data.init_args.synthetic={branching: [2, 3], num_steps: 60}",
    "--data.init_args.val_windows=1",
    "--data.init_args.test_windows=1",
    "--trainer.max_epochs=2",
]


def campaign_config(part: str, out: Path, smoke: bool) -> Path:
    """The shipped campaign config with its run directory under ``out`` (and smoke settings)."""
    cfg = yaml.safe_load((ROOT / CAMPAIGNS[part]).read_text())
    options = cfg["problem"]["options"]
    options["runs_dir"] = str(out / part / "train")
    if smoke:
        options["args"] = [*options["args"], *SMOKE_ARGS]
        options["metrics"] = options["metrics"][:3]  # the synthetic hierarchy has 3 levels
        cfg.update(budget=3, n_init=1)
        cfg["acquisition"].update(num_restarts=2, raw_samples=32)
    cfg["run_dir"] = str(out / part / "run")
    cfg.setdefault("wandb", {})["mode"] = "disabled"
    path = out / part / "campaign.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _plain(value: Any) -> Any:
    """A Python value for a pandas cell (``numpy.int64(6)`` -> ``6``)."""
    return value.item() if hasattr(value, "item") else value


def run_campaign(part: str, out: Path, smoke: bool) -> dict[str, Any]:
    """Run (or resume) one campaign; its summary, trials and the best point's hyperparameters."""
    path = campaign_config(part, out, smoke)
    cfg = yaml.safe_load(path.read_text())
    cwd = os.getcwd()
    os.chdir(ROOT)  # the configs name files relative to the repository
    try:
        code = optimize(["--config", str(path)])
        problem = get_problem("train-run", **cfg["problem"]["options"])
    finally:
        os.chdir(cwd)
    if code != 0:
        raise RuntimeError(f"campaign {part} exited with {code}")
    run_dir = Path(cfg["run_dir"])
    summary = json.loads((run_dir / "summary.json").read_text())
    history = pd.read_csv(run_dir / "history.csv")
    history.to_csv(
        out / f"{part}_history.csv", index=False
    )  # beside results.md; the run folders stay local
    names = (
        problem.space.names
    )  # the history holds each hyperparameter's value as the run received it
    done = history[history["status"] == "completed"]
    objectives = list(problem.objective_names)
    rows = [
        {
            "trial": int(r["trial"]),
            "generator": r["generator"],
            "num_changed": int(r["num_changed"]),
            "params": {n: _plain(r[n]) for n in names},
            "values": [float(r[o]) for o in objectives],
        }
        for _, r in done.iterrows()
    ]
    default = next((r for r in rows if r["generator"] == "default"), None)
    return {
        "part": part,
        "summary": summary,
        "objectives": objectives,
        "trials": rows,
        "default": default,
        "best_params": problem.params(summary["best_x"]) if len(objectives) == 1 else None,
    }


def confirm_jobs(best: dict[str, Any], seeds: int, smoke: bool) -> list[dict[str, Any]]:
    """Retrain the default and the tuned configuration (single objective) on ``seeds`` seeds."""
    model, data = {}, {}
    for name, value in best.items():
        section, _, key = name.partition(".init_args.")
        if section == "model":
            model[key] = value
        elif section == "data":
            data[key] = value
    if "num_representatives" in model:
        data["num_representatives"] = model["num_representatives"]
    base = {
        "part": "confirm",
        "dataset": "tourismsmall",
        "method": "hired",
        "alpha": 1.0,
        "threads": 1,
        "smoke": smoke,
    }
    jobs = []
    for s in range(seeds):
        jobs.append({**base, "config": "default", "seed": s})
        jobs.append(
            {
                **base,
                "config": "tuned",
                "seed": s,
                "model_overrides": model,
                "data_overrides": data,
                "alpha": data.get("alpha", 1.0),
            }
        )
    return jobs


def confirm(job: dict[str, Any]) -> dict[str, Any]:
    data = dict(job.get("data_overrides", {}))
    data.pop("alpha", None)  # passed as the job's alpha
    job = {**job, "data_overrides": data}
    epochs = 2 if job["smoke"] else train_settings("tourismsmall")[2]
    return fit_and_test(job, None, epochs)


def fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


def write_markdown(result: dict[str, Any], path: Path) -> None:
    out = [
        "# HiReD tuned by dsbo's BO (Tourism-small)",
        "",
        "Written by `python experiments/hired_tuning.py`. Each trial is one `python -m dsbo.train fit` run "
        "(problem `train-run`); MAP-SAAS, BONSAI (rho 0.2) toward the campaign's default point (table 6.5's Tourism column, lambda_e 0.03 on dsbo's scale); the default point "
        "first, then Sobol points, then BO. One campaign seed each.",
        "",
    ]
    if result["smoke"]:
        out += ["**Smoke run** (synthetic hierarchy, 2 epochs per trial): not a result.", ""]
    single = result.get("single")
    if single:
        s = single["summary"]
        d = single["default"]
        out += [
            "## Single objective: best validation mean WAPE",
            "",
            f"- trials: {s['completed']} completed, {s['failed']} failed",
            f"- default point: validation WAPE {fmt(-d['values'][0]) if d else '-'}",
            f"- best: validation WAPE {fmt(-s['best_value'])}, changing {s['num_changed_best']} of {s['dim']} "
            f"hyperparameters: "
            + (
                ", ".join(
                    f"{k.split('.')[-1]} = {v:.4g}"
                    if isinstance(v, float)
                    else f"{k.split('.')[-1]} = {v}"
                    for k, v in single["best_params"].items()
                    if k in single["changed_names"]
                )
                or "none"
            ),
            "- best validation WAPE among trials changing at most k hyperparameters: "
            + ", ".join(
                f"k={v['changed']}: {fmt(-v['best_value'])}" for v in s.get("value_vs_changes", [])
            ),
            "",
        ]
    levels = result.get("levels")
    if levels:
        s = levels["summary"]
        out += [
            "## Four objectives: per-level validation WAPE (qLogNEHVI)",
            "",
            f"- trials: {s['completed']} completed, {s['failed']} failed; dominated hypervolume {fmt(s['best_value'])} "
            f"(default alone: {fmt(levels['default_hypervolume'])})",
            "",
            "| trial | generator | changed | "
            + " | ".join(o.replace("neg_val_wape_", "WAPE ") for o in levels["objectives"])
            + " |",
            "|---|---|---|" + "---|" * len(levels["objectives"]),
        ]
        for r in levels["front"]:
            out.append(
                f"| {r['trial']} | {r['generator']} | {r['num_changed']} | "
                + " | ".join(fmt(-v) for v in r["values"])
                + " |"
            )
        out += ["", "(the Pareto-optimal trials)", ""]
    if result.get("confirm"):
        out += [
            "## Out of sample: test WAPE of the default and the tuned configuration",
            "",
            "| configuration | seeds | test mean WAPE | test top-level WAPE | test mean SMAPE |",
            "|---|---|---|---|---|",
        ]
        for name, row in result["confirm"].items():
            out.append(
                f"| {name} | {row['seeds']} | {row['wape'][0]:.4f} +- {row['wape'][1]:.4f} | "
                f"{row['wape_level0'][0]:.4f} +- {row['wape_level0'][1]:.4f} | {row['smape'][0]:.4f} +- {row['smape'][1]:.4f} |"
            )
        out.append("")
    out += (
        ["![trace single](single_trace.png)", ""]
        if (path.parent / "single_trace.png").exists()
        else []
    )
    path.write_text("\n".join(out))


def pareto(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def dominated(a: dict[str, Any]) -> bool:
        return any(
            all(x >= y for x, y in zip(b["values"], a["values"], strict=True))
            and b["values"] != a["values"]
            for b in rows
        )

    return [r for r in rows if not dominated(r)]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--parts",
        nargs="*",
        default=["single", "levels", "confirm"],
        choices=["single", "levels", "confirm"],
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="seeds of the out-of-sample check (default 3)"
    )
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"smoke": args.smoke}
    if "single" in args.parts or "confirm" in args.parts:
        single = run_campaign("single", out, args.smoke)
        single["changed_names"] = [
            c["parameter"] for c in single["summary"].get("changes_best", [])
        ]
        result["single"] = single
        trace = (
            Path(yaml.safe_load((out / "single" / "campaign.yaml").read_text())["run_dir"])
            / "trace.png"
        )
        if trace.exists():
            (out / "single_trace.png").write_bytes(trace.read_bytes())
    if "levels" in args.parts:
        levels = run_campaign("levels", out, args.smoke)
        levels["front"] = pareto(levels["trials"])
        d = levels["default"]
        ref = [-1.0] * len(levels["objectives"])
        levels["default_hypervolume"] = (
            math.prod(v - r for v, r in zip(d["values"], ref, strict=True)) if d else math.nan
        )
        result["levels"] = levels
    if "confirm" in args.parts:
        seeds = args.seeds or (1 if args.smoke else 3)
        jobs = confirm_jobs(result["single"]["best_params"], seeds, args.smoke)
        runs = run_resumable(confirm, jobs, out, 1, key_fields=("part", "config", "seed", "smoke"))
        result["confirm"] = {}
        for name in ("default", "tuned"):
            mine = [r for r in runs if r["config"] == name]
            result["confirm"][name] = {
                "seeds": len(mine),
                **{
                    k: mean_and_se([r["test"][k] for r in mine])
                    for k in ("wape", "wape_level0", "smape")
                },
            }
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str))
    write_markdown(result, out / "results.md")
    return result


if __name__ == "__main__":
    main()
