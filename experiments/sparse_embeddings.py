r"""FLOPs-regularized sparse embeddings (Paria thesis ch. 5): the analytic 2-D toy and the
recall-vs-FLOPs fronts of F~, L1 and dense embeddings on the synthetic many-class set.

1. **Toy (section 5.6, figure 5.3b).** Two activations :math:`\mathrm{ReLU}(Y_j)`,
   :math:`Y_j \sim \mathcal N(\mu_j, \sigma_j^2)`, start at
   :math:`(\mu_1, \mu_2, \sigma_1, \sigma_2) = (-1/4, -1.3, 1, 1)`, i.e.
   :math:`(p_1, p_2) = (0.40, 0.10)`, and follow the gradient flow (Euler steps of size
   ``1e-2`` until :math:`p_1 + p_2 < 0.05`, gradients from Lemmas 5.2-5.5, checked against autograd) of
   :math:`\mathcal F = \sum_j p_j^2`, :math:`\tilde{\mathcal F} = \sum_j \mathbb E[(Y_j)_+]^2` and
   :math:`\ell_1 = \sum_j \mathbb E[(Y_j)_+]`. Reported: the trajectories in the
   :math:`(p_1, p_2)` plane and the ratio :math:`p_1/p_2` when :math:`p_1 + p_2` has fallen to
   0.25 (1 = balanced).
2. **Fronts.** :class:`~dsbo_zoo.sparse_embedding.SparseEmbedding` (MLP 64 -> 256 -> 256 ->
   ``--dim``-d embedding, default 1024 as in the thesis; ReLU, ArcFace s = 64, m = 0.5, Adam;
   ``--epochs`` 60 with the lambda warm-up over the first 40%) on
   :class:`~dsbo.data.SyntheticClassesDataModule` (800 training classes, 20 samples each;
   evaluation on 100 unseen classes x 5 samples + 100 distractors, leave-one-out): F~ and L1
   at several lambdas with the quadratic warm-up, and the dense baseline (no activation, no
   regularizer). Reported per run: recall@1, precision@4, mean non-zeros per row, FLOPs per
   row (exact, and the unbiased U-statistic), R_sub, dead dimensions; figures recall@1 vs
   FLOPs and R_sub vs mean activation probability.
3. **Warm-up vs constant lambda**: F~ at two lambdas with and without the warm-up.

Trained models are saved (state dict + hyperparameters) under ``--models``
(default ``runs/sparse_embeddings``) for ``experiments/bench_retrieval.py``. One torch thread
per run, ``--workers`` runs at once (processes).

    python experiments/sparse_embeddings.py --smoke   # seconds: tiny set, 1 epoch
    python experiments/sparse_embeddings.py           # the budget stated in results.md

``--smoke`` without ``--out`` writes to a fresh temporary folder (printed), never into ``experiments/results/``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import multiprocessing
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytorch_lightning as pl  # noqa: E402
import torch  # noqa: E402
from smoke_out import add_out_argument, output_folder  # noqa: E402
from torch.distributions import Normal  # noqa: E402

from dsbo.data import SyntheticClassesDataModule  # noqa: E402
from dsbo_zoo.sparse_embedding import LambdaWarmup, SparseEmbedding, evaluation_metrics  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "sparse_embeddings"
MODELS = Path("runs/sparse_embeddings")
STD = Normal(0.0, 1.0)


# ---------------------------------------------------------------------- 1. the analytic toy
def relu_gaussian_moments(
    mu: torch.Tensor, sigma: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lemma 5.1: ``E[Y+] = sigma phi(mu/sigma) + mu Phi(mu/sigma)`` and ``P(Y+ > 0) = Phi(mu/sigma)``."""
    z = mu / sigma
    p = STD.cdf(z)
    mean = sigma * torch.exp(STD.log_prob(z)) + mu * p
    return mean, p


