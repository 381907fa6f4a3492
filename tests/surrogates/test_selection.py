"""Training-set subset selection (Mao & Li, Algorithm 2): selectors, schedule, campaign record."""

import warnings

import pytest
import torch

from dsbo.acquisition import OptimizerSettings
from dsbo.campaign import Campaign
from dsbo.errors import ConfigError
from dsbo.problems import get_problem
from dsbo.storage import TrialStore
from dsbo.surrogates import SurrogateSpec, fit_surrogate
from dsbo.surrogates.selection import Selector, make_selector

BOUNDS = torch.tensor([[-1.0, 0.0, 2.0], [1.0, 5.0, 3.0]], dtype=torch.double)


def data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    U = torch.rand(n, 3, generator=generator, dtype=torch.double)
    X = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * U
    Y = -((U - 0.3) ** 2).sum(-1, keepdim=True)
    return X, Y


@pytest.mark.parametrize("name", ["rs", "kcs", "scs"])
def test_selectors_return_distinct_rows_and_the_clustering_ones_keep_the_incumbent(name):
    X, Y = data(120)
    selector = Selector(name=name, alpha=10, start=30, refresh=5)  # d = 3: selection from 90 points
    rows = selector.rows(X, Y, BOUNDS, seed=3)
    assert rows == sorted(set(rows)) and all(0 <= r < 120 for r in rows)
    refresh = selector.last_refresh(120, 3)
    assert refresh == 120  # 90 + 2 x 15
    chosen = [r for r in rows if r < refresh]
    k = selector.subset_size(refresh)
    assert k == 12
    if name == "scs":  # one per non-empty Latin-hypercube cell: at most k
        assert 1 <= len(chosen) <= k
    else:
        assert len(chosen) == k
    if name != "rs":
        assert int(Y.argmax()) in rows


def test_kcs_keeps_the_best_point_of_each_cluster():
    X, Y = data(90)
    rows = Selector("kcs", alpha=15).rows(X, Y, BOUNDS, seed=0)
    from sklearn.cluster import KMeans

    Z = ((X - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])).numpy()
    labels = KMeans(
        n_clusters=6, n_init=1, random_state=(0 * 1_000_003 + 90) % (2**31 - 1)
    ).fit_predict(Z)
    expected = sorted(
        max((i for i in range(90) if labels[i] == c), key=lambda i: float(Y[i]))
        for c in set(labels)
    )
    assert rows == expected


def test_the_schedule_fits_everything_then_refreshes_every_5d_and_appends_between():
    selector = Selector("rs", alpha=20)
    d = 4
    assert selector.last_refresh(119, d) is None  # below 30 d = 120: all data
    assert [selector.last_refresh(n, d) for n in (120, 121, 139, 140, 159, 160)] == [
        120,
        120,
        120,
        140,
        140,
        160,
    ]
    X, Y = data(125)
    X4 = torch.cat([X, X[:, :1]], dim=-1)
    bounds4 = torch.cat([BOUNDS, BOUNDS[:, :1]], dim=-1)
    rows = selector.rows(X4, Y, bounds4, seed=0)
    assert rows[-5:] == [120, 121, 122, 123, 124]  # appended since the refresh at 120
    assert len(rows) == 6 + 5  # k = 120 / 20
    assert Selector("rs").rows(X[:50], Y[:50], BOUNDS) == list(range(50))


def test_same_seed_same_subset_and_a_new_seed_another():
    X, Y = data(100)
    for name in ("rs", "kcs", "scs"):
        selector = Selector(name, alpha=10)
        assert selector.rows(X, Y, BOUNDS, seed=1) == selector.rows(X, Y, BOUNDS, seed=1)
    assert Selector("rs", alpha=10).rows(X, Y, BOUNDS, seed=1) != Selector("rs", alpha=10).rows(
        X, Y, BOUNDS, seed=2
    )


def test_fit_surrogate_fits_the_selected_rows_only():
    X, Y = data(100)
    spec = SurrogateSpec.coerce({"name": "gp", "selector": {"name": "kcs", "alpha": 10}})
    model = fit_surrogate(spec, X, Y, bounds=BOUNDS, selection_seed=0)
    assert model.training_rows == Selector("kcs", alpha=10).rows(X, Y, BOUNDS, seed=0)
    assert model.train_inputs[0].shape[-2] == len(model.training_rows)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"name": "kmeans"}, "selector.name"),
        ({"name": "kcs", "alpha": 0}, "selector.alpha"),
        ({"name": "kcs", "k": 3}, "no option(s) ['k']"),
        (5, "must be a name or a mapping"),
    ],
)
def test_bad_selector_settings_name_the_field(spec, message):
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        make_selector(spec)


def test_a_resumed_campaign_fits_the_same_subsets(tmp_path):
    warnings.simplefilter("ignore")
    problem = get_problem("ackley-2d")
    settings = {
        "surrogate": {
            "name": "gp",
            "selector": {"name": "kcs", "alpha": 4, "start": 6, "refresh": 2},
        },
        "acquisition": "logei",
        "n_init": 8,
        "seed": 7,
        "optimizer": OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20),
    }
    whole = Campaign(problem, budget=20, store=tmp_path / "whole.sqlite", **settings)
    whole.run()
    first = Campaign(problem, budget=14, store=tmp_path / "resumed.sqlite", **settings)
    first.run()
    first.store.close()
    resumed = Campaign(
        problem, budget=20, store=TrialStore(tmp_path / "resumed.sqlite"), **settings
    )
    resumed.run()
    a = [t.metadata.get("fitted_trials") for t in whole.store.trials()]
    b = [t.metadata.get("fitted_trials") for t in resumed.store.trials()]
    assert a == b
    # d = 2: selection from 12 observations, refreshed at 16; k = 16 / 4 = 4, then appended
    assert len(a[16]) == 4 and len(a[19]) == 4 + 3 and a[19][-3:] == [17, 18, 19]
