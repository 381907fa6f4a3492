"""The model stack's warnings are counted, not printed (dsbo.campaign.model_warnings)."""

import warnings
from collections import Counter

import pytest
from linear_operator.utils.warnings import NumericalWarning

import dsbo
from dsbo.campaign.model_warnings import ModelWarnings, from_model_stack


def test_a_30_trial_minimize_prints_no_warning_line(capfd, recwarn):
    """Issue 57: linear_operator's jitter warning was printed 12 times in a 30-trial study."""

    def f(params):
        # a flat objective with ties: the GP's kernel matrix is near singular, the jitter warns
        return round(params["x"], 1) + (params["kind"] == "b")

    space = {"x": dsbo.Float(0.0, 1.0), "y": dsbo.Float(0.0, 1.0), "kind": dsbo.Choice(["a", "b"])}
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as a console would show every warning once
        result = dsbo.minimize(f, space, budget=30, seed=0)
    out, err = capfd.readouterr()
    assert "Warning" not in out + err
    assert not [w for w in recwarn if from_model_stack(w.category)]
    assert sum(result.warnings.values()) > 0, "the fits did warn: counted in the result"


def test_model_stack_warnings_are_counted_and_others_pass_through():
    counts = Counter()
    with pytest.warns(UserWarning, match="yours"):
        with ModelWarnings(counts):
            warnings.warn(
                "A not p.d., added jitter of 1.0e-08 to the diagonal",
                NumericalWarning,
                stacklevel=1,
            )
            warnings.warn(
                "A not p.d., added jitter of 1.0e-08 to the diagonal",
                NumericalWarning,
                stacklevel=1,
            )
            warnings.warn("yours", UserWarning, stacklevel=1)
    assert counts == {"NumericalWarning: A not p.d., added jitter of 1.0e-08 to the diagonal": 2}


def test_builtin_warnings_issued_inside_the_model_stack_are_counted_too():
    """BoTorch retries a failed acquisition optimization with a RuntimeWarning (a builtin
    category, issued from botorch/optim/optimize.py): it is the model stack's, counted."""
    counts = Counter()
    retry = "Optimization failed in `gen_candidates_scipy` with the following warning(s):"
    with pytest.warns(RuntimeWarning, match="a user's"):
        with ModelWarnings(counts):
            warnings.warn_explicit(
                retry, RuntimeWarning, "/site-packages/botorch/optim/optimize.py", 844
            )
            warnings.warn_explicit("a user's", RuntimeWarning, "/home/me/train.py", 3)
    assert counts == {f"RuntimeWarning: {retry}": 1}
    assert from_model_stack(RuntimeWarning, "/x/gpytorch/kernels/kernel.py")
    assert not from_model_stack(RuntimeWarning, "/x/botorch_experiments/run.py")
