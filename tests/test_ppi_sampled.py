"""ppi_mean_sampled: design-based (Horvitz-Thompson) PPI++ for labels drawn with unequal probabilities.

Oracles: a plain-loop hand computation of the active-inference estimator (Zrnic and Candes 2024),
numpy's ``var(z, ddof=1) / N``, ppi_py's point estimate under equal probabilities, scipy's quantiles,
and coverage in a seeded simulation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from raglab.stats import ppi_mean, ppi_mean_sampled

PSEUDO = ((0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0))


def _world(n_rows: int = 1500, seed: int = 0, rate: float = 0.1):
    """A table with a judge score on every row; labels drawn by Poisson sampling, more where the judge is unsure."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_rows) < 0.7).astype(float)
    judge = np.clip(truth * 0.6 + rng.normal(0.2, 0.2, n_rows), 0, 1)
    doubt = 1 - np.abs(2 * judge - 1)
    pi = np.clip(rate * (0.2 + 0.8 * doubt / doubt.mean()), 0.01, 1)
    chosen = rng.random(n_rows) < pi
    return truth, judge, pi, chosen


def _hand(y, f, fu, pi, *, lam=None, units=None, adjusted=False, level=0.95):
    """The estimator by plain loops: z_i = lam f_i + (y_i - lam f_i) xi_i / pi_i over every row."""
    rows = [(yi, fi, p, True) for yi, fi, p in zip(y, f, pi)] + [(0.0, fj, 1.0, False) for fj in fu]
    big_n = len(rows)
    a = [yi / p if lab else 0.0 for yi, _, p, lab in rows]
    b = [fi * (1 - 1 / p) if lab else fi for _, fi, p, lab in rows]
    mean_a, mean_b = sum(a) / big_n, sum(b) / big_n
    groups: dict[object, list[float]] = {}
    for i in range(big_n):
        key = i if units is None else units[i]
        acc = groups.setdefault(key, [0.0, 0.0])
        acc[0] += a[i] - mean_a
        acc[1] += b[i] - mean_b
    if lam is None:
        sab = sum(ga * gb for ga, gb in groups.values())
        sbb = sum(gb * gb for _, gb in groups.values())
        lam = min(1.0, max(0.0, -sab / sbb)) if sbb > 0 else 0.0
    parts = list(groups.values())
    df = math.inf
    if adjusted:
        rate = len(y) / big_n
        parts += [[py / rate - mean_a, pf * (1 - 1 / rate) - mean_b] for py, pf in PSEUDO]
        labelled_units = len({units[i] for i in range(len(y))}) if units is not None else len(y)
        df = labelled_units - 1
    g = len(parts)
    var = g / (g - 1) * sum((ga + lam * gb) ** 2 for ga, gb in parts) / big_n**2
    q = stats.norm.ppf(0.5 + level / 2) if math.isinf(df) else stats.t.ppf(0.5 + level / 2, df)
    est = mean_a + lam * mean_b
    return est, est - q * math.sqrt(var), est + q * math.sqrt(var), lam


@pytest.mark.parametrize("lam", [None, 0.0, 0.6, 1.0])
@pytest.mark.parametrize("interval", ["wald", "adjusted"])
def test_equals_a_plain_loop_hand_computation(lam, interval):
    truth, judge, pi, chosen = _world()
    args = (truth[chosen], judge[chosen], judge[~chosen], pi[chosen])
    iv = ppi_mean_sampled(*args, lam=lam, interval=interval)
    est, low, high, lam_ = _hand(*args, lam=lam, adjusted=interval == "adjusted")
    assert (iv.estimate, iv.low, iv.high, iv.lam) == pytest.approx((est, low, high, lam_), abs=1e-12)
    assert iv.n_labeled == chosen.sum() and iv.n_unlabeled == (~chosen).sum()
    assert iv.method.endswith("Horvitz-Thompson")
    assert ("plus-four, t" in iv.method) == (interval == "adjusted")


