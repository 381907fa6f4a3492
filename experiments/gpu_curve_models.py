"""The decision cost of ``experiments/curve_models.py`` on a GPU: the curve models' first fit,
warm fit (after ceil(1%) more points) and the posterior of 512 candidate rows, and the exact
fidelity GP's fit and posterior, at n in 500, 2000, 8000 synthetic power-law curve points.

Curves: ``c(x) + b(x) t^-a(x)`` + noise over 27 epochs for random configurations in
``[0, 1]^6``, observed up to a random epoch (what a freeze-thaw pool holds), negated (larger
is better). Each time is the median of ``--repeats`` (3); CUDA is synchronized around every
timed call.

    python experiments/gpu_curve_models.py                      # --device auto: needs a GPU
    python experiments/gpu_curve_models.py --allow-cpu --sizes 200 500   # no GPU: CPU, temporary folder

Writes ``experiments/results/curve_models/gpu.json`` only when it ran on a CUDA device; on the
CPU (``--allow-cpu``) it writes to a fresh temporary folder (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results" / "curve_models"
T, D, CANDIDATES = 27, 6, 512
OPTIONS = {"deep-kernel-gp": {"inducing": 128}, "power-law-ensemble": {}}


def curves_of(n: int, seed: int) -> tuple[torch.Tensor, list[list[float]]]:
    """Random prefixes of synthetic power-law loss curves, ``n`` points in all (negated)."""
    g = torch.Generator().manual_seed(seed)
    configs, curves, total = [], [], 0
    t = torch.arange(1, T + 1, dtype=torch.float64)
    while total < n:
        x = torch.rand(D, generator=g, dtype=torch.float64)
        c, b, a = 0.1 + 0.3 * x[0] + 0.1 * x[3], 0.5 + x[1], 0.2 + x[2] + 0.2 * x[4] * x[5]
        loss = c + b * t ** (-a) + 0.01 * torch.randn(T, generator=g, dtype=torch.float64)
        k = min(int(torch.randint(1, T + 1, (1,), generator=g)), n - total)
        configs.append(x)
        curves.append((-loss[:k]).tolist())
        total += k
    return torch.stack(configs), curves


def grown(
    configs: torch.Tensor, curves: list[list[float]], extra: int, seed: int
) -> list[list[float]]:
    """``extra`` paused curves continued one epoch (the synthetic curve's next value)."""
    g = torch.Generator().manual_seed(seed + 1)
    out = [list(c) for c in curves]
    paused = [i for i, c in enumerate(curves) if len(c) < T]
    for i in [paused[j] for j in torch.randperm(len(paused), generator=g)[:extra].tolist()]:
        out[i].append(out[i][-1] + 0.001)  # near the curve's last value: what is timed is the fit
    return out


def candidate_rows(configs: torch.Tensor, curves: list[list[float]], seed: int) -> torch.Tensor:
    paused = [i for i, c in enumerate(curves) if len(c) < T][: CANDIDATES // 2]
    new = (
        torch.quasirandom.SobolEngine(D, scramble=True, seed=seed)
        .draw(CANDIDATES - len(paused))
        .double()
    )
    steps = torch.tensor([len(curves[i]) + 1 for i in paused] + [1] * len(new), dtype=torch.float64)
    return torch.cat([torch.cat([configs[paused], new]), steps.unsqueeze(-1)], -1).unsqueeze(1)


def timed(device: torch.device, fn, *args, **kwargs):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, time.perf_counter() - start


def run_curve_model(
    name: str, n: int, rep: int, device: torch.device, args: argparse.Namespace
) -> dict[str, float]:
    from dsbo.surrogates.curve_model import CurveSurrogate

    configs, curves = curves_of(n, rep)
    later = grown(configs, curves, math.ceil(0.01 * n), rep)
    torch.manual_seed(rep)
    surrogate = CurveSurrogate(
        name,
        D,
        T,
        OPTIONS[name],
        epochs=args.epochs,
        warm_epochs=args.warm_epochs,
        device=str(device),
    )
    _, first = timed(device, surrogate.fit, configs, curves)
    model, warm = timed(device, surrogate.fit, configs, later)
    _, choice = timed(device, model.posterior, candidate_rows(configs, later, rep))
    return {"first_fit_s": first, "warm_fit_s": warm, "choice_s": choice}


def run_exact(n: int, rep: int, device: torch.device) -> dict[str, float]:
    from dsbo.surrogates.fidelity import fit_fidelity_gp

    configs, curves = curves_of(n, rep)
    index = torch.tensor([i for i, c in enumerate(curves) for _ in c])
    steps = torch.tensor([s for c in curves for s in range(1, len(c) + 1)], dtype=torch.float64)
    Y = torch.tensor([[v] for c in curves for v in c], dtype=torch.float64)
    bounds = torch.stack([torch.zeros(D), torch.ones(D)]).double()
    torch.manual_seed(rep)
    to = dict(device=device)
    gp, fit = timed(
        device,
        fit_fidelity_gp,
        configs[index].to(**to),
        steps.to(**to),
        Y.to(**to),
        bounds.to(**to),
        T,
    )
    rows = candidate_rows(configs, curves, rep).to(**to)
    rows = torch.cat([rows[..., :D], rows[..., D:] / T], -1)
    _, choice = timed(device, gp.model.posterior, rows)
    return {"first_fit_s": fit, "choice_s": choice}


def main(argv: list[str] | None = None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA if present), cuda, cuda:N or cpu"
    )
    parser.add_argument(
        "--allow-cpu",
        action="store_true",
        help="without a GPU, run on the CPU into a temporary folder",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--warm-epochs", type=int, default=50)
    parser.add_argument(
        "--exact-max", type=int, default=8000, help="largest n the exact GP is fitted at"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"default {RESULTS} (CUDA) or a temporary folder (CPU)",
    )
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    wanted = args.device if args.device != "auto" else ("cuda" if cuda else "cpu")
    if wanted.startswith("cuda") and not cuda:
        print(f"--device {args.device}: no CUDA device here", flush=True)
        wanted = "cpu"
    device = torch.device(wanted)
    if device.type != "cuda" and not args.allow_cpu:
        print(
            "gpu_curve_models.py needs a GPU (CUDA); --allow-cpu runs it on the CPU into a temporary folder",
            flush=True,
        )
        return None
    out = args.out or (
        RESULTS
        if device.type == "cuda"
        else Path(tempfile.mkdtemp(prefix="dsbo-gpu-curve-models-cpu-"))
    )
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"CPU ({platform.machine()}, {torch.get_num_threads()} threads)"
    )
    print(f"device: {device} = {name}", flush=True)
    rows = []
    for n in args.sizes:
        for model in ("deep-kernel-gp", "power-law-ensemble", "exact fidelity GP"):
            if model == "exact fidelity GP" and n > args.exact_max:
                continue
            runs = [
                run_exact(n, rep, device)
                if model == "exact fidelity GP"
                else run_curve_model(model, n, rep, device, args)
                for rep in range(args.repeats)
            ]
            row = {
                "model": model,
                "n": n,
                **{k: statistics.median(r[k] for r in runs) for k in runs[0]},
                "all": runs,
            }
            row["decision_s"] = row.get("warm_fit_s", row["first_fit_s"]) + row["choice_s"]
            rows.append(row)
            print(
                f"{model} n={n}: "
                + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if k.endswith("_s")),
                flush=True,
            )
    result = {
        "device": str(device),
        "device_name": name,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "rows": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("gpu.json" if device.type == "cuda" else "cpu.json")
    path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}", flush=True)
    return result


if __name__ == "__main__":
    main()