def toy_gradients(
    kind: str, mu: torch.Tensor, sigma: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lemmas 5.2-5.5: gradients of F, F~ or L1 in (mu, sigma)."""
    mean, p = relu_gaussian_moments(mu, sigma)
    dens = torch.exp(-(mu**2) / (2 * sigma**2)) / math.sqrt(2 * math.pi)
    if kind == "F":  # d p^2: 2 p phi/sigma, -2 p mu phi/sigma^2
        return 2 * p * dens / sigma, -2 * p * mu * dens / sigma**2
    if kind == "F~":  # d E^2: 2 E Phi, 2 E phi
        return 2 * mean * p, 2 * mean * dens
    return p, dens  # L1: d E = Phi, phi


def toy_regularizer(kind: str, mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    mean, p = relu_gaussian_moments(mu, sigma)
    return {"F": (p**2).sum(), "F~": (mean**2).sum(), "L1": mean.sum()}[kind]


def toy_flow(
    kind: str, step: float = 1e-3, stop_sum: float = 0.02, max_steps: int = 200_000
) -> dict[str, Any]:
    """Euler gradient flow from (mu, sigma) = ((-1/4, -1.3), (1, 1)) until p1 + p2 < stop_sum."""
    mu, sigma = (
        torch.tensor([-0.25, -1.3], dtype=torch.double),
        torch.tensor([1.0, 1.0], dtype=torch.double),
    )
    path = []
    ratio_at = None
    for t in range(max_steps):
        _, p = relu_gaussian_moments(mu, sigma)
        if t % 50 == 0:
            path.append(p.tolist())
        if ratio_at is None and p.sum() <= 0.25:
            ratio_at = float(p[0] / p[1])
        if p.sum() < stop_sum:
            break
        g_mu, g_sigma = toy_gradients(kind, mu, sigma)
        mu, sigma = mu - step * g_mu, (sigma - step * g_sigma).clamp_min(1e-3)
    return {"path": path, "p1_over_p2_at_sum_0.25": ratio_at, "steps": t}


def check_toy_gradients() -> float:
    """Largest difference between the lemmas' gradients and autograd at a few points."""
    worst = 0.0
    for kind in ("F", "F~", "L1"):
        for mu0, s0 in ((-0.25, 1.0), (-1.3, 0.7), (-0.1, 2.0)):
            mu = torch.tensor([mu0], dtype=torch.double, requires_grad=True)
            sigma = torch.tensor([s0], dtype=torch.double, requires_grad=True)
            toy_regularizer(kind, mu, sigma).backward()
            g_mu, g_sigma = toy_gradients(kind, mu.detach(), sigma.detach())
            worst = max(
                worst,
                float((mu.grad - g_mu).abs().max()),
                float((sigma.grad - g_sigma).abs().max()),
            )
    return worst


# ---------------------------------------------------------------------- 2. training runs
def data_module(smoke: bool) -> SyntheticClassesDataModule:
    if smoke:
        return SyntheticClassesDataModule(
            total_classes=80,
            train_classes=60,
            eval_classes=10,
            train_per_class=6,
            eval_per_class=3,
            batch_size=128,
            seed=0,
        )
    return SyntheticClassesDataModule(
        total_classes=1000,
        train_classes=800,
        eval_classes=100,
        train_per_class=20,
        eval_per_class=5,
        noise=0.1,
        batch_size=256,
        seed=0,
    )


def train(
    dm: SyntheticClassesDataModule,
    regularizer: str,
    lam: float,
    warmup: int,
    epochs: int,
    seed: int,
    embedding_dim: int,
    activation: str = "relu",
) -> tuple[SparseEmbedding, dict[str, Any]]:
    pl.seed_everything(seed, verbose=False)
    model = SparseEmbedding(
        dm.in_dim,
        dm.num_classes,
        embedding_dim=embedding_dim,
        hidden=(256, 256),
        activation=activation,
        regularizer=regularizer,
        lam=lam,
        loss="arcface",
        lr=2e-3,
        recall_k=(1, 10),
        precision_k=(4,),
    )
    callbacks = [LambdaWarmup(warmup)] if warmup else []
    trainer = pl.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=callbacks,
        check_val_every_n_epoch=max(1, epochs),
    )
    started = time.perf_counter()
    trainer.fit(model, dm)
    seconds = time.perf_counter() - started
    model.eval()
    x, y = dm.split("eval")
    with torch.no_grad():
        codes = model(x)
    metrics = evaluation_metrics(codes, y, recall_k=(1, 10), precision_k=(4,))
    metrics.update(
        {
            "regularizer": regularizer,
            "lam": lam,
            "warmup_steps": warmup,
            "epochs": epochs,
            "seed": seed,
            "train_seconds": round(seconds, 1),
            "steps": trainer.global_step,
            "mean_p": metrics["nnz"] / embedding_dim,
            "activation": activation,
        }
    )
    return model, metrics


