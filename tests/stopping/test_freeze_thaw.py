"""The freeze-thaw choice: DyHPO's multi-fidelity EI against BoTorch's LogEI with per-step
incumbents, the steps a choice trains to, and the curve models behind it."""

from __future__ import annotations

import pytest
import torch
from botorch.acquisition.analytic import LogExpectedImprovement
from botorch.models import SingleTaskGP

from dsbo.errors import ConfigError, DataError
from dsbo.stopping.freeze_thaw import FreezeThaw, best_at_steps
from dsbo.surrogates.curve_model import CurveSurrogate

T = 8


class GPOverSteps:
    """A stand-in surrogate: an exact GP over ``[x | step]`` (fixed hyperparameters)."""

    max_steps, fit_seconds = T, 0.0

    def fit(self, configs, curves):
        X = torch.cat(
            [
                torch.cat(
                    [configs[i].expand(len(c), -1), torch.arange(1.0, len(c) + 1).unsqueeze(-1)], -1
                )
                for i, c in enumerate(curves)
            ]
        )
        Y = torch.tensor([v for c in curves for v in c]).unsqueeze(-1)
        gp = SingleTaskGP(X, Y)
        gp.covar_module.lengthscale = torch.tensor([0.3, 0.3, 3.0])  # an RBF kernel in BoTorch 0.18
        return gp.eval()


def _curves():
    configs = torch.tensor([[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]])
    curves = [[-1.0, -0.8, -0.7], [-2.0, -1.5], [-0.9, -0.5, -0.3, -0.2]]  # larger is better
    return configs, curves


def test_best_at_steps_is_the_best_value_reached_at_each_step():
    _, curves = _curves()
    best = best_at_steps(curves, torch.tensor([1.0, 2.0, 4.0, 7.0]))
    # step 1: max(-1, -2, -0.9); 4: only the third curve; 7: no curve, the best of all
    assert best.tolist() == [-0.9, -0.5, -0.2, -0.2]


@pytest.mark.parametrize("criterion", ["mf-ei", "final"])
def test_the_choice_maximizes_logei_at_each_candidates_step(criterion):
    torch.manual_seed(0)
    configs, curves = _curves()
    policy = FreezeThaw(GPOverSteps(), steps_per_thaw=2, criterion=criterion)
    candidates = torch.rand(5, 2)
    choice = policy.choose(configs, curves, paused=[0, 1, 2], candidates=candidates)
    rows = torch.cat([configs, candidates])
    next_steps = torch.tensor([5.0, 4.0, 6.0] + [2.0] * 5)  # paused: observed + 2; new: 2
    steps = torch.full_like(next_steps, float(T)) if criterion == "final" else next_steps
    model = GPOverSteps().fit(configs, curves)
    X = torch.cat([rows, steps.unsqueeze(-1)], -1).unsqueeze(-2)
    expected = LogExpectedImprovement(model, best_f=best_at_steps(curves, steps).unsqueeze(-1))(
        X
    ).detach()
    best = int(expected.argmax())
    assert choice.log_ei == pytest.approx(float(expected[best]))
    assert choice.until_step == int(next_steps[best])
    if best < 3:
        assert (choice.action, choice.index, choice.candidate) == ("continue", best, None)
    else:
        assert (choice.action, choice.index, choice.candidate) == ("start", None, best - 3)
    torch.testing.assert_close(choice.config, rows[best])


def test_a_continue_never_passes_the_last_step_and_complete_curves_are_refused():
    configs, curves = _curves()
    curves[2] = curves[2] + [-0.15, -0.12, -0.11]  # 7 of 8 steps
    choice = FreezeThaw(GPOverSteps(), steps_per_thaw=3).choose(
        configs, curves, paused=[2], candidates=torch.zeros(0, 2)
    )
    assert (choice.action, choice.index, choice.until_step) == ("continue", 2, T)
    curves[2] = curves[2] + [-0.1]
    with pytest.raises(DataError, match="cannot be continued"):
        FreezeThaw(GPOverSteps()).choose(configs, curves, paused=[2], candidates=torch.zeros(0, 2))
    with pytest.raises(DataError, match="nothing|no paused"):
        FreezeThaw(GPOverSteps()).choose(configs, curves, paused=[], candidates=torch.zeros(0, 2))
    with pytest.raises(ConfigError, match="steps_per_thaw"):
        FreezeThaw(GPOverSteps(), steps_per_thaw=0)
    with pytest.raises(ConfigError, match="criterion"):
        FreezeThaw(GPOverSteps(), criterion="ucb")


@pytest.mark.parametrize("name", ["deep-kernel-gp", "power-law-ensemble"])
def test_curve_models_warm_start_and_choose_through_botorch(name):
    torch.manual_seed(0)
    configs = torch.rand(12, 2)
    curves = [
        [-(1.0 + c[0].item()) * (t + 1) ** -0.5 for t in range(int(2 + 5 * c[1]))] for c in configs
    ]
    surrogate = CurveSurrogate(name, 2, T, epochs=30, warm_epochs=5)
    policy = FreezeThaw(surrogate)
    first = policy.choose(configs, curves, paused=list(range(12)), candidates=torch.rand(16, 2))
    second = policy.choose(configs, curves, paused=list(range(12)), candidates=torch.rand(16, 2))
    assert surrogate.fits == 2 and first.action in ("continue", "start") and second.until_step >= 1
    assert torch.isfinite(torch.tensor([first.log_ei, first.final_mean, first.final_sd])).all()
    model = surrogate.fit(configs, curves)
    known = torch.cat([configs[:1], torch.tensor([[float(len(curves[0]) + 1)]])], -1)
    new = torch.cat([torch.tensor([[0.55, 0.45]]), torch.tensor([[1.0]])], -1)
    # a configuration with a curve reads its prefix; a new one has none
    rows = model.rows(torch.cat([known, new]))
    d = 2
    assert rows[0, d + 1] * T == pytest.approx(len(curves[0])) and rows[1, d + 1] == 0
    post = model.posterior(torch.cat([known, new]))  # one t-batch of q = 2: a joint posterior
    assert post.mvn.covariance_matrix.shape == (2, 2)
    with pytest.raises(ConfigError, match="curve model"):
        CurveSurrogate("gp", 2, T)


def test_near_the_budget_end_the_best_predicted_paused_trial_is_finished():
    configs, curves = _curves()
    policy = FreezeThaw(GPOverSteps(), steps_per_thaw=1)
    model = GPOverSteps().fit(configs, curves)
    X = torch.cat([configs, torch.full((3, 1), float(T))], -1)
    predicted = model.posterior(X.unsqueeze(-2)).mean.reshape(-1)
    best = int(predicted.argmax())
    need = T - len(curves[best])
    # with room for one more thaw elsewhere, the usual choice; with less, the finish
    assert policy._endgame(model, configs, curves, [0, 1, 2], need + 1) is None
    choice = policy.choose(
        configs, curves, paused=[0, 1, 2], candidates=torch.rand(4, 2), budget_left=need
    )
    assert (choice.action, choice.index, choice.until_step) == ("continue", best, T)
    # a trial the budget cannot finish is never the one finished
    assert policy._endgame(model, configs, curves, [0, 1, 2], 0) is None
