"""Cost of a BO step with neural surrogates vs the exact GP, as ratios measured in one run.

For ``N`` observations of Hartmann6 (``d = 6``, scrambled Sobol points) this times one BO step
(surrogate fit + acquisition optimization) of

- **SimpleSMB**: one network (``simple-smb``, ``num_samples: 1``) + the ``greedy`` policy;
- **SMB ensemble**: ten networks trained together in one vectorized module
  (``simple-smb``, ``num_samples: 10``) + qLogNEI over the members;
- **exact GP**: ``gp`` (Matern-5/2 ARD, marginal likelihood fitted by L-BFGS-B) + LogEI,

and reports three ratios against the issue's targets:

1. vectorized 10-member fit / 1-member fit (target <= 3x), plus a Python loop of ten
   1-member fits for contrast;
2. exact-GP step / neural step at the largest ``N`` (target >= 5x);
3. Lightning's own overhead in a fit at ``N = 100``, at the bench width and the thesis width
   5000: ``Trainer.fit`` against the same
   module trained by a plain PyTorch loop (same steps, same loss), (target <= 25%).

It also times the SimpleSMB step with 1 and 2 intra-op threads (the default is chosen from
this measurement). Writes ``experiments/results/bench_surrogates/{results.json,
results.md, bench_surrogates.png}``.

    python experiments/bench_surrogates.py --smoke     # seconds
    python experiments/bench_surrogates.py             # N in {100, 500, 1000, 2000, 4000}
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from botorch.utils.sampling import draw_sobol_samples  # noqa: E402

from dsbo.acquisition import History, OptimizerSettings, make_policy  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402
from dsbo.surrogates import fit_surrogate  # noqa: E402
from dsbo.surrogates.neural import train_module  # noqa: E402
from dsbo_zoo.smb import SimpleSMB  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bench_surrogates"


def data(n: int, seed: int = 0) -> tuple[Any, torch.Tensor, torch.Tensor]:
    problem = get_problem("hartmann6")
    X = draw_sobol_samples(problem.bounds, n=n, q=1, seed=seed).squeeze(1)
    return problem, X, problem.evaluate(X)


def bo_step(problem, X, Y, surrogate: dict[str, Any], acquisition: str, opt: OptimizerSettings) -> dict[str, float]:
    """Seconds to fit ``surrogate`` and propose one point with ``acquisition``."""
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
    t1 = time.perf_counter()
    make_policy(acquisition, {}, opt).propose(model, History(X=X, Y=Y, seed=0, t=X.shape[0]), problem, 1)
    t2 = time.perf_counter()
    return {"fit": t1 - t0, "acquisition": t2 - t1, "total": t2 - t0}


def fit_time(n: int, width: int, members: int, steps: int, dtype: torch.dtype) -> float:
    """Seconds of one Lightning fit of a SimpleSMB with ``members`` networks on ``n`` points."""
    x = torch.rand(n, 6, dtype=dtype)
    y = torch.randn(n, dtype=dtype)
    module = SimpleSMB(in_dim=6, num_samples=members, width=width).to(dtype)
    t0 = time.perf_counter()
    train_module(module, x, y, max_epochs=steps)
    return time.perf_counter() - t0


def plain_loop_time(n: int, width: int, steps: int, dtype: torch.dtype) -> float:
    """The same fit as :func:`fit_time` (one member) by a hand-written PyTorch loop."""
    x = torch.rand(n, 6, dtype=dtype)
    y = torch.randn(n, dtype=dtype)
    module = SimpleSMB(in_dim=6, num_samples=1, width=width).to(dtype)
    t0 = time.perf_counter()
    module.reinitialize()
    module.eps = torch.zeros(1, n, dtype=dtype)
    module._num_train = n
    optimizer = module.configure_optimizers()
    index = torch.arange(n)
    for _ in range(steps):
        optimizer.zero_grad()
        module.loss(x, y, index).backward()
        optimizer.step()
    return time.perf_counter() - t0


def median_of(fn, repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--width", type=int, default=None, help="hidden width (default 1000)")
    parser.add_argument("--steps", type=int, default=None, help="full-batch Adam steps per fit (default 500)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of the main measurements")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    smoke = args.smoke
    sizes = args.sizes or ([20, 40] if smoke else [100, 500, 1000, 2000, 4000])
    width = args.width or (32 if smoke else 1000)
    steps = args.steps or (10 if smoke else 500)
    repeats = 1 if smoke else 3
    opt = (OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32) if smoke
           else OptimizerSettings(num_restarts=10, raw_samples=256, maxiter=100, batch_limit=10, mc_samples=128))
    neural = {"width": width, "max_epochs": steps, "dtype": "float32"}
    methods = {
        "simple-smb": ({"name": "simple-smb", "num_samples": 1, **neural}, "greedy"),
        "smb-ensemble-10": ({"name": "simple-smb", "num_samples": 10, **neural}, "qlognei"),
        "exact-gp": ({"name": "gp"}, "logei"),
    }
    torch.set_num_threads(args.threads)
    rows = []
    for n in sizes:
        problem, X, Y = data(n)
        for name, (surrogate, acquisition) in methods.items():
            timing = bo_step(problem, X, Y, surrogate, acquisition, opt)
            rows.append({"n": n, "method": name, **timing})
            print(f"N={n:5d} {name:>16}: fit {timing['fit']:.2f}s + acquisition {timing['acquisition']:.2f}s", flush=True)

    # 1. vectorized ensemble vs one member vs a loop of members (fit only, float32)
    n_mid = sizes[min(1, len(sizes) - 1)]
    one = median_of(lambda: fit_time(n_mid, width, 1, steps, torch.float32), repeats)
    ten = median_of(lambda: fit_time(n_mid, width, 10, steps, torch.float32), repeats)
    loop = sum(fit_time(n_mid, width, 1, steps, torch.float32) for _ in range(10))
    ensemble = {"n": n_mid, "one_member": one, "ten_vectorized": ten, "ten_loop": loop, "ratio": ten / one,
                "loop_ratio": loop / one}
    print(f"ensemble at N={n_mid}: 10 vectorized / 1 = {ten / one:.2f}x (a loop of 10: {loop / one:.2f}x)", flush=True)

    # 2. GP / neural step at the largest N
    n_max = sizes[-1]
    step = {r["method"]: r["total"] for r in rows if r["n"] == n_max}
    gp_ratio = {"n": n_max, "gp_over_simple_smb": step["exact-gp"] / step["simple-smb"],
                "gp_over_ensemble": step["exact-gp"] / step["smb-ensemble-10"]}

    # 3. Lightning overhead at the smallest N: the bench width and the thesis width 5000
    n_small = sizes[0]
    overheads = []
    for w in dict.fromkeys([width, 64 if smoke else 5000]):
        lightning = median_of(lambda w=w: fit_time(n_small, w, 1, steps, torch.float32), repeats)
        plain = median_of(lambda w=w: plain_loop_time(n_small, w, steps, torch.float32), repeats)
        overheads.append({"n": n_small, "width": w, "trainer_fit": lightning, "plain_loop": plain,
                          "overhead_share": max(lightning - plain, 0.0) / lightning,
                          "overhead_ms_per_step": 1e3 * (lightning - plain) / steps})
        print(f"Lightning overhead at N={n_small}, width {w}: {overheads[-1]['overhead_share']:.1%} of the fit "
              f"({overheads[-1]['overhead_ms_per_step']:.2f} ms per step)", flush=True)
    overhead = overheads[0]

    # threads: the SimpleSMB step with 1 and 2 intra-op threads
    threads = []
    for n in sizes[:: max(1, len(sizes) // 2)][:2]:
        problem, X, Y = data(n)
        for t in (1, 2):
            torch.set_num_threads(t)
            timing = bo_step(problem, X, Y, methods["simple-smb"][0], "greedy", opt)
            threads.append({"n": n, "threads": t, "total": timing["total"]})
    torch.set_num_threads(args.threads)

    result = {"smoke": smoke, "width": width, "steps": steps, "threads": args.threads, "rows": rows,
              "ensemble": ensemble, "gp_ratio": gp_ratio, "lightning": overhead, "lightning_by_width": overheads,
              "thread_rows": threads}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    plot(result, args.out / "bench_surrogates.png")
    return result


def write_markdown(result: dict[str, Any], path: Path) -> None:
    e, g = result["ensemble"], result["gp_ratio"]
    lines = [
        f"# bench_surrogates (Hartmann6, d = 6; width {result['width']}, {result['steps']} full-batch Adam "
        f"steps per neural fit, float32; {result['threads']} thread(s))" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| N | method | fit (s) | acquisition (s) | step (s) |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(f"| {r['n']} | {r['method']} | {r['fit']:.2f} | {r['acquisition']:.2f} | {r['total']:.2f} |")
    lines += [
        "",
        "| ratio | measured | target |",
        "|---|---|---|",
        f"| 10-member vectorized fit / 1 member (N = {e['n']}) | {e['ratio']:.2f}x "
        f"(a Python loop of 10: {e['loop_ratio']:.2f}x) | <= 3x |",
        f"| exact-GP step / SimpleSMB step (N = {g['n']}) | {g['gp_over_simple_smb']:.1f}x | >= 5x |",
        f"| exact-GP step / 10-member ensemble step (N = {g['n']}) | {g['gp_over_ensemble']:.1f}x | >= 5x |",
    ]
    lines += [
        f"| Lightning overhead in a fit (N = {o['n']}, width {o['width']}) | {o['overhead_share']:.1%} "
        f"({o['trainer_fit']:.2f}s Trainer vs {o['plain_loop']:.2f}s plain loop, "
        f"{o['overhead_ms_per_step']:.2f} ms per step) | <= 25% |"
        for o in result["lightning_by_width"]
    ]
    lines += [
        "",
        "SimpleSMB step by intra-op threads: "
        + ", ".join(f"N={r['n']} x {r['threads']} thread(s): {r['total']:.2f}s" for r in result["thread_rows"]),
    ]
    path.write_text("\n".join(lines) + "\n")


def plot(result: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, method in enumerate(sorted({r["method"] for r in result["rows"]})):
        rows = [r for r in result["rows"] if r["method"] == method]
        ax.loglog([r["n"] for r in rows], [r["total"] for r in rows], "o-", color=f"C{i}", label=method)
    ax.set_xlabel("observations N")
    ax.set_ylabel("seconds per BO step (fit + acquisition)")
    ax.set_title("Hartmann6: BO step cost")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