def train_and_save(job: tuple[Any, ...]) -> dict[str, Any]:
    """One run of the plan (a worker process): train, save the model under ``models_dir``, return its metrics."""
    smoke, models_dir, regularizer, lam, warm, epochs, embedding_dim, activation = job
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    dm = data_module(smoke)
    dm.setup()
    model, metrics = train(dm, regularizer, lam, warm, epochs, 0, embedding_dim, activation)
    name = run_name(metrics)
    torch.save(
        {"state_dict": model.state_dict(), "hparams": dict(model.hparams), "metrics": metrics},
        models_dir / f"{name}.pt",
    )
    metrics["name"] = name
    print(
        f"{name}: recall@1 {metrics['recall@1']:.3f} nnz {metrics['nnz']:.1f} flops {metrics['flops']:.2f} "
        f"r_sub {metrics['r_sub']:.2f} dead {metrics['dead']:.0f} ({metrics['train_seconds']} s)",
        flush=True,
    )
    return metrics


def run_name(m: dict[str, Any]) -> str:
    warm = "warm" if m["warmup_steps"] else "const"
    return f"{m['regularizer']}-{m['lam']:g}-{warm}-{m['activation']}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    add_out_argument(parser, RESULTS)
    parser.add_argument("--models", type=Path, default=MODELS)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument(
        "--dim", type=int, default=1024, help="embedding dimensions (the thesis: 1024)"
    )
    parser.add_argument(
        "--flops-lambdas",
        type=float,
        nargs="+",
        default=[0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0],
    )
    parser.add_argument(
        "--l1-lambdas", type=float, nargs="+", default=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
    )
    parser.add_argument(
        "--constant-lambdas",
        type=float,
        nargs="+",
        default=[30.0, 300.0],
        help="F~ lambdas also trained without the warm-up",
    )
    parser.add_argument(
        "--workers", type=int, default=2, help="runs trained at once (processes, one thread each)"
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: redraw the figure and results.md from --out's results.json (the toy is recomputed)",
    )
    args = parser.parse_args(argv)
    args.out = output_folder(args.out, args.smoke, RESULTS)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    args.out.mkdir(parents=True, exist_ok=True)
    models_dir = args.out / "smoke_models" if args.smoke else args.models
    models_dir.mkdir(parents=True, exist_ok=True)

    toy = {
        kind: toy_flow(kind, step=1e-2, stop_sum=0.2 if args.smoke else 0.05)
        for kind in ("F", "F~", "L1")
    }
    toy_check = check_toy_gradients()
    if args.report_only:
        result = json.loads((args.out / "results.json").read_text())
        plot(toy, result["runs"], args.out)
        (args.out / "results.md").write_text(report(result))
        return result

    dm = data_module(args.smoke)
    dm.setup()
    epochs = 1 if args.smoke else args.epochs
    embedding_dim = 32 if args.smoke else args.dim
    steps_per_epoch = max(1, len(dm.train_dataloader()))
    warmup = max(
        1, int(0.4 * epochs * steps_per_epoch)
    )  # T: 40% of the run (not given in the thesis)
    plan: list[tuple[str, float, int, str]] = [("none", 0.0, 0, "none")]
    flops_l = args.flops_lambdas[:1] if args.smoke else args.flops_lambdas
    l1_l = args.l1_lambdas[:1] if args.smoke else args.l1_lambdas
    plan += [("flops", lam, warmup, "relu") for lam in flops_l]
    plan += [("l1", lam, warmup, "relu") for lam in l1_l]
    plan += [
        ("flops", lam, 0, "relu")
        for lam in (args.constant_lambdas[:1] if args.smoke else args.constant_lambdas)
    ]
    jobs = [
        (args.smoke, models_dir, regularizer, lam, warm, epochs, embedding_dim, activation)
        for regularizer, lam, warm, activation in plan
    ]
    if args.workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(
            args.workers, mp_context=multiprocessing.get_context("spawn")
        ) as pool:
            runs = list(pool.map(train_and_save, jobs))
    else:
        runs = [train_and_save(job) for job in jobs]

    result = {
        "smoke": args.smoke,
        "toy": {k: {kk: vv for kk, vv in v.items() if kk != "path"} for k, v in toy.items()},
        "toy_gradient_check_max_abs_diff": toy_check,
        "runs": runs,
        "epochs": epochs,
        "warmup_steps": warmup,
        "embedding_dim": embedding_dim,
        "steps_per_epoch": steps_per_epoch,
        "data": dict(dm.hparams),
        "torch_threads": torch.get_num_threads(),
    }
    (args.out / "results.json").write_text(json.dumps(result, indent=2))
    plot(toy, runs, args.out)
    (args.out / "results.md").write_text(report(result))
    return result


