"""The campaign loop: ask/tell, failures as data, executors, resume, determinism, export."""

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
import torch
from botorch.test_functions.synthetic import ConstrainedGramacy

from dsbo.campaign import Campaign
from dsbo.errors import ConfigError, EvaluationError, OutcomeError, ProblemError
from dsbo.problems import Problem, get_problem
from dsbo.storage import TrialStore


def small_campaign(fast_optimizer, **kwargs):
    options = dict(surrogate="gp", budget=8, n_init=4, seed=3, optimizer=fast_optimizer)
    options.update(kwargs)
    problem = options.pop("problem", None) or get_problem("branin")
    return Campaign(problem, **options)


def test_run_reaches_budget_and_improves(fast_optimizer):
    campaign = small_campaign(fast_optimizer, budget=10)
    result = campaign.run()
    frame = result.history
    assert len(frame) == 10 and (frame["status"] == "completed").all()
    assert list(frame["generator"][:4]) == ["sobol-init"] * 4
    # the model proposed every trial after the design (a Thompson draw when the search stalled)
    assert set(frame["generator"][4:]) <= {"qlognei", "qlognei+explore"} and "qlognei" in set(
        frame["generator"]
    )
    assert result.best_value == pytest.approx(frame["objective"].max())
    assert frame["best_so_far"].is_monotonic_increasing
    # BO steps record their fit and acquisition time, the Sobol steps do not
    assert (frame["fit_time"][4:] > 0).all() and (frame["fit_time"][:4] == 0).all()


def test_same_seed_same_proposals(fast_optimizer):
    X1 = small_campaign(fast_optimizer).run().history[["x0", "x1"]].to_numpy()
    X2 = small_campaign(fast_optimizer).run().history[["x0", "x1"]].to_numpy()
    X3 = small_campaign(fast_optimizer, seed=4).run().history[["x0", "x1"]].to_numpy()
    assert (X1 == X2).all()
    assert not (X1 == X3).all()


class FlakyBranin:
    """Raises on every 3rd call, returns NaN on every 4th: failures are data."""

    def __init__(self):
        self.problem = get_problem("branin")
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        if self.calls % 3 == 0:
            raise RuntimeError("simulator crashed")
        if self.calls % 4 == 0:
            return float("nan")
        return self.problem(x)


def test_failures_are_recorded_and_not_fitted(fast_optimizer):
    campaign = small_campaign(fast_optimizer, budget=10, evaluator=FlakyBranin())
    result = campaign.run()
    frame = result.history
    failed = frame[frame["status"] == "failed"]
    assert result.num_failed == len(failed) >= 3
    assert result.num_completed + result.num_failed == 10
    assert failed["error"].str.contains("simulator crashed").any()
    assert failed["error"].str.contains("non-finite").any()
    assert failed["objective"].isna().all()
    X, Y = campaign.store.completed_data()
    assert torch.isfinite(Y).all() and X.shape[0] == result.num_completed


def test_a_broken_evaluator_stops_with_a_clear_error(fast_optimizer):
    def broken(x):
        raise KeyError("missing license")

    campaign = small_campaign(fast_optimizer, evaluator=broken, max_consecutive_failures=3)
    with pytest.raises(EvaluationError, match="3 evaluations in a row failed.*missing license"):
        campaign.run()
    assert campaign.store.count("failed") == 3


def test_ask_tell_for_an_external_black_box(tmp_path, fast_optimizer):
    problem = get_problem("branin")
    campaign = small_campaign(fast_optimizer, store=tmp_path / "s.sqlite", budget=6)
    while trials := campaign.ask():
        for trial in trials:  # evaluated "elsewhere"
            campaign.tell(trial.id, {"objective": float(problem(torch.tensor(trial.x)))})
    assert campaign.store.count("completed") == 6 and campaign.ask() == []
    # a wrong-length report is refused and the trial stays pending for the right one ...
    campaign2 = small_campaign(fast_optimizer, budget=2, n_init=1)
    [trial] = campaign2.ask(1)
    with pytest.raises(OutcomeError, match=r"must be 1 number\(s\) \(objective\), got 2"):
        campaign2.tell(trial.id, [1.0, 2.0])
    assert campaign2.store.get(trial.id).status == "pending"
    assert campaign2.tell(trial.id, [1.5]).status == "completed"
    # ... while a NaN is the evaluation's own failure, recorded with the reason
    [trial] = campaign2.ask(1)
    told = campaign2.tell(trial.id, [math.nan])
    assert told.status == "failed" and "non-finite" in told.error


