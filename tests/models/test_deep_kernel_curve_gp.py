"""DeepKernelCurveGP: the head's marginal likelihood and predictive against the GP formulas,
Titsias' bound against the exact marginal likelihood, and extrapolation of curve prefixes
after a Lightning fit."""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from dsbo_zoo import CurveLayout, DeepKernelCurveGP


def _rows(n: int, d: int = 2, T: int = 10, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    layout = CurveLayout(d, T)
    steps = torch.randint(1, T + 1, (n,), generator=g).double()
    lengths = torch.floor(torch.rand(n, generator=g, dtype=torch.float64) * steps)
    rows = layout.rows(
        torch.rand(n, d, generator=g, dtype=torch.float64),
        steps,
        torch.randn(n, T, generator=g, dtype=torch.float64),
        lengths,
    )
    return rows.float(), torch.randn(n, generator=g)


def test_exact_head_is_gp_regression_on_the_features():
    torch.manual_seed(0)
    rows, y = _rows(60)
    gp = DeepKernelCurveGP(2, 10, inducing=100)
    gp._keep(rows, y)
    with torch.no_grad():
        f = gp.features(rows)
        K = gp.kernel(f, f) + gp.noise_var * torch.eye(60, dtype=torch.float64)
        mean = gp.mean_constant.double().expand(60)
        exact = torch.distributions.MultivariateNormal(mean, K).log_prob(y.double()) / 60
        assert gp.marginal_likelihood_bound(rows, y).item() == pytest.approx(exact.item(), rel=1e-9)
        test_rows, _ = _rows(7, seed=1)
        ft = gp.features(test_rows)
        Ks, Kss = gp.kernel(f, ft), gp.kernel(ft, ft)
        expected_mean = mean[:7] + Ks.T @ torch.linalg.solve(K, y.double() - mean)
        expected_cov = Kss - Ks.T @ torch.linalg.solve(K, Ks)
        got_mean, got_cov = gp.predict_mean_cov(test_rows)
    torch.testing.assert_close(got_mean, expected_mean, rtol=1e-7, atol=1e-8)
    torch.testing.assert_close(got_cov, expected_cov, rtol=1e-6, atol=1e-8)


def test_titsias_bound_lies_below_the_exact_likelihood_and_meets_it_with_every_point():
    torch.manual_seed(0)
    rows, y = _rows(80)
    gp = DeepKernelCurveGP(2, 10, inducing=1000)
    gp._keep(rows, y)
    with torch.no_grad():
        exact = gp.marginal_likelihood_bound(rows, y).item()
        exact_mean, exact_cov = gp.predict_mean_cov(rows[:5])
        bounds = []
        for m in (10, 40, 79):
            gp.inducing_index = torch.arange(m)
            bounds.append(gp.marginal_likelihood_bound(rows, y).item())
        sparse_mean, sparse_cov = gp.predict_mean_cov(rows[:5])  # 79 of 80 points inducing
    assert all(b <= exact + 1e-9 for b in bounds)
    assert bounds == sorted(bounds)  # more inducing inputs (a superset): a tighter bound
    assert bounds[-1] == pytest.approx(exact, abs=1e-4)
    torch.testing.assert_close(sparse_mean, exact_mean, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(sparse_cov, exact_cov, atol=1e-3, rtol=1e-3)


def _power_law_curves(m: int, T: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(m, 2, generator=g)
    tau = torch.arange(1, T + 1) / T
    final, amplitude, exponent = X[:, 1], 0.3 + X[:, 0], 0.5 + X[:, 0]
    full = final[:, None] + 0.1 * amplitude[:, None] * (tau ** -exponent[:, None] - 1)
    return X, full + 0.005 * torch.randn(m, T, generator=g)


def _fit(gp: DeepKernelCurveGP, rows: torch.Tensor, y: torch.Tensor, steps: int) -> None:
    data = DataLoader(TensorDataset(rows, y, torch.arange(len(y))), batch_size=len(y))
    trainer = pl.Trainer(
        max_epochs=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(gp, data)


def test_a_fitted_model_extrapolates_prefixes_to_the_final_step():
    torch.manual_seed(0)
    T, m = 20, 60
    X, full = _power_law_curves(m, T, seed=0)
    full = (full - full.mean()) / full.std()  # standardized, as the dsbo bridge trains it
    lengths = torch.randint(2, T, (m,))
    curves = [full[i, : lengths[i]].tolist() for i in range(m)]
    layout = CurveLayout(2, T)
    rows, y = layout.training_rows(
        X, curves, truncate=0.3, generator=torch.Generator().manual_seed(0)
    )
    gp = DeepKernelCurveGP(2, T, inducing=64)  # sparse: more observations than inducing inputs
    _fit(gp, rows, y, 200)
    assert gp._sparse_for(len(y))
    prefixes = torch.zeros(m, T)
    for i, curve in enumerate(curves):
        prefixes[i, : len(curve)] = torch.tensor(curve)
    mean, cov = gp.predict_mean_cov(
        layout.rows(X, torch.full((m,), float(T)), prefixes, lengths.float())
    )
    truth, last = full[:, -1].double(), torch.tensor([c[-1] for c in curves]).double()
    assert (mean - truth).abs().median() < 0.75 * (
        last - truth
    ).abs().median()  # better than the last value
    sd = (cov.diagonal() + gp.noise_var).sqrt()
    assert ((truth - mean).abs() <= 1.645 * sd).double().mean() >= 0.6


def test_warm_start_continues_and_cold_start_reinitializes():
    torch.manual_seed(0)
    rows, y = _rows(30)
    for warm in (True, False):
        gp = DeepKernelCurveGP(2, 10, warm_start=warm)
        _fit(gp, rows, y, 5)
        after_first = {k: v.clone() for k, v in gp.state_dict().items() if "train" not in k}
        gp._fitted_once = True
        gp.on_fit_start()  # what the second trainer.fit runs first
        same = all(
            torch.equal(after_first[k], v) for k, v in gp.state_dict().items() if k in after_first
        )
        assert same is warm


def test_unfitted_and_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="not fitted"):
        DeepKernelCurveGP(2, 10).predict_mean_cov(torch.zeros(1, 14))
    with pytest.raises(ValueError, match="inducing"):
        DeepKernelCurveGP(2, 10, inducing=0)
    with pytest.raises(ValueError, match="max_steps"):
        DeepKernelCurveGP(2, 0)
    with pytest.raises(ValueError, match="lr"):
        DeepKernelCurveGP(2, 10, lr=-1.0)
