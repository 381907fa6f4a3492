"""experiments/verdicts.py (issue 59): a goal between two arms is judged paired by seed, with the
Wilcoxon signed-rank p, and "met" needs both the better mean and p <= 0.1."""

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def test_met_within_noise_and_missed_follow_the_mean_and_p():
    from scipy.stats import wilcoxon
    from verdicts import paired_verdict

    ours = [0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17]
    theirs = [v + 0.05 + 0.001 * i for i, v in enumerate(ours)]  # ours lower on every seed
    met = paired_verdict(ours, theirs, lower_is_better=True)
    assert met.verdict == "met" and met.wins == 8 and met.losses == 0 and met.pairs == 8
    assert met.p == pytest.approx(wilcoxon(ours, theirs).pvalue) and met.p <= 0.1
    assert met.mean_diff == pytest.approx(sum(a - b for a, b in zip(ours, theirs, strict=True)) / 8)
    # the same numbers where higher is better: significantly worse
    missed = paired_verdict(ours, theirs, lower_is_better=False)
    assert missed.verdict == "missed" and missed.wins == 0 and missed.losses == 8
    assert missed.p == met.p and missed.mean_diff == met.mean_diff
    # a better mean that the test cannot tell from noise is not met
    mixed = [0.10, 0.30, 0.10, 0.30, 0.10, 0.30]
    flat = [0.21, 0.20, 0.22, 0.19, 0.23, 0.21]
    noisy = paired_verdict(mixed, flat, lower_is_better=True)
    assert noisy.mean_diff < 0 and noisy.p > 0.1 and noisy.verdict == "within noise"
    # the threshold is the rule's
    strict = paired_verdict(ours, theirs, lower_is_better=True, threshold_p=met.p / 2)
    assert strict.verdict == "within noise"


def test_mappings_pair_on_the_seeds_both_arms_ran():
    from verdicts import paired_verdict

    ours = {0: 1.0, 1: 2.0, 2: 3.0, 7: 100.0}  # seed 7 has no partner: left out
    theirs = {0: 1.5, 1: 2.5, 2: 3.5, 3: 0.0}
    v = paired_verdict(ours, theirs, lower_is_better=True)
    assert v.pairs == 3 and v.mean_diff == pytest.approx(-0.5) and v.wins == 3


def test_no_test_is_possible_within_noise():
    from verdicts import paired_verdict

    one = paired_verdict([0.1], [0.5], lower_is_better=True)
    assert one.p is None and one.verdict == "within noise" and one.wins == 1
    tied = paired_verdict([0.1, 0.2], [0.1, 0.2], lower_is_better=True)
    assert tied.p is None and tied.verdict == "within noise" and tied.mean_diff == 0
    assert "Wilcoxon p -" in tied.describe()


def test_unpaired_or_missing_values_raise():
    from verdicts import paired_verdict

    with pytest.raises(ValueError, match="unpaired"):
        paired_verdict([0.1, 0.2], [0.1], lower_is_better=True)
    with pytest.raises(ValueError, match="no pairs"):
        paired_verdict({0: 0.1}, {1: 0.1}, lower_is_better=True)
    with pytest.raises(ValueError, match="finite"):
        paired_verdict([0.1, math.nan], [0.1, 0.2], lower_is_better=True)
    with pytest.raises(ValueError, match="finite"):
        paired_verdict({0: None, 1: 0.2}, {0: 0.1, 1: 0.3}, lower_is_better=True)
    with pytest.raises(TypeError):
        paired_verdict({0: 0.1}, [0.1], lower_is_better=True)
