"""Warm-started GP fits (``map-saas``, ``gp``): the state, the restart rules, and the
invariants of a warm start (a fit from its own optimum on the same data stays there)."""

from __future__ import annotations

import json

import pytest
import torch

from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.surrogates import fit_surrogate
from dsbo.surrogates.gp import map_saas_member_objective
from dsbo.surrogates.warm_start import (
    FitState,
    digest,
    load_parameters,
    parameters_of,
    restart_reason,
)

from .helpers import make_3d


def _state(**changes) -> FitState:
    X = make_3d(n=10).X
    values = dict(
        surrogate="map-saas",
        parameters={},
        num_points=8,
        x_digest=digest(X[:8]),
        log_posterior=[0.0],
    )
    values.update(changes)
    return FitState(**values)


def _fit(spec, n, previous=None, **options):
    data = make_3d(n=14)
    torch.manual_seed(n)
    model = fit_surrogate(
        {**spec, **options}, data.X[:n], data.Y[:n], bounds=data.bounds, previous_fits=previous
    )
    return model, data


def test_restart_reasons():
    X = make_3d(n=10).X
    assert restart_reason(None, X, 5, 3) == "no previous fit"
    assert restart_reason(_state(), X, 5, 3) is None  # 2 new points
    assert restart_reason(_state(fits_since_restart=4), X, 5, 3) == "every 5 fits"
    assert restart_reason(_state(), X, 1, 3) == "every 1 fits"
    assert restart_reason(_state(), X, 5, 1) == "2 new points (more than 1)"
    assert "not the previous fit's" in restart_reason(_state(x_digest=digest(X[1:9])), X, 5, 3)
    assert "not the previous fit's" in restart_reason(_state(num_points=11), X, 5, 3)


def test_the_state_round_trips_json_exactly():
    model, _ = _fit({"name": "map-saas"}, 10)
    state = FitState.from_json(json.loads(json.dumps(model.fit_state.to_json())), "map-saas")
    assert state == model.fit_state
    assert (
        FitState.from_json(model.fit_state.to_json(), "gp") is None
    )  # another surrogate's: ignored
    assert FitState.from_json({"surrogate": "map-saas", "unknown": 1}, "map-saas") is None
    copy, _ = _fit({"name": "map-saas"}, 10)
    with torch.no_grad():
        for p in copy.parameters():
            p.add_(1.0)
    assert load_parameters(copy, state.parameters)
    assert all(
        torch.equal(a, b) for a, b in zip(copy.parameters(), model.parameters(), strict=True)
    )
    other = parameters_of(model) | {"likelihood.noise_covar.raw_noise": [[0.0]]}  # wrong shape
    assert not load_parameters(copy, other)


def test_a_warm_start_from_its_own_optimum_on_the_same_data_stays_there():
    """The previous fit's optimum is a stationary point of the same objective: L-BFGS started
    there ends there (same parameters to optimizer tolerance, no worse log posterior)."""
    full, data = _fit({"name": "map-saas"}, 12)
    warm, _ = _fit({"name": "map-saas"}, 12, full.fit_states)
    assert warm.fit_state.start == "warm" and warm.fit_state.fits_since_restart == 1
    assert torch.equal(warm.taus, full.taus)  # the ensemble keeps its taus
    before, after = map_saas_member_objective(full), map_saas_member_objective(warm)
    assert (after >= before - 1e-6).all()
    for a, b in zip(warm.parameters(), full.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-2)


def test_a_new_point_is_fitted_warm_and_the_schedule_forces_full_fits():
    model, _ = _fit({"name": "map-saas"}, 10)
    assert model.fit_state.start == "no previous fit"
    starts = []
    for n in range(11, 14):
        model, _ = _fit(
            {"name": "map-saas"}, n, model.fit_states, restart_every=3, restart_drop=10.0
        )
        starts.append(model.fit_state.start)
    assert starts == ["warm", "warm", "every 3 fits"]
    model, _ = _fit({"name": "map-saas"}, 14, model.fit_states, warm_start=False)
    assert model.fit_state.start == "warm start off"