def test_attach_validates_points(fast_optimizer):
    campaign = small_campaign(fast_optimizer)
    trial = campaign.attach([0.0, 5.0], 3.0)
    assert trial.status == "completed" and trial.generator == "manual"
    with pytest.raises(ProblemError, match="outside the bounds"):
        campaign.attach([100.0, 5.0], 3.0)
    with pytest.raises(ProblemError, match="shape n x 2"):
        campaign.attach([0.0, 5.0, 1.0], 3.0)
    with pytest.raises(EvaluationError):
        campaign.attach([0.0, 5.0], float("nan"))


def spawn_pool(max_workers):
    # fork after JAX/torch threads exist can deadlock: start workers fresh
    return ProcessPoolExecutor(max_workers, mp_context=multiprocessing.get_context("spawn"))


@pytest.mark.parametrize("pool", [ThreadPoolExecutor, spawn_pool])
def test_batches_through_an_executor(pool, fast_optimizer):
    with pool(max_workers=2) as executor:
        campaign = small_campaign(fast_optimizer, q=2, executor=executor)
        result = campaign.run()
    frame = result.history
    assert result.num_completed == 8
    assert frame.groupby("batch").size().max() == 2


def test_resume_continues_without_loss_or_duplicates(tmp_path, fast_optimizer):
    path = tmp_path / "s.sqlite"
    first = small_campaign(fast_optimizer, store=path, budget=6)
    first.run()
    before = first.store.trials()
    first.store.close()
    resumed = small_campaign(fast_optimizer, store=TrialStore(path), budget=9)
    resumed.run()
    after = resumed.store.trials()
    assert len(after) == 9
    assert [(t.x, t.y) for t in after[:6]] == [(t.x, t.y) for t in before]
    # and a resumed campaign proposes what an uninterrupted one would have
    straight = small_campaign(fast_optimizer, budget=9).run().history
    assert (straight[["x0", "x1"]].to_numpy() == resumed.history()[["x0", "x1"]].to_numpy()).all()


def test_pending_trials_after_a_crash(tmp_path, fast_optimizer):
    path = tmp_path / "s.sqlite"
    campaign = small_campaign(fast_optimizer, store=path, budget=5)
    campaign.ask(2)  # proposed, then "the process died" (and its lock with it)
    campaign.store.close()
    retry = small_campaign(fast_optimizer, store=TrialStore(path), budget=5)
    assert len(retry.resume_pending()) == 2 and retry.store.count("completed") == 2

    path2 = tmp_path / "s2.sqlite"
    crashed = small_campaign(fast_optimizer, store=path2, budget=5)
    crashed.ask(2)
    crashed.store.close()
    abandon = small_campaign(
        fast_optimizer, store=TrialStore(path2), budget=5, on_pending="abandon"
    )
    abandon.run()
    assert abandon.store.count("abandoned") == 2 and abandon.store.count("completed") == 5