def plot(toy: dict[str, Any], runs: list[dict[str, Any]], out: Path) -> None:
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5))
    for kind, color in (("F", "tab:blue"), ("F~", "tab:green"), ("L1", "tab:red")):
        path = toy[kind]["path"]
        ax[0].plot([p[0] for p in path], [p[1] for p in path], color=color, label=kind)
    ax[0].plot([0, 0.4], [0, 0.4], "k:", lw=0.8, label="p1 = p2")
    ax[0].set(xlabel="p1", ylabel="p2", title="2-D toy: gradient flow from (0.4, 0.1)")
    ax[0].legend()
    styles = {"flops": ("tab:blue", "o"), "l1": ("tab:red", "s"), "none": ("k", "*")}
    for r in runs:
        color, marker = styles[r["regularizer"]]
        face = color if r["warmup_steps"] or r["regularizer"] == "none" else "none"
        ax[1].scatter(r["flops"], r["recall@1"], color=color, marker=marker, facecolors=face, s=60)
        ax[1].annotate(f"{r['lam']:g}", (r["flops"], r["recall@1"]), fontsize=7)
        if r["regularizer"] != "none":
            ax[2].scatter(
                r["mean_p"], r["r_sub"], color=color, marker=marker, facecolors=face, s=60
            )
    ax[1].set(
        xscale="log",
        xlabel="FLOPs per row (sum_j p_j^2)",
        ylabel="recall@1 (unseen classes)",
        title="front: F~ (blue), L1 (red), dense (star); hollow = constant lambda",
    )
    ax[2].set(
        xscale="log",
        yscale="log",
        xlabel="mean activation probability p",
        ylabel="R_sub (1 = balanced)",
        title="balance R_sub vs sparsity",
    )
    fig.tight_layout()
    fig.savefig(out / "sparse_embeddings.png", dpi=110)
    plt.close(fig)


def report(result: dict[str, Any]) -> str:
    toy = result["toy"]
    lines = [
        "# Sparse embeddings: the 2-D toy and the recall-vs-FLOPs fronts (Paria thesis ch. 5)",
        "",
        "Written by `python experiments/sparse_embeddings.py"
        + (" --smoke" if result["smoke"] else "")
        + "`; "
        "figure `sparse_embeddings.png`, raw numbers `results.json`.",
        "",
        "## 1. Analytic toy (section 5.6, figure 5.3b)",
        "",
        f"Gradient flow from (p1, p2) = (0.40, 0.10); the lemmas' gradients agree with autograd to "
        f"{result['toy_gradient_check_max_abs_diff']:.1e}.",
        "",
        "| regularizer | p1/p2 when p1 + p2 = 0.25 | Euler steps |",
        "|---|---|---|",
    ]
    for kind in ("F", "F~", "L1"):
        lines.append(
            f"| {kind} | {toy[kind]['p1_over_p2_at_sum_0.25']:.3f} | {toy[kind]['steps']} |"
        )
    d = result["data"]
    lines += [
        "",
        "## 2. Fronts on the synthetic many-class set",
        "",
        f"{d['train_classes']} training classes x {d['train_per_class']} samples, evaluation on "
        f"{d['eval_classes']} unseen classes x {d['eval_per_class']} samples plus "
        f"{d['total_classes'] - d['train_classes'] - d['eval_classes']} distractors (leave-one-out retrieval), "
        f"{result['embedding_dim']}-d embeddings, {result['epochs']} epochs ({result['steps_per_epoch']} steps each), "
        f"warm-up T = {result['warmup_steps']} steps, one seed (0), one torch thread.",
        "",
        "| run | recall@1 | recall@10 | precision@4 | non-zeros/row | FLOPs/row | FLOPs/row (unbiased) | R_sub | dead dims | train s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['name']} | {r['recall@1']:.3f} | {r['recall@10']:.3f} | {r['precision@4']:.3f} | "
            f"{r['nnz']:.1f} | {r['flops']:.2f} | {r['flops_unbiased']:.2f} | {r['r_sub']:.2f} | "
            f"{r['dead']:.0f} | {r['train_seconds']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