def test_map_saas_alternates_full_and_warm_fits_by_default():
    """A warm fit keeps its start's mode; with a full fit every other fit a wrong mode lasts
    one fit (``experiments/default_command.py``)."""
    model, _ = _fit({"name": "map-saas"}, 10)
    starts = [model.fit_state.start]
    for n in range(11, 15):
        model, _ = _fit({"name": "map-saas"}, n, model.fit_states, restart_drop=10.0)
        starts.append(model.fit_state.start)
    assert starts == ["no previous fit", "warm", "every 2 fits", "warm", "every 2 fits"]


def test_a_drop_in_the_log_posterior_runs_the_full_fit_with_fresh_taus():
    previous, _ = _fit({"name": "map-saas"}, 11)
    state = previous.fit_state.to_json()
    state["log_posterior"] = [
        v + 5.0 for v in state["log_posterior"]
    ]  # the warm fit must fall below
    model, _ = _fit({"name": "map-saas"}, 12, [state])
    assert model.fit_state.start.startswith("log posterior per point fell by")
    assert model.fit_state.fits_since_restart == 0
    full, _ = _fit({"name": "map-saas"}, 12, warm_start=False)  # the same global RNG state
    assert torch.equal(model.taus, full.taus) and not torch.equal(model.taus, previous.taus)
    assert torch.equal(
        model.covar_module.base_kernel.lengthscale, full.covar_module.base_kernel.lengthscale
    )


def test_the_plain_gp_warm_starts_only_when_asked():
    cold, _ = _fit({"name": "gp"}, 10)
    assert cold.fit_state.start == "warm start off"
    first, _ = _fit({"name": "gp", "warm_start": True}, 10)
    warm, _ = _fit({"name": "gp", "warm_start": True}, 11, first.fit_states)
    assert first.fit_state.start == "no previous fit" and warm.fit_state.start == "warm"
    again, _ = _fit({"name": "gp", "warm_start": True}, 11, warm.fit_states)  # its own optimum
    for a, b in zip(again.parameters(), warm.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-2)


def test_multi_output_fits_keep_a_state_per_output():
    data = make_3d(n=12)
    Y = torch.cat([data.Y, -data.Y.square()], dim=-1)
    model = fit_surrogate("map-saas", data.X[:10], Y[:10], bounds=data.bounds)
    assert len(model.fit_states) == 2
    again = fit_surrogate("map-saas", data.X, Y, bounds=data.bounds, previous_fits=model.fit_states)
    # 2 new points on the previous data: each output warm-starts from its own state (a restart
    # on a drop of the log posterior would draw fresh taus, which the next lines rule out)
    assert [s.start for s in again.fit_states] == ["warm", "warm"]
    assert again.fit_states[0].extra["taus"] == model.fit_states[0].extra["taus"]
    assert again.fit_states[1].extra["taus"] == model.fit_states[1].extra["taus"]


@pytest.mark.parametrize(
    "option, value",
    [
        ("restart_every", 0),
        ("restart_after_points", -1),
        ("restart_drop", -0.1),
        ("warm_start", "yes"),
    ],
)
def test_bad_warm_start_options_are_refused_by_name(option, value):
    with pytest.raises(ConfigError, match=option):
        _fit({"name": "map-saas"}, 10, **{option: value})


def test_a_resumed_campaign_fits_and_proposes_as_the_uninterrupted_one(tmp_path):
    def campaign(store):
        problem = get_problem("hartmann6")
        return Campaign(problem, surrogate="map-saas", budget=11, n_init=6, seed=3, store=store)

    straight = campaign(tmp_path / "a.sqlite")
    straight.run()
    first = campaign(tmp_path / "b.sqlite")
    for _ in range(8):
        first.step()
    first.store.close()
    resumed = campaign(tmp_path / "b.sqlite")
    resumed.run()
    a, b = straight.store.trials(), resumed.store.trials()
    assert [t.x for t in a] == [t.x for t in b]
    starts = [t.metadata.get("fit_start") for t in b if "fit_start" in t.metadata]
    assert starts[0] == ["no previous fit"] and ["warm"] in starts
    assert resumed.store.get_meta("surrogate_fit") == straight.store.get_meta("surrogate_fit")
