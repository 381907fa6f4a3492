"""Cost of a BO step with neural surrogates vs the exact GP, as ratios measured in one run.

For ``N`` observations of Hartmann6 (``d = 6``, scrambled Sobol points) this times one BO step
(surrogate fit + acquisition optimization) of

- **SimpleSMB**: one network (``simple-smb``, ``num_samples: 1``) + the ``greedy`` policy;
- **SMB ensemble**: ten networks trained together in one vectorized module
  (``simple-smb``, ``num_samples: 10``) + qLogNEI over the members;
- **exact GP**: ``gp`` (Matern-5/2 ARD, marginal likelihood fitted by L-BFGS-B) + LogEI,

and reports these ratios, each measured side by side (interleaved repeats, medians):

1. **Ensemble vs loop** at ``N = 500``: the vectorized 10-member fit against a loop of ten
   1-member fits (goal <= 0.8x) and against ten times one member's fit (goal <= 1.2x), with
   what each optimization does: the member chunks of :class:`dsbo_zoo.mlp.EnsembleMLP` (off:
   all members in one batch), tanh through the sigmoid (off: ``torch.tanh``),
   ``torch.compile`` of the network, and a full-batch closure optimizer (L-BFGS) trained to
   the training MSE Adam reaches;
2. exact-GP step / neural step at the largest ``N`` (fixed budgets: the GP's L-BFGS-B to
   convergence, the network's 500 Adam steps), and **like for like**: both fitted to
   convergence (the GP as before; the network until its standardized training MSE is below
   ``--tol``, at most 20000 steps);
3. **Lightning's overhead** in a BO-step fit at ``N = 100`` and widths 1000 and 5000:
   ``train_module`` (50 Adam steps per Lightning batch) and the same with one step per batch,
   against the same module trained by a plain PyTorch loop (same steps, same loss); median of
   ``--overhead-repeats`` (10) interleaved repeats (goal <= 15% at width 1000).

It also times the SimpleSMB step with 1 and 2 intra-op threads (the default is chosen from
this measurement). Writes ``experiments/results/bench_surrogates/{results.json,
results.md, bench_surrogates.png}``.

    python experiments/bench_surrogates.py --smoke     # seconds
    python experiments/bench_surrogates.py             # N in {100, 500, 1000, 2000, 4000}

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
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
from smoke_out import add_out_argument, output_folder  # noqa: E402

from dsbo.acquisition import History, OptimizerSettings, make_policy  # noqa: E402
from dsbo.problems import get_problem  # noqa: E402
from dsbo.surrogates import (
    fit_surrogate,  # noqa: E402
    neural,  # noqa: E402
)
from dsbo.surrogates.neural import train_module  # noqa: E402
from dsbo_zoo import mlp  # noqa: E402
from dsbo_zoo.smb import SimpleSMB  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "bench_surrogates"


def data(n: int, seed: int = 0) -> tuple[Any, torch.Tensor, torch.Tensor]:
    problem = get_problem("hartmann6")
    X = draw_sobol_samples(problem.bounds, n=n, q=1, seed=seed).squeeze(1)
    return problem, X, problem.evaluate(X)


def bo_step(
    problem, X, Y, surrogate: dict[str, Any], acquisition: str, opt: OptimizerSettings
) -> dict[str, float]:
    """Seconds to fit ``surrogate`` and propose one point with ``acquisition``."""
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
    t1 = time.perf_counter()
    make_policy(acquisition, {}, opt).propose(
        model, History(X=X, Y=Y, seed=0, t=X.shape[0]), problem, 1
    )
    t2 = time.perf_counter()
    return {"fit": t1 - t0, "acquisition": t2 - t1, "total": t2 - t0}


def fit_time(
    n: int, width: int, members: int, steps: int, dtype: torch.dtype, variant: str = "default"
) -> float:
    """Seconds of one Lightning fit of a SimpleSMB with ``members`` networks on ``n`` points.

    ``variant``: ``default``; ``one-batch`` (no member chunks); ``torch-tanh`` (``torch.tanh``
    instead of the sigmoid form); ``per-step`` (one Adam step per Lightning batch);
    ``compiled`` (``torch.compile`` of the network's forward; returns the seconds of the
    second fit, the first one compiles)."""
    x = torch.rand(n, 6, dtype=dtype)
    y = torch.randn(n, dtype=dtype)
    saved = (mlp.CHUNK_BYTES, mlp.ACTIVATIONS["tanh"], neural.STEPS_PER_BATCH)
    mlp.CHUNK_BYTES = 2**62 if variant == "one-batch" else mlp.CHUNK_BYTES
    mlp.ACTIVATIONS["tanh"] = torch.tanh if variant == "torch-tanh" else mlp.ACTIVATIONS["tanh"]
    neural.STEPS_PER_BATCH = 1 if variant == "per-step" else neural.STEPS_PER_BATCH
    try:
        module = SimpleSMB(in_dim=6, num_samples=members, width=width).to(dtype)
        if variant == "compiled":
            module.net.forward = torch.compile(module.net.forward)
            train_module(module, x, y, max_epochs=steps)
        t0 = time.perf_counter()
        train_module(module, x, y, max_epochs=steps)
        return time.perf_counter() - t0
    finally:
        mlp.CHUNK_BYTES, mlp.ACTIVATIONS["tanh"], neural.STEPS_PER_BATCH = saved


def closure_fit(
    n: int, width: int, members: int, target_mse: float, max_iter: int = 2000
) -> tuple[float, int]:
    """Seconds and L-BFGS iterations (full batch, strong-Wolfe line search, a plain PyTorch
    loop) for a ``members``-network SimpleSMB to reach a training MSE of ``target_mse``."""
    x = torch.rand(n, 6)
    y = torch.randn(n)
    module = SimpleSMB(in_dim=6, num_samples=members, width=width)
    module.reinitialize()
    module.eps = torch.zeros(members, n)
    module._num_train = n
    optimizer = torch.optim.LBFGS(
        module.net.parameters(), lr=1.0, max_iter=20, history_size=20, line_search_fn="strong_wolfe"
    )
    index = torch.arange(n)

    def closure():
        optimizer.zero_grad()
        loss = module.loss(x, y, index)
        loss.backward()
        return loss

    t0 = time.perf_counter()
    iterations = 0
    while iterations < max_iter:
        optimizer.step(closure)
        iterations = optimizer.state[optimizer._params[0]]["n_iter"]
        if float(module.train_mse) <= target_mse:
            break
    return time.perf_counter() - t0, iterations


def adam_train_mse(n: int, width: int, members: int, steps: int) -> float:
    """The training MSE a ``train_module`` fit (``steps`` Adam steps) ends at."""
    module = SimpleSMB(in_dim=6, num_samples=members, width=width)
    train_module(module, torch.rand(n, 6), torch.randn(n), max_epochs=steps)
    return float(module.train_mse)


def to_tolerance_step(
    problem, X, Y, tol: float, width: int, opt: OptimizerSettings, max_steps: int
) -> dict[str, float]:
    """A SimpleSMB BO step trained until its standardized training MSE is below ``tol``."""
    surrogate = {
        "name": "simple-smb",
        "num_samples": 1,
        "width": width,
        "max_epochs": max_steps,
        "train_tol": tol,
        "dtype": "float32",
    }
    torch.manual_seed(0)
    t0 = time.perf_counter()
    model = fit_surrogate(surrogate, X, Y, bounds=problem.bounds)
    t1 = time.perf_counter()
    make_policy("greedy", {}, opt).propose(
        model, History(X=X, Y=Y, seed=0, t=X.shape[0]), problem, 1
    )
    t2 = time.perf_counter()
    module = model.module
    return {
        "fit": t1 - t0,
        "acquisition": t2 - t1,
        "total": t2 - t0,
        "train_mse": float(module.train_mse),
        "steps": module.fit_steps,
    }


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
    parser.add_argument(
        "--steps", type=int, default=None, help="full-batch Adam steps per fit (default 500)"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="intra-op threads of the main measurements"
    )
    parser.add_argument(
        "--tol", type=float, default=1e-3, help="training MSE of the like-for-like network fit"
    )
    parser.add_argument("--converged-sizes", type=int, nargs="*", default=None)
    parser.add_argument(
        "--repeats", type=int, default=None, help="interleaved repeats of the ensemble timings"
    )
    parser.add_argument("--overhead-repeats", type=int, default=None)
    add_out_argument(parser, RESULTS)
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    warnings.simplefilter("ignore")
    smoke = args.smoke
    sizes = args.sizes or ([20, 40] if smoke else [100, 500, 1000, 2000, 4000])
    width = args.width or (32 if smoke else 1000)
    steps = args.steps or (10 if smoke else 500)
    repeats = args.repeats or (1 if smoke else 5)
    args.overhead_repeats = args.overhead_repeats or (1 if smoke else 10)
    opt = (
        OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=25, batch_limit=2, mc_samples=32)
        if smoke
        else OptimizerSettings(
            num_restarts=10, raw_samples=256, maxiter=100, batch_limit=10, mc_samples=128
        )
    )
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
            print(
                f"N={n:5d} {name:>16}: fit {timing['fit']:.2f}s + acquisition {timing['acquisition']:.2f}s",
                flush=True,
            )

    # 1. vectorized ensemble vs one member vs a loop of members (fit only, float32), interleaved
    n_mid = sizes[min(1, len(sizes) - 1)]
    variants = ("default", "one-batch", "torch-tanh", "compiled")
    times: dict[str, list[float]] = {k: [] for k in ("one", "loop", *variants)}
    for _ in range(repeats):
        times["one"].append(fit_time(n_mid, width, 1, steps, torch.float32))
        for v in variants:
            times[v].append(fit_time(n_mid, width, 10, steps, torch.float32, v))
        times["loop"].append(
            sum(fit_time(n_mid, width, 1, steps, torch.float32) for _ in range(10))
        )
    med = {k: statistics.median(v) for k, v in times.items()}
    target = adam_train_mse(n_mid, width, 10, steps)
    lbfgs_seconds, lbfgs_iters = closure_fit(n_mid, width, 10, target)
    ensemble = {
        "n": n_mid,
        "repeats": repeats,
        "one_member": med["one"],
        "ten_loop": med["loop"],
        "ten_vectorized": med["default"],
        "variants": {v: med[v] for v in variants},
        "over_loop": med["default"] / med["loop"],
        "over_ten_ones": med["default"] / (10 * med["one"]),
        "ratio": med["default"] / med["one"],
        "loop_ratio": med["loop"] / med["one"],
        "lbfgs": {"target_mse": target, "seconds": lbfgs_seconds, "iterations": lbfgs_iters},
    }
    print(
        f"ensemble at N={n_mid}: 10 vectorized / loop of 10 = {ensemble['over_loop']:.2f}x, "
        f"/ (10 x one) = {ensemble['over_ten_ones']:.2f}x; variants "
        + ", ".join(f"{v} {t:.2f}s" for v, t in ensemble["variants"].items()),
        flush=True,
    )

    # 2. GP / neural step at the largest N (fixed budgets), and both fitted to convergence
    n_max = sizes[-1]
    step = {r["method"]: r["total"] for r in rows if r["n"] == n_max}
    gp_ratio = {
        "n": n_max,
        "gp_over_simple_smb": step["exact-gp"] / step["simple-smb"],
        "gp_over_ensemble": step["exact-gp"] / step["smb-ensemble-10"],
    }
    converged = []
    for n in args.converged_sizes or ([20] if smoke else [500, 1000]):
        problem, X, Y = data(n)
        gp = next((r for r in rows if r["n"] == n and r["method"] == "exact-gp"), None)
        gp = gp or {"n": n, **bo_step(problem, X, Y, methods["exact-gp"][0], "logei", opt)}
        net = to_tolerance_step(problem, X, Y, args.tol, width, opt, 200 if smoke else 20000)
        converged.append(
            {
                "n": n,
                "gp_step": gp["total"],
                "net_step": net["total"],
                "net_steps": net["steps"],
                "net_train_mse": net["train_mse"],
                "gp_over_net": gp["total"] / net["total"],
            }
        )
        print(
            f"converged N={n}: GP {gp['total']:.2f}s, SimpleSMB to MSE<{args.tol:g} {net['total']:.2f}s "
            f"({net['steps']} steps)",
            flush=True,
        )

    # 3. Lightning overhead at the smallest N: the bench width and the thesis width 5000, interleaved
    n_small = sizes[0]
    overheads = []
    for w in dict.fromkeys([width, 64 if smoke else 5000]):
        runs: dict[str, list[float]] = {"trainer_fit": [], "per_step": [], "plain_loop": []}
        for _ in range(args.overhead_repeats):
            runs["trainer_fit"].append(fit_time(n_small, w, 1, steps, torch.float32))
            runs["per_step"].append(fit_time(n_small, w, 1, steps, torch.float32, "per-step"))
            runs["plain_loop"].append(plain_loop_time(n_small, w, steps, torch.float32))
        m = {k: statistics.median(v) for k, v in runs.items()}
        overheads.append(
            {
                "n": n_small,
                "width": w,
                "repeats": args.overhead_repeats,
                **m,
                "overhead_share": max(m["trainer_fit"] - m["plain_loop"], 0.0) / m["trainer_fit"],
                "per_step_share": max(m["per_step"] - m["plain_loop"], 0.0) / m["per_step"],
                "overhead_ms_per_step": 1e3 * (m["trainer_fit"] - m["plain_loop"]) / steps,
            }
        )
        print(
            f"Lightning overhead at N={n_small}, width {w}: {overheads[-1]['overhead_share']:.1%} of the fit "
            f"(one step per batch: {overheads[-1]['per_step_share']:.1%})",
            flush=True,
        )
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

    result = {
        "smoke": smoke,
        "width": width,
        "steps": steps,
        "threads": args.threads,
        "rows": rows,
        "ensemble": ensemble,
        "gp_ratio": gp_ratio,
        "converged": converged,
        "tol": args.tol,
        "lightning": overhead,
        "lightning_by_width": overheads,
        "thread_rows": threads,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1))
    write_markdown(result, args.out / "results.md")
    plot(result, args.out / "bench_surrogates.png")
    return result


def write_markdown(result: dict[str, Any], path: Path) -> None:
    e, g = result["ensemble"], result["gp_ratio"]
    lines = [
        f"# bench_surrogates (Hartmann6, d = 6; width {result['width']}, {result['steps']} full-batch Adam "
        f"steps per neural fit, float32; {result['threads']} thread(s))"
        + (" (smoke)" if result["smoke"] else ""),
        "",
        "| N | method | fit (s) | acquisition (s) | step (s) |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['n']} | {r['method']} | {r['fit']:.2f} | {r['acquisition']:.2f} | {r['total']:.2f} |"
        )
    v = e["variants"]
    lines += [
        "",
        f"## Ratios (medians of {e['repeats']} interleaved repeats; Lightning overhead: "
        f"{result['lightning']['repeats']})",
        "",
        "| ratio | measured | goal |",
        "|---|---|---|",
        f"| 10-member vectorized fit / a loop of ten 1-member fits (N = {e['n']}) | {e['over_loop']:.2f}x "
        f"({e['ten_vectorized']:.2f}s vs {e['ten_loop']:.2f}s) | <= 0.8x |",
        f"| 10-member vectorized fit / (10 x one member's fit) | {e['over_ten_ones']:.2f}x "
        f"(one member {e['one_member']:.2f}s) | <= 1.2x |",
        f"| exact-GP step / SimpleSMB step (N = {g['n']}, fixed budgets) | {g['gp_over_simple_smb']:.1f}x | >= 5x |",
        f"| exact-GP step / 10-member ensemble step (N = {g['n']}, fixed budgets) | {g['gp_over_ensemble']:.1f}x | >= 5x |",
    ]
    lines += [
        f"| exact-GP step / SimpleSMB step, both to convergence (N = {c['n']}; network to training MSE < "
        f"{result['tol']:g}: {c['net_steps']} steps) | {c['gp_over_net']:.1f}x ({c['gp_step']:.2f}s vs "
        f"{c['net_step']:.2f}s) | - |"
        for c in result["converged"]
    ]
    lines += [
        f"| Lightning overhead in a BO-step fit (N = {o['n']}, width {o['width']}) | {o['overhead_share']:.1%} "
        f"({o['trainer_fit']:.3f}s train_module vs {o['plain_loop']:.3f}s plain loop; one Adam step per "
        f"Lightning batch: {o['per_step_share']:.1%}) | <= 15% |"
        for o in result["lightning_by_width"]
    ]
    lines += [
        "",
        f"## What each ensemble optimization does (10 members, N = {e['n']}, width {result['width']}, "
        f"{result['steps']} steps)",
        "",
        "| variant | fit (s) | vs default |",
        "|---|---|---|",
        *(f"| {name} | {t:.2f} | {t / v['default']:.2f}x |" for name, t in v.items()),
        f"| full-batch L-BFGS (plain loop) to Adam's final training MSE {e['lbfgs']['target_mse']:.2e} | "
        f"{e['lbfgs']['seconds']:.2f} ({e['lbfgs']['iterations']} iterations) | "
        f"{e['lbfgs']['seconds'] / v['default']:.2f}x |",
        "",
        "`default`: member chunks of about 4 MB of activations + tanh through the sigmoid; `one-batch`: all "
        "members in one batch; `torch-tanh`: `torch.tanh`; `compiled`: `torch.compile` of the network's "
        "forward (the second fit; the first compiles).",
    ]
    lines += [
        "",
        "SimpleSMB step by intra-op threads: "
        + ", ".join(
            f"N={r['n']} x {r['threads']} thread(s): {r['total']:.2f}s"
            for r in result["thread_rows"]
        ),
    ]
    path.write_text("\n".join(lines) + "\n")


def plot(result: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, method in enumerate(sorted({r["method"] for r in result["rows"]})):
        rows = [r for r in result["rows"] if r["method"] == method]
        ax.loglog(
            [r["n"] for r in rows], [r["total"] for r in rows], "o-", color=f"C{i}", label=method
        )
    ax.set_xlabel("observations N")
    ax.set_ylabel("seconds per BO step (fit + acquisition)")
    ax.set_title("Hartmann6: BO step cost")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