def test_clustered_equals_the_hand_computation_and_one_row_clusters_the_plain_one():
    truth, judge, pi, chosen = _world(seed=1)
    conv = np.arange(truth.size) // 4
    args = (truth[chosen], judge[chosen], judge[~chosen], pi[chosen])
    units = np.concatenate([conv[chosen], conv[~chosen]])
    for interval in ("wald", "adjusted"):
        iv = ppi_mean_sampled(*args, units_labeled=conv[chosen], units_unlabeled=conv[~chosen], interval=interval)
        est, low, high, lam = _hand(*args, units=list(units), adjusted=interval == "adjusted")
        assert (iv.estimate, iv.low, iv.high, iv.lam) == pytest.approx((est, low, high, lam), abs=1e-12)
        assert iv.method.endswith("Horvitz-Thompson, clustered")
    rows = np.arange(truth.size)
    one = ppi_mean_sampled(*args, units_labeled=rows[chosen], units_unlabeled=rows[~chosen], interval="wald")
    assert tuple(one) == pytest.approx(tuple(ppi_mean_sampled(*args, interval="wald")), abs=1e-12)


def test_wald_variance_is_numpys_var_of_z_over_every_row():
    truth, judge, pi, chosen = _world(seed=2)
    iv = ppi_mean_sampled(truth[chosen], judge[chosen], judge[~chosen], pi[chosen], interval="wald")
    xi = chosen.astype(float)
    z = iv.lam * judge + (truth - iv.lam * judge) * xi / pi  # every row, in table order
    se = np.std(z, ddof=1) / np.sqrt(z.size)
    assert iv.estimate == pytest.approx(z.mean(), abs=1e-12)
    assert iv.se == pytest.approx(se, rel=1e-10)
    # the tuned lam minimises that variance over [0, 1]
    grid = np.linspace(0, 1, 201)
    best = grid[np.argmin([np.var(lam * judge + (truth - lam * judge) * xi / pi, ddof=1) for lam in grid])]
    assert abs(best - iv.lam) <= 0.005


def test_equal_probabilities_give_the_uniform_point_estimate():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(4)
    truth = (rng.random(2000) < 0.6).astype(float)
    judge = np.where(rng.random(2000) < 0.8, truth, 1 - truth)
    chosen = np.zeros(2000, dtype=bool)
    chosen[rng.choice(2000, 200, replace=False)] = True
    pi = np.full(chosen.sum(), 200 / 2000)
    for lam in (0.0, 0.4, 1.0):
        iv = ppi_mean_sampled(truth[chosen], judge[chosen], judge[~chosen], pi, lam=lam)
        # PPI with the judge's mean over every row (the labelled rows are in the table)
        uniform = ppi_mean(truth[chosen], judge[chosen], judge, lam=lam)
        oracle = float(np.ravel(ppi_py.ppi_mean_pointestimate(truth[chosen], judge[chosen], judge, lam=lam))[0])
        assert iv.estimate == pytest.approx(uniform.estimate, abs=1e-12)
        assert iv.estimate == pytest.approx(oracle, abs=1e-12)


def test_strata_combine_with_row_shares_and_welch_satterthwaite_df():
    truth, judge, pi, chosen = _world(n_rows=3000, seed=5)
    strata = np.where(judge > 0.5, "hi", "lo")
    args = (truth[chosen], judge[chosen], judge[~chosen], pi[chosen])
    iv = ppi_mean_sampled(*args, strata_labeled=strata[chosen], strata_unlabeled=strata[~chosen])
    est = var = spread = 0.0
    for h in ("hi", "lo"):
        m = strata == h
        part = ppi_mean_sampled(truth[chosen & m], judge[chosen & m], judge[~chosen & m], pi[chosen & m])
        share = m.mean()
        est += share * part.estimate
        v = (share * part.se) ** 2
        var += v
        spread += v * v / ((chosen & m).sum() - 1)
    df = var * var / spread
    half = stats.t.ppf(0.975, df) * math.sqrt(var)
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((est, est - half, est + half), abs=1e-12)
    assert iv.method.endswith("Horvitz-Thompson, stratified")


