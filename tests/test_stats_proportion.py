"""Intervals for a pass rate, against statsmodels and the seed's standard error."""

from __future__ import annotations

import math
import pickle

import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from raglab.stats import Interval, proportion_interval

statsmodels_proportion = pytest.importorskip("statsmodels.stats.proportion")

# raglab method -> statsmodels proportion_confint method
METHODS = {"wilson": "wilson", "normal": "normal", "exact": "beta"}


@pytest.mark.parametrize("method", list(METHODS))
@given(n=st.integers(1, 2000), frac=st.floats(0, 1), ci=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_matches_statsmodels(method, n, frac, ci):
    successes = round(frac * n)
    mine = proportion_interval(successes, n, ci=ci, method=method)
    low, high = statsmodels_proportion.proportion_confint(successes, n, alpha=1 - ci, method=METHODS[method])
    assert mine.low == pytest.approx(max(0.0, low), abs=1e-9)
    assert mine.high == pytest.approx(min(1.0, high), abs=1e-9)
    assert mine.low <= mine.estimate <= mine.high
    assert (mine.method, mine.level, mine.n) == (method, ci, n)


def test_seed_standard_error_example():
    # Seed 000: at p = 0.7 and n = 300 the standard error is about 0.026, so +- ~5 points at 95%.
    iv = proportion_interval(210, 300, method="normal")
    half = (iv.high - iv.low) / 2
    z = scipy.stats.norm.ppf(0.975)
    assert half / z == pytest.approx(math.sqrt(0.7 * 0.3 / 300), rel=1e-9)
    assert round(half / z, 3) == 0.026
    assert round(half, 2) == 0.05


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"successes": 3, "n": 0}, "`n` must be a positive integer"),
        ({"successes": 5, "n": 4}, "between 0 and n=4"),
        ({"successes": 1, "n": 4, "ci": 95}, "strictly between 0 and 1"),
        ({"successes": 1, "n": 4, "method": "wald"}, r"must be one of \['wilson', 'normal', 'exact'\], but 'wald'"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        proportion_interval(**kwargs)


def test_interval_unpacks_and_keeps_metadata():
    iv = Interval(0.1, 0.0, 0.2, method="bootstrap-percentile", level=0.95, n=300, n_resamples=10_000, seed=7)
    estimate, low, high = iv
    assert (estimate, low, high) == (0.1, 0.0, 0.2)
    clone = pickle.loads(pickle.dumps(iv))
    assert clone.metadata() == iv.metadata() and tuple(clone) == tuple(iv)
    assert "n_resamples=10000, seed=7" in repr(iv)
    assert iv.to_dict()["method"] == "bootstrap-percentile"