def test_a_store_of_another_problem_is_refused(tmp_path, fast_optimizer):
    path = tmp_path / "s.sqlite"
    small_campaign(fast_optimizer, store=path).store.close()
    with pytest.raises(ConfigError, match="belongs to another problem"):
        Campaign(get_problem("hartmann6"), store=path)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"budget": 0}, "budget must be a positive integer"),
        ({"n_init": 20}, "n_init=20 exceeds budget=8"),
        ({"acquisition": "nope"}, "acquisition.name='nope' is not registered"),
        ({"acquisition": {"name": "ucb", "gamma": 1}}, r"no option\(s\) \['gamma'\]"),
        ({"surrogate": "nope"}, "surrogate.name='nope' is not registered"),
        ({"surrogate": {"name": "gp", "kernel": "foo"}}, "option kernel='foo' is unknown"),
        ({"acquisition": "logei", "q": 2}, "one point at a time and q=2"),
        ({"seed": 2**64}, r"seed must be an integer in \[0, 4294967295\]"),
        ({"eval_timeout": 0}, "eval_timeout must be"),
        ({"worker_retries": -1}, "worker_retries"),
        ({"on_pending": "later"}, "on_pending"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_settings_name_the_field(kwargs, match, fast_optimizer):
    with pytest.raises(ConfigError, match=match):
        small_campaign(fast_optimizer, **kwargs)


@pytest.mark.parametrize("acquisition", ["ucb", "logei", "sobol"])
def test_other_policies_run(acquisition, fast_optimizer):
    result = small_campaign(fast_optimizer, acquisition=acquisition, budget=6).run()
    assert result.num_completed == 6
    assert set(result.history["generator"][4:]) == {acquisition}


def test_analytic_policy_refuses_batches_before_anything_is_stored(tmp_path, fast_optimizer):
    path = tmp_path / "s.sqlite"
    with pytest.raises(ConfigError, match="one point at a time"):
        small_campaign(fast_optimizer, acquisition="logei", q=2, store=path)
    assert not path.exists()


def test_constrained_and_multi_objective_problems_run(fast_optimizer):
    # ConstrainedGramacy: 2 dims, 2 outcome constraints, cheap to model
    constrained = Problem(
        "gramacy", ConstrainedGramacy(negate=True), default_point=[0.5, 0.5], relevant_dims=(0, 1)
    )
    result = small_campaign(fast_optimizer, problem=constrained, budget=7, n_init=5).run()
    assert result.num_completed == 7
    assert set(constrained.constraint_names) <= set(result.history.columns)
    assert set(result.history["generator"][5:]) == {"qlognei"}
    mo = get_problem("branin-currin")
    result = small_campaign(fast_optimizer, problem=mo, budget=7, n_init=5).run()
    assert set(result.history["generator"][5:]) == {"qlognehvi"}
    assert result.best_value >= 0  # hypervolume of the feasible front
    assert result.history["best_so_far"].is_monotonic_increasing


def test_history_exports_to_csv(tmp_path, fast_optimizer):
    campaign = small_campaign(fast_optimizer, budget=5)
    campaign.run()
    path = tmp_path / "history.csv"
    campaign.history().to_csv(path, index=False)
    text = path.read_text().splitlines()
    assert text[0].startswith("trial,batch,generator,status,x0,x1,objective")
    assert len(text) == 6


def test_fixed_features_hold_for_every_generator(fast_optimizer):
    fast_optimizer.fixed_features = {1: 7.5}
    for acquisition in ("qlognei", "sobol"):
        result = small_campaign(fast_optimizer, acquisition=acquisition, budget=6).run()
        assert (result.history["x1"] == 7.5).all(), acquisition


def test_ucb_beta_schedule(fast_optimizer):
    from dsbo.acquisition import make_policy

    policy = make_policy("ucb", {"beta": "log(t+2)"}, fast_optimizer)
    assert policy.beta_at(1) == pytest.approx(math.log(3))
    assert make_policy("ucb", {"beta": 0.5}, fast_optimizer).beta_at(10) == 0.5
    with pytest.raises(ConfigError, match="beta='sqrt'"):
        make_policy("ucb", {"beta": "sqrt"}, fast_optimizer)
    result = small_campaign(
        fast_optimizer, acquisition={"name": "ucb", "beta": "log(t+2)"}, budget=6
    ).run()
    assert result.num_completed == 6


def test_postprocess_needs_a_registered_name_and_an_optimized_policy(fast_optimizer):
    with pytest.raises(ConfigError, match="postprocess.name='prune' is not registered"):
        small_campaign(fast_optimizer, postprocess={"prune": {}})
    with pytest.raises(ConfigError, match="needs an acquisition that is optimized"):
        small_campaign(fast_optimizer, acquisition="sobol", postprocess={"prune": {}})


def test_the_default_point_can_lead_the_initial_design(fast_optimizer):
    problem = get_problem("branin-6d")  # default: the box centre
    campaign = small_campaign(
        fast_optimizer, problem=problem, budget=7, n_init=4, include_default=True, q=3
    )
    result = campaign.run()
    frame = result.history
    assert list(frame["generator"][:5]) == ["default"] + ["sobol-init"] * 4
    assert frame.loc[0, [f"x{i}" for i in range(6)]].tolist() == problem.default_point.tolist()
    assert frame.loc[0, "num_changed"] == 0 and len(frame) == 7, "it counts against the budget"
    assert frame.loc[0, "batch"] != frame.loc[1, "batch"], "a batch of its own"
    with pytest.raises(ConfigError, match=r"n_init=7 \+ the default point exceeds budget=7"):
        small_campaign(fast_optimizer, budget=7, n_init=7, include_default=True)


def test_changes_are_counted_from_the_policy_target(fast_optimizer):
    problem = get_problem("branin-6d")  # default: the box centre
    sebo = {"name": "sebo", "target": "zero", "num_restarts_homotopy": 2, "num_steps": 3}
    campaign = small_campaign(fast_optimizer, problem=problem, budget=5, n_init=4, acquisition=sebo)
    assert campaign.changes_from == "acquisition target"
    torch.testing.assert_close(campaign.reference_point, torch.zeros(6, dtype=torch.double))
    result = campaign.run()
    assert result.changes_from == "acquisition target"
    # the best point's changes, named, from the target
    best = torch.tensor(result.best_x, dtype=torch.double)
    expected = [
        j
        for j in range(6)
        if abs(float(best[j])) > 1e-3 * float(problem.bounds[1, j] - problem.bounds[0, j])
    ]
    assert [c["parameter"] for c in result.changes_best] == [f"x{j}" for j in expected]
    assert all(
        c["from"] == 0.0 and c["to"] == float(best[int(c["parameter"][1:])])
        for c in result.changes_best
    )
    assert len(result.changes_best) == result.num_changed_best
    plain = small_campaign(fast_optimizer, problem=problem, budget=5, n_init=4)
    assert plain.changes_from == "problem default"
    bonsai = small_campaign(
        fast_optimizer,
        problem=problem,
        budget=5,
        n_init=4,
        postprocess={"bonsai": {"default": [0.25] * 6}},
    )
    assert bonsai.changes_from == "postprocess default"


def test_a_noisy_campaign_is_reproducible_whatever_ran_before_in_the_process():
    """Every ask reseeds torch: the noise of evaluations in this process (the initial design
    too) follows the campaign seed, not the process's earlier use of the global generator."""
    from dsbo.acquisition import OptimizerSettings
    from dsbo.problems import get_problem

    def observed(draws_before: int) -> list[float]:
        torch.rand(draws_before)
        campaign = Campaign(
            get_problem("branin", noise_std=1.0),
            surrogate="gp",
            acquisition="logei",
            budget=6,
            n_init=4,
            seed=3,
            optimizer=OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20),
            dry_run=False,
        )
        campaign.run()
        return [t.y[0] for t in campaign.store.trials()]

    assert observed(3) == observed(17)