def test_refuses_bad_probabilities_and_sizes():
    y, f = np.array([1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="in \\(0, 1\\]"):
        ppi_mean_sampled(y, f, [0.5, 0.5], [0.5, 0.0, 0.5])
    with pytest.raises(ValueError, match="in \\(0, 1\\]"):
        ppi_mean_sampled(y, f, [0.5, 0.5], [0.5, 1.5, 0.5])
    with pytest.raises(ValueError, match="3 labelled rows"):
        ppi_mean_sampled(y, f, [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean_sampled(y, f, [0.5, 0.5], [0.5, 0.5, 0.5], strata_labeled=["a", "b", "b"],
                         strata_unlabeled=["a", "b"])


def test_covers_the_table_mean_under_an_active_draw_of_paired_differences():
    """Paired differences (outside [0, 1]: the Wald form), labels drawn where the judge doubts: 95% nominal."""
    rng = np.random.default_rng(7)
    reps, rows, covered, widths = 300, 2000, 0, []
    for _ in range(reps):
        ease = rng.normal(0, 1.2, rows)
        ya = (rng.random(rows) < 1 / (1 + np.exp(-(1.6 + ease)))).astype(float)
        yb = (rng.random(rows) < 1 / (1 + np.exp(-(1.3 + ease)))).astype(float)
        fa = np.where(rng.random(rows) < 0.7, ya, rng.random(rows) < 0.85).astype(float)
        fb = np.where(rng.random(rows) < 0.7, yb, rng.random(rows) < 0.85).astype(float)
        d, dh = ya - yb, fa - fb
        doubt = np.where(dh != 0, 1.0, 0.3)
        pi = np.minimum(1.0, 200 * doubt / doubt.sum())
        chosen = rng.random(rows) < pi
        iv = ppi_mean_sampled(d[chosen], dh[chosen], dh[~chosen], pi[chosen])
        covered += iv.low <= d.mean() <= iv.high
        widths.append(iv.width)
    assert "plus-four" not in iv.method  # differences: the Wald interval
    assert covered / reps >= 0.92  # nominal 95%; 300 seeds: MCSE 1.3%


@pytest.mark.parametrize("lam", [None, 0.0, 0.5])
@pytest.mark.parametrize("interval", ["adjusted", "wald"])
def test_the_sums_form_equals_the_row_form(lam, interval):
    """over_time's cells (sums over rows, so partitions add) give ppi_mean_sampled's interval."""
    from raglab.stats.ppi import _ht_from_sums, _z

    rng = np.random.default_rng(0)
    n = 3000
    y = (rng.random(n) < 0.7).astype(float)
    f = np.clip(y * 0.6 + 0.4 * rng.random(n), 0, 1)
    pi = np.where(f > 0.5, 0.05, 0.2)
    xi = rng.random(n) < pi
    iv = ppi_mean_sampled(y[xi], f[xi], f[~xi], pi[xi], lam=lam, interval=interval)
    w = np.where(xi, 1 / pi, 0.0)
    a, b = w * y, f * (1 - w)
    halves = [np.array_split(v, 3) for v in (a, b)]  # three partitions, summed
    sums = [sum(float((p * q).sum()) for p, q in zip(*pair)) for pair in
            ((halves[0], [np.ones_like(x) for x in halves[0]]), (halves[1], [np.ones_like(x) for x in halves[1]]),
             (halves[0], halves[0]), (halves[1], halves[1]), (halves[0], halves[1]))]
    est, var, _, df = _ht_from_sums(n, int(xi.sum()), *sums, lam, interval == "adjusted")
    half = _z(0.95, df) * np.sqrt(var)
    np.testing.assert_allclose([est, est - half, est + half], [iv.estimate, iv.low, iv.high], atol=1e-12)
