"""The space of DsboSearch (dsbo.integrations.ray_space): Ray's param_space as dsbo parameters,
every value Ray samples a value of the dsbo parameter, and a configuration as a dsbo point and
back. Needs Ray Tune installed, no cluster."""

from __future__ import annotations

import pytest

tune = pytest.importorskip(
    "ray.tune", reason="Ray Tune is the optional extra `ray` (pip install -e '.[ray]')"
)

import dsbo  # noqa: E402
from dsbo.errors import ConfigError  # noqa: E402
from dsbo.integrations.ray_space import (  # noqa: E402
    config_of,
    convert_search_space,
    dsbo_name,
    has_domains,
    params_of,
)


def test_a_ray_param_space_converts_to_dsbo_parameters():
    space, paths = convert_search_space(
        {
            "lr": tune.loguniform(1e-4, 1e-1),
            "drop": tune.quniform(0.1, 0.5, 0.1),
            "x": tune.uniform(-2, 3),
            "n": tune.randint(0, 8),
            "width": tune.lograndint(16, 513),
            "batch": tune.qrandint(10, 64, 16),
            "one": tune.qrandint(1, 5, 1),
            "act": tune.choice(["relu", "tanh", None]),
            "epochs": 5,
            "model": {"depth": tune.randint(1, 4), "val/dropout": tune.uniform(0, 0.5)},
        }
    )
    assert space == {
        "lr": dsbo.Float(1e-4, 1e-1, log=True),
        "drop": dsbo.Float(0.1, 0.5, step=0.1),
        "x": dsbo.Float(-2.0, 3.0),
        "n": dsbo.Int(0, 7),
        "width": dsbo.Int(16, 512, log=True),
        "batch": dsbo.Int(16, 64, step=16),
        "one": dsbo.Int(1, 4),
        "act": dsbo.Choice(["relu", "tanh", None]),
        "model.depth": dsbo.Int(1, 3),
        "model.val_dropout": dsbo.Float(0.0, 0.5),
    }
    assert paths["model.val_dropout"] == ("model", "val/dropout")
    ray_space = {
        "q": tune.quniform(0.1, 0.5, 0.1),
        "b": tune.qrandint(10, 64, 16),
        "w": tune.lograndint(16, 513),
        "n": tune.randint(0, 8),
        "o": tune.qrandint(1, 5, 1),
    }
    converted, _ = convert_search_space(ray_space)
    for (
        name,
        domain,
    ) in ray_space.items():  # every value Ray samples is a value of the dsbo parameter, and back
        samples = {round(domain.sample(), 9) for _ in range(300)}
        values = {round(converted[name].decode([u]), 9) for u in _grid(converted[name])}
        assert all(converted[name].allows(v) for v in samples) and samples <= values, name
        assert len(values) > 20 or samples == values, name  # the small grids: sampled whole


def _grid(parameter):
    low, high = parameter.bounds()[0]
    return [low + (high - low) * k / 4000 for k in range(4001)]


def test_a_configuration_is_a_point_and_back():
    spec = {"model": {"lr": tune.loguniform(1e-4, 1e-1), "val/p": tune.uniform(0, 1)}, "epochs": 3}
    space, paths = convert_search_space(spec)
    assert (
        set(space) == {"model.lr", "model.val_p"}
        and has_domains(spec)
        and not has_domains({"a": 1})
    )
    config = {"model": {"lr": 0.01, "val/p": 0.5}, "epochs": 3}  # Ray merged the constant in
    params = params_of(config, paths, "points_to_evaluate")
    assert params == {"model.lr": 0.01, "model.val_p": 0.5}
    assert config_of(params, paths) == {"model": {"lr": 0.01, "val/p": 0.5}}
    with pytest.raises(ConfigError, match="points_to_evaluate: .* has no value for 'model/val/p'"):
        params_of({"model": {"lr": 0.01}}, paths, "points_to_evaluate")
    assert [dsbo_name(k) for k in ("val/loss", "1st", "a.b")] == ["val_loss", "_1st", "a.b"]