def test_callbacks_that_are_not_callables_are_refused():
    from dsbo.campaign.execution import Execution
    from dsbo.errors import ConfigError

    with pytest.raises(ConfigError, match="callbacks"):
        Execution(evaluator=print, callbacks=print)
    with pytest.raises(ConfigError, match="callbacks"):
        Execution(evaluator=print, callbacks=[1])
    assert Execution(evaluator=print, callbacks=(print,)).callbacks == [print]


def test_campaigns_in_two_threads_propose_one_at_a_time(fast_optimizer, monkeypatch):
    """GPyTorch's and BoTorch's settings, torch's RNG and thread count are process-wide:
    a campaign's fit and proposal hold ``MODEL_LOCK``, so a second thread's proposal waits
    (here its fit would start inside the first one's), and the same seeds give the
    proposals the campaigns make alone."""
    import threading
    import time

    import gpytorch

    from dsbo.campaign import campaign as campaign_module

    alone = [
        small_campaign(fast_optimizer, seed=s, budget=6).run().history[["x0", "x1"]].to_numpy()
        for s in (3, 4)
    ]
    spans: list[tuple[float, float]] = []
    fit = campaign_module.fit_surrogate

    def slow_fit(*args, **kwargs):
        start = time.perf_counter()
        time.sleep(0.2)
        try:
            return fit(*args, **kwargs)
        finally:
            spans.append((start, time.perf_counter()))

    monkeypatch.setattr(campaign_module, "fit_surrogate", slow_fit)
    campaigns = [small_campaign(fast_optimizer, seed=s, budget=6) for s in (3, 4)]
    threads = [threading.Thread(target=c.run) for c in campaigns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    spans.sort()
    assert len(spans) == 4
    assert all(
        end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False)
    )
    for c, X in zip(campaigns, alone, strict=True):
        assert (c.result().history[["x0", "x1"]].to_numpy() == X).all()
    assert gpytorch.settings.lazily_evaluate_kernels._state is None
