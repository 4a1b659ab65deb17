"""The paired bootstrap: against scipy.stats.bootstrap, the seed's worked example, exactness of the
multinomial draw, coverage by simulation, and invariants."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab import stats
from raglab.stats import mean_interval, paired_bootstrap
from raglab.stats._engine import _Resampler


def _mean_diff(x, y, axis=-1):
    return np.mean(y - x, axis=axis)


def _scipy_paired(base, cand, method, seed=12345, n_resamples=10_000):
    return scipy.stats.bootstrap(
        (np.asarray(base, float), np.asarray(cand, float)),
        _mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        method=method,
        rng=seed,
        batch=2_000,
    )


def _seed_example():
    # Seed 000 ("Pairing helps a great deal"): two configs on the same 300 questions.
    rng = random.Random(1)
    base = [1.0 if rng.random() < 0.72 else 0.0 for _ in range(300)]
    cand = [b if rng.random() < 0.9 else 1.0 - b for b in base]
    return base, cand


# ---- the seed's worked numbers ------------------------------------------------------------------


def test_seed_example_interval():
    base, cand = _seed_example()
    # Seed 000 prints: baseline 0.717, candidate 0.673, mean diff -0.043, 95% CI [-0.077, -0.010]
    # (it resampled with random.Random(7); ours differs only by Monte Carlo error).
    assert round(sum(base) / 300, 3) == 0.717 and round(sum(cand) / 300, 3) == 0.673
    iv = paired_bootstrap(base, cand)
    assert round(iv.estimate, 3) == -0.043
    assert iv.low == pytest.approx(-0.077, abs=0.005)
    assert iv.high == pytest.approx(-0.010, abs=0.005)
    assert (iv.method, iv.level, iv.n, iv.n_resamples, iv.seed) == (
        "paired bootstrap (percentile)", 0.95, 300, 10_000, 0)


# ---- against scipy.stats.bootstrap (paired=True) --------------------------------------------------


def _datasets():
    rng = np.random.default_rng(2026)
    n = 400
    b = (rng.random(n) < 0.7).astype(float)
    yield "pass/fail", b, np.where(rng.random(n) < 0.85, b, 1 - b)
    g = rng.integers(0, 4, n) / 4  # recall-like: few distinct values
    yield "few values", g, np.clip(g + rng.choice([-0.25, 0, 0, 0.25, 0.5], n), 0, 1)
    c = rng.beta(2, 3, n)
    yield "continuous", c, np.clip(c + rng.normal(0.02, 0.15, n), 0, 1)
    s = rng.exponential(1.0, n)
    yield "skewed", s, s * rng.lognormal(0.1, 0.4, n)


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize(("kind", "base", "cand"), list(_datasets()), ids=[d[0] for d in _datasets()])
def test_matches_scipy_bootstrap(kind, base, cand, method):
    mine = paired_bootstrap(base, cand, method=method, seed=3)
    ref = _scipy_paired(base, cand, "BCa" if method == "bca" else "percentile")
    assert mine.estimate == pytest.approx(np.mean(cand - base), abs=1e-12)
    # Two independent 10,000-resample estimates of a 2.5% quantile differ with a standard error of
    # about 0.04 bootstrap standard deviations; allow 0.15 (plus one lattice step for discrete data).
    tol = 0.15 * ref.standard_error + 1.0 / len(base)
    assert mine.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert mine.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert mine.method == f"paired bootstrap ({method})"


def test_bca_acceleration_matches_a_direct_jackknife():
    rng = np.random.default_rng(5)
    d = rng.gamma(1.5, 1.0, 60) - 1.0
    engine = _Resampler(d[:, None], np.zeros(60, dtype=np.intp), 1, units=None, grouped=False)
    # Efron & Tibshirani (1993) eq. 14.15, written out with an explicit leave-one-out loop.
    jack = np.array([np.delete(d, i).mean() for i in range(60)])
    u = jack.mean() - jack
    expected = (u**3).sum() / (6 * ((u**2).sum()) ** 1.5)
    assert engine.acceleration()[0, 0] == pytest.approx(expected, rel=1e-9)


def test_cluster_acceleration_matches_a_direct_jackknife():
    rng = np.random.default_rng(6)
    units = rng.integers(0, 15, 90)
    d = rng.normal(0.1, 1.0, 90) + units * 0.05
    engine = _Resampler(d[:, None], np.zeros(90, dtype=np.intp), 1, units=units, grouped=False)
    clusters = np.unique(units)
    jack = np.array([d[units != u].mean() for u in clusters])
    u = jack.mean() - jack
    expected = (u**3).sum() / (6 * ((u**2).sum()) ** 1.5)
    assert engine.acceleration()[0, 0] == pytest.approx(expected, rel=1e-9)


# ---- the multinomial draw is the row bootstrap ----------------------------------------------------


@pytest.mark.parametrize("kind", ["pass/fail", "few values", "continuous"])
def test_bootstrap_distribution_has_the_row_bootstrap_moments(kind):
    data = {d[0]: d for d in _datasets()}[kind]
    d = data[2] - data[1]
    engine = _Resampler(d[:, None], np.zeros(len(d), dtype=np.intp), 1, units=None, grouped=False)
    boot = engine.bootstrap(20_000, np.random.default_rng(0))[:, 0, 0]
    # Row resampling: E[mean*] = mean, Var[mean*] = plug-in variance / n (exact, by the CLT-free algebra
    # of the multinomial); 20,000 resamples pin the variance to about +-1% (one standard error).
    assert boot.mean() == pytest.approx(d.mean(), abs=4 * d.std() / np.sqrt(len(d) * 20_000))
    assert boot.var() == pytest.approx(d.var() / len(d), rel=0.05)


def test_few_distinct_values_take_the_multinomial_path():
    rng = np.random.default_rng(1)
    b = (rng.random(5000) < 0.6).astype(float)
    c = np.where(rng.random(5000) < 0.9, b, 1 - b)
    engine = _Resampler((c - b)[:, None], np.zeros(5000, dtype=np.intp), 1, units=None, grouped=False)
    assert engine.heavy.size == 3 and engine.light.size == 0  # -1, 0, 1


def test_distribution_matches_scipy_distribution():
    # Kolmogorov-Smirnov between our bootstrap distribution and scipy's (both 10,000 resamples).
    rng = np.random.default_rng(8)
    b = rng.beta(2, 2, 300)
    c = b + rng.normal(0.01, 0.1, 300)
    engine = _Resampler((c - b)[:, None], np.zeros(300, dtype=np.intp), 1, units=None, grouped=False)
    ours = engine.bootstrap(10_000, np.random.default_rng(1))[:, 0, 0]
    theirs = _scipy_paired(b, c, "percentile").bootstrap_distribution
    assert scipy.stats.ks_2samp(ours, theirs).pvalue > 0.001


# ---- clusters -------------------------------------------------------------------------------------


def test_cluster_bootstrap_matches_scipy_on_cluster_means():
    # With equal-size clusters, the cluster bootstrap of the mean is scipy's bootstrap of cluster means.
    rng = np.random.default_rng(9)
    units = np.repeat(np.arange(80), 5)
    effect = rng.normal(0.0, 0.3, 80)[units]
    b = rng.random(400)
    c = b + effect + rng.normal(0.05, 0.1, 400)
    mine = paired_bootstrap(b, c, units=units, seed=4)
    cluster_means = (c - b).reshape(80, 5).mean(axis=1)
    ref = scipy.stats.bootstrap((cluster_means,), np.mean, n_resamples=10_000, rng=3, method="percentile")
    tol = 0.15 * ref.standard_error
    assert mine.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert mine.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert mine.method == "paired cluster bootstrap (percentile)"
    # Clusters share an effect, so the cluster interval is wider than the row interval.
    assert mine.width > paired_bootstrap(b, c, seed=4).width * 1.5


def test_units_of_one_question_each_equal_the_row_bootstrap():
    base, cand = _seed_example()
    rows = paired_bootstrap(base, cand, seed=11)
    singletons = paired_bootstrap(base, cand, seed=11, units=[f"u{i}" for i in range(300)])
    # Same distribution (every cluster is one question); the draws differ, so equal within MC error.
    assert singletons.low == pytest.approx(rows.low, abs=0.004)
    assert singletons.high == pytest.approx(rows.high, abs=0.004)


# ---- coverage by simulation -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pass/fail", "continuous"])
def test_coverage_of_95_percent_intervals(kind):
    rng = np.random.default_rng(20260)
    trials, n, covered = 600, 300, 0
    for trial in range(trials):
        if kind == "pass/fail":
            # base ~ Bernoulli(0.72); the candidate flips 10% of answers: true diff = 0.1 * (1 - 2 * 0.72)
            truth = 0.1 * (1 - 2 * 0.72)
            b = (rng.random(n) < 0.72).astype(float)
            c = np.where(rng.random(n) < 0.9, b, 1 - b)
        else:
            truth = 0.03
            b = rng.beta(2, 3, n)
            c = b + truth + rng.standard_t(4, n) * 0.1
        iv = paired_bootstrap(b, c, n_resamples=1_000, seed=trial)
        covered += iv.low <= truth <= iv.high
    # 600 trials: a 95% interval covers 93-97% of the time (the binomial s.e. is 0.9 points).
    assert 0.93 <= covered / trials <= 0.97


@pytest.mark.slow
def test_coverage_of_slice_intervals():
    # 400 slices of 60 questions each in one compare call: each slice's interval covers its true diff.
    rng = np.random.default_rng(77)
    n_slices, size = 400, 60
    slices = np.repeat(np.arange(n_slices), size)
    truth = rng.normal(0, 0.05, n_slices)
    b = rng.beta(2, 2, n_slices * size)
    c = b + truth[slices] + rng.normal(0, 0.2, n_slices * size)
    table = stats.compare({"s": b}, {"s": c}, slices=[f"s{i:03d}" for i in slices], n_resamples=2_000,
                          n_permutations=0)
    rows = table[table["slice"] != "overall"].sort_values("slice")
    hit = (rows["low"].to_numpy() <= truth) & (truth <= rows["high"].to_numpy())
    assert 0.92 <= hit.mean() <= 0.975


# ---- invariants -----------------------------------------------------------------------------------

pairs = st.integers(2, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n),
    )
)


@settings(max_examples=40, deadline=None)
@given(pairs, st.sampled_from(["percentile", "bca"]), st.integers(0, 2**31))
def test_same_seed_same_interval_and_it_contains_the_estimate(data, method, seed):
    base, cand = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a degenerate BCa jackknife says so
        one = paired_bootstrap(base, cand, n_resamples=500, seed=seed, method=method)
        two = paired_bootstrap(base, cand, n_resamples=500, seed=seed, method=method)
    assert tuple(one) == tuple(two) or (np.isnan(one.low) and np.isnan(two.low))
    if method == "percentile":
        assert one.low - 1e-12 <= one.estimate <= one.high + 1e-12


@settings(max_examples=30, deadline=None)
@given(st.integers(-64, 64), st.integers(2, 200), st.sampled_from(["percentile", "bca"]))
def test_constant_differences_give_a_zero_width_interval(step, n, method):
    base = (np.arange(n) % 8) / 8  # dyadic values, so cand - base is exactly the same number everywhere
    delta = step / 64
    iv = paired_bootstrap(base, base + delta, n_resamples=200, method=method)
    assert iv.low == iv.high == iv.estimate == delta


@settings(max_examples=30, deadline=None)
@given(pairs, st.randoms(use_true_random=False))
def test_row_order_does_not_matter(data, rnd):
    base, cand = np.asarray(data[0]), np.asarray(data[1])
    order = list(range(len(base)))
    rnd.shuffle(order)
    one = paired_bootstrap(base, cand, n_resamples=300, seed=1)
    two = paired_bootstrap(base[order], cand[order], n_resamples=300, seed=1)
    assert tuple(one) == tuple(two)


def test_row_order_does_not_matter_with_clusters():
    rng = np.random.default_rng(3)
    units = rng.integers(0, 30, 200)
    b, c = rng.random(200), rng.random(200)
    order = rng.permutation(200)
    one = paired_bootstrap(b, c, units=units, seed=2)
    two = paired_bootstrap(b[order], c[order], units=[f"doc{u}" for u in units[order]], seed=2)
    assert tuple(one) == tuple(two)


def test_different_seeds_differ_and_the_seed_is_reported():
    base, cand = _seed_example()
    a = paired_bootstrap(base, cand, seed=1, n_resamples=2_000)
    b = paired_bootstrap(base, cand, seed=2, n_resamples=2_000)
    assert (a.seed, b.seed) == (1, 2) and a.n_resamples == 2_000
    fresh = paired_bootstrap(base, cand, seed=None, n_resamples=2_000)
    again = paired_bootstrap(base, cand, seed=fresh.seed, n_resamples=2_000)
    assert isinstance(fresh.seed, int) and tuple(fresh) == tuple(again)


def test_chunked_and_unchunked_draws_agree(monkeypatch):
    # Bounded memory: forcing tiny chunks gives the same distribution (not the same draws).
    rng = np.random.default_rng(4)
    b, c = rng.random(500), rng.random(500)
    whole = paired_bootstrap(b, c, seed=5)
    monkeypatch.setattr(stats._engine, "_CHUNK_BYTES", 8 * 600)
    chunked = paired_bootstrap(b, c, seed=5)
    assert chunked.low == pytest.approx(whole.low, abs=0.01)
    assert chunked.high == pytest.approx(whole.high, abs=0.01)


# ---- missing values and bad input -----------------------------------------------------------------


def test_missing_pairs_are_dropped_with_a_count():
    base = [1, 0, np.nan, 1, 1, 0, 1, 1]
    cand = [1, 1, 1, None, 1, 0, 0, 1]
    with pytest.warns(UserWarning, match="dropped 2 of 8 pair"):
        iv = paired_bootstrap(base, cand, n_resamples=500)
    assert iv.n == 6


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"base": [1, 0], "cand": [1]}, ValueError, "same questions in the same order: 2 vs 1"),
        ({"base": [1, 0], "cand": [1, 0], "method": "BCa"}, ValueError, r"one of \['percentile', 'bca'\], but 'BCa'"),
        ({"base": [1, 0], "cand": [1, 0], "ci": 1.5}, ValueError, "strictly between 0 and 1"),
        ({"base": [1, 0], "cand": [1, 0], "n_resamples": 0}, ValueError, "`n_resamples` must be an integer >= 1"),
        ({"base": [1, 0], "cand": [1, 0], "seed": -1}, TypeError, "non-negative integer"),
        ({"base": ["a", "b"], "cand": [1, 0]}, TypeError, "`base` must hold numbers"),
        ({"base": [1, float("inf")], "cand": [1, 0]}, ValueError, "infinite values at positions"),
        ({"base": [np.nan], "cand": [1]}, ValueError, "at least one pair"),
        ({"base": [1, 0], "cand": [1, 0], "units": ["a", None]}, ValueError, "missing cluster labels"),
    ],
)
def test_bad_input(kwargs, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(error, match=message):
            paired_bootstrap(**kwargs)


# ---- one-run means ---------------------------------------------------------------------------------


def test_t_interval_matches_scipy():
    x = np.random.default_rng(2).beta(2, 5, 50)
    iv = mean_interval(x, ci=0.9)
    low, high = scipy.stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=scipy.stats.sem(x))
    assert (iv.low, iv.high) == pytest.approx((low, high), abs=1e-12)
    assert iv.method == "t" and iv.n == 50


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_one_sample_bootstrap_matches_scipy(method):
    x = np.random.default_rng(12).gamma(2.0, 1.0, 200)
    iv = mean_interval(x, method=method, seed=1)
    ref = scipy.stats.bootstrap((x,), np.mean, n_resamples=10_000, method=method, rng=2)
    tol = 0.15 * ref.standard_error
    assert iv.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert iv.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert iv.method == f"bootstrap ({method})"


# ---- clusters and slices together --------------------------------------------------------------------


def _brute_cluster_bootstrap(diffs, slices, units, labels, n_resamples, seed):
    """Resample clusters with explicit loops; slice means are ratios of resampled sums (domain means)."""
    rng = np.random.default_rng(seed)
    clusters = np.unique(units)
    members = {u: np.flatnonzero(units == u) for u in clusters}
    out = np.empty((n_resamples, len(labels)))
    for b in range(n_resamples):
        rows = np.concatenate([members[u] for u in rng.choice(clusters, len(clusters))])
        for j, label in enumerate(labels):
            chosen = rows if label == "overall" else rows[slices[rows] == label]
            out[b, j] = diffs[chosen].mean() if chosen.size else np.nan
    return np.nanquantile(out, [0.025, 0.975], axis=0)


@pytest.mark.parametrize("nested", [True, False])
def test_cluster_bootstrap_with_slices_matches_a_brute_force_oracle(nested):
    rng = np.random.default_rng(21)
    n = 240
    units = np.repeat(np.arange(40), 6)
    # nested: each cluster lies in one slice; crossing: a cluster's questions fall in several slices.
    slices = np.where(units % 2 == 0, "a", "b") if nested else rng.choice(["a", "b"], n)
    diffs = rng.normal(0.05, 0.3, n) + rng.normal(0, 0.2, 40)[units]
    table = stats.compare({"m": np.zeros(n)}, {"m": diffs}, slices=slices, units=units, n_resamples=10_000,
                          n_permutations=0, seed=3, method="percentile")
    labels = ["overall", "a", "b"]
    low, high = _brute_cluster_bootstrap(diffs, slices, units, labels, 4_000, seed=8)
    for j, label in enumerate(labels):
        row = table[table["slice"] == label].iloc[0]
        spread = high[j] - low[j]
        assert row["low"] == pytest.approx(low[j], abs=0.06 * spread)
        assert row["high"] == pytest.approx(high[j], abs=0.06 * spread)


def test_cluster_acceleration_with_crossing_slices_matches_a_direct_jackknife():
    rng = np.random.default_rng(22)
    units = rng.integers(0, 12, 80)
    codes = rng.integers(0, 2, 80)
    d = rng.gamma(2.0, 1.0, 80)
    engine = _Resampler(d[:, None], codes, 2, units=units, grouped=True)
    assert engine.dense
    accel = engine.acceleration()[:, 0]
    for r, mask in enumerate([np.ones(80, bool), codes == 0, codes == 1]):
        jack = np.array([d[mask & (units != u)].mean() for u in np.unique(units)])
        u = jack.mean() - jack
        assert accel[r] == pytest.approx((u**3).sum() / (6 * ((u**2).sum()) ** 1.5), rel=1e-9)


def test_question_acceleration_per_slice_matches_a_direct_jackknife():
    rng = np.random.default_rng(23)
    codes = rng.integers(0, 3, 150)
    d = rng.gamma(1.5, 1.0, 150)
    engine = _Resampler(d[:, None], codes, 3, units=None, grouped=True)
    accel = engine.acceleration()[:, 0]
    for r, mask in enumerate([np.ones(150, bool), codes == 0, codes == 1, codes == 2]):
        x = d[mask]
        jack = np.array([np.delete(x, i).mean() for i in range(len(x))])
        u = jack.mean() - jack
        assert accel[r] == pytest.approx((u**3).sum() / (6 * ((u**2).sum()) ** 1.5), rel=1e-9)


def test_one_question_or_one_cluster_gives_no_interval():
    # One unit says nothing about sampling error: no interval (scipy refuses n < 2 outright).
    iv = paired_bootstrap([1.0], [0.0], n_resamples=100)
    assert iv.estimate == -1.0 and np.isnan(iv.low) and np.isnan(iv.high)
    clustered = paired_bootstrap([0.1, 0.2, 0.3], [0.3, 0.1, 0.8], units=["d", "d", "d"], n_resamples=100)
    assert np.isnan(clustered.low)
    table = stats.compare({"a": [1, 0, 1]}, {"a": [1, 1, 1]}, slices=["x", "y", "x"], n_resamples=100)
    assert table.set_index("slice")["low"].isna().to_dict() == {"overall": False, "x": False, "y": True}
